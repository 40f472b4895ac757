"""Parser of OVS action text (as ``ovs-ofctl dump-flows`` prints it) into
action objects: ``parse_actions("set_field:0x1->reg15,resubmit(,19)")``.

Covers every form this package formats, plus the OVS input spellings
``load:V->SUBFIELD`` (turned into an equivalent SetField, as OVS does in
OpenFlow 1.5), ``strip_vlan`` and ``slaves:`` in bundles. Port names are
resolved through the optional ``port_numbers`` map. Used by differential
tests against real flow dumps.
"""

from __future__ import annotations

import re
import socket

from ofctrl.fields import Subfield, lookup, parse_port, parse_subfield, parse_value
from ofctrl.ofpacts import basic as B
from ofctrl.ofpacts import controller as C
from ofctrl.ofpacts import ct as T
from ofctrl.ofpacts import learn as L
from ofctrl.ofpacts.base import (
    OFPP_CONTROLLER, OFPP_IN_PORT, PORT_NUMBERS_BY_NAME, Action, port_from_16,
)

__all__ = ["parse_actions", "ParseError"]


class ParseError(ValueError):
    """Action text that cannot be parsed."""


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside parentheses and double quotes."""
    out: list[str] = []
    depth = 0
    quoted = False
    start = 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s for s in (p.strip() for p in out) if s]


def _port(text: str, port_numbers: dict[str, int] | None) -> int:
    reserved = PORT_NUMBERS_BY_NAME.get(text.upper())
    if reserved is not None:
        return reserved
    return port_from_16(parse_port(text, port_numbers))


def _int(text: str) -> int:
    return int(text, 0) if text[:2].lower() == "0x" else int(text, 10)


def _kv(args: str) -> list[tuple[str, str]]:
    out = []
    for item in split_top(args):
        key, eq, value = item.partition("=")
        if not eq:
            key, colon, value = item.partition(":")
        out.append((key.strip(), value.strip()))
    return out


_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_actions(text: str, port_numbers: dict[str, int] | None = None) -> list[Action]:
    """Parse a comma-separated OVS action list; "drop" (or "") -> []."""
    text = text.strip()
    if text in ("", "drop"):
        return []
    return [_parse_one(item, port_numbers) for item in split_top(text)]


def _inner(item: str, key: str) -> str:
    rest = item[len(key):]
    if not (rest.startswith("(") and rest.endswith(")")):
        raise ParseError("expected parentheses in %r" % item)
    return rest[1:-1]


def _parse_one(item: str, ports: dict[str, int] | None) -> Action:
    m = _KEY_RE.match(item)
    if not m:
        raise ParseError("cannot parse action %r" % item)
    key = m.group(0)
    rest = item[m.end():]
    arg = rest[1:] if rest.startswith(":") else ""
    try:
        return _dispatch(key, item, rest, arg, ports)
    except (KeyError, ValueError, IndexError, OSError) as exc:
        if isinstance(exc, ParseError):
            raise
        raise ParseError("cannot parse action %r: %s" % (item, exc)) from exc


def _dispatch(key: str, item: str, rest: str, arg: str,
              ports: dict[str, int] | None) -> Action:
    if key == "output":
        if "[" in arg:
            return B.OutputReg(parse_subfield(arg))
        return B.Output(_port(arg, ports))
    if key.upper() in PORT_NUMBERS_BY_NAME and key.isupper():
        port = PORT_NUMBERS_BY_NAME[key]
        if port == OFPP_CONTROLLER:
            return B.Output(port, int(arg) if arg else 0xFFFF)
        return B.Output(port)
    if key == "resubmit":
        if rest.startswith(":"):
            return B.Resubmit(255, _port(arg, ports))
        parts = _inner(item, key).split(",")
        in_port = _port(parts[0], ports) if parts[0] else OFPP_IN_PORT
        table = int(parts[1]) if len(parts) > 1 and parts[1] else 255
        ct = len(parts) > 2 and parts[2] == "ct"
        return B.Resubmit(table, in_port, ct)
    if key == "set_field":
        value, _, name = arg.rpartition("->")
        f = lookup(name)
        v, mask = parse_value(f, value, ports)
        return B.SetField(f.name, v, mask)
    if key == "load":
        value, _, dst = arg.partition("->")
        return B.SetField.load(parse_subfield(dst), _int(value))
    if key == "move":
        src, _, dst = arg.partition("->")
        return B.Move(parse_subfield(src), parse_subfield(dst))
    if key == "push":
        return B.StackPush(parse_subfield(arg))
    if key == "pop":
        return B.StackPop(parse_subfield(arg))
    if key == "group":
        return B.Group(int(arg))
    if key == "meter":
        return B.Meter(int(arg))
    if key == "set_queue":
        return B.SetQueue(int(arg))
    if key == "dec_ttl":
        if not rest:
            return B.DecTtl(None)
        inner = _inner(item, key)
        return B.DecTtl(tuple(int(x) for x in inner.split(",") if x))
    if key == "mod_nw_ttl":
        ttl = _int(arg)
        if not 0 <= ttl <= 255:
            raise ParseError("mod_nw_ttl out of range in %r" % item)
        return B.SetNwTtl(ttl)
    if key == "push_vlan":
        return B.PushVlan(_int(arg))
    if key in ("pop_vlan", "strip_vlan"):
        return B.PopVlan()
    if key == "note":
        return B.Note(bytes(int(x, 16) for x in arg.split(".") if x))
    if key == "exit":
        return B.Exit()
    if key == "ct_clear":
        return B.CtClear()
    if key == "conjunction":
        cid, _, frac = _inner(item, key).partition(",")
        k, _, n = frac.partition("/")
        return B.Conjunction(int(cid), int(k), int(n))
    if key == "sample":
        return _sample(_inner(item, key), ports)
    if key == "check_pkt_larger":
        m = re.fullmatch(r"check_pkt_larger\((\d+)\)->(.+)", item)
        if not m:
            raise ParseError("bad check_pkt_larger %r" % item)
        return B.CheckPktLarger(int(m.group(1)), parse_subfield(m.group(2)))
    if key == "fin_timeout":
        kv = dict(_kv(_inner(item, key)))
        return B.FinTimeout(int(kv.get("idle_timeout", 0)), int(kv.get("hard_timeout", 0)))
    if key in ("bundle", "bundle_load"):
        return _bundle(key, _inner(item, key), ports)
    if key == "controller":
        return _controller(_inner(item, key) if rest else "")
    if key == "ct":
        return _ct(_inner(item, key), ports)
    if key == "nat":
        return _nat(_inner(item, key) if rest else "")
    if key == "clone":
        return T.Clone(tuple(parse_actions(_inner(item, key), ports)))
    if key == "learn":
        return _learn(_inner(item, key), ports)
    raise ParseError("unknown action %r" % item)


def _sample(args: str, ports: dict[str, int] | None) -> Action:
    kw: dict[str, int] = {}
    direction = 0
    for k, v in _kv(args):
        if k == "ingress":
            direction = 1
        elif k == "egress":
            direction = 2
        elif k == "sampling_port":
            kw[k] = _port(v, ports)
        else:
            kw[k] = int(v)
    return B.Sample(direction=direction, **kw)


_BUNDLE_FIELDS = {v: k for k, v in B.BUNDLE_FIELDS.items()}
_BUNDLE_ALGS = {v: k for k, v in B.BUNDLE_ALGORITHMS.items()}


def _bundle(key: str, args: str, ports: dict[str, int] | None) -> Action:
    head, sep, members = args.partition("members:")
    if not sep:
        head, sep, members = args.partition("slaves:")
    parts = [p for p in head.split(",") if p]
    dst = parse_subfield(parts[4]) if key == "bundle_load" else None
    return B.Bundle(tuple(_port(p, ports) for p in members.split(",") if p),
                    _BUNDLE_ALGS[parts[2]], _BUNDLE_FIELDS[parts[0]], int(parts[1]), dst)


_REASONS = {v: k for k, v in C.PACKET_IN_REASONS.items()}


def _controller(args: str) -> Action:
    userdata = b""
    pause = False
    max_len, cid, reason, meter = 0xFFFF, 0, C.OFPR_ACTION, 0
    if args.isdigit():
        max_len = int(args)
    else:
        for k, v in _kv(args):
            if k == "userdata":
                userdata = bytes(int(x, 16) for x in v.split(".") if x)
            elif k == "pause":
                pause = True
            elif k == "max_len":
                max_len = int(v)
            elif k == "id":
                cid = int(v)
            elif k == "reason":
                reason = _REASONS[v]
            elif k == "meter_id":
                meter = int(v)
            else:
                raise ParseError("unknown controller key %r" % k)
    if reason == C.OFPR_ACTION and not cid and not userdata and not pause and not meter:
        return B.Output(OFPP_CONTROLLER, max_len)
    return C.Controller(userdata, pause, max_len, cid, reason, meter)


def _ct(args: str, ports: dict[str, int] | None) -> Action:
    commit = force = False
    table = 255
    zone_src: Subfield | None = None
    zone_imm = alg = 0
    nested: list[Action] = []
    for item in split_top(args):
        key, eq, value = item.partition("=")
        if item == "commit":
            commit = True
        elif item == "force":
            force = True
        elif key == "table" and eq:
            table = int(value)
        elif key == "zone" and eq:
            if value.isdigit():
                zone_imm = int(value)
            else:
                zone_src = parse_subfield(value)
        elif key == "alg" and eq:
            alg = {"ftp": 21, "tftp": 69}.get(value) or int(value)
        elif item == "nat" or item.startswith("nat("):
            nested.insert(0, _nat(item[4:-1] if item.startswith("nat(") else ""))
        elif item.startswith("exec("):
            nested.extend(parse_actions(item[5:-1], ports))
        else:
            raise ParseError("unknown ct argument %r" % item)
    return T.Ct(commit, force, table, zone_src, zone_imm, alg, tuple(nested))


def _split_addr_port(spec: str) -> tuple[str, str]:
    """Split "ADDR[-ADDR][:PORT[-PORT]]" with bracketed IPv6 support."""
    if spec.startswith("["):
        # [v6]:port or [v6]-[v6]:port
        m = re.fullmatch(r"(\[[^\]]+\](?:-\[[^\]]+\])?)(?::(.+))?", spec)
        if not m:
            raise ParseError("bad nat range %r" % spec)
        return m.group(1).replace("[", "").replace("]", ""), m.group(2) or ""
    if spec.count(":") >= 2:
        return spec, ""
    addr, _, port = spec.partition(":")
    return addr, port


def _nat(args: str) -> Action:
    flags = 0
    addr_min = addr_max = None
    ipv6 = False
    port_min = port_max = 0
    for item in split_top(args):
        key, eq, value = item.partition("=")
        if key in ("src", "dst"):
            flags |= T.NX_NAT_F_SRC if key == "src" else T.NX_NAT_F_DST
            if eq:
                addrs, ports = _split_addr_port(value)
                lo, _, hi = addrs.partition("-")
                ipv6 = ":" in lo
                fam = socket.AF_INET6 if ipv6 else socket.AF_INET
                addr_min = int.from_bytes(socket.inet_pton(fam, lo), "big")
                if hi:
                    addr_max = int.from_bytes(socket.inet_pton(fam, hi), "big")
                if ports:
                    plo, _, phi = ports.partition("-")
                    port_min = int(plo)
                    port_max = int(phi) if phi else 0
        elif item == "persistent":
            flags |= T.NX_NAT_F_PERSISTENT
        elif item == "hash":
            flags |= T.NX_NAT_F_PROTO_HASH
        elif item == "random":
            flags |= T.NX_NAT_F_PROTO_RANDOM
        else:
            raise ParseError("unknown nat argument %r" % item)
    return T.Nat(flags, addr_min, addr_max, ipv6, port_min, port_max)


def _learn_match(dst: Subfield, value: str, ports: dict[str, int] | None) -> L.LearnSpec:
    """``DST=VALUE`` in learn, read as OVS learn_parse_spec() does: VALUE is
    a subfield of the same width if it parses as one, else an immediate in
    the field's own syntax (exact, no mask) when DST is the whole field, or
    an integer that fits DST otherwise."""
    try:
        src: Subfield | None = parse_subfield(value)
    except ValueError:
        src = None
    if src is not None:
        if src.n_bits != dst.n_bits:
            raise ValueError("bit widths of %s and %s differ" % (dst.format(), value))
        return L.LearnMatchField(dst, src)
    if dst.ofs == 0 and dst.n_bits == dst.field.n_bits:
        imm, mask = parse_value(dst.field, value, ports)
        field_bits = (1 << dst.n_bits) - 1
        if mask is not None and mask & field_bits != field_bits:
            raise ValueError("%s: wildcards not allowed here" % value)
        return L.LearnMatchImm(dst, imm)
    imm = _int(value)
    if imm >> dst.n_bits:
        raise ValueError("value %s does not fit into %d bits" % (value, dst.n_bits))
    return L.LearnMatchImm(dst, imm)


def _learn(args: str, ports: dict[str, int] | None) -> Action:
    kw: dict[str, int] = {}
    flags = 0
    result_dst: Subfield | None = None
    specs: list[L.LearnSpec] = []
    int_keys = ("table", "idle_timeout", "hard_timeout", "fin_idle_timeout",
                "fin_hard_timeout", "priority", "cookie", "limit")
    for item in split_top(args):
        key, eq, value = item.partition("=")
        if eq and key in int_keys:
            kw[key] = _int(value)
        elif item == "send_flow_rem":
            flags |= L.NX_LEARN_F_SEND_FLOW_REM
        elif item == "delete_learned":
            flags |= L.NX_LEARN_F_DELETE_LEARNED
        elif key == "result_dst" and eq:
            result_dst = parse_subfield(value)
        elif item.startswith("load:"):
            src, _, dst = item[5:].partition("->")
            dsf = parse_subfield(dst)
            if src[:1].isdigit():
                specs.append(L.LearnLoadImm(dsf, _int(src)))
            else:
                specs.append(L.LearnLoadField(dsf, parse_subfield(src)))
        elif item.startswith("output:"):
            specs.append(L.LearnOutput(parse_subfield(item[7:])))
        elif eq:
            specs.append(_learn_match(parse_subfield(key), value, ports))
        else:
            sf = parse_subfield(item)
            specs.append(L.LearnMatchField(sf, sf))
    table = kw.pop("table")
    return L.Learn(table, tuple(specs), flags=flags, result_dst=result_dst, **kw)

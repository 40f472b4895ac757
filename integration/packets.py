"""Packets for end-to-end tests on the dummy datapath: build, capture, trace.

Design note
-----------
Three independent helpers, none of which keeps state between calls except
:class:`PcapCursor` (it remembers how many records of a capture were already
seen, so a test only looks at packets sent after its injection):

* :class:`Packet` describes one IPv4 packet (ICMP, TCP or UDP) and renders it
  as the odp-flow string that ``ovs-appctl netdev-dummy/receive IFACE FLOW``
  turns into a real frame (:meth:`Packet.odp`), and as the OpenFlow flow
  syntax of ``ovs-appctl ofproto/trace BRIDGE FLOW`` (:meth:`Packet.ofp`).
* A tiny pcap reader (:func:`read_pcap`, both byte orders, micro- and
  nanosecond magic, a truncated last record is ignored because vswitchd may
  still be writing it) and a frame decoder (:func:`decode_frame`: Ethernet,
  802.1Q, IPv4/IPv6, ICMP/TCP/UDP) into a :class:`Frame`.
* :func:`trace` runs ``ofproto/trace`` (following recirculations, with
  ``--ct-next`` states) and parses its text into :class:`Trace`: one
  :class:`TraceStage` per recirculation with its datapath actions and final
  header fields, plus the output ports of all stages mapped from datapath
  port numbers to interface names via ``dpif/show``.

Nothing here knows a topology; the tests supply addresses and ports.
"""

from __future__ import annotations

import ipaddress
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17
_PROTO_NAMES = {PROTO_ICMP: "icmp", PROTO_TCP: "tcp", PROTO_UDP: "udp"}

# TCP flag bits, in the order OVS spells them.
_TCP_FLAGS = {"fin": 0x001, "syn": 0x002, "rst": 0x004, "psh": 0x008, "ack": 0x010,
              "urg": 0x020, "ece": 0x040, "cwr": 0x080, "ns": 0x100}


class Appctl(Protocol):
    """What the trace helpers need from a sandbox: ``ovs-appctl -t TARGET ARGS``."""

    def appctl(self, target: str, *args: str, timeout: float = ...) -> str: ...


# ---------------------------------------------------------------- building


@dataclass(frozen=True)
class Packet:
    """One IPv4 packet. ``proto`` is "icmp", "tcp" or "udp"; for ICMP the
    ports are unused, for TCP/UDP the ICMP type/code are."""

    eth_src: str
    eth_dst: str
    ip_src: str
    ip_dst: str
    proto: str = "icmp"
    ttl: int = 64
    tos: int = 0
    icmp_type: int = 8
    icmp_code: int = 0
    sport: int = 0
    dport: int = 0
    tcp_flags: tuple[str, ...] = ("syn",)

    def __post_init__(self) -> None:
        if self.proto not in ("icmp", "tcp", "udp"):
            raise ValueError(f"unsupported protocol {self.proto!r}")
        for flag in self.tcp_flags:
            if flag not in _TCP_FLAGS:
                raise ValueError(f"unknown TCP flag {flag!r}")
        ipaddress.IPv4Address(self.ip_src)
        ipaddress.IPv4Address(self.ip_dst)

    @property
    def proto_number(self) -> int:
        return {"icmp": PROTO_ICMP, "tcp": PROTO_TCP, "udp": PROTO_UDP}[self.proto]

    def odp(self) -> str:
        """The odp-flow text for ``netdev-dummy/receive``."""
        parts = [f"eth(src={self.eth_src},dst={self.eth_dst})", "eth_type(0x0800)",
                 f"ipv4(src={self.ip_src},dst={self.ip_dst},proto={self.proto_number},"
                 f"tos={self.tos},ttl={self.ttl},frag=no)"]
        if self.proto == "icmp":
            parts.append(f"icmp(type={self.icmp_type},code={self.icmp_code})")
        else:
            parts.append(f"{self.proto}(src={self.sport},dst={self.dport})")
            if self.proto == "tcp":
                parts.append(f"tcp_flags({self.tcp_flags_text('|')})")
        return ",".join(parts)

    def ofp(self, in_port: str) -> str:
        """The OpenFlow flow text for ``ofproto/trace BRIDGE FLOW``."""
        fields = [f"in_port={in_port}", self.proto, f"dl_src={self.eth_src}",
                  f"dl_dst={self.eth_dst}", f"nw_src={self.ip_src}", f"nw_dst={self.ip_dst}",
                  f"nw_tos={self.tos & 0xfc}", f"nw_ttl={self.ttl}"]
        if self.proto == "icmp":
            fields += [f"icmp_type={self.icmp_type}", f"icmp_code={self.icmp_code}"]
        else:
            # tp_src/tp_dst are rejected for UDP ("prerequisites not met")
            fields += [f"{self.proto}_src={self.sport}", f"{self.proto}_dst={self.dport}"]
            if self.proto == "tcp":
                fields.append(f"tcp_flags={self.tcp_flags_text('|')}")
        return ",".join(fields)

    def tcp_flags_text(self, sep: str) -> str:
        return sep.join(self.tcp_flags) if self.tcp_flags else "0"

    def reply(self, **changes: object) -> Packet:
        """The answer: MACs, addresses and ports swapped, echo request -> reply,
        TCP SYN -> SYN|ACK; ``changes`` override any field afterwards."""
        values: dict[str, object] = dict(
            eth_src=self.eth_dst, eth_dst=self.eth_src, ip_src=self.ip_dst, ip_dst=self.ip_src,
            proto=self.proto, ttl=64, tos=self.tos, icmp_type=0 if self.icmp_type == 8 else
            self.icmp_type, icmp_code=self.icmp_code, sport=self.dport, dport=self.sport,
            tcp_flags=("syn", "ack") if self.tcp_flags == ("syn",) else self.tcp_flags)
        values.update(changes)
        return Packet(**values)  # type: ignore[arg-type]


def icmp4(eth_src: str, eth_dst: str, ip_src: str, ip_dst: str, **kw: int) -> Packet:
    """An ICMPv4 echo request (``icmp_type=0`` for a reply)."""
    return Packet(eth_src, eth_dst, ip_src, ip_dst, "icmp", **kw)  # type: ignore[arg-type]


def tcp4(eth_src: str, eth_dst: str, ip_src: str, ip_dst: str, sport: int, dport: int,
         flags: Sequence[str] = ("syn",), **kw: int) -> Packet:
    return Packet(eth_src, eth_dst, ip_src, ip_dst, "tcp", sport=sport, dport=dport,
                  tcp_flags=tuple(flags), **kw)  # type: ignore[arg-type]


def udp4(eth_src: str, eth_dst: str, ip_src: str, ip_dst: str, sport: int, dport: int,
         **kw: int) -> Packet:
    return Packet(eth_src, eth_dst, ip_src, ip_dst, "udp", sport=sport, dport=dport,
                  tcp_flags=(), **kw)  # type: ignore[arg-type]


def inject(box: Appctl, iface: str, packet: Packet) -> None:
    """Hand the packet to vswitchd as if it arrived on ``iface`` (a dummy port)."""
    box.appctl("ovs-vswitchd", "netdev-dummy/receive", iface, packet.odp())


# ---------------------------------------------------------------- pcap


_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",     # microseconds
                b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}     # nanoseconds


class PcapError(ValueError):
    """Not a pcap file."""


def parse_pcap(data: bytes) -> list[bytes]:
    """The frames of a classic pcap capture; a partial last record is ignored."""
    if len(data) < 24:
        return []       # vswitchd has not written the header yet
    order = _PCAP_MAGICS.get(data[:4])
    if order is None:
        raise PcapError(f"bad pcap magic {data[:4].hex()}")
    frames: list[bytes] = []
    offset = 24
    record = struct.Struct(order + "IIII")
    while offset + record.size <= len(data):
        _sec, _frac, incl_len, _orig_len = record.unpack_from(data, offset)
        start = offset + record.size
        if start + incl_len > len(data):
            break
        frames.append(data[start:start + incl_len])
        offset = start + incl_len
    return frames


def read_pcap(path: str | Path) -> list[bytes]:
    """The frames of a pcap file; a missing file reads as an empty capture."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return parse_pcap(data)


def parse_hex_frames(text: str) -> list[bytes]:
    """The frames that ``ovs-pcap FILE`` prints, one hex string per line."""
    return [bytes.fromhex(line.strip()) for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class Frame:
    """The decoded headers of one frame; fields a frame lacks are None."""

    eth_src: str
    eth_dst: str
    eth_type: int
    vlan: int | None = None
    ip_src: str | None = None
    ip_dst: str | None = None
    ttl: int | None = None
    tos: int | None = None
    proto: int | None = None
    sport: int | None = None
    dport: int | None = None
    icmp_type: int | None = None
    icmp_code: int | None = None
    tcp_flags: int | None = None
    raw: bytes = field(default=b"", repr=False, compare=False)

    @property
    def proto_name(self) -> str | None:
        return None if self.proto is None else _PROTO_NAMES.get(self.proto, str(self.proto))

    def has_tcp_flags(self, *names: str) -> bool:
        return self.tcp_flags is not None and all(
            self.tcp_flags & _TCP_FLAGS[n] for n in names)

    def summary(self) -> str:
        text = f"{self.eth_src}>{self.eth_dst} type=0x{self.eth_type:04x}"
        if self.ip_src is not None:
            text += f" {self.ip_src}>{self.ip_dst} proto={self.proto_name} ttl={self.ttl}"
            if self.sport is not None:
                text += f" ports={self.sport}>{self.dport}"
            if self.icmp_type is not None:
                text += f" icmp={self.icmp_type}/{self.icmp_code}"
        return text


def _mac(data: bytes) -> str:
    return ":".join(f"{b:02x}" for b in data)


def decode_frame(frame: bytes) -> Frame:
    """Ethernet (+ one 802.1Q tag), IPv4 or IPv6, ICMP/ICMPv6/TCP/UDP."""
    if len(frame) < 14:
        raise ValueError(f"frame of {len(frame)} bytes is too short for Ethernet")
    dst, src = _mac(frame[0:6]), _mac(frame[6:12])
    (eth_type,) = struct.unpack_from("!H", frame, 12)
    offset, vlan = 14, None
    if eth_type == 0x8100 and len(frame) >= 18:
        tci, eth_type = struct.unpack_from("!HH", frame, 14)
        vlan, offset = tci & 0x0fff, 18
    values: dict[str, object] = {}
    l4 = None
    if eth_type == 0x0800 and len(frame) >= offset + 20:
        ihl = (frame[offset] & 0x0f) * 4
        values.update(tos=frame[offset + 1], ttl=frame[offset + 8], proto=frame[offset + 9],
                      ip_src=str(ipaddress.IPv4Address(frame[offset + 12:offset + 16])),
                      ip_dst=str(ipaddress.IPv4Address(frame[offset + 16:offset + 20])))
        l4 = offset + ihl
    elif eth_type == 0x86dd and len(frame) >= offset + 40:
        (vtc,) = struct.unpack_from("!I", frame, offset)
        values.update(tos=(vtc >> 20) & 0xff, proto=frame[offset + 6], ttl=frame[offset + 7],
                      ip_src=str(ipaddress.IPv6Address(frame[offset + 8:offset + 24])),
                      ip_dst=str(ipaddress.IPv6Address(frame[offset + 24:offset + 40])))
        l4 = offset + 40
    proto = values.get("proto")
    if l4 is not None:
        if proto in (PROTO_TCP, PROTO_UDP) and len(frame) >= l4 + 4:
            sport, dport = struct.unpack_from("!HH", frame, l4)
            values.update(sport=sport, dport=dport)
            if proto == PROTO_TCP and len(frame) >= l4 + 14:
                (off_flags,) = struct.unpack_from("!H", frame, l4 + 12)
                values["tcp_flags"] = off_flags & 0x01ff
        elif proto in (PROTO_ICMP, 58) and len(frame) >= l4 + 2:
            values.update(icmp_type=frame[l4], icmp_code=frame[l4 + 1])
    return Frame(eth_src=src, eth_dst=dst, eth_type=eth_type, vlan=vlan, raw=frame,
                 **values)  # type: ignore[arg-type]


class PcapCursor:
    """New frames of one capture file since the cursor was made (or last read)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.seen = len(read_pcap(self.path))

    def new_frames(self) -> list[Frame]:
        frames = read_pcap(self.path)
        if len(frames) < self.seen:     # re-created (vswitchd restarted): all new
            self.seen = 0
        fresh = frames[self.seen:]
        self.seen = len(frames)
        return [decode_frame(f) for f in fresh]

    def wait_for(self, predicate: Callable[[Frame], bool], timeout: float = 10.0,
                 poll: float = 0.05) -> tuple[Frame | None, list[Frame]]:
        """Wait until a new frame satisfies ``predicate``: (that frame or None
        on timeout, every new frame looked at). Background traffic (RAs,
        health-check SYNs) is skipped, not an error."""
        deadline = time.monotonic() + timeout
        seen: list[Frame] = []
        while True:
            for frame in self.new_frames():
                seen.append(frame)
                if predicate(frame):
                    return frame, seen
            if time.monotonic() >= deadline:
                return None, seen
            time.sleep(poll)


def matches(frame: Frame, **expected: object) -> bool:
    """True when every given Frame attribute has the expected value."""
    return all(getattr(frame, name) == value for name, value in expected.items())


# ---------------------------------------------------------------- ofproto/trace


@dataclass(frozen=True)
class TraceStage:
    """One pass through the OpenFlow tables (the first, or one recirculation)."""

    flow: str                     # the "Flow:" line (input of this pass)
    final_flow: dict[str, str]    # fields of "Final flow:" (input fields if unchanged)
    actions: str                  # the "Datapath actions:" text


@dataclass(frozen=True)
class Trace:
    stages: tuple[TraceStage, ...]
    outputs: tuple[str, ...]      # interface names the packet is sent to, in order
    text: str = field(repr=False, compare=False)

    @property
    def final_flow(self) -> dict[str, str]:
        return self.stages[-1].final_flow if self.stages else {}

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(stage.actions for stage in self.stages)

    @property
    def dropped(self) -> bool:
        return not self.outputs

    def has_action(self, fragment: str) -> bool:
        """Whether any stage's datapath actions contain ``fragment``."""
        return any(fragment in stage.actions for stage in self.stages)


def split_actions(text: str) -> list[str]:
    """Top-level comma-separated items of a datapath action list."""
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        items.append(tail)
    return items


def output_port_numbers(actions: str) -> list[int]:
    """Datapath ports a datapath action list outputs to (also inside clone())."""
    ports: list[int] = []
    for item in split_actions(actions):
        if item.isdigit():
            ports.append(int(item))
        elif item.startswith("clone(") and item.endswith(")"):
            ports += output_port_numbers(item[len("clone("):-1])
    return ports


def parse_flow_fields(text: str) -> dict[str, str]:
    """``a=1,b=2,icmp,...`` -> {"a": "1", "b": "2", "icmp": ""}."""
    fields: dict[str, str] = {}
    for item in split_actions(text):
        key, sep, value = item.partition("=")
        fields[key.strip()] = value.strip() if sep else ""
    return fields


def parse_trace(text: str, port_names: dict[int, str] | None = None) -> Trace:
    """Parse ``ofproto/trace`` output; ``port_names`` maps datapath port
    numbers to interface names (numbers stay as text when unknown)."""
    stages: list[TraceStage] = []
    flow = ""
    final: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("Flow: "):
            flow, final = line[len("Flow: "):].strip(), None
        elif line.startswith("Final flow: "):
            rest = line[len("Final flow: "):].strip()
            final = parse_flow_fields(flow if rest == "unchanged" else rest)
        elif line.startswith("Datapath actions: "):
            actions = line[len("Datapath actions: "):].strip()
            stages.append(TraceStage(flow=flow, final_flow=final if final is not None
                                     else parse_flow_fields(flow), actions=actions))
    names = port_names or {}
    outputs = tuple(names.get(n, str(n)) for stage in stages
                    for n in output_port_numbers(stage.actions))
    return Trace(stages=tuple(stages), outputs=outputs, text=text)


def parse_dpif_show(text: str) -> dict[int, str]:
    """datapath port number -> interface name, from ``dpif/show``."""
    ports: dict[int, str] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and "/" in words[1]:
            odp = words[1].rstrip(":").split("/", 1)[1]
            if odp.isdigit():
                ports[int(odp)] = words[0]
    return ports


def trace(box: Appctl, bridge: str, flow: str, ct_next: Iterable[str] = (),
          timeout: float = 30.0) -> Trace:
    """``ofproto/trace BRIDGE FLOW [--ct-next STATE]...`` parsed into a Trace.

    Each ``ct_next`` item is the ct_state of one further recirculation after
    a ct() action, in order (vswitchd assumes ``trk,new`` for the rest)."""
    args = ["ofproto/trace", bridge, flow]
    for state in ct_next:
        args += ["--ct-next", state]
    text = box.appctl("ovs-vswitchd", *args, timeout=timeout)
    ports = parse_dpif_show(box.appctl("ovs-vswitchd", "dpif/show", timeout=timeout))
    return parse_trace(text, ports)


def trace_packet(box: Appctl, bridge: str, in_port: str, packet: Packet,
                 ct_next: Iterable[str] = ()) -> Trace:
    return trace(box, bridge, packet.ofp(in_port), ct_next)

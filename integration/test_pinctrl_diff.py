"""Packet-level differential tests of pinctrl: the C ovn-controller vs ours.

One topology (integration/pinctrl_harness.py) is built with northd and saved;
two sandboxes are restored from it with northd off, one running the C agent
and one ours, both kept for the whole module. Each case runs the same
scenario in both sandboxes at the same time: raw frames are injected into a
dummy port with ``netdev-dummy/receive``, the frames every capturing port
sent are read from its tx pcap, and the SB rows agents write (MAC_Binding,
FDB, Controller_Event, virtual Port_Binding) and ``acl_log`` lines are
collected. A scenario's observation is memoised, so the two tests of a case
share one run:

* ``test_c_answers[case]`` asserts the C agent really ran the service (the
  scenario is meaningful);
* ``test_ours_matches_c[case]`` asserts our observation equals C's, frame by
  frame (differences reported field by field) and row by row. While an
  opcode the case needs is missing from ``controller.pinctrl.registry.REGISTRY``
  the case is a strict xfail, so it turns into a failure the moment the
  opcode is registered but answers differently (or into a pass).

Cases (CASES): ARP and ND resolution with buffered-packet release (router
and gateway port), buffered-packet expiry, MAC_Binding update, TTL / hop
limit exceeded (from a VIF and through the gateway port), frag-needed and
packet-too-big (gateway_mtu), reject ACL answers for TCP/UDP/SCTP over IPv4
and IPv6 (and no answer to an RST), a plain router's RST / port- and
protocol-unreachable / SCTP ABORT, nd_na and nd_na_router, put_fdb,
bind_vport, empty_lb_backends events (v4, v6), RARP activation of a
multichassis port, ACL log lines (one, and a burst through the ACL meter),
GARP/RARP announcements with their schedule, inject-pkt. An agent that exits
during a case is restarted for the next one and the case fails with its last
errors.

``OVNPY_PINCTRL_DUMP=FILE`` writes every observation (both agents) as JSON.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.lflow.actions import base as ops
from integration import pinctrl_frames as pf
from integration import pinctrl_harness as h
from integration.pinctrl_harness import AgentBox, Observation

pytestmark = pytest.mark.integration

C_TIMEOUT = 5.0           # the C agent answers within milliseconds
OURS_TIMEOUT = 5.0        # ours, once the opcode is registered
MISSING_TIMEOUT = 1.0     # ours while the opcode is not registered (expected silence)
BUFFER_LIFETIME = 10.0    # buffered packets older than this are dropped (C: 10 s)
SB_QUIET = 1.0            # how long to look for SB rows that C does not write
GRACE = 0.4               # after the expected frames: catch extra/duplicate frames
GARP_SETTLE = 5.0         # the first GARP comes about 1 s after the agent has its SB
GARP_LAST, GARP_SLACK = 30.0, 2.0   # the 5th GARP of an address: +30 s after the first


def _registered() -> set[int] | None:
    """Opcodes our agent serves, or None when there is no pinctrl package."""
    try:
        importlib.import_module("controller.pinctrl")
        registry = importlib.import_module("controller.pinctrl.registry")
    except ImportError:
        return None
    return set(getattr(registry, "REGISTRY", {}))


def _has_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


REGISTERED = _registered()


@dataclass(frozen=True)
class Case:
    name: str
    opcodes: tuple[int, ...]            # what our agent needs registered
    scenario: Callable[[AgentBox, float], Observation]
    module: str | None = None           # a module to require instead of opcodes


# ---------------------------------------------------------------- scenario steps


def _relevant(pred: Callable[[pf.Brief], bool]) -> h.FramePredicate:
    def check(_port: str, frame: bytes) -> bool:
        try:
            return pred(pf.brief(frame))
        except (ValueError, KeyError, struct.error):
            return False
    return check


def _on(port: str, pred: Callable[[pf.Brief], bool]) -> h.FramePredicate:
    rel = _relevant(pred)
    return lambda p, f: p == port and rel(p, f)


def exchange(agent: AgentBox, timeout: float, iface: str, frames: list[bytes],
             expect: h.FramePredicate, count: int, relevant: h.FramePredicate,
             obs: Observation, step: str) -> bool:
    """Inject, wait for ``count`` expected frames, add what was relevant."""
    mark = agent.mark()
    agent.inject(iface, *frames)
    got = agent.wait_frames(mark, expect, count, timeout)
    ok = len(got) >= count
    if ok:
        agent.wait_frames(mark, expect, count + 1, GRACE)     # extra copies, if any
    else:
        obs.notes.append(f"{step}: {len(got)}/{count} expected frames")
    for port, fs in h.frames_hex(agent.frames_since(mark, relevant)).items():
        obs.frames.setdefault(port, []).extend(fs)
    return ok


# ---------------------------------------------------------------- neighbour resolution

PROTO_GRE = 47            # neither TCP, UDP nor SCTP: "protocol unreachable"
UNKNOWN_HOST_MAC = "0a:00:00:02:00:21"
UNKNOWN_HOST_MAC6 = "0a:00:00:02:00:61"
GW_MAC, GW_MAC6 = "0a:00:00:00:99:fe", "0a:00:00:00:99:fd"
PROVIDER_MAC = "0a:00:00:00:99:01"
LLA_LR_LS2 = "fe80::800:ff:fe00:201"
LLA_LR_PUB = "fe80::800:ff:fe00:1001"


def _udp_from_p1(dst: str, sport: int, size: int = 0, ttl: int = 64,
                 df: bool = False) -> bytes:
    src = h.P1_IP6 if ":" in dst else h.P1_IP
    gw_mac = h.LR_LS1_MAC
    return pf.ip_frame(h.P1_MAC, gw_mac, src, dst, pf.PROTO_UDP,
                       pf.udp(src, dst, sport, 4000, b"x" * size), ttl=ttl, df=df)


def resolve_scenario(target: str, out_port: str, resolver_mac: str,
                     reply: Callable[[], bytes], final_dst: str
                     ) -> Callable[[AgentBox, float], Observation]:
    """Four packets from ls1-p1 to ``final_dst`` whose next hop ``target`` is
    unknown: one ARP request / NS each out of ``out_port`` (arp{} / nd_ns{}),
    then the neighbour's reply (put_arp / put_nd -> MAC_Binding) releases the
    three newest buffered packets with eth.dst = ``resolver_mac``."""
    v6 = ":" in target

    def is_request(b: pf.Brief) -> bool:
        if v6:
            return b.icmp_type == 135 and b.nd_target == target
        return b.arp_op == 1 and b.arp_tpa == target

    def is_release(b: pf.Brief) -> bool:
        return b.ip_dst == final_dst and b.eth_dst == resolver_mac and b.proto == pf.PROTO_UDP

    def relevant(b: pf.Brief) -> bool:
        return is_request(b) or b.ip_dst == final_dst or (
            b.arp_op == 2 and b.arp_spa == target) or (b.icmp_type == 136
                                                       and b.nd_target == target)

    def run(agent: AgentBox, timeout: float) -> Observation:
        obs = Observation()
        packets = [_udp_from_p1(final_dst, 30000 + i) for i in range(4)]
        asked = exchange(agent, timeout, "vif1", packets, _on(out_port, is_request), 4,
                         _relevant(relevant), obs, "requests")
        released = exchange(agent, timeout, out_port, [reply()], _on(out_port, is_release), 3,
                            _relevant(relevant), obs, "release")
        obs.sb = agent.wait_sb(h.rows_matching("MAC_Binding", f" {target} "), timeout)
        obs.answered = asked and released and bool(obs.sb)
        return obs

    return run


def expiry_scenario(agent: AgentBox, timeout: float) -> Observation:
    """A packet waits for 10.2.0.23 longer than the 10 s buffer lifetime;
    the late ARP reply creates the MAC_Binding but releases nothing."""
    target, mac = "10.2.0.23", "0a:00:00:02:00:23"
    obs = Observation()

    def relevant(b: pf.Brief) -> bool:
        return b.ip_dst == target or b.arp_tpa == target

    asked = exchange(agent, timeout, "vif1", [_udp_from_p1(target, 30100)],
                     _on("vif4", lambda b: b.arp_op == 1 and b.arp_tpa == target), 1,
                     _relevant(relevant), obs, "request")
    time.sleep(BUFFER_LIFETIME + 1.0)
    mark = agent.mark()
    agent.inject("vif4", _arp_reply(mac, h.LR_LS2_MAC, target, h.LR_LS2_IP)())
    obs.sb = agent.wait_sb(h.rows_matching("MAC_Binding", f" {target} "), timeout)
    time.sleep(1.0)                                   # a release would come by now
    for port, fs in h.frames_hex(agent.frames_since(mark, _relevant(relevant))).items():
        obs.frames.setdefault(port, []).extend(fs)
    obs.answered = asked and bool(obs.sb)
    return obs


def _arp_reply(src_mac: str, dst_mac: str, spa: str, tpa: str) -> Callable[[], bytes]:
    return lambda: pf.arp_frame(2, src_mac, dst_mac, src_mac, spa, dst_mac, tpa)


def _na_reply(src_mac: str, dst_mac: str, target: str, dst_ip6: str) -> Callable[[], bytes]:
    return lambda: pf.nd_na_frame(src_mac, dst_mac, target, dst_ip6, target)


# ---------------------------------------------------------------- one-shot replies


def reply_scenario(iface: str, frame: Callable[[], bytes], out_port: str,
                   expect: Callable[[pf.Brief], bool], relevant: Callable[[pf.Brief], bool],
                   count: int = 1, no_sb_rows: tuple[str, ...] = ()
                   ) -> Callable[[AgentBox, float], Observation]:
    """Inject one frame, expect ``count`` generated frames on ``out_port``;
    with ``no_sb_rows``, also collect the SB rows containing all of those
    strings for a short while (cases where C writes none: ours must not either)."""
    def run(agent: AgentBox, timeout: float) -> Observation:
        obs = Observation()
        ok = exchange(agent, timeout, iface, [frame()], _on(out_port, expect), count,
                      _relevant(relevant), obs, "reply")
        if no_sb_rows:
            obs.sb = agent.wait_sb(h.rows_matching(*no_sb_rows), SB_QUIET)
        obs.answered = ok
        return obs
    return run


def _l4_to(dst: str, proto: int, dport: int, sport: int, *, src_mac: str = h.P1_MAC,
           dst_mac: str = h.LR_LS1_MAC, ttl: int = 64) -> Callable[[], bytes]:
    """A TCP SYN / UDP / SCTP INIT from ls1-p1 to ``dst``:``dport`` (any other
    protocol: a GRE-like 4-byte header and a payload, no ports)."""
    def build() -> bytes:
        src = h.P1_IP6 if ":" in dst else h.P1_IP
        if proto == pf.PROTO_TCP:
            l4 = pf.tcp(src, dst, sport, dport, seq=0x01020304)
        elif proto == pf.PROTO_UDP:
            l4 = pf.udp(src, dst, sport, dport, b"payload")
        elif proto == pf.PROTO_SCTP:
            l4 = pf.sctp_init(sport, dport, 0x0A0B0C0D)
        else:
            l4 = b"\x00\x00\x08\x00" + b"other-protocol"
        return pf.ip_frame(src_mac, dst_mac, src, dst, proto, l4, ttl=ttl)
    return build


def _answer_to_p1(src: str) -> Callable[[pf.Brief], bool]:
    """A frame generated back towards ls1-p1 from ``src``."""
    p1 = h.P1_IP6 if ":" in src else h.P1_IP
    return lambda b: b.ip_dst == p1 and b.ip_src == src


def _port_case(name: str, dst: str, proto: int, opcode: int, dst_mac: str,
               sport: int) -> Case:
    expect = _answer_to_p1(dst)
    return Case(name, (opcode,), reply_scenario(
        "vif1", _l4_to(dst, proto, h.REJECT_PORT if dst_mac == h.P2_MAC else 80, sport,
                       dst_mac=dst_mac),
        "vif1", expect, lambda b: expect(b) or (b.ip_dst == dst and b.sport == sport)))


# ---------------------------------------------------------------- the cases


def _ttl_case(name: str, dst: str, router_ip: str) -> Case:
    expect = _answer_to_p1(router_ip)
    return Case(name, (ops.OP_ICMP,), reply_scenario(
        "vif1", lambda: _udp_from_p1(dst, 31000, ttl=1), "vif1", expect,
        lambda b: expect(b) or b.ip_dst == dst))


def _gateway_ttl_case(name: str, src: str, dst: str) -> Case:
    """A packet from the provider network with TTL 1 through the gateway port:
    the ICMP time exceeded goes back out of br-phys (northd swaps the
    addresses on the gateway port, so it comes from ``dst``)."""
    def expect(b: pf.Brief) -> bool:
        return b.ip_dst == src and b.ip_src == dst
    frame = lambda: pf.ip_frame(PROVIDER_MAC, h.LR_PUB_MAC, src, dst, pf.PROTO_UDP,  # noqa: E731
                                pf.udp(src, dst, 31500, 4000), ttl=1)
    return Case(name, (ops.OP_ICMP,), reply_scenario(
        "br-phys", frame, "br-phys", expect, lambda b: expect(b) or b.ip_dst == dst))


def _frag_case(name: str, dst: str, router_ip: str, opcodes: tuple[int, ...]) -> Case:
    expect = _answer_to_p1(router_ip)
    return Case(name, opcodes, reply_scenario(
        "vif1", lambda: _udp_from_p1(dst, 32000, size=1500 - 28 - (20 if ":" in dst else 0),
                                     df=True),
        "vif1", expect, lambda b: expect(b) or b.ip_dst == dst))


def _nd_na_case(name: str, iface: str, src_mac: str, src_ip6: str, target: str,
                opcode: int) -> Case:
    def expect(b: pf.Brief) -> bool:
        return b.icmp_type == 136 and b.nd_target == target
    return Case(name, (opcode,), reply_scenario(
        iface, lambda: pf.nd_ns_frame(src_mac, src_ip6, target), iface, expect, expect,
        no_sb_rows=("MAC_Binding", f" {src_ip6} ")))


def fdb_scenario(agent: AgentBox, timeout: float) -> Observation:
    """A frame from the `unknown` port ls2-p4 with a new source MAC: put_fdb."""
    mac = "0a:00:00:02:00:f1"
    obs = Observation()
    frame = pf.ip_frame(mac, h.LR_LS2_MAC, "10.2.0.77", h.LR_LS2_IP, pf.PROTO_UDP,
                        pf.udp("10.2.0.77", h.LR_LS2_IP, 5000, 9))
    agent.inject("vif4", frame)
    obs.sb = agent.wait_sb(h.rows_matching("FDB", mac), timeout)
    obs.answered = bool(obs.sb)
    return obs


def vport_scenario(agent: AgentBox, timeout: float) -> Observation:
    """ls1-p1 announces the virtual IP (GARP): bind_vport claims ls1-vip."""
    obs = Observation()
    garp = pf.arp_frame(1, h.VIP_MAC, "ff:ff:ff:ff:ff:ff", h.VIP_MAC, h.VIP_IP,
                        "00:00:00:00:00:00", h.VIP_IP)
    agent.inject("vif1", garp)
    obs.sb = agent.wait_sb(h.rows_matching("Port_Binding ls1-vip", "chassis=hv1"), timeout)
    if obs.sb:
        obs.sb = h.rows_matching("Port_Binding ls1-vip")(agent.sb_state())
    obs.answered = bool(obs.sb)
    return obs


def activation_scenario(agent: AgentBox, timeout: float) -> Observation:
    """ls1-p7 is requested on hv2 and hv1 with activation-strategy=rarp: on
    hv1 (additional chassis) its traffic is blocked until it sends a RARP;
    the RARP packet-in (opcode 26) records additional-chassis-activated."""
    obs = Observation()

    def udp_to_p1(sport: int) -> bytes:
        return pf.ip_frame(h.P7_MAC, h.P1_MAC, h.P7_IP, h.P1_IP, pf.PROTO_UDP,
                           pf.udp(h.P7_IP, h.P1_IP, sport, 9))
    rarp = pf.ethernet("ff:ff:ff:ff:ff:ff", h.P7_MAC, 0x8035,
                       bytes.fromhex("0001080006040003") + pf.mac_bytes(h.P7_MAC) + bytes(4)
                       + pf.mac_bytes(h.P7_MAC) + bytes(4))
    relevant = _relevant(lambda b: b.eth_src == h.P7_MAC)
    mark = agent.mark()
    agent.inject("vif7", udp_to_p1(37001))            # blocked: not activated yet
    agent.inject("vif7", rarp)
    obs.sb = agent.wait_sb(h.rows_matching("Port_Binding ls1-p7", "activated=hv1"), timeout)
    if obs.sb:
        agent.box.wait_hv_sync(timeout=30)            # the blocking flows go away
        agent.inject("vif7", udp_to_p1(37002))
        agent.wait_frames(mark, _on("vif1", lambda b: b.sport == 37002), 1, timeout)
        time.sleep(GRACE)
    obs.frames = h.frames_hex(agent.frames_since(mark, relevant))
    obs.answered = bool(obs.sb) and any(pf.brief(bytes.fromhex(f)).sport == 37002
                                        for f in obs.frames.get("vif1", []))
    return obs


def event_scenario(vip: str) -> Callable[[AgentBox, float], Observation]:
    """A TCP SYN from ls2-p4 to the empty LB VIP: trigger_event -> Controller_Event."""
    def run(agent: AgentBox, timeout: float) -> Observation:
        obs = Observation()
        src = "fd02::77" if ":" in vip else "10.2.0.77"
        frame = pf.ip_frame("0a:00:00:02:00:f2", h.LR_LS2_MAC, src, vip, pf.PROTO_TCP,
                            pf.tcp(src, vip, 40000, h.EMPTY_LB_PORT))
        agent.inject("vif4", frame)
        text = f"[{vip}]:{h.EMPTY_LB_PORT}" if ":" in vip else f"{vip}:{h.EMPTY_LB_PORT}"
        obs.sb = agent.wait_sb(h.rows_matching("Controller_Event", f"vip={text} "), timeout)
        obs.answered = bool(obs.sb)
        return obs
    return run


def mac_update_scenario(agent: AgentBox, timeout: float) -> Observation:
    """Unsolicited ARP replies to lr1-ls2 for one IP, first with MAC A, then
    MAC B: put_arp inserts, then updates the row (new MAC, new timestamp)."""
    ip, mac_a, mac_b = "10.2.0.22", "0a:00:00:02:00:a1", "0a:00:00:02:00:b1"
    obs = Observation()
    stamps: list[list[int]] = []
    for mac in (mac_a, mac_b):
        agent.inject("vif4", pf.arp_frame(2, mac, h.LR_LS2_MAC, mac, ip, h.LR_LS2_MAC,
                                          h.LR_LS2_IP))
        rows = agent.wait_sb(h.rows_matching("MAC_Binding", f" {ip} {mac} "), timeout)
        obs.sb += rows
        stamps.append(h.mac_binding_timestamps(agent.box, ip))
        obs.answered = bool(rows)
        if not rows:
            break
    obs.notes.append(f"timestamps {stamps}")
    obs.sb.append(f"timestamp changed with the MAC: {len(stamps) == 2 and stamps[0] != stamps[1]}")
    return obs


def rst_ignored_scenario(agent: AgentBox, timeout: float) -> Observation:
    """A TCP RST to the rejected port gets no answer (no RST storms); a SYN
    right after it does, which shows the RST was processed."""
    obs = Observation()
    rst = pf.ip_frame(h.P1_MAC, h.P2_MAC, h.P1_IP, h.P2_IP, pf.PROTO_TCP,
                      pf.tcp(h.P1_IP, h.P2_IP, 36001, h.REJECT_PORT, flags=pf.TCP_RST))
    syn = _l4_to(h.P2_IP, pf.PROTO_TCP, h.REJECT_PORT, 36002, dst_mac=h.P2_MAC)()

    def answer(b: pf.Brief) -> bool:
        return b.ip_src == h.P2_IP and b.ip_dst == h.P1_IP
    obs.answered = exchange(agent, timeout, "vif1", [rst, syn], _on("vif1", answer), 1,
                            _relevant(answer), obs, "rst+syn")
    return obs


def inject_scenario(microflow: str, out_port: str, expect: Callable[[pf.Brief], bool]
                    ) -> Callable[[AgentBox, float], Observation]:
    """``ovn-appctl inject-pkt MICROFLOW``: the agent builds the packet and
    runs it through br-int; what comes out of ``out_port`` is compared."""
    def run(agent: AgentBox, timeout: float) -> Observation:
        obs = Observation()
        mark = agent.mark()
        try:
            reply = agent.box.appctl("controller", "inject-pkt", microflow, timeout=10).strip()
        except h.SandboxError as exc:
            obs.notes.append(f"inject-pkt failed: {exc}")
            return obs
        if reply:
            obs.log.append(f"reply: {reply}")
        got = agent.wait_frames(mark, _on(out_port, expect), 1, timeout)
        agent.wait_frames(mark, _on(out_port, expect), 2, GRACE)
        obs.frames = h.frames_hex(agent.frames_since(mark, _relevant(expect)))
        obs.answered = bool(got)
        return obs
    return run


def log_scenario(burst: int) -> Callable[[AgentBox, float], Observation]:
    """``burst`` UDP packets to ls1-p2:5555 in one receive call hit the
    logged drop ACL: one acl_log line each, as many as its meter lets through."""
    def run(agent: AgentBox, timeout: float) -> Observation:
        return _log_run(agent, timeout, burst)
    return run


def _log_run(agent: AgentBox, timeout: float, burst: int) -> Observation:
    obs = Observation()
    mark = agent.mark()
    agent.inject("vif1", *(pf.ip_frame(h.P1_MAC, h.P2_MAC, h.P1_IP, h.P2_IP, pf.PROTO_UDP,
                                       pf.udp(h.P1_IP, h.P2_IP, 33000 + i, h.LOG_PORT, b"log"))
                           for i in range(burst)))
    deadline = mark.at + timeout
    while not agent.log_since(mark, "acl_log") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(GRACE if agent.log_since(mark, "acl_log") else 0)
    obs.log = agent.log_since(mark, "acl_log")
    obs.answered = bool(obs.log)
    return obs


def garp_scenario(agent: AgentBox, timeout: float) -> Observation:
    """GARPs for the router and NAT addresses and the localnet switch's VIFs
    (RARP for the one without an IPv4), out of br-phys: 5 per address, at +0, +2, +6, +14, +30 s after the first
    (pinctrl-anatomy 4.1). Compared: each distinct frame with its send
    offsets in whole seconds from the first GARP the agent sent at all (the
    order between addresses and the exact milliseconds are free)."""
    obs = Observation()
    deadline = agent.started + GARP_SETTLE + timeout

    def is_garp(frame: bytes) -> bool:
        try:
            b = pf.brief(frame)
        except (ValueError, KeyError, struct.error):
            return False
        return (b.eth_type == pf.ETH_ARP and b.arp_spa == b.arp_tpa) or b.eth_type == 0x8035

    def garps() -> list[tuple[float, bytes]]:
        return [(ts, f) for ts, f in h.read_pcap_records(agent.pcap_path("br-phys"))
                if is_garp(f)]
    seen = garps()
    while not seen and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = garps()
    if not seen:
        obs.notes.append("no GARP at all")
        return obs
    first = seen[0][0]
    time.sleep(max(0.0, first + GARP_LAST + GARP_SLACK - time.time()))
    offsets: dict[str, list[int]] = {}
    for ts, frame in garps():
        if ts <= first + GARP_LAST + GARP_SLACK:
            offsets.setdefault(frame.hex(), []).append(round(ts - first))
    obs.frames = {"br-phys": sorted(offsets)}
    # a localnet VIF's GARP also upserts MAC_Binding rows on the peer routers
    obs.sb = h.rows_matching("MAC_Binding", f" {h.P5_IP} ")(agent.sb_state())
    for key, sent in offsets.items():
        b = pf.brief(bytes.fromhex(key))
        what = "RARP" if b.eth_type == 0x8035 else f"GARP {b.arp_spa}"
        obs.sb.append(f"{what} {b.eth_src} sent at +{sent} s")
    obs.sb.sort()
    obs.answered = all(len(v) == 5 for v in offsets.values())
    if not obs.answered:
        obs.notes.append(f"sends per frame: {offsets}")
    return obs


CASES: list[Case] = [
    Case("arp_resolve_v4", (ops.OP_ARP, ops.OP_PUT_ARP), resolve_scenario(
        "10.2.0.21", "vif4", UNKNOWN_HOST_MAC,
        _arp_reply(UNKNOWN_HOST_MAC, h.LR_LS2_MAC, "10.2.0.21", h.LR_LS2_IP), "10.2.0.21")),
    Case("nd_resolve_v6", (ops.OP_ND_NS, ops.OP_PUT_ND), resolve_scenario(
        "fd02::21", "vif4", UNKNOWN_HOST_MAC6,
        _na_reply(UNKNOWN_HOST_MAC6, h.LR_LS2_MAC, "fd02::21", LLA_LR_LS2), "fd02::21")),
    Case("gateway_arp_resolve_v4", (ops.OP_ARP, ops.OP_PUT_ARP), resolve_scenario(
        h.GW_IP, "br-phys", GW_MAC,
        _arp_reply(GW_MAC, h.LR_PUB_MAC, h.GW_IP, h.LR_PUB_IP), "8.8.8.8")),
    Case("gateway_nd_resolve_v6", (ops.OP_ND_NS, ops.OP_PUT_ND), resolve_scenario(
        h.GW_IP6, "br-phys", GW_MAC6,
        _na_reply(GW_MAC6, h.LR_PUB_MAC, h.GW_IP6, LLA_LR_PUB), "2001:db8::8")),
    Case("buffered_packet_expiry_v4", (ops.OP_ARP, ops.OP_PUT_ARP), expiry_scenario),
    _ttl_case("ttl_exceeded_v4", "10.2.0.31", h.LR_LS1_IP),
    _ttl_case("hop_limit_exceeded_v6", "fd02::31", h.LR_LS1_IP6),
    _gateway_ttl_case("ttl_exceeded_gateway_v4", "172.16.0.50", h.FIP_IP),
    _gateway_ttl_case("hop_limit_exceeded_gateway_v6", "fd10::50", h.P1_IP6),
    _frag_case("frag_needed_v4", "8.8.4.4", h.LR_LS1_IP,
               (ops.OP_ICMP4_ERROR, ops.OP_PUT_ICMP4_FRAG_MTU)),
    _frag_case("packet_too_big_v6", "2001:db8::44", h.LR_LS1_IP6,
               (ops.OP_ICMP6_ERROR, ops.OP_PUT_ICMP6_FRAG_MTU)),
    _port_case("reject_tcp_v4", h.P2_IP, pf.PROTO_TCP, ops.OP_REJECT, h.P2_MAC, 34001),
    _port_case("reject_udp_v4", h.P2_IP, pf.PROTO_UDP, ops.OP_REJECT, h.P2_MAC, 34002),
    _port_case("reject_sctp_v4", h.P2_IP, pf.PROTO_SCTP, ops.OP_REJECT, h.P2_MAC, 34003),
    _port_case("reject_tcp_v6", h.P2_IP6, pf.PROTO_TCP, ops.OP_REJECT, h.P2_MAC, 34004),
    _port_case("reject_udp_v6", h.P2_IP6, pf.PROTO_UDP, ops.OP_REJECT, h.P2_MAC, 34005),
    _port_case("reject_sctp_v6", h.P2_IP6, pf.PROTO_SCTP, ops.OP_REJECT, h.P2_MAC, 34006),
    _port_case("router_tcp_reset_v4", h.LR2_IP, pf.PROTO_TCP, ops.OP_TCP_RESET, h.LR2_MAC,
               35001),
    _port_case("router_port_unreachable_v4", h.LR2_IP, pf.PROTO_UDP, ops.OP_ICMP, h.LR2_MAC,
               35002),
    _port_case("router_sctp_abort_v4", h.LR2_IP, pf.PROTO_SCTP, ops.OP_SCTP_ABORT, h.LR2_MAC,
               35003),
    _port_case("router_tcp_reset_v6", h.LR2_IP6, pf.PROTO_TCP, ops.OP_TCP_RESET, h.LR2_MAC,
               35004),
    _port_case("router_port_unreachable_v6", h.LR2_IP6, pf.PROTO_UDP, ops.OP_ICMP, h.LR2_MAC,
               35005),
    _port_case("router_sctp_abort_v6", h.LR2_IP6, pf.PROTO_SCTP, ops.OP_SCTP_ABORT,
               h.LR2_MAC, 35006),
    _port_case("router_proto_unreachable_v4", h.LR2_IP, PROTO_GRE, ops.OP_ICMP, h.LR2_MAC,
               35007),
    _port_case("router_proto_unreachable_v6", h.LR2_IP6, PROTO_GRE, ops.OP_ICMP, h.LR2_MAC,
               35008),
    _nd_na_case("nd_na_vif", "vif2", h.P2_MAC, h.P2_IP6, h.P1_IP6, ops.OP_ND_NA),
    _nd_na_case("nd_na_router", "vif1", h.P1_MAC, h.P1_IP6, h.LR_LS1_IP6, ops.OP_ND_NA_ROUTER),
    Case("put_fdb", (ops.OP_PUT_FDB,), fdb_scenario),
    Case("bind_vport", (ops.OP_BIND_VPORT,), vport_scenario),
    Case("rarp_activation", (ops.OP_ACTIVATION_STRATEGY_RARP,), activation_scenario),
    Case("empty_lb_event_v4", (ops.OP_EVENT,), event_scenario(h.EMPTY_LB_VIP)),
    Case("empty_lb_event_v6", (ops.OP_EVENT,), event_scenario(h.EMPTY_LB_VIP6)),
    Case("arp_mac_update", (ops.OP_PUT_ARP,), mac_update_scenario),
    Case("reject_ignores_rst", (ops.OP_REJECT,), rst_ignored_scenario),
    Case("acl_log", (ops.OP_LOG,), log_scenario(1)),
    Case("acl_log_meter_burst", (ops.OP_LOG,), log_scenario(4 * h.ACL_METER_PKTPS)),
    Case("inject_pkt_udp4", (), inject_scenario(
        f'inport == "ls1-p1" && eth.src == {h.P1_MAC} && eth.dst == {h.P2_MAC} && '
        f"ip4.src == {h.P1_IP} && ip4.dst == {h.P2_IP} && ip.ttl == 64 && "
        "udp.src == 1234 && udp.dst == 9", "vif2",
        lambda b: b.ip_src == h.P1_IP and b.dport == 9),
        module="controller.pinctrl.inject"),
    Case("inject_pkt_icmp6_to_router", (), inject_scenario(
        f'inport == "ls1-p1" && eth.src == {h.P1_MAC} && eth.dst == {h.LR_LS1_MAC} && '
        f"ip6.src == {h.P1_IP6} && ip6.dst == {h.LR_LS1_IP6} && ip.ttl == 64 && "
        "icmp6.type == 128 && icmp6.code == 0", "vif1",
        lambda b: b.ip_src == h.LR_LS1_IP6 and b.icmp_type == 129),
        module="controller.pinctrl.inject"),
    Case("garp_nat_addresses", (), garp_scenario, module="controller.pinctrl.garp"),
]


def _missing(case: Case) -> str | None:
    """Why our agent cannot serve the case yet, or None."""
    if case.module is not None:
        return None if _has_module(case.module) else f"{case.module} absent"
    if REGISTERED is None:
        return "controller.pinctrl absent"
    missing = [op for op in case.opcodes if op not in REGISTERED]
    return f"opcode(s) {missing} not registered" if missing else None


def _ours_param(case: Case) -> object:
    why = _missing(case)
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(case, id=case.name, marks=marks)


# ---------------------------------------------------------------- fixtures


class Pair:
    """Both agents' sandboxes and the memoised observations per case."""

    def __init__(self, agents: dict[str, AgentBox]) -> None:
        self.agents = agents
        self.seen: dict[str, dict[str, Observation]] = {}

    def observe(self, case: Case) -> dict[str, Observation]:
        if case.name not in self.seen:
            ours_timeout = MISSING_TIMEOUT if _missing(case) else OURS_TIMEOUT
            timeouts = {"c": C_TIMEOUT, "py": ours_timeout}
            seen = h.run_pair(list(self.agents.values()),
                              lambda agent: case.scenario(agent, timeouts[agent.kind]))
            for kind, agent in self.agents.items():
                seen[kind].crashed = agent.restart_if_dead()
            self.seen[case.name] = seen
        return self.seen[case.name]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    snapshot = h.build_pinctrl_snapshot(tmp_path_factory.mktemp("pinctrl-snapshot"))
    agents: dict[str, AgentBox] = {}
    try:
        for kind, agent in zip(("c", "py"), h.start_agents(snapshot, ("c", "py")),
                               strict=True):
            agents[kind] = agent
        pair = Pair(agents)
        yield pair
        dump = os.environ.get("OVNPY_PINCTRL_DUMP")
        if dump:
            Path(dump).write_text(json.dumps(
                {case: {kind: dataclasses.asdict(obs) for kind, obs in seen.items()}
                 for case, seen in pair.seen.items()}, indent=1))
    finally:
        for agent in agents.values():
            agent.close()


# ---------------------------------------------------------------- tests


def test_frame_builders_self_check() -> None:
    """The injected frames carry valid checksums (conntrack verifies them)."""
    assert pf.crc32c(b"123456789") == 0xE3069283          # RFC 3720 check value
    frame = _l4_to(h.P2_IP, pf.PROTO_TCP, 80, 1)()
    assert pf.inet_checksum(frame[14:34]) == 0
    assert pf.inet_checksum(pf._pseudo(h.P1_IP, h.P2_IP, pf.PROTO_TCP, 20) + frame[34:]) == 0
    ns = pf.nd_ns_frame(h.P1_MAC, h.P1_IP6, "fd01::1")
    assert dict(pf.dissect(ns))["ip6.dst"] == "ff02::1:ff00:1"
    assert pf.inet_checksum(pf._pseudo(h.P1_IP6, "ff02::1:ff00:1", pf.PROTO_ICMP6, 32)
                            + ns[54:]) == 0
    init = pf.sctp_init(1, 2, 3)
    crc = struct.unpack_from("<I", init, 8)[0]
    assert pf.crc32c(init[:8] + b"\0\0\0\0" + init[12:]) == crc


def test_compare_reports_differences() -> None:
    """The comparison names the differing header field, count and SB row."""
    frame = _l4_to(h.P2_IP, pf.PROTO_TCP, 80, 1)()
    changed = bytearray(frame)
    changed[22] -= 1                                       # IPv4 TTL
    theirs = Observation(frames={"vif1": [frame.hex()]}, sb=["FDB a dp_key=1 port_key=1"])
    ours = Observation(frames={"vif1": [bytes(changed).hex(), frame.hex()]}, sb=[])
    problems = h.compare(ours, theirs)
    assert any("ip4.ttl: ours=63 C=64" in p for p in problems), problems
    assert any("ours sent 2 frame(s), C 1" in p for p in problems), problems
    assert any(p == "SB row only C: FDB a dp_key=1 port_key=1" for p in problems), problems
    assert h.compare(theirs, theirs) == []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_c_answers(pair: Pair, case: Case) -> None:
    """The scenario really triggers the service under the C agent."""
    obs = pair.observe(case)["c"]
    assert obs.crashed is None, f"the C agent exited:\n{obs.crashed}"
    assert obs.answered, (f"{case.name}: the C agent did not answer: {obs.notes}\n"
                          f"frames: {obs.frames}\nsb: {obs.sb}\n"
                          + pair.agents["c"].box.log_tail())


@pytest.mark.parametrize("case", [_ours_param(c) for c in CASES])
def test_ours_matches_c(pair: Pair, case: Case) -> None:
    """Our agent sends the same frames and writes the same SB rows as C."""
    seen = pair.observe(case)
    theirs, ours = seen["c"], seen["py"]
    if not theirs.answered:
        pytest.fail(f"{case.name}: no C reference (see test_c_answers)", pytrace=False)
    problems = h.compare(ours, theirs)
    assert not problems, (f"{case.name}: ours differs from C ({ours.notes}):\n"
                          + "\n".join(problems[:60]))
    assert pair.agents["py"].box.controller_alive(), pair.agents["py"].box.log_tail()

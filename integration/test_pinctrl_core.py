"""pinctrl core path with real daemons, C agent vs ours (issue 13).

One small topology per agent (a switch with two VIFs behind a router):

* a VIF's gratuitous ARP (broadcast) and an ARP reply to the router, both
  injected with ``netdev-dummy/receive``, must make the agent write the
  MAC_Binding rows (put_arp via the pinctrl connection, SB write in the main
  loop); the rows must equal what the C agent writes (timestamp: present and
  nonzero, value free);
* an ACL with ``log`` must produce the ``acl_log`` INFO line, text identical
  to C's (the log prefix -- time, sequence, C's thread suffix -- is free);
* ``inject-pkt`` of a microflow from a VIF is accepted (empty reply) and its
  errors are C's texts; the frame it builds reaches the other VIF byte for
  byte as C's;
* a RARP on a multichassis port with ``activation-strategy=rarp`` (this
  chassis additional, a fake hv2 main) sets the Port_Binding's
  ``options:additional-chassis-activated`` to this chassis.

Both agents run the same steps in their own sandbox; the C run is recorded
first and ours compared with it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.packets import read_pcap
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
VM1_MAC, VM1_IP = "50:54:00:00:00:03", "10.0.0.3"
VM2_MAC, VM2_IP = "50:54:00:00:00:04", "10.0.0.4"
VM3_MAC, VM3_IP = "50:54:00:00:00:05", "10.0.0.5"
RTR_MAC, RTR_IP = "00:00:00:00:ff:01", "10.0.0.1"
TIMEOUT = 20.0

_RESULTS: dict[str, dict[str, object]] = {}


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def _ip(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def arp(op: int, eth_src: str, eth_dst: str, sha: str, spa: str, tha: str, tpa: str) -> str:
    frame = (_mac(eth_dst) + _mac(eth_src) + b"\x08\x06" + bytes.fromhex("000108000604")
             + op.to_bytes(2, "big") + _mac(sha) + _ip(spa) + _mac(tha) + _ip(tpa))
    return frame.hex()


def tcp_syn(eth_src: str, eth_dst: str, ip_src: str, ip_dst: str, sport: int, dport: int) -> str:
    ip = bytearray(b"\x45\x00\x00\x28\x00\x00\x40\x00\x40\x06\x00\x00" + _ip(ip_src) + _ip(ip_dst))
    s = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    tcp = (sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + bytes(8)
           + b"\x50\x02\x72\x10\x00\x00\x00\x00")
    return (_mac(eth_dst) + _mac(eth_src) + b"\x08\x00" + bytes(ip) + tcp).hex()


@pytest.fixture(scope="module", params=KINDS)
def box(request: pytest.FixtureRequest) -> Iterator[tuple[str, Sandbox]]:
    kind: str = request.param
    sb = Sandbox(northd=True)
    try:
        sb.start()
        sb.nbctl("--no-wait",
                 "ls-add", "ls1",
                 "--", "lsp-add", "ls1", "vm1",
                 "--", "lsp-set-addresses", "vm1", f"{VM1_MAC} {VM1_IP}",
                 "--", "lsp-add", "ls1", "vm2",
                 "--", "lsp-set-addresses", "vm2", f"{VM2_MAC} {VM2_IP}",
                 "--", "lr-add", "lr1",
                 "--", "lrp-add", "lr1", "lr1-ls1", RTR_MAC, f"{RTR_IP}/24",
                 "--", "lsp-add", "ls1", "ls1-lr1",
                 "--", "lsp-set-type", "ls1-lr1", "router",
                 "--", "lsp-set-addresses", "ls1-lr1", "router",
                 "--", "lsp-set-options", "ls1-lr1", "router-port=lr1-ls1")
        sb.nbctl("--no-wait", "--log", "--name=web-syn", "--severity=alert",
                 "acl-add", "ls1", "to-lport", "1001",
                 f"ip4 && tcp && tcp.dst == 8080 && ip4.dst == {VM2_IP}", "allow")
        sb.sbctl("--may-exist", "chassis-add", "hv2", "geneve", "127.0.0.2")
        sb.nbctl("--no-wait", "lsp-add", "ls1", "vm3",
                 "--", "lsp-set-addresses", "vm3", f"{VM3_MAC} {VM3_IP}",
                 "--", "lsp-set-options", "vm3", "requested-chassis=hv2,hv1",
                 "activation-strategy=rarp")
        sb.bind_vif("vif1", "vm1", ofport=1, pcap=True)
        sb.bind_vif("vif3", "vm3", ofport=3)
        sb.bind_vif("vif2", "vm2", ofport=2, pcap=True)
        sb.nbctl("--wait=sb", "sync")
        sb.start_controller(kind)
        sb.wait_hv_sync(timeout=120, min_flows=100)
        yield kind, sb
    finally:
        sb.stop()


def _mac_bindings(sb: Sandbox) -> list[dict[str, object]]:
    data = json.loads(sb.sbctl("--format=json", "--columns=logical_port,ip,mac,datapath,timestamp",
                               "list", "MAC_Binding"))
    rows = []
    for logical_port, ip, mac, datapath, timestamp in data["data"]:
        dp_name = sb.sbctl("get", "Datapath_Binding", datapath[1], "external_ids:name").strip()
        rows.append({"logical_port": logical_port, "ip": ip, "mac": mac,
                     "datapath": dp_name.strip('"'), "timestamp": timestamp})
    return sorted(rows, key=lambda r: (str(r["logical_port"]), str(r["ip"])))


def _wait_rows(sb: Sandbox, n: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + TIMEOUT
    while True:
        rows = _mac_bindings(sb)
        if len(rows) >= n or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _log_lines(sb: Sandbox, module: str) -> list[str]:
    daemon = sb.daemons["controller"]
    text = Path(daemon.log).read_text(errors="replace")
    out = []
    for line in text.splitlines():
        parts = line.split("|", 4)
        # C names the module "acl_log(ovn_pinctrl0)": the thread suffix is free.
        if len(parts) == 5 and re.sub(r"\(.*\)$", "", parts[2]) == module:
            out.append(parts[3] + "|" + parts[4])
    return out


def _record(kind: str, case: str, value: object) -> None:
    _RESULTS.setdefault(case, {})[kind] = value
    if kind != "c" and "c" in _RESULTS[case]:
        assert value == _RESULTS[case]["c"], f"{case}: ours differs from the C agent"


def test_put_arp_learns_mac_binding(box: tuple[str, Sandbox]) -> None:
    kind, sb = box
    assert _mac_bindings(sb) == []
    # A gratuitous ARP from vm1 (broadcast: commit delayed 1-50 ms).
    garp = arp(1, VM1_MAC, "ff:ff:ff:ff:ff:ff", VM1_MAC, VM1_IP, "00:00:00:00:00:00", VM1_IP)
    sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif1", garp)
    rows = _wait_rows(sb, 1)
    assert [(r["logical_port"], r["ip"], r["mac"], r["datapath"]) for r in rows] == [
        ("lr1-ls1", VM1_IP, VM1_MAC, "lr1")], sb.log_tail()
    # An ARP reply from vm2 to the router (unicast: no delay).
    reply = arp(2, VM2_MAC, RTR_MAC, VM2_MAC, VM2_IP, RTR_MAC, RTR_IP)
    sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif2", reply)
    rows = _wait_rows(sb, 2)
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 0 for r in rows)
    stamps = {r["ip"]: r["timestamp"] for r in rows}
    # Repeating the same ARP changes nothing (same MAC: the row is not rewritten).
    sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif2", reply)
    time.sleep(1.0)
    again = _mac_bindings(sb)
    assert {r["ip"]: r["timestamp"] for r in again} == stamps and len(again) == 2
    _record(kind, "mac_bindings", [{k: v for k, v in r.items() if k != "timestamp"}
                                   for r in again])
    if kind == "py":
        out = sb.appctl("controller", "coverage/read-counter", "pinctrl_total_pin_pkts")
        assert int(out.strip()) >= 2      # the repeat is not punted: the binding exists


def test_acl_log_line(box: tuple[str, Sandbox]) -> None:
    kind, sb = box
    syn = tcp_syn(VM1_MAC, VM2_MAC, VM1_IP, VM2_IP, 7777, 8080)
    sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif1", syn)
    deadline = time.monotonic() + TIMEOUT
    while not (lines := _log_lines(sb, "acl_log")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert lines, sb.log_tail()
    assert lines[0] == (
        'INFO|name="web-syn", verdict=allow, severity=alert, direction=to-lport: '
        f"tcp,vlan_tci=0x0000,dl_src={VM1_MAC},dl_dst={VM2_MAC},nw_src={VM1_IP},"
        f"nw_dst={VM2_IP},nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=7777,tp_dst=8080,"
        "tcp_flags=syn"), lines
    _record(kind, "acl_log", lines[:1])


def _appctl_result(sb: Sandbox, *args: str) -> tuple[bool, str]:
    ctl = "controller"
    try:
        return True, sb.appctl(ctl, *args).strip()
    except Exception as e:          # ovs-appctl exits non-zero on an error reply
        text = str(e)
        m = re.search(r"(ingress port not found on hypervisor\.|Syntax error[^\n]*|"
                      r"Constraints are [^\n]*)", text)
        return False, m.group(1) if m else text


def test_inject_pkt(box: tuple[str, Sandbox]) -> None:
    kind, sb = box
    flow = (f'inport == "vm1" && eth.src == {VM1_MAC} && eth.dst == {VM2_MAC} && '
            f"ip4.src == {VM1_IP} && ip4.dst == {VM2_IP} && ip.ttl == 64 && "
            "tcp && tcp.src == 7777 && tcp.dst == 8080 && tcp.flags == 2")
    results = [_appctl_result(sb, "inject-pkt", flow),
               _appctl_result(sb, "inject-pkt", 'inport == "nope" && ip4'),
               _appctl_result(sb, "inject-pkt", "ip4 && ip6")]
    assert results[0] == (True, "")
    assert results[1] == (False, "ingress port not found on hypervisor.")
    assert results[2] == (False, "Constraints are contradictory.") or not results[2][0]
    # The injected SYN went through the pipeline: the ACL logged it again.
    deadline = time.monotonic() + TIMEOUT
    while len(_log_lines(sb, "acl_log")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_log_lines(sb, "acl_log")) >= 2, sb.log_tail()
    # ... and reached vm2: the frame flow_compose() built, byte for byte as C's.
    syns = [f for f in read_pcap(sb.run / "vif2-tx.pcap")
            if len(f) >= 38 and f[12:14] == b"\x08\x00" and f[36:38] == (8080).to_bytes(2, "big")]
    assert len(syns) >= 2, syns
    _record(kind, "inject", (results, syns[-1].hex()))


def _blocking(sb: Sandbox) -> list[str]:
    """Table-0 flows of vif3 that exist only while activation is pending."""
    return [f for f in sb.dump_flows() if re.search(r"(^|[ ,])in_port=vif3[ ,]", f)
            and re.search(r"priority=10[01]0,", f) and not re.search(r"table=[1-9]", f)]


def test_rarp_activation(box: tuple[str, Sandbox]) -> None:
    kind, sb = box
    def activated() -> str:
        return sb.sbctl("--bare", "--columns=options", "find", "Port_Binding",
                        "logical_port=vm3").strip()
    deadline = time.monotonic() + TIMEOUT
    hv1 = sb.sbctl("--bare", "--columns=_uuid", "find", "Chassis", "name=hv1").strip()
    while hv1 not in sb.sbctl("--bare", "--columns=additional_chassis", "find",
                              "Port_Binding", "logical_port=vm3") and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert hv1, "no chassis hv1"
    assert "additional-chassis-activated" not in activated()
    assert len(_blocking(sb)) == 2, sb.dump_flows()
    rarp = (_mac("ff:ff:ff:ff:ff:ff") + _mac(VM3_MAC) + b"\x80\x35"
            + bytes.fromhex("0001080006040003") + _mac(VM3_MAC) + bytes(4) + _mac(VM3_MAC)
            + bytes(4)).hex()
    sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif3", rarp)
    while "additional-chassis-activated" not in activated() and time.monotonic() < deadline:
        time.sleep(0.2)
    opts = activated()
    assert "additional-chassis-activated=hv1" in opts, (opts, sb.log_tail())
    # Activated: the port's blocking flows (RARP punt, drop) go away.
    while _blocking(sb) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _blocking(sb) == [], _blocking(sb)
    _record(kind, "activation", opts)

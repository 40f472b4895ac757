"""DHCPv4, DHCPv6, DNS and RA answers of the C ovn-controller 23.03.1 and of
ours, against the continuation builders.

One sandbox per agent (real ovsdb-server, ovs-vswitchd with dummy ports,
ovn-northd, the agent) serves a switch with DHCPv4/DHCPv6 options and DNS
records and a router port with IPv6 RA configs.  Requests are injected on
the VIF with ``netdev-dummy/receive``; the answers the agent sends back are
read from the VIF's tx pcap.  Each must equal, byte for byte, what our
builder makes of the same request and the userdata of the SB lflow, after
the rewrite northd's response flow applies (addresses, ports; checksums
recomputed by the test's own reference checksum).  The C run makes the
builders answer to the oracle; the "py" run checks the whole path of our
agent (flows, packet-in, handler, NXT_RESUME) gives the same bytes.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import struct
import time
from collections.abc import Callable, Iterator

import pytest

from controller.pinctrl.dhcp import put_dhcp_opts
from controller.pinctrl.dhcp6 import put_dhcpv6_opts, put_nd_ra_opts
from controller.pinctrl.dns import DnsCache, build_dns_cache, dns_lookup
from integration.packets import read_pcap
from integration.sandbox import Sandbox
from tests.pinctrl import test_dhcp4 as t4
from tests.pinctrl import test_dhcp6 as t6
from tests.pinctrl import test_dns as td
from tests.pinctrl import test_ra as tr
from tests.pinctrl.l7_helpers import CLIENT_MAC, after_result_field, controller_userdata, inet_csum

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("ovn-controller") is None,
                                 reason="the C ovn-controller is not installed")]

SERVER_MAC = "50:54:00:00:00:fe"
VM2_MAC = "50:54:00:00:00:02"
LRP_MAC = "00:00:00:00:ff:01"


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def lla(mac_text: str) -> bytes:
    b = mac(mac_text)
    return b"\xfe\x80" + bytes(6) + bytes((b[0] ^ 2,)) + b[1:3] + b"\xff\xfe" + b[3:]


@pytest.fixture(scope="module", params=["c", "py"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox() as sb:
        sb.nbctl("ls-add", "sw0")
        sb.nbctl("lsp-add", "sw0", "vm1")
        sb.nbctl("lsp-set-addresses", "vm1", f"{CLIENT_MAC} 10.0.0.4 aef0::4")
        d4 = sb.nbctl("create", "DHCP_Options", "cidr=10.0.0.0/24",
                      'options="lease_time"="3600" "router"="10.0.0.1" '
                      f'"server_id"="10.0.0.1" "server_mac"="{SERVER_MAC}" '
                      '"dns_server"="{8.8.8.8, 1.1.1.1}" "domain_name"="\\"ovn.org\\""').strip()
        sb.nbctl("lsp-set-dhcpv4-options", "vm1", d4)
        sb.nbctl("lsp-add", "sw0", "vm2")
        sb.nbctl("lsp-set-addresses", "vm2", f"{VM2_MAC} 10.0.0.5")
        boot = sb.nbctl("create", "DHCP_Options", "cidr=10.0.0.0/24",
                        'options="lease_time"="3600" "router"="10.0.0.1" '
                        f'"server_id"="10.0.0.1" "server_mac"="{SERVER_MAC}" '
                        '"bootfile_name"="\\"pxe.efi\\"" '
                        '"bootfile_name_alt"="\\"ipxe.efi\\"" '
                        '"next_server"="10.0.0.2"').strip()
        sb.nbctl("lsp-set-dhcpv4-options", "vm2", boot)
        d6 = sb.nbctl("create", "DHCP_Options", 'cidr="aef0::/64"',
                      'options="server_id"="00:00:00:00:10:02" "dns_server"="{ae70::1}" '
                      '"domain_search"="\\"ovn.org\\""').strip()
        sb.nbctl("lsp-set-dhcpv6-options", "vm1", d6)
        dns = sb.nbctl("create", "DNS",
                       'records={"vm1.ovn.org"="10.0.0.4 aef0::4 10.0.0.5", '
                       '"4.0.0.10.in-addr.arpa"="vm1.ovn.org"}').strip()
        sb.nbctl("set", "Logical_Switch", "sw0", f"dns_records={dns}")
        sb.nbctl("lr-add", "lr0")
        sb.nbctl("lrp-add", "lr0", "lrp0", LRP_MAC, "10.0.0.1/24", "aef0::1/64")
        sb.nbctl("set", "Logical_Router_Port", "lrp0", "ipv6_ra_configs:address_mode=slaac")
        sb.nbctl("lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0", "router",
                 "--", "lsp-set-addresses", "sw0-lr0", "router",
                 "--", "lsp-set-options", "sw0-lr0", "router-port=lrp0")
        sb.start_controller(request.param)
        sb.bind_vif("vm1", "vm1", pcap=True)
        sb.bind_vif("vm2", "vm2", pcap=True)
        sb.wait_hv_sync()
        yield sb


def lflow_action(box: Sandbox, datapath: str, name: str, match_has: str) -> str:
    """The ``R = name(...);`` action of the SB lflow whose match contains ``match_has``."""
    for line in box.sbctl("lflow-list", datapath).splitlines():
        if name in line and match_has in line:
            found = re.search(r"(reg0\[\d+\] = %s\(.*?\);)" % name, line)
            assert found, line
            return found.group(1)
    raise AssertionError(f"no {name} lflow matching {match_has!r}")


def exchange(box: Sandbox, frame: bytes, want: Callable[[bytes], bool],
             timeout: float = 5.0, iface: str = "vm1") -> bytes | None:
    """Inject ``frame`` on ``iface``; the first new frame it transmits for
    which ``want`` holds (background frames are skipped), or None after ``timeout``."""
    path = box.run / f"{iface}-tx.pcap"
    seen = len(read_pcap(path))
    box.appctl("ovs-vswitchd", "netdev-dummy/receive", iface, frame.hex())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frames = read_pcap(path)
        for f in frames[seen:]:
            if want(f):
                return f
        time.sleep(0.05)
    return None


def rewrite4(frame: bytes, *, eth_dst: bytes, eth_src: bytes, ip_src: bytes,
             ip_dst: bytes | None = None, sport: int, dport: int) -> bytes:
    out = bytearray(frame)
    out[0:6], out[6:12] = eth_dst, eth_src
    out[26:30] = ip_src
    if ip_dst is not None:
        out[30:34] = ip_dst
    out[34:38] = struct.pack("!HH", sport, dport)
    out[24:26] = b"\0\0"
    out[24:26] = struct.pack("!H", inet_csum(bytes(out[14:34])))
    assert out[40:42] == b"\0\0"          # UDP checksum 0 stays 0
    return bytes(out)


def rewrite6(frame: bytes, *, eth_dst: bytes, eth_src: bytes, ip_src: bytes, ip_dst: bytes,
             ports: tuple[int, int] | None, csum_at: int) -> bytes:
    out = bytearray(frame)
    out[0:6], out[6:12] = eth_dst, eth_src
    out[22:38], out[38:54] = ip_src, ip_dst
    if ports is not None:
        out[54:58] = struct.pack("!HH", *ports)
    out[csum_at:csum_at + 2] = b"\0\0"
    plen = len(out) - 54
    csum = inet_csum(bytes(out[22:54]) + struct.pack("!IxxxB", plen, out[20]) + bytes(out[54:]))
    if out[20] == 17:
        csum = csum or 0xFFFF
    out[csum_at:csum_at + 2] = struct.pack("!H", csum)
    return bytes(out)


def is_udp(sport: int, dport: int, v6: bool = False) -> Callable[[bytes], bool]:
    ofs = 54 if v6 else 34
    return lambda f: len(f) > ofs + 4 and f[ofs:ofs + 4] == struct.pack("!HH", sport, dport)


@pytest.mark.parametrize("kind, kw", [
    ("discover", dict(msg_type=1)),
    ("discover-broadcast", dict(msg_type=1, flags=0x8000)),
    ("request", dict(msg_type=3, extra=[(50, t4.OFFER)])),
    ("request-other-ip", dict(msg_type=3, extra=[(50, ipaddress.IPv4Address("10.0.0.99").packed)])),
])
def test_dhcpv4_matches_c(box: Sandbox, kind: str, kw: dict) -> None:
    args = dict(kw)
    req = t4.request_frame(args.pop("msg_type"), **args)
    got = exchange(box, req, is_udp(67, 68))
    assert got is not None, f"C sent no DHCP answer for {kind}\n{box.log_tail()}"
    action = lflow_action(box, "sw0", "put_dhcp_opts",
                          "eth.src == %s && ip4.src == 0.0.0.0" % CLIENT_MAC)
    rest = after_result_field(controller_userdata(action))
    mine = put_dhcp_opts(req, rest[:4], rest[4:]).frame
    assert mine is not None
    assert got == rewrite4(mine, eth_dst=mac(CLIENT_MAC), eth_src=mac(SERVER_MAC),
                           ip_src=ipaddress.IPv4Address("10.0.0.1").packed, sport=67, dport=68)
    verb = "NAK" if kind == "request-other-ip" else "ACK" if kind == "request" else "OFFER"
    assert re.search(r"\|pinctrl[^|]*\|INFO\|DHCP%s %s 10\.0\.0\.4\n" % (verb, CLIENT_MAC),
                     box.log_tail(lines=400) + "\n")


def test_dhcpv4_inform_and_release(box: Sandbox) -> None:
    req = t4.request_frame(8, ciaddr="10.0.0.4")
    got = exchange(box, req, is_udp(67, 68))
    assert got is not None, f"no DHCPACK for DHCPINFORM\n{box.log_tail()}"
    action = lflow_action(box, "sw0", "put_dhcp_opts", "ip4.src == 10.0.0.4")
    rest = after_result_field(controller_userdata(action))
    mine = put_dhcp_opts(req, rest[:4], rest[4:]).frame
    assert mine is not None
    assert got == rewrite4(mine, eth_dst=mac(CLIENT_MAC), eth_src=mac(SERVER_MAC),
                           ip_src=ipaddress.IPv4Address("10.0.0.1").packed, sport=67, dport=68)
    assert exchange(box, t4.request_frame(7, ciaddr="10.0.0.4"), is_udp(67, 68),
                    timeout=1.5) is None


@pytest.mark.parametrize("ipxe", [False, True])
def test_dhcpv4_bootfile_rules(box: Sandbox, ipxe: bool) -> None:
    extra = [(175, b"\x01\x01\x01")] if ipxe else []
    req = t4.request_frame(1, mac=VM2_MAC, extra=extra)
    got = exchange(box, req, is_udp(67, 68), iface="vm2")
    assert got is not None, f"no DHCPOFFER\n{box.log_tail()}"
    action = lflow_action(box, "sw0", "put_dhcp_opts", "eth.src == %s && ip4.src == 0.0.0.0"
                          % VM2_MAC)
    rest = after_result_field(controller_userdata(action))
    mine = put_dhcp_opts(req, rest[:4], rest[4:]).frame
    assert mine is not None
    siaddr = mine[14 + 28 + 20:14 + 28 + 24]
    # iPXE: the in-place rewrite hides option 253 from C's scan (siaddr 0).
    assert siaddr == (bytes(4) if ipxe else ipaddress.IPv4Address("10.0.0.2").packed)
    assert got == rewrite4(mine, eth_dst=mac(VM2_MAC), eth_src=mac(SERVER_MAC),
                           ip_src=ipaddress.IPv4Address("10.0.0.1").packed, sport=67, dport=68)


@pytest.mark.parametrize("msg_type", [1, 3, 11])
def test_dhcpv6_matches_c(box: Sandbox, msg_type: int) -> None:
    opts = (t6.CLIENT_ID,) if msg_type == 11 else (t6.CLIENT_ID, t6.IA_NA_REQ)
    req = t6.request(msg_type, *opts)
    got = exchange(box, req, is_udp(547, 546, v6=True))
    assert got is not None, f"C sent no DHCPv6 answer\n{box.log_tail()}"
    action = lflow_action(box, "sw0", "put_dhcpv6_opts", "udp.dst == 547")
    mine = put_dhcpv6_opts(req, after_result_field(controller_userdata(action))).frame
    assert mine is not None
    server_mac = "00:00:00:00:10:02"
    assert got == rewrite6(mine, eth_dst=mac(CLIENT_MAC), eth_src=mac(server_mac),
                           ip_src=lla(server_mac), ip_dst=req[22:38], ports=(547, 546),
                           csum_at=60)


def test_dhcpv6_renew_gets_nothing_from_c(box: Sandbox) -> None:
    assert exchange(box, t6.request(5, t6.CLIENT_ID, t6.IA_NA_REQ),
                    is_udp(547, 546, v6=True), timeout=1.5) is None


def _dns_cache(box: Sandbox) -> tuple[DnsCache, int]:
    """The cache our builder gets from the SB DNS rows northd wrote, and the
    switch's tunnel key."""
    table = json.loads(box.sbctl("--format=json", "list", "DNS"))
    heads = table["headings"]
    rows = []
    for values in table["data"]:
        row = dict(zip(heads, values))
        dps = row["datapaths"]
        uuids = [u[1] for u in (dps[1] if dps[0] == "set" else [dps])]
        keys = [int(box.sbctl("get", "Datapath_Binding", u, "tunnel_key")) for u in uuids]
        rows.append((dict(row["external_ids"][1]), dict(row["records"][1]), keys))
    return build_dns_cache(rows), keys[0]


@pytest.mark.parametrize("name, qtype, v6", [
    ("vm1.ovn.org", 1, False), ("vm1.ovn.org", 28, True), ("VM1.ovn.org", 255, False),
    ("4.0.0.10.in-addr.arpa", 12, False),
])
def test_dns_matches_c(box: Sandbox, name: str, qtype: int, v6: bool) -> None:
    msg = td.query(name, qtype)
    req = td.q6(msg) if v6 else td.q4(msg)
    got = exchange(box, req, is_udp(53, 33333, v6=v6))
    assert got is not None, f"C sent no DNS answer\n{box.log_tail()}"
    cache, dp = _dns_cache(box)
    mine = dns_lookup(req, dp, cache).frame
    assert mine is not None
    if v6:
        want = rewrite6(mine, eth_dst=mine[6:12], eth_src=mine[0:6], ip_src=mine[38:54],
                        ip_dst=mine[22:38], ports=(53, 33333), csum_at=60)
    else:
        want = rewrite4(mine, eth_dst=mine[6:12], eth_src=mine[0:6], ip_src=mine[30:34],
                        ip_dst=mine[26:30], sport=53, dport=33333)
    assert got == want


def test_dns_with_edns_is_not_answered_by_c(box: Sandbox) -> None:
    msg = td.query("vm1.ovn.org", 1, ar=1, extra=b"\0\0\x29\x10\0\0\0\0\0\0\0")
    assert exchange(box, td.q4(msg), is_udp(53, 33333), timeout=1.5) is None


def test_router_advertisement_matches_c(box: Sandbox) -> None:
    rs = tr.rs_frame()
    got = exchange(box, rs, lambda f: len(f) > 54 and f[12:14] == b"\x86\xdd"
                   and f[20] == 58 and f[54] == 134)
    assert got is not None, f"C sent no RA\n{box.log_tail()}"
    action = lflow_action(box, "lr0", "put_nd_ra_opts", "nd_rs")
    mine = put_nd_ra_opts(rs, after_result_field(controller_userdata(action))).frame
    assert mine is not None
    assert got == rewrite6(mine, eth_dst=mac(CLIENT_MAC), eth_src=mac(LRP_MAC),
                           ip_src=lla(LRP_MAC), ip_dst=rs[22:38], ports=None, csum_at=56)

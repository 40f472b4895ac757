"""IGMP / MLD frames for the multicast tests, built independently of the agent
(checksums by :func:`integration.pinctrl_frames.inet_checksum`)."""

from __future__ import annotations

import struct

from integration.pinctrl_frames import (
    ethernet, icmp6, inet_checksum, ip4_bytes, ip6_bytes, ipv4, ipv6)

__all__ = ["igmp_v2_frame", "igmp_v3_report_frame", "mld_v1_frame", "mld_v2_report_frame",
           "igmp_mac", "mld_mac", "IGMP_QUERY", "IGMPV1_REPORT", "IGMPV2_REPORT", "IGMP_LEAVE",
           "IGMPV3_REPORT", "MLD_QUERY", "MLD_REPORT", "MLD_DONE", "MLD2_REPORT"]

IGMP_QUERY, IGMPV1_REPORT, IGMPV2_REPORT, IGMP_LEAVE, IGMPV3_REPORT = 0x11, 0x12, 0x16, 0x17, 0x22
MLD_QUERY, MLD_REPORT, MLD_DONE, MLD2_REPORT = 130, 131, 132, 143
ETH_IP4, ETH_IP6, PROTO_IGMP = 0x0800, 0x86DD, 2


def igmp_mac(group: str) -> str:
    b = ip4_bytes(group)
    return "01:00:5e:%02x:%02x:%02x" % (b[1] & 0x7F, b[2], b[3])


def mld_mac(group: str) -> str:
    b = ip6_bytes(group)
    return "33:33:" + ":".join("%02x" % x for x in b[12:])


def _igmp(body: bytearray) -> bytes:
    struct.pack_into("!H", body, 2, 0)
    struct.pack_into("!H", body, 2, inet_checksum(bytes(body)))
    return bytes(body)


def igmp_v2_frame(src_mac: str, src_ip: str, igmp_type: int, group: str,
                  dst_ip: str | None = None, max_resp: int = 0) -> bytes:
    """IGMPv1/v2 report, leave or v2 query (8-byte message)."""
    if dst_ip is None:
        dst_ip = "224.0.0.2" if igmp_type == IGMP_LEAVE else \
            "224.0.0.1" if igmp_type == IGMP_QUERY else group
    body = _igmp(bytearray(struct.pack("!BBH4s", igmp_type, max_resp, 0, ip4_bytes(group))))
    dst_mac = igmp_mac(dst_ip)
    return ethernet(dst_mac, src_mac, ETH_IP4, ipv4(src_ip, dst_ip, PROTO_IGMP, body, ttl=1))


def _ipv4_router_alert(src: str, dst: str, payload: bytes) -> bytes:
    """IPv4 header with the Router Alert option (IHL 6), TTL 1, as hosts send
    IGMP, then ``payload``."""
    header = bytearray(struct.pack("!BBHHHBBH4s4s4s", 0x46, 0xC0, 24 + len(payload), 0, 0x4000,
                                   1, PROTO_IGMP, 0, ip4_bytes(src), ip4_bytes(dst),
                                   bytes((0x94, 4, 0, 0))))
    struct.pack_into("!H", header, 10, inet_checksum(bytes(header)))
    return bytes(header) + payload


def igmp_v3_report_frame(src_mac: str, src_ip: str,
                         records: list[tuple[int, str, list[str]]],
                         router_alert: bool = False) -> bytes:
    """IGMPv3 report to 224.0.0.22: records of (type, group, sources);
    ``router_alert`` adds the IPv4 Router Alert option Linux hosts send."""
    recs = b"".join(struct.pack("!BBH4s", t, 0, len(srcs), ip4_bytes(g))
                    + b"".join(ip4_bytes(s) for s in srcs) for t, g, srcs in records)
    body = _igmp(bytearray(struct.pack("!BBHHH", IGMPV3_REPORT, 0, 0, 0, len(records)) + recs))
    ip = _ipv4_router_alert(src_ip, "224.0.0.22", body) if router_alert \
        else ipv4(src_ip, "224.0.0.22", PROTO_IGMP, body, ttl=1)
    return ethernet(igmp_mac("224.0.0.22"), src_mac, ETH_IP4, ip)


def _hbh(payload: bytes) -> bytes:
    """Hop-by-hop header with a router alert (MLD), then ``payload`` (ICMPv6)."""
    return bytes((58, 0, 5, 2, 0, 0, 1, 0)) + payload


def mld_v1_frame(src_mac: str, src_ip6: str, mld_type: int, group: str,
                 dst_ip6: str | None = None) -> bytes:
    """MLDv1 report, done or query."""
    if dst_ip6 is None:
        dst_ip6 = "ff02::2" if mld_type == MLD_DONE else \
            "ff02::1" if mld_type == MLD_QUERY else group
    msg = icmp6(src_ip6, dst_ip6, mld_type, 0, struct.pack("!HH", 0, 0) + ip6_bytes(group))
    return ethernet(mld_mac(dst_ip6), src_mac, ETH_IP6,
                    ipv6(src_ip6, dst_ip6, 0, _hbh(msg), hop_limit=1))


def mld_v2_report_frame(src_mac: str, src_ip6: str,
                        records: list[tuple[int, str, list[str]]]) -> bytes:
    recs = b"".join(struct.pack("!BBH16s", t, 0, len(srcs), ip6_bytes(g))
                    + b"".join(ip6_bytes(s) for s in srcs) for t, g, srcs in records)
    msg = icmp6(src_ip6, "ff02::16", MLD2_REPORT, 0, struct.pack("!HH", 0, len(records)) + recs)
    return ethernet(mld_mac("ff02::16"), src_mac, ETH_IP6,
                    ipv6(src_ip6, "ff02::16", 0, _hbh(msg), hop_limit=1))

"""GARP/RARP frames, packet-outs and the announcement schedule (GarpAnnouncer)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from controller.pinctrl.garp import (GarpAnnouncer, GarpEntry, GarpInputs, LocalMacBinding,
                                     PeerPort, garp_frame, rarp_frame)
from controller.pinctrl.openflow import po_inject


def packet_out_inject(frame: bytes, dp_key: int, port_key: int) -> bytes:
    return po_inject(frame, dp_key, port_key, 8)

MAC = "0a:00:00:00:00:01"
HAVE_OFCTL = shutil.which("ovs-ofctl") is not None


# ------------------------------------------------------------------ frames
def test_garp_frame_bytes() -> None:
    f = garp_frame(MAC, "172.16.0.100")
    assert f == bytes.fromhex(
        "ffffffffffff" "0a0000000001" "0806"          # eth: broadcast, src, ARP
        "0001" "0800" "06" "04" "0001"                 # htype, ptype, hlen, plen, request
        "0a0000000001" "ac100064"                      # sha, spa
        "000000000000" "ac100064")                     # tha = 0, tpa = spa
    assert len(f) == 42                                # no padding (as compose_arp)


def test_rarp_frame_bytes() -> None:
    assert rarp_frame(MAC) == bytes.fromhex(
        "ffffffffffff" "0a0000000001" "8035"
        "0001" "0800" "06" "04" "0003"                 # reverse request
        "0a0000000001" "00000000"
        "0a0000000001" "00000000")


def _po_parts(po: bytes) -> tuple[bytes, bytes]:
    """(actions, frame) of an OF1.5 packet-out with an in_port-only match."""
    assert po[0] == 6 and po[1] == 13 and int.from_bytes(po[2:4], "big") == len(po)
    assert po[8:12] == b"\xff\xff\xff\xff"             # no buffer
    alen = int.from_bytes(po[12:14], "big")
    match = po[16:32]
    assert match == bytes.fromhex("0001000c80000004fffffffd00000000")   # in_port=CONTROLLER
    return po[32:32 + alen], po[32 + alen:]


def test_packet_out_inject_layout() -> None:
    frame = garp_frame(MAC, "10.0.0.1")
    acts, data = _po_parts(packet_out_inject(frame, 5, 3))
    assert data == frame
    assert acts == bytes.fromhex(
        "0019001080000408" "0000000000000005"          # set_field:5->metadata
        "001900100001" "1c04" "0000000300000000"       # set_field:3->reg14 (NXM_NX_REG14)
        "ffff001000002320" "000e" "fffd" "08000000")   # resubmit(CONTROLLER,8)


@pytest.mark.skipif(not HAVE_OFCTL, reason="ovs-ofctl not installed")
def test_packet_out_inject_as_ovs_prints_it() -> None:
    po = packet_out_inject(rarp_frame(MAC), 0x10, 0x2A)
    out = subprocess.run(["ovs-ofctl", "ofp-print", po.hex()], capture_output=True, text=True,
                         check=True).stdout
    assert "OFPT_PACKET_OUT (OF1.5)" in out
    assert ("in_port=CONTROLLER actions=set_field:0x10->metadata,set_field:0x2a->reg14,"
            "resubmit(CONTROLLER,8) data_len=42") in out
    assert "rarp," in out and f"dl_src={MAC}" in out and "arp_op=3" in out


# ------------------------------------------------------------------ schedule
def _entry(key: str = "lsp-172.16.0.100", ip: str | None = "172.16.0.100", mac: str = MAC,
           dp: int = 1, port: int = 6, peers: tuple[PeerPort, ...] = ()) -> GarpEntry:
    return GarpEntry(key, mac, ip, dp, port, peers)


def _sent_times(a: GarpAnnouncer, start: int, end: int, step: int = 100) -> list[int]:
    times = []
    for t in range(start, end, step):
        if a.run(t):
            times.append(t)
    return times


def test_five_sends_at_1_3_7_15_31_seconds() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(),)), 0, True)
    assert a.next_wake_ms() == 1000
    assert a.run(999) == []
    assert _sent_times(a, 0, 120_000) == [1000, 3000, 7000, 15000, 31000]
    assert a.next_wake_ms() is None and a.keys() == ["lsp-172.16.0.100"]


def test_delays_count_from_the_actual_send() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(),)), 10, True)
    assert a.run(1500) != []                  # 490 ms late
    assert a.next_wake_ms() == 3500
    assert _sent_times(a, 1600, 60_000, 50) == [3500, 7500, 15500, 31500]


def test_run_returns_the_packet_out_of_each_due_key() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(), _entry("vif", None, "0a:00:00:00:00:02", 2, 9))), 0, True)
    out = a.run(1000)
    assert sorted(out) == sorted([packet_out_inject(garp_frame(MAC, "172.16.0.100"), 1, 6),
                                  packet_out_inject(rarp_frame("0a:00:00:00:00:02"), 2, 9)])


def test_zero_address_is_announced_by_rarp() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry("lsp-0.0.0.0", "0.0.0.0"),)), 0, True)
    assert a.run(1000) == [packet_out_inject(rarp_frame(MAC), 1, 6)]


def test_existing_key_keeps_its_schedule_and_frame_but_takes_new_ports() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(),)), 0, True)
    a.run(1000)
    # Same key, new MAC and new datapath/port keys: C refreshes only the keys.
    assert a.update(GarpInputs((_entry(mac="0a:00:00:00:00:99", dp=7, port=8),)), 1500, True) \
        == []
    assert a.next_wake_ms() == 3000
    assert a.run(3000) == [packet_out_inject(garp_frame(MAC, "172.16.0.100"), 7, 8)]


def test_removed_key_is_dropped_and_a_returning_key_starts_again() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(),)), 0, True)
    a.run(1000)
    a.update(GarpInputs(()), 2000, True)
    assert a.keys() == [] and a.next_wake_ms() is None and a.run(3000) == []
    a.update(GarpInputs((_entry(),)), 5000, True)
    assert a.next_wake_ms() == 6000
    assert _sent_times(a, 5000, 60_000) == [6000, 8000, 12000, 20000, 36000]


def test_new_ip_under_a_new_key_is_announced() -> None:
    a = GarpAnnouncer()
    a.update(GarpInputs((_entry(),)), 0, True)
    _sent_times(a, 0, 40_000)
    a.update(GarpInputs((_entry("lsp-172.16.0.101", "172.16.0.101"),)), 50_000, True)
    assert a.keys() == ["lsp-172.16.0.101"]
    assert a.run(51_000) == [packet_out_inject(garp_frame(MAC, "172.16.0.101"), 1, 6)]


def test_local_mac_bindings_only_for_new_keys_with_a_writable_sb() -> None:
    peers = (PeerPort(2, 1, False), PeerPort(3, 1, True))
    a = GarpAnnouncer()
    e = _entry(peers=peers)
    assert a.update(GarpInputs((e,)), 0, True) == [
        LocalMacBinding(2, 1, "172.16.0.100", MAC, False),
        LocalMacBinding(3, 1, "172.16.0.100", MAC, True)]
    other = _entry(port=7, peers=peers)          # same key again: nothing learnt
    assert a.update(GarpInputs((other,)), 100, True) == []
    b = GarpAnnouncer()
    assert b.update(GarpInputs((e,)), 0, False) == []     # no SB txn: C skips it for good
    assert b.update(GarpInputs((other,)), 100, True) == []
    c = GarpAnnouncer()
    assert c.update(GarpInputs((_entry("x-noip", None, peers=peers),)), 0, True) == []


def test_notify_on_added_or_removed_keys_only() -> None:
    calls: list[int] = []
    a = GarpAnnouncer(notify=lambda: calls.append(1))
    inputs = GarpInputs((_entry(),))
    a.update(inputs, 0, True)
    a.update(inputs, 10, True)
    a.update(GarpInputs((_entry(port=9),)), 20, True)
    assert len(calls) == 1
    a.update(GarpInputs(()), 30, True)
    assert len(calls) == 2


def test_local_mac_bindings_one_per_port_and_ip_last_mac_wins() -> None:
    peer = (PeerPort(2, 1, False),)
    a = GarpAnnouncer()
    got = a.update(GarpInputs((_entry("vm", "172.16.0.9", "0a:00:00:00:00:01", peers=peer),
                               _entry("lsp-172.16.0.9", "172.16.0.9", "0a:00:00:00:00:02",
                                      peers=peer))), 0, True)
    assert got == [LocalMacBinding(2, 1, "172.16.0.9", "0a:00:00:00:00:02", False)]

"""Main-loop side: pending work caps/delays, SB writes, buffered packets, snapshots."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from controller.diag.coverage import Coverage
from controller.ovsdb.tracking import ChangeTracker
from controller.pinctrl.buffered import BufferedPackets, buffer_intent
from controller.pinctrl.outcome import (
    ActivationIntent,
    BufferIntent,
    EventIntent,
    FdbIntent,
    MacBindingIntent,
    VportIntent,
)
from controller.pinctrl.packet_in import decode_packet_in2, encode_packet_in2
from controller.pinctrl.sb_writes import (
    MAX_WRITES_PER_TXN,
    PendingWork,
    SbWriter,
    SnapshotPublisher,
)
from ofctrl import messages as m
from ofctrl.match import Match
from ofctrl.ofpacts import decode_actions, format_actions


class Row:
    def __init__(self, **cols: Any) -> None:
        self.uuid = uuid.uuid4()
        self.__dict__.update(cols)

    def setkey(self, column: str, key: str, value: str) -> None:
        getattr(self, column)[key] = value


class Txn:
    def __init__(self) -> None:
        self.inserted: list[tuple[str, Row]] = []

    def insert(self, table: Any) -> Row:
        r = Row()       # like the IDL: unset columns of a new row cannot be read
        self.inserted.append((table, r))
        return r


class Clock:
    def __init__(self) -> None:
        self.t = 1000

    def __call__(self) -> int:
        return self.t


def topo() -> SimpleNamespace:
    dp = Row(tunnel_key=3)
    ports = {
        "lrp": Row(logical_port="lrp", type="patch", tunnel_key=1, datapath=dp, options={},
                   chassis=[], virtual_parent=[], mac=["00:00:00:00:ff:01 10.0.0.1/24"]),
        "vm": Row(logical_port="vm", type="", tunnel_key=2, datapath=dp, options={},
                  chassis=[], virtual_parent=[], mac=["50:54:00:00:00:03 10.0.0.3"]),
        "vip": Row(logical_port="vip", type="virtual", tunnel_key=9, datapath=dp, options={},
                   chassis=[], virtual_parent=[], mac=[]),
    }
    by_key = {(dp.uuid, p.tunnel_key): p for p in ports.values()}
    idx = SimpleNamespace(dp_by_key={3: dp}, pb_by_key=by_key, pb_by_name=ports,
                          pbs_on_datapath=lambda u: [p for p in ports.values()
                                                     if p.datapath.uuid == u])
    chassis = Row(name="hv1")
    return SimpleNamespace(dp=dp, ports=ports, idx=idx, chassis=chassis)


def apply(w: SbWriter, work: PendingWork, t: SimpleNamespace, txn: Txn, events: list = []) -> int:
    tables = {"MAC_Binding": "MAC_Binding", "FDB": "FDB", "Controller_Event": "Controller_Event"}
    return w.apply(work.take(True), txn, tables, t.idx, t.chassis, True, work.done_activation,
                   events)


def test_mac_binding_delay_cap_and_last_writer_wins() -> None:
    cov, clock = Coverage(), Clock()
    work = PendingWork(cov, clock)
    assert work.add(MacBindingIntent(3, 2, "10.0.0.3", "50:54:00:00:00:03", 20))
    assert work.add(MacBindingIntent(3, 2, "10.0.0.3", "50:54:00:00:00:04", 0))  # same key
    assert work.next_commit_ms() == 1020          # the first learn's commit time stays
    assert not work.take(True).mac_bindings
    clock.t = 1020
    assert work.take(True).mac_bindings == [(3, 2, "10.0.0.3", "50:54:00:00:00:04")]
    for i in range(1000):
        assert work.add(MacBindingIntent(3, 2, "10.1.%d.%d" % (i // 256, i % 256), "x", 0))
    assert not work.add(MacBindingIntent(3, 2, "10.9.9.9", "x", 0))
    assert cov.read("pinctrl_drop_put_mac_binding") == 1
    assert not work.take(False)                   # nothing taken without a transaction
    k = 1000 // MAX_WRITES_PER_TXN
    sizes = [len(work.take(True).mac_bindings) for _ in range(k + 1)]
    assert sizes == [MAX_WRITES_PER_TXN] * k + [0]   # a bounded number of rows per txn


def test_learn_and_garp_upsert_of_one_key_insert_once_per_txn() -> None:
    """A put_arp learn and a GARP local upsert of the same (logical_port, ip)
    in one transaction share the inserted row (two inserts would fail it)."""
    t, w = topo(), SbWriter()
    work = PendingWork(Coverage(), Clock())
    w.track({"MAC_Binding": {}, "FDB": {}}, ChangeTracker(()))
    work.add(MacBindingIntent(3, 1, "10.0.0.3", "50:54:00:00:00:03", 0))
    txn = Txn()
    apply(w, work, t, txn)
    local = [SimpleNamespace(dp_key=3, port_key=1, ip="10.0.0.3", mac="50:54:00:00:00:07",
                             update_only=False)]
    tables = {"MAC_Binding": "MAC_Binding"}
    assert w.apply_local(local, txn, tables, t.idx, True) == 1
    assert [k for k, _ in txn.inserted] == ["MAC_Binding"]
    assert txn.inserted[0][1].mac == "50:54:00:00:00:07"       # last writer wins
    txn2 = Txn()                                                # a new transaction
    assert w.apply_local(local, txn2, tables, t.idx, True) == 1
    assert [k for k, _ in txn2.inserted] == ["MAC_Binding"]


def test_caps_of_vports_events_fdbs() -> None:
    cov = Coverage()
    work = PendingWork(cov, Clock())
    for i in range(1001):
        work.add(VportIntent(1, i, 1))
        work.add(FdbIntent(1, 1, "00:00:00:00:%02x:%02x" % (i // 256, i % 256)))
        work.add(EventIntent("empty_lb_backends", (("vip", str(i)), ("protocol", "tcp"),
                                                   ("load_balancer", "x"))))
    assert cov.read("pinctrl_drop_put_vport_binding") == 1
    assert cov.read("pinctrl_drop_controller_event") == 1
    b = work.take(True)
    assert len(b.vports) == len(b.events) == 1000 and len(b.fdbs) == MAX_WRITES_PER_TXN
    assert work.has_immediate()


def test_event_expiry_without_txn() -> None:
    clock = Clock()
    work = PendingWork(Coverage(), clock)
    work.add(EventIntent("empty_lb_backends", (("vip", "a"),)))
    clock.t += 10_001
    work.take(False)
    assert not work.take(True).events


def test_sb_writes_are_idempotent() -> None:
    t, w = topo(), SbWriter()
    work = PendingWork(Coverage(), Clock())
    w.track({"MAC_Binding": {}, "FDB": {}}, ChangeTracker(()))
    work.add(MacBindingIntent(3, 1, "10.0.0.3", "50:54:00:00:00:03", 0))
    work.add(MacBindingIntent(3, 7, "10.0.0.9", "50:54:00:00:00:09", 0))   # unknown port
    work.add(FdbIntent(3, 2, "50:54:00:00:00:03"))
    work.add(VportIntent(3, 9, 2))
    work.add(VportIntent(3, 2, 1))                                          # not virtual
    info = (("vip", "10.0.0.10:80"), ("protocol", "tcp"), ("load_balancer", "lb1"))
    work.add(EventIntent("empty_lb_backends", info))
    work.add(ActivationIntent(3, 2))
    txn = Txn()
    apply(w, work, t, txn)
    kinds = [k for k, _ in txn.inserted]
    assert kinds == ["MAC_Binding", "Controller_Event", "FDB"]
    mb = txn.inserted[0][1]
    assert (mb.logical_port, mb.ip, mb.mac, mb.datapath) == ("lrp", "10.0.0.3",
                                                             "50:54:00:00:00:03", t.dp)
    ts = mb.timestamp
    ev = txn.inserted[1][1]
    assert ev.event_info == dict(info) and ev.seq_num == 1 and ev.chassis == [t.chassis]
    fdb = txn.inserted[2][1]
    assert (fdb.dp_key, fdb.mac, fdb.port_key) == (3, "50:54:00:00:00:03", 2)
    vip = t.ports["vip"]
    assert vip.chassis == [t.chassis] and vip.virtual_parent == ["vm"]
    assert t.ports["vm"].chassis == []
    assert t.ports["vm"].options == {"additional-chassis-activated": "hv1"}
    # The rows now exist in the SB: the same work again writes nothing new.
    sb = {"MAC_Binding": {mb.uuid: mb}, "FDB": {fdb.uuid: fdb}}
    w2 = SbWriter()
    w2.track(sb, ChangeTracker(()))
    work.add(MacBindingIntent(3, 1, "10.0.0.3", "50:54:00:00:00:03", 0))
    work.add(FdbIntent(3, 2, "50:54:00:00:00:03"))
    work.add(EventIntent("empty_lb_backends", info))
    work.add(ActivationIntent(3, 2))
    txn2 = Txn()
    apply(w2, work, t, txn2, [ev])
    assert txn2.inserted == [] and mb.timestamp == ts
    assert t.ports["vm"].options == {"additional-chassis-activated": "hv1"}
    assert not work.take(True).activations        # done once this chassis is listed
    # A new MAC rewrites mac and timestamp of the existing row.
    work.add(MacBindingIntent(3, 1, "10.0.0.3", "50:54:00:00:00:05", 0))
    apply(w2, work, t, Txn())
    assert mb.mac == "50:54:00:00:00:05"


def _po(msg: bytes) -> tuple[Match, str, bytes]:
    import struct
    _, alen = struct.unpack_from("!IH", msg, 8)
    match, ofs = Match.decode_prefix(msg, 16)
    return match, format_actions(decode_actions(msg[ofs:ofs + alen])), msg[ofs + alen:]


def test_buffered_packets_keep_three_newest_and_release() -> None:
    cov, clock = Coverage(), Clock()
    bp = BufferedPackets(cov, clock)
    t = topo()
    frame = bytes(12) + b"\x08\x00" + b"payload"
    md = [("metadata", 3, None), ("reg15", 1, None), ("reg0", 0x0A000003, None),
          ("pkt_mark", 5, None)]
    pin = decode_packet_in2(encode_packet_in2(frame, b"\0" * 8, md))
    for i in range(5):
        bi = buffer_intent(pin, is_arp=True)
        assert bp.add(BufferIntent(bi.dp_key, bi.port_key, bi.ip, frame + bytes([i]), bi.reload,
                                   bi.pkt_mark))
    mb = Row(logical_port="lrp", ip="10.0.0.3", mac="50:54:00:00:00:03")
    msgs = bp.release([mb], t.idx.pb_by_name.get)
    assert len(msgs) == 3 and len(bp) == 0
    match, acts, data = _po(msgs[0])
    assert msgs[0][1] == m.OFPT_PACKET_OUT and match.to_string() == "in_port=CONTROLLER"
    assert acts == ("set_field:0xa000003->reg0,set_field:0x1->reg15,set_field:0x3->metadata,"
                    "set_field:0x5->pkt_mark,resubmit(CONTROLLER,37)")
    assert data[:6] == bytes.fromhex("505400000003") and data[-1] == 2   # the 3 newest


def test_buffered_cap_expiry_and_redirect_port() -> None:
    cov, clock = Coverage(), Clock()
    bp = BufferedPackets(cov, clock)
    for i in range(1001):
        bp.add(BufferIntent(1, 1, i + 1, b"f" * 14, b""))
    assert len(bp) == 1000 and cov.read("pinctrl_drop_buffered_packets_map") == 1
    clock.t += 10_001
    assert bp.release([], lambda n: None) == [] and len(bp) == 0
    # A distributed gateway port: the binding is on "lrp", the packets wait on cr-lrp.
    t = topo()
    cr = Row(logical_port="cr-lrp", type="chassisredirect", tunnel_key=4, datapath=t.dp,
             options={})
    t.ports["lrp"].options = {"chassis-redirect-port": "cr-lrp"}
    t.ports["cr-lrp"] = cr
    bp.add(BufferIntent(3, 4, 0x0A000003, b"f" * 14, b""))     # 32-bit IPv4 accepted
    msgs = bp.release([Row(logical_port="lrp", ip="10.0.0.3", mac="50:54:00:00:00:03")],
                      t.ports.get)
    assert len(msgs) == 1


def test_snapshot_publisher() -> None:
    t = topo()
    got: list[Any] = []
    pub = SnapshotPublisher(got.append)
    ld = {t.dp.uuid: SimpleNamespace(key=3)}
    tr = ChangeTracker(("Port_Binding",))
    assert pub.run("hv1", ld, t.idx.pbs_on_datapath, tr)
    view = got[-1]
    assert view.port_by_key(3, 2).name == "vm" and view.port_by_name("lrp").port_key == 1
    assert not pub.run("hv1", ld, t.idx.pbs_on_datapath, tr)   # nothing changed
    t.ports["vm"].mac = ["50:54:00:00:00:33 10.0.0.3"]
    tr.record("Port_Binding", "update", t.ports["vm"], {"mac": None})
    assert pub.run("hv1", ld, t.idx.pbs_on_datapath, tr)
    assert got[-1].port_by_key(3, 2).mac == ("50:54:00:00:00:33 10.0.0.3",)
    assert got[-1].version == 2 and view.port_by_key(3, 2).mac[0].startswith("50:54:00:00:00:03")


def test_snapshot_follows_local_datapaths_one_by_one() -> None:
    t = topo()
    dp2 = Row(tunnel_key=7)
    other = Row(logical_port="o1", type="", tunnel_key=1, datapath=dp2, options={},
                chassis=[], virtual_parent=[], mac=[])
    ports = dict(t.ports, o1=other)
    walked: list[Any] = []

    def pbs(u: Any) -> list[Any]:
        walked.append(u)
        return [p for p in ports.values() if p.datapath.uuid == u]

    got: list[Any] = []
    pub = SnapshotPublisher(got.append)
    tr = ChangeTracker(("Port_Binding",))
    one = {t.dp.uuid: SimpleNamespace(key=3)}
    both = {**one, dp2.uuid: SimpleNamespace(key=7)}
    pub.run("hv1", one, pbs, tr)
    assert pub.run("hv1", both, pbs, tr)
    assert walked == [t.dp.uuid, dp2.uuid]          # only the new datapath is walked
    assert got[-1].port_by_key(7, 1).name == "o1" and got[-1].port_by_key(3, 2) is not None
    assert pub.run("hv1", {dp2.uuid: SimpleNamespace(key=7)}, pbs, tr)
    assert got[-1].port_by_key(3, 2) is None and got[-1].port_by_key(7, 1) is not None
    assert got[-1].local_datapaths == frozenset({7})

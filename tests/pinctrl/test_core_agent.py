"""The daemon-facing facade: wake-ups without busy loops, never raising."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controller.diag.coverage import Coverage
from controller.ovsdb.tracking import ChangeTracker
from controller.pinctrl.agent import Pinctrl
from controller.pinctrl.outcome import ActivationIntent, MacBindingIntent


class FakeService:
    def __init__(self) -> None:
        self.view: Any = None
        self.sent: list[bytes] = []
        self.conn = None
        self.targets: list[str] = []
        self.periodic: list[Any] = []

    def set_target(self, t: str) -> None:
        self.targets.append(t)

    def start(self) -> None: ...
    def run(self) -> None: ...
    def main_run(self) -> bool: return False
    def main_wait(self, poller: Any) -> None: poller.calls.append("fd")
    def wait(self, poller: Any) -> None: ...
    def notify_main(self) -> None: ...
    def publish(self, view: Any) -> None: self.view = view
    def wake(self) -> None: ...
    def add_periodic(self, s: Any) -> None: self.periodic.append(s)
    def send(self, msgs: list[bytes]) -> None: self.sent += msgs
    def close(self) -> None: ...


class Poller:
    def __init__(self) -> None:
        self.calls: list[object] = []

    def timer_wait_until(self, t: float) -> None:
        self.calls.append(("timer", t))

    def immediate_wake(self) -> None:
        self.calls.append("now")


def fake_sb(txn: Any, tables: dict[str, dict] | None = None) -> Any:
    tables = tables or {"MAC_Binding": {}, "FDB": {}, "Controller_Event": {}}
    return SimpleNamespace(
        tracker=ChangeTracker(("MAC_Binding", "FDB", "Port_Binding")), txn=txn,
        table=lambda n: tables[n], has_table=lambda n: n in tables,
        idl=SimpleNamespace(tables={"MAC_Binding": SimpleNamespace(columns={"timestamp": 1})}))


def idx() -> Any:
    return SimpleNamespace(dp_by_key={}, pb_by_key={}, pb_by_name={},
                           pbs_on_datapath=lambda u: [])


def test_no_busy_wake_without_transaction() -> None:
    svc = FakeService()
    p = Pinctrl(Coverage(), threaded=False, service=svc)
    assert svc.periodic == []              # the periodic services are built on first use
    assert p.garp in svc.periodic and p.ra in svc.periodic and p.svc_monitors in svc.periodic
    p.work.add(ActivationIntent(1, 2))
    p.work.add(MacBindingIntent(1, 2, "10.0.0.1", "00:00:00:00:00:01", 0))
    chassis = SimpleNamespace(uuid=1, name="hv1")
    p.run("unix:x", fake_sb(txn=None), idx(), chassis, {})
    poller = Poller()
    p.wait(poller)
    assert poller.calls == ["fd"]              # no txn: wait for the commit, not a spin
    assert len(p.work) == 2 and svc.targets == ["unix:x"]


def test_leftover_work_wakes_and_errors_are_contained() -> None:
    svc = FakeService()
    p = Pinctrl(Coverage(), threaded=False, service=svc)
    chassis = SimpleNamespace(uuid=1, name="hv1")
    p.work.add(ActivationIntent(1, 2))            # port unknown: dropped when applied
    p.run("unix:x", fake_sb(txn=object()), idx(), chassis, {})
    assert len(p.work) == 0
    p.work.add(MacBindingIntent(1, 2, "10.0.0.1", "00:00:00:00:00:01", 50))
    poller = Poller()
    p._had_txn = True
    p.wait(poller)
    assert poller.calls[0] == "fd" and poller.calls[1][0] == "timer"
    # A broken SB object: logged, not raised.
    p.run("unix:x", SimpleNamespace(), idx(), chassis, {})
    p.run("unix:x", None, idx(), chassis, {})

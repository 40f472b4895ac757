"""Interface status manager: ``ovn-installed`` and ``Port_Binding.up`` only
after the port's flows are in OVS (OVN 23.03 if-status.c).

Design note
-----------
One :class:`Iface` per claimed VIF, keyed by iface-id, moves through::

    CLAIMED --(SB writable: pb.chassis written)--> INSTALL_FLOWS
    INSTALL_FLOWS --(seqno acked by barrier)--> MARK_UP
                  (--> REM_OLD_OVN_INST first if a stale ovn-installed exists)
    MARK_UP --(pb.up and ovn-installed seen)--> INSTALLED
    any --release--> MARK_DOWN --(binding down)--> gone
                     (--> UPDATE_PORT when the local binding disappeared)

:meth:`IfStatusMgr.update` runs before the flows are handed to ofctrl (it
requests an ofctrl seqno for newly claimed interfaces); :meth:`run` runs
after the acked seqnos were collected and writes ``ovn-installed`` /
``up``.  The manager talks to the bindings through the small
:class:`BindingView` protocol implemented by ``controller.binding.claim``.
"""

from __future__ import annotations

import enum
import time
from typing import Any, Protocol

import structlog

from ofctrl.seqno import SeqnoTracker

log = structlog.get_logger("if_status")


class IfState(enum.Enum):
    CLAIMED = "CLAIMED"
    INSTALL_FLOWS = "INSTALL_FLOWS"
    REM_OLD_OVN_INST = "REM_OLD_OVN_INST"
    MARK_UP = "MARK_UP"
    INSTALLED = "INSTALLED"
    MARK_DOWN = "MARK_DOWN"
    UPDATE_PORT = "UPDATE_PORT"


class BindingView(Protocol):
    def pb_chassis_is_set(self, iface_id: str, chassis: Any) -> bool: ...
    def set_pb_chassis(self, iface_id: str, chassis: Any, is_set: bool,
                       additional: bool) -> None: ...
    def is_up(self, iface_id: str, chassis: Any) -> bool: ...
    def is_down(self, iface_id: str, chassis: Any) -> bool: ...
    def is_ovn_installed(self, iface_id: str) -> bool: ...
    def has_binding(self, iface_id: str) -> bool: ...
    def set_up(self, iface_id: str, chassis: Any, ts: str, sb_readonly: bool,
               ovs_readonly: bool) -> None: ...
    def set_down(self, iface_id: str, chassis: Any, sb_readonly: bool,
                 ovs_readonly: bool) -> None: ...
    def remove_ovn_installed(self, iface_id: str, ovs_readonly: bool) -> None: ...
    def set_port_down(self, iface_id: str, pb_uuid: Any, chassis: Any) -> None: ...


class Iface:
    __slots__ = ("id", "pb_uuid", "state", "install_seqno", "mtu", "additional", "down_done")

    def __init__(self, iface_id: str, pb_uuid: Any, additional: bool) -> None:
        self.id = iface_id
        self.pb_uuid = pb_uuid
        self.state = IfState.CLAIMED
        self.install_seqno = 0
        self.mtu = 0
        self.additional = additional
        self.down_done = False


class IfStatusMgr:
    def __init__(self, seqno: SeqnoTracker) -> None:
        self.seqno = seqno
        self.seq_type = seqno.add_type()
        self.iface_seqno = 0
        self.ifaces: dict[str, Iface] = {}
        # Engine tracking (if_status_mgr node): ifaces whose MTU changed in
        # this run, or None after a recompute of the node (anything changed).
        self.mtu_changed: set[str] | None = set()

    def _in(self, state: IfState) -> list[Iface]:
        return [i for i in self.ifaces.values() if i.state is state]

    def state_of(self, iface_id: str) -> IfState | None:
        i = self.ifaces.get(iface_id)
        return i.state if i else None

    # -- events from binding ------------------------------------------
    def claim_iface(self, view: BindingView, pb: Any, chassis: Any, sb_readonly: bool,
                    additional: bool = False) -> None:
        iface_id = pb.logical_port
        i = self.ifaces.get(iface_id)
        if i is None:
            i = self.ifaces[iface_id] = Iface(iface_id, pb.uuid, additional)
        else:
            i.pb_uuid = pb.uuid
            i.additional = additional
            # Installation already in progress: keep going; a finished or
            # released interface starts over (e.g. the OVS interface was re-created).
            if i.state in (IfState.INSTALLED, IfState.MARK_DOWN, IfState.UPDATE_PORT):
                i.state = IfState.CLAIMED
        if not sb_readonly:
            view.set_pb_chassis(iface_id, chassis, True, additional)

    def release_iface(self, iface_id: str) -> None:
        i = self.ifaces.get(iface_id)
        if i is None:
            return
        if i.state in (IfState.CLAIMED, IfState.INSTALL_FLOWS, IfState.REM_OLD_OVN_INST,
                       IfState.MARK_UP, IfState.INSTALLED):
            i.state = IfState.MARK_DOWN

    def delete_iface(self, iface_id: str) -> None:
        i = self.ifaces.get(iface_id)
        if i is None:
            return
        if i.state in (IfState.CLAIMED, IfState.INSTALL_FLOWS, IfState.REM_OLD_OVN_INST,
                       IfState.MARK_UP, IfState.INSTALLED):
            i.state = IfState.MARK_DOWN

    def clear(self) -> None:
        """Forget every interface (``if_status_mgr_clear``): the OpenFlow
        connection moved to another bridge, whose flows are not theirs."""
        self.ifaces.clear()

    def openflow_disconnected(self) -> None:
        """Flows were lost: interfaces waiting for installation wait again."""
        for i in self.ifaces.values():
            if i.state in (IfState.INSTALL_FLOWS, IfState.MARK_UP):
                i.state = IfState.CLAIMED

    # -- per iteration -------------------------------------------------
    def update(self, view: BindingView, chassis: Any, sb_readonly: bool,
               ovs_readonly: bool, pb_may_have_changed: bool = True) -> None:
        """``pb_may_have_changed`` False (no Port_Binding update arrived and the
        last SB commit went through) skips re-checking that our claims are
        still in place, which would otherwise read every claimed row."""
        for i in self._in(IfState.REM_OLD_OVN_INST):
            if not view.is_ovn_installed(i.id):
                i.state = IfState.MARK_UP
        for i in self._in(IfState.MARK_UP):
            if pb_may_have_changed and not view.pb_chassis_is_set(i.id, chassis):
                if sb_readonly:
                    continue
                view.set_pb_chassis(i.id, chassis, True, i.additional)
            if view.is_up(i.id, chassis):
                i.state = IfState.INSTALLED
        for i in self._in(IfState.MARK_DOWN):
            if not view.has_binding(i.id):
                i.state = IfState.UPDATE_PORT
                continue
            if not sb_readonly:
                view.set_pb_chassis(i.id, chassis, False, i.additional)
            if view.is_down(i.id, chassis):
                del self.ifaces[i.id]
        if not sb_readonly and pb_may_have_changed:
            for i in self._in(IfState.INSTALL_FLOWS):
                if not view.pb_chassis_is_set(i.id, chassis):
                    view.set_pb_chassis(i.id, chassis, True, i.additional)
        new_ifaces = False
        claimed = self._in(IfState.CLAIMED)
        if not sb_readonly:
            for i in claimed:
                if not view.pb_chassis_is_set(i.id, chassis):
                    view.set_pb_chassis(i.id, chassis, True, i.additional)
                i.state = IfState.INSTALL_FLOWS
                i.down_done = False
                i.install_seqno = self.iface_seqno + 1
                new_ifaces = True
        elif claimed:
            log.info(f"Not updating pb chassis for {claimed[0].id} now as sb is readonly")
        if not sb_readonly:
            for i in self._in(IfState.UPDATE_PORT):
                view.set_port_down(i.id, i.pb_uuid, chassis)
                del self.ifaces[i.id]
        if new_ifaces:
            self.iface_seqno += 1
            self.seqno.update_create(self.seq_type, self.iface_seqno)

    def run(self, view: BindingView | None, chassis: Any, sb_readonly: bool,
            ovs_readonly: bool) -> None:
        acked = self.seqno.acked_seqnos(self.seq_type)
        for i in self._in(IfState.INSTALL_FLOWS):
            if i.install_seqno not in acked:
                continue
            if view is None or view.is_ovn_installed(i.id):
                i.state = IfState.REM_OLD_OVN_INST
            else:
                i.state = IfState.MARK_UP
        if view is None:
            return
        for i in self._in(IfState.INSTALL_FLOWS):
            # Keep the port down while its flows are being installed; once
            # written (SB and OVS writable) there is nothing more to do until
            # the state changes.
            if not i.down_done:
                view.set_down(i.id, chassis, sb_readonly, ovs_readonly)
                i.down_done = not (sb_readonly or ovs_readonly)
        for i in self._in(IfState.REM_OLD_OVN_INST):
            view.remove_ovn_installed(i.id, ovs_readonly)
        ts = str(int(time.time() * 1000))
        for i in self._in(IfState.MARK_UP):
            view.set_up(i.id, chassis, ts, sb_readonly, ovs_readonly)
        for i in self._in(IfState.MARK_DOWN):
            view.set_down(i.id, chassis, sb_readonly, ovs_readonly)

    def dump(self) -> str:
        return "".join(f"{i.id}: {i.state.value}\n" for i in sorted(self.ifaces.values(),
                                                                    key=lambda x: x.id))

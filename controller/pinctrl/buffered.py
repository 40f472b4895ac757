"""Packets held while their next hop resolves (23.03.1 buffered packets).

Design note
-----------
ARP and ND_NS packet-ins (handlers return a :class:`BufferIntent`) clone the
frame that needed resolution into a per-key ring, key = (datapath, logical
outport, next-hop IP as 128 bits, IPv4 mapped).  As in C (a 4-slot ring with
one slot always free) each key keeps its **3 newest** frames; at most 1000
keys (``pinctrl_drop_buffered_packets_map`` counts refusals); a key idle for
more than 10 s is freed without notice.

Release happens in the main loop (:meth:`BufferedPackets.release`), from the
MAC_Binding rows the SB tracker reports as created or updated in this
iteration — ours after the round trip, or any other chassis's: the row's
(datapath key, port key, IP) is looked up, retried with the ``cr-<port>``
chassisredirect port when the port has ``options:chassis-redirect-port``.
The frames go out as PO-B packet-outs (the packet-in's registers, then
``pkt_mark``, then ``resubmit(CONTROLLER,37)``) with eth.dst rewritten to
the learnt MAC; the caller hands them to the service connection.

All state sits behind one lock: adds come from the service thread.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable

from controller.diag.coverage import COVERAGE, Coverage
from controller.pinctrl.openflow import packet_out, reload_metadata, resubmit_controller, set_field
from controller.pinctrl.outcome import BufferIntent
from controller.pinctrl.packet_in import PacketIn
from physical.inputs import opt_first

__all__ = ["BufferedPackets", "buffer_intent", "QUEUE_DEPTH", "MAX_KEYS", "IDLE_TIMEOUT_MS",
           "OFTABLE_OUTPUT_INIT"]

QUEUE_DEPTH = 3
MAX_KEYS = 1000
IDLE_TIMEOUT_MS = 10_000
OFTABLE_OUTPUT_INIT = 37
_V4_MAPPED = 0xFFFF << 32

Key = tuple[int, int, int]


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def _mapped(ip: int) -> int:
    return _V4_MAPPED | ip if ip >> 32 == 0 else ip


def buffer_intent(pin: PacketIn, is_arp: bool) -> BufferIntent:
    """The BufferIntent of an ARP (next hop reg0) or ND_NS (xxreg0) packet-in."""
    ip = _V4_MAPPED | pin.reg("reg0") if is_arp else pin.reg("xxreg0")
    return BufferIntent(pin.reg("metadata"), pin.reg("reg15"), ip, pin.packet,
                        reload_metadata(pin), pin.reg("pkt_mark"))


def _parse_ip(text: str) -> int | None:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    return _V4_MAPPED | int(addr) if addr.version == 4 else int(addr)


def _parse_mac(text: str) -> bytes | None:
    parts = text.split(":")
    if len(parts) != 6:
        return None
    try:
        raw = bytes(int(p, 16) for p in parts)
    except ValueError:
        return None
    return raw


class _Ring:
    __slots__ = ("frames", "last_ms")

    def __init__(self, now: int) -> None:
        self.frames: deque[tuple[bytes, bytes]] = deque(maxlen=QUEUE_DEPTH)
        self.last_ms = now


class BufferedPackets:
    """See module docstring."""

    def __init__(self, coverage: Coverage = COVERAGE,
                 clock: Callable[[], int] = _now_ms) -> None:
        self._lock = threading.Lock()
        self._rings: dict[Key, _Ring] = {}
        self._cov = coverage
        self._clock = clock

    def __len__(self) -> int:
        with self._lock:
            return len(self._rings)

    def add(self, intent: BufferIntent) -> bool:
        """Buffer one frame; False when the key cap refused a new key."""
        key = (intent.dp_key, intent.port_key, _mapped(intent.ip))
        actions = (intent.reload + set_field("pkt_mark", intent.pkt_mark)
                   + resubmit_controller(OFTABLE_OUTPUT_INIT))
        now = self._clock()
        with self._lock:
            ring = self._rings.get(key)
            if ring is None:
                if len(self._rings) >= MAX_KEYS:
                    self._cov.inc("pinctrl_drop_buffered_packets_map")
                    return False
                ring = self._rings[key] = _Ring(now)
            ring.last_ms = now
            ring.frames.append((intent.frame, actions))
        return True

    def release(self, mac_bindings: Iterable[Any],
                pb_by_name: Callable[[str], Any]) -> list[bytes]:
        """PO-B packet-outs for the rings the given (changed) MAC_Binding rows
        resolve; then frees idle rings."""
        out: list[bytes] = []
        with self._lock:
            if not self._rings:
                return out
            for mb in mac_bindings:
                ring = self._lookup(mb, pb_by_name)
                if ring is None:
                    continue
                mac = _parse_mac(mb.mac)
                if mac is None:
                    continue
                for frame, actions in ring.frames:
                    out.append(packet_out(mac + frame[6:], actions))
                ring.frames.clear()
            now = self._clock()
            for key, ring in list(self._rings.items()):
                if not ring.frames or now > ring.last_ms + IDLE_TIMEOUT_MS:
                    del self._rings[key]
        return out

    def _lookup(self, mb: Any, pb_by_name: Callable[[str], Any]) -> _Ring | None:
        pb = pb_by_name(mb.logical_port)
        dp = opt_first(pb.datapath) if pb is not None else None
        if dp is None:
            return None
        ip = _parse_ip(mb.ip)
        if ip is None:
            return None
        ring = self._rings.get((int(dp.tunnel_key), int(pb.tunnel_key), ip))
        if ring is not None and ring.frames:
            return ring
        if not pb.options.get("chassis-redirect-port"):
            return None
        cr = pb_by_name("cr-" + pb.logical_port)
        dp = opt_first(cr.datapath) if cr is not None else None
        if dp is None or cr.type != "chassisredirect":
            return None
        ring = self._rings.get((int(dp.tunnel_key), int(cr.tunnel_key), ip))
        return ring if ring is not None and ring.frames else None

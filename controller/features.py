"""OVS features that change how flows are encoded (OVN 23.03 lib/features.c).

Design note
-----------
Two sources: br-int's ``Datapath.capabilities`` in the OVS database
(``ct_zero_snat``, ``ct_flush``, ``max_hash_alg``) and, for datapath meter
support (``controller(...,meter_id=N)``), an OpenFlow 1.5
``OFPMP_METER_FEATURES`` request on a short-lived connection of its own
(:func:`probe_meter_support`; blocking, bounded by a timeout, run once per
OpenFlow (re)connection).  The daemon compares the :class:`Features` value
each iteration and forces a full recompute when it changes.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass
from typing import Mapping

OFP15 = 6
OFPT_HELLO = 0
OFPT_ERROR = 1
OFPT_ECHO_REQUEST = 2
OFPT_MULTIPART_REQUEST = 18
OFPT_MULTIPART_REPLY = 19
OFPMP_METER_FEATURES = 11
OVS_HASH_ALG_SYM_L4 = 1


@dataclass(frozen=True)
class Features:
    ct_zero_snat: bool = False
    ct_flush: bool = False
    dp_hash_l4_sym: bool = False
    meter_support: bool = False


def from_capabilities(caps: Mapping[str, str], meter_support: bool) -> Features:
    try:
        max_hash = int(caps.get("max_hash_alg", "0"))
    except ValueError:
        max_hash = 0
    return Features(caps.get("ct_zero_snat") == "true", caps.get("ct_flush") == "true",
                    max_hash == OVS_HASH_ALG_SYM_L4, meter_support)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def probe_meter_support(target: str, timeout: float = 2.0) -> bool | None:
    """True/False from the switch's meter features; None if it could not be asked."""
    try:
        if target.startswith("unix:"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr: object = target[5:]
        else:
            return None
        sock.settimeout(timeout)
        sock.connect(addr)  # type: ignore[arg-type]
    except OSError:
        return None
    try:
        sock.sendall(struct.pack("!BBHI", OFP15, OFPT_HELLO, 8, 1))
        sock.sendall(struct.pack("!BBHIHH4x", OFP15, OFPT_MULTIPART_REQUEST, 16, 2,
                                 OFPMP_METER_FEATURES, 0))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hdr = _recv_exact(sock, 8)
            version, mtype, length, xid = struct.unpack("!BBHI", hdr)
            body = _recv_exact(sock, length - 8) if length > 8 else b""
            if mtype == OFPT_ECHO_REQUEST:
                sock.sendall(struct.pack("!BBHI", version, 3, length, xid) + body)
            elif mtype == OFPT_ERROR and xid == 2:
                return False
            elif mtype == OFPT_MULTIPART_REPLY and xid == 2 and len(body) >= 12:
                mp_type, = struct.unpack_from("!H", body, 0)
                if mp_type == OFPMP_METER_FEATURES:
                    max_meter, = struct.unpack_from("!I", body, 8)
                    return bool(max_meter > 0)
        return None
    except (OSError, ConnectionError, struct.error):
        return None
    finally:
        sock.close()

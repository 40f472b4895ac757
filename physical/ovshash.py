"""OVS hashing (lib/hash.h) and hmap iteration order (lib/hmap.c).

``hash_bytes``/``hash_string`` and ``hash_int`` are the generic (non-CRC32)
murmur-based functions of OVS; the controller uses ``hash_int`` for the
preferred conjunction ids, so they match the C agent's bit for bit.

The C agent emits some actions in the iteration order of an OVS ``sset``
(multicast fan-out to remote chassis).  That order depends only on the
murmur-based ``hash_string`` (the non-SSE4.2 build used by distributions)
and on how ``hmap`` grows, both reproduced here.
"""

from __future__ import annotations

_M32 = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M32


def _mhash_add(h: int, data: int) -> int:
    if data:
        data = (data * 0xCC9E2D51) & _M32
        data = _rot(data, 15)
        data = (data * 0x1B873593) & _M32
        h ^= data
    h = _rot(h, 13)
    return (h * 5 + 0xE6546B64) & _M32


def _mhash_finish(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def hash_int(x: int, basis: int) -> int:
    """OVS hash_int(x, basis) = hash_2words(x, basis)."""
    return _mhash_finish(_mhash_add(_mhash_add(x, 0), basis) ^ 8)


def hash_bytes(data: bytes, basis: int = 0) -> int:
    h = basis
    n = len(data)
    i = 0
    while n - i >= 4:
        h = _mhash_add(h, int.from_bytes(data[i:i + 4], "little"))
        i += 4
    if i < n:
        h = _mhash_add(h, int.from_bytes(data[i:] + b"\x00" * (4 - (n - i)), "little"))
    return _mhash_finish(h ^ n)


def hash_string(s: str, basis: int = 0) -> int:
    return hash_bytes(s.encode(), basis)


def _calc_mask(capacity: int) -> int:
    mask = capacity // 2
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    mask |= (mask & 1) << 1
    return mask


def hmap_order(items: list[tuple[int, str]]) -> list[str]:
    """Iteration order of an hmap after inserting (hash, key) pairs in order."""
    mask = 0
    buckets: list[list[tuple[int, str]]] = [[]]
    n = 0
    for h, key in items:
        buckets[h & mask].insert(0, (h, key))
        n += 1
        if n // 2 > mask:
            new_mask = _calc_mask(n)
            if new_mask > mask:
                nb: list[list[tuple[int, str]]] = [[] for _ in range(new_mask + 1)]
                for bucket in buckets:
                    for node in bucket:
                        nb[node[0] & new_mask].insert(0, node)
                buckets, mask = nb, new_mask
    return [key for bucket in buckets for _, key in bucket]


def sset_order(names: list[str]) -> list[str]:
    """Iteration order of an sset after sset_add() of ``names`` (duplicates ignored)."""
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return hmap_order([(hash_string(n), n) for n in seen])

"""The DNS records of the SB DNS rows, per datapath (what ``dns_lookup`` answers from).

The cache is immutable: the main loop builds a new one when the SB DNS rows
change and publishes it with the local view; the pinctrl service only reads
it.  Kept apart from :mod:`controller.pinctrl.dns` (the packet side) so that
the main-loop side can build and publish it without importing the DNS packet
parser and frame builders, which only a DNS packet-in needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

__all__ = ["DnsCache", "EMPTY_DNS_CACHE", "build_dns_cache", "dns_cache_from_sb"]


@dataclass(frozen=True, slots=True)
class DnsCache:
    """Records per datapath: tunnel key -> the record maps (name -> value,
    both UTF-8 bytes) of every DNS row serving it, in dns_id order."""

    by_datapath: Mapping[int, tuple[Mapping[bytes, bytes], ...]]

    def lookup(self, dp_key: int, name: bytes) -> bytes | None:
        for records in self.by_datapath.get(dp_key, ()):
            value = records.get(name)
            if value is not None:
                return value
        return None


EMPTY_DNS_CACHE = DnsCache(MappingProxyType({}))


def build_dns_cache(rows: Iterable[tuple[Mapping[str, str], Mapping[str, str], Iterable[int]]]
                    ) -> DnsCache:
    """The cache for SB DNS rows given as (external_ids, records, datapath
    tunnel keys); rows without ``external_ids:dns_id`` are ignored and a
    dns_id seen twice keeps its last row (C keys its cache by dns_id)."""
    by_id: dict[str, tuple[Mapping[bytes, bytes], tuple[int, ...]]] = {}
    for external_ids, records, dp_keys in rows:
        dns_id = external_ids.get("dns_id")
        if dns_id is None:
            continue
        recs: Mapping[bytes, bytes] = MappingProxyType(
            {k.encode(): v.encode() for k, v in records.items()})
        by_id[dns_id] = (recs, tuple(dp_keys))
    by_dp: dict[int, list[Mapping[bytes, bytes]]] = {}
    for dns_id in sorted(by_id):
        recs, dps = by_id[dns_id]
        for dp in dps:
            by_dp.setdefault(dp, []).append(recs)
    return DnsCache(MappingProxyType({dp: tuple(v) for dp, v in by_dp.items()}))


def dns_cache_from_sb(rows: Iterable[Any]) -> DnsCache:
    """:func:`build_dns_cache` over SB DNS IDL rows (``external_ids``,
    ``records``, ``datapaths`` referencing Datapath_Binding rows)."""
    return build_dns_cache((dict(r.external_ids), dict(r.records),
                            [int(dp.tunnel_key) for dp in r.datapaths]) for r in rows)

"""Meters: the meter extend table and the meter_mods of a put.

Design (after OVN 23.03 ofctrl.c): meter ids come from an `ExtendTable`
keyed by name.  A name starting with `__string: ` describes the meter
itself (the `set_meter` action: `__string: uuid <36 chars> kbps [burst]
stats bands=type=drop rate=N [burst_size=M]`); any other name refers to an
SB `Meter` row, given here as plain `MeterConfig` data.  Meter mods are sent
outside the flow bundle (OVS does not take METER_MOD in bundles): adds and
modifies before it, deletes after it.  For named meters the installed bands
are remembered so that a band change in SB sends a MODIFY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import structlog

from ofctrl import messages as m
from ofctrl.connection import RateLimit
from ofctrl.groups import ExtendInfo, ExtendTable

log = structlog.get_logger("ofctrl.meters")
_rl = RateLimit(5, 1000)

STRING_PREFIX = "__string: "
_STRING_SPEC_OFFSET = 52  # len("__string: uuid ") + 36 + 1


@dataclass(frozen=True, slots=True)
class MeterBandConfig:
    action: str  # "drop"
    rate: int
    burst_size: int = 0


@dataclass(frozen=True, slots=True)
class MeterConfig:
    """An SB Meter row as plain data."""

    unit: str  # "kbps" | "pktps"
    bands: tuple[MeterBandConfig, ...]


def parse_meter_spec(spec: str) -> tuple[int, list[m.MeterBand]]:
    """Flags and bands of `kbps burst stats bands=type=drop rate=1 burst_size=2`."""
    flags = 0
    bands: list[m.MeterBand] = []
    in_bands = False
    for tok in spec.replace(",", " ").split():
        if tok.startswith("bands="):
            in_bands = True
            tok = tok[len("bands="):]
            if not tok:
                continue
        if not in_bands:
            if tok == "kbps":
                flags |= m.OFPMF_KBPS
            elif tok == "pktps":
                flags |= m.OFPMF_PKTPS
            elif tok == "burst":
                flags |= m.OFPMF_BURST
            elif tok == "stats":
                flags |= m.OFPMF_STATS
            else:
                raise ValueError("bad meter token %r" % tok)
            continue
        key, _, value = tok.partition("=")
        if key == "type":
            if value != "drop":
                raise ValueError("unsupported meter band type %r" % value)
            bands.append(m.MeterBand(rate=0))
        elif key in ("rate", "burst_size") and bands:
            b = bands[-1]
            if key == "rate":
                bands[-1] = m.MeterBand(int(value), b.burst_size, b.type)
            else:
                bands[-1] = m.MeterBand(b.rate, int(value), b.type)
        else:
            raise ValueError("bad meter band token %r" % tok)
    return flags, bands


def meter_mod_for_config(xid: int, command: int, meter_id: int, cfg: MeterConfig) -> bytes:
    flags = m.OFPMF_STATS | (m.OFPMF_PKTPS if cfg.unit == "pktps" else m.OFPMF_KBPS)
    bands = []
    for b in cfg.bands:
        if b.burst_size:
            flags |= m.OFPMF_BURST
        bands.append(m.MeterBand(b.rate, b.burst_size))
    return m.meter_mod(xid, command, meter_id, flags, bands)


def _bands_key(cfg: MeterConfig) -> frozenset[tuple[int, int]]:
    return frozenset((b.rate, b.burst_size) for b in cfg.bands)


class MeterTable(ExtendTable):
    """Meter ids plus the bands installed for named meters."""

    def __init__(self, max_id: int = 0xFFFFFFFF - 0x10) -> None:
        super().__init__(max_id)
        self.installed_bands: dict[str, frozenset[tuple[int, int]]] = {}

    def clear_existing(self) -> None:
        super().clear_existing()
        self.installed_bands = {}

    def messages_before_bundle(
        self, sb_meters: Mapping[str, MeterConfig], initial_clear: bool, next_xid: Callable[[], int],
        adds_only: bool = False,
    ) -> list[bytes]:
        """Meter deletes-all (first put on a connection), adds and modifies
        (`adds_only`: only the adds of meters not installed yet)."""
        out: list[bytes] = []
        if initial_clear:
            out.append(m.meter_mod(next_xid(), m.OFPMC_DELETE, m.OFPM_ALL))
        for e in list(self.desired.values()):
            if e.peer is None:
                if e.name.startswith(STRING_PREFIX):
                    try:
                        flags, bands = parse_meter_spec(e.name[_STRING_SPEC_OFFSET:])
                    except ValueError as exc:
                        if _rl.allow():
                            log.error("new meter", error=str(exc), meter=e.name)
                        continue
                    out.append(m.meter_mod(next_xid(), m.OFPMC_ADD, e.table_id, flags, bands))
                else:
                    cfg = sb_meters.get(e.name)
                    if cfg is None:
                        if _rl.allow():
                            log.error("could not find meter", name=e.name)
                        continue
                    self.installed_bands[e.name] = _bands_key(cfg)
                    out.append(meter_mod_for_config(next_xid(), m.OFPMC_ADD, e.table_id, cfg))
            elif not adds_only:
                self._sync_bands(e.peer, sb_meters, out, next_xid)
        return out

    def _sync_bands(
        self, existing: ExtendInfo, sb_meters: Mapping[str, MeterConfig], out: list[bytes], next_xid: Callable[[], int]
    ) -> None:
        if existing.name.startswith(STRING_PREFIX):
            return
        cfg = sb_meters.get(existing.name)
        if cfg is None:
            if self.installed_bands.pop(existing.name, None) is not None:
                out.append(m.meter_mod(next_xid(), m.OFPMC_DELETE, existing.table_id))
            return
        key = _bands_key(cfg)
        old = self.installed_bands.get(existing.name)
        if old is None:
            self.installed_bands[existing.name] = key
            out.append(meter_mod_for_config(next_xid(), m.OFPMC_ADD, existing.table_id, cfg))
        elif old != key or len(cfg.bands) != len(old):
            self.installed_bands[existing.name] = key
            out.append(meter_mod_for_config(next_xid(), m.OFPMC_MODIFY, existing.table_id, cfg))

    def messages_after_bundle(self, next_xid: Callable[[], int]) -> list[bytes]:
        """Deletes of meters no longer desired; then sync desired -> existing."""
        out: list[bytes] = []
        for e in list(self.unneeded()):
            if self.installed_bands.pop(e.name, None) is not None or e.name.startswith(STRING_PREFIX):
                out.append(m.meter_mod(next_xid(), m.OFPMC_DELETE, e.table_id))
            self.remove_existing(e)
        self.sync()
        return out


def sb_meter_configs(rows: Sequence[tuple[str, str, Sequence[tuple[str, int, int]]]]) -> dict[str, MeterConfig]:
    """Helper: (name, unit, [(action, rate, burst_size)]) rows -> configs."""
    return {
        name: MeterConfig(unit, tuple(MeterBandConfig(a, r, b) for a, r, b in bands)) for name, unit, bands in rows
    }

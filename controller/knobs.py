"""``ovn-*`` configuration knobs read from the local Open_vSwitch row.

Design note
-----------
Every knob lives in ``Open_vSwitch.external_ids``; a key suffixed with
``-<chassis-name>`` overrides the plain key (several agents on one host).
Knobs are re-read every iteration (:func:`read_knobs` is cheap: one dict
lookup per knob) so operators can change them live.  Each knob is declared
once in :data:`KNOBS` with its parser and default.  A value that fails to
parse produces one rate-limited warning per (key, value) pair and the
default is used instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import structlog

from controller.vlog import RateLimiter

log = structlog.get_logger("knobs")


class KnobError(ValueError):
    pass


def parse_bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("true", "yes", "on", "1"):
        return True
    if v in ("false", "no", "off", "0"):
        return False
    raise KnobError(f"not a boolean: {s!r}")


def int_parser(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s.strip(), 10)
        except ValueError as e:
            raise KnobError(f"not an integer: {s!r}") from e
        if lo is not None and v < lo:
            raise KnobError(f"{v} below minimum {lo}")
        if hi is not None and v > hi:
            raise KnobError(f"{v} above maximum {hi}")
        return v
    return parse


def parse_list(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


ENCAP_TYPES = ("geneve", "stt", "vxlan")


def parse_encap_types(s: str) -> tuple[str, ...]:
    out = parse_list(s)
    for t in out:
        if t not in ENCAP_TYPES:
            raise KnobError(f"unknown encap type {t!r}")
    if not out:
        raise KnobError("empty encap type list")
    return out


def parse_ip_list(s: str) -> tuple[str, ...]:
    import ipaddress
    out = parse_list(s)
    for ip in out:
        try:
            ipaddress.ip_address(ip)
        except ValueError as e:
            raise KnobError(f"bad IP {ip!r}") from e
    return out


def parse_mappings(s: str) -> tuple[tuple[str, str], ...]:
    """``a:b,c:d`` -> (("a","b"), ("c","d"))."""
    out = []
    for item in parse_list(s):
        k, sep, v = item.partition(":")
        if not sep or not k or not v:
            raise KnobError(f"bad mapping {item!r}")
        out.append((k.strip(), v.strip()))
    return tuple(out)


def parse_ct_zone_range(s: str) -> tuple[int, int]:
    lo_s, sep, hi_s = s.partition("-")
    try:
        lo, hi = int(lo_s), int(hi_s)
    except ValueError as e:
        raise KnobError(f"bad range {s!r}") from e
    if not sep or lo < 1 or hi > 65535 or lo > hi:
        raise KnobError(f"bad range {s!r}")
    return lo, hi


@dataclass(frozen=True)
class Knob:
    key: str
    parse: Callable[[str], Any]
    default: Any
    doc: str = ""


KNOBS: tuple[Knob, ...] = (
    Knob("hostname", str, None, "Chassis.hostname"),
    Knob("ovn-remote", str, None, "SB remote(s)"),
    Knob("ovn-remote-probe-interval", int_parser(0), None, "SB probe, ms"),
    Knob("ovn-monitor-all", parse_bool, False, "monitor every SB row"),
    Knob("ovn-encap-type", parse_encap_types, None, "tunnel types"),
    Knob("ovn-encap-ip", parse_ip_list, None, "tunnel endpoint IPs"),
    Knob("ovn-encap-ip-default", str, None, "default encap IP"),
    Knob("ovn-encap-csum", parse_bool, True, "outer checksums"),
    Knob("ovn-encap-tos", str, None, "tunnel options:tos"),
    Knob("ovn-encap-df_default", parse_bool, None, "tunnel df_default"),
    Knob("ovn-bridge", str, "br-int", "integration bridge"),
    Knob("ovn-bridge-datapath-type", str, None, "br-int datapath_type"),
    Knob("ovn-bridge-mappings", parse_mappings, (), "physnet:bridge list"),
    Knob("ovn-bridge-remote", str, None, "OpenFlow remote of br-int"),
    Knob("ovn-bridge-remote-probe-interval", int_parser(0), 0, "ms"),
    Knob("ovn-openflow-probe-interval", int_parser(0), 0, "seconds (23.03)"),
    Knob("ovn-cms-options", str, "", "opaque CMS options"),
    Knob("ovn-transport-zones", parse_list, (), "transport zones"),
    Knob("ovn-chassis-mac-mappings", str, "", "physnet:mac list"),
    Knob("ovn-is-interconn", parse_bool, False, "IC gateway"),
    Knob("ovn-match-northd-version", parse_bool, False, "stop on version skew"),
    Knob("ovn-enable-lflow-cache", parse_bool, True, "lflow cache"),
    Knob("ovn-limit-lflow-cache", int_parser(0), None, "max entries"),
    Knob("ovn-memlimit-lflow-cache-kb", int_parser(0), None, "max KB"),
    Knob("ovn-trim-limit-lflow-cache", int_parser(0), 10000, "entries"),
    Knob("ovn-trim-wmark-perc-lflow-cache", int_parser(0, 100), 50, "percent"),
    Knob("ovn-trim-timeout-ms", int_parser(0), 30000, "ms"),
    Knob("ovn-set-local-ip", parse_bool, False, "tunnel local_ip"),
    Knob("ovn-cleanup-on-exit", parse_bool, True, "cleanup on plain exit"),
    Knob("ct-zone-range", parse_ct_zone_range, (1, 65535), "dynamic zone range"),
    Knob("garp-max-timeout-sec", int_parser(0), None, "GARP backoff cap"),
    Knob("ovn-ofctrl-wait-before-clear", int_parser(0), 0, "ms (22.06-25.03)"),
)
KNOBS_BY_KEY: dict[str, Knob] = {k.key: k for k in KNOBS}

_warned: dict[tuple[str, str], RateLimiter] = {}


def raw_value(ext_ids: Mapping[str, str], key: str, chassis: str | None) -> tuple[str | None, str]:
    """The value of ``key`` honouring the ``<key>-<chassis>`` override.

    Returns (value or None, the key actually used).
    """
    if chassis:
        ck = f"{key}-{chassis}"
        v = ext_ids.get(ck)
        if v is not None:
            return v, ck
    return ext_ids.get(key), key


def get_knob(ext_ids: Mapping[str, str], key: str, chassis: str | None) -> Any:
    knob = KNOBS_BY_KEY[key]
    raw, used = raw_value(ext_ids, key, chassis)
    if raw is None:
        return knob.default
    try:
        return knob.parse(raw)
    except (KnobError, ValueError) as e:
        rl = _warned.setdefault((used, raw), RateLimiter(per_minute=1, burst=1))
        log.warn_rl(rl, f"invalid value {raw!r} for external_ids:{used} ({e}); using default",
                    key=used)
        return knob.default


class Knobs:
    """Parsed knob values of one iteration; attribute per key (``-`` -> ``_``)."""

    def __init__(self, ext_ids: Mapping[str, str], chassis: str | None) -> None:
        self.chassis = chassis
        self.ext_ids = dict(ext_ids)
        self.values: dict[str, Any] = {k.key: get_knob(ext_ids, k.key, chassis) for k in KNOBS}

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        v = self.values.get(key)
        return default if v is None else v

    def raw(self, key: str) -> str | None:
        """Unparsed value with the chassis override (for keys copied verbatim)."""
        return raw_value(self.ext_ids, key, self.chassis)[0]


def chassis_name(ext_ids: Mapping[str, str], override: str | None,
                 override_file: str | None = None) -> str | None:
    """Chassis name: command line > system-id-override file > system-id."""
    if override:
        return override
    if override_file:
        try:
            with open(override_file, encoding="utf-8") as f:
                v = f.read().strip()
            if v:
                return v
        except OSError:
            pass
    sid = ext_ids.get("system-id")
    return sid or None

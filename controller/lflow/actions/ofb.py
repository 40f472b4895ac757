"""Small constructors of ofctrl OpenFlow actions used by the encoders
(keeps the action modules independent of ofpacts constructor details)."""

from __future__ import annotations

from typing import Any, Sequence

from ofctrl import ofpacts as of
from ofctrl.fields import Subfield
from ofctrl.fields import field as of_field
from ofctrl.ofpacts.base import field_bytes
from ofctrl.ofpacts.base import oxm_header as _oxm_header


def field_bits(name: str) -> int:
    return int(of_field(name).n_bits)


def sub(name: str, ofs: int, n_bits: int) -> Subfield:
    return Subfield(of_field(name), ofs, n_bits)


def whole(name: str) -> Subfield:
    return Subfield.whole(of_field(name))


def oxm_header(name: str) -> bytes:
    """OpenFlow 1.5 header of a field (nx_put_header(..., OFP15, false))."""
    return _oxm_header(of_field(name))


def resubmit(table: int) -> Any:
    return of.Resubmit(table)


def set_field(name: str, value: int, mask: int | None) -> Any:
    """set_field; like OVS, the mask is dropped only when it covers every
    byte of the field (so 6-bit ip_dscp keeps "/0x3f")."""
    if mask is not None and mask == (1 << (8 * field_bytes(of_field(name)))) - 1:
        mask = None
    return of.SetField(name, value, mask)


def load_bits(name: str, value: int, ofs: int, n_bits: int) -> Any:
    """put_load(): write 'value' into bits ofs..ofs+n_bits-1 of 'name'."""
    bits = (1 << n_bits) - 1
    return set_field(name, (value & bits) << ofs, bits << ofs)


def move(src: Subfield, dst: Subfield) -> Any:
    return of.Move(src, dst)


def push(sf: Subfield) -> Any:
    return of.StackPush(sf)


def pop(sf: Subfield) -> Any:
    return of.StackPop(sf)


def dec_ttl() -> Any:
    return of.DecTtl()


def nat(kind: str | None, family: int | None, addr: int | None,
        port_lo: int | None, port_hi: int | None) -> Any:
    """ofpact_nat: kind None/"src"/"dst"; family None/4/6."""
    return of.Nat.make(kind or "", addr_min=addr if family else None,
                       ipv6=family == 6, port_min=port_lo or 0,
                       port_max=port_hi or 0)


def ct(commit: bool, table: int | None, zone: str, nat: Any | None,
       actions: Sequence[Any]) -> Any:
    acts = tuple(actions)
    if nat is not None:
        acts = (nat,) + acts
    return of.Ct(commit=commit, table=255 if table is None else table,
                 zone_src=sub(zone, 0, 16), actions=acts)


def ct_clear() -> Any:
    return of.CtClear()


def group(group_id: int) -> Any:
    return of.Group(group_id)


def meter(meter_id: int) -> Any:
    return of.Meter(meter_id)


def controller(userdata: bytes, pause: bool, meter_id: int) -> Any:
    return of.Controller(userdata=userdata, pause=pause, meter_id=meter_id)


def clone(actions: Sequence[Any]) -> Any:
    return of.Clone(tuple(actions))


def set_queue(queue_id: int) -> Any:
    return of.SetQueue(queue_id)


def check_pkt_larger(pkt_len: int, dst: Subfield) -> Any:
    return of.CheckPktLarger(pkt_len, dst)


def sample(probability: int, collector_set_id: int, obs_domain_id: int,
           obs_point_id: int) -> Any:
    return of.Sample(probability, collector_set_id, obs_domain_id, obs_point_id)


def learn_match_field(dst: str, src: str) -> Any:
    # OVN leaves the source subfield's offset/width zero; OVS prints it as
    # "NAME[0..-1]" when it differs from the destination.
    return of.LearnMatchField(whole(dst), Subfield(of_field(src), 0, 0))


def learn_match_imm(dst: str, value: int) -> Any:
    return of.LearnMatchImm(whole(dst), value)


def learn_load_imm(dst: str, ofs: int, n_bits: int, value: int) -> Any:
    return of.LearnLoadImm(sub(dst, ofs, n_bits), value)


def learn(table: int, idle_timeout: int, hard_timeout: int, delete_learned: bool,
          specs: Sequence[Any]) -> Any:
    flags = of.NX_LEARN_F_DELETE_LEARNED if delete_learned else 0
    return of.Learn(table=table, specs=tuple(specs), idle_timeout=idle_timeout,
                    hard_timeout=hard_timeout, flags=flags)


def encode_actions(actions: Sequence[Any]) -> bytes:
    return of.encode_actions(actions)


def format_actions(actions: Sequence[Any]) -> str:
    return of.format_actions(actions)

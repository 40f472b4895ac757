"""physical flows convert to ofctrl Flow/Match/ofpacts with identical OVS text."""

from __future__ import annotations

from ofctrl.flow import Flow
from ofctrl.ofpacts import format_actions as ofctrl_format_actions

from integration.test_physical_parity import RICH, SbSnapshot, build_context, port_names
from physical import build_all
from physical.ofbuild import format_actions
from physical.to_ofctrl import to_ofctrl_flow


def test_rich_flows_convert_to_ofctrl_with_same_text() -> None:
    sb = SbSnapshot(RICH / "sb.db")
    ctx, tables = build_context(sb, RICH)
    names = port_names((RICH / "ports.txt").read_text())
    flows = build_all(ctx, tables)
    assert len(flows) > 100
    for pf in flows:
        f = to_ofctrl_flow(pf)
        assert isinstance(f, Flow)
        assert (f.table, f.priority, f.cookie) == (pf.table, pf.priority, pf.cookie)
        assert f.match.to_string(names) == pf.match.to_string(names)
        assert ofctrl_format_actions(list(f.actions)) == format_actions(pf.actions)
        assert f.wire()  # encodable as an OF1.5 flow body


def test_add_to_desired_and_remove_by_owner() -> None:
    from ofctrl.desired import DesiredFlowTable

    from physical import port_binding_flows
    from physical.to_ofctrl import GENERIC_OWNER, add_to_desired
    sb = SbSnapshot(RICH / "sb.db")
    ctx, tables = build_context(sb, RICH)
    flows = build_all(ctx, tables)
    desired = DesiredFlowTable()
    add_to_desired(desired, flows)
    assert len(desired) == len({f.key() for f in flows})
    pb = next(p for p in tables.port_bindings if p.logical_port == "ls-a-p1")
    own = port_binding_flows(ctx, pb)
    desired.remove(pb.uuid)
    assert len(desired) == len({f.key() for f in flows}) - len(own)
    add_to_desired(desired, own)
    assert len(desired) == len({f.key() for f in flows})
    generic = {f.key() for f in flows if f.owner is None}
    assert len(generic) == 12  # 11 table defaults + the ovn-hv2-0 decapsulation flow
    desired.remove(GENERIC_OWNER)
    assert len(desired) == len({f.key() for f in flows}) - len(generic)

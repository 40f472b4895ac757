"""Malformed SB rows of every kind the SB schema accepts (issue 12, point 6),
ours and the C oracle.

northd is stopped first (the hand-made rows stay as written).  Into the rich
topology go, one transaction each:

* logical flows with a bad match, an unknown field, two bad actions, and
  one with neither a datapath nor a datapath group: logged, (ours) counted
  in ``lflow_parse_error``, skipped: br-int does not change;
* unknown ``options``/``external_ids`` keys on a bound port: ignored;
* a 10,000-element address set used by a flow: all 10,000 flows install;
* an address set with junk entries: those are warned about and skipped,
  the valid entry installs;
* remote chassis with bogus Encap ips (``not-an-ip``, ``999.1.1.1``);
* a Datapath_Binding northd would never write (no external_ids) with the
  largest tunnel keys the schema allows (datapath 16777215, port 32767,
  multicast group 65535), a port on it bound here and a flow on it.

Afterwards a valid flow added last installs (the rest still works), and
once every bad row is deleted br-int is exactly as before; the conftest
teardown compares ours with a forced recompute.

(Port_Bindings of types the agent does not know and Encaps with an empty
ip are in test_faults_badinput.py.)
"""

from __future__ import annotations

import re

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.test_agent_basic import col, iface_ext, wait_until
from integration.test_faults import AGENTS, log_lines
from integration.test_faults_badinput import flows, frozen_rich

pytestmark = pytest.mark.integration

BIG = 10_000


def lflow(box: Sandbox, dp: str, match: str, actions: str, prio: int, table: int = 20) -> str:
    """A Logical_Flow row by hand; its uuid. `match` may contain `"`."""
    m = match.replace('"', '\\"')
    return box.sbctl("create", "Logical_Flow", *([f"logical_datapath={dp}"] if dp else []),
                     "pipeline=ingress", f"table_id={table}", f"priority={prio}",
                     f'match="{m}"', f'actions="{actions}"').strip()


def parse_errors(box: Sandbox) -> int:
    for line in box.appctl("controller", "coverage/show").splitlines():
        if line.startswith("lflow_parse_error"):
            return int(line.rsplit("total:", 1)[1])
    return 0


def sync(box: Sandbox) -> set[str]:
    box.wait_hv_sync(timeout=120, min_flows=0)
    assert box.controller_alive(), box.log_tail()
    return flows(box)


@AGENTS
def test_malformed_sb_rows_logged_skipped_rest_installs(sandbox_factory: SandboxFactory,
                                                        kind: str) -> None:
    box = frozen_rich(sandbox_factory, kind)
    before = flows(box)
    dp = col(box, "Datapath_Binding", "external_ids:name=ls-a", "_uuid")
    errors0 = parse_errors(box) if kind == "py" else 0
    made: list[tuple[str, str]] = []      # (table, uuid) to delete at the end

    # -- bad matches and actions, a flow of no datapath: skipped
    bad = [("ip4.dst == 1.2.3", "drop;"), ("nosuch.field == 1", "drop;"),
           ("ip4.dst == 10.9.9.9", "frobnicate;"), ("ip4.dst == 10.9.9.8", "reg0 = ;")]
    for i, (match, actions) in enumerate(bad):
        made.append(("Logical_Flow", lflow(box, dp, match, actions, 70 + i)))
        assert sync(box) == before, f"flows for {match!r} / {actions!r}"
    made.append(("Logical_Flow", lflow(box, "", "ip4.dst == 10.9.9.7", "drop;", 75)))
    assert sync(box) == before, "flows for a logical flow of no datapath"
    # (both agents rate-limit this warning: not every row gets its line)
    log = "\n".join(log_lines(box))
    assert any(f'error parsing match "{m}"' in log for m, _ in bad[:2])
    assert any(f'error parsing actions "{a}"' in log for _, a in bad[2:])
    if kind == "py":
        assert parse_errors(box) - errors0 >= len(bad)

    # -- unknown keys in the maps: ignored
    box.sbctl("set", "Port_Binding", "ls-a-p1", "options:frobnicate=yes",
              "external_ids:zz-unknown=1")
    assert sync(box) == before

    # -- a 10,000-element address set: every element installs
    aset = box.sbctl("create", "Address_Set", "name=big").strip()
    box.sbctl("add", "Address_Set", aset, "addresses",
              *(f'"100.64.{i // 256}.{i % 256}"' for i in range(BIG)))
    made.append(("Address_Set", aset))
    made.append(("Logical_Flow", lflow(box, dp, "ip4.src == $big", "drop;", 80)))
    got = sync(box)
    assert sum("nw_src=100.64." in f for f in got) == BIG
    assert got >= before

    # -- junk address-set entries: warned about, skipped; the valid one installs
    made.append(("Address_Set", box.sbctl(
        "create", "Address_Set", "name=junk",
        'addresses=["not-an-ip","10.0.0.300","100.65.0.1"]').strip()))
    made.append(("Logical_Flow", lflow(box, dp, "ip4.src == $junk", "drop;", 81)))
    got = sync(box)
    assert [f for f in got if "100.65." in f and "nw_src=100.65.0.1 " in f]
    assert sum("100.65." in f for f in got) == 1
    wait_until(lambda: sum("Invalid constant set entry" in ln for ln in log_lines(box)) >= 2,
               what="the junk entries warned about", box=box)

    # -- bogus Encap ips on remote chassis
    box.sbctl("chassis-add", "hv4", "geneve", "not-an-ip")
    box.sbctl("chassis-add", "hv5", "vxlan", "999.1.1.1")
    sync(box)

    # -- a datapath northd would not write, with the largest tunnel keys
    dp2 = box.sbctl("create", "Datapath_Binding", "tunnel_key=16777215").strip()
    box.sbctl("create", "Port_Binding", "logical_port=huge", f"datapath={dp2}",
              "tunnel_key=32767", 'mac="0a:00:00:00:09:09 10.9.0.9"')
    box.bind_vif("vif-huge", "huge", ofport=29)
    pb = col(box, "Port_Binding", "logical_port=huge", "_uuid")
    box.sbctl("create", "Multicast_Group", f"datapath={dp2}", "name=_MC_flood",
              "tunnel_key=65535", f"ports={pb}")
    made.append(("Logical_Flow", lflow(box, dp2, 'inport == "huge"', "next;", 50, table=0)))
    wait_until(lambda: iface_ext(box, "vif-huge").get("ovn-installed") == "true",
               what="the port of the odd datapath installed", box=box)
    got = sync(box)
    assert col(box, "Port_Binding", "logical_port=huge", "chassis") != ""
    assert any(re.search(r"metadata=0xffffff\b", f) and "reg14=0x7fff" in f for f in got)
    assert any("reg15=0xffff" in f for f in got)

    # -- the rest still works: a valid flow added last installs
    made.append(("Logical_Flow", lflow(box, dp, "ip4.dst == 10.123.123.123", "drop;", 90)))
    assert any("nw_dst=10.123.123.123" in f for f in sync(box))

    # -- every bad row gone: br-int as before
    box.unbind_vif("vif-huge")
    box.sbctl("--if-exists", "destroy", "Multicast_Group", col(
        box, "Multicast_Group", "tunnel_key=65535", "_uuid"))
    for table, uuid in reversed(made):
        box.sbctl("destroy", table, uuid)
    box.sbctl("destroy", "Port_Binding", pb, "--", "destroy", "Datapath_Binding", dp2)
    box.sbctl("chassis-del", "hv4", "--", "chassis-del", "hv5")
    box.sbctl("remove", "Port_Binding", "ls-a-p1", "options", "frobnicate",
              "--", "remove", "Port_Binding", "ls-a-p1", "external_ids", "zz-unknown")
    wait_until(lambda: sync(box) == before, timeout=30, what="br-int as before", box=box)
    print(f"\n[{kind}] malformed rows: survived, {BIG} address-set flows installed, "
          + (f"{parse_errors(box) - errors0} lflow_parse_error counted" if kind == "py" else
             "C counts no parse errors"))

import uuid

from controller.lflow_output import ExtendBridge, RefIndex
from tests.agent.fakes import FakeRow


class Refs:
    def __init__(self, **kw):
        for k in RefIndex.KINDS:
            setattr(self, k, kw.get(k, ()))


def test_ref_index_users_and_removal():
    idx = RefIndex()
    a, b = uuid.uuid4(), uuid.uuid4()
    idx.add(a, Refs(ports={"p1", "p2"}, addr_sets={"as1": 2}))
    idx.add(b, Refs(ports={"p2"}, port_groups={"1_pg"}))
    assert idx.users("ports", ["p2"]) == {a, b}
    assert idx.users("addr_sets", ["as1"]) == {a}
    assert idx.users("port_groups", ["1_pg", "x"]) == {b}
    idx.remove(a)
    assert idx.users("ports", ["p1", "p2"]) == {b}
    assert "p1" not in idx.by_res["ports"]
    idx.clear()
    assert idx.users("ports", ["p2"]) == set()


class FakeExtend:
    def __init__(self):
        self.calls = []

    def assign_id(self, name, owner, spec=None):
        self.calls.append((name, owner, spec))
        return 7

    def remove_desired(self, owner):
        self.calls.append(("remove", owner))

    def clear_desired(self):
        self.calls.append(("clear",))

    existing = {"x": FakeRow(name="x", table_id=1)}


def test_extend_bridge_parses_group_specs_once():
    parsed = []

    def parse(text):
        parsed.append(text)
        return ("spec", text)

    t = FakeExtend()
    br = ExtendBridge(t, parse)
    u = uuid.uuid4()
    assert br.assign_id("type=select,bucket=x", u) == 7
    assert br.assign_id("type=select,bucket=x", u) == 7
    assert parsed == ["type=select,bucket=x"]
    assert t.calls[0] == ("type=select,bucket=x", u, ("spec", "type=select,bucket=x"))
    br.remove_desired(u)
    br.clear_desired()
    assert t.calls[-2:] == [("remove", u), ("clear",)]
    assert br.existing["x"].table_id == 1          # other attributes delegate
    meters = ExtendBridge(FakeExtend())
    meters.assign_id("acl-meter", u)
    assert meters.table.calls[0] == ("acl-meter", u, None)

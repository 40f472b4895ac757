from controller.engine.core import (
    HANDLED_UNCHANGED,
    HANDLED_UPDATED,
    UNHANDLED,
    Engine,
    Node,
    State,
    noop_handler,
)


class Leaf:
    def __init__(self):
        self.changed = False

    def run(self, node):
        return self.changed


def build():
    a_src, b_src = Leaf(), Leaf()
    a = Node("A", a_src.run)
    b = Node("B", b_src.run)
    calls = []

    def mid_run(node):
        calls.append("mid.run")
        return True

    def mid_a(node, inp):
        calls.append("mid.A")
        return node.data["a_result"]

    mid = Node("mid", mid_run, data={"a_result": HANDLED_UPDATED})
    mid.add_input(a, mid_a)
    mid.add_input(b, None)
    root = Node("root", lambda n: calls.append("root.run") or True)
    root.add_input(mid, lambda n, i: calls.append("root.mid") or HANDLED_UPDATED)
    root.add_input(a, noop_handler)
    return Engine(root), a_src, b_src, mid, calls


def test_topological_order_inputs_first():
    eng, *_ = build()
    assert [n.name for n in eng.nodes] == ["A", "B", "mid", "root"]


def test_handler_path_and_states():
    eng, a_src, b_src, mid, calls = build()
    a_src.changed = True
    eng.init_run()
    assert eng.run(True)
    assert calls == ["mid.A", "root.mid"]
    assert mid.state is State.UPDATED and eng.node("B").state is State.UNCHANGED
    assert mid.stats.compute == 1 and mid.stats.recompute == 0
    # nothing changed: nothing called, all UNCHANGED
    calls.clear()
    a_src.changed = False
    eng.init_run()
    eng.run(True)
    assert calls == [] and eng.root.state is State.UNCHANGED


def test_missing_handler_recomputes_and_unchanged_handler_stops_propagation():
    eng, a_src, b_src, mid, calls = build()
    b_src.changed = True
    eng.init_run()
    eng.run(True)
    assert calls == ["mid.run", "root.mid"]
    assert mid.stats.recompute == 1
    calls.clear()
    b_src.changed = False
    a_src.changed = True
    mid.data["a_result"] = HANDLED_UNCHANGED
    eng.init_run()
    eng.run(True)
    assert calls == ["mid.A"]  # root's A input is a noop, mid unchanged
    assert eng.root.state is State.UNCHANGED


def test_failed_handler_falls_back_to_recompute():
    eng, a_src, b_src, mid, calls = build()
    mid.data["a_result"] = UNHANDLED
    a_src.changed = True
    eng.init_run()
    eng.run(True)
    assert calls == ["mid.A", "mid.run", "root.mid"]
    assert mid.stats.recompute == 1 and mid.stats.compute == 0


def test_abort_when_recompute_not_allowed_then_skip_until_allowed():
    eng, a_src, b_src, mid, calls = build()
    b_src.changed = True
    eng.init_run()
    assert not eng.run(recompute_allowed=False)
    assert mid.state is State.ABORTED and mid.stats.abort == 1
    assert eng.aborted
    calls.clear()
    eng.init_run()
    assert not eng.run(recompute_allowed=False)   # skipped entirely
    assert calls == []
    eng.init_run()
    assert eng.run(recompute_allowed=True)


def test_force_recompute_and_stats_text():
    eng, a_src, b_src, mid, calls = build()
    eng.trigger_recompute()
    eng.init_run()
    eng.run(True)
    assert calls == ["mid.run", "root.run"]
    eng.clear_force()
    txt = eng.show_stats()
    assert txt.startswith("Node: A\n- recompute:            1\n- compute:              0\n"
                          "- abort:                0\nNode: B\n")
    assert eng.show_stats("mid") == ("Node: mid\n- recompute:            1\n"
                                     "- compute:              0\n- abort:                0\n")
    assert eng.show_stats("mid", "recompute") == "1"
    eng.clear_stats()
    assert eng.show_stats("mid", "recompute") == "0"
    assert "A -> root" in eng.dump_graph() and "B -> mid [style=dashed]" in eng.dump_graph()

"""controller.lazy_modules: stand-ins that import the real module on first use."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller import lazy_modules
from controller.lazy_modules import DeferredModule, defer, is_loaded

ROOT = Path(__file__).resolve().parents[1]
NAME = "colorsys"       # small stdlib module nothing here imports


def _python(code: str) -> str:
    """What a fresh interpreter running `code` in the repository prints."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=120).stdout


@pytest.fixture
def fresh() -> Iterator[None]:
    saved = sys.modules.pop(NAME, None)
    yield
    sys.modules.pop(NAME, None)
    if saved is not None:
        sys.modules[NAME] = saved


def test_import_binds_the_stand_in_until_an_attribute_is_read(fresh: None) -> None:
    assert defer(NAME) == [NAME]
    import colorsys
    assert isinstance(colorsys, DeferredModule) and not is_loaded(NAME)
    assert bool(colorsys)                      # a truth test loads nothing
    assert colorsys.__file__.endswith("colorsys.py")      # nor does __file__
    assert not is_loaded(NAME)
    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert is_loaded(NAME)
    assert not isinstance(sys.modules[NAME], DeferredModule)
    # the stand-in now carries the real namespace
    assert colorsys.hsv_to_rgb is sys.modules[NAME].hsv_to_rgb
    with pytest.raises(AttributeError):
        colorsys.no_such_function  # noqa: B018


def test_from_import_loads_the_real_module(fresh: None) -> None:
    defer(NAME)
    from colorsys import rgb_to_yiq
    assert rgb_to_yiq(0.0, 0.0, 0.0) == (0.0, 0.0, 0.0)
    assert is_loaded(NAME)


def test_loaded_or_unknown_modules_are_left_alone(fresh: None) -> None:
    import json
    assert defer("json", "no_such_module_here") == []
    assert sys.modules["json"] is json


def test_the_agent_entry_point_does_not_load_ssl_or_asyncio() -> None:
    code = ("import sys, controller.cli, controller.daemon, controller.pinctrl\n"
            "from controller.lazy_modules import is_loaded\n"
            "print(is_loaded('ssl'), is_loaded('asyncio'))\n"
            "import ssl\n"
            "ssl.create_default_context()\n"
            "print(is_loaded('ssl'))\n")
    out = _python(code).split()
    assert out == ["False", "False", "True"]
    assert {"ssl", "asyncio"} <= set(lazy_modules.AGENT_DEFERRED)


def test_the_agent_command_leaves_the_deferred_modules_unloaded(tmp_path: Path) -> None:
    """``python -m controller`` (its CLI imports ovs.vlog, logging.handlers and
    structlog first thing) up to its first main-loop iteration."""
    code = ("import sys, controller.cli, controller.daemon\n"
            "from controller.lazy_modules import AGENT_DEFERRED, is_loaded\n"
            "print(sorted(n for n in AGENT_DEFERRED if is_loaded(n)))\n"
            "import pickle, structlog._output\n"
            "print(structlog._output.PicklingError is pickle.PicklingError, is_loaded('pickle'))\n"
            "print(pickle.dumps(1) == b'\\x80\\x04K\\x01.', is_loaded('pickle'))\n")
    out = _python(code).split("\n")
    assert out[:3] == ["[]", "True False", "True True"]
    assert {"pickle", "datetime", "queue", "sortedcontainers"} <= set(lazy_modules.AGENT_DEFERRED)


def test_from_import_of_a_placeholder_loads_nothing(fresh: None) -> None:
    spec = importlib.util.find_spec(NAME)
    sys.modules[NAME] = DeferredModule(NAME, spec, {"marker": 1})
    from colorsys import marker  # type: ignore[attr-defined]
    assert marker == 1 and not is_loaded(NAME)
    assert not hasattr(sys.modules[NAME], "__path__") and not is_loaded(NAME)


def test_placeholders_answer_without_loading(fresh: None) -> None:
    lazy_modules.PLACEHOLDERS[NAME] = {"ONE_THIRD": 0.5}
    try:
        defer(NAME)
        import colorsys
        assert colorsys.ONE_THIRD == 0.5 and not is_loaded(NAME)
        colorsys.rgb_to_hls(0.0, 0.0, 0.0)
        assert colorsys.ONE_THIRD == 1.0 / 3.0      # the real value after loading
    finally:
        del lazy_modules.PLACEHOLDERS[NAME]


def test_ovs_poller_registers_fds_without_loading_ssl() -> None:
    code = ("import socket, controller.cli\n"
            "import ovs.poller\n"
            "from controller.lazy_modules import is_loaded\n"
            "a, b = socket.socketpair()\n"
            "p = ovs.poller.Poller()\n"
            "p.fd_wait(a, ovs.poller.POLLIN)\n"
            "p.timer_wait(0)\n"
            "p.block()\n"
            "print(is_loaded('ssl'))\n")
    out = _python(code).split()
    assert out == ["False"]


def test_run_daemon_blocks_ovs_compiled_json_before_the_daemon_loads(tmp_path: Path) -> None:
    code = ("import sys, types, controller.cli\n"
            "mod = types.ModuleType('controller.daemon')\n"
            "def run(opts):\n"
            "    print(sys.modules.get('ovs._json', 'absent'))\n"
            "    return 0\n"
            "mod.run = run\n"
            "sys.modules['controller.daemon'] = mod\n"
            f"sys.exit(controller.cli.main(['unix:/nowhere', '--log-file={tmp_path}/a.log',\n"
            "                               '-vconsole:off']))\n")
    out = _python(code).split()
    assert out == ["None"]


def test_the_agent_parses_json_rpc_without_ovs_compiled_json() -> None:
    code = ("import sys, controller.cli\n"
            "controller.lazy_modules.block(*controller.lazy_modules.AGENT_BLOCKED)\n"
            "import controller.daemon, ovs.json\n"
            "print(sys.modules['ovs._json'], ovs.json.PARSER, type(ovs.json.Parser()).__name__)\n"
            "try:\n"
            "    import ovs._json\n"
            "except ImportError:\n"
            "    print('blocked')\n")
    out = _python(code).split()
    assert out == ["None", "PYTHON", "FramedParser", "blocked"]


def test_block_leaves_imported_modules_alone() -> None:
    assert lazy_modules.block("json") == []
    assert sys.modules["json"] is not None


# ---------------------------------------------------------------- pinctrl
_PINCTRL_LAZY = ("controller.pinctrl.handlers_state", "controller.pinctrl.handlers_l3",
                 "controller.pinctrl.handlers_l7", "controller.pinctrl.svc_monitor",
                 "controller.pinctrl.bfd_router", "controller.pinctrl.prefix_delegation",
                 "controller.pinctrl.mcast", "controller.pinctrl.garp", "controller.pinctrl.ra",
                 "controller.pinctrl.igmp")


def test_pinctrl_start_leaves_handlers_and_periodic_services_unloaded() -> None:
    """The agent's Pinctrl, run on a chassis without GARP/RA/BFD/PD/IGMP/LB
    health-check inputs, loads none of those modules; a packet-in of an
    opcode then loads its handler (and builds the state it works on)."""
    code = (
        "import sys\n"
        "from types import SimpleNamespace\n"
        "from controller.pinctrl.agent import Pinctrl\n"
        "from tests.pinctrl.test_core_agent import FakeService, fake_sb, idx\n"
        "from controller.diag.coverage import Coverage\n"
        "svc = FakeService()\n"
        "p = Pinctrl(Coverage(), threaded=False, service=svc)\n"
        "tables = {n: {} for n in ('MAC_Binding', 'FDB', 'Controller_Event', 'Port_Binding',\n"
        "          'Service_Monitor', 'BFD', 'IP_Multicast', 'IGMP_Group')}\n"
        "tables['IP_Multicast'][1] = SimpleNamespace(enabled=[False])   # northd's default\n"
        "p.run('unix:x', fake_sb(object(), tables), idx(), SimpleNamespace(uuid=1, name='hv1'), {})\n"
        f"print(sorted(m for m in {_PINCTRL_LAZY!r} if m in sys.modules), len(svc.periodic))\n"
        "from controller.pinctrl import registry\n"
        "from controller.lflow.actions import base as ab\n"
        "from controller.pinctrl.packet_in import decode_packet_in2\n"
        "from tests.pinctrl.test_core import sample, userdata\n"
        "out = registry.dispatch(decode_packet_in2(sample(userdata=userdata(ab.OP_BFD_MSG, b''))),\n"
        "                        p.service.view)\n"
        "print('controller.pinctrl.bfd_router' in sys.modules, p._bfd is not None,\n"
        "      svc.periodic == [p.bfd], 'controller.pinctrl.mcast' in sys.modules)\n")
    out = _python(code).split("\n")
    assert out[0] == "[] 0"
    assert out[1] == "True True True False"


def test_pinctrl_handler_table_matches_what_the_modules_register() -> None:
    import controller.pinctrl as pinctrl
    from controller.pinctrl import registry
    registry.load_all()
    for module, opcodes in pinctrl.HANDLER_MODULES.items():
        registered = sorted(op for op, fn in registry.REGISTRY.items() if fn.__module__ == module)
        assert registered == sorted(opcodes), module
    modules = {fn.__module__ for fn in registry.REGISTRY.values()}
    assert modules <= set(pinctrl.HANDLER_MODULES) | {"tests.pinctrl.test_core"}

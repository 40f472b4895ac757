"""Standard-library modules the agent imports but rarely uses, loaded on first use.

Design note
-----------
Two modules arrive with libraries the agent needs at start and are not used
by an agent whose remotes are ``unix:``/``tcp:``: ``ssl`` (``ovs.stream``
imports it for its ``ssl:`` stream class, :mod:`controller.ovsdb.stream_ssl` for
its own) and ``asyncio`` (``structlog.stdlib`` imports it for its async
logger methods). Loading them costs about 4 MiB of RSS per agent (OpenSSL's
libraries and asyncio's modules; measured in issue 16's notes), which counts
when hundreds of agents run. Four more come with ``ovs.vlog``,
``logging.handlers``, ``structlog`` and ``ovs.db.custom_index`` and serve
nothing the running agent does (pickling, ``datetime`` timestamps of the OVS
logger, queue handlers, sorted IDL indexes): ``pickle``, ``datetime``,
``queue``, ``sortedcontainers`` (together ~0.5 MiB: VmRSS of a fresh
interpreter after importing the daemon, 25.7 -> 25.1 MiB, three runs each).

:func:`defer` puts a :class:`DeferredModule` into ``sys.modules`` before
those libraries are imported. ``import ssl`` then binds the stand-in (its
``__spec__`` is the real module's spec, not initialising, so the import
system takes it as loaded); the first attribute read that the stand-in does
not have (``ssl.SSLContext``, ``from ssl import X``, a submodule import that
needs ``__path__``) imports the real module, copies its namespace into the
stand-in and puts the real module back into ``sys.modules``. Code that
holds the stand-in keeps working: it then has all the real attributes.
Truth tests (``if ssl:``) do not load anything. Placeholders answer reads
that must not load the module: ``ovs.poller`` checks ``isinstance(fd,
ssl.SSLSocket)`` on every fd it registers, so the ``ssl`` stand-in carries an
``SSLSocket`` class that nothing is an instance of (no real SSL socket can
exist before ``ssl`` is loaded; loading replaces it with the real class).
``structlog`` does ``from pickle import PicklingError``: the ``pickle``
stand-in carries that class, the very one ``pickle`` exports (``_pickle``'s),
and a stand-in of a plain module answers ``__path__`` (which ``from X import
Y`` asks for) with AttributeError instead of loading.
A module that is already
imported, or that cannot be found, is left alone. :mod:`controller.cli`
imports this module first; importing it defers :data:`AGENT_DEFERRED`.

:func:`block` is for a module that must never load in the agent: a ``None``
entry in ``sys.modules`` makes ``import`` raise ImportError.
``controller.cli.run_daemon`` blocks :data:`AGENT_BLOCKED` before it imports
the daemon.  ``ovs._json``
(the OVS library's compiled JSON parser, with the shared libraries it links:
~1.1 MiB of a small agent's RSS) is blocked; ``ovs.json`` then takes its Python flavour,
and :mod:`controller.ovsdb.json_stream` supplies the parser ``ovs.jsonrpc``
uses, on the interpreter's own C JSON decoder.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_lock = threading.RLock()


class DeferredModule(types.ModuleType):
    """A stand-in for a module that is imported on first attribute access."""

    def __init__(self, name: str, spec: Any, placeholders: dict[str, Any] | None = None) -> None:
        super().__init__(name)
        self.__spec__ = spec
        self.__loader__ = spec.loader
        if spec.has_location:
            # inspect.getmodule() scans sys.modules for __file__: answer it
            self.__file__ = spec.origin
        self.__dict__.update(placeholders or {})

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes the stand-in does not have yet.
        name = self.__name__
        spec = self.__spec__
        if attr == "__path__" and spec is not None and spec.submodule_search_locations is None:
            # not a package (``from X import Y`` asks): nothing to load for that
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        with _lock:
            if sys.modules.get(name) is self:
                del sys.modules[name]
                try:
                    real = importlib.import_module(name)
                except BaseException:
                    sys.modules[name] = self
                    raise
                self.__dict__.update(real.__dict__)
            real = sys.modules.get(name, self)
        if real is self:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        return getattr(real, attr)


class _NoInstances:
    """A placeholder class: a type check against it is False for everything."""


def _pickle_placeholders() -> dict[str, Any]:
    # pickle's exception classes are _pickle's (pickle.py re-exports them)
    try:
        import _pickle
    except ImportError:
        return {}
    return {"PicklingError": _pickle.PicklingError}


# name -> {attribute: placeholder value} read without loading the module
PLACEHOLDERS: dict[str, dict[str, Any]] = {"ssl": {"SSLSocket": _NoInstances},
                                           "pickle": _pickle_placeholders()}


def defer(*names: str) -> list[str]:
    """Install stand-ins for `names`; returns the names actually deferred."""
    done = []
    with _lock:
        for name in names:
            if name in sys.modules:
                continue
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                continue
            sys.modules[name] = DeferredModule(name, spec, PLACEHOLDERS.get(name))
            done.append(name)
    return done


def block(*names: str) -> list[str]:
    """Make `names` unimportable (ImportError) unless already imported; returns those blocked."""
    done = []
    with _lock:
        for name in names:
            if name not in sys.modules:
                sys.modules[name] = None  # type: ignore[assignment]
                done.append(name)
    return done


def is_loaded(name: str) -> bool:
    """True once `name` is the real module (not a waiting stand-in)."""
    return name in sys.modules and not isinstance(sys.modules[name], DeferredModule)


# Deferred by importing this module (controller.cli does, before anything else).
AGENT_DEFERRED = ("ssl", "asyncio", "pickle", "datetime", "queue", "sortedcontainers")
DEFERRED = defer(*AGENT_DEFERRED)
# Blocked by controller.cli.run_daemon, before it imports the daemon (not on
# import: a test process keeps the library's parsers as they are).
AGENT_BLOCKED = ("ovs._json",)

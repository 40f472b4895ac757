"""Compiled dataclass methods kept next to the package's bytecode.

Design note
-----------
``@dataclass`` writes the source of each generated method (``__init__``,
``__repr__``, ``__eq__``, frozen ``__setattr__``...) and compiles it with
``exec``, at every import: the agent's ~150 dataclasses make ~800 such
compiles, about 60 ms of a ~160 ms import (issue 16; measured with
``benchmarks.small_agent``'s import figure), more than unmarshalling all the
agent's modules.

:func:`install` puts an ``exec`` into the ``dataclasses`` module's globals
(it shadows the builtin only there): a source text already seen runs from its
code object, compiled once as the builtin would (filename ``<string>``, no
inherited ``__future__`` flags); anything that is not a text goes to the
builtin unchanged.  The same text always compiles to the same code, so the
cache key is the text itself and a stale entry cannot exist.

:func:`save` writes the texts compiled since :func:`install` with their code
(marshal, headed by the interpreter's bytecode magic number) to
``dataclass-fns.<tag>.bin`` in the ``__pycache__`` of this package (or under
``sys.pycache_prefix``), atomically (temp file + rename), and not at all
when bytecode writing is off.  :func:`install` loads that file if its magic
matches; a missing, unreadable or foreign file only means compiling.  The
file is trusted as the ``.pyc`` files beside it are.  ``controller.cli``
imports this module (which installs) before any dataclass of ours exists;
``run_daemon`` calls :func:`finish` once the daemon is imported: save, then
the builtin ``exec`` again and the cache dropped (what is imported later,
pinctrl at its start, compiles as usual).
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
import threading
from types import CodeType
from typing import Any

_lock = threading.Lock()
_cache: dict[str, CodeType] = {}
_new: dict[str, CodeType] = {}
_installed = False


def cache_path() -> str | None:
    """Where the file goes (None: no bytecode location for this package)."""
    try:
        pyc = importlib.util.cache_from_source(os.path.join(os.path.dirname(__file__),
                                                            "__init__.py"))
    except NotImplementedError:      # no cache_tag
        return None
    tag = sys.implementation.cache_tag
    return os.path.join(os.path.dirname(pyc), f"dataclass-fns.{tag}.bin")


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    if isinstance(source, str) and not kwargs:
        code = _cache.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            with _lock:
                _cache[source] = _new[source] = code
        source = code
    builtins.exec(source, globals, locals, **kwargs)


def _load(path: str) -> dict[str, CodeType]:
    try:
        with open(path, "rb") as f:
            magic = f.read(len(importlib.util.MAGIC_NUMBER))
            if magic != importlib.util.MAGIC_NUMBER:
                return {}
            data = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, CodeType)}


def install() -> None:
    """Route ``dataclasses``' exec through the cache (idempotent)."""
    global _installed
    if _installed:
        return
    path = cache_path()
    if path is not None:
        _cache.update(_load(path))
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    _installed = True


def save() -> bool:
    """Write the cache if texts were compiled since it was loaded; True if written."""
    path = cache_path()
    with _lock:
        if not _new or path is None or sys.dont_write_bytecode:
            return False
        data = dict(_cache)
        _new.clear()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER)
            marshal.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def finish() -> bool:
    """:func:`save`, then give ``dataclasses`` its builtin exec back and drop the
    cache (its texts and wrapper code are ~0.7 MiB the agent no longer needs).
    True if the file was written."""
    global _installed
    written = save()
    with _lock:
        if _installed:
            del dataclasses.exec  # type: ignore[attr-defined]
            _installed = False
        _cache.clear()
        _new.clear()
    return written

install()

"""controller.dataclass_cache: dataclass methods compiled once, kept beside the bytecode."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller import dataclass_cache as dc


@pytest.fixture
def cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "sub" / "dataclass-fns.bin"
    monkeypatch.setattr(dc, "cache_path", lambda: str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    saved = dict(dc._cache), dict(dc._new), dc._installed
    dc._cache.clear()
    dc._new.clear()
    dc.install()
    yield path
    dc._cache.clear()
    dc._cache.update(saved[0])
    dc._new.clear()
    dc._new.update(saved[1])
    if not saved[2] and dc._installed:
        del dataclasses.exec  # type: ignore[attr-defined]
        dc._installed = False


def _make_classes() -> tuple[type, type]:
    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass(slots=True)
    class Box:
        items: list[int] = dataclasses.field(default_factory=list)
        name: str = "b"

    return Point, Box


def _behaviour(point: type, box: type) -> list[object]:
    p, q = point(1, 2), point(1, 3, ("a",))
    b = box()
    b.items.append(4)
    out: list[object] = [repr(p), repr(q), p == point(1, 2), p < q, hash(p) == hash(point(1, 2)),
                         repr(b), b == box([4]), box().items is not box().items]
    try:
        p.x = 5  # type: ignore[misc]
    except dataclasses.FrozenInstanceError as e:
        out.append(type(e).__name__)
    return out


def test_cached_methods_behave_as_compiled_ones(cache_file: Path) -> None:
    first = _behaviour(*_make_classes())           # compiled, recorded
    assert dc._new
    assert dc.save() and cache_file.exists()
    recorded = len(dc._cache)
    dc._cache.clear()
    dc._cache.update(dc._load(str(cache_file)))
    assert len(dc._cache) == recorded
    before = dict(dc._cache)
    assert _behaviour(*_make_classes()) == first   # from the cache
    assert not dc._new and dc._cache == before      # nothing compiled again
    assert first[-1] == "FrozenInstanceError"


def test_no_file_without_new_texts_or_when_bytecode_writing_is_off(
        cache_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not dc.save()
    _make_classes()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not dc.save() and not cache_file.exists()


@pytest.mark.parametrize("content", [b"", b"junk", importlib.util.MAGIC_NUMBER + b"\x00garbage",
                                     b"\x00\x00\x00\x00" + b"x" * 20])
def test_bad_or_foreign_files_are_ignored(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(content)
    assert dc._load(str(path)) == {}
    assert dc._load(str(tmp_path / "missing.bin")) == {}


def test_finish_gives_dataclasses_the_builtin_exec_back(cache_file: Path) -> None:
    assert dataclasses.exec is dc._exec  # type: ignore[attr-defined]
    _make_classes()
    assert dc.finish() and cache_file.exists()
    assert "exec" not in vars(dataclasses) and not dc._cache
    assert _behaviour(*_make_classes())[-1] == "FrozenInstanceError"   # builtin again


def test_non_text_sources_pass_through(cache_file: Path) -> None:
    ns: dict[str, object] = {}
    dc._exec(compile("v = 1", "<x>", "exec"), ns)
    assert ns["v"] == 1 and not dc._new


def test_the_agent_entry_point_installs_it() -> None:
    code = ("import dataclasses, controller.cli\n"
            "from controller import dataclass_cache\n"
            "print(dataclasses.exec is dataclass_cache._exec)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["True"]

"""What the agent's code can do to the host, checked on its source (issue 12, point 8).

Nothing the Southbound or a packet says may make the agent run a command or
write a file: the agent never imports a way to run programs, and every place
that opens a file for writing is in the list below, each fed only by the
operator (command line or environment), never by a database row or packet.
A new writer must be added here with its reason, so a review sees it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "ofctrl", "physical")

# module -> reason; the only modules allowed to open files for writing
WRITERS = {
    "controller/cli.py": "the --pidfile (path from the command line)",
    "controller/vlog.py": "the --log-file and vlog/reopen (path from the command line)",
    "controller/daemon.py": "OVN_CONTROLLER_PY_TIMELINE (path from the environment, dev aid)",
    "controller/daemon_profile.py": "OVN_CONTROLLER_PY_PROFILE (path from the environment, dev aid)",
    "controller/dataclass_cache.py": "compiled dataclass methods in the package's __pycache__ "
                                     "(as the interpreter's .pyc files; not under -B)",
}
FORBIDDEN_MODULES = {"subprocess", "pty", "shlex", "multiprocessing"}
FORBIDDEN_CALLS = {("os", n) for n in ("system", "popen", "execv", "execve", "execvp",
                                       "execvpe", "execl", "execle", "execlp", "spawnv",
                                       "spawnve", "posix_spawn", "posix_spawnp", "fork")}
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _sources() -> list[Path]:
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    assert len(files) > 50, files          # the walk found the packages
    return files


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _opens_for_writing(tree: ast.AST) -> list[int]:
    """Line numbers of open(..., 'w'/'a'/'x'/'+'), os.open with write flags,
    Path.write_text/write_bytes, a profile's dump_stats and the os calls that
    make or move directory entries."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "open" and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == "os":
            flags = {n.attr for a in node.args[1:2] for n in ast.walk(a)
                     if isinstance(n, ast.Attribute)}
            if flags & WRITE_FLAGS:
                lines.append(node.lineno)
        elif name == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) \
                    and set(mode.value) & set("wax+"):
                lines.append(node.lineno)
            elif mode is not None and not isinstance(mode, ast.Constant):
                lines.append(node.lineno)        # a computed mode counts as a writer
        elif name in ("write_text", "write_bytes", "dump_stats"):
            lines.append(node.lineno)
        elif name in ("mkfifo", "mknod", "symlink", "link", "rename", "replace") \
                and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == "os":
            lines.append(node.lineno)
    return lines


def test_the_scan_sees_writers_and_commands() -> None:
    """The checks below would notice the things they look for."""
    tree = ast.parse("import subprocess\nopen(p, 'w')\nos.open(p, os.O_CREAT)\n"
                     "Path(p).write_text('x')\nos.system('x')\nopen(p)\nos.rename(a, b)\n"
                     "flow.link(d)\n")
    assert _opens_for_writing(tree) == [2, 3, 4, 7]
    assert _forbidden(tree) == ["import subprocess", "os.system"]


def _forbidden(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names
                      if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module \
                and node.module.split(".")[0] in FORBIDDEN_MODULES:
            found.append(f"from {node.module} import")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and (node.func.value.id, node.func.attr) in FORBIDDEN_CALLS:
            found.append(f"{node.func.value.id}.{node.func.attr}")
    return found


@pytest.mark.parametrize("path", _sources(), ids=_rel)
def test_no_module_runs_programs(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    rel = _rel(path)
    found = _forbidden(tree)
    if rel == "controller/cli.py":
        # --detach / --monitor fork the daemon itself (as OVS's daemon library)
        found = [f for f in found if f != "os.fork"]
    assert not found, f"{rel}: {found}"


@pytest.mark.parametrize("path", _sources(), ids=_rel)
def test_only_listed_modules_write_files(path: Path) -> None:
    rel = _rel(path)
    lines = _opens_for_writing(ast.parse(path.read_text(), str(path)))
    if rel in WRITERS:
        return
    assert not lines, (f"{rel} opens files for writing at lines {lines}: "
                       "add it to WRITERS with where its path comes from")


def test_every_listed_writer_still_writes() -> None:
    """A stale entry would hide a new writer in the same module."""
    for rel in WRITERS:
        p = ROOT / rel
        assert p.exists(), rel
        assert _opens_for_writing(ast.parse(p.read_text())), f"{rel} no longer writes"

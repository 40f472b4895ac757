"""seed-N snapshots for the cold-start benchmarks (restart, wipe, scaling).

Design note
-----------
A snapshot is a directory with ``nb.db`` and ``sb.db`` (either may be
gzipped: ``sb.db.gz`` is accepted) and optionally ``conf.db``, as written by
``Sandbox.backup``. ``/work/shared/reference-data/seed-500`` has NB and SB but
no conf.db (it contained machine paths); for such a directory the 2N seed VIFs
``s<i>p<1|2>`` (iface-id ``ls<i>-p<1|2>``) are bound on br-int after the
sandbox started, which is what ``build_seed`` does too. ``--snapshot-cache
DIR`` keeps built snapshots as ``DIR/seed-N`` so that later runs (another
mode, another size) reuse them instead of building again.

:func:`precompile_agent` writes the agent's bytecode before any agent starts:
an installed agent has its ``.pyc`` files (pip and Debian compile them), but
with ``PYTHONDONTWRITEBYTECODE=1`` in the environment (as on the shared
development machine) every agent start would compile all its modules from
source again, about 0.6 s of CPU and 2 MiB per start that no deployment pays.
"""

from __future__ import annotations

import compileall
import time
from pathlib import Path

from integration.sandbox import REPO_ROOT, Sandbox, SandboxError
from integration.topologies import SEED_ROUTERS_PER_CALL, build_seed


def snapshot_files(directory: Path) -> dict[str, Path]:
    """nb/sb/conf files of a snapshot directory (conf may be missing)."""
    files: dict[str, Path] = {}
    for key in ("nb", "sb", "conf"):
        for name in (f"{key}.db", f"{key}.db.gz"):
            if (directory / name).is_file():
                files[key] = directory / name
                break
    if "nb" not in files or "sb" not in files:
        raise SandboxError(f"snapshot {directory}: needs nb.db and sb.db[.gz]")
    return files


def build_snapshot(n: int, out: Path) -> dict[str, Path]:
    """seed-N built with northd and backed up into `out`."""
    t0 = time.monotonic()
    with Sandbox(northd=True) as box:
        build_seed(box, n)
        files = box.backup(out)
    print(f"snapshot: seed-{n} built with northd and backed up in "
          f"{time.monotonic() - t0:.1f} s ({out})", flush=True)
    return files


def get_snapshot(n: int, snapshot: Path | None, cache: Path | None,
                 scratch: Path) -> tuple[dict[str, Path], str]:
    """The files for seed-N and where they came from (for the results JSON)."""
    if snapshot is not None:
        return snapshot_files(snapshot), str(snapshot)
    if cache is not None:
        cached = cache / f"seed-{n}"
        try:
            return snapshot_files(cached), str(cached)
        except SandboxError:
            return build_snapshot(n, cached), f"built in this run, kept in {cached}"
    return build_snapshot(n, scratch / f"seed-{n}"), "built in this run"


def bind_seed_vifs(box: Sandbox, n: int) -> None:
    box.bind_vifs(((f"s{i}p{p}", f"ls{i}-p{p}") for i in range(1, n + 1) for p in (1, 2)),
                  batch=2 * SEED_ROUTERS_PER_CALL)


def open_sandbox(files: dict[str, Path], n: int, *, northd: bool = False) -> Sandbox:
    """A started sandbox replaying the snapshot; binds the VIFs if conf.db is missing."""
    box = Sandbox.from_snapshot(files["nb"], files["sb"], files.get("conf"), northd=northd)
    if "conf" not in files:
        try:
            bind_seed_vifs(box, n)
        except BaseException:
            box.stop()
            raise
    return box


AGENT_PACKAGES = ("controller", "ofctrl", "physical")


def precompile_agent() -> str:
    """Compile the agent's packages to ``__pycache__`` (what an install does)."""
    ok = all(compileall.compile_dir(str(REPO_ROOT / pkg), quiet=1)
             for pkg in AGENT_PACKAGES)
    return ("agent bytecode precompiled (compileall) before the runs" if ok
            else "compileall failed for part of the agent: some modules compile at start")

"""Environment snapshots for tests: every path under a venv with its sha256 (or kind)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

WH = Path(sys.executable).parent / "wh"
# wh's own lock and pid files: they are expected to exist after a wh run
IGNORED = (".wh-install.lock", ".wh-install.lock.pid")


def snapshot(venv: Path) -> dict[str, str]:
    """relpath -> sha256 for files, 'dir' for folders, 'link:TARGET' for symlinks."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(venv):
        base = Path(dirpath)
        for d in dirnames:
            p = base / d
            rel = p.relative_to(venv).as_posix()
            out[rel] = f"link:{os.readlink(p)}" if p.is_symlink() else "dir"
        for f in filenames:
            p = base / f
            rel = p.relative_to(venv).as_posix()
            if rel in IGNORED:
                continue
            if p.is_symlink():
                out[rel] = f"link:{os.readlink(p)}"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Human-readable differences, empty when equal."""
    out = [f"removed {k}" for k in sorted(set(before) - set(after))]
    out += [f"added {k}" for k in sorted(set(after) - set(before))]
    out += [f"changed {k}" for k in sorted(set(before) & set(after)) if before[k] != after[k]]
    return out


def make_venv(path: Path) -> Path:
    """A real venv without pip (fast): wh installs through uv --python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages")) or [venv / "Lib" / "site-packages"]
    return found[0]


def wh(
    *args: str | Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run the real `wh` console script."""
    full = dict(os.environ)
    full.pop("VIRTUAL_ENV", None)
    full.setdefault("WH_CACHE_DIR", str(cwd / ".wh-cache"))
    full.update(env or {})
    return subprocess.run(
        [*prefix, str(WH), *map(str, args)],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Scene:
    """A real venv and a wheelhouse under ``root``; ``settle`` installs into it and takes
    the snapshot that ``unchanged`` compares with."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.house = root / "house"
        self.venv = make_venv(root / "venv")
        self.before: dict[str, str] = {}

    def settle(self, requirement: str, lockfile: str) -> None:
        done = self.wh("install", "-r", requirement, "--lockfile", self.root / lockfile)
        assert done.returncode == 0, done.stderr
        self.before = snapshot(self.venv)

    def wh(self, *args: str | Path, house: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`wh` in ``root``; install and lock get this scene's venv and a wheelhouse."""
        extra: list[str | Path] = []
        if args[0] in ("install", "lock"):
            extra = ["--wheelhouse", house or self.house, "--python", self.venv]
        return wh(*args, *extra, cwd=self.root)

    def unchanged(self) -> None:
        """The venv is byte-for-byte as settled, with no install journal left."""
        assert diff(self.before, snapshot(self.venv)) == []
        assert not (self.venv / ".wh-journal").exists()


@contextmanager
def restored(venv: Path, scratch: Path) -> Iterator[None]:
    """``venv`` put back as it is now after the block, from a copy under ``scratch`` (a
    venv cannot be moved: its path is in its scripts)."""
    saved = scratch / "saved"
    shutil.copytree(venv, saved, symlinks=True)
    yield
    shutil.rmtree(venv)
    shutil.copytree(saved, venv, symlinks=True)

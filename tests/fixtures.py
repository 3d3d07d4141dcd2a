"""Shared fixtures: isolated caches, real venvs, `wh` run as a real subprocess, and no network."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from wh.env.environment import venv_python
from wh.install.backend import UvBackend, uv_binary
from wh.wheel import natives as nat
from wh.wheel.natives import Binary

from tests.envsnap import WH

# a command after this runs in a network namespace of its own: no network at all
NONET = ["unshare", "-n", "--"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("WH_CACHE_DIR")
    os.environ["WH_CACHE_DIR"] = str(tmp_path_factory.mktemp("wh-cache"))
    yield
    if old is None:
        os.environ.pop("WH_CACHE_DIR", None)
    else:
        os.environ["WH_CACHE_DIR"] = old


def make_venv(path: Path, wheels: Sequence[Path] = ()) -> Path:
    """A real venv (no pip inside) with ``wheels`` installed by real uv; returns its python."""
    from tests.envsnap import make_venv as bare_venv

    python = venv_python(bare_venv(path))
    if wheels:
        uv = uv_binary()
        assert uv is not None
        UvBackend(uv).install(python, list(wheels), link_mode="copy", reinstall=False)
    return python


@pytest.fixture
def new_venv(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(wheels: Sequence[Path] = ()) -> Path:
        return make_venv(tmp_path / f"venv{next(counter)}", wheels)

    return make


def tool(name: str) -> ModuleType:
    """The module ``tools/NAME.py`` (the repository's maintenance scripts are no package)."""
    path = Path(__file__).parents[1] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def members_read(house: Path) -> Iterator[tuple[str, str, Binary, bytes]]:
    """Each library member of each wheel in ``house``, read as ``wh lock`` reads it (from
    the wheel's bytes, without a problem), with its whole bytes for an oracle to parse:
    (the wheel's file name, the member, what wh read, the bytes)."""
    for wheel in sorted(house.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            by_path = {nat.installed_path(n): n for n in zf.namelist()}
            for m in nat.wheel_members(wheel):
                got = nat.read_member(m.path, m.size, m.open)
                assert got is not None and not got.problem, (wheel.name, m.path, got)
                yield wheel.name, m.path, got, zf.read(by_path[m.path])


def lock_json(
    house: Path, roots: Iterable[str], *flags: str | Path
) -> tuple[int, dict[str, Any], str]:
    """``wh lock --json`` of ``roots`` from ``house`` (the lock file beside it): its exit
    code, its JSON document ({} where none) and its stderr."""
    r = run_wh(
        "lock",
        *[a for name in roots for a in ("-r", name)],
        "--wheelhouse",
        house,
        "--lockfile",
        house.parent / "pylock.toml",
        "--json",
        *flags,
    )
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr


def run_wh(
    *args: str | Path, cwd: Path | None = None, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run the installed `wh` console script for real."""
    return subprocess.run(
        [*prefix, str(WH), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=600,
    )


def site_snapshot(python: Path) -> dict[str, str]:
    """Every path of a venv with its sha256 (tests.envsnap), bytecode caches left out."""
    from tests.envsnap import snapshot

    full = snapshot(python.parent.parent)
    return {k: v for k, v in full.items() if "__pycache__" not in k.split("/")}


@pytest.fixture(scope="session")
def no_network() -> list[str]:
    """The prefix that runs a command with no network (``NONET``); skips the test where no
    network namespace can be made (``unshare -n`` needs root)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run([*NONET, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace (needs root): {probe.stderr.strip()}")
    return NONET


def bootstrap_offline(
    no_network: Sequence[str], script: Path, target: Path, python: Path, cache: Path
) -> subprocess.CompletedProcess[str]:
    """A bundle's ``install.sh`` run with no network, unsigned, into the venv ``target``:
    ``python`` as its base interpreter, ``cache`` as wh's cache, only /usr/bin:/bin on PATH and
    none of this process's PIP_, UV_ or VIRTUAL settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL"))}
    env.update(PYTHON=str(python), WH_CACHE_DIR=str(cache), PATH="/usr/bin:/bin")
    return subprocess.run(
        [*no_network, "sh", str(script), str(target), "--allow-unsigned"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )

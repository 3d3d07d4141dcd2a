"""The import package is ``wh``: no ``installer`` to import, and pypa's installer (the
import name Poetry, PDM and hatch depend on) installs beside wh with both intact."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _env_without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _python(python: str | Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run by ``python`` in ``cwd``, with no PYTHONPATH: its own imports only."""
    return subprocess.run(
        [python, "-c", code],
        cwd=cwd,
        env=_env_without_pythonpath(),
        capture_output=True,
        text=True,
        check=False,
    )


def test_import_installer_fails_in_whs_environment(tmp_path: Path) -> None:
    """Outside the repository (where the folder ``installer/`` would import as a namespace
    package), wh's environment has wh and no ``installer``."""
    done = _python(sys.executable, "import installer", tmp_path)
    assert done.returncode != 0
    assert "No module named 'installer'" in done.stderr, done.stderr
    wh = _python(sys.executable, "import wh.cli.main, wh; print(wh.__file__)", tmp_path)
    assert wh.returncode == 0, wh.stderr
    assert Path(wh.stdout.strip()).parent.name == "wh"


def _pip(*args: str | Path, cwd: Path, offline: bool = False) -> str:
    env = _env_without_pythonpath()
    if offline:
        env["PIP_CONFIG_FILE"] = os.devnull
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"pip {' '.join(map(str, args))}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _record(site: Path, dist: str) -> list[str]:
    (info,) = site.glob(f"{dist}-*.dist-info")
    with (info / "RECORD").open(encoding="utf-8", newline="") as f:
        return [row[0] for row in csv.reader(f) if row]


@pytest.mark.slow
@pytest.mark.network  # pypa's installer and wh's dependencies come from pip's configured index
def test_wh_installs_beside_pypas_installer_and_both_stay_intact(tmp_path: Path) -> None:
    # wh's wheel, built from a copy of the sources (a build in the checkout leaves build/)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "installer",
        src / "installer",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    dist = tmp_path / "dist"
    _pip("wheel", "--no-deps", "-q", "-w", dist, src, cwd=tmp_path)
    (wh_wheel,) = dist.glob("wh-*.whl")
    _pip("download", "--no-deps", "-q", "-d", dist, "installer", cwd=tmp_path)
    (installer_wheel,) = dist.glob("installer-*.whl")
    _pip("download", "-q", "-d", dist, wh_wheel, cwd=tmp_path)  # wh's dependencies

    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    python = target / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    offline = ("--no-index", "--isolated", "--find-links", dist)
    # as next to Poetry: pypa's installer is there first, then wh joins it
    _pip("--python", python, "install", "-q", *offline, installer_wheel, cwd=tmp_path, offline=True)
    _pip("--python", python, "install", "-q", *offline, wh_wheel, cwd=tmp_path, offline=True)
    _pip("--python", python, "check", cwd=tmp_path, offline=True)

    probe = _python(
        python,
        "import installer, installer.sources, wh, wh.cli.main\n"
        "print(installer.__version__, callable(installer.install))\n"
        "print(installer.__file__)\nprint(wh.__file__)",
        tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    version_line, installer_file, wh_file = probe.stdout.splitlines()
    assert version_line == f"{installer_wheel.name.split('-')[1]} True"
    site = Path(installer_file).parent.parent
    assert site.parent.parent.parent == target or site.parent.parent == target
    assert Path(wh_file).parent.parent == site

    wh_files = _record(site, "wh")
    assert [f for f in wh_files if f.startswith("installer/")] == []
    assert any(f.startswith("wh/") for f in wh_files)
    # both distributions' files are all in place
    for name in ("installer", "wh"):
        missing = [f for f in _record(site, name) if not (site / f).exists()]
        assert missing == [], f"{name}: files gone: {missing}"

"""`make demo`: build the demo wheelhouse from demo/packages; lock, install, verify offline."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import tomllib
from wh.env.environment import venv_python
from wh.install.backend import choose
from wh.wheel.writer import write_wheel

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "demo-out"
PREINSTALLED = "demo-torch-cu130"


def build_wheel(src: Path, out_dir: Path) -> Path:
    """Turn one demo/packages/<dir> (package.toml + sources) into a real wheel."""
    meta = tomllib.loads((src / "package.toml").read_text(encoding="utf-8"))
    files = {
        p.relative_to(src).as_posix(): p.read_bytes()
        for p in sorted(src.rglob("*"))
        if p.is_file() and p.name != "package.toml" and "__pycache__" not in p.parts
    }
    return write_wheel(
        out_dir, meta["name"], meta["version"], files, requires_dist=meta.get("requires", [])
    )


def wh(*args: str | Path, expect: int = 0, offline: bool = True) -> None:
    cmd = [str(Path(sys.executable).with_name("wh")), *map(str, args)]
    if offline and shutil.which("unshare"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
        if probe.returncode == 0:  # a network namespace with no network: proof, not promise
            cmd = ["unshare", "-n", *cmd]
    print(f"\n$ {' '.join(cmd)}", flush=True)
    rc = subprocess.run(cmd, check=False).returncode
    if rc != expect:
        sys.exit(f"demo: expected exit {expect}, got {rc}")


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    house, pre, lock = OUT / "wheelhouse", OUT / "preinstalled", OUT / "pylock.ocr-demo.toml"
    for src in sorted((HERE / "packages").iterdir()):
        build_wheel(src, pre if src.name == PREINSTALLED else house)
    print(f"built the demo wheelhouse in {house}")
    target = OUT / "target"
    venv.EnvBuilder(with_pip=False).create(target)
    python = venv_python(target)
    choose("auto").install(python, sorted(pre.glob("*.whl")), link_mode="copy", reinstall=False)
    print(f"target venv {target} already has demo-torch 2.9.1+cu130 (the CUDA build)")

    common = ["-c", HERE / "wh.toml", "--wheelhouse", house]
    print("\n== 1. what pip would face: the app pins demo-kernel==0.4.1, only 0.4.3 exists")
    wh("lock", "naive", *common, "--python", python, "--lockfile", OUT / "naive.toml", expect=4)
    print("\n== 2. lock with the override, the undeclared dependency and the protection")
    wh("lock", "ocr-demo", *common, "--python", python, "--lockfile", lock)
    print("\n== 3. the plan, then the install, with no network")
    wh("install", "ocr-demo", "--locked", "--dry-run", "--lockfile", lock, "--python", python)
    wh("install", "ocr-demo", "--locked", "--lockfile", lock, "--python", python)
    print("\n== 4. a forced reinstall never replaces the protected +cu130 build")
    wh(
        "install",
        "ocr-demo",
        "--locked",
        "--reinstall",
        "--lockfile",
        lock,
        "--python",
        python,
    )
    wh("why", "demo-kernel", "--lockfile", lock)
    print("\ndemo: verification passed; the lock is", lock)


if __name__ == "__main__":
    main()

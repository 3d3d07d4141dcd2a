"""The protection matrix on every install path: `install --locked` and `install --bundle` with
`--protect`, and a fresh venv whose bundle carries the protected build; each beside what real
uv and pip would do to the same environment with the same wheel."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from wh import __version__
from wh.app.bundle import make_bundle
from wh.app.hooks import TargetSpec
from wh.install.backend import uv_binary
from wh.model.manifest import Manifest
from wh.model.profile import Profile, Protection

from tests.factory import make_wheel
from tests.fixtures import run_wh, site_snapshot

BACKENDS = ["uv", "pip"]
CUDA = "2.9.1+cu130"


def torch_version(python: Path) -> str | None:
    out = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def uv_would(python: Path, wheel: Path) -> str:
    """What real uv says it would do with ``wheel`` in ``python``'s environment: its lines
    "Would uninstall", " - torch==2.9.1+cu130", " + torch @ file:///...torch-2.10.0..."."""
    uv = uv_binary()
    assert uv is not None
    done = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--dry-run",
            "--offline",
            "--no-index",
            "--no-config",
            "--no-deps",
            "--python",
            str(python),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("UV_")},
    )
    return done.stdout + done.stderr


def pip_would(python: Path, wheel: Path) -> str:
    """What real pip says it would do (pip runs from wh's venv, aimed with --python)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--dry-run",
            "--no-deps",
            "--no-index",
            "--isolated",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout + done.stderr


def replaces(uv_said: str) -> bool:
    return f"- torch=={CUDA}" in uv_said and "torch-2.10.0-py3-none-any.whl" in uv_said


def assert_uv_and_pip_would_replace_it(python: Path, house: Path) -> None:
    """The control: real uv and real pip, given the CPU torch 2.10.0 wheel, would replace
    the CUDA build ``python``'s environment has."""
    cpu = house / "torch-2.10.0-py3-none-any.whl"
    assert replaces(uv_would(python, cpu))
    assert "Would install torch-2.10.0" in pip_would(python, cpu)


@pytest.fixture
def house(tmp_path: Path) -> Path:
    """Plain CPU torch builds, the +cu130 build, and an app that needs torch."""
    h = tmp_path / "wheelhouse"
    make_wheel(h, "torch", "2.9.1")
    make_wheel(h, "torch", "2.10.0")
    make_wheel(h, "torch", CUDA)
    make_wheel(h, "app", "1.0", ["torch"])
    return h


def cpu_lock(house: Path, tmp_path: Path, new_venv: Callable[..., Path]) -> Path:
    """A lock made without any protection, in a venv without torch: it installs torch 2.10.0."""
    lock = tmp_path / "cpu.toml"
    bare = new_venv()
    r = run_wh(
        "lock", "-r", "torch==2.10.0", "--wheelhouse", house, "--python", bare, "--lockfile", lock
    )
    assert r.returncode == 0, r.stderr
    return lock


@pytest.mark.parametrize("backend", BACKENDS)
def test_locked_with_protect_refuses_what_uv_and_pip_would_do(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """F4: `install --locked --protect torch` of a lock made without protection."""
    lock = cpu_lock(house, tmp_path, new_venv)
    python = new_venv([house / f"torch-{CUDA}-py3-none-any.whl"])
    assert_uv_and_pip_would_replace_it(python, house)
    before = site_snapshot(python)
    r = run_wh(
        "install", "--locked", "--lockfile", lock, "--python", python, "--protect", "torch",
        "--backend", backend,
    )  # fmt: skip
    assert r.returncode == 6, r.stdout + r.stderr
    assert f"the plan would replace protected torch {CUDA} with 2.10.0" in r.stderr
    assert "nothing was installed" in r.stderr
    assert site_snapshot(python) == before
    assert torch_version(python) == CUDA
    # without --protect the same lock does replace it: the flag is what acted
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"replace torch {CUDA} -> 2.10.0" in r.stdout


def test_locked_with_a_named_profile_takes_its_protections(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """The profile named on `install --locked` guards the plan, with its reason."""
    lock = cpu_lock(house, tmp_path, new_venv)
    python = new_venv([house / f"torch-{CUDA}-py3-none-any.whl"])
    (tmp_path / "wh.toml").write_text(
        '[profile.gpu]\nrequirements = ["app"]\n'
        'protect = [{ name = "torch", reason = "the CUDA build" }]\n'
    )
    before = site_snapshot(python)
    r = run_wh("install", "gpu", "--locked", "--lockfile", lock, "--python", python, cwd=tmp_path)
    assert r.returncode == 6, r.stdout + r.stderr
    assert "(the CUDA build)" in r.stderr
    assert site_snapshot(python) == before


def test_protect_name_version_keeps_the_profile_reason(tmp_path: Path) -> None:
    base = Profile(name="p", protections=(Protection("torch", None, "the CUDA build"),))  # type: ignore[arg-type]
    flagged = base.with_flags(protections=[f"torch=={CUDA}"])
    (p,) = flagged.protections
    assert p.version == Version(CUDA) and p.reason == "the CUDA build"


def _bundle(house: Path, tmp_path: Path, python: Path, protect: tuple[Protection, ...]) -> Path:
    tool = tmp_path / "tool"
    tool.mkdir(exist_ok=True)
    make_wheel(tool, "wh", __version__)
    out = tmp_path / f"b{len(list(tmp_path.glob('b*.zip')))}.zip"
    profile = Profile(
        name="gpu", requirements=(Requirement("app"),), protections=protect, link_mode="copy"
    )
    make_bundle(Manifest.of(profile), house, TargetSpec(python), out, tool_wheels=tool)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_bundle_with_protect_refuses_the_replacement(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """`install --bundle B --protect torch`: a bundle made without protection (newest torch)."""
    bundle = _bundle(house, tmp_path, new_venv(), ())
    python = new_venv([house / f"torch-{CUDA}-py3-none-any.whl"])
    assert_uv_and_pip_would_replace_it(python, house)
    before = site_snapshot(python)
    r = run_wh(
        "install", "--bundle", bundle, "--allow-unsigned", "--python", python, "--protect", "torch",
        "--backend", backend,
    )  # fmt: skip
    assert r.returncode == 6, r.stdout + r.stderr
    assert "protected torch" in r.stderr and CUDA in r.stderr
    assert site_snapshot(python) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_fresh_venv_gets_the_protected_build_from_the_bundle(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """F7: the bundle carries torch 2.9.1+cu130; a fresh venv gets exactly that build, and from
    then on it is kept: a CPU torch is refused where uv and pip would install it."""
    fresh = new_venv()
    protect = (Protection("torch", Version(CUDA), "the CUDA build"),)  # type: ignore[arg-type]
    bundle = _bundle(house, tmp_path, fresh, protect)
    r = run_wh(
        "install", "--bundle", bundle, "--allow-unsigned", "--python", fresh, "--backend", backend
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert torch_version(fresh) == CUDA
    assert f"install torch {CUDA}" in r.stdout
    assert f"protected torch {CUDA} unchanged" in r.stdout
    # kept from then on: a lock that wants a CPU build is refused with the protection
    assert_uv_and_pip_would_replace_it(fresh, house)
    lock = cpu_lock(house, tmp_path, new_venv)
    before = site_snapshot(fresh)
    r = run_wh(
        "install", "--locked", "--lockfile", lock, "--python", fresh,
        "--protect", f"torch=={CUDA}", "--backend", backend,
    )  # fmt: skip
    assert r.returncode == 6, r.stdout + r.stderr
    assert site_snapshot(fresh) == before
    assert torch_version(fresh) == CUDA


def test_fresh_venv_without_the_build_is_refused_with_a_hint_that_works(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """`--protect torch` (no version) into an env without torch: refused, and the hint names
    the exact builds the wheelhouse has; following it installs the CUDA build."""
    fresh = new_venv()
    before = site_snapshot(fresh)
    lock = tmp_path / "l.toml"
    common: list[str | Path] = [
        "-r",
        "app",
        "--wheelhouse",
        house,
        "--python",
        fresh,
        "--lockfile",
        lock,
    ]
    r = run_wh("install", *common, "--protect", "torch")
    assert r.returncode == 6, r.stdout + r.stderr
    assert f"--protect 'torch=={CUDA}'" in r.stderr
    assert site_snapshot(fresh) == before
    r = run_wh("install", *common, "--protect", f"torch=={CUDA}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert torch_version(fresh) == CUDA


def test_bundle_without_the_protected_build_says_so_and_its_refusal_leads_somewhere(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """Issue 21 item 4: a bundle made against a workstation-like env that has torch +cu130
    but whose wheelhouse lacks that build keeps torch as installed and carries no wheel of it.
    That is the normal case (the workstation has its CUDA torch), so it is made, but loudly:
    stderr, the JSON and bundle.txt name it. Its install into a fresh venv is refused (exit 6)
    with the env unchanged and a hint that works: install that build first, then it installs."""
    import json
    import zipfile

    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["torch"])
    cu = make_wheel(tmp_path / "cu", "torch", CUDA)  # not in the wheelhouse
    tool = tmp_path / "tool"
    make_wheel(tool, "wh", __version__)
    box = new_venv([cu])
    out = tmp_path / "b.zip"
    r = run_wh(
        "bundle", "-r", "app", "--wheelhouse", house, "--python", box, "--protect", "torch",
        "-o", out, "--wh-wheels", tool, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"warning: the bundle carries no wheel of torch {CUDA} (protected)" in r.stderr
    assert "must already have exactly that build installed" in r.stderr
    assert json.loads(r.stdout)["needs_installed"] == [f"torch {CUDA} (protected)"]
    with zipfile.ZipFile(out) as zf:
        info = next(n for n in zf.namelist() if n.endswith("bundle.txt"))
        assert f"needs-installed=torch {CUDA} (protected)" in zf.read(info).decode()
    # a wheelhouse that has the build: the bundle carries it and says nothing
    make_wheel(house, "torch", CUDA)
    full = run_wh(
        "bundle", "-r", "app", "--wheelhouse", house, "--python", box,
        "--protect", f"torch=={CUDA}", "-o", tmp_path / "c.zip", "--wh-wheels", tool,
    )  # fmt: skip
    assert full.returncode == 0, full.stderr
    assert "carries no wheel" not in full.stderr
    # the bundle without it, on a machine without torch: refused, nothing changed
    fresh = new_venv()
    before = site_snapshot(fresh)
    r = run_wh("install", "--bundle", out, "--allow-unsigned", "--python", fresh)
    assert r.returncode == 6, r.stdout + r.stderr
    assert f"protected torch {CUDA} is not installed" in r.stderr
    assert "install that exact build" in r.stderr and "carries no wheel of it" in r.stderr
    assert site_snapshot(fresh) == before
    # following the hint: the build installed first (as the workstation has it), then it works
    uv = uv_binary()
    assert uv is not None
    subprocess.run(
        [uv, "pip", "install", "--offline", "--no-index", "--no-config", "--python",
         str(fresh), str(cu)],
        check=True, capture_output=True,
    )  # fmt: skip
    r = run_wh("install", "--bundle", out, "--allow-unsigned", "--python", fresh)
    assert r.returncode == 0, r.stdout + r.stderr
    assert torch_version(fresh) == CUDA

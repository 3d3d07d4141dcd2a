"""Install end to end with real venvs, real uv and pip: protections, overrides, order, copies."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import tomllib

from tests.factory import make_wheel
from tests.fixtures import run_wh, site_snapshot

BACKENDS = ["uv", "pip"]


def torch_version(python: Path) -> str:
    out = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture
def cuda_env(tmp_path: Path, new_venv: Callable[..., Path]) -> tuple[Path, Path]:
    """A venv with torch 2.9.1+cu130 installed; a wheelhouse with plain 2.9.1 and 2.10.0."""
    house = tmp_path / "wheelhouse"
    make_wheel(house, "torch", "2.9.1")
    make_wheel(house, "torch", "2.10.0")
    make_wheel(house, "app", "1.0", ["torch"])
    cu = make_wheel(tmp_path / "cu", "torch", "2.9.1+cu130")
    return house, new_venv([cu])


def install(house: Path, python: Path, lock: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_wh(
        "install",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        lock,
        "--protect",
        "torch",
        *args,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("requirement", ["torch", "torch==2.9.1", "app"])
def test_protection_keeps_the_cuda_build(
    cuda_env: tuple[Path, Path], tmp_path: Path, backend: str, requirement: str
) -> None:
    house, python = cuda_env
    r = install(house, python, tmp_path / "l.toml", "-r", requirement, "--backend", backend)
    assert r.returncode == 0, r.stderr
    assert torch_version(python) == "2.9.1+cu130"
    assert "protected torch 2.9.1+cu130 unchanged" in r.stdout
    # forced refresh of everything: still never the protected one
    again = run_wh(
        "install",
        "--locked",
        "--lockfile",
        tmp_path / "l.toml",
        "--python",
        python,
        "--reinstall",
        "--backend",
        backend,
    )
    assert again.returncode == 0, again.stderr
    assert torch_version(python) == "2.9.1+cu130"
    assert "reinstall torch" not in again.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_unsatisfiable_with_protection_fails_and_changes_nothing(
    cuda_env: tuple[Path, Path], tmp_path: Path, backend: str
) -> None:
    house, python = cuda_env
    before = site_snapshot(python)
    r = install(house, python, tmp_path / "l.toml", "-r", "torch>=2.10", "--backend", backend)
    assert r.returncode == 4
    assert "torch" in r.stderr
    assert "protected" in r.stderr and "2.9.1+cu130" in r.stderr
    assert "torch>=2.10" in r.stderr
    assert site_snapshot(python) == before


@pytest.mark.parametrize(
    ("installed", "message"),
    [
        ("2.9.1", "protected torch was locked as 2.9.1+cu130 but the environment has 2.9.1"),
        (None, "protected torch 2.9.1+cu130 is not installed in the target environment"),
    ],
)
def test_lock_is_refused_where_the_protected_build_differs(
    cuda_env: tuple[Path, Path],
    tmp_path: Path,
    new_venv: Callable[..., Path],
    installed: str | None,
    message: str,
) -> None:
    house, python = cuda_env
    lock = tmp_path / "l.toml"
    assert install(house, python, lock, "-r", "app").returncode == 0
    other = new_venv([house / f"torch-{installed}-py3-none-any.whl"] if installed else [])
    before = site_snapshot(other)
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", other)
    assert r.returncode == 6, r.stderr
    assert message in r.stderr
    assert site_snapshot(other) == before


def seed_sglang(house: Path) -> None:
    make_wheel(house, "sglang", "0.5.10", ["sglang-kernel==0.4.1", "flashinfer-python", "torch"])
    make_wheel(
        house,
        "sglang-kernel",
        "0.4.3",
        ["torch"],
        files={"sgl_kernel/__init__.py": b"import torch\n"},
    )
    make_wheel(house, "flashinfer-python", "0.6.11.post3", ["torch>=2.8"])
    make_wheel(house, "kernels", "0.11.7")
    make_wheel(house, "pymupdf", "1.27.2.2")
    make_wheel(house, "torch", "2.9.1")


def fake_torch(folder: Path, version: str, cuda: bool) -> Path:
    """A torch stand-in whose torch.cuda.is_available() answers ``cuda``."""
    body = f"__version__ = {version!r}\n\nclass cuda:\n    @staticmethod\n"
    body += f"    def is_available():\n        return {cuda}\n"
    return make_wheel(folder, "torch", version, files={"torch/__init__.py": body.encode()})


def test_sglang_pin_without_override_is_explained(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    seed_sglang(house)
    r = run_wh(
        "lock",
        "-r",
        "sglang",
        "--wheelhouse",
        house,
        "--lockfile",
        tmp_path / "l.toml",
        "--platform",
        "win_amd64",
        "--python-version",
        "3.12",
    )
    assert r.returncode == 4
    assert "sglang 0.5.10 requires sglang-kernel==0.4.1" in r.stderr
    assert "version 0.4.3 is refused by sglang 0.5.10 requires sglang-kernel==0.4.1" in r.stderr
    assert "--override 'sglang-kernel==0.4.3'" in r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_sglang_with_override_installs_in_order(
    tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """The built-in unlimited-ocr profile, end to end, with test wheels of the same names."""
    house = tmp_path / "wheelhouse"
    seed_sglang(house)
    python = new_venv([fake_torch(tmp_path / "cu", "2.9.1+cu130", cuda=True)])
    r = run_wh(
        "install",
        "unlimited-ocr",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        tmp_path / "l.toml",
        "--backend",
        backend,
        "--json",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    batches = [[a["name"] for a in b] for b in data["plan"]["batches"]]
    pos = {n: i for i, b in enumerate(batches) for n in b}
    for dep in ("flashinfer-python", "sglang-kernel", "kernels"):
        assert pos[dep] < pos["sglang"]
    assert "torch" not in pos  # protected, kept
    messages = [f["message"] for f in data["verify"]]
    assert (
        "sglang-kernel 0.4.3 satisfies sglang's ==0.4.1 by override (sglang-kernel==0.4.3)"
        in messages
    )
    assert "import sgl_kernel" in messages
    assert "CUDA is available to torch" in messages
    assert torch_version(python) == "2.9.1+cu130"


def test_failed_verification_rolls_the_install_back(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """A CPU torch fails the profile's CUDA check: exit 8, and the venv is as it was."""
    house = tmp_path / "wheelhouse"
    seed_sglang(house)
    python = new_venv([fake_torch(tmp_path / "cpu", "2.9.1+cpu", cuda=False)])
    before = site_snapshot(python)
    r = run_wh(
        "install",
        "unlimited-ocr",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        tmp_path / "l.toml",
    )
    assert r.returncode == 8, r.stdout + r.stderr
    assert "CUDA is available to torch failed" in r.stderr + r.stdout
    assert site_snapshot(python) == before


@pytest.mark.parametrize(("mode", "linked"), [("copy", False), ("hardlink", True)])
def test_link_mode_decides_copies_or_links(
    tmp_path: Path,
    new_venv: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    linked: bool,
) -> None:
    """Copy mode gives files of their own; hardlink mode shares uv's cache (the control)."""
    monkeypatch.setenv("WH_UV_CACHE_DIR", str(tmp_path / "uv-cache"))  # same filesystem
    house = tmp_path / "wheelhouse"
    make_wheel(house, "lib", "1.0", files={"lib/__init__.py": b"X = 1\n" * 100})
    python = new_venv()
    r = run_wh(
        "install",
        "-r",
        "lib",
        "--extra-requirement",
        "lib>=1",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        tmp_path / "l.toml",
        "--check-import",
        "lib",
        "--link-mode",
        mode,
        "--backend",
        "uv",
    )
    assert r.returncode == 0, r.stderr
    installed = next(python.parent.parent.rglob("site-packages/lib/__init__.py"))
    assert (installed.stat().st_nlink > 1) is linked


def test_install_with_no_network(
    no_network: list[str], tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = tmp_path / "wheelhouse"
    seed_sglang(house)
    python = new_venv()
    r = run_wh(
        "install",
        "-r",
        "sglang",
        "-r",
        "kernels==0.11.7",
        "--override",
        "sglang-kernel==0.4.3",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        tmp_path / "l.toml",
        "--check-import",
        "sglang",
        prefix=no_network,
    )
    assert r.returncode == 0, r.stderr
    assert "verification passed" in r.stdout


def test_dry_run_changes_nothing(cuda_env: tuple[Path, Path], tmp_path: Path) -> None:
    house, python = cuda_env
    before = site_snapshot(python)
    r = install(house, python, tmp_path / "l.toml", "-r", "app", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "install app 1.0" in r.stdout and "dry run" in r.stdout
    assert site_snapshot(python) == before


def test_installed_distributions_satisfy_requirements(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """The CUDA framework's own dependencies are installed but not in the wheelhouse."""
    house = tmp_path / "wheelhouse"
    make_wheel(house, "app", "1.0", ["torch", "helper>=1"])
    make_wheel(house, "helper", "2.0")
    pre = tmp_path / "pre"
    python = new_venv(
        [
            make_wheel(pre, "torch", "2.9.1+cu130", ["nvidia-blas>=13"]),
            make_wheel(pre, "nvidia-blas", "13.1"),
            make_wheel(pre, "helper", "1.5"),
        ]
    )
    lock = tmp_path / "l.toml"
    r = run_wh(
        "install",
        "-r",
        "app",
        "--protect",
        "torch",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        lock,
        "--json",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert [[a["name"] for a in b] for b in plan["batches"]] == [["app"]]
    tool = tomllib.loads(lock.read_text())["tool"]["wh"]
    assert {"name": "helper", "version": "1.5"} in tool["kept-installed"]
    assert {"name": "nvidia-blas", "version": "13.1"} in tool["kept-installed"]
    # --ignore-installed resolves from the wheelhouse alone: nvidia-blas has no wheel
    alone = run_wh(
        "lock",
        "-r",
        "app",
        "--protect",
        "torch",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        lock,
        "--ignore-installed",
    )
    assert alone.returncode == 4
    assert "the wheelhouse has no wheel named nvidia-blas" in alone.stderr


def test_verify_warns_when_the_launch_needs_what_the_build_lacks(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """unlimited-ocr launches with FA3: a kernel built without the fa3 variant is flagged."""
    house = tmp_path / "wheelhouse"
    wheel = make_wheel(house, "kern", "0.4.3")
    record = {"recipe": {"name": "sgl-kernel"}, "variant": {}, "provides": ["sgl_kernel"]}
    wheel.with_name(wheel.name + ".build.json").write_text(json.dumps(record))
    (tmp_path / "wh.toml").write_text(
        '[profile.p]\nrequirements = ["kern"]\nneeds = ["flash_ops"]\n'
    )
    python = new_venv()
    r = run_wh(
        "install",
        "p",
        "--wheelhouse",
        house,
        "--python",
        python,
        "--lockfile",
        tmp_path / "l.toml",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "warn the profile's launch needs 'flash_ops'" in r.stdout
    assert "`wh build sgl-kernel --variant fa3` builds it" in r.stdout
    assert "it cannot be built for windows" in r.stdout
    assert "--attention-backend flashinfer" in r.stdout  # what an RTX 3090 user can do
    # once a build provides it, the warning is gone
    record["provides"] = ["sgl_kernel", "flash_ops"]
    wheel.with_name(wheel.name + ".build.json").write_text(json.dumps(record))
    assert (
        run_wh(
            "lock",
            "p",
            "--wheelhouse",
            house,
            "--python",
            python,
            "--lockfile",
            tmp_path / "l.toml",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    again = run_wh("verify", "p", "--python", python, "--lockfile", tmp_path / "l.toml")
    assert again.returncode == 0, again.stderr
    assert "flash_ops" not in again.stdout


def _folder_times(venv: Path) -> dict[str, int]:
    """Every folder below the venv's top with its mtime: a file moved out of a folder and
    back (the journal's move aside and a rollback) changes it, even with the bytes equal.
    The top is left out: wh's install-lock sidecar comes and goes there on every run."""
    return {str(p.relative_to(venv)): p.stat().st_mtime_ns for p in venv.rglob("*") if p.is_dir()}


@pytest.mark.parametrize("dry_run", [False, True])
def test_pip_with_link_mode_hardlink_is_refused_before_the_journal_moves_anything(
    tmp_path: Path, new_venv: Callable[..., Path], dry_run: bool
) -> None:
    """lib 1.0 installed, the lock replaces it with 2.0 (so the journal would move its
    RECORD and its files aside): pip cannot hardlink, which is refused (exit 7, README)
    with the rule and the fix before the transaction starts: the venv is byte for byte
    as it was and no folder of it was touched."""
    from tests.envsnap import diff, snapshot

    house = tmp_path / "wheelhouse"
    make_wheel(house, "lib", "2.0", files={"lib/__init__.py": b"X = 2\n"})
    python = new_venv([make_wheel(tmp_path / "old", "lib", "1.0")])
    venv = python.parent.parent
    before, times = snapshot(venv), _folder_times(venv)
    r = run_wh(
        "install", "-r", "lib==2.0", "--wheelhouse", house, "--python", python,
        "--lockfile", tmp_path / "l.toml", "--backend", "pip", "--link-mode", "hardlink",
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip
    assert r.returncode == 7, r.stdout + r.stderr
    assert (
        "pip cannot install with link mode 'hardlink' (it supports: copy), which --link-mode "
        "asks for; nothing was changed" in r.stderr
    )
    assert "use --backend uv, or --link-mode copy" in r.stderr
    assert "restored" not in r.stderr  # no transaction to roll back
    assert diff(before, snapshot(venv)) == []
    assert _folder_times(venv) == times


def test_dry_run_prints_how_the_install_would_be_carried_out(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """Two batches into a venv with uv: staged, through a private uv cache (uv's is empty);
    with pip: direct, through no uv cache. Text and JSON say the same."""
    house = tmp_path / "wheelhouse"
    make_wheel(house, "base", "1.0")
    make_wheel(house, "top", "1.0", ["base"])
    python = new_venv()
    venv = python.parent.parent
    common = ("install", "-r", "top", "--wheelhouse", house, "--python", python,
              "--lockfile", tmp_path / "l.toml", "--dry-run")  # fmt: skip
    uv = run_wh(*common, "--backend", "uv", "--uv-cache", "private")
    assert uv.returncode == 0, uv.stderr
    assert (
        f"  strategy: staged (uv writes every wheel into {venv.resolve() / '.wh-stage'} at "
        "once, then each batch moves into place); private uv cache (--uv-cache private)\n"
        in uv.stdout
    )
    pip = run_wh(*common, "--backend", "pip", "--json")
    assert pip.returncode == 0, pip.stderr
    assert json.loads(pip.stdout)["strategy"] == {
        "backend": "pip",
        "link_mode": "copy",
        "placement": "direct",
        "placement_reason": "pip installs into the environment only: one call per batch",
        "cache": "none",
        "cache_reason": "pip unpacks through no uv cache",
        "stage": None,
    }
    assert not (venv / ".wh-stage").exists()

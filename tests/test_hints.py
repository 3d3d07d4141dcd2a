"""Hints that lead somewhere: the hint of each refusal, followed, gives a state that works."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from wh.wheel.writer import write_wheel

from tests.factory import make_wheel
from tests.fixtures import run_wh

CUDA = "2.9.1+cu130"


def _stack(tmp_path: Path) -> Path:
    """torchvision 0.29.2 needs torch>=2.14; 0.28.0 takes the protected 2.9.1 build;
    sglang 0.5.10 pins the new torchvision, 0.5.9 the old one."""
    h = tmp_path / "house"
    make_wheel(h, "torch", CUDA)
    make_wheel(h, "torch", "2.14.0")
    make_wheel(h, "torchvision", "0.29.2", ["torch>=2.14"])
    make_wheel(h, "torchvision", "0.28.0", ["torch==2.9.1"])
    make_wheel(h, "sglang", "0.5.10", ["torchvision==0.29.2"])
    make_wheel(h, "sglang", "0.5.9", ["torchvision==0.28.0"])
    return h


def _requirements_in(hint: str) -> list[str]:
    """The -r arguments a hint says to ask for."""
    words = shlex.split(hint.split("ask for", 1)[1].split("(", 1)[0])
    return [w for w in words if w != "-r"]


def _lock_hint(
    house: Path, tmp_path: Path, new_venv: Callable[..., Path], root: str
) -> tuple[str, list[str | Path]]:
    """The hint of a refused lock of ``root`` (exit 4) against a venv with the protected
    torch, and the arguments the lock was run with (to follow the hint with)."""
    python = new_venv([house / f"torch-{CUDA}-py3-none-any.whl"])
    common: list[str | Path] = ["--wheelhouse", house, "--python", python, "--protect", "torch",
                                "--lockfile", tmp_path / "l.toml"]  # fmt: skip
    r = run_wh("lock", "-r", root, *common)
    assert r.returncode == 4, r.stdout + r.stderr
    return r.stderr.split("hint: ", 1)[1], common


def _install_kept(asked: list[str], common: list[str | Path]) -> str:
    """Install ``asked``: it works and keeps the protected torch; its output."""
    ok = run_wh("install", *[a for q in asked for a in ("-r", q)], *common)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"protected torch {CUDA} unchanged" in ok.stdout
    return ok.stdout


def test_a_protected_conflict_names_older_versions_that_resolve(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = _stack(tmp_path)
    hint, common = _lock_hint(house, tmp_path, new_venv, "sglang==0.5.10")
    assert "--override 'torch==" not in hint  # would rewrite torchvision's >=2.14 too
    assert "torchvision 0.28.0 and sglang 0.5.9 accept the protected torch" in hint
    asked = _requirements_in(hint)
    assert asked == ["torchvision==0.28.0", "sglang==0.5.9"]
    # the hint leads to a lock that works, with the protected build kept
    _install_kept(asked, common)


def test_without_an_older_version_no_override_of_the_protected_name_is_suggested(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = tmp_path / "house"
    make_wheel(house, "torch", CUDA)
    make_wheel(house, "torchvision", "0.29.2", ["torch>=2.14"])
    python = new_venv([house / f"torch-{CUDA}-py3-none-any.whl"])
    r = run_wh("lock", "-r", "torchvision", "--wheelhouse", house, "--python", python,
               "--protect", "torch", "--lockfile", tmp_path / "l.toml")  # fmt: skip
    assert r.returncode == 4
    hint = r.stderr.split("hint: ", 1)[1]
    assert "--override '" not in hint
    assert "would rewrite every requirement on torch" in hint


def test_an_offline_lock_names_every_missing_package_at_once(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["a", "b", "c"])
    make_wheel(house, "a", "1.0", ["deep"])
    r = run_wh("lock", "-r", "app", "--wheelhouse", house, "--python", new_venv(),
               "--lockfile", tmp_path / "l.toml")  # fmt: skip
    assert r.returncode == 4, r.stdout + r.stderr
    assert "the wheelhouse lacks 3 package(s) the profile needs: b, c, deep" in r.stderr
    assert "deep: no wheel (required by a 1.0)" in r.stderr
    assert "c: no wheel (required by app 1.0)" in r.stderr
    assert "wh fetch" in r.stderr


def test_a_broken_wheel_is_reported_as_broken(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["lib"])
    write_wheel(house, "lib", "1.0", {"lib/__init__.py": b""}, requires_dist=["torch >= = 2"])
    r = run_wh("lock", "-r", "app", "--wheelhouse", house, "--python", new_venv(),
               "--lockfile", tmp_path / "l.toml")  # fmt: skip
    assert r.returncode == 4, r.stdout + r.stderr
    assert "no wheel named lib" not in r.stderr
    assert (
        "lib-1.0-py3-none-any.whl: excluded from the wheelhouse by the scan: "
        "invalid Requires-Dist 'torch >= = 2'"
    ) in r.stderr
    assert "every wheel of lib in the wheelhouse was excluded as unusable" in r.stderr
    assert "replace" in r.stderr


def _real_shape(tmp_path: Path, older: bool) -> Path:
    """The issue's real case: sglang needs torchvision and compressed-tensors, whose newest
    releases need torch>=2.14; the older ones (when ``older``) accept the protected 2.9.1."""
    h = tmp_path / "house"
    make_wheel(h, "torch", CUDA)
    make_wheel(h, "torchvision", "0.29.2", ["torch>=2.14"])
    make_wheel(h, "compressed-tensors", "0.13.0", ["torch>=2.14"])
    if older:
        make_wheel(h, "torchvision", "0.28.0", ["torch==2.9.1"])
        make_wheel(h, "compressed-tensors", "0.12.2", ["torch>=2.7"])
        make_wheel(h, "sglang", "0.5.10", ["torch>=2.9.1", "torchvision==0.29.2",
                                           "compressed-tensors==0.13.0"])  # fmt: skip
        make_wheel(h, "sglang", "0.5.9", ["torch>=2.9.1", "torchvision==0.28.0",
                                          "compressed-tensors==0.12.2"])  # fmt: skip
    else:
        make_wheel(h, "sglang", "0.5.10", ["torch>=2.9.1", "torchvision", "compressed-tensors"])
    return h


def test_two_packages_refusing_the_protected_build_pinned_by_the_root(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """sglang 0.5.10 pins both refusers: the hint goes up to sglang 0.5.9 (which pins the old
    torchvision too), and following it installs with the protected torch kept."""
    house = _real_shape(tmp_path, older=True)
    hint, common = _lock_hint(house, tmp_path, new_venv, "sglang==0.5.10")
    assert "--override '" not in hint
    asked = _requirements_in(hint)
    assert asked[-1] == "sglang==0.5.9", hint
    out = _install_kept(asked, common)
    assert "torchvision 0.28.0" in out and "compressed-tensors 0.12.2" in out


def test_a_wheelhouse_of_newest_releases_names_every_refuser_at_once_and_what_to_fetch(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """`wh fetch` brought only the newest torchvision and compressed-tensors: both refuse the
    protected torch. The hint names both at once (not one per run) with the fetch to run;
    with the older releases it names added (what that fetch brings), the lock works."""
    house = _real_shape(tmp_path, older=False)
    hint, common = _lock_hint(house, tmp_path, new_venv, "sglang")
    assert "no version of compressed-tensors, torchvision that accepts it" in hint
    assert "compressed-tensors 0.13.0 requires torch>=2.14" in hint
    assert "torchvision 0.29.2 requires torch>=2.14" in hint
    fetch = hint.split("`", 2)[1]
    assert fetch == (
        f"wh fetch -r 'compressed-tensors<0.13.0' -r 'torchvision<0.29.2' "
        f"--protect 'torch=={CUDA}' --wheelhouse DIR"
    )
    assert "--override '" not in hint
    # the fetch, parsed by wh itself (it runs online): every option it names exists
    args = shlex.split(fetch)[1:]
    dry = run_wh(*[a if a != "DIR" else str(house) for a in args], "--help")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    make_wheel(house, "torchvision", "0.28.0", ["torch==2.9.1"])
    make_wheel(house, "compressed-tensors", "0.12.2", ["torch>=2.7"])
    _install_kept(["sglang"], common)


def test_the_older_versions_are_found_three_steps_up_the_chain(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """The profile pins an app that pins sglang that pins torchvision (the real profile pins
    its model's release): older versions are looked for up the whole chain, not two steps;
    the hint, followed, installs with the protected torch kept."""
    house = _stack(tmp_path)
    make_wheel(house, "ocr-app", "1.0", ["sglang==0.5.10"])
    make_wheel(house, "ocr-app", "0.9", ["sglang==0.5.9"])
    hint, common = _lock_hint(house, tmp_path, new_venv, "ocr-app==1.0")
    assert "no version of" not in hint  # the wheelhouse has torchvision 0.28.0
    asked = _requirements_in(hint)
    assert asked == ["torchvision==0.28.0", "sglang==0.5.9", "ocr-app==0.9"], hint
    _install_kept(asked, common)

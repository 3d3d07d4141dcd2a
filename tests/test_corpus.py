"""Bad inputs through the real `wh`: a clear error, a documented exit code, an untouched env."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.envsnap import Scene, site_packages, wh
from tests.factory import make_wheel
from tests.hostile import CASES, redigest, write_corpus

CORPUS = Path(__file__).parent / "corpus"


class Env(Scene):
    """A real venv with `base 1.0` installed, shared by the module (no test may change it)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        make_wheel(self.house, "base", "1.0")
        make_wheel(self.house, "base", "2.0")
        make_wheel(self.house, "app", "1.0", ["base"])
        self.settle("base==1.0", "base.toml")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    yield Env(tmp_path_factory.mktemp("corpus"))


def test_committed_corpus_matches_its_generator(tmp_path: Path) -> None:
    fresh = write_corpus(tmp_path)
    for name, path in fresh.items():
        committed = CORPUS / name / path.name
        assert committed.read_bytes() == path.read_bytes(), f"regenerate: {name}"


@pytest.mark.parametrize("case", sorted(n for n, c in CASES.items() if c.scan_accepts))
def test_hostile_wheel_is_refused_before_install(env: Env, case: str) -> None:
    done = env.wh("install", "-r", "evil", "--lockfile", f"{case}.toml", house=CORPUS / case)
    assert done.returncode == 3, done.stderr
    err = done.stderr
    assert "failed validation; nothing was installed" in err
    assert CASES[case].expect.replace("\x00", "") in err
    env.unchanged()


@pytest.mark.parametrize("case", sorted(n for n, c in CASES.items() if not c.scan_accepts))
def test_unreadable_wheel_is_excluded_by_the_scan(env: Env, case: str) -> None:
    done = env.wh("install", "-r", "evil", "--lockfile", f"{case}.toml", house=CORPUS / case)
    assert done.returncode == 4, done.stderr
    # the file and the rule that excluded it, never "no wheel named evil" (issue 22, item 10)
    assert "no wheel named evil" not in done.stderr
    assert "evil-1.0-py3-none-any.whl: excluded from the wheelhouse by the scan: " in done.stderr
    reason = done.stderr.split("excluded from the wheelhouse by the scan: ", 1)[1].split("\n")[0]
    assert reason in scan_reasons(CORPUS / case)
    assert "every wheel of evil in the wheelhouse was excluded as unusable" in done.stderr
    scan = wh("scan", "--strict", "--wheelhouse", CORPUS / case, cwd=env.root)
    assert scan.returncode == 3
    assert "excluded" in scan.stdout
    env.unchanged()


def test_a_member_whose_deflate_data_is_damaged_fails_in_the_backend_and_is_undone(
    env: Env, tmp_path: Path
) -> None:
    """Before an install wh checks structure only (the backend inflates every member
    anyway, see validate's docstring): the backend's error on the damaged member is shown
    and the environment is as it was."""
    from tests.hostile import member_damaged

    house = tmp_path / "house"
    member_damaged(house)
    done = env.wh("install", "-r", "evil", "--lockfile", "damaged.toml", house=house)
    assert done.returncode == 7, done.stderr
    assert "evil-1.0-py3-none-any.whl" in done.stderr
    assert "invalid block type" in done.stderr
    assert "the environment was restored to its state before" in done.stderr
    env.unchanged()


def scan_reasons(house: Path) -> str:
    """What `wh scan` says of the excluded files (the same words a conflict must use)."""
    return wh("scan", "--wheelhouse", house, cwd=house).stdout


def _lock(env: Env, name: str, *reqs: str) -> Path:
    path = env.root / f"{name}.toml"
    args: list[str | Path] = ["lock", "--lockfile", path]
    for r in reqs:
        args += ["-r", r]
    done = env.wh(*args)
    assert done.returncode == 0, done.stderr
    return path


def _install_locked(env: Env, lock: Path) -> subprocess.CompletedProcess[str]:
    return wh("install", "--locked", "--lockfile", lock, "--python", env.venv, cwd=env.root)


def test_lock_edited_by_hand(env: Env) -> None:
    lock = _lock(env, "edited", "app")
    lock.write_bytes(lock.read_bytes().replace(b'version = "1.0"', b'version = "1.1"', 1))
    done = _install_locked(env, lock)
    assert done.returncode == 5
    assert "digest does not match its contents (edited by hand?)" in done.stderr
    env.unchanged()


@pytest.mark.parametrize("weak", ["md5", "sha1"])
def test_lock_with_only_a_weak_hash(env: Env, weak: str) -> None:
    lock = _lock(env, f"weak-{weak}", "app")
    data = re.sub(rb"sha256 = \"[0-9a-f]+\"", f'{weak} = "00"'.encode(), lock.read_bytes())
    lock.write_bytes(redigest(data))
    done = _install_locked(env, lock)
    assert done.returncode == 5
    assert f"has no sha256 hash (found: {weak})" in done.stderr
    env.unchanged()


def test_lock_pointing_at_a_missing_wheel(env: Env) -> None:
    house = env.root / "house-missing"
    shutil.copytree(env.house, house)
    lock = env.root / "missing.toml"
    assert env.wh("lock", "-r", "app", "--lockfile", lock, house=house).returncode == 0
    (house / "app-1.0-py3-none-any.whl").unlink()
    done = _install_locked(env, lock)
    assert done.returncode == 5
    assert "app-1.0-py3-none-any.whl: missing" in done.stderr
    env.unchanged()


@pytest.mark.parametrize("how", ["same-size", "other-size"])
def test_wheel_swapped_after_locking(env: Env, how: str) -> None:
    house = env.root / f"house-{how}"
    shutil.copytree(env.house, house)
    lock = env.root / f"swapped-{how}.toml"
    assert env.wh("lock", "-r", "app", "--lockfile", lock, house=house).returncode == 0
    target = house / "app-1.0-py3-none-any.whl"
    data = bytearray(target.read_bytes())
    if how == "same-size":
        data[-30] ^= 0xFF  # a flipped byte: only the sha256 notices
    else:
        data += b"\0"
    target.write_bytes(bytes(data))
    done = _install_locked(env, lock)
    assert done.returncode == 5
    expect = "sha256" if how == "same-size" else "size"
    assert f"app-1.0-py3-none-any.whl: {expect}" in done.stderr
    assert "nothing was installed" in done.stderr
    env.unchanged()


def test_two_files_for_one_name_and_version(env: Env) -> None:
    house = env.root / "house-dup"
    make_wheel(house, "dup", "1.0")
    other = make_wheel(env.root / "tmp-dup", "dup", "1.0.0", files={"dup/__init__.py": b"2\n"})
    shutil.move(other, house / other.name)
    done = env.wh("install", "-r", "dup", "--lockfile", env.root / "dup.toml", house=house)
    assert done.returncode == 3
    err = done.stderr
    assert "dup-1.0-py3-none-any.whl and dup-1.0.0-py3-none-any.whl are different files" in err
    env.unchanged()


def test_malformed_profile(env: Env) -> None:
    (env.root / "wh.toml").write_text("[profile.broken\nrequirements = [\n")
    try:
        done = env.wh("install", "broken", "--lockfile", env.root / "broken.toml")
    finally:
        (env.root / "wh.toml").unlink()
    assert done.returncode == 9, done.stderr
    assert "error:" in done.stderr
    env.unchanged()


def test_protected_package_missing_from_the_environment(env: Env) -> None:
    house = env.root / "house-prot"
    make_wheel(house, "torchish", "2.0")
    make_wheel(house, "user", "1.0", ["torchish"])
    done = env.wh(
        "install", "-r", "user", "--protect", "torchish", "--lockfile", env.root / "p.toml",
        house=house,
    )  # fmt: skip
    assert done.returncode == 6
    assert "torchish is protected but not installed" in done.stderr
    env.unchanged()


def test_target_interpreter_that_does_not_exist(env: Env) -> None:
    missing = env.root / "no-such-venv" / "bin" / "python"
    done = wh("install", "-r", "app", "--python", missing, "--wheelhouse", env.house, cwd=env.root)
    assert done.returncode == 10
    assert f"target interpreter {missing} does not exist" in done.stderr
    env.unchanged()


def test_overwriting_another_distribution_is_refused(env: Env) -> None:
    house = env.root / "house-clash"
    make_wheel(house, "squatter", "1.0", files={"base/__init__.py": b"pwned = True\n"})
    done = env.wh("install", "-r", "squatter", "--lockfile", env.root / "sq.toml", house=house)
    assert done.returncode == 3
    err = done.stderr
    assert "squatter would overwrite" in err
    assert "base/__init__.py, owned by base (installed)" in err
    assert 'allow-overwrite = ["squatter"]' in err
    assert (site_packages(env.venv) / "base" / "__init__.py").read_text() == '__version__ = "1.0"\n'
    env.unchanged()


def test_allow_overwrite_from_the_command_line_lets_it_through(env: Env) -> None:
    house = env.root / "house-clash-allowed"
    make_wheel(house, "squatter", "1.0", files={"base/__init__.py": b"pwned = True\n"})
    done = env.wh(
        "install", "-r", "squatter", "--allow-overwrite", "squatter",
        "--lockfile", env.root / "sq2.toml", house=house,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (site_packages(env.venv) / "base" / "__init__.py").read_text() == "pwned = True\n"

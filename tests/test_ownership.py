"""Who owns an installed file, from every form of installed metadata (RECORD,
installed-files.txt, top_level.txt), and what happens to a file nobody owns (issue 22,
item 7): each case through the real `wh install`, exit code, message, environment after."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.envsnap import diff, make_venv, site_packages, snapshot, wh
from tests.factory import make_wheel


def _venv(tmp_path: Path) -> tuple[Path, Path]:
    venv = make_venv(tmp_path / "venv")
    return venv, site_packages(venv)


def _install(
    tmp_path: Path, venv: Path, house: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return wh(
        "install", "-r", "squatter", "--wheelhouse", house, "--python", venv,
        "--lockfile", tmp_path / "sq.toml", *extra, cwd=tmp_path,
    )  # fmt: skip


def _base_installed(tmp_path: Path, theirs: str) -> tuple[Path, Path]:
    """A venv with ``base`` installed by wh, owning the file ``theirs``; the venv and the
    wheelhouse."""
    venv, _site = _venv(tmp_path)
    house = tmp_path / "house"
    make_wheel(house, "base", "1.0", files={"base/__init__.py": b"", theirs: b"1\n"})
    ok = wh("install", "-r", "base", "--wheelhouse", house, "--python", venv,
            "--lockfile", tmp_path / "b.toml", cwd=tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    return venv, house


def _egg_info(site: Path) -> None:
    """pip's legacy `setup.py install`: an egg-info folder listing its files."""
    (site / "legacy").mkdir()
    (site / "legacy" / "__init__.py").write_text("LEGACY = 1\n")
    egg = site / "legacy-1.0-py3.11.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy\nVersion: 1.0\n")
    (egg / "installed-files.txt").write_text("../legacy/__init__.py\nPKG-INFO\n")


def _recordless(site: Path) -> None:
    """A Debian/conda-style dist-info without RECORD: only top_level.txt says what it has."""
    (site / "debby").mkdir()
    (site / "debby" / "core.py").write_text("CORE = 1\n")
    (site / "debby_ext.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    di = site / "debby-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: debby\nVersion: 1.0\n")
    (di / "top_level.txt").write_text("debby\ndebby_ext\n")


@pytest.mark.parametrize(
    ("setup", "path", "owner"),
    [
        (_egg_info, "legacy/__init__.py", "legacy"),
        (_recordless, "debby/core.py", "debby"),
        (_recordless, "debby_ext.cpython-311-x86_64-linux-gnu.so", "debby"),
    ],
)
def test_files_of_egg_info_and_recordless_distributions_are_owned(
    tmp_path: Path, setup: Callable[[Path], None], path: str, owner: str
) -> None:
    venv, site = _venv(tmp_path)
    setup(site)
    house = tmp_path / "house"
    make_wheel(house, "squatter", "1.0", files={path: b"pwned = True\n"})
    before = snapshot(venv)
    done = _install(tmp_path, venv, house)
    assert done.returncode == 3, done.stderr
    err = done.stderr
    assert f"squatter would overwrite {site / path}, owned by {owner} (installed)" in err
    assert 'allow-overwrite = ["squatter"]' in err
    assert diff(before, snapshot(venv)) == []


def test_a_file_nobody_owns_is_not_replaced_without_saying_so(tmp_path: Path) -> None:
    """An unowned ``.pth`` (put there by hand): refused naming it; allowed, it is replaced
    and the rest of site-packages is untouched."""
    venv, site = _venv(tmp_path)
    (site / "zz_hook.pth").write_text("import os\n")
    house = tmp_path / "house"
    make_wheel(house, "squatter", "1.0", files={"zz_hook.pth": b"/elsewhere\n"})
    before = snapshot(venv)
    done = _install(tmp_path, venv, house)
    assert done.returncode == 3, done.stderr
    assert (
        f"squatter would overwrite {site / 'zz_hook.pth'}, which exists and which no installed "
        "distribution owns"
    ) in done.stderr
    assert diff(before, snapshot(venv)) == []
    ok = _install(tmp_path, venv, house, "--allow-overwrite", "squatter")
    assert ok.returncode == 0, ok.stderr
    assert (site / "zz_hook.pth").read_text() == "/elsewhere\n"


def test_an_egg_info_distribution_replaced_by_a_wheel_is_moved_aside(tmp_path: Path) -> None:
    """Upgrading the egg-info ``legacy 1.0`` to a wheel: the files its installed-files.txt
    lists are replaced (not a clash), and a failure puts every one of them back."""
    venv, site = _venv(tmp_path)
    _egg_info(site)
    house = tmp_path / "house"
    make_wheel(house, "legacy", "2.0", files={"legacy/__init__.py": b"LEGACY = 2\n"})
    before = snapshot(venv)
    args = ("install", "-r", "legacy==2.0", "--wheelhouse", house, "--python", venv)
    failed = wh(*args, "--lockfile", tmp_path / "l.toml", cwd=tmp_path,
                env={"WH_TEST_FAULT": "1:fail"})  # fmt: skip
    assert failed.returncode == 7, failed.stderr
    assert diff(before, snapshot(venv)) == []
    done = wh(*args, "--lockfile", tmp_path / "l.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (site / "legacy" / "__init__.py").read_text() == "LEGACY = 2\n"
    assert not (site / "legacy-1.0-py3.11.egg-info").exists()


@pytest.mark.parametrize(
    ("theirs", "mine"),
    [("base/Util.py", "base/util.py"), ("base/caf\u00e9.py", "base/cafe\u0301.py")],
)
def test_a_case_or_unicode_variant_of_another_distributions_file_is_refused_where_names_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theirs: str, mine: str
) -> None:
    """On macOS ``Util.py`` and ``util.py`` (or NFC and NFD spellings) are one file:
    modelled on Linux by turning on the folding that filesystem does."""
    from click.testing import CliRunner
    from wh.cli.main import cli
    from wh.install import overwrite

    venv, house = _base_installed(tmp_path, theirs)
    make_wheel(house, "squatter", "1.0", files={mine: b"2\n"})
    before = snapshot(venv)
    monkeypatch.setattr(overwrite, "FOLD_NAMES", True)
    args = ["install", "-r", "squatter", "--wheelhouse", str(house), "--python", str(venv)]
    done = CliRunner().invoke(cli, [*args, "--lockfile", str(tmp_path / "sq.toml")])
    assert done.exit_code == 3, done.output
    assert (
        "(a case or Unicode variant of" in done.output
        and "owned by base (installed)" in done.output
    )
    assert diff(before, snapshot(venv)) == []


def _namespace_neighbours(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``shared/`` is a namespace folder: ``other`` (a wheel, with RECORD) owns
    ``shared/other.py``, the RECORD-less ``debby`` (top_level.txt: shared) owns
    ``shared/debby.py``. A venv with both, and a wheelhouse with newer wheels of each."""
    venv, site = _venv(tmp_path)
    house = tmp_path / "house"
    make_wheel(house, "other", "1.0", files={"shared/other.py": b"OTHER = 1\n"})
    ok = wh("install", "-r", "other==1.0", "--wheelhouse", house, "--python", venv,
            "--lockfile", tmp_path / "o1.toml", cwd=tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    (site / "shared" / "debby.py").write_text("DEBBY = 1\n")
    di = site / "debby-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: debby\nVersion: 1.0\n")
    (di / "top_level.txt").write_text("shared\n")
    make_wheel(house, "other", "2.0", files={"shared/other.py": b"OTHER = 2\n"})
    make_wheel(house, "debby", "2.0", files={"shared/debby.py": b"DEBBY = 2\n"})
    return venv, site, house


def test_a_recordless_namespace_neighbour_claims_no_file_another_record_lists(
    tmp_path: Path,
) -> None:
    """top_level.txt names a folder, not files: where a namespace folder is shared, the
    files another distribution's RECORD lists stay that distribution's. Upgrading ``other``
    is no clash with ``debby``; upgrading ``debby`` leaves ``other``'s file in place."""
    venv, site, house = _namespace_neighbours(tmp_path)
    up = wh("install", "-r", "other==2.0", "--wheelhouse", house, "--python", venv,
            "--lockfile", tmp_path / "o2.toml", cwd=tmp_path)  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert (site / "shared" / "other.py").read_text() == "OTHER = 2\n"
    up = wh("install", "-r", "debby==2.0", "--wheelhouse", house, "--python", venv,
            "--lockfile", tmp_path / "d2.toml", cwd=tmp_path)  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert (site / "shared" / "debby.py").read_text() == "DEBBY = 2\n"
    assert (site / "shared" / "other.py").read_text() == "OTHER = 2\n"


@pytest.mark.parametrize(
    ("theirs", "mine", "clash"),
    [("base/Util.py", "base/util.py", True), ("base/caf\u00e9.py", "base/cafe\u0301.py", False)],
)
def test_on_windows_case_variants_clash_and_nfc_nfd_spellings_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theirs: str, mine: str, clash: bool
) -> None:
    """Windows modelled by its ``normcase`` (lower case; ``key`` compares by it): NTFS folds
    case, so ``util.py`` over ``Util.py`` is an overwrite of base's file; it keeps NFC and
    NFD spellings apart, so those are two files and no clash."""
    import os

    from wh.env.environment import probe
    from wh.install import overwrite
    from wh.install.layout import Schemes, layout

    monkeypatch.setattr(overwrite, "FOLD_NAMES", overwrite.folds_names("win32"))
    venv, house = _base_installed(tmp_path, theirs)
    wheel = make_wheel(house, "squatter", "1.0", files={mine: b"2\n"})
    env = probe(venv)
    monkeypatch.setattr(os.path, "normcase", str.lower)
    found = overwrite.clashes([layout(wheel, Schemes.of(env))], env.dists)
    if clash:
        assert [(c.writer, c.owner) for c in found] == [("squatter", "base")], found
    else:
        assert found == []

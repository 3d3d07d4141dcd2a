"""Staged install: one uv call (or one per overwrite round) writes every wheel beside the
venv, then each batch is moved into place in dependency order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from wh.env.environment import Environment
from wh.install.layout import Schemes, Target, WheelLayout, key
from wh.install.mover import Mover
from wh.install.overwrite import overwritten
from wh.install.rounds import rounds, superseded
from wh.install.stagedir import can_stage
from wh.install.watch import Early, _Folders
from wh.wheel.writer import write_wheel

from tests.envsnap import make_venv, site_packages, wh
from tests.factory import layout_of


def test_rounds_split_only_differing_writes_of_one_path() -> None:
    a = layout_of("a", ("ns/__init__.py", "sha256=same"), ("shared.py", "sha256=a"))
    b = layout_of("b", ("ns/__init__.py", "sha256=same"), ("b/x.py", "sha256=b"))
    c = layout_of("c", ("shared.py", "sha256=c"))
    d = layout_of("d", ("shared.py", "sha256=d"))
    e = layout_of("e", ("e.py", "sha256=e"), scripts=("tool",))
    f = layout_of("f", ("f.py", "sha256=f"), scripts=("tool",))
    got = [[lay.name for lay in r] for r in rounds([a, b, c, d, e, f])]
    # identical namespace files share a call; each overwrite of shared.py waits one more
    # round than the last writer; two wheels generating one script never share a call
    assert got == [["a", "b", "e"], ["c", "f"], ["d"]]


def test_the_last_writer_of_each_path_is_who_overwrites_it() -> None:
    """``overwritten`` says, per wheel, whose copy of a path it replaces: the last earlier
    writer's, unless the content is the same; staging's rounds and the superseded files
    (which checks skip) both read it."""
    a = layout_of("a", ("ns/__init__.py", "sha256=same"), ("shared.py", "sha256=a"))
    b = layout_of("b", ("ns/__init__.py", "sha256=same"), ("shared.py", "sha256=b"))
    c = layout_of("c", ("shared.py", "sha256=c"), scripts=("tool",))
    d = layout_of("d", ("d.py", "sha256=d"), scripts=("tool",))
    shared = next(t.cmp_key for t in a.files if t.rel == "shared.py")
    tool = key(Path("/env/bin/tool"))
    assert overwritten([a, b, c, d], scripts=False) == [{}, {0: {shared}}, {1: {shared}}, {}]
    assert overwritten([a, b, c, d], scripts=True)[3] == {2: {tool}}
    # a later wheel's different copy supersedes the earlier one's; scripts are not files
    assert superseded([a, b, c, d]) == {"a": {shared}, "b": {shared}}


def test_rounds_of_disjoint_wheels_are_one_call() -> None:
    lays = [layout_of(n, (f"{n}/__init__.py", f"sha256={n}")) for n in "xyz"]
    assert [[lay.name for lay in r] for r in rounds(lays)] == [["x", "y", "z"]]


def test_only_a_venv_with_every_folder_inside_its_prefix_is_staged(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    inner = Schemes(site, site, tmp_path / "bin", tmp_path, "3.11")
    assert not can_stage(tmp_path, inner)  # no pyvenv.cfg: not a venv
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert can_stage(tmp_path, inner)
    outer = Schemes(site, site, tmp_path.parent / "elsewhere-bin", tmp_path, "3.11")
    assert not can_stage(tmp_path, outer)
    (tmp_path / ".wh-stage").mkdir()  # not wh's: a killed install's is rolled back
    assert not can_stage(tmp_path, inner)


def test_a_staging_folder_wh_did_not_make_is_left_alone(tmp_path: Path) -> None:
    """A venv that already holds ``.wh-stage`` is installed batch by batch, and the
    folder's contents stay as they were."""
    from tests.factory import make_wheel

    house = tmp_path / "house"
    make_wheel(house, "base", "1.0")
    make_wheel(house, "top", "1.0", requires=["base"])
    venv = make_venv(tmp_path / "venv")
    (venv / ".wh-stage").mkdir()
    (venv / ".wh-stage" / "notes.txt").write_text("mine\n")
    done = wh(
        "install", "-r", "top", "--wheelhouse", house, "--python", venv,
        "--lockfile", tmp_path / "l.toml", "--backend", "uv", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "installing batch 2/2: top 1.0" in done.stderr
    assert "uv call(s) at once" not in done.stderr
    assert (venv / ".wh-stage" / "notes.txt").read_text() == "mine\n"
    assert sorted(p.name for p in (venv / ".wh-stage").iterdir()) == ["notes.txt"]


def test_staged_install_places_shared_overwritten_and_generated_files(tmp_path: Path) -> None:
    """A namespace folder two wheels share, a file the later wheel overwrites (allowed),
    console scripts, a scripts-scheme file, headers and data: all where one call per batch
    puts them, the later writer winning, and `wh verify` checks every file against RECORD."""
    house = tmp_path / "house"
    write_wheel(
        house,
        "alpha",
        "1.0",
        {
            "ns/__init__.py": b"# namespace\n",
            "ns/alpha/__init__.py": b"A = 1\n",
            "shared_mod.py": b"WHO = 'alpha'\n",
            "alpha-1.0.data/scripts/alpha-tool": b"#!python\nprint('alpha')\n",
            "alpha-1.0.data/headers/alpha.h": b"int alpha;\n",
            "alpha-1.0.data/data/share/alpha/notes.txt": b"alpha notes\n",
        },
    )
    write_wheel(
        house,
        "beta",
        "1.0",
        {
            "ns/__init__.py": b"# namespace\n",
            "ns/beta/__init__.py": b"B = 2\n",
            "shared_mod.py": b"WHO = 'beta'\n",
        },
        requires_dist=["alpha"],
        extra_dist_info={"entry_points.txt": b"[console_scripts]\nbeta-cli = ns.beta:B\n"},
    )
    venv = make_venv(tmp_path / "venv")
    done = wh(
        "install", "-r", "beta", "--allow-overwrite", "beta", "--wheelhouse", house,
        "--python", venv, "--lockfile", tmp_path / "l.toml", "--backend", "uv",
        "--check-import", "ns.alpha", "--check-import", "ns.beta", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "with 2 uv call(s) at once" in done.stderr  # beta overwrites shared_mod.py
    assert "moving into place batch 2/2: beta 1.0" in done.stderr
    sp = site_packages(venv)
    assert (sp / "shared_mod.py").read_text() == "WHO = 'beta'\n"
    assert (sp / "ns" / "alpha" / "__init__.py").is_file()
    assert (sp / "ns" / "beta" / "__init__.py").is_file()
    assert (sp / "alpha-1.0.dist-info" / "RECORD").is_file()
    assert (sp / "beta-1.0.dist-info" / "RECORD").is_file()
    cli = venv / "bin" / "beta-cli"
    assert cli.read_text().splitlines()[0] == f"#!{venv / 'bin' / 'python'}"
    assert (venv / "bin" / "alpha-tool").is_file()
    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert (venv / "include" / "site" / py / "alpha" / "alpha.h").read_text() == "int alpha;\n"
    assert (venv / "share" / "alpha" / "notes.txt").read_text() == "alpha notes\n"
    assert not (venv / ".wh-stage").exists()
    assert not (venv / ".wh-journal").exists()
    again = wh("verify", "--lockfile", tmp_path / "l.toml", "--python", venv, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_staged_check_passes_sound_files_and_only_reports_the_rest(tmp_path: Path) -> None:
    """``Checker.submit_staged`` answers True/False and never raises: a False wheel is
    checked again once moved, and that check decides."""
    from wh.env.environment import probe
    from wh.install import checker
    from wh.install.layout import layout

    from tests.factory import make_wheel
    from tests.fixtures import make_venv as venv_with

    wheel = make_wheel(tmp_path / "w", "tool", "1.0", files={"tool/__init__.py": b"V = 1\n"})
    python = venv_with(tmp_path / "venv", [wheel])
    env = probe(python)
    lay = layout(wheel, Schemes.of(env))
    with checker.Checker(env) as check:
        assert check.submit_staged(lay, lambda p: p).result() is True
        (env.purelib / "tool" / "__init__.py").write_bytes(b"V = 2\n")
        assert check.submit_staged(lay, lambda p: p).result() is False
        elsewhere = tmp_path / "nowhere"
        assert check.submit_staged(lay, lambda p: elsewhere / p.name).result() is False


@pytest.mark.parametrize("uv_cache", ["shared", "private"])
def test_a_lying_record_in_a_staged_install_is_refused_and_rolled_back(
    tmp_path: Path, uv_cache: str
) -> None:
    """evil's RECORD names other bytes for evil/__init__.py (same size): the check where it
    was staged (or where a private uv cache unpacked it) fails, the check in place decides,
    and the venv is as it was."""
    from tests.envsnap import diff, snapshot
    from tests.factory import make_wheel
    from tests.hostile import record_hash_mismatch

    house = tmp_path / "house"
    record_hash_mismatch(house)
    make_wheel(house, "app", "1.0", requires=["evil"])
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    done = wh(
        "install", "-r", "app", "--wheelhouse", house, "--python", venv,
        "--lockfile", tmp_path / "l.toml", "--backend", "uv", "--uv-cache", uv_cache,
        cwd=tmp_path, env={"WH_UV_CACHE_DIR": str(tmp_path / "uv-cache")},
    )  # fmt: skip
    assert done.returncode != 0
    assert "with 1 uv call(s) at once" in done.stderr
    assert f"{uv_cache} uv cache (--uv-cache {uv_cache})" in done.stderr
    assert "evil-1.0-py3-none-any.whl: RECORD hash mismatch for 'evil/__init__.py'" in done.stderr
    assert diff(before, snapshot(venv)) == []


def test_uv_marks_a_staged_wheel_written_with_its_installer_file(tmp_path: Path) -> None:
    """The early check waits for the file ``Mover.written`` names. Real uv writes it (its
    INSTALLER, after every file of the wheel); a wheel that ships its own INSTALLER has
    no such mark and is left to the check in place."""
    from wh.env.environment import probe, venv_python
    from wh.install.backend import choose
    from wh.install.layout import layout

    from tests.factory import make_wheel

    plain = make_wheel(tmp_path / "w", "plain", "1.0", files={"plain/__init__.py": b"P = 1\n"})
    own = make_wheel(
        tmp_path / "w",
        "own",
        "1.0",
        files={"own/__init__.py": b"O = 1\n", "own-1.0.dist-info/INSTALLER": b"someone\n"},
    )
    python = venv_python(make_venv(tmp_path / "venv"))
    env = probe(python)
    schemes = Schemes.of(env)
    lays = [layout(plain, schemes), layout(own, schemes)]
    root = tmp_path / "venv" / ".wh-stage"
    mover = Mover(root, env.prefix, schemes, [lays])
    mark = mover.written(lays[0])
    assert mark is not None and mark.is_relative_to(root / "0")
    assert mark.name == "INSTALLER" and mark.parent.name == "plain-1.0.dist-info"
    assert mover.written(lays[1]) is None
    assert not mark.exists()
    uv = choose("uv")
    assert uv.capabilities.stages
    uv.stage(python, [plain, own], root / "0", link_mode="copy")
    assert mark.read_text().strip() == "uv"
    assert (mark.parent.parent / "plain" / "__init__.py").read_bytes() == b"P = 1\n"


def _staged_by_hand(tmp_path: Path, big: bytes) -> tuple[Environment, WheelLayout, Mover, Path]:
    """A venv, a wheel with one big file and a small one, and a Mover over an empty
    stage; the staging of the files is left to the test (standing in for uv)."""
    from wh.env.environment import probe, venv_python
    from wh.install.layout import layout

    from tests.factory import make_wheel

    wheel = make_wheel(
        tmp_path / "w", "big", "1.0", files={"big/blob.bin": big, "big/__init__.py": b"B = 1\n"}
    )
    env = probe(venv_python(make_venv(tmp_path / "venv")))
    schemes = Schemes.of(env)
    lay = layout(wheel, schemes)
    mover = Mover(tmp_path / "venv" / ".wh-stage", env.prefix, schemes, [[lay]])
    return env, lay, mover, wheel


def _stage_file(mover: Mover, lay: WheelLayout, rel: str, data: bytes) -> None:
    target = next(t for t in lay.files if t.rel == rel)
    dest = mover.mirror(mover.stage_of[lay.name], target.path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


@pytest.mark.parametrize("size", [2 << 20, 100 << 10])
def test_early_checks_a_big_file_once_it_has_its_size_and_the_rest_once_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """While uv writes a wheel: a file of 64 KiB or more is hashed as soon as its staged copy
    has the RECORD size, the rest once uv's INSTALLER marks the wheel written; the wheel
    passes (and is remembered) only when every part passed."""
    import hashlib

    from wh.cache import verified
    from wh.install import checker

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    big = (bytes(range(256)) * (size // 256 + 1))[:size]  # 2 MiB, or 100 KiB
    env, lay, mover, wheel = _staged_by_hand(tmp_path, big)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with checker.Checker(env, {lay.wheel: digest}) as check:
        early = Early(check, mover, [lay])
        early.poll()
        assert early.parts == {}  # nothing staged yet
        _stage_file(mover, lay, "big/blob.bin", big[:1000])
        early.poll()
        assert early.parts == {}  # still being written
        _stage_file(mover, lay, "big/blob.bin", big)
        early.poll()
        [(first, files)] = early.parts[canonicalize_name("big")]
        assert [t.rel for t in files] == ["big/blob.bin"] and first.result() is True
        for t in lay.files:
            if t.arcname and t.rel != "big/blob.bin":
                _stage_file(mover, lay, t.rel, _member(wheel, t.arcname))
        early.poll()
        assert "big" not in early.whole  # no INSTALLER yet: the small files wait
        _stage_file(mover, lay, "big-1.0.dist-info/INSTALLER", b"uv\n")
        early.poll()
        assert "big" in early.whole
        for part, _ in early.parts[canonicalize_name("big")]:
            part.result()  # passed() drops checks not yet started
        whole, some = early.passed([lay])
    assert whole == {"big"} and some == {}
    assert verified.known("contents", digest)


def test_a_big_file_hashed_too_soon_leaves_the_wheel_to_the_check_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A staged file with its RECORD size but other bytes (a writer that sizes the file
    first) fails only the early part: the wheel is not passed, the files that matched are
    reported so the check in place skips them, and nothing is remembered."""
    from wh.install import checker

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    big = bytes(range(256)) * 8192
    env, lay, mover, wheel = _staged_by_hand(tmp_path, big)
    with checker.Checker(env) as check:
        early = Early(check, mover, [lay])
        _stage_file(mover, lay, "big/blob.bin", bytes(len(big)))  # zeros, full size
        early.poll()
        for t in lay.files:
            if t.arcname and t.rel != "big/blob.bin":
                _stage_file(mover, lay, t.rel, _member(wheel, t.arcname))
        _stage_file(mover, lay, "big-1.0.dist-info/INSTALLER", b"uv\n")
        early.poll()
        for part, _ in early.parts[canonicalize_name("big")]:
            part.result()
        whole, some = early.passed([lay])
    assert whole == set()
    checked = {t.rel for t in some[canonicalize_name("big")]}
    assert "big/__init__.py" in checked and "big/blob.bin" not in checked


@pytest.mark.parametrize("count", [3, _Folders.LIST_OVER + 5])
def test_watched_files_are_reported_once_each_as_they_reach_their_size(
    tmp_path: Path, count: int
) -> None:
    """Probed one by one (a few files in a folder) or found through a listing (many): a
    file is ready when its staged copy has its RECORD size, not before, and only once."""
    base = Path("/env/site")  # the final folder; ``stage`` maps it under tmp_path
    files = [(Target(base, f"pkg/data/f{i}.bin", "sha256=x"), 100 + i) for i in range(count)]
    files.append((Target(base, "top.bin", "sha256=x"), 7))  # a file at the top of its base

    def stage(b: Path) -> Path:
        return tmp_path / "stage" / b.name

    folders = _Folders(files, stage)

    def write(rel: str, n: int) -> None:
        dest = stage(base) / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(b"x" * n)

    assert folders.complete() == []  # nothing written: the folder does not exist yet
    write("pkg/data/f0.bin", 100)  # complete
    write("pkg/data/f1.bin", 50)  # still being written
    write("pkg/data/other.txt", 1)  # not watched
    assert [t.rel for t in folders.complete()] == ["pkg/data/f0.bin"]
    assert folders.complete() == []  # f0 is not reported again; f1 is short
    write("pkg/data/f1.bin", 101)
    write("top.bin", 7)
    assert sorted(t.rel for t in folders.complete()) == ["pkg/data/f1.bin", "top.bin"]
    for i in range(2, count):
        write(f"pkg/data/f{i}.bin", 100 + i)
    assert len(folders.complete()) == count - 2
    assert folders.complete() == []


def _member(wheel: Path, arcname: str) -> bytes:
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        return zf.read(arcname)


def test_a_shared_folder_moves_its_unshared_subfolders_whole(tmp_path: Path) -> None:
    """``nvidia/`` is written by many wheels, ``nvidia/cublas/`` by one: each wheel's
    subfolder moves with one rename, the shared files one by one, the result the same."""
    import os

    prefix = tmp_path / "venv"
    site = prefix / "lib" / "site-packages"
    schemes = Schemes(site, site, prefix / "bin", prefix, "3.11")

    def lay(name: str, *rels: str) -> WheelLayout:
        files = tuple(Target(site, rel, f"sha256={rel}") for rel in rels)
        return WheelLayout(canonicalize_name(name), tmp_path / f"{name}.whl", files, ())

    a = lay("a", "ns/__init__.py", "ns/a/lib/x.so", "ns/a/y.h", "a-1.dist-info/RECORD")
    b = lay("b", "ns/__init__.py", "ns/b/z.so", "ns/shared/b.txt", "b-1.dist-info/RECORD")
    c = lay("c", "ns/shared/c.txt", "c-1.dist-info/RECORD")
    root = prefix / ".wh-stage"
    mover = Mover(root, prefix, schemes, [[a, b, c]])
    for one in (a, b, c):
        for t in one.files:
            staged = mover.mirror(mover.stage_of[one.name], t.path)
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_text(t.rel)
    staged_a = os.stat(root / "0" / "lib" / "site-packages" / "ns" / "a").st_ino
    for one in (a, b, c):
        mover.move(one)
    mover.finish()
    for one in (a, b, c):
        assert all(t.path.read_text() == t.rel for t in one.files)
    assert os.stat(site / "ns" / "a").st_ino == staged_a  # one rename, not a new folder
    assert not root.exists()

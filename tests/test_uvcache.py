"""The uv cache a staged copy-mode install unpacks through: the choice over data, what uv's
real cache is read as, and installs through each (real uv, real venvs)."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from wh.errors import WheelhouseError
from wh.install.backend import UvBackend, uv_binary
from wh.install.layout import Schemes, WheelLayout, layout
from wh.install.uvcache import Wheel, cache_dir, cached_releases, choose, release
from wh.install.validate import Hashed, installed_problems, remember_unpacked
from wh.settings import Settings
from wh.wheel.writer import write_wheel

from tests.envsnap import make_venv, site_packages, wh
from tests.factory import make_wheel

UV = uv_binary()
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not installed")


def _wheels(*spec: tuple[str, str, int]) -> list[Wheel]:
    return [Wheel(canonicalize_name(n), v, size) for n, v, size in spec]


def test_auto_is_private_when_the_missing_wheels_hold_at_least_half_the_bytes() -> None:
    wheels = _wheels(("torch", "2.9.1", 900), ("idna", "3.20", 100))
    assert choose("auto", wheels, set()).private
    assert choose("auto", wheels, None).private  # cache unreadable: counts as empty
    assert choose("auto", wheels, {release("idna", "3.20")}).private  # 900 of 1000 missing
    warm = choose("auto", wheels, {release("torch", "2.9.1")})  # 100 of 1000 missing
    assert not warm.private
    assert warm.reason == "shared uv cache: 0.0 of 0.0 MB of wheels not in uv's cache"
    half = _wheels(("a", "1.0", 500), ("b", "1.0", 500))
    assert choose("auto", half, {release("a", "1.0")}).private
    assert not choose("auto", [], set()).private  # nothing to write


def test_a_cached_release_matches_by_normalised_name_and_version() -> None:
    wheels = _wheels(("Typing_Extensions", "4.16", 10))
    assert not choose("auto", wheels, {release("typing-extensions", "4.16")}).private
    assert choose("auto", wheels, {release("typing-extensions", "4.16.1")}).private


def test_shared_and_private_are_taken_as_given() -> None:
    wheels = _wheels(("torch", "2.9.1", 900))
    assert not choose("shared", wheels, set()).private
    assert choose("private", wheels, {release("torch", "2.9.1")}).private
    with pytest.raises(ValueError, match="'Private' is not one of auto, shared, private"):
        choose("Private", wheels, set())


def test_cached_releases_reads_uvs_pointer_files(tmp_path: Path) -> None:
    """Recorded from uv 0.13.9's cache: a local wheel under url/<digest>/, and the index
    bucket's shape without a digest; lock files and unpacked folders are not pointers."""
    (tmp_path / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    url = tmp_path / "wheels-v8" / "url" / "21c5b31c960dff7a" / "torch"
    url.mkdir(parents=True)
    (url / "2.9.1-cp311-cp311-manylinux_2_28_x86_64.rev").write_bytes(b"\x82")
    (url / "2.9.1-cp311-cp311-manylinux_2_28_x86_64.lock").write_bytes(b"")
    (url / "2.9.1-cp311-cp311-manylinux_2_28_x86_64").mkdir()
    ao = tmp_path / "wheels-v8" / "url" / "9ee097511b0710a7" / "torchao"
    ao.mkdir(parents=True)
    (ao / "0.9.0-e890ba4cb93433ac.rev").write_bytes(b"\x82")  # uv's digest of long tags
    pypi = tmp_path / "wheels-v5" / "pypi" / "typing-extensions"
    pypi.mkdir(parents=True)
    (pypi / "4.16.0-py3-none-any.http").write_bytes(b"")
    (tmp_path / "archive-v0" / "GHBhNpc1IjBIltfS" / "idna").mkdir(parents=True)
    assert cached_releases(tmp_path) == {
        release("torch", "2.9.1"),
        release("torchao", "0.9.0"),
        release("typing-extensions", "4.16.0"),
    }
    assert cached_releases(tmp_path / "absent") == set()


@needs_uv
def test_the_real_uv_cache_is_read_as_holding_what_uv_installed(tmp_path: Path) -> None:
    assert UV is not None
    house = tmp_path / "house"
    for name in ("Alpha_Pkg", "beta"):
        write_wheel(house, name, "1.2", {f"{name.lower()}/__init__.py": b"X = 1\n"})
    cache = tmp_path / "uv-cache"
    backend = UvBackend(UV, Settings())
    env = dict(backend.environment(), UV_CACHE_DIR=str(cache))
    assert cache_dir(UV, env) == cache
    venv = make_venv(tmp_path / "venv")
    wheels = sorted(house.glob("alpha*.whl"))
    cmd = backend.command(venv / "bin" / "python", wheels, link_mode="copy", reinstall=False)
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert cached_releases(cache) == {release("alpha-pkg", "1.2")}


def _stack(house: Path) -> None:
    """Two dependency levels (so wh stages), a console script, data and a big file."""
    write_wheel(
        house,
        "base",
        "1.0",
        {
            "base/__init__.py": b"B = 1\n",
            "base/blob.bin": os.urandom(300_000),
            "base-1.0.data/data/share/base/notes.txt": b"notes\n",
        },
    )
    write_wheel(
        house,
        "top",
        "1.0",
        {"top/__init__.py": b"from base import B\n"},
        requires_dist=["base"],
        extra_dist_info={"entry_points.txt": b"[console_scripts]\ntop-cli = top:B\n"},
    )


def _install(tmp_path: Path, venv: Path, cache: Path, *extra: str) -> str:
    done = wh(
        "install", "-r", "top", "--wheelhouse", tmp_path / "house", "--python", venv,
        "--lockfile", tmp_path / "l.toml", "--backend", "uv", "--check-import", "top", *extra,
        cwd=tmp_path, env={"WH_UV_CACHE_DIR": str(cache)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "uv call(s) at once" in done.stderr  # staged
    return done.stderr


def _files(venv: Path) -> list[Path]:
    return [Path(d, f) for d, _, fs in os.walk(venv) for f in fs]


@needs_uv
def test_a_cold_install_unpacks_once_through_a_private_cache_and_leaves_uvs_alone(
    tmp_path: Path,
) -> None:
    """uv's cache empty: each file is written once (hardlinked from a throwaway cache in the
    staging folder, which is removed), so every installed file has one link, as with copy;
    uv's own cache is not filled. Then a shared install fills it, and auto follows it."""
    _stack(tmp_path / "house")
    cache = tmp_path / "uv-cache"
    venv = make_venv(tmp_path / "venv")
    err = _install(tmp_path, venv, cache)
    assert "private uv cache: 0.3 of 0.3 MB of wheels not in uv's cache" in err
    sp = site_packages(venv)
    assert (sp / "base" / "blob.bin").stat().st_size == 300_000
    assert (venv / "share" / "base" / "notes.txt").read_text() == "notes\n"
    assert (venv / "bin" / "top-cli").is_file()
    assert [f for f in _files(venv) if f.stat().st_nlink != 1] == []
    assert not (venv / ".wh-stage").exists()
    assert cached_releases(cache) == set()
    check = wh("verify", "--lockfile", tmp_path / "l.toml", "--python", venv, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr

    shared = make_venv(tmp_path / "shared")
    assert "shared uv cache (--uv-cache shared)" in _install(
        tmp_path, shared, cache, "--uv-cache", "shared"
    )
    assert cached_releases(cache) == {release("base", "1.0"), release("top", "1.0")}
    assert [f for f in _files(shared) if f.stat().st_nlink != 1] == []  # copied

    warm = make_venv(tmp_path / "warm")
    assert "shared uv cache: 0.0 of 0.3 MB of wheels not in uv's cache" in _install(
        tmp_path, warm, cache
    )
    forced = make_venv(tmp_path / "forced")
    assert "private uv cache (--uv-cache private)" in _install(
        tmp_path, forced, cache, "--uv-cache", "private"
    )
    assert [f for f in _files(forced) if f.stat().st_nlink != 1] == []


@needs_uv
def test_another_link_mode_never_takes_a_private_cache(tmp_path: Path) -> None:
    """hardlink asks for links into the user's uv cache: it is kept, and filled."""
    _stack(tmp_path / "house")
    cache = tmp_path / "uv-cache"
    venv = make_venv(tmp_path / "venv")
    err = _install(tmp_path, venv, cache, "--link-mode", "hardlink", "--uv-cache", "private")
    assert "private uv cache" not in err
    assert "shared uv cache: link mode hardlink links into it" in err
    assert cached_releases(cache) == {release("base", "1.0"), release("top", "1.0")}
    assert (site_packages(venv) / "base" / "blob.bin").stat().st_nlink == 2


def _unpacked(tmp_path: Path, files: dict[str, bytes]) -> tuple[WheelLayout, Schemes, Path]:
    """A wheel's layout over a fake venv, and the wheel unpacked as uv's cache holds it."""
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", files=files)
    site = tmp_path / "venv" / "site-packages"
    schemes = Schemes(site, site, tmp_path / "venv" / "bin", tmp_path / "venv", "3.11")
    root = tmp_path / "archive-v0" / "Q1w2E3r4"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(root)
    return layout(wheel, schemes), schemes, root


def _mismatch(lay: WheelLayout, schemes: Schemes, hashed: Hashed | None) -> list[str]:
    with pytest.raises(WheelhouseError) as caught:
        installed_problems([lay], schemes.scripts, hashed=hashed)
    return list(caught.value.details)


def _link_into_place(lay: WheelLayout, root: Path) -> None:
    for t in lay.files:
        if t.arcname:
            t.path.parent.mkdir(parents=True, exist_ok=True)
            os.link(root / t.arcname, t.path)


def test_a_file_hashed_where_uv_unpacked_it_is_not_read_again_through_a_hardlink(
    tmp_path: Path,
) -> None:
    """``remember_unpacked`` records each matching file by inode, size and mtime; the check
    of the installed hardlink takes the digest from there. The record is keyed by identity
    only: bytes changed behind a restored mtime pass through it, which shows it is used;
    a new mtime, or no record, reads the file and finds the change."""
    lay, schemes, root = _unpacked(tmp_path, {"pkg/data.bin": b"A" * 5000})
    hashed: Hashed = {}
    remember_unpacked(lay, str(root), schemes.scripts, hashed)
    assert len(hashed) == sum(1 for t in lay.files if t.hash)  # all but RECORD
    _link_into_place(lay, root)
    installed_problems([lay], schemes.scripts, hashed=hashed)
    data = schemes.purelib / "pkg" / "data.bin"
    st = data.stat()
    data.write_bytes(b"B" * 5000)
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    installed_problems([lay], schemes.scripts, hashed=hashed)  # taken from the record
    assert _mismatch(lay, schemes, None) == [
        "pkg-1.0-py3-none-any.whl: RECORD hash mismatch for 'pkg/data.bin'"
    ]
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    assert _mismatch(lay, schemes, hashed) == [
        "pkg-1.0-py3-none-any.whl: RECORD hash mismatch for 'pkg/data.bin'"
    ]


def test_an_unpacked_file_that_lies_about_its_record_is_not_recorded(tmp_path: Path) -> None:
    lay, schemes, root = _unpacked(tmp_path, {"pkg/data.bin": b"A" * 5000})
    (root / "pkg" / "data.bin").write_bytes(b"C" * 5000)  # not what RECORD says
    hashed: Hashed = {}
    remember_unpacked(lay, str(root), schemes.scripts, hashed)
    identity = {(s.st_dev, s.st_ino) for s in [(root / "pkg" / "data.bin").stat()]}
    assert identity.isdisjoint((k[0], k[1]) for k in hashed)
    assert hashed  # the other files were
    _link_into_place(lay, root)
    assert _mismatch(lay, schemes, hashed) == [
        "pkg-1.0-py3-none-any.whl: RECORD hash mismatch for 'pkg/data.bin'"
    ]


@needs_uv
def test_each_archive_is_hashed_once_uv_has_renamed_it_into_place(tmp_path: Path) -> None:
    """``Unpacked`` finds a wheel's archive by its .dist-info folder, skips uv's temporary
    folders, queues the archive once, and hands it back for removal when hashed."""
    from wh.env.environment import probe, venv_python
    from wh.install.checker import Checker
    from wh.install.watch import Unpacked

    env = probe(venv_python(make_venv(tmp_path / "venv")))
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", files={"pkg/data.bin": b"A" * 5000})
    lay = layout(wheel, Schemes.of(env))
    archives = tmp_path / "cache" / "archive-v0"
    (archives / ".tmpAbCd" / "pkg").mkdir(parents=True)  # still being written
    with Checker(env) as check:
        watch = Unpacked(check, archives, [lay])
        watch.poll()
        assert check.unpacking == {}
        root = archives / "Q1w2E3r4"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(root)
        watch.poll()
        watch.poll()
        assert list(check.unpacking) == [lay.name]
        assert list(check.unpacked()) == [str(root)]
        st = (root / "pkg" / "data.bin").stat()
        assert (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) in check.hashed

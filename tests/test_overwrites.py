"""Overwrites between wheels are found online, from RECORD: `wh lock` reports them with the
profile field that allows them, and `wh bundle` refuses a bundle whose install would fail."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from wh import __version__
from wh.install.layout import Schemes, key, layout, write_keys
from wh.install.overwrite import between_wheels

from tests.factory import make_wheel
from tests.fixtures import run_wh

REAL = Path("/opt/pypi/files")


def _house(tmp_path: Path) -> Path:
    """flashinfer-python and torch-c-dlpack-ext both ship a top-level build_backend.py."""
    h = tmp_path / "house"
    make_wheel(
        h,
        "flashinfer-python",
        "0.5.0",
        ["torch-c-dlpack-ext"],
        files={"flashinfer/__init__.py": b"", "build_backend.py": b"a = 1\n"},
    )
    make_wheel(
        h,
        "torch-c-dlpack-ext",
        "0.1.0",
        files={"torch_c_dlpack_ext/__init__.py": b"", "build_backend.py": b"b = 2\n"},
    )
    # an identical file in two wheels (a shared namespace __init__) is no overwrite
    make_wheel(h, "ns-a", "1.0", files={"ns/__init__.py": b"", "ns/a.py": b""})
    make_wheel(h, "ns-b", "1.0", files={"ns/__init__.py": b"", "ns/b.py": b""})
    return h  # fmt: skip


ROOTS = ["-r", "flashinfer-python", "-r", "torch-c-dlpack-ext", "-r", "ns-a", "-r", "ns-b"]


def test_lock_reports_overwrites_with_the_field_that_allows_them(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house, python = _house(tmp_path), new_venv()
    lock = tmp_path / "l.toml"
    common = [*ROOTS, "--wheelhouse", house, "--python", python, "--lockfile", lock]
    r = run_wh("lock", *common)
    assert r.returncode == 0, r.stderr
    assert "flashinfer-python and torch-c-dlpack-ext both write build_backend.py" in r.stdout
    assert 'allow-overwrite = ["flashinfer-python"]' in r.stdout
    assert "ns/__init__.py" not in r.stdout
    data = json.loads(run_wh("lock", *common, "--json").stdout)
    assert data["overwrites"] == [
        "flashinfer-python and torch-c-dlpack-ext both write build_backend.py"
    ]
    # the field it names works: allowed, nothing to report, and the install goes through
    # (flashinfer-python needs torch-c-dlpack-ext here, so it is installed after it and wins)
    ok = run_wh("lock", *common, "--allow-overwrite", "flashinfer-python")
    assert ok.returncode == 0 and "both write" not in ok.stdout
    inst = run_wh("install", "--locked", "--lockfile", lock, "--python", python)
    assert inst.returncode == 0, inst.stderr


def test_bundle_refuses_what_the_install_would_refuse(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house, python = _house(tmp_path), new_venv()
    tool = tmp_path / "tool"
    make_wheel(tool, "wh", __version__)
    out = tmp_path / "b.zip"
    common = [*ROOTS, "--wheelhouse", house, "--python", python, "--wh-wheels", tool, "-o", out]
    r = run_wh("bundle", *common)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "the bundle's install would fail" in r.stderr
    assert "both write build_backend.py" in r.stderr
    assert "allow-overwrite" in r.stderr
    assert not out.exists()
    r = run_wh("bundle", *common, "--allow-overwrite", "flashinfer-python")
    assert r.returncode == 0, r.stderr
    assert out.is_file()


def test_real_opencv_wheels_overwrite_each_other(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """Real wheels of this machine's pip configuration: opencv-python and
    opencv-python-headless both ship cv2/."""
    names = [
        "opencv_python-5.0.0.93-cp37-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "opencv_python_headless-5.0.0.93-cp37-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    ]
    if not all((REAL / n).is_file() for n in names):
        pytest.skip(f"{REAL} lacks the opencv and numpy wheels")
    house = tmp_path / "real"
    house.mkdir()
    for n in names:
        os.symlink(REAL / n, house / n)
    r = run_wh(
        "lock", "-r", "opencv-python", "-r", "opencv-python-headless", "--wheelhouse", house,
        "--python", new_venv(), "--lockfile", tmp_path / "l.toml", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)["overwrites"]
    assert any(line.endswith("both write cv2/cv2.abi3.so") for line in found), found
    assert all("opencv-python" in line and "opencv-python-headless" in line for line in found)


@pytest.mark.parametrize("backend", ["uv", "pip"])
def test_an_allowed_overwrite_within_one_batch_installs(
    tmp_path: Path, new_venv: Callable[..., Path], backend: str
) -> None:
    """Both wheels in one dependency level (one batch, no staging): the later one of the
    plan wins, as the member check expects, with either backend."""
    h = tmp_path / "house"
    make_wheel(
        h,
        "flashinfer-python",
        "0.5.0",
        files={"flashinfer/__init__.py": b"", "build_backend.py": b"a = 1\n"},
    )
    make_wheel(
        h,
        "torch-c-dlpack-ext",
        "0.1.0",
        files={"torch_c_dlpack_ext/__init__.py": b"", "build_backend.py": b"b = 2\n"},
    )
    python = new_venv()
    r = run_wh(
        "install", "-r", "flashinfer-python", "-r", "torch-c-dlpack-ext", "--wheelhouse", h,
        "--python", python, "--lockfile", tmp_path / "l.toml", "--backend", backend,
        "--allow-overwrite", "torch-c-dlpack-ext",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "batch 1/1" in r.stderr
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert (site / "build_backend.py").read_bytes() == b"b = 2\n"


def _schemes() -> Schemes:
    site = Path("/s/site-packages")
    return Schemes(site, site, Path("/s/bin"), Path("/s"), "3.12")


def test_write_keys_are_the_paths_layout_maps_on_every_real_wheel() -> None:
    """The overwrite pass compares paths from the central directory alone; they must be
    the ones the full mapping gives, member for member, on every real wheel here (data
    schemes, headers, console scripts, dist-info files a backend generates)."""
    wheels = sorted(REAL.glob("*.whl"))
    if not wheels:
        pytest.skip(f"{REAL} holds no wheels")
    schemes = _schemes()
    for w in wheels:
        lay = layout(w, schemes)
        expected = [t.cmp_key for t in lay.files] + [key(p) for p in lay.scripts]
        assert write_keys(w, schemes) == expected, w.name


def test_only_wheels_sharing_a_path_are_compared_and_every_kind_of_path_counts(
    tmp_path: Path,
) -> None:
    """A ``.data/purelib`` file that lands on another wheel's module, a console script two
    wheels make (and nothing else in common), an identical shared file (no overwrite); a
    wheel sharing nothing is left out of the comparison, and a broken one is skipped."""
    h = tmp_path / "house"

    def ep(target: str) -> bytes:
        return f"[console_scripts]\ntool = {target}:main\n".encode()

    a = make_wheel(h, "aa", "1.0", files={"a.py": b"x = 1\n", "ns/__init__.py": b""})
    b = make_wheel(
        h, "bb", "1.0", files={"bb-1.0.data/purelib/a.py": b"x = 2\n", "ns/__init__.py": b""}
    )
    c = make_wheel(h, "cc", "1.0", files={"c.py": b""})
    e = make_wheel(
        h, "ee", "1.0", files={"e.py": b"", "ee-1.0.dist-info/entry_points.txt": ep("e")}
    )
    f = make_wheel(
        h, "ff", "1.0", files={"f.py": b"", "ff-1.0.dist-info/entry_points.txt": ep("f")}
    )
    broken = h / "dd-1.0-py3-none-any.whl"  # no dist-info folder: left to the install
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr("a.py", b"x = 3\n")
    found = between_wheels([a, broken, c, e, b, f])
    assert "bb and aa both write a.py" in found
    assert any(line.startswith("ff and ee both write ") and "/tool" in line for line in found)
    assert not any("ns/__init__.py" in line or "cc" in line for line in found), found
    assert between_wheels([a, c, b], ["bb"]) == []


def test_paths_of_one_hash_only_make_wheels_compared_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass keeps each path's hash, not the path: where different paths share a
    hash, their wheels are mapped whole and compared by path, which finds the same
    overwrites and no other."""
    from wh.install import overwrite

    h = tmp_path / "house"
    a = make_wheel(h, "aa", "1.0", files={"a.py": b"x = 1\n", "ns/__init__.py": b""})
    b = make_wheel(h, "bb", "1.0", files={"a.py": b"x = 2\n", "ns/__init__.py": b""})
    c = make_wheel(h, "cc", "1.0", files={"c.py": b""})
    d = make_wheel(h, "dd", "1.0", files={"d.py": b""})
    want = between_wheels([a, c, b, d])
    assert want == ["bb and aa both write a.py"]
    mapped: list[Path] = []
    real_layout = overwrite.layout

    def counting(wheel: Path, *args: object, **kw: object) -> object:
        mapped.append(wheel)
        return real_layout(wheel, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(overwrite, "layout", counting)
    assert between_wheels([a, c, b, d]) == want
    assert sorted(mapped) == sorted([a, b])  # distinct hashes: only the two that share
    mapped.clear()
    monkeypatch.setattr(overwrite, "hash", lambda _key: 7, raising=False)  # one hash for all
    assert between_wheels([a, c, b, d]) == want
    assert sorted(mapped) == sorted([a, b, c, d])


def test_a_shared_wheel_whose_record_cannot_be_read_is_left_to_the_install(
    tmp_path: Path,
) -> None:
    """RECORD is read only for wheels that share a path; one whose RECORD fails its CRC
    is skipped there as at the first pass, and the other clashes are still found."""
    h = tmp_path / "house"
    a = make_wheel(h, "aa", "1.0", files={"a.py": b"x = 1\n", "b.py": b"y = 1\n"})
    b = make_wheel(h, "bb", "1.0", files={"b.py": b"y = 2\n"})
    good = make_wheel(h, "cc", "1.0", files={"a.py": b"x = 2\n"})
    bad = tmp_path / "cc-1.0-py3-none-any.whl"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    data = bad.read_bytes()
    at = data.index(b"a.py,sha256=")  # the stored RECORD's bytes: one changed, CRC now wrong
    bad.write_bytes(data[:at] + b"A" + data[at + 1 :])
    with zipfile.ZipFile(bad) as z, pytest.raises(zipfile.BadZipFile):
        z.read("cc-1.0.dist-info/RECORD")
    assert between_wheels([a, bad, b]) == ["bb and aa both write b.py"]
    assert between_wheels([a, good, b]) == [
        "cc and aa both write a.py",
        "bb and aa both write b.py",
    ]


def _site(python: Path) -> Path:
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    return site


def _plant(site: Path, folder: str, metadata: str, files: Sequence[str] = ()) -> Path:
    """A metadata folder in ``site`` as a broken or stale install leaves one: its METADATA
    headers, and where ``files`` are given a RECORD of them (the folder's own included)."""
    meta = site / folder
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\n" + metadata)
    if files:
        own = [f"{folder}/{n}" for n in ("METADATA", "RECORD", "INSTALLER")]
        (meta / "RECORD").write_text("".join(f"{f},,\n" for f in (*files, *own)))
        (meta / "INSTALLER").write_text("pip\n")
    return meta


def test_a_distribution_installed_twice_is_named_before_an_install_replaces_it(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """A stale second dist-info of a name (an interrupted upgrade leaves one): Python, pip
    and wh see only the first; replacing it would leave the other's files behind. An
    install that writes the name is refused naming both copies, with nothing changed, and
    `wh verify` warns. Before, the refusal said the files of one copy were owned by no
    installed distribution, or a reinstall went ahead. Found by putting broken
    distributions into a real venv."""
    from tests.fixtures import site_snapshot

    house = tmp_path / "house"
    wheels = [make_wheel(house, "app", "1.0", ["lib>=1"]), make_wheel(house, "lib", "1.0")]
    python = new_venv(wheels)
    _plant(_site(python), "lib-9.9.dist-info", "Name: lib\nVersion: 9.9\n")
    lock = tmp_path / "pylock.toml"
    # a lock of the wheelhouse alone: which copy Python finds first follows the folder's
    # listing order, so the reinstall below writes lib whichever it is
    target = ("--platform", "manylinux_2_17_x86_64", "--python-version", "3.11")
    r = run_wh("lock", "-r", "app", "--wheelhouse", house, *target, "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    before = site_snapshot(python)
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python, "--reinstall")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "1 distribution(s) the install replaces are installed more than once" in r.stderr
    assert "lib-9.9.dist-info" in r.stderr and "lib-1.0.dist-info" in r.stderr
    assert "(the one Python finds)" in r.stderr and "delete the metadata folder" in r.stderr
    assert site_snapshot(python) == before
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert "lib is installed twice" in r.stdout + r.stderr


def test_a_distribution_whose_version_is_not_pep_440_is_named_before_an_install(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """An installed distribution with version "UNKNOWN" (an old setuptools wrote it). wh's
    reader passed over it: an install of another name staged everything and then failed
    in uv ("Failed to read metadata") or pip (InvalidVersion), and an install of its own
    name was refused saying its files were owned by nothing. Now any install that changes
    something is refused first, naming it, with nothing changed; `wh verify` warns; and
    the hint's `pip uninstall` leads to an install that works. Found in a real venv."""
    from tests.fixtures import site_snapshot

    house = tmp_path / "house"
    wheels = [make_wheel(house, "app", "1.0"), make_wheel(house, "old", "2.0")]
    python = new_venv(wheels[:1])
    site = _site(python)
    (site / "old.py").write_text("x = 0\n")
    meta = _plant(site, "old-UNKNOWN.dist-info", "Name: old\nVersion: UNKNOWN\n", ["old.py"])
    lock = tmp_path / "pylock.toml"
    target = ("--platform", "manylinux_2_17_x86_64", "--python-version", "3.11")
    r = run_wh("lock", "-r", "app", "-r", "old", "--wheelhouse", house, *target, "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    # a lock for the live environment says so first
    live = run_wh("lock", "-r", "app", "-r", "old", "--wheelhouse", house, "--python", python,
                  "--lockfile", tmp_path / "live.toml")  # fmt: skip
    assert live.returncode == 0, live.stderr
    said = f"warning: old is installed with version 'UNKNOWN' at {meta}, which is not a PEP 440"
    assert said + " version" in live.stderr
    before = site_snapshot(python)
    for backend in ("uv", "pip"):
        r = run_wh(
            "install", "--locked", "--lockfile", lock, "--python", python, "--backend", backend
        )
        assert r.returncode == 3, r.stdout + r.stderr
        assert "1 installed distribution(s) have a version that is not PEP 440" in r.stderr
        assert f"old 'UNKNOWN' at {meta}: the install writes this name over it" in r.stderr
        assert site_snapshot(python) == before
    (hint,) = re.findall(r"`([^`]+ -m pip --python [^`]+ uninstall old)`", r.stderr)
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    assert "old is installed with version 'UNKNOWN'" in r.stdout + r.stderr
    # the hint, as written (wh's pip, told the target: this venv has no pip; pip asks
    # before it removes), then the same install
    done = subprocess.run(
        shlex.split(hint),
        input="y\n",
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "old").is_dir() and not meta.exists()


def test_verify_says_what_it_could_not_read_of_the_installed_metadata(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """A metadata folder that names no distribution, and a requirement that is not PEP 508
    (`lib (>=1`), were passed over in silence: the first's files counted as owned by
    nothing, and the dependency checks passed without the second. `wh verify` now warns
    of each (and still passes: they are warnings), and an install says it cannot check
    the requirement."""
    house = tmp_path / "house"
    wheels = [make_wheel(house, "app", "1.0", ["lib>=1"]), make_wheel(house, "lib", "1.0")]
    python = new_venv(wheels)
    ghost = _plant(_site(python), "ghost-1.0.dist-info", "Version: 1.0\n")
    _plant(_site(python), "odd-1.0.dist-info", "Name: odd\nVersion: 1.0\nRequires-Dist: lib (>=1\n")
    lock = tmp_path / "pylock.toml"
    target = ("--platform", "manylinux_2_17_x86_64", "--python-version", "3.11")
    r = run_wh("lock", "-r", "app", "--wheelhouse", house, *target, "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    r = run_wh("verify", "--lockfile", lock, "--python", python)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"the metadata at {ghost} names no distribution (no Name)" in out
    assert "odd requires 'lib (>=1', which is not a PEP 508 requirement (" in out
    assert "the dependency check did not follow it" in out
    # an install that changes lib cannot check odd's requirement on it either: it says so
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python, "--reinstall")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "wh cannot tell whether this plan breaks it" in out

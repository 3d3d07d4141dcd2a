"""wh bundle: contents, manifest, tamper detection, and an offline bootstrap in a netns."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from wh import __version__
from wh.app.bundle import MANIFEST, extract, make_bundle, open_bundle, write_manifest
from wh.app.hooks import TargetSpec
from wh.app.prefetch import RECORDS
from wh.cli.main import cli
from wh.errors import LockError
from wh.model.manifest import Manifest
from wh.model.profile import Checks, Profile

from tests.factory import make_wheel
from tests.fixtures import bootstrap_offline

PROFILE = Profile(
    name="demo",
    requirements=(Requirement("demo-app"),),
    checks=Checks(imports=("demo_app",)),
)


def _wheelhouse(tmp: Path) -> Path:
    house = tmp / "wheelhouse"
    house.mkdir()
    make_wheel(house, "demo-app", "1.0", ["demo-lib>=1"])
    make_wheel(house, "demo-lib", "1.0")
    make_wheel(house, "demo-lib", "0.9")
    make_wheel(house, "unrelated", "1.0")
    return house


def _bundle(tmp: Path, name: str = "demo.zip", sign: Path | None = None) -> Path:
    """A bundle for this interpreter, with a stand-in wh wheel (no index needed)."""
    tool = tmp / "tool"
    tool.mkdir(exist_ok=True)
    make_wheel(tool, "wh", __version__)
    out = tmp / name
    make_bundle(
        Manifest.of(PROFILE),
        _wheelhouse(tmp),
        TargetSpec(Path(sys.executable)),
        out,
        tool_wheels=tool,
        sign_key=sign,
    )
    return out


def test_bundle_holds_exactly_the_lock_and_a_manifest(tmp_path: Path) -> None:
    """The lock, its wheels with the record of what each one's compiled members need (the
    wheelhouse had none: the bundle writes them, so an offline lock reads no wheel's
    members), wh's wheel, the installers and a manifest of them all."""
    out = _bundle(tmp_path)
    house = tmp_path / "wheelhouse"
    digests = {
        name: hashlib.sha256((house / name).read_bytes()).hexdigest()
        for name in ("demo_app-1.0-py3-none-any.whl", "demo_lib-1.0-py3-none-any.whl")
    }
    with zipfile.ZipFile(out) as zf:
        names = sorted(zf.namelist())
        sums = zf.read(f"demo/{MANIFEST}").decode()
        mode = zf.getinfo("demo/install.sh").external_attr >> 16
        records = {
            d: json.loads(zf.read(f"demo/wheels/{RECORDS}/{d}.json")) for d in digests.values()
        }
    assert names == sorted(
        [
            "demo/SHA256SUMS",
            "demo/bundle.txt",
            "demo/install.ps1",
            "demo/install.sh",
            "demo/pylock.demo.toml",
            f"demo/wh/wh-{__version__}-py3-none-any.whl",
            "demo/wheels/demo_app-1.0-py3-none-any.whl",
            "demo/wheels/demo_lib-1.0-py3-none-any.whl",
            *(f"demo/wheels/{RECORDS}/{d}.json" for d in digests.values()),
        ]
    )
    assert all(r["sha256"] == d and r["natives"]["binaries"] == [] for d, r in records.items())
    assert mode & 0o111
    listed = sorted(line.split("  ", 1)[1] for line in sums.splitlines())
    assert listed == sorted(n.removeprefix("demo/") for n in names if not n.endswith(MANIFEST))
    # deterministic: the same inputs give the same bytes
    again = tmp_path / "again"
    again.mkdir()
    assert _bundle(again).read_bytes() == out.read_bytes()


@pytest.mark.parametrize("name", ["demo.zip", "demo.tar.gz"])
def test_open_bundle_verifies_and_finds_the_lock(tmp_path: Path, name: str) -> None:
    out = _bundle(tmp_path, name)
    closers: list[object] = []
    lock = open_bundle(out, on_close=closers.append, allow_unsigned=True)
    assert lock.name == "pylock.demo.toml" and lock.is_file()
    assert len(closers) == 1


def _tampered_zip(src: Path, dst: Path, member: str) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for zi in zin.infolist():
            data = zin.read(zi)
            if zi.filename == member:
                data = data[:-30] + bytes(30)  # same size, other bytes
            zout.writestr(zi, data)


def _venv(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], check=True)
    return tmp / "bin" / "python"


def _has(python: Path, module: str) -> bool:
    done = subprocess.run([str(python), "-c", f"import {module}"], cwd=python.parent, check=False)
    return done.returncode == 0


def test_tampered_wheel_in_bundle_is_refused_before_install(tmp_path: Path) -> None:
    out = _bundle(tmp_path)
    bad = tmp_path / "bad.zip"
    _tampered_zip(out, bad, "demo/wheels/demo_lib-1.0-py3-none-any.whl")
    python = _venv(tmp_path / "venv")
    result = CliRunner().invoke(
        cli,
        ["install", "--bundle", str(bad), "--python", str(python), "--allow-unsigned"],
        catch_exceptions=False,
    )
    assert result.exit_code == 5, result.output
    assert "wheels/demo_lib-1.0-py3-none-any.whl: sha256" in result.output
    assert "nothing was installed" in result.output
    assert not _has(python, "demo_lib") and not _has(python, "demo_app")
    # the untampered bundle installs into the same environment
    good = CliRunner().invoke(
        cli, ["install", "--bundle", str(out), "--python", str(python), "--allow-unsigned"]
    )
    assert good.exit_code == 0, good.output
    assert _has(python, "demo_app")


def test_tampering_with_wheel_and_manifest_is_caught_by_the_lock(tmp_path: Path) -> None:
    out = _bundle(tmp_path)
    root = tmp_path / "unpacked"
    extract(out, root)
    folder = root / "demo"
    wheel = folder / "wheels" / "demo_lib-1.0-py3-none-any.whl"
    data = wheel.read_bytes()
    wheel.write_bytes(data[:-30] + bytes(30))
    write_manifest(folder)  # the tamperer also rewrote SHA256SUMS
    open_bundle(folder, on_close=lambda f: None, allow_unsigned=True)  # the manifest agrees
    python = _venv(tmp_path / "venv")
    result = CliRunner().invoke(
        cli, ["install", "--bundle", str(folder), "--python", str(python), "--allow-unsigned"]
    )
    assert result.exit_code == 5, result.output
    assert "do not match" in result.output and not _has(python, "demo_lib")


def test_unlisted_wheel_and_unsafe_archive_entries_are_refused(tmp_path: Path) -> None:
    out = _bundle(tmp_path)
    root = tmp_path / "unpacked"
    extract(out, root)
    shutil.copy(root / "demo/wheels/demo_lib-1.0-py3-none-any.whl", root / "demo/wheels/x.whl")
    with pytest.raises(LockError, match="1 file"):
        open_bundle(root / "demo", on_close=lambda f: None, allow_unsigned=True)
    (root / "demo/wheels/x.whl").unlink()
    # a file below a folder of wheels/ (where the wheels' natives records go) counts too
    assert (root / "demo/wheels/.wh-natives").is_dir()  # the bundle's own records
    (root / "demo/wheels/.wh-natives/planted.json").write_text("{}")
    with pytest.raises(LockError, match="1 file") as info:
        open_bundle(root / "demo", on_close=lambda f: None, allow_unsigned=True)
    assert info.value.details == ("wheels/.wh-natives/planted.json: not in the manifest",)
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.txt", b"x")
    with pytest.raises(LockError, match="unsafe"):
        extract(evil, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


def _tar(path: Path, entries: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tf:
        for info in entries:
            body = data.get(info.name)
            if body is not None:
                info.size = len(body)
            tf.addfile(info, io.BytesIO(body) if body is not None else None)
    return path


def test_a_tar_unpacks_and_its_links_and_unsafe_names_are_refused_before_writing(
    tmp_path: Path,
) -> None:
    """A tar goes through the same checks as a zip: a sound one unpacks, folders included;
    a link, a device or an escaping name refuses the whole archive, nothing written."""
    folder = tarfile.TarInfo("demo/sub")
    folder.type = tarfile.DIRTYPE
    sound = _tar(
        tmp_path / "sound.tar",
        [folder, tarfile.TarInfo("demo/sub/a.txt")],
        {"demo/sub/a.txt": b"a\n"},
    )
    extract(sound, tmp_path / "ok")
    assert (tmp_path / "ok/demo/sub/a.txt").read_bytes() == b"a\n"
    link = tarfile.TarInfo("demo/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    device = tarfile.TarInfo("demo/null")
    device.type = tarfile.CHRTYPE
    first = tarfile.TarInfo("demo/first.txt")
    evil = _tar(
        tmp_path / "evil.tar",
        [first, link, device, tarfile.TarInfo("../escape.txt")],
        {"demo/first.txt": b"x", "../escape.txt": b"x"},
    )
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(LockError, match="3 unsafe entry") as info:
        extract(evil, dest)
    assert info.value.details[:2] == (
        "'demo/link': is a link or a special file",
        "'demo/null': is a link or a special file",
    )
    assert info.value.details[2].startswith("'../escape.txt': ")
    assert list(dest.iterdir()) == [] and not (tmp_path / "escape.txt").exists()


def test_a_bundle_cut_short_or_damaged_is_refused_by_name(tmp_path: Path) -> None:
    """A tar.gz cut short in transit used to end the install on gzip's EOFError; a zip
    whose entry's bytes were damaged, on zlib's error: both are a damaged bundle, named."""
    from wh.errors import BundleError

    out = _bundle(tmp_path, "demo.tar.gz")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(out.read_bytes()[: out.stat().st_size * 2 // 3])
    with pytest.raises(BundleError) as info:
        open_bundle(cut, on_close=lambda f: None, allow_unsigned=True)
    assert info.value.rule == "damaged-archive" and info.value.exit_code == 5
    assert info.value.message.startswith(f"{cut} cannot be unpacked: it is damaged or cut short")
    assert "EOFError" in info.value.message
    zipped = tmp_path / "z.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/bundle.txt", b"lock=pylock.toml\n" * 400)
    data = bytearray(zipped.read_bytes())
    at = data.find(b"bundle.txt") + len(b"bundle.txt") + 20  # inside the deflate data
    data[at : at + 8] = b"\xff" * 8
    zipped.write_bytes(bytes(data))
    with pytest.raises(BundleError) as info:
        extract(zipped, tmp_path / "zout")
    assert info.value.rule == "damaged-archive"


def test_a_bundle_info_file_that_is_not_text_is_refused_by_name(tmp_path: Path) -> None:
    from wh.errors import BundleError

    root = tmp_path / "unpacked"
    extract(_bundle(tmp_path), root)
    (root / "demo/bundle.txt").write_bytes(b"lock=\xff\xfe.toml\n")
    with pytest.raises(BundleError) as info:
        open_bundle(root / "demo", on_close=lambda f: None, allow_unsigned=True)
    assert info.value.rule == "unreadable-info" and "bundle.txt cannot be read" in str(
        info.value.message
    )


def test_names_given_twice_or_to_a_file_and_a_folder_are_refused_before_writing(
    tmp_path: Path,
) -> None:
    """On Windows ``A.txt`` and ``a.txt`` are one file, and a file cannot be the folder of
    another entry: an archive holding either is refused whole, nothing written."""
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("demo/A.txt", b"1")
        zf.writestr("demo/a.txt", b"2")
        zf.writestr("demo/lib", b"a file")
        zf.writestr("demo/lib/x.py", b"below it")
        zf.writestr("demo/sub/", b"")
        zf.writestr("demo/sub/ok.txt", b"a folder given as an entry, and a file in it")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(LockError, match="2 unsafe entry") as info:
        extract(evil, dest)
    assert info.value.details == (
        "'demo/a.txt': is in the archive twice (names compared case-folded)",
        "'demo/lib': is a file and the folder of other entries",
    )
    assert list(dest.iterdir()) == []


# -- the real thing: wh built and its dependencies fetched, installed with no network ---------


@pytest.mark.network
@pytest.mark.slow
def test_bootstrap_installs_offline_in_a_network_namespace(
    no_network: list[str], tmp_path: Path
) -> None:
    base = Path(sys.base_prefix) / "bin" / "python3"
    house = _wheelhouse(tmp_path)
    out = tmp_path / "demo.zip"
    made = CliRunner().invoke(
        cli,
        [
            "bundle",
            "-r",
            "demo-app",
            "--check-import",
            "demo_app",
            "--wheelhouse",
            str(house),
            "--python",
            str(base),
            "-o",
            str(out),
        ],
    )
    assert made.exit_code == 0, made.output
    with zipfile.ZipFile(out) as zf:
        tool = {n.split("/")[-1].split("-")[0] for n in zf.namelist() if "/wh/" in n}
    assert {"wh", "uv", "pip", "click", "packaging"} <= tool
    unpacked = tmp_path / "offline"
    extract(out, unpacked)
    target = tmp_path / "target-venv"
    script = unpacked / "demo" / "install.sh"
    done = bootstrap_offline(no_network, script, target, base, tmp_path / "offline-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bundle manifest verified" in done.stderr
    assert "verification passed" in done.stdout
    py = target / "bin" / "python"
    assert _has(py, "demo_app") and _has(py, "demo_lib")
    assert not _has(py, "installer")  # wh lives in its own venv, not in the target

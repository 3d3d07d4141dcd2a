"""Windows hazards, modelled on Linux (issue 22): ntpath for drives and UNC shares, injected
WinError 5/32 and read-only files, a stand-in kernel32 for share modes, command-line and
MAX_PATH arithmetic, NTFS change times, reserved names and case/NFC collisions. None of
this ran on Windows itself (docs/guarantees.md says so)."""

from __future__ import annotations

import ntpath
import os
import posixpath
import stat
import subprocess
import sys
import zipfile
from pathlib import Path, PureWindowsPath
from typing import Any

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from wh import __version__
from wh.app.bundle import extract, make_bundle
from wh.app.hooks import TargetSpec
from wh.cache import stamps
from wh.cli.main import cli
from wh.errors import LockError, WheelhouseError
from wh.install import backend
from wh.model.lockfile import lock_relative
from wh.model.manifest import Manifest
from wh.model.profile import Profile
from wh.proc import fsretry, win32
from wh.wheel import portable

from tests.envsnap import diff, make_venv, site_packages, snapshot
from tests.factory import make_wheel

# -- a wheelhouse and a lock on different drives, or on a UNC share -------------------------


@pytest.mark.parametrize(
    ("wheel", "lock_dir", "expect"),
    [
        (r"C:\wh\house\a-1.0-py3-none-any.whl", r"C:\wh\locks", "../house/a-1.0-py3-none-any.whl"),
        (r"E:\house\a-1.0-py3-none-any.whl", r"C:\wh\locks", "E:/house/a-1.0-py3-none-any.whl"),
        (
            r"\\nas\share\house\a-1.0-py3-none-any.whl",
            r"C:\wh\locks",
            "//nas/share/house/a-1.0-py3-none-any.whl",
        ),
    ],
)
def test_a_wheel_on_another_drive_or_share_is_locked_by_absolute_path(
    wheel: str, lock_dir: str, expect: str
) -> None:
    """``ntpath.relpath`` raises ValueError across drives (a USB stick is the usual air-gap
    layout); the lock then names the wheel by its absolute path, which PEP 751 allows."""
    if ":" in wheel[:2] and wheel[0] != lock_dir[0]:
        with pytest.raises(ValueError):
            ntpath.relpath(wheel, lock_dir)
    assert lock_relative(wheel, lock_dir, ntpath) == expect


def test_a_lock_with_absolute_wheel_paths_installs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end, with relpath failing as it does across Windows drives."""
    house = tmp_path / "house"
    make_wheel(house, "far", "1.0")
    venv = make_venv(tmp_path / "venv")
    lock = tmp_path / "locks" / "far.toml"

    def no_relpath(path: str, start: str | None = None) -> str:
        raise ValueError(f"path is on mount {path[:3]!r}, start on mount {start!r}")

    monkeypatch.setattr(posixpath, "relpath", no_relpath)
    args = ["-r", "far", "--wheelhouse", str(house), "--python", str(venv), "--lockfile"]
    done = CliRunner().invoke(cli, ["lock", *args, str(lock)])
    assert done.exit_code == 0, done.output
    monkeypatch.undo()
    assert f'path = "{house / "far-1.0-py3-none-any.whl"}"' in lock.read_text()
    done = CliRunner().invoke(
        cli, ["install", "--locked", "--lockfile", str(lock), "--python", str(venv)]
    )
    assert done.exit_code == 0, done.output
    assert (site_packages(venv) / "far" / "__init__.py").is_file()


# -- bundle extraction: every entry checked before anything is written ---------------------


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("C:/Windows/evil.txt", "starts with a drive letter"),
        ("C:evil.txt", "starts with a drive letter"),
        ("demo/aux.py", "reserved device name on Windows"),
        ("demo/CON", "reserved device name on Windows"),
        ("demo/file.txt:hidden", "alternate data stream"),
        ("demo/trailing. ", "ends with a dot or a space"),
        ("/etc/evil", "is absolute"),
        ("demo/../../evil", "escapes the install root"),
        ("//nas/share/evil.txt", "is absolute"),  # a UNC path once "/" reads as "\\"
        ("demo\\..\\..\\evil.txt", "contains a backslash"),
    ],
)
def test_bundle_extraction_refuses_windows_hazards_before_writing(
    tmp_path: Path, entry: str, why: str
) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("demo/first.txt", b"written before the check, once")
        zf.writestr(entry, b"x")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(LockError, match="unsafe entry") as info:
        extract(evil, dest)
    assert any(repr(entry) in d and why in d for d in info.value.details), info.value.details
    assert list(dest.iterdir()) == []  # nothing written, not even the sound first entry


# -- wheels a bundle for Windows or macOS would carry ---------------------------------------


def _tool(tmp: Path) -> Path:
    tool = tmp / "tool"
    make_wheel(tool, "wh", __version__)
    return tool


@pytest.mark.parametrize(
    ("files", "other", "expect"),
    [
        ({"winpkg/aux.py": b""}, {}, "'aux.py' is a reserved device name on Windows"),
        ({"winpkg/notes. ": b""}, {}, "ends with a dot or a space"),
        ({"winpkg/a:b": b""}, {}, "alternate data stream"),
        ({"shared/Util.py": b"1"}, {"shared/util.py": b"2"}, "differ only in case"),
        (
            {"shared/caf\u00e9.py": b"1"},
            {"shared/cafe\u0301.py": b"2"},
            "differ only in Unicode normalisation (NFC/NFD)",
        ),
    ],
)
def test_a_windows_bundle_refuses_paths_windows_cannot_hold(
    tmp_path: Path, files: dict[str, bytes], other: dict[str, bytes], expect: str
) -> None:
    house = tmp_path / "house"
    make_wheel(house, "winpkg", "1.0", ["otherpkg"] if other else [], files=files)
    make_wheel(house, "otherpkg", "1.0", files=other or {"otherpkg/__init__.py": b""})
    out = tmp_path / "b.zip"
    profile = Profile(name="w", requirements=(Requirement("winpkg"),))
    spec = TargetSpec(platform="win_amd64", python_version="3.12")
    with pytest.raises(WheelhouseError, match="cannot be written on Windows as named") as info:
        make_bundle(Manifest.of(profile), house, spec, out, tool_wheels=_tool(tmp_path))
    assert any(expect in d for d in info.value.details), info.value.details
    assert not out.exists()


def test_the_same_wheels_bundle_for_linux(tmp_path: Path) -> None:
    """Reserved Windows names are fine on Linux; the check applies to Windows targets."""
    house = tmp_path / "house"
    make_wheel(house, "winpkg", "1.0", files={"winpkg/aux.py": b""})
    out = tmp_path / "b.zip"
    profile = Profile(name="w", requirements=(Requirement("winpkg"),))
    spec = TargetSpec(platform="manylinux_2_28_x86_64", python_version="3.12")
    make_bundle(Manifest.of(profile), house, spec, out, tool_wheels=_tool(tmp_path))
    assert out.is_file()


REAL_DATA_WHEELS = (  # real wheels whose members sit in .data/ schemes (scripts, data)
    Path("/opt/pypi/files/jsonpointer-3.1.1-py3-none-any.whl"),
    Path("/opt/pypi/files/jsonpatch-1.33-py2.py3-none-any.whl"),
    Path("/opt/pypi/files/jupyterlab_pygments-0.3.0-py3-none-any.whl"),
)


@pytest.mark.skipif(
    not all(p.is_file() for p in REAL_DATA_WHEELS), reason="needs the real wheels in /opt/pypi"
)
def test_real_wheels_with_data_schemes_bundle_for_windows(tmp_path: Path) -> None:
    """Members under ``NAME.data/scripts`` or ``NAME.data/data`` are checked as written, not
    as the internal name of where they land (once refused as "'<scripts>' contains '<>'")."""
    import shutil

    house = tmp_path / "house"
    house.mkdir()
    for w in REAL_DATA_WHEELS:
        shutil.copy(w, house)
        assert any(".data/" in n for n in zipfile.ZipFile(w).namelist())
    make_wheel(house, "winpkg", "1.0", files={"winpkg-1.0.data/scripts/winpkg-tool": b"#!python\n"})
    out = tmp_path / "b.zip"
    reqs = (Requirement("jsonpatch"), Requirement("jupyterlab-pygments"), Requirement("winpkg"))
    profile = Profile(name="w", requirements=reqs)
    spec = TargetSpec(platform="win_amd64", python_version="3.12")
    make_bundle(Manifest.of(profile), house, spec, out, tool_wheels=_tool(tmp_path))
    assert out.is_file()


# -- renames and deletions while an antivirus holds the file --------------------------------


def _winerror(code: int) -> PermissionError:
    exc = PermissionError(13, "Access is denied" if code == 5 else "in use by another process")
    exc.winerror = code  # type: ignore[attr-defined]
    return exc


def _flaky_replace(monkeypatch: pytest.MonkeyPatch, failures: list[OSError]) -> None:
    """``os.replace`` failing with ``failures`` in turn (an antivirus scan), then working."""
    real = os.replace
    fails = iter(failures)

    def flaky(a: Any, b: Any) -> None:
        exc = next(fails, None)
        if exc is not None:
            raise exc
        real(a, b)

    monkeypatch.setattr(os, "replace", flaky)


@pytest.mark.parametrize("code", [5, 32])
def test_a_transient_windows_lock_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_text("x")
    _flaky_replace(monkeypatch, [_winerror(code), _winerror(code)])
    waits: list[float] = []
    monkeypatch.setattr(fsretry, "sleep", waits.append)
    fsretry.replace(src, dst)
    assert dst.read_text() == "x" and not src.exists()
    assert len(waits) == 2


def test_retries_are_bounded_and_only_for_transient_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(fsretry, "sleep", waits.append)
    calls: list[int] = []

    def always(*_a: Any) -> None:
        calls.append(1)
        raise _winerror(32)

    monkeypatch.setattr(os, "replace", always)
    with pytest.raises(PermissionError):
        fsretry.replace(tmp_path / "a", tmp_path / "b")
    assert len(calls) == fsretry.ATTEMPTS and sum(waits) < 2.0
    calls.clear()

    def posix(*_a: Any) -> None:
        calls.append(1)
        raise PermissionError(13, "denied")  # no winerror: not transient

    monkeypatch.setattr(os, "replace", posix)
    with pytest.raises(PermissionError):
        fsretry.replace(tmp_path / "a", tmp_path / "b")
    assert calls == [1]


def test_rmtree_clears_the_read_only_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows refuses to delete a file with FILE_ATTRIBUTE_READONLY: modelled by an unlink
    that fails while the file's write bit is clear (POSIX root would delete it anyway)."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    for p in (tree / "ro.txt", tree / "sub" / "ro2.txt"):
        p.write_text("x")
        p.chmod(stat.S_IREAD)
    real = os.unlink

    def windows_unlink(path: Any, *, dir_fd: int | None = None) -> None:
        mode = os.stat(path, dir_fd=dir_fd).st_mode
        if not mode & stat.S_IWRITE:
            raise _winerror(5)
        real(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", windows_unlink)
    monkeypatch.setattr(fsretry, "sleep", lambda s: None)
    import shutil

    with pytest.raises(PermissionError):
        shutil.rmtree(tree)  # what the journal did before
    fsretry.rmtree(tree)
    assert not tree.exists()


def test_a_posix_permission_error_changes_no_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clearing the read-only flag is Windows' fix only: a POSIX EACCES (no ``winerror``)
    goes up at once and leaves the file's mode as it was (once chmod'ed to 0600)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    f = tree / "tool.sh"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o755)

    def denied(path: Any, *, dir_fd: int | None = None) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "unlink", denied)
    monkeypatch.setattr(fsretry, "sleep", lambda s: pytest.fail("retried a POSIX error"))
    with pytest.raises(PermissionError):
        fsretry.unlink(f)
    with pytest.raises(PermissionError):
        fsretry.rmtree(tree)
    assert stat.S_IMODE(f.stat().st_mode) == 0o755


def test_a_staged_move_survives_a_sharing_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wh.install.mover import move_file

    src, dest = tmp_path / "stage" / "f.py", tmp_path / "env" / "f.py"
    src.parent.mkdir()
    src.write_text("x")
    _flaky_replace(monkeypatch, [_winerror(32)])
    monkeypatch.setattr(fsretry, "sleep", lambda s: None)
    move_file(src, dest)
    assert dest.read_text() == "x"


# -- hashing opens files with FILE_SHARE_DELETE ---------------------------------------------


class _Kernel32:
    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.calls: list[tuple[Any, ...]] = []
        self.closed: list[int] = []

    def CreateFileW(self, *args: Any) -> int:
        self.calls.append(args)
        return self.handle

    def GetLastError(self) -> int:
        return 32

    def CloseHandle(self, h: int) -> None:
        self.closed.append(h)


class _Msvcrt:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def open_osfhandle(self, handle: int, flags: int) -> int:
        if self.fail:
            raise OSError(24, "Too many open files")
        return 7


def test_hashing_opens_files_that_their_links_can_still_be_moved() -> None:
    """A rename of any hardlink of a file fails on Windows while a handle opened without
    FILE_SHARE_DELETE is open (os.open leaves it out): wh opens with every share mode."""
    k = _Kernel32(0x1234)
    assert win32.open_shared(r"C:\v\.wh-stage\x.so", k, _Msvcrt()) == 7
    (_path, access, share, _sec, disposition, _flags, _tmpl) = k.calls[0]
    assert share & 0x4 and share & 0x1 and share & 0x2  # DELETE, READ, WRITE
    assert access == win32.GENERIC_READ and disposition == win32.OPEN_EXISTING
    bad = _Kernel32(0xFFFFFFFFFFFFFFFF)  # INVALID_HANDLE_VALUE
    with pytest.raises(OSError, match="WinError 32"):
        win32.open_shared(r"C:\v\x.so", bad, _Msvcrt())
    leak = _Kernel32(0x99)
    with pytest.raises(OSError):
        win32.open_shared(r"C:\v\x.so", leak, _Msvcrt(fail=True))
    assert leak.closed == [0x99]  # the handle is not leaked


# -- one uv command line for every wheel ----------------------------------------------------


def test_many_wheel_paths_go_in_a_requirements_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """235 wheels under a typical user folder make a ~30,000-character command line, near
    CreateProcess's 32,767: past the budget they go in a requirements file."""
    folder = r"C:\Users\someone.name\Downloads\unlimited-ocr-win\unlimited-ocr-win\wheels"
    wheels = [
        PureWindowsPath(folder, f"nvidia_cusparselt_cu12_{i:03}-0.6.3-py3-none-win_amd64.whl")
        for i in range(235)
    ]
    cmd = [r"C:\wh\.wh-venv\Scripts\uv.exe", "pip", "install", "--no-deps"]
    length = backend.command_line_length([*cmd, *map(str, wheels)])
    assert 29_000 < length < 32_767
    seen: list[list[str]] = []
    texts: list[str] = []

    def capture(c: list[str], what: str, env: Any) -> None:
        seen.append(c)
        texts.append(Path(c[-1]).read_text(encoding="utf-8") if "-r" in c else "")

    monkeypatch.setattr(backend, "_run", capture)
    backend._run_with_wheels(cmd, wheels, "uv", {})
    assert seen[0][:-2] == cmd and seen[0][-2] == "-r"
    assert backend.command_line_length(seen[0]) < 200
    assert texts[0].count("\n") == 235
    assert "nvidia-cusparselt-cu12-000 @ file:///C:/Users/someone.name/Downloads/" in texts[0]
    assert not Path(seen[0][-1]).exists()  # removed after the call
    seen.clear()
    backend._run_with_wheels(cmd, wheels[:3], "uv", {})
    assert seen[0] == [*cmd, *map(str, wheels[:3])]  # short: on the command line as before


@pytest.mark.parametrize("which", ["uv", "pip"])
def test_a_real_install_through_the_requirements_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """The whole `wh install` (staging, the member check, verify) with every backend call
    past the budget: the wheels, in a folder with a space, reach uv or pip through ``-r``."""
    house = tmp_path / "a house with spaces"
    make_wheel(house, "w1", "1.0", ["w2"])
    make_wheel(house, "w2", "1.0", files={"w2/__init__.py": b"", "w2-1.0.data/scripts/w2t": b"x"})
    venv = make_venv(tmp_path / "venv")
    monkeypatch.setattr(backend, "CMDLINE_BUDGET", 0)
    calls: list[list[str]] = []
    real = backend._run

    def spy(cmd: list[str], what: str, env: Any) -> None:
        calls.append(cmd)
        real(cmd, what, env)

    monkeypatch.setattr(backend, "_run", spy)
    lock = str(tmp_path / "l.toml")
    args = ["--wheelhouse", str(house), "--python", str(venv), "--lockfile", lock]
    done = CliRunner().invoke(cli, ["install", "-r", "w1", "--backend", which, *args])
    assert done.exit_code == 0, done.output
    assert calls and all(c[-2] == "-r" for c in calls), calls
    for name in ("w1", "w2"):
        assert (site_packages(venv) / name / "__init__.py").is_file()
    assert (venv / "bin" / "w2t").read_bytes() == b"x"
    verified = CliRunner().invoke(cli, ["verify", "--python", str(venv), "--lockfile", lock])
    assert verified.exit_code == 0, verified.output


# -- MAX_PATH -------------------------------------------------------------------------------


def test_paths_that_reach_max_path_once_staged_are_refused_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    venv = make_venv(deep / "venv")
    house = tmp_path / "house"
    long_name = "m" * 40
    make_wheel(house, "longpkg", "1.0", files={f"longpkg/{'sub' * 10}/{long_name}.py": b""})
    before = snapshot(venv)
    monkeypatch.setattr(portable, "windows_paths_limited", lambda: True)
    done = CliRunner().invoke(
        cli,
        ["install", "-r", "longpkg", "--wheelhouse", str(house), "--python", str(venv),
         "--lockfile", str(tmp_path / "l.toml")],
    )  # fmt: skip
    assert done.exit_code == 10, done.output
    assert "which Windows refuses without long paths; nothing was installed" in done.output
    assert f"{long_name}.py (" in done.output and "characters while staged" in done.output
    assert "LongPathsEnabled" in done.output and "shorter path" in done.output
    assert diff(before, snapshot(venv)) == []


def test_path_length_arithmetic() -> None:
    prefix = "C:\\venvs\\ocr"
    short = (prefix + "\\Lib\\site-packages\\torch\\__init__.py", "torch/__init__.py")
    assert portable.too_long([short], prefix) == []
    rel = "x" * 200
    long_ = (prefix + "\\Lib\\site-packages\\" + rel, rel)
    (why,) = portable.too_long([long_], prefix)
    assert why.endswith("characters while staged)")


# -- the stat keys of the caches on Windows -------------------------------------------------


def test_the_windows_stat_key_uses_the_ntfs_change_time(tmp_path: Path) -> None:
    """st_ctime is the creation time on Windows, which an in-place rewrite keeps: the key
    takes NTFS's ChangeTime instead, and a key without it never matches."""
    f = tmp_path / "w.whl"
    f.write_bytes(b"x")
    st = f.stat()
    first = stamps.windows_key(st, f, lambda p: 111)
    assert first == stamps.windows_key(st, f, lambda p: 111)
    assert first != stamps.windows_key(st, f, lambda p: 112)  # rewritten, mtime restored
    assert first == [st.st_size, st.st_mtime_ns, st.st_ino, 111]  # no st_ctime (creation)
    unknown = stamps.windows_key(st, f, lambda p: None)
    assert unknown != stamps.windows_key(st, f, lambda p: None)


class _BasicInfoKernel32(_Kernel32):
    """kernel32 whose GetFileInformationByHandleEx fills FILE_BASIC_INFO as NTFS does."""

    def __init__(self, handle: int, change: int | None) -> None:
        super().__init__(handle)
        self.change = change
        self.queries: list[tuple[Any, ...]] = []

    def GetFileInformationByHandleEx(self, handle: Any, cls: int, buf: Any, size: int) -> int:
        self.queries.append((handle, cls, size))
        if self.change is None:
            return 0
        buf[0], buf[1], buf[2], buf[3], buf[4] = 10, 20, 30, self.change, 0x20
        return 1


def test_the_ntfs_change_time_is_read_without_keeping_anyone_out() -> None:
    """What ``stat_key`` calls on Windows: FILE_BASIC_INFO's ChangeTime (the 4th field),
    through a handle opened for attributes only, with every share mode, and closed."""
    k = _BasicInfoKernel32(0x42, change=133_000_000_000_000_001)
    assert win32.change_time(r"C:\house\a.whl", k) == 133_000_000_000_000_001
    (_path, access, share, _sec, disposition, _flags, _tmpl) = k.calls[0]
    assert access == win32.FILE_READ_ATTRIBUTES and share == win32.FILE_SHARE_ALL
    assert disposition == win32.OPEN_EXISTING
    assert k.queries == [(0x42, win32.FILE_BASIC_INFO, 40)] and k.closed == [0x42]
    failed = _BasicInfoKernel32(0x43, change=None)  # the query fails: no change time
    assert win32.change_time(r"C:\house\a.whl", failed) is None and failed.closed == [0x43]
    missing = _BasicInfoKernel32(0xFFFFFFFFFFFFFFFF, change=1)  # cannot open
    assert win32.change_time(r"C:\house\a.whl", missing) is None and not missing.queries


# -- install.ps1 creates the target venv with the bundle's Python ---------------------------


def test_bootstrap_scripts_use_the_bundles_target_python(tmp_path: Path) -> None:
    """``py -3`` is the newest Python, which the lock then refuses: install.ps1 asks the
    launcher for the lock's version (python-version= in bundle.txt). PowerShell is not run
    here: the script's text is checked, and install.sh is run for real in test_bundle."""
    from wh.app.bundle import INFO

    from tests.test_bundle import _bundle

    out = _bundle(tmp_path)
    with zipfile.ZipFile(out) as zf:
        info = zf.read(f"demo/{INFO}").decode()
        ps1 = zf.read("demo/install.ps1").decode()
        sh = zf.read("demo/install.sh").decode()
    major_minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"python-version={major_minor}\n" in info
    assert 'return @("py", "-$PyVersion")' in ps1
    assert ps1.index('"-$PyVersion"') < ps1.index('@("py", "-3")')
    assert '"--allow-unsigned"' in ps1 and '"--trust"' in ps1
    assert 'PYTHON="python$PY_VERSION"' in sh
    done = subprocess.run(["sh", "-n", "-c", sh], check=False)
    assert done.returncode == 0


def test_one_wheel_with_nfc_and_nfd_spellings_of_a_name_is_refused(tmp_path: Path) -> None:
    """Two members macOS (and Windows tools that normalise) store as one file."""
    from wh.install.validate import problems

    wheel = make_wheel(
        tmp_path, "uni", "1.0", files={"uni/caf\u00e9.py": b"1", "uni/cafe\u0301.py": b"2"}
    )
    found = problems(wheel, contents=False)
    assert any("entries differ only in case or Unicode normalisation" in p for p in found), found


def test_a_bundle_refuses_a_bomb_among_its_locked_wheels(tmp_path: Path) -> None:
    """Item 6 on the bundle path: a wheel the scan accepts (no metadata member is big)
    but that expands 1000:1 in total is refused before the archive is written."""
    from tests.hostile import total_ratio_bomb

    house = tmp_path / "house"
    total_ratio_bomb(house)
    out = tmp_path / "b.zip"
    profile = Profile(name="b", requirements=(Requirement("evil"),))
    spec = TargetSpec(platform="win_amd64", python_version="3.12")
    with pytest.raises(WheelhouseError, match="failed validation") as info:
        make_bundle(Manifest.of(profile), house, spec, out, tool_wheels=_tool(tmp_path))
    assert any("bytes in all, more than 200:1 (zip bomb?)" in d for d in info.value.details)
    assert info.value.exit_code == 3
    assert not out.exists()


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("winpkg/aux.py", "reserved device name"),
        ("winpkg/CON", "reserved device name"),
        ("winpkg/x.", "ends with a dot or a space"),
        ("winpkg/a:b", "alternate data stream"),
    ],
)
def test_installing_on_windows_refuses_names_it_cannot_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, member: str, why: str
) -> None:
    """Validation on Windows (modelled: ``validate.ON_WINDOWS``) refuses what the bundle
    check refuses; elsewhere such a wheel is sound."""
    from wh.install import validate

    wheel = make_wheel(tmp_path, "winpkg", "1.0", files={member: b"", "winpkg/__init__.py": b""})
    assert validate.problems(wheel, contents=False) == []
    monkeypatch.setattr(validate, "ON_WINDOWS", True)
    found = validate.problems(wheel, contents=False)
    assert any(f"unsafe path {member!r}" in p and why in p for p in found), found

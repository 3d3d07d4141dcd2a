"""wh's cache files, and the stat fields that say a file is unchanged (cheap to import)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

import packaging
import resolvelib

import wh
from wh.settings import cache_dir


def cache_file(kind: str, owner: Path) -> Path:
    """The cache file of ``kind`` ("scan", "probe", "lockmemo") for the file or folder
    ``owner``, named by a digest of its absolute path."""
    name = hashlib.sha256(str(owner).encode()).hexdigest()[:24]
    return cache_dir() / kind / f"{name}.json"


def stat_key(st: os.stat_result, path: str | os.PathLike[str] | None = None) -> list[int]:
    """What must be unchanged for a cached entry to stand. The change time is in it because
    an in-place rewrite can restore size, mtime and inode, but never the change time.

    On Windows ``st_ctime`` is the creation time, which a rewrite keeps: the change time
    comes from NTFS instead (``windows_key``), read through ``path``."""
    if os.name == "nt":  # pragma: no cover - Windows only; modelled by test_windows
        return windows_key(st, path, _ntfs_change_time)
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def windows_key(
    st: os.stat_result,
    path: str | os.PathLike[str] | None,
    change_time: Callable[[str | os.PathLike[str]], int | None],
) -> list[int]:
    """``stat_key`` on Windows: size, mtime, file index and the NTFS ChangeTime. Where the
    change time cannot be read the key is one no later stat matches (a cache miss: slower,
    never wrong)."""
    changed = change_time(path) if path is not None else None
    if changed is None:
        changed = -time.time_ns()  # never equal to a recorded key
    return [st.st_size, st.st_mtime_ns, st.st_ino, changed]


def _ntfs_change_time(path: str | os.PathLike[str]) -> int | None:  # pragma: no cover
    from wh.proc import win32

    return win32.change_time(os.fspath(path), win32.kernel32())


# A cache file's first line: the sha256 of the rest. A file whose rest does not match it
# (a disk or a tool that changed a byte, a copy cut short) is not read: before, a cached
# entry that parsed as JSON stood for what it said, so a damaged natives entry hid
# binaries from the load check and a damaged scan entry changed a wheel's requirements.
_SEAL = "wh-sealed sha256:"


def seal(text: str) -> str:
    """``text`` as a cache file holds it: behind a line with its sha256 (``unseal``)."""
    return f"{_SEAL}{hashlib.sha256(text.encode()).hexdigest()}\n{text}"


def is_sealed(raw: str) -> bool:
    """Whether ``raw`` begins with a seal's line (whether or not it matches)."""
    return raw.startswith(_SEAL)


def unseal(raw: str) -> str | None:
    """The text ``seal`` sealed; None where the seal is missing or does not match."""
    head, sep, text = raw.partition("\n")
    if not sep or not head.startswith(_SEAL):
        return None
    return text if head[len(_SEAL) :] == hashlib.sha256(text.encode()).hexdigest() else None


def read_json(path: Path) -> Any:
    """What ``write_json`` wrote at ``path``; None where it is absent, unreadable, not
    sealed or damaged (its seal does not match), or not JSON. A cache that cannot be read
    only costs speed."""
    try:
        text = unseal(path.read_text(encoding="utf-8"))
        return None if text is None else json.loads(text)
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


def write_json(path: Path, data: Any, *, sealed: bool = True) -> None:
    """Replace ``path`` atomically, sealed for ``read_json`` (``sealed=False``: plain JSON,
    for a file others read, such as a wheelhouse's records). A cache that cannot be
    written only costs speed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    text = json.dumps(data, sort_keys=True, default=str)
    _replace(
        str(path), str(path.with_suffix(f".{os.getpid()}.tmp")), seal(text) if sealed else text
    )


def write_texts(folder: Path, files: Mapping[str, str]) -> None:
    """Replace each file ``folder/NAME`` with its text, sealed and atomically, as
    ``write_json`` does, the folder made once (a lock caches the natives of a few hundred
    wheels at its end)."""
    if not files:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    base, pid = str(folder), os.getpid()
    for name, text in files.items():
        path = os.path.join(base, name)
        _replace(path, f"{path}.{pid}.tmp", seal(text))


def _replace(path: str, tmp: str, text: str) -> None:
    """Write ``text`` to ``tmp``, then move it over ``path``; where either fails (a full
    disk, a file held open on Windows) no temporary file is left behind."""
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            os.unlink(tmp)


def code_stamp() -> list[Any]:
    """wh's own code (an edited checkout changes it) and the libraries that decide a lock.

    Its files are every ``*.py`` below the package (symlinked folders not entered) and
    ``data/*.json``, named relative to it with "/": walked with strings, not Paths (a
    remembered lock reads this on every run)."""
    root = os.path.dirname(wh.__file__)
    names: list[str] = []
    for folder, dirs, files in os.walk(root):
        # os.walk's folders start with ``root``: the rest is the relative name (relpath
        # would also fail where ``root`` and the working folder are on two Windows drives)
        rel = folder[len(root) :].lstrip(os.sep).replace(os.sep, "/")
        prefix = rel + "/" if rel else ""
        names += [prefix + n for n in (*dirs, *files) if n.endswith(".py")]
    with suppress(OSError), os.scandir(os.path.join(root, "data")) as it:
        names += ["data/" + e.name for e in it if e.name.endswith(".json")]
    out = []
    for name in sorted(names, key=lambda n: n.split("/")):  # by parts, as Paths sort
        st = os.stat(os.path.join(root, name))
        out.append([name, st.st_size, st.st_mtime_ns])
    return [wh.__version__, packaging.__version__, resolvelib.__version__, out]

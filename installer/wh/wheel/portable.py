"""Path safety of archive paths: those that escape the folder they are written under
(absolute, a drive letter, "..", backslashes, control characters), and those Windows or
macOS cannot hold as written: reserved device names, trailing dots and spaces, alternate
data streams, and two names one case-insensitive or Unicode-normalising filesystem folds
into one. Validation, bundle extraction and the owned-files listing all ask here.

Pure functions over "/"-separated relative paths, used where wh writes for such a target:
``wh bundle`` for a Windows or macOS target checks every member of every locked wheel
(across wheels: a case variant of another distribution's file overwrites it there), and
bundle extraction checks every entry before writing anything. Windows' rules are those of
``CreateFileW`` for a path without the ``\\\\?\\`` prefix (what pip, uv and Python use);
macOS (APFS, HFS+) folds case by default and HFS+ stores names decomposed (NFD).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence

from wh.errors import LongPathsError

# CON, PRN, AUX, NUL, COM0-9, LPT0-9 (and the superscript digits Windows also reserves),
# with or without an extension: "aux.py" opens the AUX device.
_RESERVED = re.compile(
    r"^(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[0-9\u00b9\u00b2\u00b3])$", re.I
)
_FORBIDDEN = set('<>:"|?*') | {chr(c) for c in range(32)}


# Any name one of the rules below could refuse matches this (a superset, one regex scan):
# the other names, nearly all of them (a torch wheel has 40,000), need no closer look.
_SUSPECT = re.compile(
    r'[<>:"|?*\x00-\x1f]|[. ](?:/|$)'
    r"|(?:^|/)(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[0-9\u00b9\u00b2\u00b3]) *(?:[./]|$)",
    re.I,
)


def windows_problem(path: str) -> str | None:
    """Why Windows cannot create ``path`` as named (None: it can)."""
    if not _SUSPECT.search(path):
        return None
    for part in path.rstrip("/").split("/"):
        if not part:
            continue
        stem = part.split(".", 1)[0].rstrip(" ")
        if _RESERVED.match(stem):
            return f"{part!r} is a reserved device name on Windows"
        if part.endswith((".", " ")) and part not in (".", ".."):
            return f"{part!r} ends with a dot or a space, which Windows drops"
        if ":" in part:
            return f"{part!r} contains ':', an alternate data stream on NTFS"
        bad = sorted(set(part) & _FORBIDDEN)
        if bad:
            return f"{part!r} contains {''.join(bad)!r}, not allowed in Windows names"
    return None


# -- paths that leave the folder they are written under --------------------------------------

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # one regex scan: a torch wheel has 40,000 paths


def unsafe_path(name: str) -> str | None:
    """Why an archive path could escape the install root or fool a filesystem, or None."""
    if _CONTROL.search(name):
        return "contains a control character"
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/"):
        return "is absolute"
    if _DRIVE.match(name):
        return "starts with a drive letter"
    parts = name.rstrip("/").split("/")
    if ".." in parts:
        return "escapes the install root with '..'"
    if "" in parts or "." in parts:
        return "has an empty or '.' component"
    return None


_BAD_CHAR = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\\]")  # control characters, backslash
_DOT_PART = re.compile(r"(?:^|/)\.\.?(?:/|$)", re.M)
_DRIVE_LINE = re.compile(r"^[A-Za-z]:", re.M)


def _suspect(lines: str) -> bool:
    """Whether any of the paths in ``lines`` (one per line) might be unsafe: a superset of
    what ``unsafe_path`` refuses, tested over all of a wheel's paths at once, so that only
    a wheel it matches is looked at path by path (a torch wheel has 40,000 paths)."""
    if not lines or lines.startswith(("/", "\n")) or lines.endswith("\n"):
        return True  # absolute, or an empty path
    if "\n/" in lines or "\n\n" in lines or "//" in lines or _BAD_CHAR.search(lines):
        return True
    if ("/." in lines or "\n." in lines or lines.startswith(".")) and _DOT_PART.search(lines):
        return True
    return ":" in lines and _DRIVE_LINE.search(lines) is not None


def unsafe_paths(paths: Sequence[str], *, windows: bool = False) -> dict[str, str]:
    """Each of ``paths`` that ``unsafe_path`` refuses, with why; with ``windows`` also
    each that Windows cannot create as named (``windows_problem``)."""
    out: dict[str, str] = {}
    if not paths:
        return out
    joined = "\n".join(paths)
    if joined.count("\n") != len(paths) - 1 or _suspect(joined):
        out = {p: why for p in paths if (why := unsafe_path(p))}
    if windows:
        for p in paths:
            if p not in out and (why := windows_problem(p)):
                out[p] = why
    return out


def path_problem(path: str, *, windows: bool) -> str | None:
    """Why one relative archive path must not be written (``unsafe_paths`` of one path)."""
    return unsafe_paths([path], windows=windows).get(path)


def fold(path: str) -> str:
    """The name a case-insensitive, normalising filesystem sees (NFC, then case-folded)."""
    return unicodedata.normalize("NFC", path).casefold()


def collisions(owners: Iterable[tuple[str, str]]) -> list[str]:
    """Pairs of different paths that fold into one, among ``owners`` (path, who writes it):
    "a/Foo.py (x) and a/foo.py (y) are one file on Windows and macOS"."""
    seen: dict[str, tuple[str, str]] = {}
    out: list[str] = []
    for path, who in owners:
        k = fold(path.rstrip("/"))
        prev = seen.get(k)
        if prev is None:
            seen[k] = (path, who)
        elif prev[0] != path:
            why = (
                "differ only in Unicode normalisation (NFC/NFD)"
                if unicodedata.normalize("NFC", prev[0]) == unicodedata.normalize("NFC", path)
                else "differ only in case"
            )
            out.append(
                f"{prev[0]} ({prev[1]}) and {path} ({who}) {why}: one file on Windows and macOS"
            )
    return out


def problems(
    members: Sequence[tuple[str, str]],
    *,
    windows: bool,
    landing: Callable[[str], str] = lambda name: name,
) -> list[str]:
    """Every path of ``members`` (archive name, who writes it) that the target cannot hold:
    Windows names when ``windows`` (of the name as written), and folding collisions either
    way (Windows and macOS) between the places the names land (``landing``)."""
    out: list[str] = []
    if windows:
        for path, who in members:
            why = windows_problem(path)
            if why:
                out.append(f"{who}: {path!r}: {why}")
    return out + collisions((landing(path), who) for path, who in members)


# -- path lengths on Windows ----------------------------------------------------------------

MAX_PATH = 260  # characters, the terminating NUL included: 259 usable
# what staging puts between the prefix and a file: "\.wh-stage\N" (N: the staging round),
# and for the private uv cache "\.wh-stage\.uv-cache\archive-v0\<21-character id>\" in place
# of the site folder
_STAGED = len("\\.wh-stage\\99")
_UNPACKED = len("\\.wh-stage\\.uv-cache\\archive-v0\\") + 21 + 1


def long_paths_enabled() -> bool:  # pragma: no cover - Windows only
    """Whether Windows lets this process use paths past MAX_PATH: the system setting
    ``LongPathsEnabled`` (python.exe itself is marked long-path aware since 3.6)."""
    try:
        import winreg

        with winreg.OpenKey(  # type: ignore[attr-defined,unused-ignore]
            winreg.HKEY_LOCAL_MACHINE,  # type: ignore[attr-defined,unused-ignore]
            r"SYSTEM\CurrentControlSet\Control\FileSystem",
        ) as k:
            value, _kind = winreg.QueryValueEx(k, "LongPathsEnabled")  # type: ignore[attr-defined,unused-ignore]
            return bool(value)
    except OSError:
        return False


def too_long(files: Iterable[tuple[str, str]], prefix: str, limit: int = MAX_PATH) -> list[str]:
    """Each file (installed path, wheel member) whose path, installed, staged or unpacked
    into the private uv cache, reaches ``limit`` characters; "" for none."""
    out: list[str] = []
    for path, arcname in files:
        worst = max(len(path) + _STAGED, len(prefix) + _UNPACKED + len(arcname))
        if worst >= limit:
            out.append(f"{path} ({worst} characters while staged)")
    return out


def windows_paths_limited() -> bool:
    """Whether this process runs on Windows with MAX_PATH in force."""
    return os.name == "nt" and not long_paths_enabled()


def refuse_long_paths(files: Iterable[tuple[str, str]], prefix: str) -> None:
    """Before anything changes: refuse (exit 10) an install whose paths reach MAX_PATH
    once staged; wh's own file calls are bound by it where uv's are not."""
    found = too_long(files, prefix)
    if found:
        raise LongPathsError(prefix, found, MAX_PATH)

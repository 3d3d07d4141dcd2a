"""Archive paths Windows or macOS cannot hold as written: reserved device names, trailing
dots and spaces, alternate data streams, and two names one case-insensitive or
Unicode-normalising filesystem folds into one.

Pure functions over "/"-separated relative paths, used where wh writes for such a target:
``wh bundle`` for a Windows or macOS target checks every member of every locked wheel
(across wheels: a case variant of another distribution's file overwrites it there), and
bundle extraction checks every entry before writing anything. Windows' rules are those of
``CreateFileW`` for a path without the ``\\\\?\\`` prefix (what pip, uv and Python use);
macOS (APFS, HFS+) folds case by default and HFS+ stores names decomposed (NFD).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

# CON, PRN, AUX, NUL, COM0-9, LPT0-9 (and the superscript digits Windows also reserves),
# with or without an extension: "aux.py" opens the AUX device.
_RESERVED = re.compile(
    r"^(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[0-9\u00b9\u00b2\u00b3])$", re.I
)
_FORBIDDEN = set('<>:"|?*') | {chr(c) for c in range(32)}


def windows_problem(path: str) -> str | None:
    """Why Windows cannot create ``path`` as named (None: it can)."""
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


def problems(members: Sequence[tuple[str, str]], *, windows: bool) -> list[str]:
    """Every path of ``members`` (path, who writes it) that the target cannot hold: Windows
    names when ``windows``, and folding collisions either way (Windows and macOS)."""
    out: list[str] = []
    if windows:
        for path, who in members:
            why = windows_problem(path)
            if why:
                out.append(f"{who}: {path!r}: {why}")
    return out + collisions(members)

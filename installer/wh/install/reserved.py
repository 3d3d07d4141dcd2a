"""Paths no wheel may install: wh's own control files and the environment's own files.

A wheel's ``NAME.data/data/X`` lands at ``<prefix>/X`` and ``NAME.data/scripts/X`` (or a
console script named ``X``) in the scripts folder, so without this check a wheel could
write the install journal (a rollback would then delete its own backups, or a forged
journal delete outside the environment), the install lock (a second wh would then roll
back a live install), or replace ``pyvenv.cfg``, ``activate`` or the interpreter itself.
Every path of every wheel is checked before anything changes; names compare case-folded
(Windows and macOS filesystems fold case), so ``PyVenv.CFG`` is refused everywhere.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

from wh.install.journal import RESERVED_NAMES
from wh.install.layout import Schemes, WheelLayout

# at the top of the environment: wh's (journal, lock, staging) and uv's lock, the venv's
PREFIX_NAMES = (*RESERVED_NAMES, "pyvenv.cfg")
# in the scripts folder (bin/ or Scripts\): activation scripts and interpreter links
SCRIPT_PATTERNS = (
    "activate",
    "activate.*",
    "deactivate*",
    "python",
    "python[0-9]*",
    "pythonw*",
    "python.exe",
    "python_d.exe",
    "pythonw_d.exe",
    "venvlauncher.exe",
    "venvwlauncher.exe",
    "pypy*",
)


def why_reserved(
    path: str | Path, prefix: str | Path, scripts: str | Path, pathmod: ModuleType = os.path
) -> str | None:
    """Why ``path`` belongs to wh or to the environment itself, or None. ``pathmod`` is
    the platform's path module (``ntpath`` models Windows in tests)."""

    def fold(text: str | Path) -> str:
        return str(pathmod.normcase(pathmod.normpath(str(text)))).casefold()

    sep = pathmod.sep
    p, root, bin_dir = fold(path), fold(prefix), fold(scripts)
    if p.startswith(bin_dir + sep) and sep not in p[len(bin_dir) + 1 :]:
        name = p[len(bin_dir) + 1 :]
        if any(fnmatch.fnmatchcase(name, pat) for pat in SCRIPT_PATTERNS):
            return "is the environment's own (an interpreter link or activation script)"
    if p.startswith(root + sep):
        top = p[len(root) + 1 :].split(sep, 1)[0]
        if top in {n.casefold() for n in RESERVED_NAMES}:
            return "is one of wh's own control files (journal, install lock, staging)"
        if top == "pyvenv.cfg":
            return "is the environment's own pyvenv.cfg"
    return None


def _paths(lay: WheelLayout, schemes: Schemes) -> Iterator[tuple[str, Path]]:
    """The paths of ``lay`` that can be reserved: those written straight under the prefix
    (``.data/data``) or into the scripts folder; the site folders hold none (speed: a
    torch wheel's 20,000 files are not looked at one by one)."""
    for base, files in lay.runs:
        if base in (schemes.data, schemes.scripts):
            for t in files:
                yield (repr(t.arcname) if t.arcname else f"the installer's {t.rel!r}"), t.path
    for s in lay.scripts:
        yield f"console script {s.name!r} (entry_points.txt)", s


def problems(
    layouts: Sequence[WheelLayout], prefix: Path, schemes: Schemes
) -> list[tuple[str, list[str]]]:
    """Per wheel (file name), each path it would install that ``why_reserved`` refuses."""
    out: list[tuple[str, list[str]]] = []
    for lay in layouts:
        found = [
            f"{what} would be installed at {path}, which {why}; wh never lets a wheel write it"
            for what, path in _paths(lay, schemes)
            if (why := why_reserved(path, prefix, schemes.scripts))
        ]
        found += [
            f"console script {s.name!r} (entry_points.txt) would be installed at {s}, "
            f"outside the scripts folder {schemes.scripts}"
            for s in lay.scripts
            if os.path.normpath(s.parent) != os.path.normpath(schemes.scripts)
        ]
        if found:
            out.append((lay.wheel.name, found))
    return out

"""Refresh ``windows-system-since`` in ``installer/wh/data/platform.json`` from delvewheel's
per-version DLL lists (https://github.com/adang1345/delvewheel, folder ``dll_lists``, MIT
license; the lists of commit 9652b8cf, which keep only DLLs that export functions): one
folder per Windows version (``7 SP1``, ``8``, ``8.1``, ``10``, ``11``, and ``10-arm64``,
``11-arm64``), each with ``System32.txt`` (64-bit DLLs) and ``SysWOW64.txt`` (32-bit DLLs),
one file name a line.

``windows-system`` holds the DLLs every one of those versions has (delvewheel's
``ignore_names_x64`` and ``ignore_names_x86``); the lists must agree with it, else nothing is
written. For each floor (the oldest Windows a CPython release runs on, see
``wh.env.platformlibs.windows_floor``) it writes the DLLs that every version from the floor
on has and the floors before it lack.

    python tools/windows_dlls.py PATH/TO/dll_lists
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).parents[1] / "installer" / "wh" / "data" / "platform.json"
FLOORS = ("8.1", "10")
# the lists of each architecture, as (folder, Windows version): 32-bit x86 programs also run
# on Windows for arm64 (10 and later), whose SysWOW64 delvewheel's x86 list takes in too
LISTS = {
    "amd64": [(f"{v}/System32.txt", v) for v in ("7 SP1", "8", "8.1", "10", "11")],
    "i386": [
        *((f"{v}/SysWOW64.txt", v) for v in ("7 SP1", "8", "8.1", "10", "11")),
        ("10-arm64/SysWOW64.txt", "10"),
        ("11-arm64/SysWOW64.txt", "11"),
    ],
}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split()[0].split("."))


def _names(path: Path) -> set[str]:
    return {name.lower() for name in path.read_text(encoding="utf-8").split()}


def since(lists: Path, base: dict[str, list[str]]) -> dict[str, dict[str, list[str]]]:
    """Each floor's added DLLs by architecture; ``base``: ``windows-system``."""
    out: dict[str, dict[str, list[str]]] = {}
    for arch, files in LISTS.items():
        every = [(_names(lists / file), _key(v)) for file, v in files]
        before = set.intersection(*(names for names, _v in every))
        if before != set(base[arch]):
            raise SystemExit(
                f"{arch}: the DLLs of every version ({len(before)}) are not windows-system's "
                f"({len(base[arch])}): lists of another delvewheel release?"
            )
        for floor in FLOORS:
            have = set.intersection(*(names for names, v in every if v >= _key(floor)))
            out.setdefault(floor, {})[arch] = sorted(have - before)
            before = have
    return out


def main(argv: list[str]) -> int:
    facts = json.loads(DATA.read_text(encoding="utf-8"))
    facts["windows-system-since"] = since(Path(argv[0]), facts["windows-system"])
    DATA.write_text(json.dumps(facts, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""tools/windows_dlls.py: the DLLs each oldest Windows adds, from per-version lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.env.platformlibs import facts, windows_floor

from tests.fixtures import tool


def _lists(root: Path, names: dict[str, list[str]]) -> Path:
    for rel, listed in names.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("".join(f"{n}\n" for n in listed))
    return root


def test_each_floor_adds_what_every_windows_from_it_on_has(tmp_path: Path) -> None:
    every = ["KERNEL32.dll", "user32.dll"]
    x64 = {
        "7 SP1": every,
        "8": [*every, "combase.dll", "gone.dll"],
        "8.1": [*every, "combase.dll", "new81.dll"],
        "10": [*every, "combase.dll", "new81.dll", "D3D12.dll"],
        "11": [*every, "combase.dll", "new81.dll", "D3D12.dll", "only11.dll"],
    }
    x86 = {**x64, "10-arm64": [*every, "combase.dll", "D3D12.dll"], "11-arm64": x64["11"]}
    root = _lists(
        tmp_path,
        {
            **{f"{v}/System32.txt": n for v, n in x64.items()},
            **{f"{v}/SysWOW64.txt": n for v, n in x86.items()},
        },
    )
    base = {"amd64": ["kernel32.dll", "user32.dll"], "i386": ["kernel32.dll", "user32.dll"]}
    got = tool("windows_dlls").since(root, base)
    assert got == {
        "8.1": {"amd64": ["combase.dll", "new81.dll"], "i386": ["combase.dll"]},
        "10": {"amd64": ["d3d12.dll"], "i386": ["d3d12.dll"]},
    }
    # lists that do not give windows-system's DLLs (another release's) write nothing
    with pytest.raises(SystemExit, match="amd64: the DLLs of every version"):
        tool("windows_dlls").since(root, {**base, "amd64": ["kernel32.dll"]})


def test_the_vendored_floors_hold_what_the_floors_need() -> None:
    """The data wh ships: each floor's DLLs are new (not in ``windows-system``), and the
    floors of the CPython releases are the ones PEP 11 gives."""
    f = facts()
    assert set(f["windows-system-since"]) == {"8.1", "10"}
    for arch in ("amd64", "i386"):
        base = set(f["windows-system"][arch])
        added81 = set(f["windows-system-since"]["8.1"][arch])
        added10 = set(f["windows-system-since"]["10"][arch])
        assert not (added81 | added10) & base and not added81 & added10
        assert "combase.dll" in added81 and "d3d12.dll" in added10
    assert [windows_floor(v) for v in ("3.8", "3.9", "3.12", "3.13", "3.14", "x")] == [
        "",
        "8.1",
        "8.1",
        "10",
        "10",
        "",
    ]

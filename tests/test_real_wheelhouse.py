"""wh on the real folder of ~900 wheels that this machine's pip configuration points at."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import run_wh


def configured_wheel_folder() -> Path | None:
    """The largest local folder of wheels named (directly or via a file:// index) by pip config."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    best: tuple[int, Path] | None = None
    for url in re.findall(r"file://(/[^\s'\"]+)", out) + re.findall(r"find-links='([^']+)'", out):
        for folder in (Path(url), Path(url).parent / "files"):
            if folder.is_dir():
                n = sum(1 for _ in folder.glob("*.whl"))
                if n and (best is None or n > best[0]):
                    best = (n, folder)
    return best[1] if best else None


FOLDER = configured_wheel_folder()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="no local wheel folder in pip config")


def test_lock_transformers_fastapi_from_the_real_folder(tmp_path: Path) -> None:
    lock = tmp_path / "pylock.toml"
    args = [
        "lock",
        "-r",
        "transformers",
        "-r",
        "fastapi",
        "--wheelhouse",
        FOLDER,
        "--lockfile",
        lock,
        "--platform",
        "manylinux_2_17_x86_64",
        "--python-version",
        "3.11",
    ]
    r = run_wh(*args, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert {"transformers", "fastapi", "pydantic", "huggingface-hub"} <= set(data["packages"])
    # numpy builds for manylinux_2_27+ do not fit a manylinux_2_17 target: excluded with reason
    skipped = {s["filename"]: s["reason"] for s in data["skipped_for_target"]}
    assert any(f.startswith("numpy-") and "does not fit" in r for f, r in skipped.items())
    assert lock.is_file()
    # warm re-lock: nothing changed, same bytes
    before = lock.read_bytes()
    again = run_wh(*args)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert "skipped" in again.stdout
    assert lock.read_bytes() == before


def test_natives_read_from_blocks_near_each_range_equal_reading_forwards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every library member (over 64 KiB) of the folder's wheels up to 40 MB, read with the
    dynamic segment recognised in what a block before it inflates to (forced for every
    member, not only the far ones), gives the same natives as inflating from the start."""
    from wh.wheel import natives as nat

    assert FOLDER is not None
    wheels = [w for w in sorted(FOLDER.glob("*.whl")) if w.stat().st_size <= 40 << 20]
    members = [m for w in wheels for m in nat.wheel_members(w) if m.size > 64 << 10]
    assert len(members) > 100, "too few compiled members to say anything"
    monkeypatch.setattr(nat, "LANDMARK_GAP", 64 << 10)
    monkeypatch.setattr(nat, "TAIL_GAP", 64 << 10)
    monkeypatch.setattr(nat, "SMALL_GAP", 64 << 10)  # members under ``SMALL``: one try each
    monkeypatch.setattr(nat, "WHOLE", 0)
    located = 0
    real_locate = nat.deflatetail.locate

    def count(*a: object, **k: object) -> nat.deflatetail.TailReader:
        nonlocal located
        located += 1
        return real_locate(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(nat.deflatetail, "locate", count)
    near = [nat.read_member(m.path, m.size, m.open) for m in members]
    assert located > len(members) // 2  # the landmark path was taken for most of them
    monkeypatch.setattr(nat._Inflater, "tail_reader", lambda *a, **k: None)
    forwards = [nat.read_member(m.path, m.size, m.open) for m in members]
    assert near == forwards
    assert sum(1 for b in near if b is not None and b.needed) > 100


def test_the_elf_reader_agrees_with_pyelftools_on_every_real_library() -> None:
    """Every ELF library member of up to 40 MB of the folder's wheels, read as a lock reads
    it (streamed from the wheel, from block starts near its ranges where they are far),
    gives what pyelftools reads from the whole inflated file: the needed libraries, rpath,
    runpath, soname, machine and symbol-version needs."""
    import zipfile

    from wh.wheel import natives as nat

    from tests.elforacle import pyelftools_needs

    assert FOLDER is not None
    checked = 0
    wrong: list[str] = []
    for w in sorted(FOLDER.glob("*.whl")):
        if "-none-any" in w.name:
            continue
        members = {m.path: m for m in nat.wheel_members(w) if m.size <= 40 << 20}
        if not members:
            continue
        with zipfile.ZipFile(w) as zf:
            for info in zf.infolist():
                m = members.get(nat.installed_path(info.filename))
                if m is None:
                    continue
                data = zf.read(info)
                if data[:4] != b"\x7fELF":
                    continue
                oracle = pyelftools_needs(data)
                got = nat.read_member(m.path, m.size, m.open)
                assert got is not None, m.path
                checked += 1
                want = (
                    (oracle.machine, oracle.needed, oracle.rpath, oracle.runpath, oracle.soname)
                    if oracle is not None
                    else (got.machine, (), (), (), "")
                )
                have = (got.machine, got.needed, got.rpath, got.runpath, got.soname)
                versions = oracle.versions if oracle is not None else frozenset()
                if got.problem or have != want or set(got.versions) != versions:
                    wrong.append(f"{w.name}: {m.path}: {got.problem or have} != {want}")
    assert checked > 1000, "too few compiled members to say anything"
    assert wrong == [], "\n".join(wrong[:20])

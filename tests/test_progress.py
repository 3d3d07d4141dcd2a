"""Progress goes through a context (wh.progress), which the CLI fills and the layers call."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wh import progress
from wh.wheelhouse.scan import scan

from tests.factory import make_wheel
from tests.fixtures import run_wh
from tests.progress import Recorder

PACKAGE = Path(progress.__file__).parent


def test_outside_a_run_progress_goes_nowhere() -> None:
    progress.status("nobody hears this")  # no reporter installed: no error, no output
    progress.hashing_total(3)
    progress.hashed(Path("x"))


def test_a_reporter_hears_the_block_and_the_outer_one_comes_back() -> None:
    outer, inner = Recorder(), Recorder()
    with progress.reporting(outer):
        progress.status("one")
        with progress.reporting(inner):
            progress.status("two")
            progress.hashing_total(2)
        progress.status("three")
    progress.status("four")
    assert outer.lines == ["one", "three"]
    assert inner.lines == ["two"] and inner.totals == [2]


def test_carried_work_on_a_worker_thread_reports_to_the_submitter() -> None:
    seen = Recorder()

    def work(n: int) -> int:
        progress.status(f"{n} on {threading.current_thread().name}")
        return n

    with progress.reporting(seen), ThreadPoolExecutor(max_workers=2) as pool:
        plain = list(pool.map(work, [1, 2]))  # a worker thread starts with an empty context
        carried = list(pool.map(progress.carried(work), [3, 4]))
    assert plain == [1, 2] and carried == [3, 4]
    assert sorted(line.split()[0] for line in seen.lines) == ["3", "4"]


def test_a_scan_reports_what_it_hashes(tmp_path: Path) -> None:
    house = tmp_path / "house"
    a = make_wheel(house, "a", "1.0")
    b = make_wheel(house, "b", "1.0")
    seen = Recorder()
    with progress.reporting(seen):
        scan(house)
        scan(house)  # unchanged: nothing hashed again
    assert seen.totals == [2, 0]
    assert sorted(seen.hashed_paths) == sorted([a, b])


def test_the_cli_shows_status_lines_and_json_shows_none(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "lib", "1.0")
    python = new_venv()
    args = ("lock", "-r", "lib", "--wheelhouse", house, "--python", python)
    text = run_wh(*args, "--lockfile", tmp_path / "a.toml")
    assert text.returncode == 0, text.stderr
    assert f"· scanning {house}" in text.stderr.splitlines()
    assert any(line.startswith("· resolving for ") for line in text.stderr.splitlines())
    quiet = run_wh(*args, "--lockfile", tmp_path / "b.toml", "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert "· " not in quiet.stderr


def test_nothing_below_the_cli_prints() -> None:
    printing = re.compile(r"\bprint\(|click\.echo|sys\.std(out|err)\.write")
    found = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "cli" not in p.relative_to(PACKAGE).parts and printing.search(p.read_text("utf-8"))
    ]
    assert found == []

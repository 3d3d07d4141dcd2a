"""The load check's own time on a cold lock's inputs, in one process (``make bench`` does not
run it: it needs a wheelhouse of real size to say anything).

``python -m tests.bench_check N WH-LOCK-ARGS...`` runs ``wh lock`` once in this process
with the lock memo off and the check's result cache emptied, keeps the arguments the lock
hands ``loadcheck.check`` (its units, with every wheel's natives, and the platform), then
times ``check`` on them N times and prints the min and median in ms, and what it found.
A cold lock runs the same ``check`` once at its end, after the hashing, on one thread;
this leaves out the reading, the hashing and the process around it.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    os.environ["WH_NO_LOCK_MEMO"] = "1"
    from wh.app import loadcheck, loadscan
    from wh.cli.main import cli
    from wh.settings import cache_dir

    shutil.rmtree(cache_dir() / "loadcheck", ignore_errors=True)
    captured: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    real = loadscan.check

    def keep(*a: Any, **k: Any) -> Any:
        captured.append((a, k))
        return real(*a, **k)

    loadscan.check = keep  # type: ignore[assignment]
    try:
        cli.main(argv[1:], standalone_mode=False)
    except SystemExit as exc:
        if exc.code:
            raise
    finally:
        loadscan.check = real
    if not captured:
        print("the lock ran no check (skipped, or its result was cached)")
        return 1
    a, k = captured[-1]
    times: list[float] = []
    for _ in range(int(argv[0])):
        t = time.perf_counter()
        report = loadcheck.check(*a, **k)
        times.append(time.perf_counter() - t)
    print(
        f"check: min {min(times) * 1000:.1f} ms, median {statistics.median(times) * 1000:.1f} ms"
        f" ({report.binaries} binaries, {len(report.met)} needs met, "
        f"{len(report.problems)} problems, {len(report.warnings)} warnings)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

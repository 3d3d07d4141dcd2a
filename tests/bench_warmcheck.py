"""The load check's own time on warm re-locks, in one process (``make bench`` runs it).

``python -m tests.bench_warmcheck N WH-LOCK-ARGS...`` runs ``wh lock`` N times in this
process with the lock memo off, timing ``wh.app.loadscan.lock_check`` each time, and
prints the min and median in ms. Start-up and resolution are left out, so a few ms are
visible that the end-to-end rows cannot resolve on a busy 2-core machine.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    os.environ["WH_NO_LOCK_MEMO"] = "1"
    from wh.app import loadscan
    from wh.cli.main import cli

    times: list[float] = []
    real = loadscan.lock_check

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            times.append(time.perf_counter() - t)

    loadscan.lock_check = timed  # type: ignore[assignment]
    for _ in range(int(argv[0])):
        try:
            cli.main(argv[1:], standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise
    times.sort()
    print(
        f"lock_check: min {times[0] * 1000:.1f} ms, median {times[len(times) // 2] * 1000:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

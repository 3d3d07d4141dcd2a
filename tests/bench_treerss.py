"""The peak memory of a command and every process it starts, summed (Linux, ``/proc``).

``python -m tests.bench_treerss [--pss] [--runs N] -- CMD...`` runs CMD N times (default
3) and samples, every 10 ms, the resident memory of it and of its descendants (each
process's ``Rss``, or its proportional share ``Pss`` with ``--pss``, from
``/proc/PID/smaps_rollup``), and prints the highest sum of each run. ``make bench``'s peak
column is ``ru_maxrss`` from ``os.wait4``: the largest single process of the tree, not what
``wh lock`` and its natives helper hold together. ``Rss`` counts the pages the processes
share (the Python binary, its libraries) once per process, so the sum overstates their
footprint; ``Pss`` splits each shared page among its sharers. Samples can miss a peak
shorter than 10 ms. CMD runs as given each time: for a cold ``wh lock``, run with
``--runs 1`` and a fresh ``WH_CACHE_DIR`` each time (a second run meets the lock memo).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _descendants(pid: int) -> list[int]:
    out = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids = f.read().split()
        except OSError:
            continue
        for kid in kids:
            out += _descendants(int(kid))
    return out


def _resident_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak(argv: list[str], key: str) -> tuple[int, float, int, int]:
    """(exit status, peak summed MB, peak of the first process alone in MB, most
    processes seen at once)."""
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    top = top_main = most = 0
    while child.poll() is None:
        pids = _descendants(child.pid)
        sizes = [_resident_kb(p, key) for p in pids]
        top = max(top, sum(sizes))
        top_main = max(top_main, sizes[0])
        most = max(most, len(pids))
        time.sleep(0.01)
    return child.returncode, top / 1024, top_main / 1024, most


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1 :]
    key = "Pss:" if "--pss" in opts else "Rss:"
    runs = int(opts[opts.index("--runs") + 1]) if "--runs" in opts else 3
    for i in range(runs):
        code, total, first, most = peak(cmd, key)
        print(
            f"run {i + 1}: exit {code}, peak {key[:-1]} summed {total:.1f} MB "
            f"(the command alone {first:.1f} MB; up to {most} processes)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

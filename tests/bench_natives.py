"""What reading the natives of a folder of wheels costs, on one thread, with no lock around it.

``python -m tests.bench_natives FOLDER [RUNS]`` reads every library-named member of every
wheel in FOLDER as a cold ``wh lock`` without fetch's records does (``nativesread.Reading``
on one thread: members shared by two wheels are read once), RUNS times (default 3), and
prints the CPU seconds of each run, then the bytes the ISA-L (or zlib) inflaters
returned, each member read on its own, by member size, and the members that inflated
most (the block search's zlib trials of a few KiB per candidate are not counted). The
byte counts do not depend on the machine's load, which the CPU seconds do.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

CLASSES = ((100 << 10, "under 100 KiB"), (1 << 20, "under 1 MiB"), (10 << 20, "under 10 MiB"))
CLASSES += ((100 << 20, "under 100 MiB"), (1 << 62, "100 MiB and more"))


class _Counting:
    """An inflater library (ISA-L's or zlib's API) whose inflaters add what they return to
    ``inflated[current member]``."""

    def __init__(self, lib: Any, inflated: Counter[str], current: list[str]) -> None:
        self.error = lib.error
        self._lib, self._inflated, self._current = lib, inflated, current

    def decompressobj(self, *a: Any, **k: Any) -> Any:
        inner = self._lib.decompressobj(*a, **k)
        counts, current = self._inflated, self._current

        class Counted:
            def decompress(self, data: bytes, max_length: int = 0) -> bytes:
                out: bytes = inner.decompress(data, max_length)
                counts[current[0]] += len(out)
                return out

            def flush(self, *b: Any) -> bytes:
                out: bytes = inner.flush(*b)
                counts[current[0]] += len(out)
                return out

            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

        return Counted()


def main(argv: list[str]) -> int:
    from wh.wheel import natives, nativesread

    folder = Path(argv[0])
    runs = int(argv[1]) if len(argv) > 1 else 3
    paths = sorted(folder.glob("*.whl"))
    for i in range(runs):
        t = time.process_time()
        reading = nativesread.Reading(paths, 1)
        try:
            n = sum(len(reading.natives(p).binaries) for p in paths)
        finally:
            reading.close()
        print(
            f"run {i + 1}: {n} binaries of {len(paths)} wheels, {time.process_time() - t:.3f} s CPU"
        )
    inflated: Counter[str] = Counter()
    current = [""]
    real = natives._inflate_lib
    natives._inflate_lib = _Counting(real, inflated, current)  # type: ignore[assignment]
    sizes: dict[str, int] = {}
    try:
        for p in paths:
            for m in natives.wheel_members(p):
                current[0] = f"{p.name}!{m.path}"
                sizes[current[0]] = m.size
                natives.read_member(m.path, m.size, m.open)
    finally:
        natives._inflate_lib = real  # type: ignore[assignment]
    print(f"inflated {sum(inflated.values()) / 1e6:.0f} MB (each member read on its own)")
    for limit, label in CLASSES:
        lower = max((c for c, _ in CLASSES if c < limit), default=0)
        keys = [k for k, s in sizes.items() if lower <= s < limit]
        got = sum(inflated[k] for k in keys)
        whole = sum(sizes[k] for k in keys)
        print(f"  {label:17} {len(keys):4} members, {got / 1e6:6.0f} MB of {whole / 1e6:7.0f} MB")
    for key, n in inflated.most_common(10):
        print(f"  {n / 1e6:7.1f} MB of {sizes[key] / 1e6:7.1f} MB  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

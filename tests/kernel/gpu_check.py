"""Run whdemo_kernel on a GPU and compare with a pure-Python reference (prints max abs error).

Usage: python tests/kernel/gpu_check.py   (after installing the built whdemo-kernel wheel)
Exit status 0 when every op is within tolerance, 1 otherwise, 2 without a GPU.
"""

from __future__ import annotations

import math
import random
import sys


def main() -> int:
    import whdemo_kernel as k

    if k.device_count() < 1:
        print("no CUDA device visible")
        return 2
    rng = random.Random(0)
    n = 1 << 20
    a = [rng.uniform(-8.0, 8.0) for _ in range(n)]
    b = [rng.uniform(-8.0, 8.0) for _ in range(n)]
    cases = {
        "vector_add": (k.vector_add(a, b), [x + y for x, y in zip(a, b, strict=True)]),
        "scale": (k.scale(a, 0.5), [x * 0.5 for x in a]),
        "silu": (k.silu(a), [x / (1.0 + math.exp(-x)) for x in a]),
    }
    ok = True
    for name, (got, want) in cases.items():
        err = max(abs(g - w) for g, w in zip(got, want, strict=True))
        good = len(got) == n and err < 1e-5
        ok &= good
        print(f"{name}: n={n} max abs error {err:.3e} {'ok' if good else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""`make bench` rows for `wh fetch` (online): resolution of the real sglang closure against
`uv pip compile`, downloads against the rate of one large download, a fetch with nothing new.

Run alone with ``python -m tests.bench --only fetch``; needs the package index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tests.realprofile import uv_compile_argv, wh_flags

if TYPE_CHECKING:
    from tests.bench import Bench

INDEX = "https://pypi.org/simple/"
LINUX = ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.12"]
SGLANG = wh_flags()
# a closure of a few compiled wheels (~100 MB for manylinux/3.12): the download rows
DOWNLOAD = ["-r", "scipy==1.16.3", "-r", "pandas==2.3.3", "-r", "pyarrow==22.0.0"]


def fetch_section(bench: Bench) -> None:
    from tests.bench import PY, Run, repeat, run, uv_bin

    print("fetch (online, the package index)", flush=True)
    rep = bench.report

    def fetch(roots: list[str], house: Path, cache: Path, *flags: str) -> Run:
        """`wh fetch` of ``roots`` for manylinux/3.12 from the index into ``house``."""
        argv = ["fetch", *flags, *roots, *LINUX, "--index-url", INDEX, "--wheelhouse", house]
        return run(bench.wh(*argv), env=bench.wh_env(cache))

    def wh_dry(i: int) -> object:
        cache = bench.tmp("fetch-cache")
        return fetch(SGLANG, bench.tmp("fetch-house"), cache, "--dry-run", "--json")

    def uv_compile(i: int) -> object:
        work = bench.tmp("uv-compile")
        return run(
            uv_compile_argv(uv_bin(), work, "x86_64-manylinux_2_28", INDEX),
            env=dict(bench.env, UV_CACHE_DIR=str(work / "uv-cache")),
        )

    n = bench.args.repeat
    a = rep.add("fetch", "wh fetch --dry-run, real sglang closure, cold caches", repeat(n, wh_dry))  # type: ignore[arg-type]
    b = rep.add("fetch", "uv pip compile, same roots, cold cache", repeat(n, uv_compile))  # type: ignore[arg-type]
    rep.ratio("online resolution vs uv", a, b, "target <= 1.0x")
    warm_cache, warm_house = bench.tmp("fetch-warm"), bench.tmp("fetch-warm-house")
    fetch(SGLANG, warm_house, warm_cache, "--dry-run", "--json")  # primes
    rep.add(
        "fetch",
        "wh fetch --dry-run, real sglang closure, again (nothing new)",
        repeat(
            bench.args.repeat_warm,
            lambda i: fetch(SGLANG, warm_house, warm_cache, "--dry-run", "--json"),
        ),
        note="target < 1 s",
    )

    # downloads: the closure's bytes over the rate one large download reaches alone
    cache = bench.tmp("dl-cache")
    plan = fetch(DOWNLOAD, bench.tmp("dl-plan"), cache, "--dry-run", "--json")
    closure = json.loads(plan.out)["closure"]
    total = sum(e["size"] or 0 for e in closure)
    big = max(closure, key=lambda e: e["size"] or 0)
    one = bench.tmp("one")
    one.mkdir(parents=True)
    single = run(
        [PY, "-c", ONE_DOWNLOAD, big["url"], str(one / big["filename"]), big["sha256"]],
        env=bench.env,
    )
    rate = (big["size"] or 1) / float(single.out.strip().splitlines()[-1])
    one_s = float(single.out.strip().splitlines()[-1])
    rep.add(
        "fetch",
        f"one large download alone ({big['filename']}, {big['size']:,} B)",
        [single.__class__(one_s, single.rss_mb, 0, "")],
    )
    house = bench.tmp("dl-house")
    full = fetch(DOWNLOAD, house, cache, "--json")
    rep.add("fetch", f"wh fetch, {len(closure)} wheels, {total:,} B (whole command)", [full])
    seconds = float(json.loads(full.out)["download_seconds"])
    cls = full.__class__
    got = rep.add("fetch", "  of which the download phase", [cls(seconds, 0.0, 0, "")])
    ideal = cls(total / rate, 0.0, 0, "")
    ideal_row = rep.add("fetch", "total bytes / one-download rate", [ideal])
    rep.ratio("downloads vs one large download's rate", got, ideal_row, "target <= 1.2x")
    noop = repeat(
        bench.args.repeat_warm,
        lambda i: fetch(DOWNLOAD, house, cache),
    )
    rep.add(
        "fetch", "wh fetch with nothing new (the same closure again)", noop, note="target < 1 s"
    )


ONE_DOWNLOAD = r"""
import sys, time
from pathlib import Path
from wh.airgap.indexclient import Http
http = Http(cache=Path(sys.argv[2]).parent / "http")
t0 = time.perf_counter()
http.download(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
print(time.perf_counter() - t0)
"""

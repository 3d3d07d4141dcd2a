"""Benchmarks for wh against the one-pass hashing limit, uv and pip (``make bench``).

Not part of the pytest suite (the name does not match ``test_*.py``); nothing here asserts
timing. Every figure is measured side by side in one run, each in its own subprocess, so a
ratio compares like with like on the same machine, page cache and moment.

    python -m tests.bench                      # synthetic wheelhouse (~1.5 GB) + resolver
    python -m tests.bench --quick              # ~200 MB, fewer repeats
    python -m tests.bench --real /opt/pypi/files --real-roots transformers,fastapi
    python -m tests.bench --wh-src /tmp/base   # benchmark another checkout of wh (its root)
    python -m tests.bench --baseline 23b59d4   # lock and install rows of that commit and of
                                               # this tree, alternating, with a before/after table

Make a real GPU wheelhouse, with the network (about 5 GB for the sglang stack):

    pip download --isolated --only-binary=:all: -d ~/sglang-wheels sglang==0.5.10
    python -m tests.bench --real ~/sglang-wheels --real-roots sglang \\
        --allow-overwrite flashinfer-python

Inputs:
* synthetic: ``--synth-wheels`` packages in 8 dependency levels, each with a random
  (incompressible, stored) payload; ``--synth-mb`` in all; written once under ``.bench/``
  and reused while its parameters are unchanged.
* resolver: ``--resolve-wheels`` Wheel objects built in memory (500 names x 20 versions by
  default: a 500-deep chain, markers, extras, and conflicts that force backtracking).
* real: ``--real DIR`` with ``--real-roots``.

Page cache: the benchmark reads every input file once before timing, so the lock rows are
measured with a warm page cache (the residency ``fincore`` reports is printed). With
``--drop-caches`` (root, Linux) every install run starts from an emptied page cache
instead, so each reads its wheels and uv cache from disk; without it, which files
happened to stay resident decides single install runs.

Peak memory is ``ru_maxrss`` of each subprocess tree from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib  # type: ignore[import-not-found,unused-ignore]
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
# Subprocesses run in a scratch folder: ``python -m`` puts the cwd first on sys.path, and
# the repo's own folders would shadow the checkout ``--wh-src`` or ``--baseline`` names.
CWD = [Path(tempfile.gettempdir())]


@dataclass(frozen=True)
class Tree:
    """One checkout of wh that the wh rows run: where its import package is and how it starts.

    The import package was ``installer`` at the repository root before commit 9852a71 and is
    ``wh`` under ``installer/`` since, so a tree's layout decides its PYTHONPATH and its
    ``python -m`` entry. ``path`` None runs the wh this venv has installed."""

    label: str
    package: str  # the import package: wh, or installer before 9852a71
    cli: str  # the module ``python -m`` runs
    path: Path | None  # what goes first on PYTHONPATH; None: the venv's own install

    @staticmethod
    def at(root: Path, label: str) -> Tree:
        root = root.resolve()
        if (root / "installer" / "wh" / "__init__.py").is_file():
            return Tree(label, "wh", "wh.cli.main", root / "installer")
        if (root / "installer" / "cli.py").is_file():
            return Tree(label, "installer", "installer.cli", root)
        raise SystemExit(
            f"{root}: neither installer/wh/__init__.py nor installer/cli.py: not a checkout of wh"
        )

    def env(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        env.pop("PYTHONPATH", None)
        # wh runs as an install runs it, from bytecode (pip compiles it when it installs
        # wh); a shell that sets PYTHONDONTWRITEBYTECODE would time the compiler instead
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if self.path is not None:
            env["PYTHONPATH"] = str(self.path)
        return env


CURRENT = Tree("this tree", "wh", "wh.cli.main", None)


def checkout(rev: str, into: Path) -> Tree:
    """REV's files (``git archive``) in a folder of the scratch space, as a Tree.

    It runs with this venv, so its dependencies must be this tree's: a REV that declares
    others is refused rather than measured with the wrong ones."""
    full = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if full.returncode != 0:
        raise SystemExit(f"--baseline {rev}: not a commit of {REPO}")
    sha = full.stdout.strip()
    into.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "-C", str(REPO), "archive", "--format=tar", sha], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"--baseline {rev}: git archive failed")

    def deps(pyproject: Path) -> list[str]:
        return sorted(tomllib.loads(pyproject.read_text())["project"]["dependencies"])

    theirs, ours = deps(into / "pyproject.toml"), deps(REPO / "pyproject.toml")
    if theirs != ours:
        raise SystemExit(
            f"--baseline {rev}: its dependencies differ from this tree's, which this venv has "
            f"(only theirs: {sorted(set(theirs) - set(ours))}; only ours: "
            f"{sorted(set(ours) - set(theirs))}); pick a commit with the same dependencies"
        )
    if (into / "setup.py").is_file():  # its C part, built in place as an editable install
        # builds it (where that fails, it runs without it, and the machine line says so)
        subprocess.run(
            [sys.executable, "-c", BUILD_EXT], cwd=into, capture_output=True, check=False
        )
    return Tree.at(into, f"baseline {sha[:7]}")


# a checkout's extension modules as its setup.py declares them, built in place by this
# venv's setuptools, which need not read its pyproject.toml (a newer setuptools may be
# what that asks for)
BUILD_EXT = r"""
import setuptools
declared = {}
setuptools.setup = lambda **kw: declared.update(kw)
source = open("setup.py", encoding="utf-8").read()
exec(compile(source, "setup.py", "exec"), {"__name__": "__main__"})
from setuptools.command.build_ext import build_ext
dist = setuptools.Distribution(
    {"ext_modules": declared.get("ext_modules", []), "package_dir": {"": "installer"}}
)
cmd = build_ext(dist)
cmd.inplace = True
cmd.ensure_finalized()
cmd.run()
"""


# --- child programs (self-contained, so they also run against another wh checkout) ---------

HASH_LIMIT = r"""
import hashlib, os, sys, time
from concurrent.futures import ThreadPoolExecutor
paths = [os.path.join(sys.argv[1], n) for n in sorted(os.listdir(sys.argv[1]))
         if n.endswith(".whl")]
def h(p):
    d = hashlib.sha256()
    with open(p, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            d.update(chunk)
    return d.hexdigest()
workers = int(sys.argv[2])
with ThreadPoolExecutor(workers) as pool:
    n = len(list(pool.map(h, paths)))
print(n)
"""

RESOLVE_CHILD = r"""
import sys, time
from pathlib import Path
t0 = time.perf_counter()
from wh.model.wheel import WheelMeta, to_wheel
from wh.model.target import declared
from wh.resolve.resolver import resolve
from wh.model.candidates import CandidateIndex
from wh.model.manifest import Manifest
from packaging.requirements import Requirement
import wh
t_import = time.perf_counter() - t0
names, versions = int(sys.argv[1]), int(sys.argv[2])
def n(i):
    return f"r{i:04d}"
t0 = time.perf_counter()
wheels = []
for i in range(names):
    for v in range(1, versions + 1):
        reqs = []
        if i + 1 < names:
            reqs.append(f"{n(i + 1)}>={max(1, v - 10)}")
        if i + 3 < names:
            reqs.append(f'{n(i + 3)}; python_version >= "3.8"')
        if i + 2 < names and i % 25 == 0 and v > versions - 3:
            reqs.append(f"{n(i + 2)}<5")  # conflicts with the chain: backtracking
        if i + 5 < names and i % 10 == 0:
            reqs.append(f'{n(i + 5)}[fast]; extra == "fast"')
            reqs.append(f'{n(i + 4)}[fast]')
        if i % 40 == 7:
            reqs.append(f'not-in-wheelhouse; sys_platform == "win32"')
        meta = WheelMeta(f"{n(i)}-{v}.0-py3-none-any.whl", n(i), f"{v}.0", tuple(reqs),
                         ">=3.8", ("fast",))
        wheels.append(to_wheel(Path("/nonexistent") / meta.filename, meta, 1000, "0" * 64))
t_build = time.perf_counter() - t0
target = declared("manylinux_2_17_x86_64", "3.11")
t0 = time.perf_counter()
res = resolve(
    Manifest(requirements=(Requirement(n(0)),)), CandidateIndex.build(wheels, target, {})
)
t_resolve = time.perf_counter() - t0
print(f"{len(wheels)} {len(res.packages)} {t_build:.4f} {t_resolve:.4f} {t_import:.4f} "
      f"{wh.__file__}")
"""

# --- measurement ----------------------------------------------------------------------------


@dataclass
class Run:
    wall: float
    rss_mb: float
    rc: int
    out: str


def run(
    cmd: Sequence[str | Path],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    after: Callable[[], None] | None = None,
) -> Run:
    """Run one subprocess; wall time and the peak RSS of its process tree (os.wait4).
    ``after`` runs once the time is taken (clean-up that must not be measured)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(
            [str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=CWD[0]
        )
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if after is not None:
        after()
    if check and rc != 0:
        raise SystemExit(f"benchmark command failed ({rc}): {' '.join(map(str, cmd))}\n{text}")
    return Run(wall, ru.ru_maxrss / 1024, rc, text)


@dataclass
class Row:
    section: str
    what: str
    runs: list[Run] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> float:
        return min(r.wall for r in self.runs)

    @property
    def median(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def rss(self) -> float:
        return max(r.rss_mb for r in self.runs)


class Report:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.ratios: list[tuple[str, str, float, float, str, str]] = []
        self.pairs: list[tuple[str, str, Row, Row]] = []  # before/after, with --baseline

    def add(self, section: str, what: str, runs: list[Run], note: str = "") -> Row:
        row = Row(section, what, runs, note)
        self.rows.append(row)
        print(
            f"  {what:<58} best {row.best:8.3f} s  median {row.median:8.3f} s  "
            f"peak {row.rss:7.1f} MB  {note}",
            flush=True,
        )
        if len(runs) > 1:
            print("    runs: " + " ".join(f"{r.wall:.3f}" for r in runs), flush=True)
        return row

    def ratio(
        self, label: str, a: Row, b: Row, target: str = "", limit: float | None = None
    ) -> None:
        """``a`` over ``b``, best by best and median by median; with ``limit``, where both
        rows ran in the same rounds (``Bench.in_rounds``: run ``i`` of each in round
        ``i``), also each round's ratio, and how many rounds went over ``limit``: the
        best and the median each pick a run of their own, and say nothing of how often
        one round's lock with the check took more than ``limit`` times the other's."""
        r, m = a.best / b.best, a.median / b.median
        rounds = round_ratios(a, b) if limit is not None else []
        spread = ""
        if limit is not None and rounds:
            over = sum(x > limit for x in rounds)
            spread = (
                f"rounds {statistics.median(rounds):.2f}x median, {max(rounds):.2f}x highest, "
                f"{over} of {len(rounds)} over {limit}x"
            )
        self.ratios.append((label, f"{a.what} / {b.what}", r, m, target, spread))
        print(f"  => {label}: {r:.2f}x (medians {m:.2f}x) {target}", flush=True)
        if rounds:
            each = " ".join(f"{x:.2f}" for x in rounds)
            print(f"     per round: {each} ({spread})", flush=True)

    def before_after(self, section: str, what: str, before: Row, after: Row) -> None:
        self.pairs.append((section, what, before, after))
        print(
            f"  => after / before: {after.best / before.best:.2f}x "
            f"(medians {after.median / before.median:.2f}x)",
            flush=True,
        )

    def before_after_markdown(self, before: str, after: str) -> str:
        lines = [
            "| section | what | before best s | after best s | after / before | "
            "before median s | after median s | after / before |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for section, what, b, a in self.pairs:
            lines.append(
                f"| {section} | {what} | {b.best:.3f} | {a.best:.3f} | {a.best / b.best:.2f}x | "
                f"{b.median:.3f} | {a.median:.3f} | {a.median / b.median:.2f}x |"
            )
        return f"before: {before}; after: {after}\n\n" + "\n".join(lines)

    def markdown(self) -> str:
        lines = ["| section | what | best s | median s | runs | peak RSS MB | note |"]
        lines.append("| --- | --- | ---: | ---: | ---: | ---: | --- |")
        for r in self.rows:
            lines.append(
                f"| {r.section} | {r.what} | {r.best:.3f} | {r.median:.3f} | {len(r.runs)} | "
                f"{r.rss:.0f} | {r.note} |"
            )
        lines += ["", "| ratio | of | best / best | median / median | target | per round |"]
        lines.append("| --- | --- | ---: | ---: | --- | --- |")
        for label, of, value, med, target, spread in self.ratios:
            lines.append(f"| {label} | {of} | {value:.2f}x | {med:.2f}x | {target} | {spread} |")
        return "\n".join(lines)


def same_rounds(a: Row, b: Row) -> list[tuple[float, float]]:
    """The wall times of ``a`` and ``b`` round by round, for rows whose ``i``-th runs ran in
    the same round (``Bench.in_rounds``); none where their counts of runs differ (they did
    not)."""
    if len(a.runs) != len(b.runs):
        return []
    return [(x.wall, y.wall) for x, y in zip(a.runs, b.runs, strict=True)]


def round_ratios(a: Row, b: Row) -> list[float]:
    """Each round's ``a`` over ``b`` (``same_rounds``)."""
    return [x / y for x, y in same_rounds(a, b)]


def repeat(n: int, fn: Callable[[int], Run]) -> list[Run]:
    return [fn(i) for i in range(n)]


# --- inputs ---------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    uv = run([uv_bin(), "--version"]).out.strip()
    return (
        f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, {uv}"
    )


def host_platform() -> str:
    """The manylinux tag of this machine's glibc (a declared target like the live one)."""
    lib, ver = platform.libc_ver()
    if lib == "glibc" and ver:
        major, minor = ver.split(".")[:2]
        return f"manylinux_{major}_{minor}_{platform.machine()}"
    return f"manylinux_2_17_{platform.machine()}"


def uv_bin() -> Path:
    local = Path(PY).with_name("uv")
    return local if local.exists() else Path(shutil.which("uv") or "uv")


def synth_wheelhouse(root: Path, n: int, total_mb: int) -> Path:
    """``n`` packages in 8 levels (level L depends on two of level L+1), random payloads."""
    import base64
    import hashlib

    from wh.wheel.writer import dist_info_name, metadata_text, wheel_filename

    out = root / f"synth-{n}-{total_mb}mb"
    if (out / ".complete").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    levels = 8
    by_level: dict[int, list[int]] = {
        lvl: [i for i in range(n) if i % levels == lvl] for lvl in range(levels)
    }
    per = total_mb * 1024 * 1024 // max(n, 1)
    print(f"writing {n} synthetic wheels ({total_mb} MB) into {out}", flush=True)
    for i in range(n):
        lvl = i % levels
        name = f"synth-pkg-{i:04d}"
        reqs = []
        if lvl + 1 < levels and by_level[lvl + 1]:
            nxt = by_level[lvl + 1]
            for j in (nxt[i % len(nxt)], nxt[(i * 7 + 3) % len(nxt)]):
                reqs.append(f"synth-pkg-{j:04d}>=1.0")
        reqs.append('synth-missing; sys_platform == "win32"')
        version = "1.0.0"
        mod = name.replace("-", "_")
        members: dict[str, bytes] = {f"{mod}/__init__.py": f'__version__ = "{version}"\n'.encode()}
        for k in range(20):
            members[f"{mod}/sub{k}.py"] = (f"# module {k}\nVALUE = {k}\n" * 50).encode()
        members[f"{mod}/_blob.so"] = os.urandom(per)
        di = dist_info_name(name, version)
        members[f"{di}/METADATA"] = metadata_text(name, version, requires_dist=reqs).encode()
        members[f"{di}/WHEEL"] = (
            b"Wheel-Version: 1.0\nGenerator: wh-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        record = []
        for arc, data in members.items():
            d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={d},{len(data)}")
        record.append(f"{di}/RECORD,,")
        members[f"{di}/RECORD"] = ("\n".join(record) + "\n").encode()
        with zipfile.ZipFile(out / wheel_filename(name, version, "py3-none-any"), "w") as zf:
            for arc, data in members.items():
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                info.compress_type = (
                    zipfile.ZIP_STORED if arc.endswith(".so") else zipfile.ZIP_DEFLATED
                )
                zf.writestr(info, data)
    roots = [f"synth-pkg-{i:04d}" for i in range(n)]  # lock (and install) all of them
    (out / "roots.txt").write_text("\n".join(roots) + "\n")
    (out / ".complete").write_text("ok\n")
    return out


def warm_page_cache(folder: Path) -> str:
    """Read every wheel once; return the page-cache residency fincore reports."""
    files = sorted(folder.glob("*.whl"))
    for f in files:
        with f.open("rb", buffering=0) as fh:
            while fh.read(1 << 22):
                pass
    total = sum(f.stat().st_size for f in files)
    if not shutil.which("fincore"):
        return "fincore unavailable"
    res = 0
    for i in range(0, len(files), 200):
        done = subprocess.run(
            [
                "fincore",
                "--bytes",
                "--noheadings",
                "--raw",
                "-o",
                "RES",
                *map(str, files[i : i + 200]),
            ],
            capture_output=True,
            text=True,
        )
        res += sum(int(x) for x in done.stdout.split() if x.isdigit())
    return f"page cache warm: {res / total:.0%} of {total / 1e9:.2f} GB resident"


def fresh_venv(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    run([uv_bin(), "venv", "--no-config", "--offline", "-q", "--python", PY, str(path)])
    return path / "bin" / "python"


# --- sections -------------------------------------------------------------------------------


class Bench:
    def __init__(
        self,
        args: argparse.Namespace,
        work: Path,
        tree: Tree = CURRENT,
        baseline: Tree | None = None,
    ) -> None:
        self.args = args
        self.work = work
        self.report = Report()
        self.base = dict(os.environ)
        self.base.pop("VIRTUAL_ENV", None)
        self.base["PIP_CONFIG_FILE"] = os.devnull
        self.base["NO_COLOR"] = "1"
        self.tree = tree  # the wh under test: every section runs it
        # the lock and install sections run each wh row for every tree, the baseline first
        self.trees = [baseline, tree] if baseline is not None else [tree]
        self.env = tree.env(self.base)
        self._n = 0
        self._batches: dict[Path, list[list[Path]]] = {}

    def tmp(self, stem: str) -> Path:
        self._n += 1
        return self.work / f"{stem}-{self._n}"

    def wh(self, *argv: str | Path, tree: Tree | None = None) -> list[str | Path]:
        return [PY, "-m", (tree or self.tree).cli, *argv]

    def wh_env(self, cache: Path, tree: Tree | None = None, **extra: str) -> dict[str, str]:
        env = (tree or self.tree).env(self.base)
        env["WH_CACHE_DIR"] = str(cache)
        env.update(extra)
        return env

    def tagged(self, what: str, tree: Tree) -> str:
        return what if len(self.trees) == 1 else f"{what} [{tree.label}]"

    def per_tree(
        self,
        section: str,
        what: str,
        n: int,
        fn: Callable[[Tree, int], Run],
        note: str = "",
    ) -> dict[Tree, Row]:
        """``n`` runs of a wh row for each tree, alternating tree by tree (this machine's
        speed drifts), one row each; with a baseline, a line of the before/after table."""
        return self.in_rounds(section, [(what, fn, note)], n)[0]

    def in_rounds(
        self,
        section: str,
        rows: list[tuple[str, Callable[[Tree, int], Run], str]],
        n: int,
    ) -> list[dict[Tree, Row]]:
        """``n`` rounds, each running every ``(what, fn, note)`` row once per tree, so that
        rows whose ratio is reported (a lock with the load check and without it) meet the
        same drift of this machine's speed, instead of one row's runs all coming minutes
        after the other's; one row per tree each, as ``per_tree``."""
        runs: list[dict[Tree, list[Run]]] = [{t: [] for t in self.trees} for _ in rows]
        for i in range(n):
            for k, (_, fn, _) in enumerate(rows):
                # the order flips each round: a run that follows another pays for the files
                # the other left to write back (an install writes GBs), so neither tree
                # always does
                for t in self.trees if i % 2 == 0 else self.trees[::-1]:
                    runs[k][t].append(fn(t, i))
        out: list[dict[Tree, Row]] = []
        for (what, _, note), per in zip(rows, runs, strict=True):
            got = {
                t: self.report.add(section, self.tagged(what, t), r, note) for t, r in per.items()
            }
            if len(self.trees) == 2:
                self.report.before_after(section, what, got[self.trees[0]], got[self.trees[1]])
            out.append(got)
        return out

    def lock_section(
        self, label: str, folder: Path, roots: list[str]
    ) -> dict[Tree, tuple[Path, Path]]:
        """The lock rows; each wh row once per tree, the trees alternating run by run.

        Returns, per tree, its lock and the scan cache its cold lock left (what the install
        rows start from)."""
        a, rep = self.args, self.report
        section = f"lock: {label}"
        print(f"\n## {section}", flush=True)
        residency = warm_page_cache(folder)
        print(f"  {residency}", flush=True)
        target = fresh_venv(self.work / f"target-{label}")
        n_files = len(list(folder.glob("*.whl")))
        size = sum(f.stat().st_size for f in folder.glob("*.whl"))
        note = f"{n_files} wheels, {size / 1e9:.2f} GB"
        limit = rep.add(
            section,
            f"hash every byte once ({os.cpu_count()} threads, hashlib)",
            repeat(
                a.repeat, lambda i: run([PY, "-c", HASH_LIMIT, folder, str(os.cpu_count() or 1)])
            ),
            note,
        )
        limit1 = rep.add(
            section,
            "hash every byte once (1 thread, hashlib)",
            repeat(1, lambda i: run([PY, "-c", HASH_LIMIT, folder, "1"])),
        )
        del limit1
        key = {t: str(k) for k, t in enumerate(self.trees)}
        lockfiles = {t: self.work / f"pylock.{label}.{key[t]}.toml" for t in self.trees}
        rflags = [x for r in roots for x in ("-r", r)]
        rflags += [x for n in a.allow_overwrite.split(",") if n for x in ("--allow-overwrite", n)]
        rflags += shlex.split(a.lock_flags)
        caches: dict[Tree, list[Path]] = {t: [] for t in self.trees}

        declared_real = a.real_target if label == "real" else ""
        if declared_real:
            plat, _, pyver = declared_real.partition(":")
            where: list[str | Path] = ["--platform", plat, "--python-version", pyver]
        else:
            where = ["--python", target]

        def lock(t: Tree, lockfile: Path, *more: str, house: Path = folder) -> list[str | Path]:
            return self.wh(
                "lock",
                *rflags,
                "--wheelhouse",
                house,
                *where,
                "--lockfile",
                lockfile,
                *more,
                tree=t,
            )

        def wh_cold(t: Tree, i: int) -> Run:
            cache = self.tmp("whcache")
            caches[t].append(cache)
            return run(lock(t, lockfiles[t]), env=self.wh_env(cache, tree=t))

        def wh_cold_unchecked(t: Tree, i: int) -> Run:
            cache = self.tmp("whcache")
            unchecked = self.work / f"unchecked.{key[t]}.toml"
            return run(
                lock(t, unchecked, "--skip-load-check", "bench"),
                env=self.wh_env(cache, tree=t),
                after=lambda: shutil.rmtree(cache),
            )

        cold_rows: list[tuple[str, Callable[[Tree, int], Run], str]] = [
            ("wh lock, cold (empty scan cache)", wh_cold, note),
            ("wh lock, cold, --skip-load-check (no load check)", wh_cold_unchecked, ""),
        ]
        if (folder / ".wh-natives").is_dir():  # fetch's records: also the lock that reads
            # every compiled member itself, on the same wheels without them (hard links)
            bare = self.work / f"{label}-without-records"
            shutil.rmtree(bare, ignore_errors=True)
            bare.mkdir(parents=True)
            for whl in folder.glob("*.whl"):
                try:
                    os.link(whl, bare / whl.name)
                except OSError:
                    shutil.copy2(whl, bare / whl.name)

            def wh_cold_bare(t: Tree, i: int) -> Run:
                cache = self.tmp("whcache")
                return run(
                    lock(t, self.work / f"bare.{key[t]}.toml", house=bare),
                    env=self.wh_env(cache, tree=t),
                    after=lambda: shutil.rmtree(cache),
                )

            cold_rows.append(
                ("wh lock, cold, wheelhouse without fetch's .wh-natives records", wh_cold_bare, "")
            )
        # the three cold locks in the same rounds: their ratios are the load check's cost
        got = self.in_rounds(section, cold_rows, a.repeat)
        wh_c, wh_cu = got[0][self.tree], got[1][self.tree]
        warm_cache = {t: c[-1] for t, c in caches.items()}
        if len(self.trees) == 2:  # the same inputs should give the same lock bytes
            before, after = (lockfiles[t].read_bytes() for t in self.trees)
            same = "byte for byte the same" if before == after else "DIFFERENT"
            print(f"  => the two trees' locks are {same}", flush=True)
        rep.ratio(
            f"{label}: cold wh lock / the same without the load check",
            wh_c,
            wh_cu,
            "target <= 1.2x",
            limit=1.2,
        )
        if len(got) > 2:
            rep.ratio(
                f"{label}: cold wh lock without records / without the load check",
                got[2][self.tree],
                wh_cu,
                "target <= 1.2x",
                limit=1.2,
            )
        # a re-lock that resolves again (memo off): the load check from its digest cache,
        # and the same lock without the check, in the same rounds
        warm_rows = self.in_rounds(
            section,
            [
                (
                    "wh lock, warm caches, lock memo off (resolves; natives cached)",
                    lambda t, i: run(
                        lock(t, lockfiles[t]),
                        env=self.wh_env(warm_cache[t], tree=t, WH_NO_LOCK_MEMO="1"),
                    ),
                    "",
                ),
                (
                    "wh lock, warm caches, lock memo off, --skip-load-check",
                    lambda t, i: run(
                        lock(
                            t, self.work / f"unchecked.{key[t]}.toml", "--skip-load-check", "bench"
                        ),
                        env=self.wh_env(warm_cache[t], tree=t, WH_NO_LOCK_MEMO="1"),
                    ),
                    "",
                ),
            ],
            a.repeat_warm,
        )
        wh_r, wh_ru = (row[self.tree] for row in warm_rows)
        # two whole processes of ~1 s each: their difference is mostly this machine's
        # spread, so the best, the median and each round's difference are shown; the
        # in-process timing below is the check's own cost
        rounds = [x - y for x, y in same_rounds(wh_r, wh_ru)]
        print(
            f"  => {label}: the cached load check adds {wh_r.best - wh_ru.best:.3f} s "
            f"(medians {wh_r.median - wh_ru.median:.3f} s; the median round "
            f"{statistics.median(rounds):.3f} s) to a re-resolving lock, end to "
            "end (target < 0.010 s; read the in-process line)",
            flush=True,
        )
        # the same in one process, timing the check alone (this tree only: the module
        # names it patches are this tree's)
        inproc = run(
            [
                PY,
                "-m",
                "tests.bench_warmcheck",
                str(max(a.repeat_warm, 10)),
                *lock(self.tree, lockfiles[self.tree])[len(self.wh()) :],
            ],
            env=self.wh_env(
                warm_cache[self.tree],
                tree=self.tree,
                PYTHONPATH=os.pathsep.join(
                    [str(REPO), *filter(None, [self.tree.env(self.base).get("PYTHONPATH")])]
                ),
            ),
        )
        last = inproc.out.strip().splitlines()[-1]
        print(f"  => {label}: in process, {last} (target < 10 ms)", flush=True)
        wh_w = self.per_tree(
            section,
            "wh lock, warm (nothing changed)",
            a.repeat_warm,
            lambda t, i: run(lock(t, lockfiles[t]), env=self.wh_env(warm_cache[t], tree=t)),
        )[self.tree]

        def declared(t: Tree) -> list[str | Path]:
            return self.wh(
                "lock",
                *rflags,
                "--wheelhouse",
                folder,
                "--platform",
                host_platform(),
                "--python-version",
                platform.python_version(),
                "--lockfile",
                self.work / f"declared.{key[t]}.toml",
                tree=t,
            )

        if not declared_real:  # (with --real-target every row is for a declared target)
            for t in self.trees:  # its first lock: not a re-lock
                run(declared(t), env=self.wh_env(warm_cache[t], tree=t))
            self.per_tree(
                section,
                "wh lock, warm, declared target (no interpreter probe)",
                a.repeat_warm,
                lambda t, i: run(declared(t), env=self.wh_env(warm_cache[t], tree=t)),
            )
        req_in = self.work / f"{label}.in"
        req_in.write_text("\n".join(roots) + "\n")
        uv_caches: list[Path] = []

        def uv_compile(cache: Path) -> Run:
            return run(
                [
                    uv_bin(),
                    "pip",
                    "compile",
                    req_in,
                    "--generate-hashes",
                    "--offline",
                    "--no-index",
                    "--find-links",
                    folder,
                    "--no-config",
                    "--cache-dir",
                    cache,
                    *(
                        ["--python-platform", uv_platform(plat), "--python-version", pyver]
                        if declared_real
                        else ["--python", target]
                    ),
                    "-q",
                    "-o",
                    self.work / f"{label}.uv.txt",
                ],
                env=self.env,
            )

        def uv_cold(i: int) -> Run:
            for old in uv_caches:  # keep one (the warm rows reuse it): each holds GBs
                shutil.rmtree(old, ignore_errors=True)
            cache = self.tmp("uvcache")
            uv_caches.append(cache)
            return uv_compile(cache)

        if a.skip_uv:
            rep.ratio(f"{label}: cold wh lock / hash limit", wh_c, limit, "target <= 1.5x")
            return {t: (lockfiles[t], warm_cache[t]) for t in self.trees}
        uv_c = rep.add(
            section,
            "uv pip compile --generate-hashes, cold (own empty cache)",
            repeat(a.repeat, uv_cold),
        )
        uv_w = rep.add(
            section,
            "uv pip compile --generate-hashes, warm (cache reused)",
            repeat(a.repeat_warm, lambda i: uv_compile(uv_caches[-1])),
        )
        rep.ratio(f"{label}: cold wh lock / hash limit", wh_c, limit, "target <= 1.5x")
        rep.ratio(f"{label}: cold uv / cold wh lock", uv_c, wh_c, "target >= 5x")
        rep.ratio(f"{label}: warm uv / warm wh lock", uv_w, wh_w, "wh warm target < 0.3 s")
        return {t: (lockfiles[t], warm_cache[t]) for t in self.trees}

    def install_section(self, label: str, locks: dict[Tree, tuple[Path, Path]]) -> None:
        """wh install --locked vs bare uv vs pip, each into a fresh venv, same uv cache state.

        Each tree's wh installs its own lock with the scan cache its lock left, as after
        ``wh lock``; the uv and pip rows install the wheels of the lock of the tree under
        test.
        """
        a, rep = self.args, self.report
        section = f"install: {label}"
        lockfile = locks[self.tree][0]
        print(f"\n## {section}", flush=True)
        data = tomllib.loads(lockfile.read_text())
        files = [
            (lockfile.parent / w["path"]).resolve()
            for p in data.get("packages", [])
            for w in p.get("wheels", [])
        ]
        size = sum(f.stat().st_size for f in files)
        note = f"{len(files)} wheels, {size / 1e9:.2f} GB"
        print(f"  {warm_page_cache_files(files)}", flush=True)
        print(f"  {self.modelled(lockfile, files)}", flush=True)
        for state in a.install_states.split(","):
            w = self._install_rows(section, label, locks, files, note, state)
        if not a.skip_pip:

            def pip_install(i: int) -> Run:
                venv = fresh_venv(self.tmp("venv-pip"))
                if a.drop_caches:
                    drop_page_cache()
                return run(
                    [
                        PY,
                        "-m",
                        "pip",
                        "--python",
                        venv,
                        "install",
                        "--no-deps",
                        "--no-index",
                        "--isolated",
                        "-q",
                        *files,
                    ],
                    env=self.env,
                    after=lambda: shutil.rmtree(venv.parent.parent),
                )

            p = rep.add(
                section, "pip install --no-deps --no-index --isolated", repeat(1, pip_install)
            )
            rep.ratio(f"{label}: pip / wh install (uv cache {state})", p, w, "target >= 3x")

    def _install_one(
        self,
        who: str,
        lockfile: Path,
        scan_cache: Path,
        files: list[Path],
        uv_cache: Path,
        tree: Tree | None = None,
    ) -> Run:
        venv = fresh_venv(self.tmp(f"venv-{who}"))
        if self.args.drop_caches:
            drop_page_cache()
        uv: list[str | Path] = [uv_bin(), "pip", "install", "--no-deps", "--offline"]
        uv += ["--no-index", "--no-config", "--link-mode=copy", "--python", venv]
        uv_env = dict(self.env, UV_CACHE_DIR=str(uv_cache))
        # the rows that stand for wh's own calls run uv with the concurrency wh gives it
        tuned = dict(uv_env, UV_CONCURRENT_INSTALLS=str(wh_uv_installs()))
        if who == "wh":
            cmd = self.wh(
                "install",
                "--locked",
                "--lockfile",
                lockfile,
                "--python",
                venv,
                "--backend",
                "uv",
                tree=tree,
            )
            # wh hands its uv WH_UV_CACHE_DIR (it strips UV_* from what it passes on)
            env = self.wh_env(scan_cache, tree=tree, WH_UV_CACHE_DIR=str(uv_cache))
            done = run(cmd, env=env)
        elif who in ("uv-levels", "uv-batches"):  # the order's calls, without wh
            order = lock_levels(lockfile) if who == "uv-levels" else self.batches(lockfile)
            parts = [run([*uv, *batch], env=tuned) for batch in order]
            done = Run(sum(r.wall for r in parts), max(r.rss_mb for r in parts), 0, "")
        elif who == "uv-private":  # what wh's private uv cache does, without wh
            done = self._uv_private(uv, venv, files)
        else:  # one call with every wheel: uv's defaults, or wh's setting
            done = run([*uv, *files], env=tuned if who == "uv-tuned" else uv_env)
        shutil.rmtree(venv.parent.parent)  # a GPU stack is ~11 GB installed
        return done

    def _uv_private(self, uv: list[str | Path], python: Path, files: list[Path]) -> Run:
        """Bare uv unpacking through a throwaway cache inside the venv, hardlinking from it,
        the cache removed after (timed with it): the files end with one link each, as with
        copy, and the shared uv cache is not touched."""
        cache = python.parent.parent / ".uv-private-cache"
        cmd = [*uv, "--cache-dir", cache, *files]
        cmd[cmd.index("--link-mode=copy")] = "--link-mode=hardlink"
        done = run(cmd, env=dict(self.env, UV_CONCURRENT_INSTALLS=str(wh_uv_installs())))
        t0 = time.perf_counter()
        shutil.rmtree(cache)
        return Run(done.wall + time.perf_counter() - t0, done.rss_mb, done.rc, done.out)

    def batches(self, lockfile: Path) -> list[list[Path]]:
        """The backend calls wh makes for this lock into a fresh venv (its dry-run plan)."""
        if lockfile not in self._batches:
            venv = fresh_venv(self.tmp("venv-plan"))
            cmd = self.wh(
                "install",
                "--locked",
                "--lockfile",
                lockfile,
                "--python",
                venv,
                "--backend",
                "uv",
                "--dry-run",
                "--json",
            )
            cache = self.tmp("whcache-plan")  # its own: the rows' caches stay as they are
            plan = json.loads(run(cmd, env=self.wh_env(cache)).out)["plan"]
            shutil.rmtree(venv.parent.parent)
            shutil.rmtree(cache, ignore_errors=True)
            where = {p.name: p for level in lock_levels(lockfile) for p in level}
            self._batches[lockfile] = [[where[a["wheel"]] for a in b] for b in plan["batches"]]
        return self._batches[lockfile]

    def modelled(self, lockfile: Path, files: list[Path]) -> str:
        """wh.model.schedule's cost of the lock's levels and of wh's batches, as multiples
        of one call with every wheel (what the measured rows are to be compared with)."""
        from wh.model.schedule import batch_cost, total_cost, weight
        from wh.proc.cores import usable_cores

        threads = usable_cores()  # what wh's uv backend balances for
        w: dict[str, float] = {}
        for f in files:
            with zipfile.ZipFile(f) as zf:
                infos = [i for i in zf.infolist() if not i.is_dir()]
            w[f.name] = weight(sum(i.file_size for i in infos), len(infos))
        one = batch_cost(list(w.values()), threads)

        def names(order: list[list[Path]]) -> list[list[str]]:
            return [[p.name for p in b] for b in order]

        lv = total_cost(names(lock_levels(lockfile)), w, threads) / one
        wh = total_cost(names(self.batches(lockfile)), w, threads) / one
        return (
            f"modelled install time ({threads} threads), as multiples of one call: "
            f"lock levels {lv:.3f}, wh's batches {wh:.3f}"
        )

    def _install_rows(
        self,
        section: str,
        label: str,
        locks: dict[Tree, tuple[Path, Path]],
        files: list[Path],
        note: str,
        state: str,
    ) -> Row:
        """wh, bare uv (its defaults), and uv with the concurrency wh gives it: in one call,
        in wh's batches and in the lock's levels; with a baseline, the baseline's wh too;
        their runs alternating (this machine's speed drifts).

        Same cache state for all: cold, each run starts from an empty uv cache and each wh
        from the cache its lock left (scan digests, no remembered validation); warm, bare uv
        fills the one uv cache and a run of each wh primes its own cache first.
        """
        lockfile = locks[self.tree][0]
        baseline = self.trees[0] if len(self.trees) == 2 else None
        n = self.args.repeat_install or (
            self.args.repeat if state == "cold" else self.args.repeat_warm
        )
        tuned_n = wh_uv_installs()
        chosen = self.args.install_rows.split(",")
        runs: dict[str, list[Run]] = {who: [] for who in INSTALL_ROWS if who in chosen}
        if baseline is not None:  # the baseline's wh runs first in each round
            runs = {"wh-baseline": [], **runs}
        # which tree each wh row runs
        trees = {"wh": self.tree, **({"wh-baseline": baseline} if baseline else {})}
        # one uv cache for every row: warm, the same files on disk for all; cold, emptied
        # after each run
        uv_cache = self.work / f"uvc-{label}"
        caches = {who: uv_cache for who in runs}
        wh_caches = {who: self.work / f"whcache-{label}-{state}-{who}" for who in trees}

        def fresh_wh_cache(who: str) -> None:
            shutil.rmtree(wh_caches[who], ignore_errors=True)
            shutil.copytree(locks[trees[who]][1], wh_caches[who])

        def install(who: str, cache: Path) -> Run:
            if who in trees:  # a wh: its tree's lock and its own cache
                t = trees[who]
                return self._install_one("wh", locks[t][0], wh_caches[who], files, cache, tree=t)
            return self._install_one(who, lockfile, wh_caches["wh"], files, cache)

        shutil.rmtree(uv_cache, ignore_errors=True)
        if state == "warm":  # bare uv fills the uv cache, then each wh primes its own cache
            install("uv", uv_cache)
            for who in trees:
                fresh_wh_cache(who)
                install(who, uv_cache)
        labels = {
            "wh": self.tagged(f"wh install --locked (uv backend), caches {state}", self.tree),
            "wh-baseline": f"wh install --locked (uv backend), caches {state} "
            f"[{baseline.label if baseline else ''}]",
            "uv": f"bare uv pip install --no-deps --link-mode=copy, uv cache {state}",
            "uv-tuned": f"the same bare uv with UV_CONCURRENT_INSTALLS={tuned_n} (wh's setting), "
            f"uv cache {state}",
            "uv-batches": f"uv with wh's setting, one call per batch of wh's plan (balanced), "
            f"uv cache {state}",
            "uv-levels": f"uv with wh's setting, one call per dependency level of the lock, "
            f"uv cache {state}",
            "uv-private": "bare uv with wh's setting through a throwaway cache in the venv, "
            "--link-mode=hardlink, the cache removed after (what wh's private uv cache does)",
        }
        for i in range(n):
            order = list(caches.items())
            for who, cache in order if i % 2 == 0 else order[::-1]:  # see per_tree
                if state == "cold" and who in trees:
                    fresh_wh_cache(who)
                runs[who].append(install(who, cache))
                if state == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
        rows = {who: self.report.add(section, labels[who], r, note) for who, r in runs.items()}
        if "wh-baseline" in rows:
            self.report.before_after(
                section,
                f"wh install --locked (uv backend), caches {state}",
                rows["wh-baseline"],
                rows["wh"],
            )
        ratios = [
            ("wh", "uv", "wh install / bare uv", "target <= 1.1x"),
            ("wh-baseline", "uv", "the baseline's wh install / bare uv", "target <= 1.1x"),
            (
                "wh",
                "uv-tuned",
                "wh install / bare uv with wh's setting",
                "wh against uv given the same concurrency",
            ),
            (
                "uv-tuned",
                "uv",
                "bare uv with wh's setting / bare uv",
                "what the concurrency alone gives",
            ),
            (
                "uv-levels",
                "uv-tuned",
                "uv by lock levels / one call, both with wh's setting",
                "what the unbalanced order would cost",
            ),
            (
                "uv-batches",
                "uv-tuned",
                "uv by wh's batches / one call, both with wh's setting",
                "what the balanced order costs",
            ),
            ("wh", "uv-batches", "wh install / uv by wh's batches", "what wh itself costs"),
            (
                "wh",
                "uv-private",
                "wh install / bare uv through a throwaway cache",
                "what wh costs over the same uv strategy",
            ),
            (
                "uv-private",
                "uv",
                "bare uv through a throwaway cache / bare uv",
                "what the private cache alone gives",
            ),
        ]
        for a, b, what, why in ratios:
            if a in rows and b in rows:
                self.report.ratio(f"{label}: {what} (uv cache {state})", rows[a], rows[b], why)
        return rows["wh"]

    def resolve_section(self) -> None:
        a, rep = self.args, self.report
        section = "resolve"
        print(f"\n## {section}", flush=True)
        versions = 20
        names = max(1, a.resolve_wheels // versions)
        outs: list[list[str]] = []

        def child(i: int) -> Run:
            r = run([PY, "-c", RESOLVE_CHILD, str(names), str(versions)], env=self.env)
            outs.append(r.out.split())
            return r

        runs = repeat(a.repeat, child)
        last = outs[-1]
        resolve_runs = [Run(float(o[3]), r.rss_mb, 0, "") for o, r in zip(outs, runs, strict=True)]
        build_runs = [Run(float(o[2]), r.rss_mb, 0, "") for o, r in zip(outs, runs, strict=True)]
        note = f"{last[0]} wheels ({names} names x {versions} versions), {last[1]} chosen"
        rep.add(section, "resolve() alone, in memory", resolve_runs, note)
        rep.add(section, "building the Wheel objects (to_wheel)", build_runs)
        rep.add(section, "whole child process (imports + build + resolve)", runs)

    def startup_section(self) -> None:
        rep = self.report
        print("\n## start-up", flush=True)
        for argv in (["--help"], ["verify", "--help"]):
            cmd = self.wh(*argv)
            runs = [run(cmd, env=self.env) for _ in range(self.args.repeat_warm)]
            rep.add("start-up", "wh " + " ".join(argv), runs)
        cli = self.tree.cli
        r = run([PY, "-X", "importtime", "-c", f"import {cli}"], env=self.env)
        total = 0
        for line in r.out.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].strip() == cli:
                total = int(parts[1])
        rep.add(
            "start-up",
            f"python -X importtime: {cli} cumulative",
            [Run(total / 1e6, r.rss_mb, 0, "")],
        )
        rep.add(
            "start-up",
            "python -c pass (interpreter alone)",
            repeat(self.args.repeat_warm, lambda i: run([PY, "-c", "pass"])),
        )


INSTALL_ROWS = ("wh", "uv", "uv-tuned", "uv-batches", "uv-levels", "uv-private")


def uv_platform(tag: str) -> str:
    """uv's --python-platform word for a wheel platform tag (manylinux_2_28_x86_64 ->
    x86_64-manylinux_2_28); other tags are passed as they are."""
    m = re.fullmatch(r"(manylinux_\d+_\d+)_(\w+)", tag)
    return f"{m.group(2)}-{m.group(1)}" if m else tag


def lock_levels(lockfile: Path) -> list[list[Path]]:
    """The lock's wheels grouped by dependency level, in wh's install order."""
    data = tomllib.loads(lockfile.read_text())
    where = {
        p["name"]: (lockfile.parent / w["path"]).resolve()
        for p in data.get("packages", [])
        for w in p.get("wheels", [])
    }
    order = data["tool"]["wh"]["install-order"]
    return [[where[n] for n in level if n in where] for level in order]


def wh_uv_installs() -> int:
    """UV_CONCURRENT_INSTALLS as wh sets it for its uv (what the tuned rows run with)."""
    from wh.install.backend import concurrent_installs
    from wh.settings import Settings

    return concurrent_installs(Settings.from_env())


def drop_page_cache() -> None:
    """Write back dirty pages, then empty the page cache (needs root; Linux only)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def warm_page_cache_files(files: list[Path]) -> str:
    for f in files:
        with f.open("rb", buffering=0) as fh:
            while fh.read(1 << 22):
                pass
    return "page cache warm (every wheel read once before timing)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="~200 MB synthetic, fewer repeats")
    ap.add_argument("--synth-wheels", type=int, default=int(os.environ.get("WH_BENCH_WHEELS", 240)))
    ap.add_argument("--synth-mb", type=int, default=int(os.environ.get("WH_BENCH_MB", 1500)))
    ap.add_argument("--resolve-wheels", type=int, default=10_000)
    ap.add_argument("--real", type=Path, help="a folder of real wheels")
    ap.add_argument("--real-roots", default="transformers,fastapi")
    ap.add_argument(
        "--real-target",
        default="",
        metavar="PLATFORM:PYTHON",
        help="lock the --real wheelhouse for a declared target (e.g. "
        "manylinux_2_28_x86_64:3.12) instead of a venv of this Python; no install rows",
    )
    ap.add_argument(
        "--allow-overwrite",
        default="",
        help="comma-separated packages wh may let overwrite another's files (the sglang stack "
        "needs flashinfer-python: it and torch-c-dlpack-ext both ship build_backend.py)",
    )
    ap.add_argument(
        "--lock-flags",
        default="",
        help="more flags for every `wh lock`, e.g. \"--allow-missing-library 'libnuma.so.1=on "
        "the image'\" (the sglang stack needs libnuma.so.1, outside the manylinux policy)",
    )
    ap.add_argument("--skip-synth", action="store_true")
    ap.add_argument("--skip-uv", action="store_true", help="no uv pip compile rows")
    ap.add_argument("--skip-pip", action="store_true")
    ap.add_argument(
        "--install-states",
        default="cold,warm",
        choices=["cold,warm", "cold", "warm"],
        help="uv cache states of the install rows",
    )
    ap.add_argument(
        "--drop-caches",
        action="store_true",
        help="empty the page cache before each install run (root; Linux), so every run "
        "reads its wheels and uv cache from disk",
    )
    ap.add_argument(
        "--install-rows",
        default=",".join(INSTALL_ROWS),
        help="comma-separated install rows to run (default all): fewer rows leave more runs "
        "of each within the same time, which a noisy machine needs",
    )
    ap.add_argument(
        "--only", choices=["lock", "install", "resolve", "startup", "fetch"], action="append"
    )
    ap.add_argument("--repeat", type=int, default=2, help="runs of the cold/slow rows")
    ap.add_argument("--repeat-warm", type=int, default=5, help="runs of the warm/fast rows")
    ap.add_argument(
        "--repeat-install",
        type=int,
        help="runs of each install row, cold and warm (default: --repeat cold, --repeat-warm warm)",
    )
    ap.add_argument(
        "--wh-src",
        type=Path,
        help="run the wh of another checkout (its root; PYTHONPATH) instead of this venv's",
    )
    ap.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the lock and install rows of wh at commit REV (its files from git "
        "archive, this venv's dependencies), alternating with the wh under test, and print "
        "a before/after table (the other sections run only the wh under test)",
    )
    ap.add_argument("--work", type=Path, default=REPO / ".bench", help="inputs and scratch")
    ap.add_argument("--markdown", type=Path, help="also write the tables here")
    a = ap.parse_args(argv)
    unknown = set(a.install_rows.split(",")) - set(INSTALL_ROWS)
    if unknown or "wh" not in a.install_rows.split(","):
        ap.error(f"--install-rows takes wh and any of {', '.join(INSTALL_ROWS[1:])}")
    if a.quick:
        a.synth_wheels, a.synth_mb, a.repeat, a.repeat_warm = 64, 200, 1, 3
    a.work.mkdir(parents=True, exist_ok=True)
    only = set(a.only or ["lock", "install", "resolve", "startup", "fetch"])
    tree = Tree.at(a.wh_src, f"{a.wh_src}") if a.wh_src else CURRENT
    if tree.package != "wh" and "resolve" in only:
        ap.error(
            f"--wh-src {a.wh_src}: the resolve section imports wh's modules, which this tree "
            "(from before commit 9852a71) names differently; leave it out with --only"
        )
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=a.work))
    CWD[0] = scratch
    try:
        baseline = checkout(a.baseline, scratch / "baseline") if a.baseline else None
        bench = Bench(a, scratch, tree, baseline)
        desc = machine()
        for t in bench.trees:
            where = run(
                [PY, "-c", f"import {t.package}; print({t.package}.__file__)"],
                env=t.env(bench.base),
            )
            desc += f"; {t.label}: {Path(where.out.strip()).parent}"
            # the load check's block search is in C only where that tree's module was built
            built = run(
                [PY, "-c", f"import {t.package}.wheel._blockscan"],
                env=t.env(bench.base),
                check=False,
            )
            desc += f" (block search in {'C' if built.rc == 0 else 'Python'})"
        print(f"machine: {desc}", flush=True)
        if "resolve" in only:
            bench.resolve_section()
        if "startup" in only:
            bench.startup_section()
        if "fetch" in only:
            from tests.bench_fetch import fetch_section

            fetch_section(bench)
        if not a.skip_synth and only & {"lock", "install"}:
            folder = synth_wheelhouse(a.work, a.synth_wheels, a.synth_mb)
            roots = (folder / "roots.txt").read_text().split()
            locks = bench.lock_section("synthetic", folder, roots)
            if "install" in only:
                bench.install_section("synthetic", locks)
        if a.real and only & {"lock", "install"}:
            roots = [r for r in a.real_roots.split(",") if r]
            locks = bench.lock_section("real", a.real.resolve(), roots)
            if "install" in only and not a.real_target:
                bench.install_section("real", locks)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    md = f"machine: {desc}\n\ncommand: python -m tests.bench {' '.join(argv or sys.argv[1:])}\n\n"
    md += bench.report.markdown()
    if baseline is not None:
        md += "\n\n" + bench.report.before_after_markdown(baseline.label, tree.label)
    print("\n" + md)
    if a.markdown:
        a.markdown.write_text(md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

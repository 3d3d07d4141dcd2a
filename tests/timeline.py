"""A timeline of one ``wh`` command run in-process: where its wall time and its CPU go.

    python -m tests.timeline install --locked --lockfile pylock.toml --python VENV
    python -m tests.timeline --before-backend install --locked ...

Not part of the test suite. The command runs unchanged; its main steps are wrapped where
they are looked up, and stderr gets one line per step as it ends::

    [step]   12.34 +  0.93 safeguard.preflight      (start, seconds, step)

then the CPU seconds (thread time, summed over every thread) and calls of the functions
that run while uv writes, at the moment uv exits and at the end, with the process's own
user and system time and its children's (uv, the probes). On a machine whose cores uv
keeps busy, wh's CPU during uv costs about that much divided by the cores in wall time.

``--before-backend`` stops the install where it would start uv (the install is rolled
back, the venv left as it was) and prints the wall and CPU seconds taken until then: the
Python wh runs before any backend writes, measured without the minute uv takes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

T0 = time.perf_counter()
CPU: Counter[str] = Counter()
CALLS: Counter[str] = Counter()

# (module, function): wall time of each call, on the main thread's timeline
STEPS = [
    ("wh.model.lockfile", "read"),
    ("wh.env.environment", "probe"),
    ("wh.app.install", "lock_fits"),
    ("wh.app.install", "verify_wheels"),
    ("wh.app.install", "verify_env"),
    ("wh.model.plan", "make_plan"),
    ("wh.model.plan", "balanced"),
    ("wh.install.safeguard", "preflight"),
    ("wh.install.strategy", "choose"),
    ("wh.install.rounds", "superseded"),
    ("wh.install.rounds", "rounds"),
    ("wh.install.staging", "_stage"),
    ("wh.install.staging", "_drop_cache"),
]
# (module, class or None, function): CPU time of each call, on whichever thread runs it
COUNTED = [
    ("wh.hashing", None, "fd_digest"),
    ("wh.install.validate", None, "installed_problems"),
    ("wh.install.validate", None, "remember_unpacked"),
    ("wh.install.watch", "Early", "poll"),
    ("wh.install.watch", "Unpacked", "poll"),
    ("wh.install.checker", "Checker", "_staged"),
    ("wh.cache.verified", None, "remember"),
]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _replace_everywhere(old: object, new: object) -> None:
    """Rebind ``old`` in every wh module that holds it (``from x import f`` too)."""
    for name, mod in list(sys.modules.items()):
        if name == "wh" or name.startswith("wh."):
            for attr, value in list(vars(mod).items()):
                if value is old:
                    setattr(mod, attr, new)


def _timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            took = time.perf_counter() - start
            _say(f"[step] {start - T0:7.2f} +{took:6.2f} {label}")

    return step


def _counted(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def counted(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            CPU[label] += time.thread_time() - start
            CALLS[label] += 1

    return counted


def _usage(when: str) -> None:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    _say(
        f"[cpu] {time.perf_counter() - T0:7.2f} {when}: wh user {own.ru_utime:.2f} s, "
        f"system {own.ru_stime:.2f} s; children user {kids.ru_utime:.2f} s, "
        f"system {kids.ru_stime:.2f} s"
    )
    for label, seconds in CPU.most_common():
        _say(f"[cpu]          {seconds:7.2f} s in {CALLS[label]:6d} calls of {label}")


@contextlib.contextmanager
def _transaction(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    start = time.perf_counter()
    with fn(*args, **kwargs) as txn:
        _say(f"[step] {start - T0:7.2f} +{time.perf_counter() - start:6.2f} journal written")
        yield txn
        closing = time.perf_counter()
    _say(f"[step] {closing - T0:7.2f} +{time.perf_counter() - closing:6.2f} journal committed")


def install_wrappers() -> None:
    # the modules the command uses, loaded now so that every name bound to a step is seen
    for module in ("wh.cli.main", "wh.app.install", "wh.install.validate"):
        importlib.import_module(module)
    import wh.install.checker as checker
    import wh.install.safeguard as safeguard
    import wh.install.staging as staging

    for module, cls, name in COUNTED:
        mod = importlib.import_module(module)
        if cls is None:
            fn = getattr(mod, name)
            _replace_everywhere(fn, _counted(f"{module.split('.')[-1]}.{name}", fn))
        else:
            owner = getattr(mod, cls)
            setattr(owner, name, _counted(f"{cls}.{name}", getattr(owner, name)))
    for module, name in STEPS:
        fn = getattr(importlib.import_module(module), name)
        _replace_everywhere(fn, _timed(f"{module.split('.')[-1]}.{name}", fn))
    stage = staging._stage

    def stage_then_usage(*args: Any, **kwargs: Any) -> Any:
        try:
            return stage(*args, **kwargs)
        finally:
            _usage("when uv exited")

    staging._stage = stage_then_usage  # type: ignore[assignment]
    real_txn = safeguard.all_or_nothing
    safeguard.all_or_nothing = functools.partial(_transaction, real_txn)  # type: ignore[assignment]
    wait = checker.Checker.wait
    checker.Checker.wait = _timed("Checker.wait", wait)  # type: ignore[method-assign]


class _BackendReached(Exception):
    """Raised where wh would start its backend (``--before-backend``)."""


def stop_before_backend() -> None:
    import wh.install.backend as backend

    def stop(cmd: list[str], what: str, env: Any) -> None:
        own = resource.getrusage(resource.RUSAGE_SELF)
        _say(
            f"[step] {time.perf_counter() - T0:7.2f} {what} would start now: wh CPU until "
            f"now {own.ru_utime + own.ru_stime:.2f} s (user {own.ru_utime:.2f}, system "
            f"{own.ru_stime:.2f})"
        )
        raise _BackendReached

    backend._run = stop  # type: ignore[assignment]


def main() -> None:
    args = sys.argv[1:]
    before = "--before-backend" in args
    install_wrappers()
    if before:
        args.remove("--before-backend")
        stop_before_backend()
    from wh.cli.main import cli

    try:
        cli(args=args, prog_name="wh")
    except _BackendReached:
        _say("[step] stopped before the backend; the install was rolled back")
    finally:
        _usage("at the end")


if __name__ == "__main__":
    main()

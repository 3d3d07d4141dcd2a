"""Writing a plan's wheels into the environment, as its ``strategy.Strategy`` says.

Staged: the backend writes every wheel in one call into a folder beside the environment
(one call per overwrite round, all at once), then each wheel's files are moved into place
(``mover``), batch by batch, while ``watch`` has checked what it could of them as they
were written. Direct: one backend call per batch.

Why stage: uv copies one wheel per thread, and the stack's biggest wheels form a dependency
chain (nvidia-cublas -> nvidia-cudnn -> torch). One backend call per batch copies that
chain one wheel after another; one call for everything copies it side by side. The
staging folder lies inside the environment's prefix, so the journal watches it and a
rollback removes it like any other new file.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from packaging.utils import NormalizedName

from wh import progress
from wh.env.environment import Environment
from wh.errors import UvCacheError
from wh.install import journal
from wh.install.backend import Backend
from wh.install.checker import Checker
from wh.install.layout import Schemes, WheelLayout
from wh.install.mover import Mover
from wh.install.rounds import rounds
from wh.install.strategy import Strategy
from wh.install.uvcache import ARCHIVES
from wh.install.watch import Checked, Early, Unpacked
from wh.model.choices import LinkMode
from wh.model.plan import ActionKind, Plan
from wh.proc import fsretry, lifetime, threads


def _stage(
    backend: Backend,
    python: Path,
    staged: Sequence[Sequence[WheelLayout]],
    mover: Mover,
    link_mode: LinkMode,
    check: Checker,
    cache: Path | None = None,
) -> tuple[set[NormalizedName], Checked]:
    """Run one backend call per round at once; meanwhile check what it has written
    (``watch.Early``). Returns the wheels that passed there, and the files that did of the
    others. ``cache``: a private uv cache for every call (see ``uvcache``)."""
    root = mover.root
    layouts = [lay for rnd in staged for lay in rnd]
    early: Early | Unpacked
    if cache is None:
        early = Early(check, mover, layouts)
    else:  # uv links every file at the end: hash them in its cache as each wheel is unpacked
        early = Unpacked(check, cache / ARCHIVES, layouts)

    def one(i: int) -> None:
        wheels = [lay.wheel for lay in staged[i]]
        backend.stage(python, wheels, root / str(i), link_mode=link_mode, cache=cache)

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            early.poll()

    # the first (largest) call runs on this thread, so Ctrl-C stops it at once
    with threads.pool(len(staged), "wh-stage") as pool:
        watcher = pool.submit(watch)
        others = [pool.submit(one, i) for i in range(1, len(staged))]
        try:
            one(0)
            for call in others:
                call.result()
        except BaseException:
            # Ctrl-C or SIGTERM: the other rounds' uv too, before the pool waits for them
            lifetime.stop_all()
            raise
        finally:
            stop.set()
        watcher.result()
    return early.passed(layouts)


def _unchecked(lay: WheelLayout, partly: Checked) -> WheelLayout:
    """``lay`` without the files that already matched RECORD where they were staged."""
    done = partly.get(lay.name)
    return replace(lay, files=tuple(t for t in lay.files if t not in done)) if done else lay


def write_plan(
    plan: Plan,
    env: Environment,
    backend: Backend,
    strategy: Strategy,
    layouts: Mapping[Path, WheelLayout],
    check: Checker,
) -> None:
    """Write the plan's wheels into ``env``, batch after batch (inside the transaction), as
    ``strategy`` (decided before the transaction, for this plan and ``backend``) says:
    staged, every wheel written by one call into the staging folder and each batch then
    moved into place, through a private uv cache or the user's; else one backend call per
    batch."""
    link_mode = strategy.link_mode
    schemes = Schemes.of(env)
    order = [layouts[a.package.wheel] for a in plan.changes]
    mover: Mover | None = None
    passed: set[NormalizedName] = set()  # checked where staged, before the move
    partly: Checked = {}  # files of other wheels checked there
    dropped: Future[None] | None = None
    # a private uv cache is removed on a side thread while the batches move; leaving the
    # block waits for it, so a rollback after a failure never races the removal
    with threads.pool(1, "wh-side") as side:
        if strategy.stage is not None:
            staged = rounds(order)
            root = strategy.stage
            cache = strategy.private_cache
            progress.status(strategy.cache_reason)
            progress.status(
                f"writing {len(order)} wheels into {root} with {len(staged)} "
                f"{backend.name} call(s) at once"
            )
            mover = Mover(root, env.prefix, schemes, staged)
            mode = strategy.stage_link_mode
            passed, partly = _stage(backend, env.python, staged, mover, mode, check, cache)
            journal.fault_point(0)  # everything staged, nothing moved yet
            if cache is not None:  # speed: its links go while the batches move
                dropped = side.submit(_drop_cache, cache, check)
            mover.check_staged(order)
        _write_batches(plan, env.python, backend, link_mode, layouts, check, mover, passed, partly)
        if dropped is not None:
            dropped.result()
    if mover is not None:
        mover.finish()


def _write_batches(
    plan: Plan,
    python: Path,
    backend: Backend,
    link_mode: LinkMode,
    layouts: Mapping[Path, WheelLayout],
    check: Checker,
    mover: Mover | None,
    passed: set[NormalizedName],
    partly: Checked,
) -> None:
    """Move each staged batch into place (``mover``), else install it with one backend call;
    then queue the check of its files that were not checked where staged."""
    verb = "moving into place" if mover else "installing"
    for i, batch in enumerate(plan.batches, 1):
        progress.status(
            f"{verb} batch {i}/{len(plan.batches)}: "
            + ", ".join(f"{a.package.name} {a.package.version}" for a in batch)
        )
        if mover is not None:
            for a in batch:
                mover.move(layouts[a.package.wheel])
            # speed: the batch's files are hashed while the next batch is written
            check.submit(
                [
                    _unchecked(layouts[a.package.wheel], partly)
                    for a in batch
                    if a.package.name not in passed
                ]
            )
        else:
            # two wheels of one batch writing one file (an allowed overwrite) go in separate
            # calls, the later one last: one call writes both copies in no set order
            reinstall = {a.package.wheel for a in batch if a.kind == ActionKind.REINSTALL}
            for rnd in rounds(layouts[a.package.wheel] for a in batch):
                # security: the backend starts the target's interpreter (pip runs under it, uv
                # asks it about itself), which runs the .pth files of the calls before: each
                # must have passed its member check first
                check.wait()
                backend.install(
                    python,
                    [lay.wheel for lay in rnd],
                    link_mode=link_mode,
                    reinstall=any(lay.wheel in reinstall for lay in rnd),
                )
                # each call's files are checked before the next call starts an interpreter
                check.submit([_unchecked(lay, partly) for lay in rnd if lay.name not in passed])
        journal.fault_point(i)


def _drop_cache(cache: Path, check: Checker) -> None:
    """Remove a private uv cache once nothing reads it: the staged files it was linked to
    keep one link each. Each wheel's folder goes as soon as its hashing is over, so most
    of the removal overlaps hashing what uv unpacked last."""
    try:
        for root in check.unpacked():
            fsretry.rmtree(root)
        fsretry.rmtree(cache)
    except OSError as exc:
        raise UvCacheError(cache, str(exc.strerror or exc)) from exc

"""The one place wh spawns subprocesses: logs the command, captures output, explains failure."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wh import settings
from wh.errors import CommandError
from wh.proc import lifetime, threads

log = logging.getLogger("wh.proc")

# Variables that would let a delegated pip or uv read configuration or indexes we did not
# choose. pip reads global config even with --isolated, so PIP_CONFIG_FILE points at nothing.
_LEAKY_PREFIXES = ("PIP_", "UV_")


@dataclass(frozen=True)
class Completed:
    """What a finished command returned."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for delegated pip/uv: no PIP_*/UV_* leaking in, no pip config files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    uv_cache = settings.current().uv_cache_dir
    if uv_cache is not None:
        env["UV_CACHE_DIR"] = uv_cache
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    check: bool = True,
    what: str = "",
    timeout: float | None = None,
    shown: str | None = None,
) -> Completed:
    """Run ``args`` (never through a shell); on failure raise ProcessError with its output.

    ``shown`` replaces the command in logs and errors (for long inline scripts).
    """
    argv = tuple(str(a) for a in args)
    display = shown or " ".join(argv)
    log.info("$ %s", display)
    # every child is tracked until it has exited (``lifetime``): one that may write an
    # environment dies with wh, and is killed and waited for before a rollback
    try:
        with threads.unblocked():  # started from a worker: Ctrl-C acts on it as on any program
            child = subprocess.Popen(
                lifetime.wrap(list(argv)),
                env=dict(env) if env is not None else None,
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
            )
    except OSError as exc:  # missing, not executable (/etc/passwd), not a program
        raise CommandError(
            argv[0], display, "cannot-run", what=what, problem=str(exc.strerror or exc)
        ) from exc
    try:
        lifetime.started(child, Path(argv[0]).name)
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise CommandError(argv[0], display, "timeout", what=what, timeout=timeout) from exc
    finally:
        if child.returncode is None:  # interrupted or timed out: nothing of it outlives this
            lifetime.kill(child)
        lifetime.ended(child)
    done = Completed(argv, child.returncode, stdout, stderr)
    if done.returncode != 0:
        log.info("exit %d\n%s%s", done.returncode, done.stdout, done.stderr)
    if check and done.returncode != 0:
        raise CommandError(
            argv[0],
            display,
            "failed",
            what=what,
            returncode=done.returncode,
            output=_tail(done.stdout + done.stderr),
        )
    return done


def _tail(text: str, lines: int = 30) -> list[str]:
    return text.strip().splitlines()[-lines:]


def start(args: Sequence[str | Path], *, what: str) -> subprocess.Popen[str]:
    """Start ``args`` (never through a shell) with UTF-8 text pipes on its three streams:
    a helper wh talks to while it works. Tracked by ``lifetime`` (it dies with wh) until
    ``stop``. ``OSError`` where it cannot be started."""
    argv = [str(a) for a in args]
    log.info("$ %s  (%s)", argv[0], what)
    with threads.unblocked():
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    lifetime.started(child, what)
    return child


def stop(child: subprocess.Popen[str]) -> None:
    """Kill a helper ``start`` started (where still running) and wait for it; the caller
    closes its pipes once done reading them."""
    try:
        lifetime.kill(child)
    finally:
        lifetime.ended(child)

"""Installer backends behind one Protocol: uv (preferred) and pip, always offline, never deps."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol

from packaging.utils import parse_wheel_filename

from wh import settings
from wh.errors import (
    BackendError,
    BackendFailedError,
    InterpreterError,
    LinkModeError,
    ProcessError,
)
from wh.install import uvcache
from wh.model.choices import BackendChoice, LinkMode
from wh.proc import spawn as proc
from wh.proc.cores import usable_cores
from wh.settings import Settings

find_uv_bin: Callable[[], str] | None
try:  # the `uv` wheel is optional: without it, uv is looked for on PATH
    from uv import find_uv_bin
except ImportError:
    find_uv_bin = None


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, read by ``strategy.decide`` before anything changes."""

    link_modes: frozenset[LinkMode]  # how it can place files (copy, links into its cache)
    # writes a whole plan into a folder beside the environment in one call (``stage``)
    stages: bool
    # unpacks wheels through a uv cache, which may be one wh chooses (``stage(cache=...)``)
    uv_cache: bool
    # asks the target's interpreter about itself and reads the answer from its stdout, so
    # an interpreter that prints as it starts confuses it (``fit_interpreter``)
    reads_interpreter_stdout: bool


class Backend(Protocol):
    name: BackendChoice
    # how many wheels one install call writes at once (what install batches are balanced for)
    threads: int
    capabilities: Capabilities

    def install(
        self, python: Path, wheels: Sequence[Path], *, link_mode: LinkMode, reinstall: bool
    ) -> None: ...

    def stage(
        self,
        python: Path,
        wheels: Sequence[Path],
        prefix: Path,
        *,
        link_mode: LinkMode,
        cache: Path | None = None,
    ) -> None: ...

    def cache_dir(self) -> Path | None: ...


def unsupported_link_mode(name: str, capabilities: Capabilities, link_mode: str) -> str | None:
    """Why ``name`` cannot install with ``link_mode`` (None when it can): the rule, for
    the refusal ``strategy.decide`` raises before anything changes."""
    if link_mode in capabilities.link_modes:
        return None
    modes = ", ".join(sorted(capabilities.link_modes))
    return f"{name} cannot install with link mode {str(link_mode)!r} (it supports: {modes})"


def uv_binary() -> Path | None:
    """The uv executable shipped with the `uv` wheel, else one on PATH."""
    if find_uv_bin is not None:
        try:
            return Path(find_uv_bin())
        except FileNotFoundError:
            pass
    found = shutil.which("uv")
    return Path(found) if found else None


def concurrent_installs(setting: Settings) -> int:
    """How many wheels wh's uv writes at once: ``WH_UV_CONCURRENT_INSTALLS``, else twice
    the usable cores.

    uv's own default is one per core. Copying from uv's cache is mostly kernel work waiting
    on the disk, so with one per core the cores sit idle part of the time; twice as many
    keep them busy while others wait. An install that unpacks into an empty cache is
    CPU-bound and runs as fast with either.
    """
    return setting.uv_concurrent_installs or 2 * usable_cores()


class UvBackend:
    name = BackendChoice.UV
    capabilities = Capabilities(
        frozenset(LinkMode), stages=True, uv_cache=True, reads_interpreter_stdout=True
    )

    def __init__(self, uv: Path, setting: Settings | None = None) -> None:
        self.uv = uv
        self.installs = concurrent_installs(setting or settings.current())
        # the cores the copying keeps busy: what install batches are balanced for
        self.threads = usable_cores()

    def environment(self) -> dict[str, str]:
        """The variables uv runs with: the caller's, less UV_*/PIP_*, plus wh's own."""
        return proc.clean_env({"UV_CONCURRENT_INSTALLS": str(self.installs)})

    def command(
        self, python: Path, wheels: Sequence[Path], *, link_mode: LinkMode, reinstall: bool
    ) -> list[str]:
        cmd = [
            str(self.uv),
            "pip",
            "install",
            "--no-deps",
            "--offline",
            "--no-index",
            "--no-config",
            f"--link-mode={link_mode}",
            "--python",
            str(python),
        ]
        if reinstall:
            cmd.append("--reinstall")
        return cmd + [str(w) for w in wheels]

    def install(
        self, python: Path, wheels: Sequence[Path], *, link_mode: LinkMode, reinstall: bool
    ) -> None:
        cmd = self.command(python, [], link_mode=link_mode, reinstall=reinstall)
        _run_with_wheels(cmd, wheels, "uv", self.environment())

    def stage(
        self,
        python: Path,
        wheels: Sequence[Path],
        prefix: Path,
        *,
        link_mode: LinkMode,
        cache: Path | None = None,
    ) -> None:
        """Install ``wheels`` for ``python`` under ``prefix`` (its scheme, that root) in one
        call: scripts name ``python``, files land where they would in a venv at ``prefix``.
        ``cache``: the uv cache to unpack into instead of the user's (see ``uvcache``)."""
        cmd = self.command(python, [], link_mode=link_mode, reinstall=False)
        cmd += ["--prefix", str(prefix)]
        if cache is not None:
            cmd += ["--cache-dir", str(cache)]
        _run_with_wheels(cmd, wheels, "uv", self.environment())

    def cache_dir(self) -> Path | None:
        """The user's uv cache, as this backend's calls would use it."""
        return uvcache.cache_dir(self.uv, self.environment())


class PipBackend:
    name = BackendChoice.PIP
    threads = 1  # pip installs one wheel after another
    # pip copies each file into place, and only into the environment it installs into
    # and runs inside the target's interpreter rather than asking it about itself
    capabilities = Capabilities(
        frozenset({LinkMode.COPY}), stages=False, uv_cache=False, reads_interpreter_stdout=False
    )

    def command(
        self, python: Path, wheels: Sequence[Path], *, link_mode: LinkMode, reinstall: bool
    ) -> list[str]:
        # wh's own pip drives the target through --python, so the target needs no pip.
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--isolated",
            "--disable-pip-version-check",
            "--no-warn-script-location",
        ]
        if reinstall:
            cmd.append("--force-reinstall")
        return cmd + [str(w) for w in wheels]

    def install(
        self, python: Path, wheels: Sequence[Path], *, link_mode: LinkMode, reinstall: bool
    ) -> None:
        why = unsupported_link_mode(self.name, self.capabilities, link_mode)
        if why is not None:
            raise LinkModeError(str(link_mode), "backend", why=why)
        cmd = self.command(python, [], link_mode=link_mode, reinstall=reinstall)
        _run_with_wheels(cmd, wheels, "pip", proc.clean_env())

    def stage(
        self,
        python: Path,
        wheels: Sequence[Path],
        prefix: Path,
        *,
        link_mode: LinkMode,
        cache: Path | None = None,
    ) -> None:
        """Refused: pip installs into the environment itself (``capabilities.stages`` is
        False, so ``strategy.decide`` never stages with it)."""
        raise BackendError("pip", "cannot-stage")

    def cache_dir(self) -> Path | None:
        """None: pip unpacks through no uv cache."""
        return None


# CreateProcess takes at most 32,767 characters of command line; wheel paths under a user
# folder run ~127 characters each, so 235 of them are ~29,900. Past this budget the wheels
# go in a requirements file instead (``-r FILE``), which uv and pip both read.
CMDLINE_BUDGET = 16_000


def command_line_length(cmd: Sequence[str]) -> int:
    """The length of ``cmd`` as CreateProcess receives it (``subprocess.list2cmdline``)."""
    return len(subprocess.list2cmdline(cmd))


def requirements_text(wheels: Sequence[PurePath]) -> str:
    """One PEP 508 direct reference per wheel (``name @ file:///...``): paths with spaces
    or non-ASCII characters survive as URLs."""
    lines = []
    for w in wheels:
        name = parse_wheel_filename(w.name)[0]
        full = w if w.is_absolute() else Path(os.path.abspath(w))
        lines.append(f"{name} @ {full.as_uri()}\n")
    return "".join(lines)


def _run_with_wheels(
    cmd: list[str],
    wheels: Sequence[PurePath],
    what: str,
    env: Mapping[str, str],
    budget: int | None = None,
) -> None:
    """``cmd`` followed by the wheels: on its command line while that fits ``budget``
    (default ``CMDLINE_BUDGET``), else through a requirements file written for the call."""
    full = [*cmd, *map(str, wheels)]
    if command_line_length(full) <= (CMDLINE_BUDGET if budget is None else budget):
        _run(full, what, env)
        return
    fd, name = tempfile.mkstemp(prefix="wh-wheels-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(requirements_text(wheels))
        _run([*cmd, "-r", name], what, env)
    finally:
        os.unlink(name)


def _run(cmd: list[str], what: str, env: Mapping[str, str]) -> None:
    try:
        proc.run(cmd, env=env, what=f"{what} install")
    except ProcessError as exc:
        raise BackendFailedError(exc) from exc


def fit_interpreter(
    chosen: Backend, requested: BackendChoice, python: Path, startup_output: str
) -> tuple[Backend, str | None]:
    """The backend to use for an interpreter that prints ``startup_output`` as it starts
    (a ``.pth`` file may print, legally), and a note saying why it changed, if it did.

    uv asks the interpreter about itself and reads the answer from its stdout, so every uv
    call on such an interpreter fails ("returned an invalid response"); pip runs inside the
    interpreter and is not confused. ``auto`` therefore takes pip; ``uv`` asked for by name
    is refused (exit 10) before anything changes."""
    if not chosen.capabilities.reads_interpreter_stdout or not startup_output.strip():
        return chosen, None
    shown = [line for line in startup_output.splitlines() if line.strip()][-5:]
    if requested != BackendChoice.AUTO:
        raise InterpreterError(python, "prints", output=shown)
    return PipBackend(), (
        f"{python} prints to stdout as it starts ({shown[-1][:80]!r}), which uv cannot work "
        "with: installing with pip"
    )


def choose(name: BackendChoice) -> Backend:
    """``auto`` takes uv when available, else pip."""
    if name in (BackendChoice.AUTO, BackendChoice.UV):
        uv = uv_binary()
        if uv is not None:
            return UvBackend(uv)
        if name == BackendChoice.UV:
            raise BackendError("uv", "unavailable")
    return PipBackend()

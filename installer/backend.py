"""Installer backends behind one Protocol: uv (preferred) and pip, always offline, never deps."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from installer import proc
from installer.errors import InstallError, ProcessError


class Backend(Protocol):
    name: str
    # how many wheels one install call writes at once (what install batches are balanced for)
    threads: int

    def install(
        self, python: Path, wheels: Sequence[Path], *, link_mode: str, reinstall: bool
    ) -> None: ...


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)  # not on Windows or macOS
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


def uv_binary() -> Path | None:
    """The uv executable shipped with the `uv` wheel, else one on PATH."""
    try:
        from uv import find_uv_bin

        return Path(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        return Path(found) if found else None


class UvBackend:
    name = "uv"

    def __init__(self, uv: Path) -> None:
        self.uv = uv
        # uv installs one wheel per thread, as many threads as usable cores
        self.threads = usable_cores()

    def command(
        self, python: Path, wheels: Sequence[Path], *, link_mode: str, reinstall: bool
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
        self, python: Path, wheels: Sequence[Path], *, link_mode: str, reinstall: bool
    ) -> None:
        _run(self.command(python, wheels, link_mode=link_mode, reinstall=reinstall), "uv")


class PipBackend:
    name = "pip"
    threads = 1  # pip installs one wheel after another

    def command(
        self, python: Path, wheels: Sequence[Path], *, link_mode: str, reinstall: bool
    ) -> list[str]:
        # wh's own pip drives the target through --python, so the target needs no pip.
        import sys

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
        self, python: Path, wheels: Sequence[Path], *, link_mode: str, reinstall: bool
    ) -> None:
        if link_mode != "copy":
            raise InstallError(
                f"pip cannot install with link mode {link_mode!r}",
                hint="use --backend uv, or --link-mode copy",
            )
        _run(self.command(python, wheels, link_mode=link_mode, reinstall=reinstall), "pip")


def _run(cmd: list[str], what: str) -> None:
    try:
        proc.run(cmd, env=proc.clean_env(), what=f"{what} install")
    except ProcessError as exc:
        raise InstallError(exc.message, details=exc.details, hint="see the output above") from exc


def choose(name: str) -> Backend:
    """``auto`` takes uv when available, else pip."""
    if name in ("auto", "uv"):
        uv = uv_binary()
        if uv is not None:
            return UvBackend(uv)
        if name == "uv":
            raise InstallError("uv is not available", hint="install uv, or use --backend pip")
    return PipBackend()

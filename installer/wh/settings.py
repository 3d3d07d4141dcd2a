"""What wh reads from its process environment: the ``WH_*`` variables, read once, checked.

``Settings.from_env()`` reads every variable and refuses a value it cannot use (a
``UsageError`` naming the variable, the rule and the fix). The CLI reads them once per run
(``run()``: on first use, so a bad value is refused inside the command and rendered as its
errors are); the modules below take theirs from ``current()``, which reads the environment
afresh only outside a run (a library caller, a test calling a module directly).

The variables:

- ``WH_CACHE_DIR``: wh's own cache (scan digests, verified wheels, remembered locks);
  empty or unset: the user cache folder of the platform.
- ``WH_NO_LOCK_MEMO=1``: never replay a remembered lock.
- ``WH_VERIFY_REHASH=1``: trust no remembered digest or verdict; hash and check again.
- ``WH_UV_CONCURRENT_INSTALLS=N``: how many wheels wh's uv writes at once.
- ``WH_UV_CACHE_DIR=PATH``: the uv cache wh's uv uses (``UV_CACHE_DIR`` itself is not
  passed through, like every ``UV_*`` variable).
- ``WH_CUDA_VERSION=12.8``: the CUDA toolkit a Windows build uses when several are installed.
- ``WH_TEST_FAULT=N:ACTION[,...]``: a test hook that fails, interrupts, sleeps or writes a
  file after install batch N (read where it fires, in the install journal); while it
  sleeps, SIGUSR1 makes wh write each thread's stack to stderr (not on Windows).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from wh.errors import SettingError

_OFF = ("", "0")
_ON = ("1", "true", "yes", "on")
_CUDA = re.compile(r"\d+(\.\d+){0,2}")  # what packaging.Version reads as 12, 12.8, 12.8.1
_FAULT_ACTIONS = ("fail", "interrupt")


@dataclass(frozen=True)
class Fault:
    """One ``WH_TEST_FAULT`` spec: after batch ``at`` (a number, or ``hashed``), ``action``
    (``fail``, ``interrupt``, ``sleep:SECONDS`` or ``write:PATH``)."""

    at: str
    action: str


@dataclass(frozen=True)
class Settings:
    """Every ``WH_*`` variable, checked; None / False where unset."""

    cache_dir_override: Path | None = None
    no_lock_memo: bool = False
    verify_rehash: bool = False
    uv_concurrent_installs: int | None = None
    uv_cache_dir: str | None = None
    cuda_version: str | None = None
    test_faults: tuple[Fault, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        cache = env.get("WH_CACHE_DIR", "")
        return cls(
            cache_dir_override=Path(cache) if cache else None,
            no_lock_memo=_flag(env, "WH_NO_LOCK_MEMO", "replay no remembered lock"),
            verify_rehash=_flag(env, "WH_VERIFY_REHASH", "hash and check every wheel again"),
            uv_concurrent_installs=_installs(env.get("WH_UV_CONCURRENT_INSTALLS", "")),
            uv_cache_dir=env.get("WH_UV_CACHE_DIR"),
            cuda_version=_cuda(env.get("WH_CUDA_VERSION", "")),
            test_faults=_faults(env.get("WH_TEST_FAULT", "")),
        )

    def cache_dir(self) -> Path:
        """wh's own cache folder: ``WH_CACHE_DIR``, else the platform's user cache."""
        if self.cache_dir_override is not None:
            return self.cache_dir_override
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("wh", appauthor=False))

    def faults_at(self, batch: int | str) -> list[str]:
        """The ``WH_TEST_FAULT`` actions set for after ``batch``, in order."""
        return [f.action for f in self.test_faults if f.at == str(batch)]


def _flag(env: Mapping[str, str], name: str, what: str) -> bool:
    raw = env.get(name, "")
    if raw in _OFF:
        return False
    if raw.strip().lower() in _ON:
        return True
    raise SettingError(name, raw, "flag", what)


def _installs(raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdecimal() or int(raw) < 1:  # isdigit() takes "²", which int() refuses
        raise SettingError("WH_UV_CONCURRENT_INSTALLS", raw, "count")
    return int(raw)


def _cuda(raw: str) -> str | None:
    raw = raw.strip()
    if not raw:
        return None
    if not _CUDA.fullmatch(raw):
        raise SettingError("WH_CUDA_VERSION", raw, "cuda")
    return raw


def _faults(raw: str) -> tuple[Fault, ...]:
    out: list[Fault] = []
    for spec in raw.split(","):
        if not spec:
            continue
        at, _, action = spec.partition(":")
        verb, _, arg = action.partition(":")
        known = (
            action in _FAULT_ACTIONS
            or (verb == "write" and os.path.isabs(arg))
            or (verb == "sleep" and _is_seconds(arg))
        )
        if not (at.isdecimal() or at == "hashed") or not known:
            raise SettingError("WH_TEST_FAULT", spec, "fault")
        out.append(Fault(at, action))
    return tuple(out)


def _is_seconds(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False


class _Run:
    """The settings of one CLI run, read from the environment on first use."""

    def __init__(self) -> None:
        self.settings: Settings | None = None


_CURRENT: ContextVar[_Run | Settings | None] = ContextVar("wh_settings", default=None)


def current() -> Settings:
    """The settings of this run (``use``, ``run``), else the environment's as it is now.

    Worker threads do not inherit the context: there this reads the environment, which
    holds the same values."""
    held = _CURRENT.get()
    if isinstance(held, Settings):
        return held
    if held is None:
        return Settings.from_env()
    if held.settings is None:
        held.settings = Settings.from_env()
    return held.settings


@contextmanager
def use(settings: Settings) -> Iterator[Settings]:
    """Make ``settings`` what ``current()`` returns inside the block."""
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


@contextmanager
def run() -> Iterator[None]:
    """One CLI run: the environment is read and checked once, where a setting is first
    needed (inside the command, so a bad value renders as the command renders errors)."""
    token = _CURRENT.set(_Run())
    try:
        yield
    finally:
        _CURRENT.reset(token)


def cache_dir() -> Path:
    """wh's own cache folder (``WH_CACHE_DIR``, else the platform's user cache)."""
    return current().cache_dir()

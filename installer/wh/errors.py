"""The one error hierarchy of wh: every refusal carries its data, a fix, and an exit code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar


class WhError(Exception):
    """Base of every error wh raises on purpose.

    ``message`` says what went wrong, ``hint`` says what the user can do about it.
    ``details`` are extra lines (one problem each) rendered under the message.
    A subclass whose message is built from data takes that data as typed attributes,
    builds its message and hint from them, and names them in ``fields()``: ``to_json``
    carries them under "fields" (an error without fields has none).
    """

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, hint: str = "", details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = tuple(details)

    def render(self) -> str:
        lines = [f"error: {self.message}"]
        lines.extend(f"  {d}" for d in self.details)
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def fields(self) -> dict[str, object]:
        """The data the message is built from (JSON values)."""
        return {}

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "error": self.kind,
            "exit_code": self.exit_code,
            "message": self.message,
            "details": list(self.details),
            "hint": self.hint,
        }
        fields = self.fields()
        if fields:
            out["fields"] = fields
        return out


class UsageError(WhError):
    """An option or setting (an environment variable) has a value wh cannot use."""

    exit_code = 2
    kind = "usage"


class WheelhouseError(WhError):
    """A wheelhouse, or a wheel in it, is unusable."""

    exit_code = 3
    kind = "wheelhouse"


class ResolutionError(WhError):
    """The requirements cannot be satisfied from the wheelhouse."""

    exit_code = 4
    kind = "resolution"


class LockError(WhError):
    """A lock is missing, stale, edited by hand, or names wheels that do not match."""

    exit_code = 5
    kind = "lock"


_RELOCK = "re-create it with `wh lock`"


class LockMissingError(LockError):
    """The lock file does not exist."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"lock {path} does not exist",
            hint=f"create it with `wh lock PROFILE --lockfile {path}`",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path)}


class LockSyntaxError(LockError):
    """The lock is not TOML (``pep751`` False) or not a PEP 751 lock (True); ``problem``
    is the parser's own words."""

    def __init__(self, path: Path, problem: str, *, pep751: bool) -> None:
        self.path = path
        self.problem = problem
        self.pep751 = pep751
        what = f"not a valid PEP 751 lock: {problem}" if pep751 else f"not valid TOML ({problem})"
        super().__init__(f"{path}: {what}", hint=_RELOCK)

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "problem": self.problem, "pep751": self.pep751}


class LockEntryError(LockError):
    """A package entry of the lock wh cannot install from: ``rule`` is "one-wheel" (not
    exactly one wheel by path or URL), "no-sha256" (``found`` names the weak hashes it
    has) or "no-size"."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "one-wheel": (
            "package {name} must name exactly one wheel by path or URL",
            "wh installs exactly one wheel per package; re-create with `wh lock`",
        ),
        "no-sha256": (
            "{name} has no sha256 hash (found: {found})",
            "md5 and sha1 are refused; re-create the lock with `wh lock`",
        ),
        "no-size": ("{name} has no size", _RELOCK),
    }

    def __init__(self, path: Path, package: str, rule: str, *, found: Sequence[str] = ()) -> None:
        self.path = path
        self.package = package
        self.rule = rule
        self.found = tuple(found)
        text, hint = self._TEXT[rule]
        message = text.format(name=package, found=", ".join(self.found) or "none")
        super().__init__(f"{path}: {message}", hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": str(self.path),
            "package": self.package,
            "rule": self.rule,
        }
        if self.rule == "no-sha256":
            out["found"] = list(self.found)
        return out


class LockDigestError(LockError):
    """The lock's digest does not match its bytes: it was edited after `wh lock` wrote it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path}: the lock's digest does not match its contents (edited by hand?)",
            hint="never edit a lock; re-create it with `wh lock` and review the diff",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path)}


class LockFormatError(LockError):
    """The lock's ``[tool.wh]`` is of a format this wh does not read (a newer wh wrote it),
    or a value in it is not what its format says."""

    def __init__(self, path: Path, found: str, supported: int, problem: str = "") -> None:
        self.path = path
        self.found = found
        self.supported = supported
        self.problem = problem
        if problem:
            message = f"{path}: [tool.wh] is malformed ({problem})"
            hint = _RELOCK
        else:
            message = (
                f"{path}: [tool.wh] format {found} is not one this wh reads "
                f"(it reads formats 1 to {supported})"
            )
            hint = "install the wh that wrote the lock, or re-create the lock with this wh"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": str(self.path),
            "format": self.found,
            "supported": self.supported,
        }
        if self.problem:
            out["problem"] = self.problem
        return out


class LockWheelsError(LockError):
    """Wheels a lock names are missing, or differ in size or sha256 (``problems``: one line
    per wheel); ``downloaded`` True where they could not be had from the lock's index."""

    def __init__(self, path: Path, problems: Sequence[str], *, downloaded: bool = False) -> None:
        self.path = path
        self.problems = tuple(problems)
        self.downloaded = downloaded
        n = len(self.problems)
        if downloaded:
            message = f"{n} wheel(s) of {path} could not be downloaded; nothing was installed"
            hint = (
                "check that the index serves the wheelhouse the lock was made from "
                "(`wh index`, then serve the folder), then run the install again"
            )
        else:
            message = f"{n} wheel(s) named by {path} do not match it; nothing was installed"
            hint = "restore the exact wheels the lock names, or re-lock with `wh lock`"
        super().__init__(message, details=self.problems, hint=hint)

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "problems": list(self.problems),
            "downloaded": self.downloaded,
        }


class LockTargetError(LockError):
    """The lock was made for another platform or Python than the environment's
    (``made_for`` is the lock's target description, ``problems`` each difference)."""

    def __init__(
        self, path: Path, made_for: str | None, python: Path, problems: Sequence[str]
    ) -> None:
        self.path = path
        self.made_for = made_for
        self.python = python
        self.problems = tuple(problems)
        super().__init__(
            f"{path} was made for {made_for or 'another target'}, not for {python}",
            details=self.problems,
            hint="lock for this environment: `wh lock PROFILE --python PATH`",
        )

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "made_for": self.made_for,
            "python": str(self.python),
            "problems": list(self.problems),
        }


class LockKeptError(LockError):
    """Installed distributions the lock keeps (no wheel) changed since it was made."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(
            f"{path} relies on installed distributions that changed; nothing was installed",
            details=self.problems,
            hint="re-lock for this environment with `wh lock PROFILE --python PATH`",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "problems": list(self.problems)}


class NotInLockError(LockError):
    """`wh why` was asked about a package the lock does not have."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        super().__init__(
            f"{name} is not in {path}",
            hint="`wh why` explains packages of the lock; check the name, or re-lock",
        )

    def fields(self) -> dict[str, object]:
        return {"name": self.name, "path": str(self.path)}


class ProtectionError(WhError):
    """A plan would replace, downgrade or remove a protected distribution."""

    exit_code = 6
    kind = "protection"


class ProtectedChangeError(ProtectionError):
    """The plan against ``python``'s environment would change protected distributions:
    ``refusals`` holds (name, reason, missing) for each, ``missing`` True where the lock
    keeps it as installed and the environment lacks it."""

    def __init__(self, python: Path, refusals: Sequence[tuple[str, str, bool]]) -> None:
        self.python = python
        self.refusals = tuple(refusals)
        if all(missing for _n, _r, missing in self.refusals):
            names = ", ".join(n for n, _r, _m in self.refusals)
            hint = (
                f"the lock keeps {names} as installed and carries no wheel of it: install that "
                f"exact build into {python} first, or lock (bundle) from a wheelhouse that "
                "holds its wheel with `--protect NAME==VERSION`, which then installs it"
            )
        else:
            hint = (
                "protected distributions are never replaced: re-lock with the protection "
                "(`wh lock PROFILE --protect NAME`) so the resolver keeps the installed build, "
                "or protect the exact build the lock carries (`--protect NAME==VERSION`)"
            )
        super().__init__(
            "the plan would change a protected distribution; nothing was installed",
            details=[reason for _n, reason, _m in self.refusals],
            hint=hint,
        )

    def fields(self) -> dict[str, object]:
        return {
            "python": str(self.python),
            "refusals": [{"name": n, "reason": r, "missing": m} for n, r, m in self.refusals],
        }


class InstallError(WhError):
    """The installer backend failed; the environment was restored."""

    exit_code = 7
    kind = "install"


class VerifyError(WhError):
    """The installed environment does not satisfy the profile."""

    exit_code = 8
    kind = "verify"


class ProfileError(WhError):
    """A profile (wh.toml, [tool.wh], CLI flags) is malformed or unknown."""

    exit_code = 9
    kind = "profile"


class TargetError(WhError):
    """The target interpreter or declared platform is unusable."""

    exit_code = 10
    kind = "target"


class BuildError(WhError):
    """A recipe, patch, toolchain or built wheel failed a check."""

    exit_code = 11
    kind = "build"


class EnvironmentLockedError(WhError):
    """Another wh process holds the target environment."""

    exit_code = 12
    kind = "busy"


class ProcessError(WhError):
    """A delegated command failed."""

    exit_code = 13
    kind = "process"

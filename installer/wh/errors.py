"""The one error hierarchy of wh: every refusal carries its data, a fix, and an exit code."""

from __future__ import annotations

from collections.abc import Sequence


class WhError(Exception):
    """Base of every error wh raises on purpose.

    ``message`` says what went wrong, ``hint`` says what the user can do about it.
    ``details`` are extra lines (one problem each) rendered under the message.
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

    def to_json(self) -> dict[str, object]:
        return {
            "error": self.kind,
            "exit_code": self.exit_code,
            "message": self.message,
            "details": list(self.details),
            "hint": self.hint,
        }


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


class ProtectionError(WhError):
    """A plan would replace, downgrade or remove a protected distribution."""

    exit_code = 6
    kind = "protection"


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

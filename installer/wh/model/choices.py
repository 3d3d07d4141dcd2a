"""The closed sets of words a profile, the CLI and a lock share: one ``StrEnum`` each.

A member is its string (it compares, prints, formats, and goes into JSON and TOML as its
value), so lock bytes, JSON output and CLI choices are what the words were.
"""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    """``enum.StrEnum`` (Python 3.11+) for 3.10 too: members print and format as their
    value, where a plain ``(str, Enum)`` formats as ``Class.MEMBER`` on 3.12. Their repr is
    the string's too, so a message with ``{mode!r}`` (and a memo key built from a repr)
    reads as it did when the value was a plain string."""

    def __repr__(self) -> str:
        return str.__repr__(self)

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """Every value, in declaration order (CLI choices, error hints)."""
        return tuple(m.value for m in cls)


class LinkMode(StrEnum):
    """How the backend puts a wheel's files into the environment."""

    COPY = "copy"
    HARDLINK = "hardlink"
    SYMLINK = "symlink"
    CLONE = "clone"


class BackendChoice(StrEnum):
    """Which installer backend writes the environment (``auto``: uv where there is one)."""

    AUTO = "auto"
    UV = "uv"
    PIP = "pip"


class Prereleases(StrEnum):
    """When the resolver takes a pre-release."""

    IF_NECESSARY_OR_EXPLICIT = "if-necessary-or-explicit"
    ALLOW = "allow"
    DISALLOW = "disallow"


class ChecksMode(StrEnum):
    """``--checks``: ``all`` undoes an install whose import or snippet check fails; ``warn``
    reports it and keeps the install (a build box without a GPU)."""

    ALL = "all"
    WARN = "warn"


class UvCacheMode(StrEnum):
    """``--uv-cache``: which uv cache a staged copy-mode install unpacks through
    (``auto``: a private one unless the user's already holds most of the wheels)."""

    AUTO = "auto"
    SHARED = "shared"
    PRIVATE = "private"


class TargetOS(StrEnum):
    """``wh build --target-os``: the platform a recipe's conditions are evaluated for."""

    WINDOWS = "windows"
    LINUX = "linux"

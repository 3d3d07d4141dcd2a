"""A wheel as a value: its identity, tags, dependency metadata, size and digest (no IO)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version


class WheelProblem(Exception):
    """Why one wheel file cannot be used (caught by the scan and reported with the others)."""


@dataclass(frozen=True)
class WheelMeta:
    """The raw metadata of a wheel, as strings: what the scan cache stores."""

    filename: str
    name: str
    version: str
    requires_dist: tuple[str, ...]
    requires_python: str | None
    provides_extra: tuple[str, ...]


@dataclass(frozen=True)
class Wheel:
    """A usable wheel in a wheelhouse, with parsed metadata, size and sha256.

    ``requires_dist`` and ``requires_python`` are parsed from their text on first use: a
    lock reads the dependencies of the few wheels the resolver visits, not of every wheel
    in the folder. ``to_wheel`` checks the text parses before a Wheel is handed out (the
    scan cache remembers that it did), so the lazy parse cannot fail later.
    """

    path: Path
    name: NormalizedName
    version: Version
    tags: frozenset[Tag]
    build: tuple[int, str] | tuple[()]
    requires_dist_text: tuple[str, ...] = field(compare=False)
    requires_python_text: str | None = field(compare=False)
    provides_extra: tuple[NormalizedName, ...] = field(compare=False)
    size: int = field(compare=False)
    sha256: str = field(compare=False)
    built_locally: bool = field(default=False, compare=False)

    @property
    def filename(self) -> str:
        return self.path.name

    @cached_property
    def requires_dist(self) -> tuple[Requirement, ...]:
        return tuple(Requirement(text) for text in self.requires_dist_text)

    @cached_property
    def requires_python(self) -> SpecifierSet | None:
        return SpecifierSet(self.requires_python_text) if self.requires_python_text else None

    def __str__(self) -> str:
        return self.filename


def to_wheel(
    path: Path,
    meta: WheelMeta,
    size: int,
    sha256: str,
    *,
    built_locally: bool = False,
    checked: bool = False,
) -> Wheel:
    """A Wheel from the string metadata; raise WheelProblem on invalid fields.

    ``checked`` says the fields were already found valid (the scan cache records it), so
    they are left to be parsed lazily, only if used.
    """
    name, version, build, tags = parse_wheel_filename(path.name)
    wheel = Wheel(
        path=path,
        name=name,
        version=version,
        tags=tags,
        build=build,
        requires_dist_text=tuple(meta.requires_dist),
        requires_python_text=meta.requires_python or None,
        provides_extra=tuple(canonicalize_name(e) for e in meta.provides_extra),
        size=size,
        sha256=sha256,
        built_locally=built_locally,
    )
    if checked:
        return wheel
    # The text is checked here, once per wheel file (the scan cache remembers it); the
    # values are parsed again, lazily, where the resolver reads them.
    for text in meta.requires_dist:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise WheelProblem(f"invalid Requires-Dist {text!r}: {exc}") from exc
    if meta.requires_python:
        try:
            SpecifierSet(meta.requires_python)
        except InvalidSpecifier as exc:
            raise WheelProblem(f"invalid Requires-Python {meta.requires_python!r}") from exc
    return wheel

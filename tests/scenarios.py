"""Load the shared packse-format resolver scenarios and turn one into a wheelhouse + target."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from wh.model.choices import Prereleases
from wh.model.target import Target, declared
from wh.model.wheel import Wheel, WheelProblem

from tests.factory import as_scanned, make_wheel, wheel_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

REPO_ROOT = Path(__file__).resolve().parent.parent
DIVERGENCES = Path(__file__).resolve().parent / "scenario_divergences.toml"

DEFAULT_PYTHON = "3.12"
DEFAULT_REQUIRES_PYTHON = ">=3.12"
# What uv's packse tests run on, and what wh declares when no python_platform is given.
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"


def scenarios_root() -> Path | None:
    """``$WH_SCENARIOS``, else ``../shared/resolver-scenarios`` beside the repository root."""
    env = os.environ.get("WH_SCENARIOS")
    folder = Path(env) if env else REPO_ROOT.parent / "shared" / "resolver-scenarios"
    return folder if folder.is_dir() else None


@dataclass(frozen=True)
class Release:
    """One ``[packages.NAME.versions."VERSION"]`` table."""

    name: str
    version: str
    requires: tuple[str, ...] = ()
    extras: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    requires_python: str = DEFAULT_REQUIRES_PYTHON
    wheel_tags: tuple[str, ...] = ("py3-none-any",)
    wheel: bool = True
    sdist: bool = True
    yanked: bool = False


@dataclass(frozen=True)
class Scenario:
    """One scenario file: the package universe, the request, the options and the answer."""

    id: str  # path relative to the scenarios folder, e.g. "local/local-simple.toml"
    name: str
    description: str
    requires: tuple[str, ...]
    releases: tuple[Release, ...]
    satisfiable: bool
    expected: Mapping[str, str] | None  # None: the scenario names no packages
    python: str
    platform: str
    options: Mapping[str, Any]

    @property
    def prereleases(self) -> Prereleases:
        if self.options.get("prereleases"):
            return Prereleases.ALLOW
        return Prereleases.IF_NECESSARY_OR_EXPLICIT

    def skip_reason(self) -> str | None:
        """Why this scenario does not apply to a single-target wheel folder, or None."""
        if self.options.get("universal"):
            return "universal = true: a multi-environment lock, wh locks one target"
        if any(r.yanked for r in self.releases):
            return "yanked release: a wheel folder has no yank flag"
        sdist_only = sorted(f"{r.name} {r.version}" for r in self.releases if not r.wheel)
        if sdist_only:
            return f"sdist-only release ({', '.join(sdist_only)}): a wheelhouse holds wheels only"
        if self.options.get("no_binary"):
            return "no_binary: a wheelhouse holds wheels only"
        return None

    def roots(self) -> list[Requirement]:
        return [Requirement(r) for r in self.requires]

    def target(self) -> Target:
        return declared(self.platform, self.python)

    def build_wheelhouse(self, folder: Path) -> list[Path]:
        """One wheel per (package, version, tag) written with ``make_wheel``."""
        paths: list[Path] = []
        for rel in self.releases:
            if not rel.wheel:
                continue
            for tag in rel.wheel_tags:
                paths.append(
                    make_wheel(
                        folder,
                        rel.name,
                        rel.version,
                        rel.requires,
                        tag=tag,
                        requires_python=rel.requires_python or None,
                        extras=rel.extras,
                    )
                )
        return paths

    def wheels(self, folder: Path = Path("wheelhouse")) -> list[Wheel]:
        """The ``Wheel``s a scan of ``build_wheelhouse``'s folder reads, as values.

        No file is written. They are listed as a scan lists them (``as_scanned``), and a
        wheel whose metadata does not parse is left out (a scan reports it as a problem).
        """
        wheels: list[Wheel] = []
        for rel in self.releases:
            if not rel.wheel:
                continue
            for tag in rel.wheel_tags:
                try:
                    wheel = wheel_value(
                        folder,
                        rel.name,
                        rel.version,
                        rel.requires,
                        tag=tag,
                        requires_python=rel.requires_python or None,
                        extras=rel.extras,
                    )
                except WheelProblem:
                    continue
                wheels.append(wheel)
        return as_scanned(wheels)


def _platform(option: str | None) -> str:
    """uv's ``--python-platform`` value as a platform wh's ``declared`` understands."""
    return option or DEFAULT_PLATFORM


def load(path: Path, root: Path) -> Scenario:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    options: dict[str, Any] = dict(data.get("resolver_options", {}))
    env = data.get("environment", {})
    python = str(options.get("python") or env.get("python") or DEFAULT_PYTHON)
    releases: list[Release] = []
    for name, pkg in sorted(data.get("packages", {}).items()):
        for version, rel in pkg.get("versions", {}).items():
            releases.append(
                Release(
                    name=name,
                    version=version,
                    requires=tuple(rel.get("requires", ())),
                    extras={k: tuple(v) for k, v in rel.get("extras", {}).items()},
                    requires_python=rel.get("requires_python", DEFAULT_REQUIRES_PYTHON),
                    wheel_tags=tuple(rel.get("wheel_tags", ("py3-none-any",))),
                    wheel=rel.get("wheel", True),
                    sdist=rel.get("sdist", True),
                    yanked=rel.get("yanked", False),
                )
            )
    expected = data.get("expected", {})
    packages = expected.get("packages")
    return Scenario(
        id=path.relative_to(root).as_posix(),
        name=data.get("name", path.stem),
        description=data.get("description", ""),
        requires=tuple(data.get("root", {}).get("requires", ())),
        releases=tuple(releases),
        satisfiable=bool(expected.get("satisfiable")),
        expected=None if packages is None else {k: str(v) for k, v in packages.items()},
        python=python,
        platform=_platform(options.get("python_platform")),
        options=options,
    )


def load_all(root: Path) -> list[Scenario]:
    return [load(p, root) for p in sorted(root.rglob("*.toml"))]


def divergences(path: Path = DIVERGENCES) -> dict[str, str]:
    """Scenario id -> the documented wh policy that makes its answer differ."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {str(d["scenario"]): str(d["reason"]) for d in data.get("divergence", [])}


def normalized(versions: Mapping[str, str]) -> dict[NormalizedName, str]:
    return {canonicalize_name(k): v for k, v in versions.items()}


def describe(scenario: Scenario, extra: Sequence[str] = ()) -> str:
    lines = [f"{scenario.id}: {scenario.description}", *extra]
    return "\n".join(lines)

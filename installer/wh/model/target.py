"""The target a lock is for: tag priorities, marker environment, Python version."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from packaging import tags as ptags
from packaging.markers import Marker
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import Version

from wh.errors import DeclaredTargetError


@dataclass(frozen=True)
class Target:
    """Either a live interpreter (``python`` set) or a declared platform + Python version."""

    description: str
    python_full_version: str
    tags: tuple[Tag, ...]
    markers: Mapping[str, str] = field(hash=False)
    python: Path | None = None
    platform: str | None = None

    @cached_property
    def tag_rank(self) -> dict[Tag, int]:
        rank: dict[Tag, int] = {}
        for i, t in enumerate(self.tags):
            rank.setdefault(t, i)
        return rank

    @cached_property
    def python_version_obj(self) -> Version:
        return Version(self.python_full_version)

    @property
    def python_version(self) -> str:
        return ".".join(self.python_full_version.split(".")[:2])

    def wheel_rank(self, wheel_tags: frozenset[Tag]) -> int | None:
        """The best (lowest) priority of any of the wheel's tags, or None if none fits."""
        ranks = [self.tag_rank[t] for t in wheel_tags if t in self.tag_rank]
        return min(ranks) if ranks else None

    def allows_python(self, spec: SpecifierSet | None) -> bool:
        return spec is None or spec.contains(self.python_version_obj, prereleases=True)

    def evaluate(self, marker: Marker | None, extras: frozenset[str] = frozenset()) -> bool:
        """Whether ``marker`` holds on this target, with any of ``extras`` active."""
        if marker is None:
            return True
        env = dict(self.markers)
        if not extras:
            env["extra"] = ""
            return marker.evaluate(env)
        return any(marker.evaluate({**env, "extra": e}) for e in sorted(extras))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "description": self.description,
            "python-version": self.python_full_version,
            "markers": dict(sorted(self.markers.items())),
        }
        if self.platform:
            out["platform"] = self.platform
        if self.python:
            out["python"] = str(self.python)
        return out


_OS = {
    "windows": {"os_name": "nt", "sys_platform": "win32", "platform_system": "Windows"},
    "linux": {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux"},
    "macos": {"os_name": "posix", "sys_platform": "darwin", "platform_system": "Darwin"},
}

_WIN_MACHINE = {"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}

_ALIASES = {
    # uv-style names (the --python-platform values) -> one wheel platform tag
    "windows": "win_amd64",
    "x86_64-pc-windows-msvc": "win_amd64",
    "aarch64-pc-windows-msvc": "win_arm64",
    "i686-pc-windows-msvc": "win32",
    "linux": "manylinux_2_28_x86_64",
    "x86_64-unknown-linux-gnu": "manylinux_2_28_x86_64",
    "aarch64-unknown-linux-gnu": "manylinux_2_28_aarch64",
    "macos": "macosx_13_0_arm64",
    "aarch64-apple-darwin": "macosx_13_0_arm64",
    "x86_64-apple-darwin": "macosx_10_12_x86_64",
}

_LEGACY_MANYLINUX = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}


def _platform_tags(platform: str) -> tuple[str, list[str], dict[str, str]]:
    """(os, platform tags best first, extra markers) for a declared platform string."""
    p = _ALIASES.get(platform, platform)
    m = re.fullmatch(r"(x86_64|aarch64|i686)-manylinux(?:_?)(2014|2010|1|2_\d+)", p)
    if m:  # uv style x86_64-manylinux_2_17 / x86_64-manylinux2014
        legacy = {"2014": "2_17", "2010": "2_12", "1": "2_5"}
        p = f"manylinux_{legacy.get(m.group(2), m.group(2))}_{m.group(1)}"
    legacy_m = re.fullmatch(r"manylinux(2014|2010|1)_(\w+)", p)
    if legacy_m:
        glibc = {"2014": "2_17", "2010": "2_12", "1": "2_5"}[legacy_m.group(1)]
        p = f"manylinux_{glibc}_{legacy_m.group(2)}"
    if p in _WIN_MACHINE:
        return "windows", [p], {"platform_machine": _WIN_MACHINE[p]}
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", p)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        plats: list[str] = []
        for mi in range(minor, 4, -1):
            plats.append(f"manylinux_{major}_{mi}_{arch}")
            if (major, mi) in _LEGACY_MANYLINUX:
                plats.append(f"{_LEGACY_MANYLINUX[(major, mi)]}_{arch}")
        plats.append(f"linux_{arch}")
        return "linux", plats, {"platform_machine": arch}
    m = re.fullmatch(r"musllinux_(\d+)_(\d+)_(\w+)", p)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        plats = [f"musllinux_{major}_{mi}_{arch}" for mi in range(minor, -1, -1)]
        plats.append(f"linux_{arch}")
        return "linux", plats, {"platform_machine": arch}
    m = re.fullmatch(r"linux_(\w+)", p)
    if m:
        return "linux", [p], {"platform_machine": m.group(1)}
    m = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", p)
    if m:
        version = (int(m.group(1)), int(m.group(2)))
        arch = m.group(3)
        plats = list(ptags.mac_platforms(version, arch))
        machine = "arm64" if arch in ("arm64", "universal2") else arch
        return "macos", plats, {"platform_machine": machine}
    raise DeclaredTargetError("--platform", platform, sorted(_ALIASES))


def declared(platform: str, python_version: str) -> Target:
    """A target described by a platform and a CPython version: no interpreter needed."""
    if not re.fullmatch(r"3\.\d+(\.\d+)?", python_version):
        raise DeclaredTargetError("--python-version", python_version)
    parts = [int(x) for x in python_version.split(".")]
    full = ".".join(str(x) for x in ([*parts, 0] if len(parts) == 2 else parts))
    os_name, plats, extra = _platform_tags(platform)
    pyver = (parts[0], parts[1])
    interp = f"cp{pyver[0]}{pyver[1]}"
    tags = [
        *ptags.cpython_tags(pyver, abis=[interp], platforms=plats),
        *ptags.compatible_tags(pyver, interp, plats),
    ]
    markers = {
        **_OS[os_name],
        **extra,
        "python_version": f"{pyver[0]}.{pyver[1]}",
        "python_full_version": full,
        "implementation_name": "cpython",
        "implementation_version": full,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_version": "",
    }
    return Target(
        description=f"{platform} / CPython {python_version}",
        python_full_version=full,
        tags=tuple(tags),
        markers=markers,
        platform=platform,
    )

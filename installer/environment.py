"""What a live interpreter is: its target (tags, markers) and the distributions installed in it."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import packaging
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from installer import proc
from installer.errors import ProcessError, TargetError
from installer.target import Target

# Runs inside the target interpreter. It borrows wh's own `packaging` for tags and markers
# (the target may not have it) and drops that path again before listing distributions.
_PROBE = r"""
import hashlib, json, os, sys, sysconfig
sys.path.insert(0, sys.argv[1])
from packaging import tags, markers
sys.path.pop(0)
import importlib.metadata as md
dists = []
seen = set()
for d in md.distributions():
    name = d.metadata["Name"]
    if not name:
        continue
    key = name.lower().replace("_", "-").replace(".", "-")
    if key in seen:
        continue
    seen.add(key)
    path = getattr(d, "_path", None)
    record = d.read_text("RECORD")
    dists.append({
        "name": name,
        "version": d.version,
        "requires": d.requires or [],
        "dist_info": str(path) if path else None,
        "record_sha256": hashlib.sha256(record.encode()).hexdigest() if record else None,
        "installer": (d.read_text("INSTALLER") or "").strip(),
    })
paths = sysconfig.get_paths()
print(json.dumps({
    "executable": sys.executable,
    "version": ".".join(map(str, sys.version_info[:3])),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "purelib": paths["purelib"],
    "platlib": paths["platlib"],
    "scripts": paths["scripts"],
    "tags": [str(t) for t in tags.sys_tags()],
    "markers": markers.default_environment(),
    "dists": dists,
}))
"""


@dataclass(frozen=True)
class InstalledDist:
    """A distribution installed in a target environment."""

    name: NormalizedName
    display_name: str
    version: Version
    requires: tuple[Requirement, ...]
    dist_info: Path | None
    record_sha256: str | None
    installer: str


@dataclass(frozen=True)
class Environment:
    """A live environment: its interpreter, target and installed distributions."""

    python: Path
    prefix: Path
    purelib: Path
    platlib: Path
    scripts: Path
    target: Target
    dists: dict[NormalizedName, InstalledDist]


def default_python() -> Path:
    """The active environment's interpreter: $VIRTUAL_ENV if set, else this interpreter."""
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        return venv_python(Path(venv))
    return Path(sys.executable)


def venv_python(venv: Path) -> Path:
    """The interpreter of a venv folder, on Windows or POSIX layouts."""
    for candidate in (venv / "Scripts" / "python.exe", venv / "bin" / "python"):
        if candidate.exists():
            return candidate
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def probe(python: Path) -> Environment:
    """Ask ``python`` (a file, or a venv folder) for its tags, markers and installed dists."""
    if python.is_dir():
        python = venv_python(python)
    if not python.exists():
        raise TargetError(
            f"target interpreter {python} does not exist",
            hint="pass --python with the path of an existing interpreter or venv",
        )
    borrowed = str(Path(packaging.__file__).resolve().parent.parent)
    try:
        done = proc.run(
            [python, "-I", "-c", _PROBE, borrowed],
            what=f"probing {python}",
            shown=f"{python} -I -c <wh environment probe>",
        )
    except ProcessError as exc:
        raise TargetError(
            f"target interpreter {python} could not be probed",
            details=exc.details,
            hint="check that it is a working CPython >= 3.8",
        ) from exc
    data = json.loads(done.stdout)
    target = Target(
        description=f"{data['executable']} (CPython {data['version']})",
        python_full_version=data["version"],
        tags=tuple(Tag(*t.split("-")) for t in data["tags"]),
        markers=data["markers"],
        python=Path(data["executable"]),
    )
    dists: dict[NormalizedName, InstalledDist] = {}
    for d in data["dists"]:
        try:
            version = Version(d["version"])
        except InvalidVersion:
            continue
        reqs = []
        for r in d["requires"]:
            try:
                reqs.append(Requirement(r))
            except InvalidRequirement:
                continue
        name = canonicalize_name(d["name"])
        dists[name] = InstalledDist(
            name=name,
            display_name=d["name"],
            version=version,
            requires=tuple(reqs),
            dist_info=Path(d["dist_info"]) if d["dist_info"] else None,
            record_sha256=d["record_sha256"],
            installer=d["installer"],
        )
    return Environment(
        python=python,
        prefix=Path(data["prefix"]),
        purelib=Path(data["purelib"]),
        platlib=Path(data["platlib"]),
        scripts=Path(data["scripts"]),
        target=target,
        dists=dists,
    )

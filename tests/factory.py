"""The test wheel factory: compliant wheels by default, hostile ones on request."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from wh.model.wheel import Wheel, WheelMeta, to_wheel
from wh.wheel.writer import wheel_filename, write_wheel


def requires_dist(
    requires: Iterable[str], extras: Mapping[str, Iterable[str]] | None = None
) -> list[str]:
    """The Requires-Dist lines: ``requires``, then each extra's joined with ``extra == "x"``."""
    reqs = list(requires)
    for extra, extra_reqs in (extras or {}).items():
        for r in extra_reqs:
            if ";" in r:
                base, marker = r.split(";", 1)
                reqs.append(f'{base.strip()}; ({marker.strip()}) and extra == "{extra}"')
            else:
                reqs.append(f'{r}; extra == "{extra}"')
    return reqs


def wheel_value(
    wheelhouse: Path,
    name: str,
    version: str,
    requires: Iterable[str] = (),
    *,
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    extras: Mapping[str, Iterable[str]] | None = None,
    build: str | None = None,
) -> Wheel:
    """The ``Wheel`` that ``scan`` reads from what ``make_wheel`` writes, with no file written.

    The path names a file that does not exist; size and sha256 are unknown (0 and "", as a
    scan without hashes leaves the digest). Raises ``WheelProblem`` where a scan would
    exclude the wheel (a requirement that does not parse).
    """
    filename = wheel_filename(name, version, tag, build)
    meta = WheelMeta(
        filename=filename,
        name=name,
        version=version,
        requires_dist=tuple(requires_dist(requires, extras)),
        requires_python=requires_python,
        provides_extra=tuple(extras or {}),
    )
    return to_wheel(wheelhouse / filename, meta, 0, "")


def as_scanned(wheels: Iterable[Wheel]) -> list[Wheel]:
    """``wheels`` as a scan of one folder lists them: a later wheel of the same filename
    replaces an earlier one (it would overwrite the file), in filename order."""
    by_file = {w.filename: w for w in wheels}
    return [by_file[f] for f in sorted(by_file)]


def make_wheel(
    wheelhouse: Path,
    name: str,
    version: str,
    requires: Iterable[str] = (),
    *,
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    extras: Mapping[str, Iterable[str]] | None = None,
    files: Mapping[str, bytes] | None = None,
    build: str | None = None,
) -> Path:
    """Write ``name-version`` into ``wheelhouse``; by default it carries an importable module.

    ``extras`` maps an extra name to its requirements (written as ``; extra == "x"``).
    """
    module = name.replace("-", "_").replace(".", "_").lower()
    body = (
        files
        if files is not None
        else {f"{module}/__init__.py": f'__version__ = "{version}"\n'.encode()}
    )
    reqs = requires_dist(requires, extras)
    return write_wheel(
        wheelhouse,
        name,
        version,
        body,
        requires_dist=reqs,
        requires_python=requires_python,
        provides_extra=list(extras or {}),
        tag=tag,
        build=build,
    )

"""The test wheel factory: compliant wheels by default, hostile ones on request."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from packaging.utils import canonicalize_name
from wh.install.layout import Target, WheelLayout
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


def chained_wheels(
    house: Path,
    prefix: str,
    count: int,
    version: str,
    own_files: Callable[[str, int], Mapping[str, bytes]],
) -> None:
    """``prefix``1..``prefix``N at ``version``, each requiring the one before it (one
    install batch each), each with a data file and a console script; ``own_files(name, k)``
    gives a package's other files."""
    for k in range(1, count + 1):
        name = f"{prefix}{k}"
        files = {f"{name}/__init__.py": f"V = {version!r}\n".encode()}
        files.update(own_files(name, k))
        files[f"{name}-{version}.data/data/share/{name}/notes.txt"] = version.encode()
        extra = {"entry_points.txt": f"[console_scripts]\n{name}-cli = {name}:V\n".encode()}
        write_wheel(
            house,
            name,
            version,
            files,
            requires_dist=[f"{prefix}{k - 1}=={version}"] if k > 1 else [],
            extra_dist_info=extra,
        )


def layout_of(name: str, *files: tuple[str, str], scripts: tuple[str, ...] = ()) -> WheelLayout:
    """A wheel's layout as values: ``files`` (path under site-packages, RECORD hash) and
    the console ``scripts`` it generates, in a venv at /env (no wheel file is written)."""
    base = Path("/env/lib/site-packages")
    return WheelLayout(
        canonicalize_name(name),
        Path(f"/wh/{name}-1.0-py3-none-any.whl"),
        tuple(Target(base, rel, digest) for rel, digest in files),
        tuple(Path("/env/bin") / s for s in scripts),
    )


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

"""A wheelhouse as a static package index: PEP 503 HTML, PEP 691 JSON, PEP 658/714 metadata."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from urllib.parse import quote

from packaging.utils import NormalizedName

from wh.errors import WheelMetadataError
from wh.model.wheel import Wheel, WheelProblem
from wh.wheel.wheelfile import dist_info_folder, read_bounded
from wh.wheelhouse.scan import Problem, scan

SIMPLE = "simple"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_API = {"api-version": "1.1"}


@dataclass(frozen=True)
class IndexFile:
    """One distribution file as an index lists it."""

    filename: str
    url: str  # relative to the project page
    sha256: str
    size: int
    version: str
    requires_python: str | None
    metadata_sha256: str


@dataclass
class IndexResult:
    """What a regeneration wrote and removed."""

    root: Path
    projects: dict[NormalizedName, list[IndexFile]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    problems: tuple[Problem, ...] = ()


# -- pure rendering ---------------------------------------------------------------------------


def root_html(names: Sequence[str]) -> str:
    links = "".join(f'    <a href="{quote(n)}/">{escape(n)}</a>\n' for n in sorted(names))
    return (
        '<!DOCTYPE html>\n<html>\n  <head>\n    <meta name="pypi:repository-version" '
        'content="1.1">\n    <title>Simple index</title>\n  </head>\n  <body>\n'
        f"{links}  </body>\n</html>\n"
    )


def root_json(names: Sequence[str]) -> str:
    doc = {"meta": _API, "projects": [{"name": n} for n in sorted(names)]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def project_html(name: str, files: Sequence[IndexFile]) -> str:
    rows = []
    for f in sorted(files, key=lambda f: f.filename):
        meta = f"sha256={f.metadata_sha256}"
        attrs = [f'href="{escape(f.url)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{escape(f.requires_python)}"')
        attrs.append(f'data-dist-info-metadata="{meta}"')
        attrs.append(f'data-core-metadata="{meta}"')
        rows.append(f"    <a {' '.join(attrs)}>{escape(f.filename)}</a><br>\n")
    return (
        '<!DOCTYPE html>\n<html>\n  <head>\n    <meta name="pypi:repository-version" '
        f'content="1.1">\n    <title>Links for {escape(name)}</title>\n  </head>\n  <body>\n'
        f"    <h1>Links for {escape(name)}</h1>\n{''.join(rows)}  </body>\n</html>\n"
    )


def project_json(name: str, files: Sequence[IndexFile]) -> str:
    entries = []
    for f in sorted(files, key=lambda f: f.filename):
        entry: dict[str, object] = {
            "filename": f.filename,
            "url": f.url,
            "hashes": {"sha256": f.sha256},
            "size": f.size,
            "core-metadata": {"sha256": f.metadata_sha256},
            "dist-info-metadata": {"sha256": f.metadata_sha256},
        }
        if f.requires_python:
            entry["requires-python"] = f.requires_python
        entries.append(entry)
    versions = sorted({f.version for f in files})
    doc = {"meta": _API, "name": name, "versions": versions, "files": entries}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def pages(projects: Mapping[NormalizedName, Sequence[IndexFile]]) -> dict[str, str]:
    """Every page of the index, by path relative to the ``simple`` folder."""
    out = {"index.html": root_html(list(projects)), "index.json": root_json(list(projects))}
    for name, files in projects.items():
        out[f"{name}/index.html"] = project_html(name, files)
        out[f"{name}/index.json"] = project_json(name, files)
    return out


# -- IO -----------------------------------------------------------------------------------------


def core_metadata(wheel: Path) -> bytes:
    """The wheel's ``*.dist-info/METADATA`` bytes, exactly as stored."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        try:
            member = f"{dist_info_folder(names)}/METADATA"
        except WheelProblem:
            member = ""
        if member not in names:
            raise WheelMetadataError(wheel.name)
        try:
            return read_bounded(zf, member)
        except WheelProblem as exc:
            raise WheelMetadataError(wheel.name, str(exc)) from exc


def _write_if_changed(path: Path, data: bytes, written: list[Path]) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    written.append(path)


def build_index(wheelhouse: Path) -> IndexResult:
    """Write ``wheelhouse/simple/`` and ``<wheel>.metadata`` files; remove stale ones.

    Serve ``wheelhouse`` as a web root and point pip or uv at ``/simple/``. Deterministic:
    the same wheels give the same bytes, and unchanged files are not rewritten.
    """
    house = scan(wheelhouse)
    result = IndexResult(root=wheelhouse / SIMPLE, problems=house.problems)
    grouped: dict[NormalizedName, list[Wheel]] = defaultdict(list)
    for w in house.wheels:
        grouped[w.name].append(w)
    keep_meta: set[Path] = set()
    for name in sorted(grouped):
        files = []
        for w in sorted(grouped[name], key=lambda w: w.filename):
            meta = core_metadata(w.path)
            meta_path = w.path.with_name(w.filename + ".metadata")
            keep_meta.add(meta_path)
            _write_if_changed(meta_path, meta, result.written)
            files.append(
                IndexFile(
                    filename=w.filename,
                    url=f"../../{quote(w.filename)}",
                    sha256=w.sha256,
                    size=w.size,
                    version=str(w.version),
                    requires_python=str(w.requires_python) if w.requires_python else None,
                    metadata_sha256=hashlib.sha256(meta).hexdigest(),
                )
            )
        result.projects[name] = files
    for rel, text in sorted(pages(result.projects).items()):
        _write_if_changed(result.root / rel, text.encode(), result.written)
    for stale in sorted(wheelhouse.glob("*.whl.metadata")):
        if stale not in keep_meta:
            stale.unlink()
            result.removed.append(stale)
    for entry in sorted(result.root.iterdir()):
        if entry.is_dir() and entry.name not in result.projects:
            shutil.rmtree(entry)
            result.removed.append(entry)
        elif entry.is_file() and entry.name not in ("index.html", "index.json"):
            entry.unlink()
            result.removed.append(entry)
    return result

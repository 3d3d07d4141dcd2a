"""What a live interpreter is: its target (tags, markers) and the distributions installed in it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import packaging
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wh.cache.stamps import cache_file, read_json, stat_key, write_json
from wh.errors import InterpreterError, NoTargetError, ProcessError
from wh.model.installed import InstalledDist
from wh.model.target import Target
from wh.proc import spawn as proc

# Runs inside the target interpreter. It borrows wh's own `packaging` for tags and markers
# (the target may not have it) and drops that path again before listing distributions.
_PROBE = r"""
import hashlib, json, os, sys, sysconfig
if sys.version_info < (3, 10):  # the borrowed packaging needs 3.10: say so, do not crash
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.write(json.dumps({"too_old": "%d.%d.%d" % sys.version_info[:3]}))
    sys.exit(0)
sys.path.insert(0, sys.argv[1])
from packaging import tags, markers
sys.path.pop(0)
import importlib.metadata as md
from email.parser import HeaderParser
def read(d, name):
    # a file of the distribution's metadata; one that is not UTF-8 (an old egg-info written
    # in Latin-1) is read with U+FFFD for what does not decode, as pip reads it
    try:
        return d.read_text(name)
    except UnicodeDecodeError:
        path = getattr(d, "_path", None)
        return path.joinpath(name).read_bytes().decode("utf-8", "replace") if path else None
def headers(d):
    # the metadata's headers only: d.metadata parses the long description too, and
    # d.version and d.requires parse the whole file again
    text = read(d, "METADATA") or read(d, "PKG-INFO") or read(d, "") or ""
    cuts = [i for i in (text.find(s) for s in ("\n\n", "\n\r", "\r\r")) if i >= 0]
    return HeaderParser().parsestr(text[: min(cuts) + 1] if cuts else text)
dists = []
shadowed = []  # a second copy of a name, which Python does not see (a stale dist-info)
nameless = []  # metadata folders whose metadata names no distribution
seen = set()
for d in md.distributions():
    meta = headers(d)
    name = meta["Name"]
    if not name:
        path = getattr(d, "_path", None)
        nameless.append(str(path) if path else None)
        continue
    key = name.lower().replace("_", "-").replace(".", "-")
    path = getattr(d, "_path", None)
    if key in seen:
        where = str(path) if path else None
        shadowed.append({"name": name, "version": meta["Version"] or "", "dist_info": where})
        continue
    seen.add(key)
    record = read(d, "RECORD")
    requires = meta.get_all("Requires-Dist")
    if requires is None and not str(path).endswith(".dist-info"):
        try:  # an egg-info's requires.txt (a dist-info's are its headers)
            requires = d.requires
        except UnicodeDecodeError:  # its PKG-INFO is not UTF-8: requires.txt alone
            reqs = getattr(d, "_read_egg_info_reqs", None)
            requires = list(reqs() or ()) if reqs is not None else []
    dists.append({
        "name": name,
        "version": meta["Version"],
        "requires": requires or [],
        "dist_info": str(path) if path else None,
        "record_sha256": hashlib.sha256(record.encode()).hexdigest() if record else None,
        "installer": (read(d, "INSTALLER") or "").strip(),
    })
paths = sysconfig.get_paths()
answer = json.dumps({
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
    "shadowed": shadowed,
    "nameless": nameless,
    "sys_path": [p for p in sys.path if p],
})
# The answer goes to the file wh named, never to stdout: a .pth file may print at start-up
# (legal), and that output would share the stream with the answer.
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write(answer)
"""
_PROBE_ID = hashlib.sha256(_PROBE.encode()).hexdigest()[:16]  # a new probe forgets old answers


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
    # what the interpreter printed to stdout while starting (a .pth file that prints): the
    # probe itself prints nothing, and a backend that reads the interpreter's stdout (uv)
    # cannot work with it
    startup_output: str = ""
    # a second installed copy of a name (display name, version, its metadata folder), after
    # the one Python finds first, which ``dists`` holds: a stale dist-info an interrupted
    # upgrade left behind
    shadowed: tuple[tuple[str, str, Path | None], ...] = ()
    # a distribution whose version is not PEP 440 ("UNKNOWN" from an old setuptools), as
    # (display name, its version text, its metadata folder): not in ``dists``, whose
    # versions are ``Version``s; an install refuses to work around it (``refuse_unversioned``)
    unversioned: tuple[tuple[str, str, Path | None], ...] = ()
    # what wh could not read of the installed metadata, each said by ``wh verify``: a
    # metadata folder that names no distribution (its files are then owned by nothing), and
    # a requirement that is not PEP 508, as (distribution, the requirement's text, why)
    nameless: tuple[Path | None, ...] = ()
    unparsed: tuple[tuple[str, str, str], ...] = ()


def second_copies(env: Environment) -> dict[NormalizedName, list[str]]:
    """Each name installed more than once, with its copies after the one Python finds
    (``Environment.shadowed``), each as "VERSION at PATH"."""
    out: dict[NormalizedName, list[str]] = {}
    for name, version, where in env.shadowed:
        out.setdefault(canonicalize_name(name), []).append(f"{version or 'no version'} at {where}")
    return out


def unparsed_requirements(env: Environment) -> list[tuple[NormalizedName, str]]:
    """Each ``Environment.unparsed`` requirement, with its distribution's name, as "NAME
    requires 'TEXT', which is not a PEP 508 requirement (WHY)"."""
    return [
        (
            canonicalize_name(name),
            f"{name} requires {text!r}, which is not a PEP 508 requirement ({why})",
        )
        for name, text, why in env.unparsed
    ]


def default_python() -> Path:
    """The active environment's interpreter ($VIRTUAL_ENV). Without one there is no target:
    wh never picks the environment it runs from (installing there replaces wh's own
    dependencies)."""
    venv = os.environ.get("VIRTUAL_ENV")
    own = Path(sys.prefix)
    if venv and not _same(Path(venv), own):
        return venv_python(Path(venv))
    raise NoTargetError(venv, own)


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def venv_python(venv: Path) -> Path:
    """The interpreter of a venv folder, on Windows or POSIX layouts."""
    for candidate in (venv / "Scripts" / "python.exe", venv / "bin" / "python"):
        if candidate.exists():
            return candidate
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def venv_prefix(python: Path) -> Path | None:
    """The venv ``python`` belongs to, from where its ``pyvenv.cfg`` is (beside the
    executable or one folder up, where Python itself looks), without running it; None for
    an interpreter outside a venv. The path is not resolved: Python does not resolve a
    venv's (often symlinked) executable either."""
    if python.is_dir():
        python = venv_python(python)
    exe = python.absolute()
    for folder in (exe.parent, exe.parent.parent):
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def probe(python: Path, *, cached: bool = False) -> Environment:
    """Ask ``python`` (a file, or a venv folder) for its tags, markers and installed dists.

    ``cached=True`` may answer from the last probe of the same interpreter when nothing it
    reported from can have changed (see ``_stamp``); wh uses that for locking, never for
    the probe an install takes under the environment lock.
    """
    if python.is_dir():
        python = venv_python(python)
    if not python.exists():
        raise InterpreterError(python, "missing")
    data = _recall(python) if cached else None
    if data is not None:
        try:
            env = _environment(python, data)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            data = None  # a cached answer of another shape: probe again
        else:  # -v shows it: nothing was run
            logging.getLogger("wh.probe").info("probe of %s answered from the probe cache", python)
            return env
    data = _run_probe(python)
    _remember(python, data)
    return _environment(python, data)


def _run_probe(python: Path) -> dict[str, Any]:
    """Run the probe in ``python``; its answer comes back in a file of its own, so what the
    interpreter's start-up prints (a ``.pth`` line that runs ``print``) cannot corrupt it."""
    borrowed = str(Path(packaging.__file__).resolve().parent.parent)
    fd, answer_name = tempfile.mkstemp(prefix="wh-probe-", suffix=".json")
    os.close(fd)
    answer = Path(answer_name)
    try:
        try:
            done = proc.run(
                [python, "-I", "-c", _PROBE, borrowed, answer],
                what=f"probing {python}",
                shown=f"{python} -I -c <wh environment probe>",
            )
        except ProcessError as exc:
            raise InterpreterError(python, "unprobed", output=[exc.message, *exc.details]) from exc
        text = answer.read_text(encoding="utf-8")
    finally:
        answer.unlink(missing_ok=True)
    try:
        data: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise InterpreterError(
            python,
            "not-json",
            problem=str(exc),
            output=[line for line in (done.stdout + done.stderr).splitlines()[-20:] if line],
        ) from exc
    if isinstance(data, dict) and "too_old" in data:
        raise InterpreterError(
            python, "too-old", version=str(data["too_old"]), packaging=packaging.__version__
        )
    if not isinstance(data, dict) or "markers" not in data:
        raise InterpreterError(python, "no-markers")
    data["startup_output"] = done.stdout[-2000:]
    return data


# What the probe reads: the interpreter (and its venv's pyvenv.cfg), every sys.path entry,
# and in each the distributions' metadata files and the .pth files that extend sys.path.
_DIST_SUFFIXES = (".dist-info", ".egg-info", ".pth", ".egg-link")
_DIST_FILES = ("METADATA", "PKG-INFO", "RECORD", "INSTALLER", "requires.txt")


def _stat_or_none(path: Path | str) -> list[int] | None:
    try:
        return stat_key(os.stat(path), path)
    except OSError:
        return None


def _host() -> list[Any]:
    """Host facts behind tags and markers (glibc version, kernel) that live outside the env."""
    out: list[Any] = [sys.platform]
    confstr = getattr(os, "confstr", None)
    if confstr is not None:
        try:
            out.append(confstr("CS_GNU_LIBC_VERSION"))
        except (OSError, ValueError):
            out.append(None)
    if sys.platform == "win32":
        out.append(list(sys.getwindowsversion()))
    else:
        out.append(list(os.uname()))
    return out


def _stamp(python: Path, sys_path: list[str]) -> list[Any]:
    """Every file state the probe's answer depends on, by ``stat_key``.

    Installing, removing or rewriting a distribution changes its folder's listing (so the
    folder's mtime/ctime) or the stat of its METADATA, RECORD or INSTALLER.
    """
    venv_cfg = python.parent.parent / "pyvenv.cfg"
    out: list[Any] = [
        str(python.absolute()),
        _stat_or_none(python),
        [python.is_symlink(), str(python.resolve())],
        _stat_or_none(venv_cfg),
        _host(),
    ]
    for entry in sys_path:
        st = _stat_or_none(entry)
        row: list[Any] = [entry, st]
        if st is not None and os.path.isdir(entry):
            try:
                with os.scandir(entry) as it:
                    names = sorted(de.name for de in it if de.name.endswith(_DIST_SUFFIXES))
            except OSError:
                names = []
            for name in names:
                full = os.path.join(entry, name)
                row.append([name, _stat_or_none(full)])
                if os.path.isdir(full):
                    row.append([_stat_or_none(os.path.join(full, f)) for f in _DIST_FILES])
        out.append(row)
    return out


def _probe_cache(python: Path) -> Path:
    return cache_file("probe", python.absolute())


def _recall(python: Path) -> dict[str, Any] | None:
    memo = read_json(_probe_cache(python))
    try:
        data = memo["data"]
        if memo.get("wh") != _PROBE_ID or memo.get("stamp") != _stamp(python, data["sys_path"]):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return data if isinstance(data, dict) else None


def _remember(python: Path, data: dict[str, Any]) -> None:
    if "sys_path" not in data:
        return
    stamp = _stamp(python, data["sys_path"])
    write_json(_probe_cache(python), {"wh": _PROBE_ID, "stamp": stamp, "data": data})


def _environment(python: Path, data: dict[str, Any]) -> Environment:
    target = Target(
        description=f"{data['executable']} (CPython {data['version']})",
        python_full_version=data["version"],
        tags=tuple(Tag(*t.split("-")) for t in data["tags"]),
        markers=data["markers"],
        python=Path(data["executable"]),
    )
    dists: dict[NormalizedName, InstalledDist] = {}
    unversioned: list[tuple[str, str, Path | None]] = []
    unparsed: list[tuple[str, str, str]] = []
    for d in data["dists"]:
        try:
            version = Version(d["version"])
        except InvalidVersion:
            where = Path(d["dist_info"]) if d["dist_info"] else None
            unversioned.append((str(d["name"]), str(d["version"]), where))
            continue
        reqs = []
        for r in d["requires"]:
            try:
                reqs.append(Requirement(r))
            except InvalidRequirement as exc:
                unparsed.append((str(d["name"]), str(r), str(exc).splitlines()[0]))
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
        startup_output=str(data.get("startup_output", "")),
        shadowed=tuple(
            (str(d["name"]), str(d["version"]), Path(d["dist_info"]) if d["dist_info"] else None)
            for d in data.get("shadowed", ())
        ),
        unversioned=tuple(unversioned),
        nameless=tuple(Path(p) if p else None for p in data.get("nameless", ())),
        unparsed=tuple(unparsed),
    )

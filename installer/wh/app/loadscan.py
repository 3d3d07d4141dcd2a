"""The load check's IO: read the natives of the locked wheels (cached by wheel digest, on
the cores in parallel), list what the kept installed distributions ship (their RECORD),
ask a live target's loader, run ``loadcheck.check``, and for ``wh verify`` do the same
over the installed files."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib.util
import json
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from packaging.utils import NormalizedName

import wh
from wh import progress
from wh.app.loadcheck import BuiltAgainst, LibraryNeed, LoadProblem, LoadReport, Unit, check
from wh.app.prefetch import RECORDS, Prefetch
from wh.app.verify import Finding, FindingKind
from wh.cache.stamps import read_json, write_json, write_texts
from wh.env.platformlibs import Platform, for_target, live
from wh.errors import LockError
from wh.model.loadkinds import Origin
from wh.model.loadoptions import LoadOptions
from wh.model.toolwh import AllowedMissing, BuildRecord, LoadCheck
from wh.settings import cache_dir
from wh.wheel import natives as nat
from wh.wheel import record
from wh.wheel.nativesread import Reading, natives_digest

if TYPE_CHECKING:
    from wh.env.environment import Environment
    from wh.model.installed import InstalledDist
    from wh.model.lockfile import Lock
    from wh.model.resolution import Resolution
    from wh.model.target import Target
    from wh.model.wheel import Wheel

_FORMAT = 1


class LoadCheckError(LockError):
    """The lock cannot load: a needed library, symbol version or torch build is missing."""

    kind = "load"

    def __init__(self, problems: Sequence[LoadProblem], platform: str) -> None:
        packages = sorted({p.package for p in problems})
        details = [line for p in problems for line in p.render()]
        super().__init__(
            f"the lock cannot load on {platform}: {len(problems)} problem(s) in "
            f"{', '.join(packages)}; nothing was written",
            details=details,
            hint="apply a fix above and re-lock; --allow-missing-library 'NAME=WHY' accepts one "
            "library the target provides another way, --skip-load-check 'WHY' skips the check "
            "(both are recorded in the lock)",
        )
        self.problems = tuple(problems)
        self.platform = platform
        self.packages = tuple(packages)

    def fields(self) -> dict[str, object]:
        return {"platform": self.platform, "packages": list(self.packages)}

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "problems": [p.to_json() for p in self.problems]}


class FetchLoadCheckError(LockError):
    """The wheelhouse `wh fetch` left resolves, but `wh lock` of it would refuse: the load
    check fails for some targets (``refused``: each one's error). Its wheels stay in the
    wheelhouse, where a fix (a wheel added, an allowance) needs no download again."""

    kind = "load"

    def __init__(self, refused: Mapping[str, LoadCheckError]) -> None:
        self.refused = dict(refused)
        self.problems = tuple(p for e in self.refused.values() for p in e.problems)
        self.packages = tuple(sorted({p.package for p in self.problems}))
        details = []
        for target, e in self.refused.items():
            details.append(f"for {target} ({e.platform}):")
            details += [f"  {line}" for p in e.problems for line in p.render()]
        super().__init__(
            f"the wheelhouse does not lock: {len(self.problems)} load-check problem(s) in "
            f"{', '.join(self.packages)} for {', '.join(self.refused)}; the wheels were "
            "downloaded and kept",
            details=details,
            hint="apply a fix above and run `wh fetch` again (wheels already in the "
            "wheelhouse are checked, not downloaded twice); --allow-missing-library "
            "'NAME=WHY' accepts one library the target provides another way, "
            "--skip-load-check 'WHY' skips the check: on `wh fetch` as on `wh lock`, which "
            "needs them too",
        )

    def fields(self) -> dict[str, object]:
        return {"targets": list(self.refused), "packages": list(self.packages)}

    def to_json(self) -> dict[str, object]:
        """As `wh lock`'s (``problems`` a list of problems), each with its target."""
        problems = [
            {**p.to_json(), "target": t} for t, e in self.refused.items() for p in e.problems
        ]
        return {**super().to_json(), "problems": problems}


def _natives_dir() -> Path:
    return cache_dir() / "natives"


def _cache_path(sha256: str) -> Path:
    return _natives_dir() / _cache_name(sha256)


def _cache_name(sha256: str) -> str:
    return f"{sha256}.json"


def _stamp() -> dict[str, Any]:
    """What a cached or recorded wheel's natives must have been read by to be used."""
    return {"format": _FORMAT, "limits": nat.LIMITS, "reader": nat.reader_digest()}


def _cached(sha256: str) -> nat.Natives | None:
    if not sha256:
        return None
    data = read_json(_cache_path(sha256))
    try:
        if isinstance(data, dict) and data.get("stamp") == _stamp():
            return nat.Natives.from_json(data["natives"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        pass  # not what this reader writes: read the wheel again
    return None


# -- the wheelhouse's records, written by `wh fetch` -----------------------------------------
#
# ``wh fetch`` leaves, beside the wheels it checked, what each one's compiled members need:
# RECORDS/<sha256>.json. A lock of that wheelhouse reads a record instead of inflating the
# wheel's libraries, only when the record names the digest the lock itself computed for the
# wheel and was written by the same reader (format, limits, and the digest of its code:
# ``natives.reader_digest``), and only when its natives match the sha256 it holds of them
# (``natives-sha256``: a record is plain JSON, for the helper and for people, so it is not
# sealed like the caches); any other record (another digest, another reader, damaged,
# unreadable) is ignored and the wheel read. A wheelhouse no fetch made has no records: its
# wheels are read.

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _record_path(wheel: Path, sha256: str) -> Path:
    return wheel.parent / RECORDS / f"{sha256}.json"


def _recorded(wheel: Path, sha256: str) -> nat.Natives | None:
    if not _SHA256.fullmatch(sha256):
        return None
    try:
        data = json.loads(_record_path(wheel, sha256).read_text(encoding="utf-8"))
        if (
            isinstance(data, dict)
            and data.get("stamp") == _stamp()
            and data.get("sha256") == sha256
            and data.get("natives-sha256") == natives_digest(data.get("natives"))
        ):
            return nat.Natives.from_json(data["natives"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        pass  # a record that cannot be used: the wheel is read
    return None


def copy_records(digests: Mapping[Path, str], dest: Path) -> int:
    """Copy the records of the wheels ``{path: sha256}`` that have a valid one into the
    wheelhouse ``dest`` (a bundle's wheels travel with them); the number copied."""
    copied = 0
    for path, sha256 in digests.items():
        if _recorded(path, sha256) is None:
            continue
        target = dest / RECORDS / f"{sha256}.json"
        target.parent.mkdir(exist_ok=True)
        shutil.copy2(_record_path(path, sha256), target)
        copied += 1
    return copied


def record_wheelhouse(digests: Mapping[Path, str]) -> int:
    """Write the record of every wheel (``{path: sha256}``, digests checked by the caller)
    that has none yet; the number written."""
    todo = [(p, d) for p, d in digests.items() if _SHA256.fullmatch(d) and not _recorded(p, d)]
    if not todo:
        return 0
    progress.status(
        f"recording what the compiled members of {len(todo)} wheel(s) need ({RECORDS}/)"
    )
    read = read_many(todo)
    for path, sha256 in todo:
        data = {
            "stamp": _stamp(),
            "sha256": sha256,
            # which wheel, for the lock's helper to pass over before anything is hashed
            # (``nativesread.recorded``); only the sha256 makes the record the wheel's
            "wheel": path.name,
            "size": path.stat().st_size,
            "natives": read[path].to_json(),
        }
        data["natives-sha256"] = natives_digest(data["natives"])  # plain JSON, not sealed:
        write_json(_record_path(path, sha256), data, sealed=False)  # the helper reads it
    return len(todo)


def natives_of(path: Path, sha256: str = "") -> nat.Natives:
    """A wheel's natives, from the cache when a wheel of the same digest was read before."""
    return read_many([(path, sha256)])[path]


def read_many(
    wheels: Sequence[tuple[Path, str]],
    prefetch: Prefetch | None = None,
    early: EarlyCache | None = None,
) -> dict[Path, nat.Natives]:
    """Natives of many wheels: cached ones by digest (the user's cache, then the
    wheelhouse's records), then what ``prefetch`` read; the members of the others read
    on all cores at once (``Reading``); what was read is cached by digest, unless
    ``early`` cached it already (then it is taken from ``prefetch``, not read back)."""
    out: dict[Path, nat.Natives] = {}
    todo: list[Path] = []
    digest: dict[Path, str] = {}
    for path, sha256 in wheels:
        if path in out or path in digest:
            continue
        if early is not None and prefetch is not None and sha256 in early.stored:
            got = prefetch.ready(path)
            if got is not None:
                out[path] = got
                continue
        cached = _cached(sha256)
        if cached is None:
            cached = _recorded(path, sha256)
        if cached is not None:
            out[path] = cached
            continue
        digest[path] = sha256
        got = prefetch.take(path) if prefetch is not None else None
        if got is not None:
            out[path] = got
        else:
            todo.append(path)
    if todo:
        reading = Reading(todo)
        try:
            for path in todo:
                out[path] = reading.natives(path)
        finally:
            reading.close()
    stored = early.stored if early is not None else frozenset()
    _store(
        {
            sha256: _entry(out[path])
            for path, sha256 in digest.items()
            if sha256 and sha256 not in stored and _worth_caching(out[path])
        }
    )
    return out


def _worth_caching(natives: nat.Natives) -> bool:
    """Whether a wheel's natives are worth a cache file: not where it ships no library
    (three in five wheels of the sglang stack), which is listed again about as fast as
    its file is read, while creating that file costs up to a millisecond on a busy disk."""
    return bool(natives.libraries or natives.binaries)


class EarlyCache:
    """Caches a wheel's natives while ``wh lock`` still hashes the others: as soon as the
    hashing gives its digest (``hashed``, called by ``add_hashes``) where ``prefetch``
    has read it already. The lock's end then writes only the rest: creating a few hundred
    files there cost 7 to 180 ms, by how busy the disk was, after the hashing and on the
    lock's one thread. ``stored`` names the digests written."""

    def __init__(self, prefetch: Prefetch) -> None:
        self._prefetch = prefetch
        self.stored: set[str] = set()

    def hashed(self, path: Path, sha256: str) -> None:
        got = self._prefetch.ready(path)
        if got is None or not _worth_caching(got) or sha256 in self.stored:
            return
        _store({sha256: _entry(got)})
        self.stored.add(sha256)


def _entry(natives: nat.Natives) -> str:
    """A wheel's natives as its cache file holds them."""
    return json.dumps({"natives": natives.to_json(), "stamp": _stamp()}, sort_keys=True)


def _store(entries: Mapping[str, str]) -> None:
    """Write each digest's cache file (``_entry``); a cache that cannot be written only
    costs speed."""
    write_texts(_natives_dir(), {_cache_name(sha256): text for sha256, text in entries.items()})


def wheels_to_read(
    resolution: Resolution, target: Target, env: Environment | None, wheels: Sequence[Wheel]
) -> tuple[dict[NormalizedName, Wheel], dict[NormalizedName, Wheel]]:
    """The wheels whose natives the check reads: each locked name's chosen wheel, and the
    wheel in the wheelhouse of a protected name that a declared target does not have."""
    chosen: dict[NormalizedName, Wheel] = {}
    for name, picked in resolution.packages.items():
        if picked.candidate.wheel is not None:
            chosen[name] = picked.candidate.wheel
    declared_pins: dict[NormalizedName, Wheel] = {}
    for name, pin in resolution.pins.items():
        if env is not None and name in env.dists:
            continue
        same = [
            w
            for w in wheels
            if w.name == name and w.version == pin.version and target.wheel_rank(w.tags) is not None
        ]
        if same:
            declared_pins[name] = same[0]
    return chosen, declared_pins


def record_paths(dist: InstalledDist) -> list[str]:
    """The files an installed distribution's RECORD names, relative to its site folder."""
    rows = record.installed(dist.dist_info) if dist.dist_info is not None else None
    if rows is None:
        return []
    return [PurePosixPath(p).as_posix() for p in record.installed_paths(rows)]


def _installed_unit(dist: InstalledDist, origin: Origin) -> Unit:
    libs = tuple(p for p in record_paths(dist) if nat.is_library_name(p))
    return Unit(dist.name, str(dist.version), origin, nat.Natives(libs, ()), dist.requires)


def _built(record: BuildRecord | None) -> BuiltAgainst | None:
    torch = record.torch if record is not None else None
    if record is None or torch is None:
        return None
    return BuiltAgainst(torch[0], torch[1], record.recipe_name)


def platform_for(target: Target, env: Environment | None) -> Platform:
    """The target's platform; a live target's loader is asked what it finds."""
    plat = for_target(target)
    if env is None:
        return plat
    return for_target(target, live(plat.os, plat.machine, plat.libc))


def lock_check(
    resolution: Resolution,
    target: Target,
    env: Environment | None,
    wheels: Sequence[Wheel],
    digests: Mapping[Path, str],
    records: Mapping[str, BuildRecord],
    options: LoadOptions,
    prefetch: Prefetch | None = None,
    early: EarlyCache | None = None,
) -> LoadReport | None:
    """Check the resolution; raise ``LoadCheckError`` with every problem. None: skipped.
    ``prefetch``: natives already being read (see ``Prefetch``); ``early``: those of them
    cached while the lock hashed (``EarlyCache``)."""
    if options.skip is not None:
        return None
    # a live target's loader is asked once: its finds key the result and decide it
    plat = platform_for(target, env)
    key = _report_key(resolution, target, env, wheels, digests, records, options, plat)
    report = _cached_report(key)
    if report is None:
        report = _lock_check(
            resolution, target, env, wheels, digests, records, options, prefetch, plat, early
        )
        if key:
            write_json(_report_path(key), {"key": key, "report": report.to_cache()})
    if report.problems:
        raise LoadCheckError(report.problems, report.platform)
    return report


# -- the result cache: a re-lock of the same wheels for the same target reads one file -------

_CHECK_CODE = (
    "app/loadcheck.py",
    "app/loadscan.py",
    "env/platformlibs.py",
    *(f"wheel/{name}" for name in nat.READER_MODULES),
)


def _report_path(key: str) -> Path:
    return cache_dir() / "loadcheck" / f"{key}.json"


def _cached_report(key: str) -> LoadReport | None:
    if not key:
        return None
    data = read_json(_report_path(key))
    try:
        if isinstance(data, dict) and data.get("key") == key:
            return LoadReport.from_cache(data["report"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        pass  # not what this check writes: check again
    return None


def _report_key(
    resolution: Resolution,
    target: Target,
    env: Environment | None,
    wheels: Sequence[Wheel],
    digests: Mapping[Path, str],
    records: Mapping[str, BuildRecord],
    options: LoadOptions,
    platform: Platform,
) -> str:
    """What decides the check's result, hashed: every unit's identity (a wheel by its
    sha256, an installed distribution by its RECORD's size and time), the target (a live
    one with what its loader finds: ``platform``, ``platform_for``'s), the options and the
    check's own code and data. "" where a wheel has no digest yet (nothing is cached
    then)."""
    root = Path(wh.__file__).parent
    code: list[Any] = [_FORMAT, nat.LIMITS]
    for rel in (*_CHECK_CODE, "data/platform.json"):
        st = (root / rel).stat()
        code.append([rel, st.st_size, st.st_mtime_ns])
    pe = importlib.util.find_spec("pefile")  # the PE parser, found without importing it
    if pe is not None and pe.origin:
        st = Path(pe.origin).stat()
        code.append(["pefile", st.st_size, st.st_mtime_ns])
    units: list[Any] = []
    for name, chosen in sorted(resolution.packages.items()):
        origin = Origin.PROTECTED if name in resolution.pins else Origin.LOCKED
        w = chosen.candidate.wheel
        if w is not None:
            digest = digests.get(w.path, w.sha256)
            if not digest:
                return ""
            units.append([name, str(w.version), origin, w.filename, digest])
            record = records.get(w.filename)
            units.append(dict(record.data) if record is not None else None)
        elif env is not None and name in env.dists:
            dist = env.dists[name]
            stamp = _files_stamp(dist.dist_info, ("RECORD", "METADATA"))
            units.append([name, str(dist.version), origin, "installed", stamp])
        else:
            units.append([name, str(chosen.candidate.version), origin])
    pins: list[Any] = []
    for name, pin in sorted(resolution.pins.items()):
        pins.append([name, str(pin.version)])
        if env is not None and name in env.dists:
            continue
        same = [
            w
            for w in wheels
            if w.name == name and w.version == pin.version and target.wheel_rank(w.tags) is not None
        ]
        if same:  # its wheel is read (see _lock_check)
            if not same[0].sha256:
                return ""
            pins.append([same[0].filename, same[0].sha256])
    outside = None
    if env is not None and "torch" in env.dists:
        outside = str(env.dists[NormalizedName("torch")].version)
    plat: list[Any] = [
        target.description,
        target.python_full_version,
        sorted(target.markers.items()),
        [str(t) for t in target.tags],
    ]
    if env is not None:
        plat.append(sorted(platform.found.items()))
    blob = json.dumps(
        [code, units, pins, outside, plat, sorted(options.allow_missing.items())],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _files_stamp(folder: Path | None, names: Sequence[str]) -> list[Any]:
    """Each file's size and time (None for one that cannot be read)."""
    out: list[Any] = []
    for n in names:
        try:
            st = (folder / n).stat() if folder is not None else None
        except OSError:
            st = None
        out.append([n, st.st_size, st.st_mtime_ns] if st is not None else None)
    return [str(folder), out]


def _lock_check(
    resolution: Resolution,
    target: Target,
    env: Environment | None,
    wheels: Sequence[Wheel],
    digests: Mapping[Path, str],
    records: Mapping[str, BuildRecord],
    options: LoadOptions,
    prefetch: Prefetch | None,
    platform: Platform,
    early: EarlyCache | None = None,
) -> LoadReport:
    units: list[Unit] = []
    chosen_wheels, declared_pins = wheels_to_read(resolution, target, env, wheels)
    todo = [(w.path, digests.get(w.path, w.sha256)) for w in chosen_wheels.values()]
    todo += [(w.path, w.sha256) for w in declared_pins.values()]
    read = read_many(todo, prefetch, early)
    for name, w in chosen_wheels.items():
        units.append(
            Unit(
                name,
                str(w.version),
                Origin.PROTECTED if name in resolution.pins else Origin.LOCKED,
                read[w.path],
                w.requires_dist,
                _built(records.get(w.filename)),
                w.filename,
            )
        )
    for name, chosen in resolution.packages.items():
        if name in chosen_wheels:
            continue
        origin = Origin.PROTECTED if name in resolution.pins else Origin.KEPT
        if env is not None and name in env.dists:
            units.append(_installed_unit(env.dists[name], origin))
        elif name in declared_pins:
            w = declared_pins[name]
            units.append(Unit(name, str(w.version), origin, read[w.path], w.requires_dist))
        else:
            units.append(Unit(name, str(chosen.candidate.version), origin, None))
    outside = None
    if env is not None and "torch" in env.dists and "torch" not in resolution.packages:
        dist = env.dists[NormalizedName("torch")]
        origin = Origin.PROTECTED if "torch" in resolution.pins else Origin.OUTSIDE
        outside = Unit(NormalizedName("torch"), str(dist.version), origin, None)
    with _collector_paused():
        return check(units, platform, options.allow_missing, outside)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while, as it was after. The check of a
    large lock allocates tens of thousands of objects that all live on in its report: the
    collections they set off free nothing, yet take a fair part of the check, which runs on
    the lock's single-threaded end (docs/performance-loadcheck.md, session 34)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def lock_record(report: LoadReport | None, options: LoadOptions) -> LoadCheck:
    """What ``[tool.wh] load-check`` of the lock says."""
    if report is None:
        return LoadCheck(checked=False, skipped=options.skip or "")
    return LoadCheck(
        checked=True,
        platform=report.platform,
        binaries=report.binaries,
        needs_met=len(report.met),
        allowed_missing=tuple(AllowedMissing(lib, why, by) for lib, why, by in report.allowed),
        warnings=tuple(report.warnings),
    )


def summary(report: LoadReport | None, options: LoadOptions) -> dict[str, Any]:
    """What ``wh lock --json`` reports: the lock's record, every need with its provider, and
    the unmet needs of members nothing links to (the lock's warnings sum them up)."""
    out = lock_record(report, options).to_toml()
    if report is not None:
        out["needs"] = [m.to_json() for m in report.met]
        out["unlinked"] = [p.to_json() for p in report.unlinked]
    return out


# -- wh verify: the same check over the installed files -------------------------------------


def installed_check(lock: Lock, env: Environment) -> LoadReport:
    """Check the environment's installed files of every locked package (read from disk),
    against everything installed there and the live loader."""
    units: list[Unit] = []
    records = lock.tool.build_records
    by_file = {pkg.name: pkg.filename for pkg in lock.packages.values()}
    for name, dist in sorted(env.dists.items()):
        if name in lock.packages and dist.dist_info is not None:
            site = dist.dist_info.parent
            found = nat.file_natives(site, record_paths(dist))
            built = _built(records.get(by_file.get(name, "")))
            units.append(Unit(name, str(dist.version), Origin.LOCKED, found, dist.requires, built))
        else:
            units.append(_installed_unit(dist, Origin.KEPT))
    return check(units, platform_for(env.target, env), _allowed(lock))


def _allowed(lock: Lock) -> dict[str, str]:
    """The libraries the lock allows missing, with why."""
    recorded = lock.tool.load_check
    return {e.library: e.reason for e in recorded.allowed_missing} if recorded else {}


def verify_findings(lock: Lock, env: Environment) -> list[Finding]:
    """``wh verify``'s load check: failures, unless the lock skipped the check (warnings)."""
    recorded = lock.tool.load_check
    skipped = recorded is not None and not recorded.checked
    report = installed_check(lock, env)
    out: list[Finding] = []
    for p in report.problems:
        text = " / ".join(p.render())
        if skipped:
            out.append(
                Finding(True, FindingKind.WARNING, f"load check (skipped by the lock): {text}")
            )
        else:
            out.append(Finding(False, FindingKind.LOAD, text))
    out.extend(Finding(True, FindingKind.WARNING, w) for w in report.warnings)
    if not report.problems:
        out.append(
            Finding(
                True,
                FindingKind.LOAD,
                f"load check: {report.binaries} installed binaries, {len(report.met)} needs met "
                f"({report.platform})",
            )
        )
    return out


def why_libraries(
    lock: Lock, name: NormalizedName, target: Target, live_target: bool = False
) -> tuple[LibraryNeed, ...]:
    """What the locked wheel of ``name`` needs and who provides each (``wh why --libraries``),
    from the lock's wheels (cached natives) and the lock's platform (a live one's loader
    asked again)."""
    units = []
    for pkg in lock.packages.values():
        found = natives_of(pkg.wheel, pkg.sha256) if pkg.wheel.is_file() else None
        units.append(Unit(pkg.name, str(pkg.version), Origin.LOCKED, found))
    for p in lock.tool.protections:
        if p.name not in lock.packages:
            units.append(Unit(p.name, p.version, Origin.PROTECTED, None))
    allow = _allowed(lock)
    plat = for_target(target)
    report = check(
        units,
        for_target(target, live(plat.os, plat.machine, plat.libc)) if live_target else plat,
        allow,
    )
    label = next((u.label for u in units if u.name == name), "")
    return report.needs_of(label)

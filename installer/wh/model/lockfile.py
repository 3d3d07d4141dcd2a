"""PEP 751 locks: render a Resolution to pylock.toml bytes, read one back, check its digest."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import tomli_w
from packaging.markers import Marker
from packaging.pylock import Package, PackageWheel, Pylock, PylockValidationError
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh import __version__
from wh.errors import LockError
from wh.model.target import Target
from wh.settings import cache_dir

if TYPE_CHECKING:  # speed: `wh install --locked` reads a lock without the resolver
    from wh.model.profile import Profile
    from wh.model.resolution import Resolution

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

_DIGEST_RE = re.compile(rb'^digest = "sha256:[0-9a-f]*"$', re.MULTILINE)
_DIGEST_BLANK = b'digest = "sha256:"'
WEAK_HASHES = ("md5", "sha1")


@dataclass(frozen=True)
class LockedPackage:
    """One package of a lock: the exact wheel to install."""

    name: NormalizedName
    version: Version
    wheel: Path  # absolute
    filename: str
    size: int
    sha256: str
    dependencies: tuple[NormalizedName, ...]
    required_by: tuple[tuple[str, str], ...]
    protected: bool
    extras: tuple[NormalizedName, ...] = ()
    url: str | None = None  # a lock of `wh lock --index-url`: ``wheel`` is its download place


@dataclass(frozen=True)
class Lock:
    """A lock read back from disk, with wh's provenance from ``[tool.wh]``."""

    path: Path
    profile: str
    packages: Mapping[NormalizedName, LockedPackage]
    levels: tuple[tuple[NormalizedName, ...], ...]
    tool: Mapping[str, Any]

    @property
    def protections(self) -> list[dict[str, Any]]:
        return list(self.tool.get("protections", []))

    @property
    def overrides(self) -> list[dict[str, Any]]:
        return list(self.tool.get("overrides", []))


def _environment_marker(target: Target) -> Marker:
    m = target.markers
    return Marker(
        f'sys_platform == "{m["sys_platform"]}" and platform_machine == "{m["platform_machine"]}"'
        f' and python_version == "{m["python_version"]}"'
    )


def render(
    resolution: Resolution,
    profile: Profile,
    target: Target,
    lock_path: Path,
    *,
    build_records: Mapping[str, Mapping[str, Any]] | None = None,
    digests: Mapping[Path, str] | None = None,
    index_url: str | None = None,
    load_check: Mapping[str, Any] | None = None,
) -> bytes:
    """The lock's bytes: deterministic for the same inputs, digest included."""
    lock_dir = lock_path.parent.resolve()
    packages: list[Package] = []
    kept: list[dict[str, str]] = []
    protected = {n for n in resolution.pins}
    for name, chosen in sorted(resolution.packages.items()):
        cand = chosen.candidate
        if cand.wheel is None:
            # kept as installed (protected, or already satisfying): recorded in [tool.wh]
            if name not in protected:
                kept.append({"name": name, "version": str(cand.version)})
            continue
        w = cand.wheel
        sha256 = (digests or {}).get(w.path) or w.sha256
        if not sha256:  # pragma: no cover - do_lock hashes every locked wheel first
            raise LockError(f"wh has no sha256 for {w.filename}; this is a bug in wh")
        rel = lock_relative(str(w.path.resolve()), str(lock_dir))
        tool: dict[str, Any] = {
            "required-by": [list(rb) for rb in chosen.required_by],
        }
        if name in protected:
            tool["protected"] = True
        if chosen.extras:
            tool["extras"] = sorted(chosen.extras)
        packages.append(
            Package(
                name=name,
                version=cand.version,
                requires_python=w.requires_python,
                dependencies=[{"name": d} for d in chosen.depends_on] or None,
                wheels=[
                    PackageWheel(
                        name=w.filename,
                        path=None if index_url else rel,
                        url=wheel_url(index_url, w.filename) if index_url else None,
                        size=w.size,
                        hashes={"sha256": sha256},
                    )
                ],
                tool={"wh": tool},
            )
        )
    tool_wh: dict[str, Any] = {
        "profile": profile.name,
        "wh-version": __version__,
        "target": target.to_json() if target.python is None else _live_target(target),
        "roots": list(resolution.roots),
        "install-order": [list(level) for level in resolution.levels],
        "link-mode": profile.link_mode,
        "backend": profile.backend,
        "overrides": [
            {"requirement": str(o.requirement), "reason": o.reason} for o in profile.overrides
        ],
        "overrides-applied": [
            {"by": a.by, "original": a.original, "replacement": a.replacement, "reason": a.reason}
            for a in resolution.applied
        ],
        "unused-overrides": [str(o.requirement) for o in resolution.unused_overrides],
        "drops": [
            {"name": d.name, "marker": str(d.marker or ""), "reason": d.reason}
            for d in profile.drops
        ],
        "drops-applied": [
            {"by": d.by, "requirement": d.requirement, "marker": d.marker, "reason": d.reason}
            for d in resolution.dropped
        ],
        "unused-drops": [d.describe() for d in resolution.unused_drops],
        # dependencies nobody declares: installed before the other roots
        "extra-requirements": [
            {"requirement": str(e.requirement), "reason": e.reason} for e in profile.extras
        ],
        "protections": [
            {
                "name": p.name,
                "version": str(p.version),
                "reason": p.reason,
                **({"record-sha256": p.record_sha256} if p.record_sha256 else {}),
                "required-by": [list(rb) for rb in resolution.packages[n].required_by],
            }
            for n, p in sorted(resolution.pins.items())
        ],
        "kept-installed": kept,
        "checks": {
            "imports": list(profile.checks.imports),
            "snippets": [
                {"code": s.code, "description": s.description} for s in profile.checks.snippets
            ],
        },
        "needs": list(profile.needs),
        "allow-overwrite": list(profile.allow_overwrite),
    }
    if index_url:
        tool_wh["index-url"] = index_url
    if build_records:
        tool_wh["build-records"] = {k: dict(v) for k, v in sorted(build_records.items())}
    if load_check is not None:
        tool_wh["load-check"] = dict(load_check)
    tool_wh["digest"] = "sha256:"
    pylock = Pylock(
        lock_version=Version("1.0"),
        created_by="wh",
        environments=[_environment_marker(target)],
        requires_python=SpecifierSet(f"=={target.python_version}.*"),
        packages=packages,
        tool={"wh": tool_wh},
    )
    doc = pylock.to_dict()
    try:
        Pylock.from_dict(doc)  # what Pylock.validate() does, on the dict written below
    except PylockValidationError as exc:  # pragma: no cover - a bug in wh, not user input
        raise LockError(f"wh produced an invalid lock: {exc}") from exc
    body = tomli_w.dumps(_sorted(doc)).encode()
    digest = hashlib.sha256(body).hexdigest()
    return body.replace(_DIGEST_BLANK, f'digest = "sha256:{digest}"'.encode(), 1)


def wheel_url(index_url: str, filename: str) -> str:
    """Where a wheelhouse served as a `wh index` keeps ``filename``: its pages are under
    ``/simple/``, its wheels one folder up (the pages link ``../../<wheel>``)."""
    base = index_url.rstrip("/")
    if base.endswith("/simple"):
        base = base[: -len("/simple")]
    return f"{base}/{quote(filename)}"


def _live_target(target: Target) -> dict[str, Any]:
    # The interpreter path is machine-specific: keep it out so locks are portable.
    data = target.to_json()
    data.pop("python", None)
    markers = dict(target.markers)
    for machine_specific in ("platform_release", "platform_version"):
        markers.pop(machine_specific, None)
    data["markers"] = dict(sorted(markers.items()))
    data["description"] = f"CPython {target.python_full_version} ({target.markers['sys_platform']})"
    return data


def _sorted(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _sorted(obj[k]) for k in obj}
    if isinstance(obj, list):
        return [_sorted(x) for x in obj]
    return obj


def digest_ok(data: bytes) -> bool | None:
    """True/False if the lock's own digest matches its bytes; None if it has none."""
    m = _DIGEST_RE.search(data)
    if m is None:
        return None
    blanked = data[: m.start()] + _DIGEST_BLANK + data[m.end() :]
    return m.group(0) == b'digest = "sha256:' + hashlib.sha256(blanked).hexdigest().encode() + b'"'


def lock_relative(wheel: str, lock_dir: str, paths: Any = os.path) -> str:
    """A wheel's ``path`` in the lock: relative to the lock's folder, "/"-separated; absolute
    where no relative path exists (Windows: another drive, ``D:\\house`` for a lock on
    ``C:``, or a UNC share, where ``relpath`` raises ValueError; a USB stick is the usual
    air-gap layout). PEP 751 allows both. ``paths`` is ``os.path`` (``ntpath`` in tests)."""
    try:
        rel = paths.relpath(wheel, lock_dir)
    except ValueError:
        rel = paths.abspath(wheel)
    return str(rel).replace(paths.sep, "/") if paths.sep != "/" else str(rel)


def read(path: Path, *, require_digest: bool = True) -> Lock:
    """Parse and validate a lock; refuse hand edits, weak hashes and malformed entries."""
    if not path.is_file():
        raise LockError(
            f"lock {path} does not exist",
            hint=f"create it with `wh lock PROFILE --lockfile {path}`",
        )
    return parse(path.read_bytes(), path, require_digest=require_digest)


def parse(data: bytes, path: Path, *, require_digest: bool = True) -> Lock:
    """A lock's bytes as if read from ``path`` (wheel paths are relative to its folder):
    what `install --dry-run` plans from without writing the lock."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LockError(
            f"{path}: not valid TOML ({exc})", hint="re-create it with `wh lock`"
        ) from exc
    try:
        pylock = Pylock.from_dict(doc)
    except PylockValidationError as exc:
        raise LockError(
            f"{path}: not a valid PEP 751 lock: {exc}", hint="re-create it with `wh lock`"
        ) from exc
    tool = dict((pylock.tool or {}).get("wh", {}))
    lock_dir = path.parent
    packages: dict[NormalizedName, LockedPackage] = {}
    for pkg in pylock.packages:
        wheels = list(pkg.wheels or [])
        if len(wheels) != 1 or (wheels[0].path is None and wheels[0].url is None):
            raise LockError(
                f"{path}: package {pkg.name} must name exactly one wheel by path or URL",
                hint="wh installs exactly one wheel per package; re-create with `wh lock`",
            )
        w = wheels[0]
        if w.path is not None:
            wpath = str(w.path)
            where = (lock_dir / wpath).resolve()
        else:
            wpath = str(w.url).rsplit("/", 1)[-1]
            digest = w.hashes.get("sha256", "none")
            where = cache_dir() / "fleet-wheels" / digest[:2] / digest / (w.name or wpath)
        if "sha256" not in w.hashes:
            weak = ", ".join(sorted(set(w.hashes) & set(WEAK_HASHES))) or "none"
            raise LockError(
                f"{path}: {pkg.name} has no sha256 hash (found: {weak})",
                hint="md5 and sha1 are refused; re-create the lock with `wh lock`",
            )
        if w.size is None:
            raise LockError(f"{path}: {pkg.name} has no size", hint="re-create it with `wh lock`")
        ptool = dict((pkg.tool or {}).get("wh", {}))
        packages[pkg.name] = LockedPackage(
            name=pkg.name,
            version=pkg.version or Version("0"),
            wheel=where,
            filename=w.name or Path(wpath).name,
            size=w.size,
            sha256=w.hashes["sha256"],
            dependencies=tuple(canonicalize_name(d["name"]) for d in pkg.dependencies or []),
            required_by=tuple((str(a), str(b)) for a, b in ptool.get("required-by", [])),
            protected=bool(ptool.get("protected", False)),
            extras=tuple(canonicalize_name(e) for e in ptool.get("extras", [])),
            url=str(w.url) if w.path is None and w.url else None,
        )
    ok = digest_ok(data)
    if ok is False or (ok is None and require_digest):
        raise LockError(
            f"{path}: the lock's digest does not match its contents (edited by hand?)",
            hint="never edit a lock; re-create it with `wh lock` and review the diff",
        )
    levels = tuple(
        tuple(canonicalize_name(n) for n in level) for level in tool.get("install-order", [])
    )
    return Lock(path, str(tool.get("profile", "")), packages, levels, tool)


def write(path: Path, data: bytes) -> bool:
    """Write atomically; return True when the bytes changed."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def package_list(lock: Lock) -> Sequence[LockedPackage]:
    return [lock.packages[n] for n in sorted(lock.packages)]

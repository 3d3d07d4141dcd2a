"""PEP 751 locks: render a Resolution to pylock.toml bytes, parse them back, check the digest
(reading and writing the file: ``app/lockfiles.py``)."""

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
from wh.errors import (
    LockBugError,
    LockDigestError,
    LockEntryError,
    LockFormatError,
    LockSyntaxError,
)
from wh.model.requiredby import RequiredBy
from wh.model.target import Target
from wh.model.toolwh import (
    FORMAT,
    Because,
    BuildRecord,
    Checks,
    DropRule,
    DropUse,
    KeptInstalled,
    LoadCheck,
    LockedProtection,
    LockTarget,
    OverrideUse,
    Snippet,
    ToolWh,
)

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
    required_by: tuple[RequiredBy, ...]
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
    tool: ToolWh


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
    build_records: Mapping[str, BuildRecord] | None = None,
    digests: Mapping[Path, str] | None = None,
    index_url: str | None = None,
    load_check: LoadCheck | None = None,
) -> bytes:
    """The lock's bytes: deterministic for the same inputs, digest included."""
    lock_dir = lock_path.parent.resolve()
    packages: list[Package] = []
    kept: list[KeptInstalled] = []
    protected = {n for n in resolution.pins}
    for name, chosen in sorted(resolution.packages.items()):
        cand = chosen.candidate
        if cand.wheel is None:
            # kept as installed (protected, or already satisfying): recorded in [tool.wh]
            if name not in protected:
                kept.append(KeptInstalled(name, str(cand.version)))
            continue
        w = cand.wheel
        sha256 = (digests or {}).get(w.path) or w.sha256
        if not sha256:  # pragma: no cover - do_lock hashes every locked wheel first
            raise LockBugError("no sha256", w.filename)
        rel = lock_relative(str(w.path.resolve()), str(lock_dir))
        tool: dict[str, Any] = {
            "required-by": [rb.to_toml() for rb in chosen.required_by],
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
    tool_wh = ToolWh(
        profile=profile.name,
        wh_version=__version__,
        target=_lock_target(target),
        roots=tuple(resolution.roots),
        install_order=resolution.levels,
        link_mode=profile.link_mode,
        backend=profile.backend,
        overrides=tuple(Because(str(o.requirement), o.reason) for o in profile.overrides),
        overrides_applied=tuple(
            OverrideUse(a.by, a.original, a.replacement, a.reason) for a in resolution.applied
        ),
        unused_overrides=tuple(str(o.requirement) for o in resolution.unused_overrides),
        drops=tuple(DropRule(d.name, str(d.marker or ""), d.reason) for d in profile.drops),
        drops_applied=tuple(
            DropUse(d.by, d.requirement, d.marker, d.reason) for d in resolution.dropped
        ),
        unused_drops=tuple(d.describe() for d in resolution.unused_drops),
        extra_requirements=tuple(Because(str(e.requirement), e.reason) for e in profile.extras),
        protections=tuple(
            LockedProtection(
                p.name,
                str(p.version),
                p.reason,
                p.record_sha256 or None,
                resolution.packages[n].required_by,
            )
            for n, p in sorted(resolution.pins.items())
        ),
        kept_installed=tuple(kept),
        checks=Checks(
            tuple(profile.checks.imports),
            tuple(Snippet(s.code, s.description) for s in profile.checks.snippets),
        ),
        needs=tuple(profile.needs),
        allow_overwrite=tuple(profile.allow_overwrite),
        index_url=index_url or None,
        build_records=dict(build_records or {}),
        load_check=load_check,
        digest="sha256:",
    )
    pylock = Pylock(
        lock_version=Version("1.0"),
        created_by="wh",
        environments=[_environment_marker(target)],
        requires_python=SpecifierSet(f"=={target.python_version}.*"),
        packages=packages,
        tool={"wh": tool_wh.to_toml()},
    )
    doc = pylock.to_dict()
    try:
        Pylock.from_dict(doc)  # what Pylock.validate() does, on the dict written below
    except PylockValidationError as exc:  # pragma: no cover - a bug in wh, not user input
        raise LockBugError(str(exc)) from exc
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


def _lock_target(target: Target) -> LockTarget:
    """The target as the lock records it. A live target's interpreter path and kernel
    release are machine-specific: kept out so locks are portable."""
    markers = dict(target.markers)
    description = target.description
    if target.python is not None:
        for machine_specific in ("platform_release", "platform_version"):
            markers.pop(machine_specific, None)
        description = f"CPython {target.python_full_version} ({target.markers['sys_platform']})"
    return LockTarget(
        description, target.python_full_version, dict(sorted(markers.items())), target.platform
    )


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


def blank_digest(data: bytes) -> bytes:
    """The lock's bytes with its digest value blank: what the digest is computed over."""
    m = _DIGEST_RE.search(data)
    return data if m is None else data[: m.start()] + _DIGEST_BLANK + data[m.end() :]


def parse(
    data: bytes, path: Path, *, require_digest: bool = True, url_wheels: Path | None = None
) -> Lock:
    """A lock's bytes as if read from ``path`` (wheel paths are relative to its folder):
    what `install --dry-run` plans from without writing the lock. ``url_wheels`` is the
    folder a lock of URL wheels (`wh lock --index-url`) downloads them into."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LockSyntaxError(path, str(exc), pep751=False) from exc
    try:
        pylock = Pylock.from_dict(doc)
    except PylockValidationError as exc:
        raise LockSyntaxError(path, str(exc), pep751=True) from exc
    raw_tool = (pylock.tool or {}).get("wh", {})
    if not isinstance(raw_tool, dict):
        raise LockFormatError(path, "?", FORMAT, "[tool.wh] is not a table")
    fmt = raw_tool.get("format", 1)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or not 1 <= fmt <= FORMAT:
        raise LockFormatError(path, str(fmt), FORMAT)
    lock_dir = path.parent
    packages: dict[NormalizedName, LockedPackage] = {}
    for pkg in pylock.packages:
        wheels = list(pkg.wheels or [])
        if len(wheels) != 1 or (wheels[0].path is None and wheels[0].url is None):
            raise LockEntryError(path, pkg.name, "one-wheel")
        w = wheels[0]
        if w.path is not None:
            wpath = str(w.path)
            where = (lock_dir / wpath).resolve()
        else:
            wpath = str(w.url).rsplit("/", 1)[-1]
            digest = w.hashes.get("sha256", "none")
            if url_wheels is None:  # pragma: no cover - a bug in wh, not in the lock
                raise ValueError(f"{path}: a lock of URL wheels is parsed without url_wheels")
            where = url_wheels / digest[:2] / digest / (w.name or wpath)
        if "sha256" not in w.hashes:
            weak = tuple(sorted(set(w.hashes) & set(WEAK_HASHES)))
            raise LockEntryError(path, pkg.name, "no-sha256", found=weak)
        if w.size is None:
            raise LockEntryError(path, pkg.name, "no-size")
        try:  # what PEP 751 leaves free: a package's [tool.wh] and its dependencies' names
            ptool = dict((pkg.tool or {}).get("wh", {}))
            packages[pkg.name] = LockedPackage(
                name=pkg.name,
                version=pkg.version or Version("0"),
                wheel=where,
                filename=w.name or Path(wpath).name,
                size=w.size,
                sha256=w.hashes["sha256"],
                dependencies=tuple(_name(d["name"]) for d in pkg.dependencies or []),
                required_by=tuple(
                    RequiredBy.from_toml(rb) for rb in _list(ptool.get("required-by", []))
                ),
                protected=_bool(ptool.get("protected", False)),
                extras=tuple(_name(e) for e in _list(ptool.get("extras", []))),
                url=str(w.url) if w.path is None and w.url else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problem = f"package {pkg.name}: {type(exc).__name__}: {exc}"
            raise LockFormatError(path, str(fmt), FORMAT, problem) from exc
    ok = digest_ok(data)
    if ok is False or (ok is None and require_digest):
        raise LockDigestError(path)
    try:
        tool = ToolWh.from_toml(raw_tool)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LockFormatError(path, str(fmt), FORMAT, f"{type(exc).__name__}: {exc}") from exc
    return Lock(path, tool.profile, packages, tool.install_order, tool)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected an array, found {value!r}")
    return value


def _name(value: Any) -> NormalizedName:
    if not isinstance(value, str):
        raise TypeError(f"expected a name, found {value!r}")
    return canonicalize_name(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, found {value!r}")
    return value


def package_list(lock: Lock) -> Sequence[LockedPackage]:
    return [lock.packages[n] for n in sorted(lock.packages)]

"""Bundles: one archive holding a lock, its wheels, wh itself, a manifest and bootstrap scripts."""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import IO

from packaging.requirements import Requirement

from wh import __version__, progress
from wh.airgap import signing
from wh.app import lockfiles
from wh.app.fetch import configured_pip_env, fetch
from wh.app.hooks import TargetSpec
from wh.app.loadscan import copy_records, record_wheelhouse
from wh.app.lock import do_lock
from wh.env.environment import Environment
from wh.errors import BundleError, BundleOverwriteError, ToolWheelsError, UnportablePathsError
from wh.hashing import sha256_file, sha256_many
from wh.install.validate import checked_index, refuse_wheels
from wh.model import lockfile as lockmod
from wh.model.candidates import CandidateIndex
from wh.model.loadoptions import LoadOptions
from wh.model.manifest import Manifest
from wh.model.profile import Profile
from wh.model.resolution import Resolution
from wh.model.target import Target
from wh.proc import spawn as proc
from wh.resolve.resolver import resolve
from wh.settings import cache_dir
from wh.wheel import buildrecord, portable
from wh.wheelhouse.scan import scan

MANIFEST = "SHA256SUMS"
INFO = "bundle.txt"
WHEELS = "wheels"
TOOL = "wh"
SCRIPTS = ("install.sh", "install.ps1")
_EXECUTABLE = {"install.sh"}
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class BundleResult:
    """What went into a bundle."""

    path: Path
    lock_name: str
    packages: tuple[str, ...]
    tool_wheels: tuple[str, ...]
    files: int
    size: int
    sha256: str
    signed_by: str | None = None  # the signing key's fingerprint
    # locked but carried by no wheel ("torch 2.9.1+cu130 (protected)"): the workstation
    # must already have exactly these, or the bundle's install is refused
    needs_installed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """What `wh bundle --json` prints."""
        return {
            "bundle": str(self.path),
            "lock": self.lock_name,
            "packages": list(self.packages),
            "wh_wheels": list(self.tool_wheels),
            "files": self.files,
            "size": self.size,
            "sha256": self.sha256,
            "signed_by": self.signed_by,
            "needs_installed": list(self.needs_installed),
        }


# -- making a bundle ------------------------------------------------------------------------


def make_bundle(
    manifest: Manifest,
    wheelhouse: Path,
    spec: TargetSpec,
    output: Path,
    *,
    tool_wheels: Path | None = None,
    source: Path | None = None,
    sign_key: Path | None = None,
    load: LoadOptions | None = None,
) -> BundleResult:
    """Lock ``manifest`` for the target and write the bundle archive to ``output``.

    ``tool_wheels`` is a folder holding wh's wheel and its dependencies for the target; by
    default wh's wheel is built from its source tree and the dependencies are fetched.
    ``sign_key`` (an ed25519 private key) signs the manifest (``wh/airgap/signing.py``).
    Every locked wheel is validated as an install would (structure, bombs), and for a
    Windows or macOS target its paths are checked against that filesystem's rules
    (``wh/wheel/portable.py``), before the archive is written. ``load``: the load check's
    escape hatches (``--allow-missing-library``, ``--skip-load-check``), recorded in the
    bundle's lock as in any lock.
    """
    key = signing.load_private_key(sign_key) if sign_key is not None else None
    profile = manifest.profile
    target, env = spec.resolve()
    with tempfile.TemporaryDirectory(prefix="wh-bundle-") as tmp:
        stage = Path(tmp) / "bundle"
        (stage / WHEELS).mkdir(parents=True)
        first = do_lock(manifest, wheelhouse, stage / "first.toml", spec, write=False, load=load)
        locked = lockmod.parse(first.data, stage / "first.toml", require_digest=False)
        for pkg in locked.packages.values():
            shutil.copy2(pkg.wheel, stage / WHEELS / pkg.filename)
            record = buildrecord.path_of(pkg.wheel)
            if record.is_file():
                shutil.copy2(record, stage / WHEELS / record.name)
        # what each wheel's compiled members need travels with it: an offline lock of the
        # bundle's wheels then reads no compiled member. `wh fetch`'s records are copied;
        # the others (a wheelhouse made another way, or records of another wh) are written
        # from what the lock above read (its cache), so every wheel has one. A bundle
        # made with --skip-load-check reads no wheel for them
        copy_records({p.wheel: p.sha256 for p in locked.packages.values()}, stage / WHEELS)
        if load is None or load.skip is None:
            record_wheelhouse(
                {stage / WHEELS / p.filename: p.sha256 for p in locked.packages.values()}
            )
        lock_name = f"pylock.{profile.name}.toml"
        progress.status(f"locking {profile.name} for {target.description} inside the bundle")
        done = do_lock(manifest, stage / WHEELS, stage / lock_name, spec, load=load)
        if done.overwrites:  # the install would refuse them offline: refuse here, online
            raise BundleOverwriteError(output, profile.name, done.overwrites)
        named = {
            c.candidate.wheel.filename
            for c in done.resolution.packages.values()
            if c.candidate.wheel
        }
        needs = tuple(
            f"{n} {c.candidate.version}" + (" (protected)" if n in done.resolution.pins else "")
            for n, c in sorted(done.resolution.packages.items())
            if c.candidate.wheel is None
        )
        for extra in sorted(p for p in (stage / WHEELS).glob("*.whl") if p.name not in named):
            extra.unlink()  # exactly the wheels the lock names
        check_wheels_for(target, sorted((stage / WHEELS).glob("*.whl")))
        progress.status("collecting wh and its dependencies for the target")
        tool = stage / TOOL
        tool.mkdir()
        names = collect_tool_wheels(target, env, tool, tool_wheels=tool_wheels, source=source)
        for script in SCRIPTS:
            data = (resources.files("wh") / "bootstrap" / script).read_bytes()
            (stage / script).write_bytes(data)
        (stage / INFO).write_text(
            f"format=1\nprofile={profile.name}\nlock={lock_name}\nwh-version={__version__}\n"
            f"target={target.description}\n"
            f"python-version={'.'.join(target.python_full_version.split('.')[:2])}\n"
            + "".join(f"needs-installed={n}\n" for n in needs),
            encoding="utf-8",
        )
        write_manifest(stage)
        if key is not None:
            sums = (stage / MANIFEST).read_bytes()
            (stage / signing.SIGNATURE).write_text(signing.sign(sums, key), encoding="utf-8")
        progress.status(f"writing {output}")
        write_archive(stage, output, top=_stem(output))
        files = sum(1 for p in stage.rglob("*") if p.is_file())
    return BundleResult(
        output,
        lock_name,
        tuple(sorted(named)),
        tuple(names),
        files,
        output.stat().st_size,
        sha256_file(output),
        signing.fingerprint(key.public_key()) if key is not None else None,
        needs,
    )


def check_wheels_for(target: Target, wheels: list[Path]) -> None:
    """Refuse (exit 3, every problem at once) a locked wheel that fails validation, or whose
    paths a Windows or macOS target cannot hold (reserved names, trailing dots or spaces,
    ``:``, case or NFC/NFD variants of another file, also across wheels)."""
    checked = [(w, *checked_index(w)) for w in wheels]
    refuse_wheels([(w.name, found) for w, _index, found in checked])
    platform = target.markers.get("sys_platform", "")
    if platform not in ("win32", "darwin"):
        return
    members: list[tuple[str, str]] = []
    for w, index, _found in checked:
        assert index is not None  # refuse_wheels refused every wheel without one
        members += [(n, w.name) for n in index.names if n[-1:] != "/"]
    found = portable.problems(members, windows=platform == "win32", landing=landing)
    if found:
        where = "Windows" if platform == "win32" else "macOS"
        raise UnportablePathsError(where, found)


def landing(arcname: str) -> str:
    """Where a wheel member lands, relative to the environment (roughly: purelib and
    platlib as the site folder, the other ``.data`` schemes under their own names), so
    that members of different wheels that land on one file compare equal."""
    top, _, rest = arcname.partition("/")
    if top.endswith(".data") and rest:
        scheme, _, tail = rest.partition("/")
        return tail if scheme in ("purelib", "platlib") else f"<{scheme}>/{tail}"
    return arcname


def collect_tool_wheels(
    target: Target,
    env: Environment | None,
    dest: Path,
    *,
    tool_wheels: Path | None = None,
    source: Path | None = None,
) -> list[str]:
    """Copy wh's wheel and its runtime closure for ``target`` (uv and pip included) to dest."""
    wh_profile = Profile(name="wh", requirements=(Requirement(f"wh=={__version__}"),))
    wh_manifest = Manifest.of(wh_profile)
    resolution: Resolution
    if tool_wheels is not None:
        resolution = resolve(
            wh_manifest, CandidateIndex.build(scan(tool_wheels).wheels, target, {})
        )
    else:
        house = cache_dir() / "bundle-wheels"
        house.mkdir(parents=True, exist_ok=True)
        build_wh_wheel(source or source_tree(), house)
        report = fetch(wh_manifest, house, [(target, env)], local_only=["wh"])
        if report.missing:
            raise ToolWheelsError(target.description, [str(m) for m in report.missing])
        resolution = report.resolutions[target.description]
    names = []
    for chosen in resolution.packages.values():
        w = chosen.candidate.wheel
        if w is not None:
            shutil.copy2(w.path, dest / w.filename)
            names.append(w.filename)
    return sorted(names)


def source_tree() -> Path:
    """wh's source tree (a checkout or editable install), to build its wheel from."""
    root = Path(__file__).resolve().parents[3]  # installer/wh/app/bundle.py
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and 'name = "wh"' in pyproject.read_text(encoding="utf-8"):
        return root
    raise ToolWheelsError(None)


def build_wh_wheel(source: Path, dest: Path) -> Path:
    """``pip wheel --no-deps SOURCE`` (build isolation fetches setuptools from pip's index),
    pure Python (``WH_PURE_PYTHON=1``, see setup.py): a wheel with wh's C block search
    would install only on this machine's platform, and a bundle may be for another."""
    progress.status(f"building wh's wheel from {source}")
    with tempfile.TemporaryDirectory(prefix="wh-wheel-") as tmp:
        proc.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", tmp, str(source)],
            env={**configured_pip_env(), "WH_PURE_PYTHON": "1"},
            what="pip wheel (building wh)",
        )
        (built,) = Path(tmp).glob("wh-*.whl")
        target = dest / built.name
        shutil.move(str(built), target)
        return target


def write_manifest(root: Path) -> None:
    """SHA256SUMS: ``<sha256>  <path>`` for every file (the ``sha256sum -c`` format)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)
    digests = sha256_many(files)
    lines = [f"{digests[p]}  {p.relative_to(root).as_posix()}\n" for p in files]
    (root / MANIFEST).write_text("".join(lines), encoding="utf-8")


def _stem(output: Path) -> str:
    name = output.name
    for suffix in (".tar.gz", ".tgz", ".tar", ".zip"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return output.stem


def write_archive(stage: Path, output: Path, *, top: str) -> None:
    """A zip (default) or tar(.gz) with entries under ``top/``, sorted, fixed timestamps."""
    files = sorted(p for p in stage.rglob("*") if p.is_file())
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + f".{os.getpid()}.tmp")
    name = output.name
    if name.endswith((".tar", ".tar.gz", ".tgz")):
        mode = "w:gz" if name.endswith(("gz",)) else "w"
        with tarfile.open(tmp, mode) as tf:  # type: ignore[call-overload]
            for p in files:
                info = tf.gettarinfo(str(p), f"{top}/{p.relative_to(stage).as_posix()}")
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o755 if p.name in _EXECUTABLE else 0o644
                with p.open("rb") as f:
                    tf.addfile(info, f)
    else:
        with zipfile.ZipFile(tmp, "w") as zf:
            for p in files:
                zi = zipfile.ZipInfo(f"{top}/{p.relative_to(stage).as_posix()}", _ZIP_EPOCH)
                perm = 0o755 if p.name in _EXECUTABLE else 0o644
                zi.external_attr = (stat.S_IFREG | perm) << 16
                zi.compress_type = (
                    zipfile.ZIP_STORED if p.suffix == ".whl" else zipfile.ZIP_DEFLATED
                )
                with p.open("rb") as src, zf.open(zi, "w") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    os.replace(tmp, output)


# -- opening a bundle -----------------------------------------------------------------------


def open_bundle(
    path: Path,
    *,
    on_close: Callable[[Callable[[], None]], object],
    trust: Sequence[Path] = (),
    allow_unsigned: bool = False,
) -> Path:
    """Unpack (if an archive), check the signature, the manifest and the lock; return the
    lock's path.

    Nothing is installed or changed before this returns; ``on_close`` receives the cleanup
    of a temporary unpack folder. The manifest must be signed by one of the ``trust`` keys
    (``wh/airgap/signing.py``), or ``allow_unsigned`` must say that no signature is needed.
    """
    if path.is_dir():
        root = path
    elif path.is_file():
        tmp = Path(tempfile.mkdtemp(prefix="wh-bundle-"))
        on_close(lambda: shutil.rmtree(tmp, ignore_errors=True))
        progress.status(f"unpacking {path}")
        extract(path, tmp)
        tops = [p for p in tmp.iterdir()]
        root = tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp
    else:
        raise BundleError(path, "missing")
    try:
        manifest = (root / MANIFEST).read_bytes()
    except OSError as exc:
        raise BundleError(
            root, "unreadable-manifest", member=MANIFEST, problem=str(exc.strerror)
        ) from exc
    # always, whatever the manifest holds: an emptied one must not skip the signature
    progress.status(signing.check(root, manifest, trust, allow_unsigned=allow_unsigned).describe())
    checked = verify_manifest(root, manifest)
    progress.status(f"bundle manifest verified: {checked} file(s) match {MANIFEST}")
    info = read_info(root)
    lock_path = root / info.get("lock", "")
    lockfiles.read(lock_path)  # the lock's own digest, before anything changes
    return lock_path


def read_info(root: Path) -> dict[str, str]:
    path = root / INFO
    if not path.is_file():
        raise BundleError(root, "no-info", member=INFO)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise BundleError(root, "unreadable-info", member=INFO, problem=str(exc)) from exc
    pairs = (line.partition("=") for line in text.splitlines())
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def verify_manifest(root: Path, data: bytes | None = None) -> int:
    """Every file the manifest names matches; no unlisted wheel was slipped in. ``data`` is
    the manifest's bytes when already read (the ones whose signature was checked)."""
    manifest = root / MANIFEST
    if not data and not manifest.is_file():
        raise BundleError(root, "no-manifest", member=MANIFEST)
    expected: dict[str, str] = {}
    problems: list[str] = []
    text = (data or manifest.read_bytes()).decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or not _safe(rel):
            problems.append(f"{MANIFEST} line {n} is malformed: {line!r}")
            continue
        expected[rel] = digest
    present = [rel for rel in expected if (root / rel).is_file()]
    problems += [f"{rel}: missing" for rel in expected if rel not in present]
    digests = sha256_many([root / rel for rel in present])
    for rel in present:
        actual = digests[root / rel]
        if actual != expected[rel]:
            problems.append(f"{rel}: sha256 {actual}, the manifest says {expected[rel]}")
    for folder in (WHEELS, TOOL):
        # every file below (the wheels' records in wheels/.wh-natives/ too); a folder
        # stands for its files, anything else unlisted is refused
        for p in sorted((root / folder).rglob("*")):
            if p.is_dir() and not p.is_symlink():
                continue
            rel = p.relative_to(root).as_posix()
            if rel not in expected:
                problems.append(f"{rel}: not in the manifest")
    # what decides the install must be listed (so, in a signed bundle, signed): bundle.txt
    # and the lock it names; the lock pins every wheel by sha256
    if INFO not in expected:
        problems.append(f"{INFO}: not in the manifest")
    else:
        lock = read_info(root).get("lock", "")
        if lock and lock not in expected:
            problems.append(f"{lock}: the lock {INFO} names is not in the manifest")
    if problems:
        raise BundleError(root, "manifest-mismatch", problems=problems)
    return len(expected)


def _safe(rel: str) -> bool:
    return entry_problem(rel) is None


def entry_problem(rel: str) -> str | None:
    """Why a bundle entry or manifest path must not be written, on any OS, or None.

    ``PurePosixPath`` alone is not enough: ``C:/x`` and ``C:x`` are not absolute to it, yet
    Windows writes them outside the folder; reserved names, ``:`` (alternate data
    streams) and trailing dots or spaces are refused too, since a bundle is made to be
    unpacked on Windows."""
    name = rel.rstrip("/")
    if not name:
        return "is empty"
    return portable.path_problem(name, windows=True)


# what the zip and tar readers raise on a damaged or cut-short archive (a gzip stream cut
# short is an EOFError, a bad one gzip.BadGzipFile, an OSError, like bz2's and lzma's)
_DAMAGED = (
    zipfile.BadZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    RuntimeError,
    ValueError,
)


def extract(archive: Path, dest: Path) -> None:
    """Unpack a zip or tar, refusing absolute paths, drive letters, ``..``, Windows-reserved
    or stream names, links and special files, and names given twice (or to a file and a
    folder, case-folded as Windows compares them). Every entry is checked before the first
    is written, so a refused archive leaves ``dest`` as it was; one that turns out damaged
    while it is read is refused (``damaged-archive``) with what was unpacked left in
    ``dest``, the caller's temporary folder."""
    try:
        _extract(archive, dest)
    except _DAMAGED as exc:
        problem = f"{type(exc).__name__}: {exc}"
        raise BundleError(archive, "damaged-archive", problem=problem) from exc
    except OSError as exc:
        if exc.filename is not None and Path(exc.filename).is_relative_to(dest):
            raise  # writing what was unpacked (a full disk): the OS's own error
        problem = f"{type(exc).__name__}: {exc}"
        raise BundleError(archive, "damaged-archive", problem=problem) from exc


def _extract(archive: Path, dest: Path) -> None:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            _unpack(
                archive,
                dest,
                [
                    _Entry(
                        zi.filename,
                        zi.is_dir(),
                        "is a symlink" if stat.S_ISLNK(zi.external_attr >> 16) else None,
                        partial(zf.open, zi),
                    )
                    for zi in zf.infolist()
                ],
            )
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            _unpack(
                archive,
                dest,
                [
                    _Entry(
                        ti.name,
                        ti.isdir(),
                        None if ti.isfile() or ti.isdir() else "is a link or a special file",
                        partial(tf.extractfile, ti),
                    )
                    for ti in tf.getmembers()
                ],
            )
    else:
        raise BundleError(archive, "not-an-archive")


@dataclass(frozen=True)
class _Entry:
    """One entry of a zip or a tar: its name, whether it is a folder, why its kind is
    refused (a link, a special file) or None, and how to read a file's bytes."""

    name: str
    is_dir: bool
    refused_kind: str | None
    opener: Callable[[], IO[bytes] | None]


def _unpack(archive: Path, dest: Path, entries: Sequence[_Entry]) -> None:
    """Every entry checked, then every one written below ``dest``."""
    bad: list[str] = []
    seen: dict[str, bool] = {}  # each case-folded name: whether it is a folder
    for e in entries:
        why = entry_problem(e.name) or e.refused_kind
        if why:
            bad.append(f"{e.name!r}: {why}")
            continue
        key = e.name.rstrip("/").casefold()
        if key in seen and not (e.is_dir and seen[key]):
            bad.append(f"{e.name!r}: is in the archive twice (names compared case-folded)")
        seen[key] = e.is_dir or seen.get(key, False)
    folders = {"/".join(k.split("/")[:i]) for k in seen for i in range(1, k.count("/") + 1)}
    bad += [
        f"{k!r}: is a file and the folder of other entries"
        for k in sorted(folders)
        if seen.get(k) is False
    ]
    _refuse(archive, bad)
    for e in entries:
        out = dest / e.name
        if e.is_dir:
            out.mkdir(parents=True, exist_ok=True)
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        member = e.opener()
        if member is None:
            raise BundleError(archive, "unreadable-entry", member=e.name)
        with member, out.open("wb") as dst:
            shutil.copyfileobj(member, dst, 1 << 20)


def _refuse(archive: Path, bad: list[str]) -> None:
    if bad:
        raise BundleError(archive, "unsafe-entries", problems=bad)

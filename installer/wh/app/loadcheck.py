"""The load check: whether every compiled member of a lock finds the libraries it needs.

Pure: it takes what each distribution of the target ships and needs (``Unit``, read by
``natives``) and what the platform provides (``platformlibs.Platform``), and returns a
``LoadReport``: who meets each need, and every problem at once (a library nothing
provides, a symbol version past the target's manylinux policy, an unreadable binary, a
kernel built by ``wh build`` against another torch), each with what the lock provides
instead and fixes that can work. The IO (reading wheels, caching, the live target) is in
``loadscan``.
"""

from __future__ import annotations

import base64
import functools
import posixpath
import re
import sys
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from packaging.requirements import Requirement
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from wh.env.platformlibs import Platform, policy_allowing, system_package, version_key
from wh.model.loadkinds import BinaryFormat, Origin, ProblemKind, Provider
from wh.wheel.natives import Binary, Natives, iter_needs


@dataclass(frozen=True)
class BuiltAgainst:
    """What a ``wh build`` record says a wheel was compiled against."""

    torch: str  # the full version, local label included: 2.9.1+cu130
    cuda: str = ""  # "13.0"
    recipe: str = ""


@dataclass(frozen=True)
class Unit:
    """A distribution the target will have: from the lock, or installed and kept."""

    name: NormalizedName
    version: str
    origin: Origin
    natives: Natives | None  # None: its files are unknown (protected on a declared target)
    requires: tuple[Requirement, ...] = ()
    built: BuiltAgainst | None = None
    wheel: str = ""  # the wheel's filename, where it comes from one

    @functools.cached_property
    def label(self) -> str:
        return f"{self.name} {self.version}"


_PROVIDERS = {p.value: p for p in Provider}


def _need_json(package: str, member: str, library: str, by: str, delay: bool) -> dict[str, Any]:
    """One need and who meets it, as JSON (a met need and a ``why --libraries`` row)."""
    out: dict[str, Any] = {"package": package, "member": member, "library": library, "by": by}
    if delay:
        out["delay-load"] = True
    return out


class Met(NamedTuple):
    """One need of one member, and who meets it. A named tuple, not a dataclass: a warm
    re-lock builds a few thousand from the result cache, at a fifth of the cost."""

    package: str
    member: str
    library: str
    by: str  # the phrase: which wheel and member, or which part of the platform
    source: Provider
    delay: bool = False

    def to_json(self) -> dict[str, Any]:
        return _need_json(self.package, self.member, self.library, self.by, self.delay)


@dataclass(frozen=True)
class LoadProblem:
    """Why part of the lock cannot load, with what the lock has instead and the fixes."""

    kind: ProblemKind
    package: str  # "name version"
    member: str
    subject: str  # the library, symbol version or torch build in question
    message: str
    instead: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    wheel: str = ""

    def render(self) -> list[str]:
        lines = [self.message]
        if self.wheel:
            lines.append(f"    in {self.wheel}")
        lines.extend(f"    the lock has instead: {i}" for i in self.instead)
        lines.extend(f"    fix: {f}" for f in self.fixes)
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "package": self.package,
            "member": self.member,
            "subject": self.subject,
            "message": self.message,
            "instead": list(self.instead),
            "fixes": list(self.fixes),
            "wheel": self.wheel,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoadProblem:
        return cls(
            ProblemKind(data["kind"]),
            str(data["package"]),
            str(data["member"]),
            str(data["subject"]),
            str(data["message"]),
            tuple(str(i) for i in data["instead"]),
            tuple(str(f) for f in data["fixes"]),
            str(data["wheel"]),
        )


@dataclass(frozen=True)
class LibraryNeed:
    """One need of a package's compiled members and who meets it (``wh why --libraries``):
    met (``by`` names who), allowed missing (``by``: the reason), or a problem."""

    package: str
    member: str
    library: str  # for a problem, its subject (a library, symbol version or torch build)
    by: str  # "" for a problem
    problem: str = ""  # the problem's message: the need is not met
    delay: bool = False

    @property
    def ok(self) -> bool:
        return not self.problem

    def to_json(self) -> dict[str, Any]:
        out = _need_json(self.package, self.member, self.library, self.by, self.delay)
        out["ok"] = self.ok
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True)
class LoadReport:
    platform: str
    met: tuple[Met, ...] = ()
    problems: tuple[LoadProblem, ...] = ()
    warnings: tuple[str, ...] = ()
    allowed: tuple[tuple[str, str, str], ...] = ()  # (library, reason, needed by)
    binaries: int = 0
    # unmet needs of members nothing links to (only a dlopen at run time loads them): each
    # is listed, and warned of per package, but does not refuse the lock
    unlinked: tuple[LoadProblem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "binaries": self.binaries,
            "needs-met": len(self.met),
            "problems": [p.to_json() for p in self.problems],
            "warnings": list(self.warnings),
            "allowed-missing": [
                {"library": lib, "reason": why, "needed-by": by} for lib, why, by in self.allowed
            ],
            "unlinked": [p.to_json() for p in self.unlinked],
        }

    def needs_of(self, label: str) -> tuple[LibraryNeed, ...]:
        """What the package ``label`` ("name version") needs: met, then problems, then the
        unmet needs of members nothing links to, then allowed missing."""
        return (
            *(
                LibraryNeed(m.package, m.member, m.library, m.by, delay=m.delay)
                for m in self.met
                if m.package == label
            ),
            *(
                LibraryNeed(p.package, p.member, p.subject, "", p.message)
                for p in self.problems
                if p.package == label
            ),
            *(
                LibraryNeed(p.package, p.member, p.subject, "", f"{p.message} ({UNLINKED})")
                for p in self.unlinked
                if p.package == label
            ),
            *(
                LibraryNeed(label, "", lib, f"allowed: {why}")
                for lib, why, by in self.allowed
                if label in by.split(", ")
            ),
        )

    def to_cache(self) -> dict[str, Any]:
        """Everything, for the result cache (``from_cache`` gives an equal report)."""
        # each met need as six numbers: its package, member, library and phrase as indexes
        # into one table of strings (they recur across hundreds of needs), its provider as
        # an index into the providers named, and whether it is delay-loaded; all of them
        # in one little-endian array, base64 in the JSON: a warm re-lock decodes it in C
        # instead of parsing thousands of small lists
        strings: dict[str, int] = {}
        providers: dict[Provider, int] = {}

        def at(text: str) -> int:
            return strings.setdefault(text, len(strings))

        flat: list[int] = []
        for m in self.met:
            flat += (at(m.package), at(m.member), at(m.library), at(m.by))
            flat += (providers.setdefault(m.source, len(providers)), int(m.delay))
        width = "H" if len(strings) <= 0xFFFF else "I"
        packed = array(width, flat)
        if sys.byteorder == "big":
            packed.byteswap()
        return {
            "platform": self.platform,
            "binaries": self.binaries,
            "strings": list(strings),
            "providers": [p.value for p in providers],
            "met": {"width": width, "data": base64.b64encode(packed.tobytes()).decode("ascii")},
            "problems": [p.to_json() for p in self.problems],
            "warnings": list(self.warnings),
            "allowed": [list(a) for a in self.allowed],
            "unlinked": [p.to_json() for p in self.unlinked],
        }

    @classmethod
    def from_cache(cls, data: Mapping[str, Any]) -> LoadReport:
        """The report ``to_cache`` wrote (``KeyError``, ``TypeError``, ``ValueError`` or
        ``IndexError`` where the data is not one: the caller checks again)."""
        text = [str(t) for t in data["strings"]]
        provider = [_PROVIDERS[str(v)] for v in data["providers"]]
        width = data["met"]["width"]
        if width not in ("H", "I"):
            raise ValueError(f"met needs stored as {width!r}")
        flat = array(width)
        flat.frombytes(base64.b64decode(data["met"]["data"], validate=True))
        if sys.byteorder == "big":
            flat.byteswap()
        if len(flat) % 6:
            raise ValueError("met needs cut short")
        delays = flat[5::6]
        if not set(delays) <= {0, 1}:
            raise ValueError("a delay-load flag other than 0 or 1")
        get = text.__getitem__
        met = map(
            _MAKE_MET,
            zip(
                map(get, flat[0::6]),
                map(get, flat[1::6]),
                map(get, flat[2::6]),
                map(get, flat[3::6]),
                map(provider.__getitem__, flat[4::6]),
                map(bool, delays),
                strict=True,
            ),
        )
        return cls(
            str(data["platform"]),
            tuple(met),
            tuple(LoadProblem.from_json(p) for p in data["problems"]),
            tuple(str(w) for w in data["warnings"]),
            tuple((str(a), str(b), str(c)) for a, b, c in data["allowed"]),
            int(data["binaries"]),
            tuple(LoadProblem.from_json(p) for p in data["unlinked"]),
        )


# a met need from its six fields, in one C call (the named tuple's own ``_make`` and
# ``__new__`` are Python functions: a warm re-lock builds a few thousand)
_MAKE_MET = functools.partial(tuple.__new__, Met)


@dataclass
class _Index:
    """Every library file the target will have, by installed path and by name."""

    paths: dict[str, Unit] = field(default_factory=dict)
    names: dict[str, list[tuple[Unit, str]]] = field(default_factory=dict)
    needers: dict[str, list[str]] = field(default_factory=dict)  # name -> "pkg version"
    _stems: dict[str, list[str]] | None = None

    def same_stem(self, name: str) -> list[str]:
        """The library names with ``name``'s stem (libcudart.so.12 for libcudart.so.13)."""
        if self._stems is None:
            self._stems = {}
            for n in sorted(self.names):
                self._stems.setdefault(_stem(n), []).append(n)
        return self._stems.get(_stem(name), [])


def _key(name: str, windows: bool) -> str:
    return name.lower() if windows else name


def _index(units: Iterable[Unit], windows: bool) -> _Index:
    idx = _Index()
    for u in units:
        if u.natives is None:
            continue
        for path in u.natives.libraries:
            idx.paths.setdefault(_key(path, windows), u)
            base = _key(path.rsplit("/", 1)[-1], windows)
            idx.names.setdefault(base, []).append((u, path))
        for b in u.natives.binaries:
            if b.soname:
                idx.names.setdefault(_key(b.soname, windows), []).append((u, b.member))
            for lib, _delay in iter_needs(b):
                who = idx.needers.setdefault(_key(lib, windows), [])
                if u.label not in who:
                    who.append(u.label)
    return idx


# libraries whose soname version is the CUDA major (cufft, curand, cusolver, cusparse and
# cudnn version their sonames on their own: libcufft.so.11 ships with CUDA 12)
_CUDA_ELF = re.compile(r"lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.(\d+)")
_CUDA_DLL = re.compile(r"(cudart|cublas|cublaslt|nvrtc|nvjitlink)(?:64)?_(\d+)", re.I)


@functools.lru_cache(maxsize=4096)  # asked once per need of every binary checked
def cuda_major(library: str) -> int | None:
    """The CUDA major version a library name belongs to (libcudart.so.13 -> 13,
    cudart64_12.dll -> 12, nvrtc64_120_0.dll -> 12), or None."""
    m = _CUDA_ELF.fullmatch(library) or _CUDA_DLL.match(library)
    if not m:
        return None
    digits = m.group(2)
    n = int(digits[:2]) if len(digits) >= 3 else int(digits)
    return n if 9 <= n <= 99 else None


def _stem(library: str) -> str:
    """A library's name without its version: libcudart.so.13 -> libcudart.so,
    cudart64_13.dll -> cudart64."""
    low = library.lower()
    if low.endswith(".dll"):
        return re.sub(r"(_\d+)+$|\d+$", "", low[:-4])
    return re.sub(r"(\.so)(\.\d+)+$", r"\1", library)


def torch_cuda(torch: Unit | None) -> tuple[int | None, str]:
    """The CUDA major a torch build uses, and how that is known."""
    if torch is None:
        return None, ""
    m = re.search(r"\+cu(\d+)", torch.version)
    if m:
        digits = m.group(1)
        return int(digits[:-1]), f"its version label +cu{digits}"
    if torch.natives is not None:
        for b in torch.natives.binaries:
            for lib, _ in iter_needs(b):
                major = cuda_major(lib)
                if major is not None:
                    return major, f"it needs {lib}"
    return None, ""


_EXTENSION = re.compile(r"\.(cpython-[^./]+|abi3|cp\d+[^./]*|pypy[^./]*)\.so$")


def is_extension_module(member: str) -> bool:
    """Whether Python imports the member as a module (what ``import`` loads first): a
    ``.pyd``, a ``.so`` with an interpreter or abi3 suffix, or a plain ``name.so`` that is
    not named like a library (``libfoo.so``, ``foo.so.1``)."""
    base = member.rsplit("/", 1)[-1]
    if base.lower().endswith(".pyd"):
        return True
    if _EXTENSION.search(base):
        return True
    return base.endswith(".so") and base.count(".") == 1 and not base.startswith("lib")


@dataclass(frozen=True)
class _Resolved:
    library: str
    delay: bool
    by: str | None  # None: nothing provides it
    source: Provider | None = None  # who: None where nothing provides it
    provider: tuple[str, str] | None = None  # (unit name, member) of the library found


def check(
    units: Iterable[Unit],
    platform: Platform,
    allow_missing: Mapping[str, str] | None = None,
    torch_outside: Unit | None = None,
) -> LoadReport:
    """Resolve every need of every locked unit's binaries (see the module docstring).
    ``torch_outside`` is the torch a live target has installed where the lock names none
    (nothing locked requires it): a kernel built against torch is compared with that one.

    A need nothing meets is a problem where ``import`` would reach the binary: from an
    extension module, through the libraries its needs resolve to. A library nothing links
    to is loaded only by a ``dlopen`` at run time, if ever (libcufile_rdma.so.1 of
    nvidia-cufile needs InfiniBand libraries): its unmet needs are warnings.
    """
    units = [_for_machine(u, platform.machine) for u in units]
    windows = platform.os == "windows"
    idx = _index(units, windows)
    by_name = {u.name: u for u in units}
    torch = by_name.get(NormalizedName("torch")) or torch_outside
    cuda = torch_cuda(torch)  # once: it may read every need of torch's binaries
    unknown = [u for u in units if u.natives is None]
    allow = {_key(k, windows): v for k, v in (allow_missing or {}).items()}
    resolved: dict[tuple[str, str], list[_Resolved]] = {}
    binaries: dict[tuple[str, str], tuple[Unit, Binary]] = {}
    # a need's answer depends on the unit, the library and the folders searched (an ELF
    # binary's $ORIGIN folders, a DLL's own folder), not on which of its binaries asks:
    # the libraries of one wheel mostly share both, so each is resolved once per unit
    answers: dict[tuple[int, object], dict[tuple[str, bool], _Resolved]] = {}
    for u in units:
        for b in u.natives.binaries if u.natives else ():
            binaries[(u.name, b.member)] = (u, b)
            if not b.problem:
                macho = b.format == BinaryFormat.MACHO
                dirs = _macho_dirs(b) if macho else () if windows else _origin_dirs(b)
                same = answers.setdefault(
                    (id(u), posixpath.dirname(b.member) if windows else dirs), {}
                )
                out = []
                for need in iter_needs(b):
                    r = same.get(need)
                    if r is None:
                        r = same[need] = _resolve(u, b, *need, idx, platform, windows, dirs)
                    out.append(r)
                resolved[(u.name, b.member)] = out
    # what `import` reaches: extension modules of the lock, then what their needs resolve to
    reach: set[tuple[str, str]] = set()
    todo = [
        k
        for k, (u, b) in binaries.items()
        if u.origin == Origin.LOCKED and is_extension_module(b.member)
    ]
    while todo:
        k = todo.pop()
        if k in reach:
            continue
        reach.add(k)
        todo.extend(r.provider for r in resolved.get(k, ()) if r.provider in binaries)
    met: list[Met] = []
    problems: list[LoadProblem] = []
    unlinked: list[LoadProblem] = []
    warnings: list[str] = []
    allowed: dict[str, tuple[str, list[str]]] = {}
    foreign: dict[str, list[str]] = {}
    count = 0
    for key, (u, b) in binaries.items():
        if u.origin != Origin.LOCKED:
            continue
        count += 1
        if b.problem:
            problems.append(replace(_unreadable(u, b), wheel=u.wheel))
            continue
        if b.slices:  # a universal file without the target's architecture
            machines = ", ".join(x.machine for x in b.slices)
            problems.append(_other_machine(u, b, machines, machines, platform))
            continue
        if platform.machine and _machine(b) and _machine(b) != platform.machine:
            if key not in reach:  # a cross-compilation stub nothing links to is data
                foreign.setdefault(u.label, []).append(f"{b.member} ({_machine(b)})")
                continue
            problems.append(_other_machine(u, b, b.machine, _machine(b), platform))
            continue
        found: list[LoadProblem] = []
        for r in resolved[key]:
            if r.by is not None and r.source is not None:
                met.append(Met(u.label, b.member, r.library, r.by, r.source, r.delay))
                continue
            lib_key = _key(r.library, windows)
            if lib_key in allow:
                entry = allowed.setdefault(lib_key, (allow[lib_key], []))
                if u.label not in entry[1]:
                    entry[1].append(u.label)
                continue
            if unknown:
                names = ", ".join(x.label for x in unknown)
                warnings.append(
                    f"{u.label}: {b.member} needs {r.library}: not in the lock or the platform; "
                    f"{names} may provide it (its files are unknown for this target)"
                )
                continue
            found.append(_missing(u, b, r.library, r.delay, idx, torch, cuda, platform))
        if platform.symbol_versions or platform.musl:
            on_platform = {
                r.library for r in resolved[key] if r.source is not None and r.source.on_platform
            }
            found.extend(_too_new(u, b, on_platform, platform))
        if platform.macos and b.min_os and version_key(b.min_os) > version_key(platform.macos):
            if _macos_level(b.min_os) > _macos_level(platform.macos):
                found.append(_newer_macos(u, b, platform))
            else:  # within the release the tag names: which update the target runs is unknown
                warnings.append(
                    f"{u.label}: {b.member} is built for macOS {b.min_os}; the target's tag "
                    f"stands for any macOS {_macos_level(platform.macos)[0]}: on one older than "
                    f"{b.min_os} it may not load"
                )
        for lib in b.weak:
            r = _resolve(u, b, lib, False, idx, platform, windows, _macho_dirs(b))
            if r.by is not None and r.source is not None:
                met.append(Met(u.label, b.member, lib, r.by, r.source, False))
            elif lib in allow:
                allowed.setdefault(lib, (allow[lib], []))[1].append(u.label)
            else:
                warnings.append(
                    f"{u.label}: {b.member} links {lib} weakly, and nothing provides it "
                    f"({platform.description}): it loads without it, and what it calls of it "
                    "is missing"
                )
        found = [replace(p, wheel=u.wheel) for p in found]
        (problems if key in reach else unlinked).extend(found)
    warnings.extend(_unlinked_warnings(unlinked, platform))
    for label, members in foreign.items():
        warnings.append(
            f"{label}: {len(members)} member(s) built for another machine, which nothing links "
            f"to (not loaded on {platform.machine}): {', '.join(members[:3])}"
            + (", ..." if len(members) > 3 else "")
        )
    for u in units:
        if u.origin == Origin.LOCKED:
            problems.extend(replace(p, wheel=u.wheel) for p in _torch_build(u, torch))
            warnings.extend(_inferred(u, torch, cuda))
    return LoadReport(
        platform.description,
        tuple(met),
        tuple(problems),
        tuple(dict.fromkeys(warnings)),
        tuple((lib, why, ", ".join(by)) for lib, (why, by) in sorted(allowed.items())),
        count,
        tuple(unlinked),
    )


UNLINKED = "nothing links to it: only a dlopen at run time loads it"


def _unlinked_warnings(unlinked: Iterable[LoadProblem], platform: Platform) -> list[str]:
    """One warning per package for the unmet needs of its members that nothing links to: a
    single need as it is, several as the list of what they need (an optional plug-in set,
    such as torchcodec's builds for five FFmpeg versions, is dozens of needs); ``wh why
    NAME --libraries`` and ``--json`` list each by member."""
    by_package: dict[str, list[LoadProblem]] = {}
    for p in unlinked:
        by_package.setdefault(p.package, []).append(p)
    out = []
    for package, found in by_package.items():
        if len(found) == 1:
            p = found[0]
            out.append(
                f"{p.message} (nothing links to {p.member}: only a dlopen at run time loads it)"
            )
            continue
        members = dict.fromkeys(p.member for p in found)
        subjects = dict.fromkeys(p.subject for p in found)
        out.append(
            f"{package}: {len(members)} member(s) that nothing links to (only a dlopen at run "
            f"time loads them) have {len(found)} unmet need(s) on {platform.description}: "
            f"{', '.join(subjects)}; `wh why {package.split(' ', 1)[0]} --libraries` lists "
            "them by member"
        )
    return out


def _other_machine(
    u: Unit, b: Binary, subject: str, built_for: str, platform: Platform
) -> LoadProblem:
    """The problem of a binary built for another machine (``built_for``) than the target's."""
    return LoadProblem(
        ProblemKind.MACHINE,
        u.label,
        b.member,
        subject,
        f"{u.label}: {b.member} is built for {built_for}, the target is "
        f"{platform.machine or 'another machine'}",
        fixes=(f"a wheel of {u.name} built for {platform.machine}",),
        wheel=u.wheel,
    )


def _machine(b: Binary) -> str:
    return _MACHINE.get(b.machine, "")


# a binary's machine as each format names it -> the platform's name for it
_MACHINE = {"x86_64": "x86_64", "aarch64": "aarch64", "386": "i686", "amd64": "x86_64"}
_MACHINE.update({"arm64": "aarch64", "i386": "i686"})
# ELF's names of the other machines manylinux knows (EM_PPC64 of either byte order: only
# little-endian ppc64le has wheels)
_MACHINE.update(
    {"ppc64": "ppc64le", "s390": "s390x", "arm": "armv7l", "riscv": "riscv64"}
    | {"loongarch": "loongarch64"}
)


def _for_machine(u: Unit, machine: str) -> Unit:
    """``u`` with each universal Mach-O file as its slice for ``machine``, the one dyld
    loads there (kept whole where it has none: the check refuses it as built for another
    machine)."""
    if u.natives is None or not any(b.slices for b in u.natives.binaries):
        return u
    out = []
    for b in u.natives.binaries:
        match = [x for x in b.slices if _MACHINE.get(x.machine) == machine]
        out.append(match[0] if match else b)
    return replace(u, natives=replace(u.natives, binaries=tuple(out)))


def _macho_dirs(b: Binary) -> tuple[tuple[str, str], ...]:
    """A Mach-O binary's ``@loader_path`` (its own folder), then its ``LC_RPATH`` entries
    that name a folder of the target's site-packages (``@loader_path/...``), as (the
    entry, the folder). Once per binary, not per need."""
    here = posixpath.dirname(b.member)
    return (("@loader_path", here), *_relative(here, b.rpath, "@loader_path"))


def _relative(
    here: str, entries: Iterable[str], token: str, spelt: str = ""
) -> tuple[tuple[str, str], ...]:
    """The search-path ``entries`` that start from the binary's folder ``here`` (``token``:
    ``$ORIGIN``, ``@loader_path``; ``spelt``: another spelling of it), as (the entry, the
    folder within the wheel); the others (absolute, the interpreter's) are not of the lock."""
    out = []
    for entry in entries:
        folder = entry.replace(spelt, token) if spelt else entry
        if folder == token or folder.startswith(token + "/"):
            rest = folder[len(token) :].lstrip("/")
            out.append((entry, posixpath.normpath(posixpath.join(here, rest))))
    return tuple(out)


def _resolve_macho(
    u: Unit,
    lib: str,
    delay: bool,
    idx: _Index,
    platform: Platform,
    dirs: tuple[tuple[str, str], ...],
) -> _Resolved:
    """Who meets one dylib a Mach-O binary links, as dyld looks: ``@loader_path/X`` in the
    binary's folder, ``@rpath/X`` in each of its rpath folders; then an image already
    loaded under that install name (another wheel's ``@rpath/libc10.dylib``, once torch
    loaded it); then macOS's own libraries. An ``@executable_path`` (the interpreter's
    folder) or an absolute path outside macOS is not of the lock."""
    tries: list[tuple[str, str]] = []
    if lib.startswith("@loader_path/"):
        tries = [("@loader_path", posixpath.join(dirs[0][1], lib[len("@loader_path/") :]))]
    elif lib.startswith("@rpath/"):
        rest = lib[len("@rpath/") :]
        tries = [(entry, posixpath.join(folder, rest)) for entry, folder in dirs[1:]]
    for entry, path in tries:
        full = posixpath.normpath(path)
        found = idx.paths.get(full)
        if found is not None:
            how = f"via rpath {entry}" if lib.startswith("@rpath/") else "via @loader_path"
            return _file(u, lib, delay, found, full, f" {how} ({full})")
    named = _by_name(u, lib, delay, lib, idx, ", by install name: once loaded")
    return named or _on_platform(lib, delay, platform)


def _macos_level(version: str) -> tuple[int, ...]:
    """What a platform tag can tell of a macOS version: from macOS 11 on its major only
    (``macosx_13_0`` stands for every 13.x), before it 10 and the minor."""
    key = version_key(version)
    return key[:1] if key[0] >= 11 else key[:2]


def _newer_macos(u: Unit, b: Binary, platform: Platform) -> LoadProblem:
    level = _macos_level(b.min_os)
    arch = {"aarch64": "arm64"}.get(platform.machine, platform.machine)
    tag = f"macosx_{level[0]}_{level[1] if len(level) > 1 else 0}_{arch}"
    return LoadProblem(
        ProblemKind.OS_VERSION,
        u.label,
        b.member,
        f"macOS {b.min_os}",
        f"{u.label}: {b.member} needs macOS {b.min_os}, newer than the target "
        f"({platform.description}) runs",
        fixes=(
            f"a wheel of {u.name} built for macOS {platform.macos} or older",
            f"if the target runs macOS {b.min_os} or later, lock for it: --platform {tag}",
        ),
    )


def _origin_dirs(b: Binary) -> tuple[tuple[str, str], ...]:
    """The folders an ELF binary's ``$ORIGIN`` search path names, in its order, as (the
    entry, the folder within the wheel): glibc takes ``DT_RUNPATH`` when present instead of
    ``DT_RPATH``, and ``$ORIGIN`` is the member's own folder. Once per binary, not per need."""
    here = posixpath.dirname(b.member)
    return _relative(here, b.runpath or b.rpath, "$ORIGIN", "${ORIGIN}")


def _resolve(
    u: Unit,
    b: Binary,
    lib: str,
    delay: bool,
    idx: _Index,
    platform: Platform,
    windows: bool,
    dirs: tuple[tuple[str, str], ...],
) -> _Resolved:
    """Who meets one need of one binary; ``dirs``: its ``$ORIGIN`` folders
    (``_origin_dirs``, for an ELF binary; ``_macho_dirs`` for a Mach-O one)."""
    if b.format == BinaryFormat.MACHO:
        return _resolve_macho(u, lib, delay, idx, platform, dirs)
    key = _key(lib, windows)
    if not windows:
        for entry, path in dirs:
            full = posixpath.join(path, lib) if path != "." else lib
            found = idx.paths.get(full)
            if found is not None:
                return _file(u, lib, delay, found, full, f" via rpath {entry} ({full})")
    else:
        # Windows: a DLL of the same name already loaded is used wherever it lies, and the
        # interpreter's own (python3XX.dll, its VC runtime) always are: a copy of
        # python312.dll shipped in a wheel (torchvision's) is not what is loaded
        on_platform = platform.provides(lib)
        if on_platform is not None and on_platform[0] == Provider.INTERPRETER:
            return _Resolved(lib, delay, on_platform[1], on_platform[0])
        # then the importing module's own folder
        here = posixpath.dirname(b.member)
        full = posixpath.join(here, lib) if here else lib
        found = idx.paths.get(_key(full, windows))
        if found is not None:
            return _file(u, lib, delay, found, full, ", beside it")
    named = _by_name(u, lib, delay, key, idx, "" if windows else ", by name: once loaded")
    return named or _on_platform(lib, delay, platform)


def _file(u: Unit, lib: str, delay: bool, found: Unit, full: str, how: str) -> _Resolved:
    """``lib`` met by the file ``full`` of ``found`` (``u`` itself or another unit), found
    ``how`` ("via rpath $ORIGIN (...)", ", beside it")."""
    where = "this wheel" if found is u else found.label
    return _Resolved(lib, delay, f"{where}{how}", _source(u, found), (found.name, full))


def _by_name(u: Unit, lib: str, delay: bool, key: str, idx: _Index, note: str) -> _Resolved | None:
    """``lib`` met by a library of that name (or soname, install name) in the lock or the
    kept distributions, ``u``'s own first; None where none has it."""
    providers = idx.names.get(key, [])
    if not providers:
        return None
    own = [p for p in providers if p[0] is u]
    unit, path = (own or providers)[0]
    where = "this wheel" if unit is u else f"{unit.label} ({unit.origin})"
    return _Resolved(lib, delay, f"{where}: {path}{note}", _source(u, unit), (unit.name, path))


def _on_platform(lib: str, delay: bool, platform: Platform) -> _Resolved:
    found = platform.provides(lib)
    return (
        _Resolved(lib, delay, None) if found is None else _Resolved(lib, delay, found[1], found[0])
    )


def _source(needer: Unit, found: Unit) -> Provider:
    """Which distribution meets a need of ``needer``'s with a library of ``found``'s."""
    if found is needer:
        return Provider.SAME_WHEEL
    return Provider.OTHER_WHEEL if found.origin == Origin.LOCKED else Provider.INSTALLED


def _instead(lib: str, idx: _Index, windows: bool) -> list[str]:
    out = []
    for name in idx.same_stem(_key(lib, windows)):
        if name == _key(lib, windows):
            continue
        unit = idx.names[name][0][0]
        who = idx.needers.get(name, [])
        needed = f", needed by {', '.join(who)}" if who else ""
        out.append(f"{name} from {unit.label}{needed}")
    return out


def _missing(
    u: Unit,
    b: Binary,
    lib: str,
    delay: bool,
    idx: _Index,
    torch: Unit | None,
    cuda: tuple[int | None, str],
    platform: Platform,
) -> LoadProblem:
    """The problem of a need nothing meets; ``cuda``: ``torch_cuda(torch)``."""
    windows = platform.os == "windows"
    instead = _instead(lib, idx, windows)
    fixes: list[str] = []
    need_major = cuda_major(lib)
    if need_major is not None:
        have, how = cuda
        if have is not None and have != need_major and torch is not None:
            fixes.append(f"a build of {u.name} for CUDA {have}, the CUDA of {torch.label} ({how})")
            fixes.append(
                f"build it against this torch: `wh build` its recipe in an environment with "
                f"{torch.label}"
            )
            fixes.append(
                f"or a torch built for CUDA {need_major} with its CUDA {need_major} libraries "
                "in the wheelhouse, and re-lock"
            )
        else:
            fixes.append(
                f"add the wheel that ships {lib} (the CUDA {need_major} libraries) to the "
                "wheelhouse, and re-lock"
            )
    elif platform.os == "darwin":
        name = posixpath.basename(lib)
        if lib.startswith("/"):  # a path on the machine that built it: no wheel installs there
            fixes.append(
                f"a wheel of {u.name} that ships {name} itself (delocate-wheel copies such a "
                "dylib into the wheel)"
            )
        else:
            rpaths = ", ".join(b.rpath) or "it has no rpath"
            where = rpaths if lib.startswith("@rpath/") else "@loader_path"
            fixes.append(
                f"a wheel that ships {name} where {b.member} looks for it ({where}), or a "
                f"wheel of {u.name} that ships it itself (delocate-wheel)"
            )
        fixes.append(f"if the target provides it another way: --allow-missing-library '{lib}=WHY'")
    else:
        pkg = system_package(lib, platform.musl) if platform.os == "linux" else ""
        if pkg:
            fixes.append(
                f"install {pkg} on the target, then lock with --allow-missing-library "
                f"'{lib}=installed from {pkg.split(' ')[0]}'"
            )
        else:
            fixes.append(f"add a wheel that ships {lib} to the wheelhouse, and re-lock")
            fixes.append(
                f"if the target provides {lib} another way: --allow-missing-library '{lib}=WHY'"
            )
    kind = "delay-loaded " if delay else ""
    where = "the lock, the installed distributions or the platform"
    return LoadProblem(
        ProblemKind.MISSING_LIBRARY,
        u.label,
        b.member,
        lib,
        f"{u.label}: {b.member} needs {kind}{lib}, which nothing in {where} provides "
        f"({platform.description})",
        tuple(instead),
        tuple(fixes),
    )


def _too_new(u: Unit, b: Binary, platform_libs: set[str], platform: Platform) -> list[LoadProblem]:
    out = []
    for lib, version in b.versions:
        if lib not in platform_libs or not platform.too_new(version):
            continue
        ns, _, v = version.partition("_")
        if platform.musl:
            why = (
                f": it was built against glibc, and musl ({platform.manylinux or 'musl'}) has "
                "no glibc symbol versions"
            )
            fixes = [f"a musllinux wheel of {u.name} (built against musl)"]
        else:
            why = f", newer than {platform.manylinux} allows (up to {ns}_{platform.newest(ns)})"
            fixes = [f"a wheel of {u.name} built for {platform.manylinux} (or older)"]
            newer = policy_allowing(ns, v, platform.machine)
            if newer:
                fixes.append(
                    f"if the target's glibc is new enough, lock for it: --platform "
                    f"{newer}_{platform.machine}"
                )
        out.append(
            LoadProblem(
                ProblemKind.SYMBOL_VERSION,
                u.label,
                b.member,
                version,
                f"{u.label}: {b.member} needs {version} from {lib}{why}",
                fixes=tuple(fixes),
            )
        )
    return out


def _unreadable(u: Unit, b: Binary) -> LoadProblem:
    return LoadProblem(
        ProblemKind.UNREADABLE,
        u.label,
        b.member,
        b.member,
        f"{u.label}: {b.member} cannot be read: {b.problem}",
        fixes=(
            f"replace the wheel of {u.name} (it is damaged, or not what its name says)",
            "--skip-load-check if you trust it as it is (recorded in the lock)",
        ),
    )


def _torch_build(u: Unit, torch: Unit | None) -> list[LoadProblem]:
    if u.built is None:
        return []
    built = u.built
    recipe = built.recipe or "its recipe"
    if torch is None:
        return [
            LoadProblem(
                ProblemKind.TORCH_BUILD,
                u.label,
                "",
                f"torch {built.torch}",
                f"{u.label} was built by `wh build` against torch {built.torch}, and the lock "
                "has no torch",
                fixes=(f"lock torch {built.torch} with it (or protect the installed one)",),
            )
        ]
    if torch.version == built.torch:
        return []
    return [
        LoadProblem(
            ProblemKind.TORCH_BUILD,
            u.label,
            "",
            f"torch {built.torch}",
            f"{u.label} was built by `wh build` against torch {built.torch}"
            + (f" (CUDA {built.cuda})" if built.cuda else "")
            + f"; the lock has torch {torch.version} ({torch.origin}): its C++ ABI is not "
            "the one the extension was compiled for",
            instead=(f"torch {torch.version} ({torch.origin})",),
            fixes=(
                f"rebuild it against this torch: `wh build {recipe}` in an environment with "
                f"torch {torch.version}",
                f"or keep torch {built.torch}: protect it (--protect 'torch=={built.torch}') "
                "or put that wheel in the wheelhouse",
            ),
        )
    ]


def _inferred(u: Unit, torch: Unit | None, cuda: tuple[int | None, str]) -> list[str]:
    """Warnings from what can be inferred about a wheel that has no build record;
    ``cuda``: ``torch_cuda(torch)``."""
    if u.built is not None or torch is None or u.name == "torch":
        return []
    out = []
    try:
        tv = Version(torch.version)
    except InvalidVersion:
        return []
    for r in u.requires:
        if r.name.lower() != "torch" or r.marker is not None:
            continue
        pins = [s for s in r.specifier if s.operator in ("==", "===")]
        if pins and not r.specifier.contains(tv, prereleases=True):
            out.append(
                f"{u.label} requires {r}, the lock has torch {torch.version}: it was likely "
                "built against another torch"
            )
    have, how = cuda
    if have is not None and u.natives is not None:
        needs = {lib for b in u.natives.binaries for lib, _ in iter_needs(b)}
        majors = {m for m in (cuda_major(lib) for lib in needs) if m is not None}
        for m in sorted(majors - {have}):
            libs = sorted(lib for lib in needs if cuda_major(lib) == m)
            out.append(
                f"{u.label} needs CUDA {m} libraries ({', '.join(libs)}); torch "
                f"{torch.version} uses CUDA {have} ({how})"
            )
    return out

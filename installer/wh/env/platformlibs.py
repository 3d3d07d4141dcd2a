"""What a target's platform gives the dynamic loader: manylinux policy libraries and symbol
versions (musllinux policy libraries on musl), the loader itself, the GPU driver, Windows
system DLLs, the MSVC runtime, the interpreter, and on a live target what its loader can
find (the ldconfig cache and the loader's system search path, musl's path file, PATH).

The facts are data (``wh/data/platform.json``, sources named in its ``about``);
this module only reads them and answers questions about one target.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from wh.model.loadkinds import Provider
from wh.model.target import Target
from wh.proc import spawn as proc

DATA = Path(__file__).parents[1] / "data" / "platform.json"


@lru_cache(maxsize=1)
def facts() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


_MACHINES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
_MACHINES.update({"x86": "i686", "i386": "i686", "i686": "i686"})
# the other machines manylinux and musllinux name (their platform_machine on Linux)
_MACHINES.update({m: m for m in ("ppc64le", "s390x", "armv7l", "riscv64", "loongarch64")})


@dataclass(frozen=True)
class Platform:
    """One target's platform, as the load check sees it."""

    os: str  # "linux", "windows" or another sys_platform
    machine: str  # normalized: x86_64, aarch64, i686
    python: str  # "3.12"
    # the newest policy the target's tags allow, e.g. "manylinux_2_28" or "musllinux_1_2"
    manylinux: str = ""
    libraries: frozenset[str] = frozenset()  # that policy's allowed system libraries
    symbol_versions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    found: Mapping[str, str] = field(default_factory=dict)  # name -> where the live loader has it
    libc: str = ""  # on Linux "musl" where the target's tags are musllinux ones, else glibc's
    macos: str = ""  # on macOS the newest version the target's tags name ("11.0")

    @property
    def musl(self) -> bool:
        return self.libc == "musl"

    @property
    def description(self) -> str:
        base = self.manylinux or (f"macOS {self.macos}" if self.macos else self.os)
        return f"{base} {self.machine}" + (" (live loader searched)" if self.found else "")

    def provides(self, library: str) -> tuple[Provider, str] | None:
        """Who on the platform provides ``library`` (which part, and a phrase), or None."""
        f = facts()
        if self.os == "linux":
            if library in _loaders(self.musl):
                return Provider.LOADER, "the dynamic loader" + (" (musl)" if self.musl else "")
            if library in f["linux-driver"]:
                return Provider.DRIVER, "the GPU driver"
            if library in self.libraries:
                return Provider.POLICY, f"the {self.manylinux} platform (policy)"
            if self.musl and _MUSL_ITSELF.match(library):
                return Provider.LOADER, "musl itself (its loader answers to this name)"
            if re.fullmatch(rf"libpython{re.escape(self.python)}\.so(\.\d+)*", library):
                return Provider.INTERPRETER, f"the Python {self.python} interpreter"
        elif self.os == "windows":
            low = library.lower()
            if low.startswith(("api-ms-win-", "ext-ms-")):
                return Provider.API_SET, "Windows (API set)"
            if low in f["windows-driver"]:
                return Provider.DRIVER, "the GPU driver"
            if low in ("python3.dll", f"python{self.python.replace('.', '')}.dll"):
                return Provider.INTERPRETER, f"the Python {self.python} interpreter"
            if low in f["windows-interpreter"]:
                return (
                    Provider.INTERPRETER,
                    f"the Python {self.python} interpreter (it ships the VC runtime)",
                )
            if low in f["msvc-runtime"]:
                return Provider.MSVC_RUNTIME, "the MSVC runtime (Visual C++ Redistributable)"
            if low in _windows_system(self.machine):
                return Provider.WINDOWS, "Windows (system DLL)"
            floor = windows_floor(self.python)
            if floor and low in _windows_system(self.machine, floor):
                return (
                    Provider.WINDOWS,
                    f"Windows {floor} or later (system DLL; CPython {self.python} needs Windows"
                    f" {floor})",
                )
        elif self.os == "darwin" and library.startswith(_MACOS_SYSTEM):
            return Provider.MACOS, "macOS (system library)"
        where = self.found.get(library.lower() if self.os == "windows" else library)
        if where:
            return Provider.SYSTEM, f"the target system ({where})"
        return None

    def too_new(self, version: str) -> bool:
        """Whether a symbol version (``GLIBC_2.29``) is past what the policy allows; on musl,
        which versions no symbol, any of glibc's."""
        ns, _, v = version.partition("_")
        if self.musl:
            return ns == "GLIBC"
        allowed = self.symbol_versions.get(ns)
        return allowed is not None and v not in allowed

    def newest(self, namespace: str) -> str:
        allowed = self.symbol_versions.get(namespace, frozenset())
        return max(allowed, key=version_key, default="")


# the names musl's loader answers itself, whatever follows the dot (ldso/dynlink.c: a
# request for libc, libpthread, librt, libm, libdl, libutil or libxnet is musl's own
# libc): musl has them all in one file
_MUSL_ITSELF = re.compile(r"lib(c|pthread|rt|m|dl|util|xnet)\.")


# where macOS keeps its own libraries and frameworks (in the dyld shared cache from macOS 11
# on): a dylib linked by such a path is the system's, as delocate takes it
_MACOS_SYSTEM = ("/usr/lib/", "/System/Library/")


def version_key(v: str) -> tuple[int, ...]:
    """A version's numbers, to order versions by ("2.17", "10.15", "8.1")."""
    return tuple(int(x) for x in re.findall(r"\d+", v)) or (0,)


# the oldest Windows each CPython release runs on (PEP 11: a release supports the Windows
# versions still in Microsoft's extended support when it comes out), newest first
_WINDOWS_FLOORS = (((3, 13), "10"), ((3, 9), "8.1"))


def windows_floor(python: str) -> str:
    """The oldest Windows that CPython ``python`` ("3.12") runs on, where it is newer than
    Windows 7 SP1 (every DLL of ``windows-system`` is there); "" for older releases or a
    version that does not parse."""
    try:
        version = tuple(int(x) for x in python.split(".")[:2])
    except ValueError:
        return ""
    return next((floor for since, floor in _WINDOWS_FLOORS if version >= since), "")


@lru_cache(maxsize=16)
def _windows_system(machine: str, floor: str = "") -> frozenset[str]:
    """The system DLLs of every Windows the target can be (of ``floor`` or later; every
    one from Windows 7 SP1 on without it): delvewheel's lists of what each Windows version's
    System32 (SysWOW64 for 32-bit) holds, intersected over those versions."""
    arch = {"x86_64": "amd64", "aarch64": "arm64", "i686": "i386"}.get(machine, "amd64")
    f = facts()
    names = set(f["windows-system"].get(arch, ()))
    if floor:
        # each floor adds what every version from it on has, to the floors before it
        for since, added in f["windows-system-since"].items():
            if version_key(since) <= version_key(floor):
                names.update(added.get(arch, ()))
    return frozenset(names)


def policy_allowing(namespace: str, version: str, machine: str) -> str:
    """The oldest manylinux policy whose symbol versions include ``namespace_version``."""
    for p in sorted(facts()["manylinux"], key=lambda p: p["glibc"]):
        if version in p["symbol-versions"].get(machine, {}).get(namespace, ()):
            return str(p["name"])
    return ""


def system_package(library: str, musl: bool = False) -> str:
    """The distribution packages that ship a system library, where wh knows them: glibc
    distributions' (Debian, Red Hat), or, for a musl target, Alpine's."""
    return str(facts()["system-packages-musl" if musl else "system-packages"].get(library, ""))


@lru_cache(maxsize=2)
def _loaders(musl: bool) -> frozenset[str]:
    """The names the dynamic loader answers to itself: glibc's ``ld-linux*`` and the
    kernel's vDSO, or musl's ``ld-musl-*`` (musl's libc is its loader) and the vDSO."""
    f = facts()
    vdso = {n for n in f["linux-loader"] if n.startswith("linux-")}
    return (
        frozenset(vdso | set(f["musl-loader"].values())) if musl else frozenset(f["linux-loader"])
    )


def _policy_level(target: Target, family: str) -> tuple[int, int] | None:
    """The newest ``family`` ("manylinux", "musllinux", "macosx") level among the target's
    tags."""
    best: tuple[int, int] | None = None
    for t in target.tags:
        m = re.fullmatch(rf"{family}_(\d+)_(\d+)_\w+", t.platform)
        if m:
            level = (int(m.group(1)), int(m.group(2)))
            best = level if best is None or level > best else best
    return best


def for_target(target: Target, found: Mapping[str, str] | None = None) -> Platform:
    """The platform of ``target``; ``found`` is what its live loader finds (see ``live``)."""
    markers = target.markers
    os_name = {"win32": "windows", "linux": "linux"}.get(markers.get("sys_platform", ""), "")
    machine = _MACHINES.get(markers.get("platform_machine", "").lower(), "")
    plat = Platform(
        os_name or markers.get("sys_platform", ""),
        machine,
        target.python_version,
        found=dict(found or {}),
    )
    if plat.os == "darwin":
        return replace(plat, macos=_macos_version(target))
    if os_name != "linux":
        return plat
    level = _policy_level(target, "manylinux")
    musl = _policy_level(target, "musllinux")
    if level is None and musl is not None:
        return _musl(plat, musl)
    p = _newest_policy("manylinux", "glibc", level)
    if p is None:
        return plat
    versions = p["symbol-versions"].get(machine, {})
    return Platform(
        plat.os,
        machine,
        plat.python,
        str(p["name"]),
        frozenset(p["libraries"]),
        {ns: frozenset(vs) for ns, vs in versions.items()},
        plat.found,
    )


def _newest_policy(family: str, by: str, level: tuple[int, int] | None) -> dict[str, Any] | None:
    """The newest policy of ``family`` ("manylinux", "musllinux") whose libc version (its
    ``by`` field) is at most ``level``; None where none is (or no level is known)."""
    policies = [p for p in facts()[family] if level is not None and tuple(p[by]) <= level]
    return max(policies, key=lambda p: tuple(p[by]), default=None)


def _macos_version(target: Target) -> str:
    """The newest macOS version among the target's ``macosx_X_Y_ARCH`` tags ("11.0")."""
    best = _policy_level(target, "macosx")
    return f"{best[0]}.{best[1]}" if best else ""


def _musl(plat: Platform, level: tuple[int, int]) -> Platform:
    """A musl target's platform: the newest musllinux policy its tags allow, with musl's
    libc under the name binaries linked against it need (``libc.musl-x86_64.so.1``; the
    policy data says ``libc.so``, as auditwheel does); no symbol versions (musl has none)."""
    p = _newest_policy("musllinux", "musl", level)
    if p is None:
        return replace(plat, libc="musl")
    libc = facts()["musl-libc"].get(plat.machine, "")
    libraries = {libc if name == "libc.so" else name for name in p["libraries"]} - {""}
    return replace(plat, manylinux=str(p["name"]), libraries=frozenset(libraries), libc="musl")


# glibc's dynamic loader of each machine, by the name ldconfig lists it under
_LOADERS = {
    "x86_64": "ld-linux-x86-64.so.2",
    "aarch64": "ld-linux-aarch64.so.1",
    "i686": "ld-linux.so.2",
    "ppc64le": "ld64.so.2",
    "s390x": "ld64.so.1",
    "armv7l": "ld-linux-armhf.so.3",
    "riscv64": "ld-linux-riscv64-lp64d.so.1",
    "loongarch64": "ld-linux-loongarch-lp64d.so.1",
}
# where glibc's loader looks after its cache, where it cannot say (``--help`` came with
# glibc 2.33): the multiarch folders (Debian, Ubuntu), the lib64 ones (Red Hat, SUSE) and
# the plain ones, those that exist
_TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "i686": "i386-linux-gnu"}
_TRIPLETS.update(
    {
        "ppc64le": "powerpc64le-linux-gnu",
        "s390x": "s390x-linux-gnu",
        "armv7l": "arm-linux-gnueabihf",
        "riscv64": "riscv64-linux-gnu",
        "loongarch64": "loongarch64-linux-gnu",
    }
)
_USUAL_DIRS = ("/lib/{t}", "/usr/lib/{t}", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
_SEARCH_DIR = re.compile(r"^\s+(/.*?) \(system search path\)$", re.MULTILINE)
_SHARED = re.compile(r"\.so(\.[0-9A-Za-z_]+)*$")
_DLL = re.compile(r"\.dll\Z", re.IGNORECASE)


def system_search_path(help_text: str) -> list[str]:
    """The folders that ``ld.so --help`` says the loader searches after its cache (its
    "system search path"), in its order; none where the text does not say."""
    return _SEARCH_DIR.findall(help_text)


def live(os_name: str, machine: str = "", libc: str = "") -> dict[str, str]:
    """What this machine's loader finds by name: on Linux the ldconfig cache, then every
    shared library file in the folders the loader searches after it (``ld.so --help``'s
    system search path): a library needed by its file name rather than its soname, such
    as ``libgomp.so.1.0.0``, is found there and nowhere in the cache. On musl (``libc``
    "musl") the folders of musl's path file, which has no cache. On Windows the DLLs
    of PATH's folders and System32 (names lowercased there). Empty when none can be
    read."""
    out: dict[str, str] = {}
    if os_name == "linux" and libc == "musl":
        for name, folder in _files(musl_search_path(machine), _SHARED):
            out.setdefault(name, f"the loader's search path: {folder}")
    elif os_name == "linux":
        cache = _ldconfig_cache()
        out.update((name, f"ldconfig: {path}") for name, path in cache.items())
        loader = cache.get(_LOADERS.get(machine, ""), "")
        for name, folder in _files(_search_dirs(loader, machine), _SHARED):
            out.setdefault(name, f"the loader's search path: {folder}")
    elif os_name == "windows":
        folders = [*os.environ.get("PATH", "").split(os.pathsep)]
        root = os.environ.get("SYSTEMROOT")
        if root:
            folders.append(os.path.join(root, "System32"))
        for name, folder in _files(folders, _DLL):
            out.setdefault(name.lower(), f"PATH: {folder}")
    return out


# musl's loader reads its folders from /etc/ld-musl-ARCH.path, else searches these
_MUSL_DEFAULT = ("/lib", "/usr/local/lib", "/usr/lib")


def musl_search_path(machine: str, etc: str = "/etc") -> list[str]:
    """The folders musl's loader of ``machine`` searches: those of its path file
    (``ld-musl-x86_64.path``: folders separated by newlines or colons), or musl's default
    where there is no such file."""
    loader = facts()["musl-loader"].get(machine, "")
    arch = loader.removeprefix("ld-musl-").removesuffix(".so.1")
    try:
        with open(os.path.join(etc, f"ld-musl-{arch}.path"), encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError):
        return list(_MUSL_DEFAULT)
    return [d for d in re.split(r"[:\n]", text) if d.strip()]


def _ldconfig_cache() -> dict[str, str]:
    """``ldconfig -p``: each name the loader's cache holds, and the file it gives (the
    first of each name); empty where no ldconfig runs."""
    out: dict[str, str] = {}
    for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            done = proc.run([exe, "-p"], check=False, what="ldconfig -p", timeout=20)
        except Exception:  # absent or not runnable: try the next place
            continue
        if done.returncode == 0:
            for line in done.stdout.splitlines()[1:]:
                name, _, where = line.strip().partition(" (")
                if name:
                    out.setdefault(name, where.rpartition("=> ")[2])
            break
    return out


def _files(folders: Iterable[str], pattern: re.Pattern[str]) -> Iterator[tuple[str, str]]:
    """(name, folder) of each file in ``folders`` whose name ``pattern`` finds, folder by
    folder; a folder that cannot be listed is passed over."""
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if pattern.search(name):
                yield name, folder


def _search_dirs(loader: str, machine: str) -> list[str]:
    """The system search path of ``loader`` (the path ldconfig gives for ``machine``'s
    loader; "" where it has none), asked of it; else the usual folders of ``machine`` that
    exist."""
    if loader:
        try:
            done = proc.run([loader, "--help"], check=False, what="ld.so --help", timeout=20)
            dirs = system_search_path(done.stdout) if done.returncode == 0 else []
            if dirs:
                return dirs
        except Exception:  # an older loader, or none runnable here: the usual folders
            pass
    triplet = _TRIPLETS.get(machine, "")
    usual = [d.format(t=triplet) for d in _USUAL_DIRS if triplet or "{t}" not in d]
    return [d for d in usual if os.path.isdir(d)]

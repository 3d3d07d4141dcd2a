"""The load check's closed sets of words: what a problem is, where a distribution the check
sees comes from, and who meets a need. One ``StrEnum`` each, shared by the check
(``app/loadcheck``), its IO (``app/loadscan``) and the platform's facts
(``env/platformlibs``).

A member is its string (see ``model/choices``): the messages, ``wh lock --json``,
``wh verify --json`` and ``wh why --libraries --json`` read as they did with plain words.
"""

from __future__ import annotations

from wh.model.choices import StrEnum


class BinaryFormat(StrEnum):
    """The kind of a compiled member: an ELF shared object, a PE DLL/extension, a Mach-O
    file (macOS), or not known (a member that could not be opened far enough to tell)."""

    ELF = "elf"
    PE = "pe"
    MACHO = "macho"
    UNKNOWN = "?"


class ProblemKind(StrEnum):
    """Why part of a lock cannot load (a load problem's ``kind`` in JSON)."""

    MISSING_LIBRARY = "missing-library"  # nothing provides a needed library
    SYMBOL_VERSION = "symbol-version"  # a symbol version past the manylinux policy
    UNREADABLE = "unreadable"  # a compiled member that cannot be read
    MACHINE = "machine"  # built for another machine than the target's
    TORCH_BUILD = "torch-build"  # a `wh build` kernel compiled against another torch
    OS_VERSION = "os-version"  # a Mach-O file for a newer macOS than the target's tag


class Origin(StrEnum):
    """Where a distribution the check sees comes from (worded in messages as the value)."""

    LOCKED = "locked"  # a wheel the lock installs
    PROTECTED = "protected"  # protected: the installed one (or its named build) stays
    KEPT = "kept"  # installed, kept by the resolution
    OUTSIDE = "installed, outside the lock"  # a live target's torch nothing locked requires


class Provider(StrEnum):
    """Who meets one need of one compiled member."""

    SAME_WHEEL = "same-wheel"  # a library of the member's own wheel
    OTHER_WHEEL = "other-wheel"  # a library of another wheel the lock installs
    INSTALLED = "installed"  # a library of a distribution the target keeps (or protects)
    LOADER = "loader"  # the dynamic loader itself (ld-linux, libc's parts)
    DRIVER = "driver"  # the GPU driver (libcuda, nvcuda.dll)
    POLICY = "policy"  # a system library the target's manylinux policy allows
    INTERPRETER = "interpreter"  # the Python interpreter (libpython, python3.dll, its VC runtime)
    API_SET = "api-set"  # a Windows API set (api-ms-win-*)
    MSVC_RUNTIME = "msvc-runtime"  # the Visual C++ Redistributable
    WINDOWS = "windows"  # a Windows system DLL
    MACOS = "macos"  # a macOS system library (/usr/lib, /System/Library)
    SYSTEM = "system"  # what a live target's loader finds (ldconfig cache, PATH)

    @property
    def on_platform(self) -> bool:
        """Whether the platform provides it (its symbol versions are bound by the policy),
        not a distribution the target will have."""
        return self not in (Provider.SAME_WHEEL, Provider.OTHER_WHEEL, Provider.INSTALLED)

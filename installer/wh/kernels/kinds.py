"""The closed sets of words of the kernel build: one ``StrEnum`` each.

A member is its string (it compares, prints, formats, and goes into JSON as its value), so
a report, a build record and every message read as they did when the words were plain
strings. The target OS words (``--target-os``, a variant's ``refused``) are the CLI's
``TargetOS`` in ``wh.model.choices``.
"""

from __future__ import annotations

from wh.model.choices import StrEnum, TargetOS


class PlatformName(StrEnum):
    """The target platforms conditions are evaluated for (a recipe's ``platforms`` names
    them), each the toolchain of one target OS."""

    WINDOWS_MSVC = "windows-msvc"
    LINUX_GCC = "linux-gcc"

    @property
    def target_os(self) -> TargetOS:
        return TargetOS.WINDOWS if self is PlatformName.WINDOWS_MSVC else TargetOS.LINUX


class OpKind(StrEnum):
    """What an operation of a recipe does (its ``op = ...``), and ``text-patch``: the word a
    report's operation list uses for a ``[[patches]]`` anchor patch."""

    EXCLUDE_SOURCE = "exclude-source"
    SWITCH_AUTOTRIGGER = "switch-autotrigger"
    ADD_CONDITION = "add-condition"
    UNDER_SWITCH = "under-switch"
    GENCODES = "gencodes"
    GUARD_REGISTRATIONS = "guard-registrations"
    TEXT_PATCH = "text-patch"

    @classmethod
    def recipe_ops(cls) -> tuple[OpKind, ...]:
        """The kinds an ``[[operations]]`` table may name (a text patch is ``[[patches]]``)."""
        return tuple(k for k in cls if k is not cls.TEXT_PATCH)


class CheckEnvironment(StrEnum):
    """``[checks].environment``: where the import checks of a built wheel run."""

    ISOLATED = "isolated"  # a fresh venv holding the wheel alone
    BUILD = "build"  # the build interpreter, the unpacked wheel first on sys.path


class ToolchainKind(StrEnum):
    """Which host toolchain a build uses (``ToolchainInfo.kind`` of the build record)."""

    GCC = "gcc"
    MSVC = "msvc"


class TriggerKind(StrEnum):
    """The shape of a CUDA version auto-trigger."""

    OR_SWITCH = "or-switch"  # if(<version test> OR SWITCH)
    SETS_SWITCH = "sets-switch"  # if(<version test>) set(SWITCH ON)


class RegistrationKind(StrEnum):
    """The two torch op registration statements."""

    DEF = "def"  # m.def(...)
    IMPL = "impl"  # m.impl(...)


class CodeKind(StrEnum):
    """The two kinds of CUDA code cuobjdump lists in a binary (its ``--list-elf`` and
    ``--list-ptx``)."""

    ELF = "ELF"  # SASS for one architecture
    PTX = "PTX"  # virtual-architecture code the driver compiles

    @property
    def flag(self) -> str:
        return "--list-elf" if self is CodeKind.ELF else "--list-ptx"

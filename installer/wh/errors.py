"""The one error hierarchy of wh: every refusal carries its data, a fix, and an exit code."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

_E = TypeVar("_E", bound="WhError")


class WhError(Exception):
    """Base of every error wh raises on purpose.

    ``message`` says what went wrong, ``hint`` says what the user can do about it.
    ``details`` are extra lines (one problem each) rendered under the message.
    A subclass whose message is built from data takes that data as typed attributes,
    builds its message and hint from them, and names them in ``fields()``: ``to_json``
    carries them under "fields" (an error without fields has none). Every refusal is one
    of those; the family bases below (one exit code and kind each) are never raised
    directly, which tests/test_error_fields.py checks.
    """

    exit_code = 1
    kind = "error"
    # what the command reports besides, where it ends in this error (`wh fetch`'s closure
    # and downloads; the CLI attaches it): `--json` prints one document, the error with
    # this under "report"
    report: Mapping[str, object] | None = None

    def __init__(self, message: str, *, hint: str = "", details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = tuple(details)

    def render(self) -> str:
        lines = [f"error: {self.message}"]
        lines.extend(f"  {d}" for d in self.details)
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def fields(self) -> dict[str, object]:
        """The data the message is built from (JSON values)."""
        return {}

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "error": self.kind,
            "exit_code": self.exit_code,
            "message": self.message,
            "details": list(self.details),
            "hint": self.hint,
        }
        fields = self.fields()
        if fields:
            out["fields"] = fields
        if self.report is not None:
            out["report"] = dict(self.report)
        return out

    def reporting(self: _E, report: Mapping[str, object]) -> _E:
        """This error, carrying ``report`` (see ``report``)."""
        self.report = report
        return self


class UsageError(WhError):
    """An option or setting (an environment variable) has a value wh cannot use."""

    exit_code = 2
    kind = "usage"


class WheelhouseError(WhError):
    """A wheelhouse, or a wheel in it, is unusable."""

    exit_code = 3
    kind = "wheelhouse"


class ResolutionError(WhError):
    """The requirements cannot be satisfied from the wheelhouse."""

    exit_code = 4
    kind = "resolution"


class LockError(WhError):
    """A lock is missing, stale, edited by hand, or names wheels that do not match."""

    exit_code = 5
    kind = "lock"


_RELOCK = "re-create it with `wh lock`"


class LockMissingError(LockError):
    """The lock file does not exist."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"lock {path} does not exist",
            hint=f"create it with `wh lock PROFILE --lockfile {path}`",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path)}


class LockSyntaxError(LockError):
    """The lock is not TOML (``pep751`` False) or not a PEP 751 lock (True); ``problem``
    is the parser's own words."""

    def __init__(self, path: Path, problem: str, *, pep751: bool) -> None:
        self.path = path
        self.problem = problem
        self.pep751 = pep751
        what = f"not a valid PEP 751 lock: {problem}" if pep751 else f"not valid TOML ({problem})"
        super().__init__(f"{path}: {what}", hint=_RELOCK)

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "problem": self.problem, "pep751": self.pep751}


class LockEntryError(LockError):
    """A package entry of the lock wh cannot install from: ``rule`` is "one-wheel" (not
    exactly one wheel by path or URL), "no-sha256" (``found`` names the weak hashes it
    has) or "no-size"."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "one-wheel": (
            "package {name} must name exactly one wheel by path or URL",
            "wh installs exactly one wheel per package; re-create with `wh lock`",
        ),
        "no-sha256": (
            "{name} has no sha256 hash (found: {found})",
            "md5 and sha1 are refused; re-create the lock with `wh lock`",
        ),
        "no-size": ("{name} has no size", _RELOCK),
    }

    def __init__(self, path: Path, package: str, rule: str, *, found: Sequence[str] = ()) -> None:
        self.path = path
        self.package = package
        self.rule = rule
        self.found = tuple(found)
        text, hint = self._TEXT[rule]
        message = text.format(name=package, found=", ".join(self.found) or "none")
        super().__init__(f"{path}: {message}", hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": str(self.path),
            "package": self.package,
            "rule": self.rule,
        }
        if self.rule == "no-sha256":
            out["found"] = list(self.found)
        return out


class LockDigestError(LockError):
    """The lock's digest does not match its bytes: it was edited after `wh lock` wrote it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path}: the lock's digest does not match its contents (edited by hand?)",
            hint="never edit a lock; re-create it with `wh lock` and review the diff",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path)}


class LockFormatError(LockError):
    """The lock's ``[tool.wh]`` is of a format this wh does not read (a newer wh wrote it),
    or a value in it is not what its format says."""

    def __init__(self, path: Path, found: str, supported: int, problem: str = "") -> None:
        self.path = path
        self.found = found
        self.supported = supported
        self.problem = problem
        if problem:
            message = f"{path}: [tool.wh] is malformed ({problem})"
            hint = _RELOCK
        else:
            message = (
                f"{path}: [tool.wh] format {found} is not one this wh reads "
                f"(it reads formats 1 to {supported})"
            )
            hint = "install the wh that wrote the lock, or re-create the lock with this wh"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": str(self.path),
            "format": self.found,
            "supported": self.supported,
        }
        if self.problem:
            out["problem"] = self.problem
        return out


class LockWheelsError(LockError):
    """Wheels a lock names are missing, or differ in size or sha256 (``problems``: one line
    per wheel); ``downloaded`` True where they could not be had from the lock's index."""

    def __init__(self, path: Path, problems: Sequence[str], *, downloaded: bool = False) -> None:
        self.path = path
        self.problems = tuple(problems)
        self.downloaded = downloaded
        n = len(self.problems)
        if downloaded:
            message = f"{n} wheel(s) of {path} could not be downloaded; nothing was installed"
            hint = (
                "check that the index serves the wheelhouse the lock was made from "
                "(`wh index`, then serve the folder), then run the install again"
            )
        else:
            message = f"{n} wheel(s) named by {path} do not match it; nothing was installed"
            hint = "restore the exact wheels the lock names, or re-lock with `wh lock`"
        super().__init__(message, details=self.problems, hint=hint)

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "problems": list(self.problems),
            "downloaded": self.downloaded,
        }


class LockTargetError(LockError):
    """The lock was made for another platform or Python than the environment's
    (``made_for`` is the lock's target description, ``problems`` each difference)."""

    def __init__(
        self, path: Path, made_for: str | None, python: Path, problems: Sequence[str]
    ) -> None:
        self.path = path
        self.made_for = made_for
        self.python = python
        self.problems = tuple(problems)
        super().__init__(
            f"{path} was made for {made_for or 'another target'}, not for {python}",
            details=self.problems,
            hint="lock for this environment: `wh lock PROFILE --python PATH`",
        )

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "made_for": self.made_for,
            "python": str(self.python),
            "problems": list(self.problems),
        }


class LockKeptError(LockError):
    """Installed distributions the lock keeps (no wheel) changed since it was made."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(
            f"{path} relies on installed distributions that changed; nothing was installed",
            details=self.problems,
            hint="re-lock for this environment with `wh lock PROFILE --python PATH`",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "problems": list(self.problems)}


class NotInLockError(LockError):
    """`wh why` was asked about a package the lock does not have."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        super().__init__(
            f"{name} is not in {path}",
            hint="`wh why` explains packages of the lock; check the name, or re-lock",
        )

    def fields(self) -> dict[str, object]:
        return {"name": self.name, "path": str(self.path)}


class ProtectionError(WhError):
    """A plan would replace, downgrade or remove a protected distribution."""

    exit_code = 6
    kind = "protection"


class ProtectedChangeError(ProtectionError):
    """The plan against ``python``'s environment would change protected distributions:
    ``refusals`` holds (name, reason, missing) for each, ``missing`` True where the lock
    keeps it as installed and the environment lacks it."""

    def __init__(self, python: Path, refusals: Sequence[tuple[str, str, bool]]) -> None:
        self.python = python
        self.refusals = tuple(refusals)
        if all(missing for _n, _r, missing in self.refusals):
            names = ", ".join(n for n, _r, _m in self.refusals)
            hint = (
                f"the lock keeps {names} as installed and carries no wheel of it: install that "
                f"exact build into {python} first, or lock (bundle) from a wheelhouse that "
                "holds its wheel with `--protect NAME==VERSION`, which then installs it"
            )
        else:
            hint = (
                "protected distributions are never replaced: re-lock with the protection "
                "(`wh lock PROFILE --protect NAME`) so the resolver keeps the installed build, "
                "or protect the exact build the lock carries (`--protect NAME==VERSION`)"
            )
        super().__init__(
            "the plan would change a protected distribution; nothing was installed",
            details=[reason for _n, reason, _m in self.refusals],
            hint=hint,
        )

    def fields(self) -> dict[str, object]:
        return {
            "python": str(self.python),
            "refusals": [{"name": n, "reason": r, "missing": m} for n, r, m in self.refusals],
        }


class InstallError(WhError):
    """The installer backend failed; the environment was restored."""

    exit_code = 7
    kind = "install"


class VerifyError(WhError):
    """The installed environment does not satisfy the profile."""

    exit_code = 8
    kind = "verify"


class ProfileError(WhError):
    """A profile (wh.toml, [tool.wh], CLI flags) is malformed or unknown."""

    exit_code = 9
    kind = "profile"


class TargetError(WhError):
    """The target interpreter or declared platform is unusable."""

    exit_code = 10
    kind = "target"


class BuildError(WhError):
    """A recipe, patch, toolchain or built wheel failed a check."""

    exit_code = 11
    kind = "build"


# ---------------------------------------------------------------- the kernel build's errors
# Each class builds its message, hint and details from its attributes and names them in
# fields(); a ``rule`` picks one of the class's texts (a closed set: the keys of _TEXT).


class RecipeError(BuildError):
    """A value of a recipe (its TOML, or an ``[[operations]]`` table) is not what its key
    takes. ``where`` is the table or file as the message names it, ``key`` the key in it
    (empty where ``where`` already names the value); ``value`` is the value found,
    ``allowed`` the values the key takes, ``missing`` the keys a table lacks, ``problem``
    the parser's own words."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "tables": ("{at} must be an array of tables ([[{value}]])", ""),
        "table": ("{at} must be a table", ""),
        "strings": ("{at} must be a list of strings", ""),
        "scalar": ("{at} must be a string, integer or boolean", ""),
        "lacks": ("{at} lacks {missing}", ""),
        "refused": ("{at} must map {allowed_slash} to the reason (a string)", ""),
        "required": ("{at} is required (a string)", ""),
        "specifier": ("{at} is not a version specifier: {problem}", ""),
        "bool": ("{at} must be true or false", ""),
        "needs": ("{where}: op {value!r} needs {key} (a non-empty string)", ""),
        "empty-switch": ("{where}: under-switch {value} names no commands and no items", ""),
        "unknown-op": (
            "{where}: unknown op {value!r}",
            "ops: {allowed_list}; or a [[patches]] text patch",
        ),
        "command": (
            "under-switch {key}: command {value!r} is not NAME(FIRST_ARGUMENT)",
            'e.g. "include(cmake/flashmla.cmake)", "FetchContent_Declare(repo-mscclpp)"',
        ),
        "environment": (
            "{at} must be {allowed_or}, not {value!r}",
            "use 'build' when the module imports packages of the build environment",
        ),
    }

    def __init__(
        self,
        where: str,
        rule: str,
        *,
        key: str = "",
        value: object = "",
        allowed: Sequence[str] = (),
        missing: Sequence[str] = (),
        problem: str = "",
    ) -> None:
        self.where = where
        self.rule = rule
        self.key = key
        self.value = value
        self.allowed = tuple(allowed)
        self.missing = tuple(missing)
        self.problem = problem
        text, hint = self._TEXT[rule]
        words = {
            "where": where,
            "key": key,
            "at": f"{where}: {key}" if key and where else where or key,
            "value": value,
            "problem": problem,
            "missing": ", ".join(self.missing),
            "allowed_slash": "/".join(self.allowed),
            "allowed_list": ", ".join(self.allowed),
            "allowed_or": " or ".join(repr(a) for a in self.allowed),
        }
        super().__init__(text.format(**words), hint=hint.format(**words))

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"where": self.where, "rule": self.rule}
        if self.key:
            out["key"] = self.key
        if "{value" in "".join(self._TEXT[self.rule]):
            v = self.value
            out["value"] = v if v is None or isinstance(v, (str, int, float, bool)) else repr(v)
        if self.allowed:
            out["allowed"] = list(self.allowed)
        if self.missing:
            out["missing"] = list(self.missing)
        if self.problem:
            out["problem"] = self.problem
        return out


class RecipeLoadError(BuildError):
    """A recipe cannot be loaded: ``rule`` "no-file" (a path that is no file), "unknown" (no
    shipped recipe of that name; ``shipped`` lists them) or "toml" (``problem``: the TOML
    parser's words)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "no-file": ("recipe file {recipe} does not exist", ""),
        "unknown": (
            "no shipped recipe named {recipe!r}",
            "shipped recipes: {shipped}; or pass a path to a .toml",
        ),
        "toml": ("recipe {recipe} is not valid TOML: {problem}", ""),
    }

    def __init__(
        self, recipe: str, rule: str, *, shipped: Sequence[str] = (), problem: str = ""
    ) -> None:
        self.recipe = recipe
        self.rule = rule
        self.shipped = tuple(shipped)
        self.problem = problem
        text, hint = self._TEXT[rule]
        words = {"recipe": recipe, "shipped": ", ".join(self.shipped), "problem": problem}
        super().__init__(text.format(**words), hint=hint.format(**words))

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"recipe": self.recipe, "rule": self.rule}
        if self.rule == "unknown":
            out["shipped"] = list(self.shipped)
        if self.problem:
            out["problem"] = self.problem
        return out


class VariantError(BuildError):
    """``--variant`` names variants the recipe does not have (``variants``: the ones it has)."""

    def __init__(self, recipe: str, unknown: Sequence[str], variants: Sequence[str]) -> None:
        self.recipe = recipe
        self.unknown = tuple(unknown)
        self.variants = tuple(variants)
        super().__init__(
            f"recipe {recipe} has no variant {', '.join(self.unknown)}",
            hint=f"variants: {', '.join(self.variants) or 'none'}",
        )

    def fields(self) -> dict[str, object]:
        return {
            "recipe": self.recipe,
            "unknown": list(self.unknown),
            "variants": list(self.variants),
        }


class BuildOptionError(BuildError):
    """An option of `wh build` has a value it cannot use: ``rule`` "unknown" (``allowed``:
    the values it takes), "on-off" (a ``--variant NAME=VALUE`` whose value is no switch) or
    "other-machine" (``--target-os`` names a platform other than ``platform``, the one this
    machine builds for)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "unknown": ("{option} {value!r} is not known", "use {allowed}"),
        "on-off": ("{option} {value!r}: the value must be on or off", ""),
        "other-machine": (
            "{option} {value}: this machine builds for {platform} only",
            "use --check or --emit OUT for a preview of another platform",
        ),
    }

    def __init__(
        self,
        option: str,
        value: str,
        rule: str,
        *,
        allowed: Sequence[str] = (),
        platform: str = "",
    ) -> None:
        self.option = option
        self.value = value
        self.rule = rule
        self.allowed = tuple(allowed)
        self.platform = platform
        text, hint = self._TEXT[rule]
        words = {
            "option": option,
            "value": value,
            "allowed": " or ".join(self.allowed),
            "platform": platform,
        }
        super().__init__(text.format(**words), hint=hint.format(**words))

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"option": self.option, "value": self.value, "rule": self.rule}
        if self.allowed:
            out["allowed"] = list(self.allowed)
        if self.platform:
            out["platform"] = self.platform
        return out


class EmitError(BuildError):
    """``--emit OUT`` cannot be written: ``rule`` "file" (OUT is a file), "inside" (OUT is in
    the source ``tree``) or "occupied" (OUT holds another tree)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "file": ("--emit {out} is a file", "emit to a new or empty folder"),
        "inside": ("--emit {out} is inside the source tree {tree}", "emit to a folder outside it"),
        "occupied": (
            "--emit {out}: the folder exists and holds another tree",
            "remove it or emit to a new folder (wh never overwrites a tree)",
        ),
    }

    def __init__(self, out: Path, rule: str, *, tree: Path | None = None) -> None:
        self.out = out
        self.rule = rule
        self.tree = tree
        text, hint = self._TEXT[rule]
        super().__init__(text.format(out=out, tree=tree), hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"out": str(self.out), "rule": self.rule}
        if self.tree is not None:
            out["tree"] = str(self.tree)
        return out


class SourceError(BuildError):
    """The source to build cannot be used: ``rule`` "missing" (``path`` does not exist),
    "no-path" (the ``recipe`` names none and none was passed), "project-itself" (``path``
    looks like the ``project``, the recipe's ``subdirectory`` of it) or "unpinned" (``path``
    is not the tree the recipe was checked against; ``problems``: each difference)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "missing": ("source {path} does not exist", "pass --source PATH"),
        "no-path": (
            "recipe {recipe} names no source path",
            "pass --source PATH (the folder or archive of the pinned source)",
        ),
        "project-itself": (
            "{project} does not exist: --source {path} looks like the project itself",
            "pass the folder above it (the checkout root): the recipe's project is"
            " its {subdirectory!r} subfolder",
        ),
        "unpinned": (
            "the source at {path} is not the one recipe {recipe} was checked against",
            "use the pinned revision, or pass --allow-unpinned to try the recipe's"
            " operations on this tree (each one still reports what it finds)",
        ),
    }

    def __init__(
        self,
        rule: str,
        *,
        path: Path | None = None,
        recipe: str = "",
        project: Path | None = None,
        subdirectory: str = "",
        problems: Sequence[str] = (),
    ) -> None:
        self.rule = rule
        self.path = path
        self.recipe = recipe
        self.project = project
        self.subdirectory = subdirectory
        self.problems = tuple(problems)
        text, hint = self._TEXT[rule]
        words = {
            "path": path,
            "recipe": recipe,
            "project": project,
            "subdirectory": subdirectory,
        }
        super().__init__(text.format(**words), hint=hint.format(**words), details=self.problems)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule}
        if self.path is not None:
            out["path"] = str(self.path)
        if self.recipe:
            out["recipe"] = self.recipe
        if self.project is not None:
            out["project"] = str(self.project)
            out["subdirectory"] = self.subdirectory
        if self.rule == "unpinned":
            out["problems"] = list(self.problems)
        return out


class SourcePinError(BuildError):
    """The source at ``path`` does not match the recipe's ``pin`` (sha256, tree_sha256,
    git_commit or inputs_sha256): ``expected`` is the recipe's, ``found`` the source's."""

    def __init__(self, path: Path, pin: str, expected: str, found: str) -> None:
        self.path = path
        self.pin = pin
        self.expected = expected
        self.found = found
        super().__init__(
            f"the source at {path} does not match the recipe's pinned {pin}",
            details=[f"expected: {expected}", f"found: {found}"],
            hint="use the pinned source, or update the recipe's pin if the change is intended",
        )

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "pin": self.pin,
            "expected": self.expected,
            "found": self.found,
        }


class ToolMissingError(BuildError):
    """A tool of the build is not on this machine: ``tool`` is "cuobjdump", "nvcc", "g++",
    "cuda" (no CUDA toolkit on Windows) or "msvc" (no Visual Studio C++ tools); ``looked``
    says where it was looked for."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "cuobjdump": (
            "cuobjdump not found: cannot check the wheel's CUDA architectures",
            "pip install nvidia-cuda-cuobjdump (in wh's dev extra), or put the CUDA bin on PATH",
        ),
        "nvcc": ("nvcc not found", "install the CUDA toolkit or set CUDA_HOME"),
        "g++": (
            "no host C++ compiler (g++) found",
            "install gcc/g++ (e.g. apt-get install build-essential) or set CXX",
        ),
        "cuda": (
            "no CUDA toolkit found (no CUDA_PATH_Vxx_y variable)",
            "install the CUDA toolkit for Windows; its installer sets CUDA_PATH_V12_8 etc.",
        ),
        "msvc": (
            "no Visual Studio with the C++ x64 tools found",
            "install 'Desktop development with C++' (VS 2022 Build Tools is enough)",
        ),
    }

    def __init__(self, tool: str, *, looked: Sequence[str] = ()) -> None:
        self.tool = tool
        self.looked = tuple(looked)
        text, hint = self._TEXT[tool]
        super().__init__(text, hint=hint, details=self.looked)

    def fields(self) -> dict[str, object]:
        return {"tool": self.tool, "looked": list(self.looked)}


class ToolOutputError(BuildError):
    """A tool of the build ran but wh cannot use what it said: ``tool`` is "cuobjdump"
    (``subject``: the binary it could not read), "nvcc" (no version in ``nvcc --version``),
    "vswhere" (``subject``: why its output is not JSON) or "vcvarsall" (``subject``: the
    Visual Studio whose vcvarsall.bat set up no compiler); ``output`` is its last lines."""

    _TEXT: ClassVar[dict[str, str]] = {
        "cuobjdump": "cuobjdump could not read {subject}",
        "nvcc": "cannot read the CUDA version from nvcc --version",
        "vswhere": "vswhere printed something that is not JSON: {subject}",
        "vcvarsall": "vcvarsall.bat x64 of {subject} did not set up the compiler",
    }

    def __init__(self, tool: str, subject: str = "", *, output: Sequence[str] = ()) -> None:
        self.tool = tool
        self.subject = subject
        self.output = tuple(output)
        super().__init__(self._TEXT[tool].format(subject=subject), details=self.output)

    def fields(self) -> dict[str, object]:
        return {"tool": self.tool, "subject": self.subject, "output": list(self.output)}


class CudaVersionError(BuildError):
    """The CUDA toolkit does not fit: ``rule`` "spec" (CUDA ``found`` at ``where`` is not in
    the recipe's ``spec``), "not-installed" (WH_CUDA_VERSION ``wanted`` is not among the
    ``installed``), "none-fits" (none of the ``installed`` is in ``spec``) or "option"
    (``--cuda-version`` ``wanted`` but the toolkit found is ``found``)."""

    _TEXT: ClassVar[dict[str, tuple[str, str, tuple[str, ...]]]] = {
        "spec": (
            "CUDA {found} at {where} does not satisfy the recipe's cuda = {spec!r}",
            "install a matching CUDA toolkit, point CUDA_HOME (Linux) or WH_CUDA_VERSION"
            " (Windows) at it, or adjust the recipe",
            ("expected: cuda {spec}", "found: {found} ({where})"),
        ),
        "not-installed": (
            "WH_CUDA_VERSION={wanted} but that CUDA is not installed",
            "set WH_CUDA_VERSION to one of the installed versions",
            ("installed: {installed}",),
        ),
        "none-fits": (
            "no installed CUDA satisfies the recipe's cuda = {spec!r}",
            "install a matching CUDA toolkit, or set WH_CUDA_VERSION",
            ("expected: cuda {spec}", "found: {installed}"),
        ),
        "option": (
            "--cuda-version {wanted}: the toolkit found is CUDA {found}",
            "a build uses the toolkit it finds: set CUDA_HOME (Linux) or"
            " WH_CUDA_VERSION (Windows), or use --check/--emit for a preview",
            (),
        ),
    }

    def __init__(
        self,
        rule: str,
        *,
        spec: str = "",
        found: str = "",
        where: str = "",
        wanted: str = "",
        installed: Sequence[str] = (),
    ) -> None:
        self.rule = rule
        self.spec = spec
        self.found = found
        self.where = where
        self.wanted = wanted
        self.installed = tuple(installed)
        text, hint, details = self._TEXT[rule]
        words = {
            "spec": spec,
            "found": found,
            "where": where,
            "wanted": wanted,
            "installed": ", ".join(self.installed),
        }
        super().__init__(
            text.format(**words),
            hint=hint,
            details=[d.format(**words) for d in details],
        )

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule}
        for name in ("spec", "found", "where", "wanted"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.rule in ("not-installed", "none-fits"):
            out["installed"] = list(self.installed)
        return out


class CMakeError(BuildError):
    """A CMake file or project the build cannot work with: ``rule`` "unreadable" (``path``
    does not parse as CMake; ``problem``: why), "cannot-move" (``items`` cannot be moved
    out of ``command`` at ``path``:``line``) or "no-cmakelists" (the project folder ``path``
    has none)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "unreadable": ("cannot read {path} as CMake: {problem}", ""),
        "cannot-move": (
            "{path}:{line}: cannot move {items} out of {command}()",
            "move it by hand or with a text patch",
        ),
        "no-cmakelists": (
            "{path} has no CMakeLists.txt",
            "pass the source root; the recipe's [source] subdirectory names the project",
        ),
    }

    def __init__(
        self,
        path: str,
        rule: str,
        *,
        line: int = 0,
        problem: str = "",
        items: Sequence[str] = (),
        command: str = "",
    ) -> None:
        self.path = path
        self.rule = rule
        self.line = line
        self.problem = problem
        self.items = tuple(items)
        self.command = command
        text, hint = self._TEXT[rule]
        super().__init__(
            text.format(
                path=path, line=line, problem=problem, items=", ".join(self.items), command=command
            ),
            hint=hint,
        )

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "rule": self.rule}
        if self.rule == "unreadable":
            out["problem"] = self.problem
        if self.rule == "cannot-move":
            out.update(line=self.line, items=list(self.items), command=self.command)
        return out


class ConditionError(BuildError):
    """A guard condition wh cannot evaluate or translate: ``rule`` "cpp-unreadable" or
    "cpp-incomplete" (a C preprocessor ``#if``), "cmake-incomplete" (a CMake ``if()``), or
    "no-guard" (no preprocessor macro matches the CMake condition; ``known``: condition ->
    macro, the ones that have one)."""

    _TEXT: ClassVar[dict[str, str]] = {
        "cpp-unreadable": "cannot read preprocessor condition {expr!r}",
        "cpp-incomplete": "incomplete preprocessor condition {expr!r}",
        "cmake-incomplete": "incomplete CMake condition {expr!r}",
        "no-guard": "no preprocessor guard is known for if({expr})",
    }

    def __init__(self, expr: str, rule: str, *, known: Mapping[str, str] | None = None) -> None:
        self.expr = expr
        self.rule = rule
        self.known = dict(known or {})
        hint = ""
        if rule == "no-guard":
            hint = "use " + " or ".join(f"{c} (#ifndef {m})" for c, m in self.known.items())
        super().__init__(self._TEXT[rule].format(expr=expr), hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"expr": self.expr, "rule": self.rule}
        if self.rule == "no-guard":
            out["known"] = dict(self.known)
        return out


class RegistrationError(BuildError):
    """The op registrations of ``file`` cannot be checked or guarded: ``rule`` "no-block"
    (no TORCH_LIBRARY block), "mixed" (``op``'s files are excluded under different
    conditions; ``guards``: (file, macro) for each), "shared-line" (``op``'s statement at ``line``
    shares it with other code), "missing" (``file`` is not in ``project``), "unmapped"
    (the excluded sources ``missing`` are not in the tree) or "unbalanced" (the bracket pair
    ``brackets`` opened at ``offset`` never closes)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "no-block": (
            "{file}: no TORCH_LIBRARY/TORCH_LIBRARY_FRAGMENT block with m.def/m.impl found",
            "point [registration] source at the file that registers the extension's ops",
        ),
        "mixed": (
            "{file}: op {op} is implemented in files excluded under different conditions",
            "exclude them under one condition",
        ),
        "shared-line": (
            "{file}:{line}: the registration of {op} shares its line with other code",
            "put each m.def/m.impl statement on lines of its own",
        ),
        "missing": ("registration source {file} not found in {project}", ""),
        "unmapped": (
            "cannot tell which ops the excluded sources implement: {missing} not in the tree",
            "the recipe excludes a file this source does not have: check --source",
        ),
        "unbalanced": ("unbalanced {brackets} from offset {offset}", ""),
    }

    def __init__(
        self,
        file: str,
        rule: str,
        *,
        op: str = "",
        line: int = 0,
        guards: Sequence[tuple[str, str]] = (),
        project: Path | None = None,
        missing: Sequence[str] = (),
        brackets: str = "",
        offset: int = 0,
    ) -> None:
        self.file = file
        self.rule = rule
        self.op = op
        self.line = line
        self.guards = tuple(guards)
        self.project = project
        self.missing = tuple(missing)
        self.brackets = brackets
        self.offset = offset
        text, hint = self._TEXT[rule]
        message = text.format(
            file=file,
            op=op,
            line=line,
            project=project,
            missing=", ".join(self.missing),
            brackets=brackets,
            offset=offset,
        )
        details = [f"{f}: #ifndef {m}" for f, m in self.guards]
        super().__init__(message, hint=hint, details=details)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"file": self.file, "rule": self.rule}
        if self.op:
            out["op"] = self.op
        if self.rule == "shared-line":
            out["line"] = self.line
        if self.guards:
            out["guards"] = [{"file": f, "macro": m} for f, m in self.guards]
        if self.project is not None:
            out["project"] = str(self.project)
        if self.missing:
            out["missing"] = list(self.missing)
        if self.rule == "unbalanced":
            out.update(brackets=self.brackets, offset=self.offset)
        return out


class PatchError(BuildError):
    """The recipe's patches cannot be applied: ``rule`` "malformed" (the patch of ``file``
    lacks an anchor, a replacement or a count), "not-applicable" (``problems``: each patch
    that is neither applied nor already applied), "read-back" (the files written to the source
    tree do not read back as patched), "read-back-copy" (nor those of the patched copy at
    ``path``) or
    "not-clean" (``recipe``'s operations and patches do not apply to the source ``path``)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "malformed": (
            "patch for {file} is malformed",
            "a patch needs a non-empty anchor, a non-empty replacement and count >= 1",
        ),
        "not-applicable": (
            "{count} patch(es) cannot be applied",
            "the source moved: update the recipe's anchors (or the pinned source)",
        ),
        "read-back": (
            "patched files do not read back as patched",
            "another process may be writing the source tree",
        ),
        "read-back-copy": (
            "the patched copy at {path} does not read back as patched",
            "another process may be writing the work folder",
        ),
        "not-clean": (
            "recipe {recipe} does not apply cleanly to {path}: nothing was written",
            "run with --check to see every operation; update the recipe for this tree",
        ),
    }

    def __init__(
        self,
        rule: str,
        *,
        file: str = "",
        problems: Sequence[str] = (),
        path: Path | None = None,
        recipe: str = "",
    ) -> None:
        self.rule = rule
        self.file = file
        self.problems = tuple(problems)
        self.path = path
        self.recipe = recipe
        text, hint = self._TEXT[rule]
        message = text.format(file=file, count=len(self.problems), path=path, recipe=recipe)
        super().__init__(message, hint=hint, details=self.problems)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule}
        if self.file:
            out["file"] = self.file
        if self.path is not None:
            out["path"] = str(self.path)
        if self.recipe:
            out["recipe"] = self.recipe
        if self.rule != "malformed":
            out["problems"] = list(self.problems)
        return out


class RecipeRefusedError(BuildError):
    """The recipe (with its chosen variants) cannot be built for ``target_os``: ``reason``
    is the recipe's, with the variant that refuses it."""

    def __init__(self, recipe: str, target_os: str, reason: str) -> None:
        self.recipe = recipe
        self.target_os = target_os
        self.reason = reason
        super().__init__(f"recipe {recipe} cannot be built for {target_os}: {reason}")

    def fields(self) -> dict[str, object]:
        return {"recipe": self.recipe, "target_os": str(self.target_os), "reason": self.reason}


class WheelCheckError(BuildError):
    """The built ``wheel`` (its file name) fails a check: ``rule`` "name" (not a wheel file
    name), "promise" (name, version or tags differ from the recipe's; ``problems``: each),
    "import" (`import module` fails; ``problems``: its last output lines) or "archs" (its
    binaries hold other CUDA architectures than ``archs``; ``problems``: each)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "name": ("the build produced an invalid wheel name {wheel}", ""),
        "promise": (
            "the built wheel {wheel} is not what the recipe promises",
            "check the recipe's version/dist and the project's pyproject (wheel.py-api)",
        ),
        "import": (
            "the built wheel installs but `import {module}` fails",
            "a missing DLL/.so or an unresolved symbol: check the registered ops and link flags",
        ),
        "archs": (
            "{wheel} holds the wrong CUDA architectures (asked for {archs})",
            "look for an architecture list or a version auto-trigger"
            " that the recipe does not patch",
        ),
    }

    def __init__(
        self,
        wheel: str,
        rule: str,
        *,
        problems: Sequence[str] = (),
        module: str = "",
        archs: Sequence[str] = (),
    ) -> None:
        self.wheel = wheel
        self.rule = rule
        self.problems = tuple(problems)
        self.module = module
        self.archs = tuple(archs)
        text, hint = self._TEXT[rule]
        message = text.format(wheel=wheel, module=module, archs=", ".join(self.archs))
        super().__init__(message, hint=hint, details=self.problems)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"wheel": self.wheel, "rule": self.rule}
        if self.module:
            out["module"] = self.module
        if self.rule == "archs":
            out["archs"] = list(self.archs)
        if self.rule != "name":
            out["problems"] = list(self.problems)
        return out


class BuildBackendError(BuildError):
    """The build backend (pip wheel + scikit-build-core) failed for ``recipe``: ``rule``
    "failed" (``output``: what the command said) or "wheel-count" (it left ``wheels``
    wheels in ``folder``, not one)."""

    _TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "failed": (
            "building {recipe} failed",
            "read the compiler output above; rerun with --check"
            " to see the patch and registration state",
        ),
        "wheel-count": (
            "the build of {recipe} produced {wheels} wheels in {folder}, expected 1",
            "check that the project's build backend is scikit-build-core"
            " and that the build finished",
        ),
    }

    def __init__(
        self,
        recipe: str,
        rule: str,
        *,
        output: Sequence[str] = (),
        wheels: int = 0,
        folder: Path | None = None,
    ) -> None:
        self.recipe = recipe
        self.rule = rule
        self.output = tuple(output)
        self.wheels = wheels
        self.folder = folder
        text, hint = self._TEXT[rule]
        message = text.format(recipe=recipe, wheels=wheels, folder=folder)
        super().__init__(message, hint=hint, details=self.output)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"recipe": self.recipe, "rule": self.rule}
        if self.rule == "failed":
            out["output"] = list(self.output)
        else:
            out.update(wheels=self.wheels, folder=str(self.folder))
        return out


class EnvironmentBlockError(BuildError):
    """The Windows environment block of the build is ``size`` characters, over ``limit``;
    ``largest`` names the largest variables and their lengths."""

    def __init__(self, size: int, limit: int, largest: Sequence[tuple[str, int]]) -> None:
        self.size = size
        self.limit = limit
        self.largest = tuple(largest)
        super().__init__(
            f"the build environment needs {size} characters; Windows allows {limit}",
            details=[f"{k}: {n} characters" for k, n in self.largest],
            hint="shorten or unset the largest variables (PATH entries from old installs,"
            " INCLUDE/LIB from repeated vcvarsall runs) and open a fresh shell",
        )

    def fields(self) -> dict[str, object]:
        return {
            "size": self.size,
            "limit": self.limit,
            "largest": [{"name": k, "length": n} for k, n in self.largest],
        }


class EnvironmentLockedError(WhError):
    """Another wh process holds the target environment."""

    exit_code = 12
    kind = "busy"


class ProcessError(WhError):
    """A delegated command failed."""

    exit_code = 13
    kind = "process"


def command_line(cmd: Sequence[str]) -> str:
    """``cmd`` as the user's shell takes it: cmd.exe's quoting on Windows, POSIX's
    elsewhere (a path with a space stays one argument)."""
    return subprocess.list2cmdline(cmd) if os.name == "nt" else shlex.join(cmd)


def _capped(lines: Sequence[str], most: int) -> list[str]:
    """The first ``most`` lines, and how many more there are."""
    more = [f"... and {len(lines) - most} more"] if len(lines) > most else []
    return [*lines[:most], *more]


def allow_overwrite_hint(writers: Sequence[str], where: str = "the profile") -> str:
    """The profile field (and flag) that allows overwrites by ``writers``."""
    return (
        "the install refuses a file written by two distributions; if the later one may win, "
        f'allow it in {where}: allow-overwrite = ["' + '", "'.join(writers) + '"] '
        "(or --allow-overwrite " + " --allow-overwrite ".join(writers) + ")"
    )


# --- usage (exit 2) -------------------------------------------------------------------

SettingRule = Literal["flag", "count", "cuda", "fault"]


class SettingError(UsageError):
    """The environment variable ``name`` has a value wh cannot use: ``rule`` "flag" (not 1
    or 0; ``purpose`` says what 1 turns on), "count" (not a positive whole number), "cuda"
    (not MAJOR.MINOR) or "fault" (a ``WH_TEST_FAULT`` spec, ``value``, not BATCH:ACTION)."""

    def __init__(self, name: str, value: str, rule: SettingRule, purpose: str = "") -> None:
        self.name = name
        self.value = value
        self.rule = rule
        self.purpose = purpose
        match rule:
            case "flag":
                message = f"{name}={value!r} is not 1 or 0"
                hint = f"set {name}=1 to {purpose}, or unset it (0 or empty is off)"
            case "count":
                message = f"{name}={value!r} is not a positive whole number"
                hint = "set it to how many wheels uv may write at once (e.g. 8), or unset it"
            case "cuda":
                message = f"{name}={value!r} is not a CUDA version"
                hint = "set it to an installed toolkit's MAJOR.MINOR (e.g. 12.8), or unset it"
            case "fault":
                message = f"{name} spec {value!r} is not BATCH:ACTION"
                hint = (
                    "BATCH is a number or 'hashed'; ACTION is fail, interrupt, sleep:SECONDS "
                    f"or write:ABSOLUTE-PATH; unset {name} outside tests"
                )
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "value": self.value, "rule": self.rule}
        if self.purpose:
            out["purpose"] = self.purpose
        return out


# --- wheelhouse (exit 3) --------------------------------------------------------------


class WheelhouseMissingError(WheelhouseError):
    """The wheelhouse folder ``root`` does not exist (or is a file)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        super().__init__(
            f"wheelhouse {root} does not exist or is not a folder",
            hint="pass --wheelhouse PATH, or create the folder and put wheels in it",
        )

    def fields(self) -> dict[str, object]:
        return {"root": str(self.root)}


class WheelsExcludedError(WheelhouseError):
    """``wh scan --strict``: the scan of ``root`` excluded wheels (``problems``: one line
    each)."""

    def __init__(self, root: Path, problems: Sequence[str]) -> None:
        self.root = root
        self.problems = tuple(problems)
        super().__init__(
            f"{len(self.problems)} wheel(s) excluded from {root}",
            details=self.problems,
            hint="remove or replace the broken wheels",
        )

    def fields(self) -> dict[str, object]:
        return {"root": str(self.root), "problems": list(self.problems)}


class WheelsInvalidError(WheelhouseError):
    """Wheels failed validation: ``wheels`` holds (filename, problems) for each."""

    def __init__(self, wheels: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.wheels = tuple((name, tuple(ps)) for name, ps in wheels)
        super().__init__(
            f"{len(self.wheels)} wheel(s) failed validation; nothing was installed",
            details=[f"{name}: {msg}" for name, ps in self.wheels for msg in ps],
            hint="replace these wheels with sound builds (never install a wheel whose RECORD "
            "does not match its contents)",
        )

    def fields(self) -> dict[str, object]:
        return {"wheels": [{"filename": n, "problems": list(ps)} for n, ps in self.wheels]}


class BuildRecordError(WheelhouseError):
    """Locked wheels whose build record (``<wheel>.build.json``, written by `wh build`)
    cannot be used: ``records`` holds (record file name, what is wrong) for each."""

    def __init__(self, records: Sequence[tuple[str, str]]) -> None:
        self.records = tuple(records)
        super().__init__(
            f"the build record of {len(self.records)} locked wheel(s) cannot be used; "
            "nothing was locked",
            details=[f"{name}: {why}" for name, why in self.records],
            hint="rebuild the wheel with `wh build` (which writes its record), or remove "
            "the record to lock the wheel as one wh did not build (its torch build is then "
            "not checked)",
        )

    def fields(self) -> dict[str, object]:
        return {"records": [{"file": n, "problem": why} for n, why in self.records]}


class AmbiguousWheelsError(WheelhouseError):
    """Files of the wheelhouse share a name, version and tag but differ (``problems``: one
    line per pair)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            f"{len(self.problems)} ambiguous wheel(s) in the wheelhouse; nothing was locked",
            details=self.problems,
            hint="keep exactly one file per name, version and tag (or give the rebuild a "
            "higher build tag)",
        )

    def fields(self) -> dict[str, object]:
        return {"problems": list(self.problems)}


class OverwriteError(WheelhouseError):
    """Files the install writes belong to other distributions: ``clashes`` one line each,
    ``writers`` the distributions that would write them."""

    def __init__(self, clashes: Sequence[str], writers: Sequence[str]) -> None:
        self.clashes = tuple(clashes)
        self.writers = tuple(sorted(set(writers)))
        super().__init__(
            f"{len(self.clashes)} file(s) would be overwritten by another distribution; "
            "nothing was installed",
            details=_capped(self.clashes, 50),
            hint="remove the conflicting distribution first, or allow it deliberately with "
            'allow-overwrite = ["' + '", "'.join(self.writers) + '"] in the profile '
            "and re-lock (`wh lock PROFILE --allow-overwrite "
            + " --allow-overwrite ".join(self.writers)
            + "`): a lock keeps what it allows",
        )

    def fields(self) -> dict[str, object]:
        return {"clashes": list(self.clashes), "writers": list(self.writers)}


class UnversionedInstalledError(WheelhouseError):
    """Installed distributions whose version is not PEP 440 stand in the install's way:
    ``blocking`` holds, for each, (name, its version text, its metadata folder, why it
    blocks this install); ``uninstall`` is the command that removes them (wh's own pip,
    told the target: the target may have no pip)."""

    def __init__(
        self, blocking: Sequence[tuple[str, str, str, str]], uninstall: Sequence[str]
    ) -> None:
        self.blocking = tuple(blocking)
        self.uninstall = tuple(uninstall)
        super().__init__(
            f"{len(self.blocking)} installed distribution(s) have a version that is not "
            "PEP 440; nothing was installed",
            details=[f"{n} {v!r} at {where}: {why}" for n, v, where, why in self.blocking],
            hint=f"uninstall them with pip, which removes the files their RECORD lists "
            f"(`{command_line(self.uninstall)}`), then install again; a release with a "
            "valid version can be installed back afterwards",
        )

    def fields(self) -> dict[str, object]:
        return {
            "blocking": [
                {"name": n, "version": v, "dist_info": where, "why": why}
                for n, v, where, why in self.blocking
            ],
            "uninstall": list(self.uninstall),
        }


class InstalledTwiceError(WheelhouseError):
    """Distributions the install would replace are installed twice: ``copies`` holds, for
    each, (name, the copy Python finds first, the other copies), each copy "VERSION at
    PATH"."""

    def __init__(self, copies: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        self.copies = tuple((n, first, tuple(rest)) for n, first, rest in copies)
        super().__init__(
            f"{len(self.copies)} distribution(s) the install replaces are installed more than "
            "once; nothing was installed",
            details=[
                f"{n}: {first} (the one Python finds), and {', '.join(rest)}"
                for n, first, rest in self.copies
            ],
            hint="a replaced copy's files would stay behind the other's: delete the metadata "
            "folder of the stale copy (an upgrade that was interrupted leaves one), check "
            "with `wh verify`, then install again",
        )

    def fields(self) -> dict[str, object]:
        return {"copies": [{"name": n, "first": f, "others": list(r)} for n, f, r in self.copies]}


class BundleOverwriteError(WheelhouseError):
    """Two wheels of the bundle for ``profile`` write one file (``overwrites``: "A and B
    both write F" lines), so its install would fail; nothing was written to ``output``."""

    def __init__(self, output: Path, profile: str, overwrites: Sequence[str]) -> None:
        self.output = output
        self.profile = profile
        self.overwrites = tuple(overwrites)
        writers = sorted({line.split(" and ", 1)[0] for line in self.overwrites})
        super().__init__(
            f"the bundle's install would fail: {len(self.overwrites)} file(s) are written "
            f"by two of its wheels; no bundle was written to {output}",
            details=self.overwrites,
            hint=allow_overwrite_hint(writers, f"[profile.{profile}]"),
        )

    def fields(self) -> dict[str, object]:
        return {
            "output": str(self.output),
            "profile": self.profile,
            "overwrites": list(self.overwrites),
        }


class UnportablePathsError(WheelhouseError):
    """Paths in the locked wheels cannot be written on the bundle's ``system`` (Windows or
    macOS) as named (``problems``: one line each)."""

    def __init__(self, system: str, problems: Sequence[str]) -> None:
        self.system = system
        self.problems = tuple(problems)
        super().__init__(
            f"{len(self.problems)} path(s) in the locked wheels cannot be written on {system} "
            "as named; nothing was bundled",
            details=_capped(self.problems, 50),
            hint=f"these wheels would install wrongly or overwrite each other on {system}: "
            "replace them with builds made for the target, or leave them out of the profile",
        )

    def fields(self) -> dict[str, object]:
        return {"system": self.system, "problems": list(self.problems)}


class ToolWheelsError(WheelhouseError):
    """wh's own wheels for a bundle cannot be had: ``target`` None where wh does not run
    from its source tree (so its wheel cannot be built), else the target its dependencies
    (``missing``, one line each) have no wheels for."""

    def __init__(self, target: str | None, missing: Sequence[str] = ()) -> None:
        self.target = target
        self.missing = tuple(missing)
        if target is None:
            super().__init__(
                "wh is not running from its source tree, so its wheel cannot be built",
                hint="pass --wh-wheels DIR holding wh's wheel and its dependencies for the target",
            )
        else:
            super().__init__(
                f"wh's own dependencies cannot be had as wheels for {target}",
                details=self.missing,
                hint="pass --wh-wheels DIR holding wh's wheel and its dependencies",
            )

    def fields(self) -> dict[str, object]:
        return {"target": self.target, "missing": list(self.missing)}


class FetchMissingError(WheelhouseError):
    """`wh fetch` could not have every wheel (``missing``: one line of advice each);
    ``downloaded`` True where it downloaded the others."""

    def __init__(self, missing: Sequence[str], *, downloaded: bool) -> None:
        self.missing = tuple(missing)
        self.downloaded = downloaded
        n = len(self.missing)
        super().__init__(
            f"{n} wheel(s) could not be had"
            if downloaded
            else f"{n} requirement(s) cannot be had as wheels; nothing was downloaded",
            details=self.missing,
            hint="follow the advice on each line, then run `wh fetch` again: wheels already "
            "in the wheelhouse are checked, not downloaded twice",
        )

    def fields(self) -> dict[str, object]:
        return {"missing": list(self.missing), "downloaded": self.downloaded}


class WheelMetadataError(WheelhouseError):
    """The METADATA of the wheel ``filename`` cannot be read: ``problem`` None where it has
    not exactly one ``.dist-info/METADATA``."""

    def __init__(self, filename: str, problem: str | None = None) -> None:
        self.filename = filename
        self.problem = problem
        if problem is None:
            super().__init__(f"{filename}: expected one .dist-info/METADATA")
        else:
            super().__init__(
                f"{filename}: {problem}",
                hint="replace the wheel with a sound build; `wh scan` excludes it too",
            )

    def fields(self) -> dict[str, object]:
        return {"filename": self.filename, "problem": self.problem}


class RequiresDistError(WheelhouseError):
    """The wheel ``filename`` on ``index`` declares a Requires-Dist (``requirement``) that
    is not a valid requirement (``problem``: the parser's words)."""

    def __init__(self, filename: str, index: str, requirement: str, problem: str) -> None:
        self.filename = filename
        self.index = index
        self.requirement = requirement
        self.problem = problem
        super().__init__(
            f"{filename} on {index}: Requires-Dist {requirement!r} is not a valid requirement "
            f"({problem})",
            hint="exclude this version with a tighter requirement or an override",
        )

    def fields(self) -> dict[str, object]:
        return {
            "filename": self.filename,
            "index": self.index,
            "requirement": self.requirement,
            "problem": self.problem,
        }


IndexRule = Literal[
    "unreachable",
    "page-status",
    "file-status",
    "range-status",
    "download-status",
    "sha256",
    "download-sha256",
    "download-failed",
    "stream",
    "bad-page",
]


class IndexUnavailable(WheelhouseError):
    """The index could not be read at ``url``: "unreachable" (``problem``: the network's
    words), "page-status", "file-status" or "download-status" (it answered HTTP
    ``status``), "range-status" (a Range request for ``byte_range`` answered ``status``),
    "sha256" or "download-sha256" (the file's sha256 is ``problem``, the index says
    ``expected``), "download-failed" (``attempts`` downloads failed, the last with
    ``problem``), "stream" (the transfer broke: ``problem``) or "bad-page" (not a project
    page: ``problem``)."""

    def __init__(
        self,
        url: str,
        rule: IndexRule,
        *,
        status: int | None = None,
        problem: str = "",
        expected: str = "",
        attempts: int = 0,
        byte_range: str = "",
    ) -> None:
        self.url = url
        self.rule = rule
        self.status = status
        self.problem = problem
        self.expected = expected
        self.attempts = attempts
        self.byte_range = byte_range
        again = "run `wh fetch` again; if it persists the index lacks this file"
        hint = ""
        match rule:
            case "unreachable":
                message = f"cannot reach {url}: {problem}"
                hint = (
                    "check the network or the index URL (`pip config list` shows the "
                    "configured one), then run `wh fetch` again"
                )
            case "page-status":
                message = f"{url} answered HTTP {status}"
                hint = "check the index URL; run `wh fetch` again when the index is back"
            case "file-status":
                message, hint = f"{url} answered HTTP {status}", again
            case "download-status":
                message = f"{url} answered HTTP {status}"
            case "range-status":
                message = f"{url}: Range {byte_range} answered {status}"
            case "sha256":
                message = f"{url}: sha256 {problem}, the index says {expected}"
                hint = "the index or a proxy served a different file; run `wh fetch` again"
            case "download-sha256":
                message = f"{url}: sha256 {problem}, the index says {expected}"
                hint = "the download was corrupted or the index changed; run `wh fetch` again"
            case "download-failed":
                message = f"downloading {url} failed {attempts} times: {problem}"
                hint = "run `wh fetch` again: the partial file is resumed"
            case "stream":
                message = f"{url}: {problem}"
            case "bad-page":
                message = f"{url}: not a valid project page ({problem})"
                hint = "check that the URL is a simple index root (it ends in /simple/)"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"url": self.url, "rule": self.rule}
        if self.status is not None:
            out["status"] = self.status
        if self.problem:
            out["problem"] = self.problem
        if self.expected:
            out["expected"] = self.expected
        if self.attempts:
            out["attempts"] = self.attempts
        if self.byte_range:
            out["range"] = self.byte_range
        return out


RangeRule = Literal[
    "no-end-record",
    "no-zip64-locator",
    "no-zip64-record",
    "bad-central-entry",
    "metadata-count",
    "bad-local-header",
    "inflate",
    "method",
]


class RangeProblem(WheelhouseError):
    """The zip structure of the wheel ``what`` could not be read remotely: "no-end-record"
    (none in its last ``number`` bytes), "no-zip64-locator", "no-zip64-record",
    "bad-central-entry" (entry ``number``), "metadata-count" (``number`` METADATA members,
    not one), "bad-local-header" (of ``member``), "inflate" (``member`` does not inflate:
    ``problem``) or "method" (``member`` uses compression method ``number``)."""

    def __init__(
        self, what: str, rule: RangeRule, *, number: int = 0, member: str = "", problem: str = ""
    ) -> None:
        self.what = what
        self.rule = rule
        self.number = number
        self.member = member
        self.problem = problem
        match rule:
            case "no-end-record":
                text = f"no zip end record in its last {number} bytes"
            case "no-zip64-locator":
                text = "zip64 end locator missing"
            case "no-zip64-record":
                text = "zip64 end record missing"
            case "bad-central-entry":
                text = f"central directory entry {number} is malformed"
            case "metadata-count":
                text = f"expected one .dist-info/METADATA, found {number}"
            case "bad-local-header":
                text = f"local header of {member} is malformed"
            case "inflate":
                text = f"{member} does not inflate ({problem})"
            case "method":
                text = f"{member} uses zip compression method {number}"
        super().__init__(f"{what}: {text}")

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"what": self.what, "rule": self.rule}
        if self.rule in ("no-end-record", "bad-central-entry", "metadata-count", "method"):
            out["number"] = self.number
        if self.member:
            out["member"] = self.member
        if self.problem:
            out["problem"] = self.problem
        return out


# --- resolution (exit 4) --------------------------------------------------------------


class ResolutionConflictError(ResolutionError):
    """No versions of ``packages`` satisfy all their requirements from the wheelhouse
    ``source`` (requested by ``parents``); ``explanation`` says who asks for what and what
    the wheelhouse offers, ``advice`` holds one hint per package."""

    def __init__(
        self,
        packages: Sequence[str],
        source: str,
        parents: Sequence[str],
        explanation: Sequence[str],
        advice: Sequence[str],
    ) -> None:
        self.packages = tuple(packages)
        self.source = source
        self.parents = tuple(parents)
        self.explanation = tuple(explanation)
        self.advice = tuple(advice)
        super().__init__(
            f"cannot satisfy the requirements on {', '.join(self.packages)} from {source}"
            f" (requested by {', '.join(self.parents)})",
            details=self.explanation,
            hint="\n      ".join(self.advice),
        )

    def fields(self) -> dict[str, object]:
        return {
            "packages": list(self.packages),
            "source": self.source,
            "parents": list(self.parents),
            "advice": list(self.advice),
        }


class PackagesMissingError(ResolutionError):
    """The wheelhouse lacks ``packages`` the resolution needs (``problems``: one line each,
    saying what is wrong and who requires it)."""

    def __init__(self, packages: Sequence[str], problems: Sequence[str]) -> None:
        self.packages = tuple(sorted(packages))
        self.problems = tuple(problems)
        super().__init__(
            f"the wheelhouse lacks {len(self.packages)} package(s) the profile needs: "
            + ", ".join(self.packages),
            details=self.problems,
            hint="add wheels of all of them (online, `wh fetch PROFILE` fetches them in one go; "
            "`wh build` for a package without a wheel for this platform), and replace the "
            "broken ones",
        )

    def fields(self) -> dict[str, object]:
        return {"packages": list(self.packages), "problems": list(self.problems)}


class ResolutionGaveUpError(ResolutionError):
    """The resolver backtracked ``rounds`` times without a solution."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        super().__init__(
            f"resolution gave up after {rounds} rounds of backtracking",
            hint="pin the packages involved more tightly in the profile's requirements",
        )

    def fields(self) -> dict[str, object]:
        return {"rounds": self.rounds}


class BreakingPlanError(ResolutionError):
    """The plan breaks requirements (``broken``: one line each) of distributions installed
    in ``python`` outside the lock (``names``)."""

    def __init__(self, python: Path, broken: Sequence[str], names: Sequence[str]) -> None:
        self.python = python
        self.broken = tuple(broken)
        self.names = tuple(sorted(set(names)))
        super().__init__(
            f"the plan would break {len(self.broken)} requirement(s) of distributions "
            f"installed in {python} outside the lock; nothing was changed",
            details=self.broken,
            hint="add them to the profile so the lock resolves them with the rest ("
            + " ".join(f"-r {n}" for n in self.names)
            + "), or remove them from the environment deliberately",
        )

    def fields(self) -> dict[str, object]:
        return {"python": str(self.python), "broken": list(self.broken), "names": list(self.names)}


# --- lock (exit 5) --------------------------------------------------------------------


class LockStaleError(LockError):
    """`wh lock --check`: the lock at ``path`` is not what locking ``profile`` gives now
    (``problems``: each difference; the first 60 are shown)."""

    def __init__(self, path: Path, profile: str, problems: Sequence[str]) -> None:
        self.path = path
        self.profile = profile
        self.problems = tuple(problems)
        super().__init__(
            f"{path} is out of date",
            details=self.problems[:60],
            hint=f"re-lock with `wh lock {profile}` and review the diff",
        )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "profile": self.profile, "problems": list(self.problems)}


class LockSettingError(LockError):
    """The lock's ``[tool.wh] key`` is ``value``, none of the ``allowed`` words."""

    def __init__(self, path: Path, key: str, value: str, allowed: Sequence[str]) -> None:
        self.path = path
        self.key = key
        self.value = value
        self.allowed = tuple(allowed)
        super().__init__(
            f"{path}: [tool.wh] {key} {value!r} is not one of {', '.join(self.allowed)}",
            hint=f"re-lock it with `wh lock PROFILE`, or pass --{key}",
        )

    def fields(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "key": self.key,
            "value": self.value,
            "allowed": list(self.allowed),
        }


class LockBugError(LockError):
    """wh made a lock it must not write: ``filename`` names a wheel it has no sha256 for,
    or (None) the lock fails PEP 751 validation (``problem``)."""

    def __init__(self, problem: str, filename: str | None = None) -> None:
        self.problem = problem
        self.filename = filename
        if filename is not None:
            super().__init__(f"wh has no sha256 for {filename}; this is a bug in wh")
        else:
            super().__init__(f"wh produced an invalid lock: {problem}")

    def fields(self) -> dict[str, object]:
        return {"problem": self.problem, "filename": self.filename}


class WheelsSwappedError(LockError):
    """Wheels (``paths``) changed after their sha256 was checked, while being installed."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = tuple(paths)
        super().__init__(
            f"{len(self.paths)} wheel(s) changed after their sha256 was checked against the "
            "lock, while they were being installed; the install was refused",
            details=[f"{p}: replaced or rewritten since it was hashed" for p in self.paths],
            hint="find what writes the wheelhouse during installs (a sync tool, another "
            "user), stop it, and install again",
        )

    def fields(self) -> dict[str, object]:
        return {"paths": [str(p) for p in self.paths]}


BundleRule = Literal[
    "missing",
    "no-info",
    "no-manifest",
    "unreadable-manifest",
    "manifest-mismatch",
    "unsafe-entries",
    "not-an-archive",
    "unreadable-entry",
    "damaged-archive",
    "unreadable-info",
]


class BundleError(LockError):
    """The bundle at ``path`` (a folder or an archive) cannot be installed from: ``rule``
    is "missing" (nothing at ``path``), "no-info" (``member``, its info file, is missing),
    "no-manifest" or "unreadable-manifest" (``member``, its manifest; ``problem`` the OS's
    words), "manifest-mismatch" (``problems``: files that do not match the manifest),
    "unsafe-entries" (``problems``: archive entries that must not be unpacked),
    "not-an-archive" or "unreadable-entry" (``member``, an entry of the archive),
    "damaged-archive" (``problem``: what the zip or tar reader found) or "unreadable-info"
    (``member``, the info file, is not UTF-8 text; ``problem``)."""

    def __init__(
        self,
        path: Path,
        rule: BundleRule,
        *,
        member: str = "",
        problem: str = "",
        problems: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.rule = rule
        self.member = member
        self.problem = problem
        self.problems = tuple(problems)
        remake = "make the bundle again with `wh bundle`"
        message, hint, details = "", "", list(self.problems)
        match rule:
            case "missing":
                message, hint = f"bundle {path} does not exist", "pass the bundle file or folder"
            case "no-info":
                message = f"{path} is not a wh bundle: {member} is missing"
            case "no-manifest":
                message = f"{path} has no {member}; it is not a wh bundle or it was damaged"
                hint = remake
            case "unreadable-manifest":
                message = (
                    f"{path} has no readable {member} ({problem}); it is not a wh bundle or it "
                    "was damaged; nothing was installed"
                )
                hint = remake
            case "manifest-mismatch":
                message = (
                    f"bundle {path}: {len(self.problems)} file(s) do not match its manifest; "
                    "nothing was installed"
                )
                hint = "the bundle was damaged or tampered with: copy it again from its source"
            case "unsafe-entries":
                message = (
                    f"{path}: {len(self.problems)} unsafe entry(ies); nothing was unpacked or "
                    "installed"
                )
                details = _capped(self.problems, 20)
                hint = "the bundle was not made by `wh bundle`, or it was tampered with"
            case "not-an-archive":
                message = f"{path} is neither a zip nor a tar archive"
            case "unreadable-entry":
                message = f"{path}: cannot read {member!r}"
            case "damaged-archive":
                message = (
                    f"{path} cannot be unpacked: it is damaged or cut short ({problem}); "
                    "nothing was installed"
                )
                hint = "copy the bundle again from its source, or make it again with `wh bundle`"
            case "unreadable-info":
                message = f"{path}: {member} cannot be read ({problem}); nothing was installed"
                hint = remake
        super().__init__(message, details=details, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"path": str(self.path), "rule": self.rule}
        if self.member:
            out["member"] = self.member
        if self.problem:
            out["problem"] = self.problem
        if self.problems:
            out["problems"] = list(self.problems)
        return out


SignatureRule = Literal[
    "unsigned-but-trusted", "unsigned", "malformed", "no-trusted-key", "untrusted", "mismatch"
]


class BundleSignatureError(LockError):
    """The bundle at ``root`` is not signed as asked: ``rule`` is "unsigned-but-trusted"
    (``trusted`` keys were given, the bundle has no signature), "unsigned" (and no
    --allow-unsigned), "malformed" (its ``signature`` file), "no-trusted-key" (signed by
    ``signer``, no key trusted), "untrusted" (``signer`` is none of ``trusted``) or
    "mismatch" (the signature does not match the manifest)."""

    def __init__(
        self,
        root: Path,
        rule: SignatureRule,
        *,
        signer: str = "",
        trusted: Sequence[str] = (),
        signature: Path | None = None,
    ) -> None:
        self.root = root
        self.rule = rule
        self.signer = signer
        self.trusted = tuple(sorted(trusted))
        self.signature = signature
        keys = ", ".join(self.trusted)
        match rule:
            case "unsigned-but-trusted":
                message = (
                    f"bundle {root} is not signed, and --trust asks for a signature by "
                    f"{keys}; nothing was installed"
                )
                hint = (
                    "get the signed bundle from its maker (`wh bundle --sign KEY`); an "
                    "unsigned copy may have been replaced on the way"
                )
            case "unsigned":
                message = (
                    f"bundle {root} is not signed, so nothing says who made it; nothing was "
                    "installed"
                )
                hint = (
                    "ask its maker for a signed bundle (`wh bundle --sign KEY`) and pass "
                    "--trust KEY.pub, or pass --allow-unsigned if you checked the archive's "
                    "sha256 another way"
                )
            case "malformed":
                message = f"{signature} is malformed; nothing was installed"
                hint = "the bundle was damaged or tampered with: copy it again from its maker"
            case "no-trusted-key":
                message = (
                    f"bundle {root} is signed by {signer}, but no key is trusted; nothing was "
                    "installed"
                )
                hint = (
                    "pass --trust KEY.pub with the public key of the bundle's maker (compare "
                    f"its fingerprint with {signer} by `ssh-keygen -lf KEY.pub`)"
                )
            case "untrusted":
                message = (
                    f"bundle {root} is signed by {signer}, which is none of the trusted keys "
                    f"({keys}); nothing was installed"
                )
                hint = (
                    "pass --trust with the public key of the bundle's real maker; a bundle "
                    "signed by an unknown key may come from anyone"
                )
            case "mismatch":
                message = (
                    f"the signature of bundle {root} does not match its SHA256SUMS: the "
                    "manifest (and so the lock or a wheel) changed after signing; nothing was "
                    "installed"
                )
                hint = "the bundle was tampered with or damaged: copy it again from its maker"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"root": str(self.root), "rule": self.rule}
        if self.signer:
            out["signer"] = self.signer
        if self.trusted:
            out["trusted"] = list(self.trusted)
        if self.signature is not None:
            out["signature"] = str(self.signature)
        return out


# --- protection (exit 6) --------------------------------------------------------------


class ProtectedNotInstalledError(ProtectionError):
    """``name`` is protected but not installed in ``python``, and the plan would install
    its ``version`` from the wheelhouse (``required_by``: who asks for it); ``available``
    are the versions of it the wheelhouse has, newest first."""

    def __init__(
        self,
        name: str,
        version: str,
        python: Path,
        required_by: Sequence[str],
        available: Sequence[str],
    ) -> None:
        self.name = name
        self.version = version
        self.python = python
        self.required_by = tuple(required_by)
        self.available = tuple(available)
        builds = " or ".join(f"--protect '{name}=={v}'" for v in self.available)
        super().__init__(
            f"{name} is protected but not installed in {python}; the plan would install "
            f"{name} {version} from the wheelhouse",
            details=self.required_by,
            hint=f"install the {name} build you need into the environment first, or name the "
            "exact build to install from the wheelhouse: "
            + (builds or f"--protect '{name}==VERSION' (the wheelhouse has no {name} wheel)"),
        )

    def fields(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "python": str(self.python),
            "required_by": list(self.required_by),
            "available": list(self.available),
        }


class ProtectedVersionError(ProtectionError):
    """The profile (from ``source``) protects ``name`` ``version``, but the environment
    (``where``) has ``installed``."""

    def __init__(self, name: str, version: str, where: str, installed: str, source: str) -> None:
        self.name = name
        self.version = version
        self.where = where
        self.installed = installed
        self.source = source
        super().__init__(
            f"the profile protects {name} {version} but {where} has {name} {installed}",
            hint=f"install {name} {version} first, or correct the protection in {source}",
        )

    def fields(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "where": self.where,
            "installed": self.installed,
            "source": self.source,
        }


# --- install (exit 7) -----------------------------------------------------------------

JournalRule = Literal["unfinished", "unreadable", "foreign"]


class JournalError(InstallError):
    """The install journal in ``journal`` stands in the way: ``rule`` is "unfinished" (an
    install was interrupted), "unreadable" (``problem``) or "foreign" (it names ``paths``
    wh never journals)."""

    def __init__(
        self, journal: Path, rule: JournalRule, *, problem: str = "", paths: Sequence[str] = ()
    ) -> None:
        self.journal = journal
        self.rule = rule
        self.problem = problem
        self.paths = tuple(paths)
        match rule:
            case "unfinished":
                message = f"an unfinished install journal exists in {journal}"
                hint = "run `wh recover --python PATH` first"
            case "unreadable":
                message = f"the install journal in {journal} is unreadable ({problem})"
                hint = f"inspect {journal} by hand; its backup/ folder holds the moved-aside files"
            case "foreign":
                message = (
                    f"the install journal in {journal} names {len(self.paths)} path(s) wh never "
                    "journals; it was not written by wh for this environment, and nothing was "
                    "changed"
                )
                hint = (
                    f"inspect {journal} by hand (its backup/ folder holds moved-aside files), "
                    "then remove it"
                )
        super().__init__(message, details=self.paths, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"journal": str(self.journal), "rule": self.rule}
        if self.problem:
            out["problem"] = self.problem
        if self.paths:
            out["paths"] = list(self.paths)
        return out


FailedRule = Literal["move-aside", "restored", "rollback-failed"]


class InstallFailedError(InstallError):
    """The install failed on the file system (``problem``): "move-aside" (before any
    change), "restored" (rolled back) or "rollback-failed" (``rollback`` says why)."""

    def __init__(self, rule: FailedRule, problem: str, rollback: str = "") -> None:
        self.rule = rule
        self.problem = problem
        self.rollback = rollback
        match rule:
            case "move-aside":
                message = (
                    f"could not move aside the files this install replaces ({problem}); "
                    "nothing was changed"
                )
                hint = "close programs using the environment, free disk space, and retry"
            case "restored":
                message = (
                    f"the install failed: {problem}; the environment was restored to its "
                    "state before"
                )
                hint = "free disk space or fix permissions, then retry"
            case "rollback-failed":
                message = f"the install failed ({problem}) and rolling back failed too ({rollback})"
                hint = "free the disk or fix permissions, then run `wh recover --python PATH`"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule, "problem": self.problem}
        if self.rollback:
            out["rollback"] = self.rollback
        return out


class InjectedFaultError(InstallError):
    """``WH_TEST_FAULT`` asked for a failure after ``batch`` (tests only)."""

    def __init__(self, batch: int | str) -> None:
        self.batch = batch
        super().__init__(f"injected fault after batch {batch} (WH_TEST_FAULT)")

    def fields(self) -> dict[str, object]:
        return {"batch": self.batch}


StagingRule = Literal["unexpected-records", "unrecorded-files"]


class StagingError(InstallError):
    """The backend staged what wh did not expect: "unexpected-records" (``paths``: wheels
    whose RECORD is not where the mirror expects it) or "unrecorded-files" (``paths``:
    files no wheel's RECORD names; the first 20 are shown)."""

    def __init__(self, rule: StagingRule, paths: Sequence[str]) -> None:
        self.rule = rule
        self.paths = tuple(paths)
        n = len(self.paths)
        if rule == "unexpected-records":
            super().__init__(
                f"the backend staged {n} wheel(s) where wh did not expect them; "
                "the environment was not changed",
                details=self.paths,
                hint="report this with the output of `wh install -v`; install with "
                "--backend pip meanwhile",
            )
        else:
            super().__init__(
                f"the backend staged {n} file(s) that no wheel's RECORD names",
                details=self.paths[:20],
                hint="report this; install with --backend pip meanwhile",
            )

    def fields(self) -> dict[str, object]:
        return {"rule": self.rule, "paths": list(self.paths)}


class MoveError(InstallError):
    """The staged file ``source`` could not be moved to ``dest`` (``problem``)."""

    def __init__(self, source: Path, dest: Path, problem: str) -> None:
        self.source = source
        self.dest = dest
        self.problem = problem
        super().__init__(
            f"could not move {dest} into place: {problem}",
            details=[f"from {source}"],
            hint="remove what is in the way at that path (a folder where a file belongs, a "
            "file another program holds open), then retry",
        )

    def fields(self) -> dict[str, object]:
        return {"source": str(self.source), "dest": str(self.dest), "problem": self.problem}


class UvCacheError(InstallError):
    """The private uv cache ``cache`` could not be removed (``problem``)."""

    def __init__(self, cache: Path, problem: str) -> None:
        self.cache = cache
        self.problem = problem
        super().__init__(
            f"could not remove the private uv cache {cache}: {problem}",
            hint="close programs using files under it; the install was rolled back, retry",
        )

    def fields(self) -> dict[str, object]:
        return {"cache": str(self.cache), "problem": self.problem}


LinkModeRule = Literal["unknown", "unsupported", "backend"]


class LinkModeError(InstallError):
    """The link mode ``link_mode`` cannot be used: "unknown" (none of ``allowed``, asked for
    by ``source``), "unsupported" (``why`` the backend cannot; ``allowed`` are the modes it
    can, ``uv`` True where uv can do this one) or "backend" (``why``, refused by the
    backend itself)."""

    def __init__(
        self,
        link_mode: str,
        rule: LinkModeRule,
        *,
        source: str = "",
        why: str = "",
        allowed: Sequence[str] = (),
        uv: bool = False,
    ) -> None:
        self.link_mode = link_mode
        self.rule = rule
        self.source = source
        self.why = why
        self.allowed = tuple(allowed)
        self.uv = uv
        match rule:
            case "unknown":
                message = (
                    f"link mode {link_mode!r}, which {source} asks for, is not one of "
                    f"{', '.join(self.allowed)}; nothing was changed"
                )
                hint = "pass --link-mode copy, or re-lock with a valid link-mode"
            case "unsupported":
                modes = " or ".join(f"--link-mode {m}" for m in self.allowed)
                message = f"{why}, which {source} asks for; nothing was changed"
                hint = f"use {'--backend uv, or ' if uv else ''}{modes}"
            case "backend":
                message, hint = why, "use --backend uv, or --link-mode copy"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"link_mode": self.link_mode, "rule": self.rule}
        if self.source:
            out["source"] = self.source
        if self.why:
            out["why"] = self.why
        if self.allowed:
            out["allowed"] = list(self.allowed)
        if self.rule == "unsupported":
            out["uv"] = self.uv
        return out


class UnpredictedWritesError(InstallError):
    """The backend wrote paths no wheel predicted: ``new`` ones (the first 20 are shown)
    and ``changed`` ones it rewrote in place."""

    def __init__(self, new: Sequence[Path], changed: Sequence[Path]) -> None:
        self.new = tuple(new)
        self.changed = tuple(changed)
        details = [f"{p}: written, but no wheel's RECORD names it" for p in self.new[:20]]
        details += [
            f"{p}: rewritten in place, though no wheel names it; its earlier bytes could not "
            "be restored"
            for p in self.changed
        ]
        super().__init__(
            f"the backend wrote {len(self.new) + len(self.changed)} path(s) that no wheel "
            "predicted; the install was refused",
            details=details,
            hint="report this with the wheel and `wh install -v` output; a wheel's "
            "entry_points.txt that the backends read differently is the usual cause",
        )

    def fields(self) -> dict[str, object]:
        return {"new": [str(p) for p in self.new], "changed": [str(p) for p in self.changed]}


BackendRule = Literal["unavailable", "cannot-stage"]


class BackendError(InstallError):
    """The installer ``backend`` cannot do what was asked: "unavailable" (not installed)
    or "cannot-stage" (it installs into the environment only)."""

    def __init__(self, backend: str, rule: BackendRule) -> None:
        self.backend = backend
        self.rule = rule
        if rule == "unavailable":
            super().__init__(
                f"{backend} is not available", hint=f"install {backend}, or use --backend pip"
            )
        else:
            super().__init__(
                f"{backend} cannot write wheels into a staging folder: it installs into the "
                "environment only",
                hint="report this: wh stages only with a backend whose capabilities say it stages",
            )

    def fields(self) -> dict[str, object]:
        return {"backend": self.backend, "rule": self.rule}


class BackendFailedError(InstallError):
    """The backend's command failed: ``cause`` is the failed command's error, whose text
    and fields this one carries."""

    def __init__(self, cause: ProcessError) -> None:
        self.cause = cause
        super().__init__(cause.message, details=cause.details, hint="see the output above")

    def fields(self) -> dict[str, object]:
        return {"process": self.cause.fields()}


# --- verify (exit 8) ------------------------------------------------------------------


class VerificationFailedError(VerifyError):
    """The environment fails ``problems`` of the profile's checks; ``advice`` holds what
    can make them pass."""

    def __init__(self, problems: Sequence[str], advice: Sequence[str]) -> None:
        self.problems = tuple(problems)
        self.advice = tuple(advice)
        super().__init__(
            f"verification failed: {len(self.problems)} problem(s)",
            details=self.problems,
            hint="; ".join(self.advice) or "inspect with `wh why NAME`",
        )

    def fields(self) -> dict[str, object]:
        return {"problems": list(self.problems), "advice": list(self.advice)}


# --- profile (exit 9) -----------------------------------------------------------------

ProfileKeyRule = Literal[
    "requirement",
    "pinned-drop",
    "choice",
    "protection-version",
    "empty-protection",
    "unknown-keys",
    "not-a-list",
    "entry-keys",
    "entry-shape",
    "drop-shape",
    "two-overrides",
    "two-drops",
    "not-a-table",
    "snippet-code",
    "imports",
    "indexes",
]


class ProfileKeyError(ProfileError):
    """A key of a profile (``where``: its file and table) breaks ``rule``: "requirement"
    (``value`` is not a PEP 508 requirement; ``problem`` the parser's words),
    "pinned-drop" (a drop with a version, extras or URL), "choice" (``value`` is none of
    ``expected``), "protection-version" (a protection with an invalid version),
    "empty-protection", "unknown-keys" (``found``; ``expected`` the allowed ones),
    "not-a-list", "entry-keys" (an entry with unknown keys ``found``), "entry-shape" and
    "drop-shape" (an entry that is neither a string nor a table with ``expected``),
    "two-overrides" and "two-drops" (for the package ``value``), "not-a-table",
    "snippet-code" (a check snippet without code), "imports" (not a list of module names)
    or "indexes" (not a table of package = URL)."""

    def __init__(
        self,
        where: str,
        key: str,
        rule: ProfileKeyRule,
        *,
        value: str | None = None,
        found: Sequence[str] = (),
        expected: Sequence[str] = (),
        problem: str | None = None,
    ) -> None:
        self.where = where
        self.key = key
        self.rule = rule
        self.value = value
        self.found = tuple(found)
        self.expected = tuple(expected)
        self.problem = problem
        message, hint = self._text()
        super().__init__(
            f"{where}: {message}", hint=hint, details=[problem] if problem is not None else []
        )

    def _text(self) -> tuple[str, str]:
        key, value = self.key, self.value
        found, expected = ", ".join(self.found), ", ".join(self.expected)
        field = self.expected[0] if self.expected else ""
        match self.rule:
            case "requirement":
                return (
                    f"{key} {value!r} is not a valid requirement",
                    "write a PEP 508 requirement such as 'sglang-kernel==0.4.3'",
                )
            case "pinned-drop":
                return (
                    f"{key} {value!r} names a version, extras or URL",
                    "a drop is a name and an optional marker: 'uvloop; sys_platform == \"win32\"'",
                )
            case "choice":
                return (
                    f"{key} {value!r} is not one of {expected}",
                    f"set {key} to one of: {expected}",
                )
            case "protection-version":
                return (
                    f"protection {value!r} has an invalid version",
                    "write NAME or NAME==VERSION, e.g. torch==2.9.1+cu130",
                )
            case "empty-protection":
                return "empty protection", "write NAME or NAME==VERSION"
            case "unknown-keys":
                return f"unknown key(s) {found}", f"allowed keys: {expected}"
            case "not-a-list":
                return f"{key} must be a list", f"write {key} = [ ... ]"
            case "entry-keys":
                return f"{key} entry has unknown key(s) {found}", ""
            case "entry-shape":
                return (
                    f"each {key} entry must be a string or a table with {field!r}",
                    f'write {key} = [{{ {field} = "...", reason = "..." }}]',
                )
            case "drop-shape":
                return (
                    f"each {key} entry must be a string or a table with {field!r}",
                    'write drop = [{ name = "uvloop", marker = "sys_platform == \'win32\'", '
                    'reason = "..." }]',
                )
            case "two-overrides":
                return f"two overrides for {value}", "keep one override per package"
            case "two-drops":
                return f"two drops for {value}", "keep one drop per name"
            case "not-a-table":
                return f"{key} must be a table", f"write [profile.NAME.{key}]"
            case "snippet-code":
                return f"{key} entries need 'code'", ""
            case "imports":
                return f"{key} must be a list of module names", ""
            case "indexes":
                return (
                    f"{key} must be a table of package = index URL",
                    'write indexes = { torch = "https://download.pytorch.org/whl/cu130" }',
                )

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"where": self.where, "key": self.key, "rule": self.rule}
        if self.value is not None:
            out["value"] = self.value
        if self.found:
            out["found"] = list(self.found)
        if self.expected:
            out["expected"] = list(self.expected)
        if self.problem is not None:
            out["problem"] = self.problem
        return out


class ProfileFileError(ProfileError):
    """The profile file ``path`` is not valid TOML (``problem``: the parser's words), or
    (``problem`` None) its 'profile' is not a table of tables."""

    def __init__(self, path: Path, problem: str | None = None) -> None:
        self.path = path
        self.problem = problem
        if problem is None:
            super().__init__(f"{path}: 'profile' must be a table of tables")
        else:
            super().__init__(
                f"{path}: not valid TOML ({problem})", hint="fix the syntax at the line named"
            )

    def fields(self) -> dict[str, object]:
        return {"path": str(self.path), "problem": self.problem}


class UnknownProfileError(ProfileError):
    """No profile is named ``name``; ``known`` are the ones there are."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"no profile named {name!r}",
            hint=f"known profiles: {', '.join(self.known) or 'none'}; define one under "
            f"[profile.{name}] in wh.toml or [tool.wh.profile.NAME] in pyproject.toml",
        )

    def fields(self) -> dict[str, object]:
        return {"name": self.name, "known": list(self.known)}


class EmptyProfileError(ProfileError):
    """The profile ``name`` has no requirements to lock or fetch."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"profile {name!r} has no requirements",
            hint="add requirements to the profile or pass --requirement",
        )

    def fields(self) -> dict[str, object]:
        return {"name": self.name}


class IndexOptionError(ProfileError):
    """An ``--index`` value is not NAME=URL."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(
            f"--index {value!r} is not NAME=URL",
            hint="e.g. --index torch=https://download.pytorch.org/whl/cu130",
        )

    def fields(self) -> dict[str, object]:
        return {"option": "--index", "value": self.value}


class ProtectionVersionError(ProfileError):
    """A lock for the declared ``target`` protects ``name`` without naming its version."""

    def __init__(self, name: str, target: str) -> None:
        self.name = name
        self.target = target
        super().__init__(
            f"protection of {name} needs a version for a declared target ({target})",
            hint=f"pass --protect '{name}==VERSION' with the version installed on the target "
            "machine, e.g. torch==2.9.1+cu130",
        )

    def fields(self) -> dict[str, object]:
        return {"name": self.name, "target": self.target}


KeyRule = Literal["unreadable", "passphrase", "not-private", "not-public", "not-ed25519", "exists"]


class KeyFileError(ProfileError):
    """The key file ``path`` (a signing key where ``private``, else a trusted public key)
    cannot be used: "unreadable" (``problem``: the OS's words), "passphrase" (encrypted),
    "not-private" or "not-public" (not a key wh reads; ``problem`` the parser's words),
    "not-ed25519" (``problem`` names the kind of key it is) or "exists" (`wh keygen`
    never overwrites it)."""

    def __init__(self, path: Path, rule: KeyRule, *, private: bool, problem: str = "") -> None:
        self.path = path
        self.rule = rule
        self.private = private
        self.problem = problem
        match rule:
            case "unreadable":
                what = "the signing key" if private else "the trusted key"
                message = f"cannot read {what} {path} ({problem})"
                hint = (
                    "make one with `wh keygen KEY` (or `ssh-keygen -t ed25519 -N '' -f KEY`)"
                    if private
                    else "pass --trust with the signer's public key file (KEY.pub)"
                )
            case "passphrase":
                message = (
                    f"the signing key {path} is protected by a passphrase, which wh does not "
                    "ask for"
                )
                hint = (
                    "sign with an unencrypted copy kept offline, e.g. "
                    "`ssh-keygen -p -N '' -f COPY` on a copy of the key"
                )
            case "not-private":
                message = f"{path} is not an ed25519 private key wh can read ({problem})"
                hint = (
                    "use a key made by `wh keygen KEY`, `ssh-keygen -t ed25519` or "
                    "`openssl genpkey -algorithm ed25519`"
                )
            case "not-public":
                message = f"{path} is not an ed25519 public key wh can read ({problem})"
                hint = (
                    "pass the signer's KEY.pub (OpenSSH `ssh-ed25519 ...` line or PEM public key)"
                )
            case "not-ed25519":
                message = f"{path} is a {problem}, not an ed25519 key"
                hint = "bundles are signed with ed25519 keys only" + (
                    ": `wh keygen KEY`" if private else ""
                )
            case "exists":
                message = f"{path} exists; wh keygen never overwrites a key"
                hint = "choose another path, or remove the old key deliberately"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"path": str(self.path), "rule": self.rule}
        out["private"] = self.private
        if self.problem:
            out["problem"] = self.problem
        return out


# --- target (exit 10) -----------------------------------------------------------------

TargetOptionsRule = Literal["python-and-declared", "half-declared", "install-declared"]


class TargetOptionsError(TargetError):
    """The target options do not name one usable target: "python-and-declared" (--python
    with --platform/--python-version), "half-declared" (one of those without the other)
    or "install-declared" (an install given a declared target)."""

    def __init__(self, rule: TargetOptionsRule) -> None:
        self.rule = rule
        match rule:
            case "python-and-declared":
                message = "--python cannot be combined with --platform/--python-version"
                hint = (
                    "use --python for a live interpreter, or both --platform and "
                    "--python-version for a declared target"
                )
            case "half-declared":
                message = "a declared target needs both --platform and --python-version"
                hint = "e.g. --platform win_amd64 --python-version 3.12"
            case "install-declared":
                message = "install needs a live interpreter, not a declared target"
                hint = "use --python PATH (lock for a declared target with `wh lock`)"
        super().__init__(message, hint=hint)

    def fields(self) -> dict[str, object]:
        return {"rule": self.rule}


class NoTargetError(TargetError):
    """No --python was given and no usable venv is active: ``venv`` is the active one
    (wh's own, ``own``) or None."""

    def __init__(self, venv: str | None, own: Path) -> None:
        self.venv = venv
        self.own = own
        super().__init__(
            "no target environment: no --python was given and "
            + (
                f"the active environment {venv} is wh's own"
                if venv
                else "no virtual environment is active"
            ),
            hint="name the target with --python PATH (an interpreter or a venv folder), or "
            "activate the venv to install into (VIRTUAL_ENV); wh never installs into the "
            f"environment it runs from ({own})",
        )

    def fields(self) -> dict[str, object]:
        return {"venv": self.venv, "own": str(self.own)}


InterpreterRule = Literal["missing", "unprobed", "not-json", "too-old", "no-markers", "prints"]


class InterpreterError(TargetError):
    """The target interpreter ``python`` cannot be used: "missing" (it does not exist),
    "unprobed" (its probe failed; ``output`` the failure), "not-json" (its answer is not
    JSON: ``problem``; ``output`` the last lines it printed), "too-old" (``version``
    is older than the ``packaging`` wh's probe runs needs), "no-markers" (its answer lacks them) or
    "prints" (it prints ``output`` to stdout as it starts, which uv cannot work with)."""

    def __init__(
        self,
        python: Path,
        rule: InterpreterRule,
        *,
        problem: str = "",
        output: Sequence[str] = (),
        version: str = "",
        packaging: str = "",
    ) -> None:
        self.python = python
        self.rule = rule
        self.problem = problem
        self.output = tuple(output)
        self.version = version
        self.packaging = packaging
        use = "pass --python with a CPython 3.10+ interpreter or a venv folder"
        details: Sequence[str] = self.output
        match rule:
            case "missing":
                message = f"target interpreter {python} does not exist"
                hint = "pass --python with the path of an existing interpreter or venv"
            case "unprobed":
                message = f"target interpreter {python} could not be probed"
                hint = "check that it is a working CPython 3.10 or newer"
            case "not-json":
                message = (
                    f"{python} is not a Python interpreter wh can use: its answer to the probe "
                    f"is not JSON ({problem})"
                )
                hint = (
                    f"{use}, and check that nothing in its site-packages replaces the json module"
                )
            case "too-old":
                message = (
                    f"{python} is Python {version}; wh needs a target of Python 3.10 or newer "
                    f"(its probe runs packaging {packaging}, which needs 3.10)"
                )
                hint = (
                    "create the target venv with Python 3.10 or newer, e.g. `py -3.12 -m venv "
                    "VENV` on Windows or `python3.12 -m venv VENV`"
                )
            case "no-markers":
                message = (
                    f"{python} is not a Python interpreter wh can use: its answer to the probe "
                    "lacks the environment's markers"
                )
                hint = use
            case "prints":
                message = (
                    f"{python} prints to stdout as it starts, which uv cannot work with; "
                    "nothing was installed"
                )
                details = [f"start-up output: {line}" for line in self.output]
                hint = (
                    "use --backend pip, or remove the print from the .pth file (or "
                    "sitecustomize) in its site-packages that prints it"
                )
        super().__init__(message, details=details, hint=hint)

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"python": str(self.python), "rule": self.rule}
        if self.problem:
            out["problem"] = self.problem
        if self.output:
            out["output"] = list(self.output)
        if self.version:
            out["version"] = self.version
        if self.packaging:
            out["packaging"] = self.packaging
        return out


class VenvMismatchError(TargetError):
    """``python`` reports its environment at ``prefix``, but its pyvenv.cfg is in
    ``venv``."""

    def __init__(self, python: Path, prefix: Path, venv: Path) -> None:
        self.python = python
        self.prefix = prefix
        self.venv = venv
        super().__init__(
            f"{python} reports its environment at {prefix}, but its pyvenv.cfg is in {venv}",
            hint="pass --python with the interpreter of the venv to install into",
        )

    def fields(self) -> dict[str, object]:
        return {"python": str(self.python), "prefix": str(self.prefix), "venv": str(self.venv)}


class DeclaredTargetError(TargetError):
    """A declared target's ``option`` (--platform or --python-version) has a ``value`` wh
    does not know; ``known`` are the platform aliases it does."""

    def __init__(self, option: str, value: str, known: Sequence[str] = ()) -> None:
        self.option = option
        self.value = value
        self.known = tuple(known)
        if option == "--platform":
            super().__init__(
                f"unknown platform {value!r}",
                hint="use a wheel platform tag (win_amd64, manylinux_2_28_x86_64, "
                "macosx_11_0_arm64, musllinux_1_2_x86_64) or one of: " + ", ".join(self.known),
            )
        else:
            super().__init__(
                f"invalid {option} {value!r}", hint="give a CPython version such as 3.12 or 3.12.4"
            )

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"option": self.option, "value": self.value}
        if self.known:
            out["known"] = list(self.known)
        return out


class LongPathsError(TargetError):
    """Files of the install (``paths``; the first 20 are shown) would reach ``limit``
    characters under ``prefix``, which Windows refuses without long paths."""

    def __init__(self, prefix: str, paths: Sequence[str], limit: int) -> None:
        self.prefix = prefix
        self.paths = tuple(paths)
        self.limit = limit
        super().__init__(
            f"{len(self.paths)} file(s) of this install would have paths of {limit} characters "
            f"or more under {prefix}, which Windows refuses without long paths; nothing was "
            "installed",
            details=_capped(self.paths, 20),
            hint="enable long paths (as administrator: New-ItemProperty -Path "
            "HKLM:\\SYSTEM\\CurrentControlSet\\Control\\FileSystem -Name LongPathsEnabled "
            "-Value 1 -PropertyType DWORD -Force, then open a new shell), or use a venv with "
            "a shorter path, such as C:\\venvs\\ocr",
        )

    def fields(self) -> dict[str, object]:
        return {"prefix": self.prefix, "paths": list(self.paths), "limit": self.limit}


# --- busy (exit 12) -------------------------------------------------------------------


class EnvironmentHeldError(EnvironmentLockedError):
    """``holder`` holds the environment ``prefix`` (through ``lock_file``) past
    ``timeout`` seconds."""

    def __init__(self, prefix: Path, holder: str, timeout: float, lock_file: str) -> None:
        self.prefix = prefix
        self.holder = holder
        self.timeout = timeout
        self.lock_file = lock_file
        super().__init__(
            f"{holder} holds {prefix}; gave up after {timeout:g} s",
            details=[f"lock file: {lock_file}"],
            hint="wait for it to finish, or retry with a longer --lock-timeout",
        )

    def fields(self) -> dict[str, object]:
        return {
            "prefix": str(self.prefix),
            "holder": self.holder,
            "timeout": self.timeout,
            "lock_file": self.lock_file,
        }


class InstallStillRunningError(EnvironmentLockedError):
    """Processes (``live``: what, pid) of the interrupted install ``description`` still
    run, so it cannot be rolled back."""

    def __init__(self, description: str, live: Sequence[tuple[str, int]]) -> None:
        self.description = description
        self.live = tuple(live)
        super().__init__(
            "environment busy: a process of the interrupted install "
            f"{description!r} is still running; nothing was rolled back",
            details=[f"{what or 'process'} (pid {pid}) is alive" for what, pid in self.live],
            hint="wait for it to exit (or end it), then run `wh recover --python PATH`; "
            "`--lock-timeout` says how long wh waits",
        )

    def fields(self) -> dict[str, object]:
        return {
            "description": self.description,
            "live": [{"what": what, "pid": pid} for what, pid in self.live],
        }


# --- process (exit 13) ----------------------------------------------------------------

CommandRule = Literal["cannot-run", "timeout", "failed"]


class CommandError(ProcessError):
    """The command ``command`` (shown as ``shown``; ``what`` it does) failed: "cannot-run"
    (``problem``: the OS's words), "timeout" (after ``timeout`` s) or "failed" (exit
    ``returncode``; ``output`` the last lines it printed)."""

    def __init__(
        self,
        command: str,
        shown: str,
        rule: CommandRule,
        *,
        what: str = "",
        problem: str = "",
        timeout: float | None = None,
        returncode: int | None = None,
        output: Sequence[str] = (),
    ) -> None:
        self.command = command
        self.shown = shown
        self.rule = rule
        self.what = what
        self.problem = problem
        self.timeout = timeout
        self.returncode = returncode
        self.output = tuple(output)
        doing = what or command
        match rule:
            case "cannot-run":
                super().__init__(
                    f"cannot run {command}: {problem}",
                    details=[shown],
                    hint="check that the program exists and is executable",
                )
            case "timeout":
                super().__init__(f"{doing} did not finish within {timeout} s", details=[shown])
            case "failed":
                super().__init__(
                    f"{doing} failed with exit code {returncode}", details=[shown, *self.output]
                )

    def fields(self) -> dict[str, object]:
        out: dict[str, object] = {"command": self.command, "shown": self.shown, "rule": self.rule}
        if self.what:
            out["what"] = self.what
        if self.problem:
            out["problem"] = self.problem
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.returncode is not None:
            out["returncode"] = self.returncode
        if self.output:
            out["output"] = list(self.output)
        return out

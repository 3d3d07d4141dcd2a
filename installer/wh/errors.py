"""The one error hierarchy of wh: every refusal carries its data, a fix, and an exit code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar


class WhError(Exception):
    """Base of every error wh raises on purpose.

    ``message`` says what went wrong, ``hint`` says what the user can do about it.
    ``details`` are extra lines (one problem each) rendered under the message.
    A subclass whose message is built from data takes that data as typed attributes,
    builds its message and hint from them, and names them in ``fields()``: ``to_json``
    carries them under "fields" (an error without fields has none).
    """

    exit_code = 1
    kind = "error"

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
        return out


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


class BackendError(BuildError):
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

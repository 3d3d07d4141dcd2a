"""A CMake configure run on paper: which targets, sources, flags and fetches a platform gets.

Walks the commands of a CMakeLists (and the files it include()s) in order, evaluating
if() with the target platform's variables, and records what configure would create. It
knows the commands that decide a build's shape (set, option, list, file(GLOB), include,
FetchContent_*, add_subdirectory, add_library/Python_add_library, target_*); any other
command changes nothing here. function()/macro() bodies are not run.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from wh.kernels.cmakeparse import Command, parse
from wh.kernels.conditions import eval_cmake

_VAR = re.compile(r"\$\{([A-Za-z0-9_.+-]+)\}")
_GENCODE = re.compile(r"-gencode[= ]arch=(compute_\w+),code=(\[[^\]]*\]|[\w]+)")
_LIB_KEYWORDS = {
    "MODULE",
    "SHARED",
    "STATIC",
    "OBJECT",
    "INTERFACE",
    "WITH_SOABI",
    "EXCLUDE_FROM_ALL",
}
_SCOPES = {"PRIVATE", "PUBLIC", "INTERFACE"}


@dataclass
class Target:
    """A library target as configure leaves it."""

    name: str
    file: str
    line: int
    sources: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    cuda_architectures: str = ""

    def gencodes(self) -> list[str]:
        """The ``sm_XX`` (SASS) and ``compute_XX`` (PTX) codes its ``-gencode`` flags and its
        CUDA_ARCHITECTURES (from CMAKE_CUDA_ARCHITECTURES, ``86-real;86-virtual``) ask for."""
        codes = set(gencode_codes(";".join(self.options)))
        for arch in (a for a in self.cuda_architectures.split(";") if a):
            num, _, kind = arch.partition("-")
            if num.isdigit() or num[:-1].isdigit():
                if kind in ("", "real"):
                    codes.add(f"sm_{num}")
                if kind in ("", "virtual"):
                    codes.add(f"compute_{num}")
        return sorted(codes)


@dataclass
class Configured:
    """What one platform's configure would produce."""

    variables: dict[str, str]
    targets: dict[str, Target] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    subdirectories: list[str] = field(default_factory=list)
    included: list[str] = field(default_factory=list)
    missing_includes: list[str] = field(default_factory=list)


def gencode_codes(flags: str) -> list[str]:
    """``-gencode=arch=compute_86,code=[sm_86,compute_86]`` -> ``["compute_86", "sm_86"]``."""
    codes: set[str] = set()
    for _arch, code in _GENCODE.findall(flags):
        codes.update(c.strip() for c in code.strip("[]").split(",") if c.strip())
    return sorted(codes)


def expand(value: str, variables: Mapping[str, str]) -> str:
    """``${VAR}`` references replaced (innermost first), unknown ones by nothing."""
    for _ in range(8):
        new = _VAR.sub(lambda m: variables.get(m.group(1), ""), value)
        if new == value:
            break
        value = new
    return value


def _split(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p for p in v.split(";") if p)
    return out


class _Run:
    def __init__(self, files: Mapping[str, str], variables: Mapping[str, str]) -> None:
        self.files = files
        self.cfg = Configured(dict(variables))

    def _expanded(self, cmd: Command, skip: int = 0) -> list[str]:
        """Arguments after ``skip`` with variables expanded; unquoted ones split on ';'."""
        out: list[str] = []
        for a in cmd.args[skip:]:
            v = expand(a.value, self.cfg.variables)
            if a.quoted:
                out.append(v)
            else:
                out.extend(p for p in v.split(";") if p)
        return out

    def run_file(self, rel: str, depth: int = 0) -> None:
        if depth > 16 or rel not in self.files:
            return
        self.cfg.included.append(rel)
        saved = self.cfg.variables.get("CMAKE_CURRENT_LIST_DIR")
        self.cfg.variables["CMAKE_CURRENT_LIST_DIR"] = posixpath.dirname(rel) or "."
        self._run(parse(self.files[rel], rel), depth)
        if saved is not None:
            self.cfg.variables["CMAKE_CURRENT_LIST_DIR"] = saved

    def _cond(self, cmd: Command) -> bool:
        expr = " ".join(a.raw for a in cmd.args)
        return eval_cmake(expr, self.cfg.variables)

    def _run(self, cmds: list[Command], depth: int) -> None:
        stack: list[tuple[bool, bool]] = []  # (this branch runs, some branch of the chain ran)
        body = 0  # inside function()/macro() bodies
        for cmd in cmds:
            low = cmd.lname
            if body:
                if low in ("function", "macro"):
                    body += 1
                elif low in ("endfunction", "endmacro"):
                    body -= 1
                continue
            outer = all(a for a, _ in stack)
            if low == "if":
                c = outer and self._cond(cmd)
                stack.append((c, c))
                continue
            if low == "elseif" and stack:
                _, taken = stack.pop()
                outer = all(a for a, _ in stack)
                c = outer and not taken and self._cond(cmd)
                stack.append((c, taken or c))
                continue
            if low == "else" and stack:
                _, taken = stack.pop()
                outer = all(a for a, _ in stack)
                stack.append((outer and not taken, True))
                continue
            if low == "endif" and stack:
                stack.pop()
                continue
            if not outer:
                if low in ("function", "macro"):
                    body += 1
                continue
            if low in ("function", "macro"):
                body += 1
                continue
            self._command(cmd, depth)

    def _command(self, cmd: Command, depth: int) -> None:
        low, var = cmd.lname, self.cfg.variables
        vals = self._expanded(cmd)
        if low == "set" and vals:
            name, rest = vals[0], vals[1:]
            if "PARENT_SCOPE" in rest:
                rest = rest[: rest.index("PARENT_SCOPE")]
            if "CACHE" in rest:
                force = "FORCE" in rest
                value = rest[: rest.index("CACHE")]
                if name in var and not force:
                    return
                rest = value
            var[name] = ";".join(rest)
        elif low == "unset" and vals:
            var.pop(vals[0], None)
        elif low == "option" and vals:
            if vals[0] not in var:
                var[vals[0]] = vals[2] if len(vals) > 2 else "OFF"
        elif low == "list" and len(vals) >= 2:
            op, name, items = vals[0].upper(), vals[1], vals[2:]
            cur = _split([var.get(name, "")])
            if op == "APPEND":
                cur += items
            elif op == "PREPEND":
                cur = items + cur
            elif op == "REMOVE_ITEM":
                cur = [c for c in cur if c not in items]
            var[name] = ";".join(cur)
        elif low == "file" and len(vals) >= 3 and vals[0].upper() in ("GLOB", "GLOB_RECURSE"):
            pats = [v for v in vals[2:] if v not in ("CONFIGURE_DEPENDS", "RELATIVE")]
            var[vals[1]] = ";".join(f"glob:{p}" for p in pats)
        elif low == "include" and vals:
            rel = _relative(vals[0])
            if rel in self.files:
                self.run_file(rel, depth + 1)
            elif "/" in vals[0] or vals[0].endswith(".cmake"):
                self.cfg.missing_includes.append(vals[0])
        elif low == "fetchcontent_declare" and vals:
            self.cfg.declared.append(vals[0])
        elif low in ("fetchcontent_populate", "fetchcontent_makeavailable"):
            names = vals if low.endswith("makeavailable") else vals[:1]
            for n in names:
                self.cfg.fetched.append(n)
                var[f"{n}_SOURCE_DIR"] = f"<fetched:{n}>"
                var[f"{n.lower()}_SOURCE_DIR"] = f"<fetched:{n}>"
        elif low == "add_subdirectory" and vals:
            self.cfg.subdirectories.append(vals[0])
        elif low in ("add_library", "python_add_library", "cuda_add_library") and vals:
            srcs, skip_next = [], False
            for v in vals[1:]:
                if skip_next:
                    skip_next = False
                elif v == "USE_SABI":
                    skip_next = True
                elif v not in _LIB_KEYWORDS:
                    srcs.append(_relative(v))
            self.cfg.targets[vals[0]] = Target(
                vals[0],
                cmd.file,
                cmd.line,
                srcs,
                cuda_architectures=var.get("CMAKE_CUDA_ARCHITECTURES", ""),
            )
        elif low.startswith("target_") and vals and vals[0] in self.cfg.targets:
            t = self.cfg.targets[vals[0]]
            items = [v for v in vals[1:] if v not in _SCOPES and v != "BEFORE"]
            if low == "target_sources":
                t.sources += [_relative(v) for v in items]
            elif low == "target_compile_options":
                t.options += items
            elif low == "target_link_libraries":
                t.links += items
            elif low == "target_compile_definitions":
                t.definitions += items


def _relative(path: str) -> str:
    """A path as the project names it: ``${CMAKE_CURRENT_LIST_DIR}/x`` and ``./x`` -> ``x``."""
    p = path.replace("\\", "/")
    genex = re.match(r"^\$<.*:([^:<>]+)>$", p)  # $<$<COMPILE_LANGUAGE:CUDA>:x.cu> -> x.cu
    if genex:
        p = genex.group(1)
    for prefix in ("./",):
        while p.startswith(prefix):
            p = p[len(prefix) :]
    return posixpath.normpath(p) if p and not p.startswith("<") else p


def configure(
    files: Mapping[str, str], variables: Mapping[str, str], root: str = "CMakeLists.txt"
) -> Configured:
    """Evaluate ``root`` (and what it includes, from ``files``) with ``variables`` (pure).

    ``CMAKE_CURRENT_LIST_DIR`` and the source dirs are the project root ``.``, so paths come
    out relative to the project.
    """
    base = {
        "CMAKE_CURRENT_SOURCE_DIR": ".",
        "PROJECT_SOURCE_DIR": ".",
        "CMAKE_SOURCE_DIR": ".",
        "CMAKE_CURRENT_BINARY_DIR": "<build>",
        **variables,
    }
    run = _Run(files, base)
    run.run_file(root)
    return run.cfg

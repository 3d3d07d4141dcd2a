"""A recipe planned over a source tree: its operations, registration guards and text patches,
all in memory (pure); nothing is written until every step applies or is already applied."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from wh.errors import CMakeError, RegistrationError
from wh.kernels import cmakeparse, patches, torchreg
from wh.kernels.operations import (
    SOURCE_SUFFIXES,
    ExcludeSource,
    Gencodes,
    GuardRegistrations,
    cmake_files,
    guard_macro,
    normalize_path,
)
from wh.kernels.opresult import Place, Result, Status
from wh.kernels.recipe import Effective


@dataclass(frozen=True)
class Exclusion:
    """A source file the recipe builds only where ``condition`` holds."""

    path: str
    condition: str
    macro: str


@dataclass
class Plan:
    """What the recipe does to the tree: each step's result and the files' new texts."""

    original: dict[str, str]
    files: dict[str, str]
    results: list[Result] = field(default_factory=list)
    patches: list[patches.Outcome] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    guards: dict[str, str] = field(default_factory=dict)  # op -> macro
    unmapped_ops: tuple[str, ...] = ()
    registration: str = ""
    crlf: frozenset[str] = frozenset()  # files written with CRLF line endings

    def encoded(self, rel: str, text: str) -> bytes:
        """The bytes to write for ``rel``: its line endings as they were."""
        return (text.replace("\n", "\r\n") if rel in self.crlf else text).encode("utf-8")

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and all(o.ok for o in self.patches)

    def problems(self) -> list[str]:
        return [r.describe() for r in self.results if not r.ok] + [
            o.describe() for o in self.patches if not o.ok
        ]

    def changed(self) -> dict[str, str]:
        return {k: v for k, v in self.files.items() if v != self.original.get(k)}


def _cmake_inputs(project: Path) -> list[str]:
    """The root CMakeLists.txt, every file it include()s (any branch), and cmake/*.cmake."""
    root = project / "CMakeLists.txt"
    if not root.is_file():
        raise CMakeError(str(project), "no-cmakelists")
    seen: list[str] = []
    todo = ["CMakeLists.txt"]
    while todo:
        rel = todo.pop(0)
        if rel in seen or not (project / rel).is_file():
            continue
        seen.append(rel)
        try:
            cmds = cmakeparse.parse(_read(project, rel), rel)
        except ValueError as exc:
            raise CMakeError(str(project / rel), "unreadable", problem=str(exc)) from exc
        for c in cmds:
            if c.lname == "include" and c.args:
                v = c.args[0].value.replace(
                    "${CMAKE_CURRENT_LIST_DIR}", posixpath.dirname(rel) or "."
                )
                v = v.replace("${CMAKE_CURRENT_SOURCE_DIR}", ".").replace(
                    "${PROJECT_SOURCE_DIR}", "."
                )
                if "${" not in v and (v.endswith(".cmake") or "/" in v):
                    todo.append(posixpath.normpath(v))
    extra = sorted(p.relative_to(project).as_posix() for p in (project / "cmake").glob("*.cmake"))
    return seen + [e for e in extra if e not in seen]


def _read(project: Path, rel: str) -> str:
    return (project / rel).read_bytes().decode("utf-8")


def input_files(project: Path, eff: Effective) -> list[str]:
    """The files a recipe's plan reads and may edit (what ``inputs_sha256`` pins)."""
    names = _cmake_inputs(project)
    for op in eff.operations:
        if isinstance(op, ExcludeSource) and "/" in op.source:
            names.append(normalize_path(op.source))
        if isinstance(op, GuardRegistrations):
            names.append(op.file)
    names += [p.file for p in eff.patches]
    if eff.recipe.registration:
        names.append(eff.recipe.registration.source)
    if (project / "pyproject.toml").is_file():
        names.append("pyproject.toml")
    return sorted(dict.fromkeys(n for n in names if (project / n).is_file()))


def read_tree(project: Path, eff: Effective) -> dict[str, str]:
    """The text of every input file, and of every source file a CMake list names (for
    finding where each registered op is implemented)."""
    files = {rel: _read(project, rel) for rel in input_files(project, eff)}
    for rel in [r for r in files if r.endswith(("CMakeLists.txt", ".cmake"))]:
        try:
            cmds = cmakeparse.parse(files[rel], rel)
        except ValueError:
            continue
        for c in cmds:
            for a in c.args:
                v = normalize_path(a.value)
                new = v.endswith(SOURCE_SUFFIXES) and "${" not in v and v not in files
                if new and (project / v).is_file():
                    files[v] = _read(project, v)
    return files


def plan(files: Mapping[str, str], eff: Effective) -> Plan:
    """Run the recipe's operations, then its registration guards, then its text patches."""
    crlf = frozenset(k for k, v in files.items() if "\r\n" in v)
    files = {k: v.replace("\r\n", "\n") for k, v in files.items()}
    out = Plan(dict(files), dict(files), crlf=crlf)
    for op in eff.operations:
        if isinstance(op, GuardRegistrations):
            continue
        if isinstance(op, Gencodes) and not op.archs:
            op = replace(op, archs=tuple(eff.archs))
        res = op.plan(out.files)
        if not res.places and not res.files:
            res = replace(res, searched=tuple(cmake_files(out.files)))
        out.results.append(res)
        if res.status is Status.APPLIED:
            out.files.update(res.files)
        if isinstance(op, ExcludeSource) and res.ok:
            path = normalize_path(op.source)
            if "/" not in op.source:
                path = next((k for k in files if posixpath.basename(k) == op.source), path)
            out.exclusions.append(Exclusion(path, op.condition, guard_macro(op.condition)))
    for op in eff.operations:
        if isinstance(op, GuardRegistrations):
            out.results.append(_guard(out, op))
    out.patches = patches.plan_patches(out.files, eff.patches)
    return out


def _guard(out: Plan, op: GuardRegistrations) -> Result:
    looked = f"TORCH_LIBRARY blocks in {op.file}"
    if op.file not in out.files:
        return Result(
            op.kind, op.what, op.why, Status.NOT_FOUND, looked, (), ("file does not exist",)
        )
    excluded = {e.path: e.macro for e in out.exclusions}
    missing = [p for p in excluded if p not in out.files]
    if missing:
        raise RegistrationError(op.file, "unmapped", missing=missing)
    sources = {k: v for k, v in out.files.items() if k.endswith(SOURCE_SUFFIXES) and k != op.file}
    text = out.files[op.file]
    g = torchreg.plan_guards(text, sources, excluded, op.file)
    out.guards = dict(g.guarded)
    out.unmapped_ops = g.unmapped
    out.registration = op.file
    stmts = torchreg.statements(text)
    places = tuple(Place(op.file, s.line, f"{s.kind} {s.op}") for s in stmts if s.op in g.guarded)
    if g.text == text:
        status = Status.ALREADY_APPLIED if g.guarded or not excluded else Status.NOT_FOUND
        cands = () if g.guarded else tuple(f"{e}: defines no registered op" for e in excluded)
        return Result(op.kind, op.what, op.why, status, looked, places, cands)
    out.files[op.file] = g.text
    return Result(op.kind, op.what, op.why, Status.APPLIED, looked, places, (), {op.file: g.text})

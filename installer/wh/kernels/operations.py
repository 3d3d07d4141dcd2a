"""Semantic recipe operations on CMake: found by what they mean, idempotent, all-or-nothing.

Each operation is planned over the in-memory text of a project's CMake files (pure) and says
``applied`` (with the new text), ``already-applied``, ``not-found`` (with candidates that
really differ from what it looked for) or ``ambiguous`` (with the places it matched).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wh.errors import BuildError, CMakeError, ConditionError, RecipeError
from wh.kernels import cmakeparse as cp
from wh.kernels.cmakeeval import gencode_codes
from wh.kernels.kinds import OpKind
from wh.kernels.opresult import Place, Result, Status

VERSION_OPS = {
    "VERSION_GREATER_EQUAL",
    "VERSION_GREATER",
    "VERSION_EQUAL",
    "VERSION_LESS",
    "VERSION_LESS_EQUAL",
}
SOURCE_SUFFIXES = (".cu", ".cc", ".cpp", ".cxx", ".c")
_LIST_COMMANDS = {"set", "list", "add_library", "python_add_library", "cuda_add_library"}
_TARGET_COMMANDS = {"target_sources", "target_link_libraries", "target_include_directories"}
# directory-wide lists: every argument is an item (older sgl-kernel puts mscclpp's include
# folder in include_directories(), later ones in set(INCLUDES ...))
_DIR_COMMANDS = {"include_directories", "link_libraries", "link_directories"}
_DIR_KEYWORDS = {"AFTER", "BEFORE", "SYSTEM"}
_SCOPES = {"PRIVATE", "PUBLIC", "INTERFACE"}
_DIR_PREFIX = re.compile(
    r"^(?:\$\{(?:CMAKE_CURRENT_SOURCE_DIR|PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR|"
    r"CMAKE_CURRENT_LIST_DIR)\}/|\./)+"
)
_GENEX_TAIL = re.compile(r"^\$<.*:(.+)>$")
_GENCODE_ARG = re.compile(r"^-gencode[= ]arch=compute_\w+,code=(\[[^\]]*\]|\w+)$")
_NOW_GUARD = {"NOT MSVC": "_MSC_VER", "NOT WIN32": "_WIN32"}
_FETCH_COMMANDS = {"fetchcontent_declare", "fetchcontent_populate", "fetchcontent_makeavailable"}
# commands that read, write or build a dependency's files: off with the dependency
_ACTS_ON_FILES = {
    "file",
    "execute_process",
    "configure_file",
    "include",
    "add_subdirectory",
    "install",
}


# ---------------------------------------------------------------- helpers


def cmake_files(files: Mapping[str, str]) -> list[str]:
    """The CMake files among ``files``: the root CMakeLists.txt first, then the others sorted."""
    names = [f for f in files if f.endswith(("CMakeLists.txt", ".cmake"))]
    return sorted(names, key=lambda f: (f != "CMakeLists.txt", f))


def normalize_path(value: str) -> str:
    """A source path as a CMake list names it, without directory variables or ``./``."""
    v = value.strip().strip('"').replace("\\", "/")
    m = _GENEX_TAIL.match(v)
    if m:
        v = m.group(1)
    v = _DIR_PREFIX.sub("", v)
    return posixpath.normpath(v) if v else v


def _edit(text: str, edits: Sequence[tuple[int, int, str]]) -> str:
    out, last = [], len(text)
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            raise BuildError("internal: overlapping edits in one operation")
        out.append(text[end:last])
        out.append(new)
        last = start
    out.append(text[:last])
    return "".join(reversed(out))


def _removal(text: str, arg: cp.Arg) -> tuple[int, int, str]:
    """Delete an argument: its whole line when alone on it, else it and the blanks before."""
    ls, le = cp.line_start(text, arg.start), cp.line_end(text, arg.end)
    rest = text[arg.end : le].split("#", 1)[0].strip()
    if not text[ls : arg.start].strip() and not rest:
        return ls, le, ""
    start = arg.start
    while start > ls and text[start - 1] in " \t":
        start -= 1
    return start, arg.end, ""


def _short(cmd: cp.Command, text: str) -> str:
    body = " ".join(cmd.text(text).split())
    return body if len(body) <= 90 else body[:87] + "..."


def _parsed(files: Mapping[str, str]) -> list[tuple[str, list[cp.Command]]]:
    out = []
    for name in cmake_files(files):
        try:
            out.append((name, cp.parse(files[name], name)))
        except ValueError as exc:
            raise CMakeError(name, "unreadable", problem=str(exc)) from exc
    return out


def _readd(cmd: cp.Command, arg_index: int, raws: list[str]) -> str:
    """The command that adds ``raws`` back where ``cmd`` had them, or '' if it cannot."""
    low, vals = cmd.lname, cmd.values()
    items = " ".join(raws)
    if low in ("set", "list") and vals:
        if low == "list":
            if len(vals) < 2 or vals[0].upper() not in ("APPEND", "PREPEND"):
                return ""
            return f"list({vals[0].upper()} {vals[1]} {items})"
        return f"list(APPEND {vals[0]} {items})"
    if low in ("add_library", "python_add_library", "cuda_add_library"):
        return f"target_sources({vals[0]} PRIVATE {items})"
    if low in _DIR_COMMANDS:
        return f"{low}({items})"
    if low in _TARGET_COMMANDS:
        scope = next((v for v in reversed(vals[1:arg_index]) if v in _SCOPES), "")
        if low == "target_link_libraries":
            return f"target_link_libraries({vals[0]} {scope + ' ' if scope else ''}{items})"
        return f"{low}({vals[0]} {scope or 'PRIVATE'} {items})"
    return ""


def _move_under(
    text: str,
    cmd: cp.Command,
    indices: list[int],
    condition: str,
    why: str,
) -> list[tuple[int, int, str]]:
    """Edits that take the arguments ``indices`` out of ``cmd`` and add them back under
    ``if(condition)`` right after it."""
    raws = [cmd.args[i].raw for i in indices]
    readd = _readd(cmd, indices[0], raws)
    if not readd:
        raise CMakeError(cmd.file, "cannot-move", line=cmd.line, items=raws, command=cmd.name)
    edits = [_removal(text, cmd.args[i]) for i in indices]
    indent = cp.indent_at(text, cmd.start)
    note = f"  # wh: {why}" if why else "  # wh"
    block = f"{indent}if({condition}){note}\n{indent}    {readd}\n{indent}endif()\n"
    end = cp.line_end(text, cmd.end)
    edits.append((end, end, block))
    return edits


def _merge(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Insertions at one offset joined in order, so that they never overlap."""
    out: dict[tuple[int, int], str] = {}
    for s, e, t in edits:
        out[(s, e)] = out.get((s, e), "") + t
    return [(s, e, t) for (s, e), t in out.items()]


# ---------------------------------------------------------------- operations


@dataclass(frozen=True)
class ExcludeSource:
    """Take a source file out of every CMake source list it is in; add it back under a condition."""

    source: str
    condition: str
    why: str = ""
    kind: OpKind = OpKind.EXCLUDE_SOURCE

    @property
    def what(self) -> str:
        return f"{self.source} under if({self.condition})"

    def _matches(self, value: str) -> bool:
        v = normalize_path(value)
        if "/" in self.source:
            return v == normalize_path(self.source)
        return posixpath.basename(v) == self.source

    def plan(self, files: Mapping[str, str]) -> Result:
        cond = cp.tokens(self.condition)
        looked = f"{self.source!r} in set()/list()/add_library()/target_sources() lists"
        hits: list[tuple[str, cp.Command, int]] = []
        all_sources: set[str] = set()
        for name, cmds in _parsed(files):
            for cmd in cmds:
                if cmd.lname not in _LIST_COMMANDS | {"target_sources"}:
                    continue
                for i, a in enumerate(cmd.args[1:], 1):
                    if normalize_path(a.value).endswith(SOURCE_SUFFIXES):
                        all_sources.add(normalize_path(a.value))
                    if self._matches(a.value):
                        hits.append((name, cmd, i))
        if not hits:
            near = difflib.get_close_matches(
                normalize_path(self.source), sorted(all_sources), 4, 0.6
            )
            base = posixpath.basename(self.source)
            near += [
                s for s in sorted(all_sources) if posixpath.basename(s) == base and s not in near
            ]
            return Result(self.kind, self.what, self.why, Status.NOT_FOUND, looked, (), tuple(near))
        distinct = sorted({normalize_path(cmd.args[i].value) for _, cmd, i in hits})
        if len(distinct) > 1:
            places = tuple(Place(n, c.line, c.args[i].value) for n, c, i in hits)
            return Result(
                self.kind, self.what, self.why, Status.AMBIGUOUS, looked, places, tuple(distinct)
            )
        return self._apply(files, hits, cond)

    def _apply(
        self,
        files: Mapping[str, str],
        hits: list[tuple[str, cp.Command, int]],
        cond: tuple[str, ...],
    ) -> Result:
        places = tuple(
            Place(n, c.line, c.name + "(" + (c.values() or [""])[0] + " ...)") for n, c, _ in hits
        )
        todo = [(n, c, i) for n, c, i in hits if not cp.guarded_by(c, cond)]
        looked = f"{self.source!r} in CMake source lists"
        if not todo:
            return Result(self.kind, self.what, self.why, Status.ALREADY_APPLIED, looked, places)
        new = dict(files)
        by_file: dict[str, list[tuple[cp.Command, int]]] = {}
        for n, c, i in todo:
            by_file.setdefault(n, []).append((c, i))
        for n, items in by_file.items():
            edits: list[tuple[int, int, str]] = []
            by_cmd: dict[int, tuple[cp.Command, list[int]]] = {}
            for c, i in items:
                by_cmd.setdefault(c.start, (c, []))[1].append(i)
            for c, idx in by_cmd.values():
                edits += _move_under(new[n], c, idx, self.condition, self.why)
            new[n] = _edit(new[n], _merge(edits))
        changed = {n: new[n] for n in by_file}
        return Result(self.kind, self.what, self.why, Status.APPLIED, looked, places, (), changed)


def _if_commands(files: Mapping[str, str]) -> list[tuple[str, cp.Command]]:
    return [(n, c) for n, cmds in _parsed(files) for c in cmds if c.lname in ("if", "elseif")]


def _has_version_test(cond: Sequence[str]) -> bool:
    return any(t in VERSION_OPS for t in cond)


@dataclass(frozen=True)
class SwitchTrigger:
    """``if(<CUDA version test> OR SWITCH)`` becomes ``if(SWITCH)``: the switch decides alone."""

    switch: str
    why: str = ""
    kind: OpKind = OpKind.SWITCH_AUTOTRIGGER

    @property
    def what(self) -> str:
        return self.switch

    def plan(self, files: Mapping[str, str]) -> Result:
        looked = f"if(<version test> OR {self.switch})"
        ifs = _if_commands(files)
        hits = [
            (n, c)
            for n, c in ifs
            if self.switch in c.condition()
            and "OR" in c.condition()
            and _has_version_test(c.condition())
        ]
        done = [
            (n, c) for n, c in ifs if c.condition() in ((self.switch,), ("(", self.switch, ")"))
        ]
        if len(hits) > 1:
            places = tuple(Place(n, c.line, _short(c, files[n])) for n, c in hits)
            return Result(self.kind, self.what, self.why, Status.AMBIGUOUS, looked, places)
        if not hits:
            if done:
                places = tuple(Place(n, c.line, _short(c, files[n])) for n, c in done)
                return Result(
                    self.kind, self.what, self.why, Status.ALREADY_APPLIED, looked, places
                )
            near = [
                f"{n}:{c.line}: {_short(c, files[n])}"
                for n, c in ifs
                if ("OR" in c.condition() and _has_version_test(c.condition()))
                or difflib.get_close_matches(self.switch, list(c.condition()), 1, 0.8)
            ]
            return Result(
                self.kind, self.what, self.why, Status.NOT_FOUND, looked, (), tuple(near[:5])
            )
        n, c = hits[0]
        text = files[n]
        new = _edit(text, [(c.args[0].start, c.args[-1].end, self.switch)])
        return Result(
            self.kind,
            self.what,
            self.why,
            Status.APPLIED,
            looked,
            (Place(n, c.line, _short(c, text)),),
            (),
            {n: new},
        )


def _sets_on(cmds: list[cp.Command], at: int, switch: str) -> bool:
    """Whether the if() at index ``at`` turns ``switch`` ON in its own first branch."""
    return switch in cp.switched_on(cmds, at)


@dataclass(frozen=True)
class AddCondition:
    """The version test that turns a feature's switch ON gets one more condition
    (``AND NOT MSVC``)."""

    switch: str
    condition: str
    why: str = ""
    kind: OpKind = OpKind.ADD_CONDITION

    @property
    def what(self) -> str:
        return f"{self.switch}: AND {self.condition}"

    def plan(self, files: Mapping[str, str]) -> Result:
        looked = f"if(<version test>) that sets {self.switch} ON"
        extra = cp.tokens(self.condition)
        hits, near = [], []
        for n, cmds in _parsed(files):
            for i, c in enumerate(cmds):
                if c.lname not in ("if", "elseif") or not _sets_on(cmds, i, self.switch):
                    continue
                if _has_version_test(c.condition()):
                    hits.append((n, c))
                else:
                    near.append(f"{n}:{c.line}: {_short(c, files[n])}")
        if not hits:
            for n, cmds in _parsed(files):
                near += [
                    f"{n}:{c.line}: {_short(c, files[n])}"
                    for c in cmds
                    if c.lname in ("set", "option") and c.values()[:1] == [self.switch]
                ]
            return Result(
                self.kind, self.what, self.why, Status.NOT_FOUND, looked, (), tuple(near[:5])
            )
        if len(hits) > 1:
            places = tuple(Place(n, c.line, _short(c, files[n])) for n, c in hits)
            return Result(self.kind, self.what, self.why, Status.AMBIGUOUS, looked, places)
        n, c = hits[0]
        cond, text = c.condition(), files[n]
        place = (Place(n, c.line, _short(c, text)),)
        seq = ("AND", *extra)
        if any(cond[k : k + len(seq)] == seq for k in range(len(cond))):
            return Result(self.kind, self.what, self.why, Status.ALREADY_APPLIED, looked, place)
        start, end = c.args[0].start, c.args[-1].end
        body = text[start:end]
        if "OR" in cond:
            body = f"({body})"
        new = _edit(text, [(start, end, f"{body} AND {self.condition}")])
        return Result(self.kind, self.what, self.why, Status.APPLIED, looked, place, (), {n: new})


def _declared(files: Mapping[str, str], switch: str) -> bool:
    for _n, cmds in _parsed(files):
        for c in cmds:
            if c.lname in ("option", "set", "cmake_dependent_option") and c.values()[:1] == [
                switch
            ]:
                return True
    return False


def _first_arg_key(value: str) -> str:
    v = value.strip().strip('"').replace("\\", "/")
    v = re.sub(r"^(?:\$\{[A-Za-z0-9_.+-]+\}/|\./)+", "", v) if not v.startswith("${repo") else v
    return v


@dataclass(frozen=True)
class UnderSwitch:
    """Commands (``include(x)``, ``add_subdirectory(x)``, ``FetchContent_*(x)``) wrapped in
    ``if(SWITCH)``, and list items (link libraries, include dirs) moved under it; the switch
    is declared with ``default`` (ON, OFF or a CMake condition) where the project has none."""

    switch: str
    default: str
    commands: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    why: str = ""
    kind: OpKind = OpKind.UNDER_SWITCH
    optional: bool = False  # none of it in this version: "absent", not "not found"

    @property
    def what(self) -> str:
        return f"{self.switch} (default {self.default}): " + ", ".join(
            [*self.commands, *self.items]
        )

    def _spec(self, spec: str) -> tuple[str, str]:
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", spec)
        if not m:
            raise RecipeError("", "command", key=self.switch, value=spec)
        return m.group(1).lower(), _first_arg_key(
            m.group(2).split()[0] if m.group(2).split() else ""
        )

    def declaration(self) -> str:
        doc = f'"wh: {self.why or self.switch}"'.replace('""', '"')
        d = self.default.strip()
        if d.upper() in ("ON", "OFF"):
            return f"option({self.switch} {doc} {d.upper()})\n"
        return (
            f"if({d})  # wh: default of {self.switch}\n"
            f"    option({self.switch} {doc} ON)\n"
            f"else()\n"
            f"    option({self.switch} {doc} OFF)\n"
            f"endif()\n"
        )

    def _fetched(self) -> list[str]:
        """The FetchContent dependencies this operation switches off."""
        out = []
        for spec in self.commands:
            name, key = self._spec(spec)
            if name in _FETCH_COMMANDS and key not in out:
                out.append(key)
        return out

    def _dependency_users(
        self,
        parsed: list[tuple[str, list[cp.Command]]],
        files: Mapping[str, str],
        edits: dict[str, list[tuple[int, int, str]]],
        places: list[Place],
    ) -> list[str]:
        """With a FetchContent dependency under the switch, its ``${NAME_SOURCE_DIR}`` is
        empty when the switch is off: every command outside the switch that still uses it
        would read or write a wrong path (``file(READ ${dep_SOURCE_DIR}/x)`` reads ``/x``).
        Commands that act on the dependency's files (file, execute_process, configure_file,
        include, add_subdirectory, install) go under the switch with it (added to ``edits``
        and ``places``); any other use (a list item the recipe does not name) is returned,
        for the operation to fail with it."""
        deps = self._fetched()
        if not deps:
            return []
        refs = [
            re.compile(r"\$\{" + re.escape(d) + r"_(?:SOURCE|BINARY)_DIR\}", re.IGNORECASE)
            for d in deps
        ]
        cond = (self.switch,)
        named = set(self.items)
        wrapped = {(p.file, p.line) for p in places}
        out = []
        for n, cmds in parsed:
            text = files[n]
            for c in cmds:
                if cp.guarded_by(c, cond) or (n, c.line) in wrapped:
                    continue
                used = [a for a in c.args if any(r.search(a.raw) for r in refs)]
                if not used:
                    continue
                if c.lname in _ACTS_ON_FILES:
                    ls, le = cp.line_start(text, c.start), cp.line_end(text, c.end)
                    indent = cp.indent_at(text, c.start)
                    note = f"  # wh: {self.why}" if self.why else "  # wh"
                    edits.setdefault(n, []).append((ls, ls, f"{indent}if({self.switch}){note}\n"))
                    edits.setdefault(n, []).append((le, le, f"{indent}endif()\n"))
                    places.append(Place(n, c.line, _short(c, text) + " (uses the dependency)"))
                    continue
                left = [a.value for a in used if a.value not in named]
                if left:
                    out.append(
                        f"{n}:{c.line}: {_short(c, text)} still uses {', '.join(left)}:"
                        " name it in the operation's items"
                    )
        return out

    def plan(self, files: Mapping[str, str]) -> Result:
        looked_parts: list[str] = []
        parsed = _parsed(files)
        edits: dict[str, list[tuple[int, int, str]]] = {}
        places: list[Place] = []
        missing: list[str] = []
        near: list[str] = []
        ambiguous: list[Place] = []
        done = 0
        cond = (self.switch,)
        for spec in self.commands:
            name, key = self._spec(spec)
            looked_parts.append(spec)
            found = [
                (n, c)
                for n, cmds in parsed
                for c in cmds
                if c.lname == name and c.args and _first_arg_key(c.args[0].value) == key
            ]
            if not found:
                missing.append(spec)
                near += [
                    f"{n}:{c.line}: {_short(c, files[n])}"
                    for n, cmds in parsed
                    for c in cmds
                    if c.lname == name
                ][:4]
                continue
            if len(found) > 1:
                ambiguous += [Place(n, c.line, _short(c, files[n])) for n, c in found]
                continue
            n, c = found[0]
            places.append(Place(n, c.line, _short(c, files[n])))
            if cp.guarded_by(c, cond):
                done += 1
                continue
            text = files[n]
            ls, le = cp.line_start(text, c.start), cp.line_end(text, c.end)
            indent = cp.indent_at(text, c.start)
            note = f"  # wh: {self.why}" if self.why else "  # wh"
            edits.setdefault(n, []).append((ls, ls, f"{indent}if({self.switch}){note}\n"))
            edits.setdefault(n, []).append((le, le, f"{indent}endif()\n"))
        for item in self.items:
            looked_parts.append(item)
            hits = [
                (n, c, i)
                for n, cmds in parsed
                for c in cmds
                if c.lname in _LIST_COMMANDS | _TARGET_COMMANDS | _DIR_COMMANDS
                for i, a in enumerate(c.args)
                if a.value == item and (i > 0 or c.lname in _DIR_COMMANDS)
            ]
            if not hits:
                missing.append(item)
                # the item itself, where no list of it is edited; then names that differ
                near += [
                    f"{n}:{c.line}: {_short(c, files[n])}: {c.name}() holds it,"
                    " not a list this operation edits"
                    for n, cmds in parsed
                    for c in cmds
                    if any(a.value == item for a in c.args)
                ][:3]
                near += difflib.get_close_matches(
                    item,
                    sorted({a.value for _, cmds in parsed for c in cmds for a in c.args} - {item}),
                    3,
                    0.6,
                )
                continue
            for n, c, i in hits:
                places.append(Place(n, c.line, _short(c, files[n])))
                if cp.guarded_by(c, cond):
                    done += 1
                    continue
                edits.setdefault(n, []).extend(_move_under(files[n], c, [i], self.switch, self.why))
        looked = ", ".join(looked_parts)
        if self.optional and len(missing) == len(looked_parts):
            return Result(self.kind, self.what, self.why, Status.ABSENT, "; ".join(missing), (), ())
        if not missing and not ambiguous:
            dangling = self._dependency_users(parsed, files, edits, places)
            if dangling:
                return Result(
                    self.kind,
                    self.what,
                    self.why,
                    Status.NOT_FOUND,
                    f"every use of {', '.join(self._fetched())} inside if({self.switch})",
                    tuple(places),
                    tuple(dangling),
                )
        if missing:
            return Result(
                self.kind,
                self.what,
                self.why,
                Status.NOT_FOUND,
                "; ".join(missing),
                tuple(places),
                tuple(dict.fromkeys(near)),
            )
        if ambiguous:
            return Result(
                self.kind, self.what, self.why, Status.AMBIGUOUS, looked, tuple(ambiguous)
            )
        declared = _declared(files, self.switch)
        if not edits and declared:
            return Result(
                self.kind, self.what, self.why, Status.ALREADY_APPLIED, looked, tuple(places)
            )
        new = dict(files)
        for n, e in edits.items():
            new[n] = _edit(new[n], _merge(e))
        changed = set(edits)
        if not declared:
            root = "CMakeLists.txt" if "CMakeLists.txt" in new else cmake_files(new)[0]
            text = new[root]
            cmds = cp.parse(text, root)
            after = next((c for c in cmds if c.lname == "project"), None)
            pos = cp.line_end(text, after.end) if after else 0
            new[root] = _edit(text, [(pos, pos, self.declaration())])
            changed.add(root)
        return Result(
            self.kind,
            self.what,
            self.why,
            Status.APPLIED,
            looked,
            tuple(places),
            (),
            {n: new[n] for n in changed},
        )


def wanted_codes(archs: Sequence[str]) -> frozenset[str]:
    """``["86"]`` -> ``{"sm_86", "compute_86"}`` (SASS and PTX)."""
    out = set()
    for a in archs:
        num, _, kind = a.partition("-")
        if kind in ("", "real"):
            out.add(f"sm_{num}")
        if kind in ("", "virtual"):
            out.add(f"compute_{num}")
    return frozenset(out)


def gencode_flag(archs: Sequence[str]) -> str:
    """The one ``-gencode`` flag for the recipe's architectures."""
    codes = sorted(wanted_codes(archs), key=lambda c: (c.startswith("compute"), c))
    virtual = [c for c in codes if c.startswith("compute_")]
    arch = virtual[0] if virtual else "compute_" + codes[0].split("_", 1)[1]
    return f"-gencode=arch={arch},code=[{','.join(codes)}]"


@dataclass(frozen=True)
class Gencodes:
    """Every ``-gencode`` flag in every CMake file keeps only the recipe's architectures:
    other ones are removed, and a flag list defined with set() gets the recipe's flag instead."""

    archs: tuple[str, ...] = ()
    why: str = ""
    kind: OpKind = OpKind.GENCODES

    @property
    def what(self) -> str:
        return " + ".join(sorted(wanted_codes(self.archs))) + " only"

    def plan(self, files: Mapping[str, str]) -> Result:
        want = wanted_codes(self.archs)
        flag = gencode_flag(self.archs)
        looked = "-gencode flags in set()/list() of every CMake file"
        edits: dict[str, list[tuple[int, int, str]]] = {}
        places, seen = [], 0
        for n, cmds in _parsed(files):
            text = files[n]
            for c in cmds:
                if c.lname in ("if", "elseif", "string", "message"):
                    continue
                replaced = c.lname != "set"
                for a in c.args[1:]:
                    if not _GENCODE_ARG.match(a.value):
                        continue
                    seen += 1
                    codes = set(gencode_codes(a.value))
                    if codes <= want:
                        replaced = True
                        continue
                    places.append(Place(n, c.line, a.value))
                    if not replaced:
                        new_raw = f'"{flag}"' if a.quoted else flag
                        edits.setdefault(n, []).append((a.start, a.end, new_raw))
                        replaced = True
                    else:
                        edits.setdefault(n, []).append(_removal(text, a))
        if not seen:
            return Result(self.kind, self.what, self.why, Status.NOT_FOUND, looked)
        if not edits:
            return Result(self.kind, self.what, self.why, Status.ALREADY_APPLIED, looked)
        new = {n: _edit(files[n], _merge(e)) for n, e in edits.items()}
        return Result(
            self.kind, self.what, self.why, Status.APPLIED, looked, tuple(places), (), new
        )


def guard_macro(condition: str) -> str:
    """The C preprocessor macro whose absence matches a CMake exclusion condition."""
    key = " ".join(cp.tokens(condition))
    if key not in _NOW_GUARD:
        raise ConditionError(condition, "no-guard", known=_NOW_GUARD)
    return _NOW_GUARD[key]


CMakeOperation = ExcludeSource | SwitchTrigger | AddCondition | UnderSwitch | Gencodes


@dataclass(frozen=True)
class GuardRegistrations:
    """The op registrations of ``file`` guarded to match the recipe's excluded sources
    (computed: see torchreg.plan_guards)."""

    file: str
    why: str = ""
    kind: OpKind = OpKind.GUARD_REGISTRATIONS

    @property
    def what(self) -> str:
        return self.file


Operation = CMakeOperation | GuardRegistrations


def from_table(item: Mapping[str, object], where: str, archs: Sequence[str]) -> Operation:
    """One ``[[operations]]`` table as an operation; a BuildError names what is wrong."""

    def s(key: str, default: str | None = None) -> str:
        v = item.get(key, default)
        if not isinstance(v, str) or not v:
            raise RecipeError(where, "needs", key=key, value=item.get("op"))
        return v

    def strs(key: str) -> tuple[str, ...]:
        v = item.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise RecipeError(where, "strings", key=key)
        return tuple(v)

    raw = item.get("op")
    if raw not in OpKind.recipe_ops():
        raise RecipeError(where, "unknown-op", value=raw, allowed=OpKind.recipe_ops())
    kind = OpKind(raw)
    why = str(item.get("why", ""))
    if kind is OpKind.EXCLUDE_SOURCE:
        cond = s("condition")
        guard_macro(cond)  # refuse a condition with no preprocessor equivalent now
        return ExcludeSource(s("source"), cond, why)
    if kind is OpKind.SWITCH_AUTOTRIGGER:
        return SwitchTrigger(s("switch"), why)
    if kind is OpKind.ADD_CONDITION:
        return AddCondition(s("switch"), s("condition"), why)
    if kind is OpKind.UNDER_SWITCH:
        optional = item.get("optional", False)
        if not isinstance(optional, bool):
            raise RecipeError(where, "bool", key="optional")
        op = UnderSwitch(
            s("switch"),
            s("default", "OFF"),
            strs("commands"),
            strs("items"),
            why,
            optional=optional,
        )
        if not op.commands and not op.items:
            raise RecipeError(where, "empty-switch", value=op.switch)
        for spec in op.commands:
            op._spec(spec)
        return op
    if kind is OpKind.GENCODES:
        return Gencodes(strs("archs"), why)  # no archs: the build's (--arch or the recipe's)
    return GuardRegistrations(s("file"), why)

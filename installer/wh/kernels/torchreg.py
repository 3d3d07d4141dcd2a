"""Torch op registrations read from C++: TORCH_LIBRARY blocks, their m.def/m.impl statements,
the function each op links, and preprocessor guards computed for the ops a build leaves out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wh.errors import RegistrationError
from wh.kernels.conditions import cpp_active_lines
from wh.kernels.kinds import RegistrationKind

_BLOCK = re.compile(r"\b(TORCH_LIBRARY|TORCH_LIBRARY_FRAGMENT|TORCH_LIBRARY_IMPL)\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*")
_DISPATCH = re.compile(r"^(?:(?:torch|at|c10)::)?(?:DispatchKey::\w+|k[A-Z]\w*)$")
_CONDITION = {"_WIN32": "NOT WIN32", "_MSC_VER": "NOT MSVC"}
_DEF_HEAD = re.compile(r"(?m)^[ \t]*(?:[\w:<>,*&]+[ \t]+)+[*&]?[ \t]*([A-Za-z_]\w*)[ \t]*\(")


@dataclass(frozen=True)
class Statement:
    """One ``m.def(...)`` / ``m.impl(...)``: the op it names and the functions it links."""

    kind: RegistrationKind
    op: str
    symbols: tuple[str, ...]
    start: int  # offset of the receiver (``m``)
    end: int  # offset just after the ``;``
    line: int
    guards: tuple[str, ...]  # macros of enclosing ``#ifndef M`` / ``#if !defined(M)``


def _skip(text: str, i: int) -> int:
    """From ``i``, past blanks and comments."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            return i
    return i


def _string_end(text: str, i: int) -> int:
    """Index after the string or char literal opening at ``i`` (raw strings included)."""
    q = text[i]
    if q == "R" and text.startswith('R"', i):
        m = re.match(r'R"([^(\s]*)\(', text[i:])
        if m:
            close = ")" + m.group(1) + '"'
            j = text.find(close, i + m.end())
            return len(text) if j < 0 else j + len(close)
    j = i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _code_mask(text: str) -> list[bool]:
    """For each character: True where it is code (not a comment, string or directive line)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    line_begin = True
    while i < n:
        c = text[i]
        if line_begin and c == "#":
            j = i
            while True:  # a directive, with its backslash continuations
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            for x in range(i, k):
                mask[x] = False
            i = k
            continue
        if c in " \t":
            i += 1
            continue
        if c == "\n":
            line_begin = True
            i += 1
            continue
        line_begin = False
        if text.startswith("//", i) or text.startswith("/*", i):
            j = _skip(text, i)
            for x in range(i, j):
                mask[x] = text[x] == "\n"
            line_begin = text[j - 1 : j] == "\n" if j else False
            i = j
        elif c in "\"'" or (c == "R" and text.startswith('R"', i)):
            j = _string_end(text, i)
            for x in range(i, j):
                mask[x] = False
            i = j
        else:
            i += 1
    return mask


def _match(text: str, mask: list[bool], i: int, open_: str, close: str) -> int:
    """Index after the bracket closing the one at ``i`` (code characters only)."""
    depth = 0
    for j in range(i, len(text)):
        if not mask[j]:
            continue
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise RegistrationError("", "unbalanced", brackets=open_ + close, offset=i)


def _split_args(text: str, mask: list[bool], start: int, end: int) -> list[tuple[int, int]]:
    """Top-level comma-separated argument spans between ``start`` and ``end`` (exclusive)."""
    out, depth, last = [], 0, start
    for j in range(start, end):
        if not mask[j]:
            continue
        c = text[j]
        if c in "([{<" and c != "<":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append((last, j))
            last = j
            last = j + 1
    out.append((last, end))
    return out


def _literal(text: str, start: int, end: int) -> str | None:
    """The string an argument spells with (adjacent, possibly split) literals, if any."""
    parts = []
    i = start
    while i < end:
        i = _skip(text, i)
        if i >= end:
            break
        if text[i] == '"':
            j = _string_end(text, i)
            parts.append(text[i + 1 : j - 1])
            i = j
        else:
            i += 1
    if not parts:
        return None
    return "".join(parts).encode("utf-8").decode("unicode_escape", "replace")


def _symbols(arg: str) -> list[str]:
    """The functions an argument links: ``&ns::fn``, ``TORCH_FN(fn)`` or a bare ``fn``."""
    a = re.sub(r"/\*.*?\*/|//[^\n]*", "", arg, flags=re.DOTALL).strip()
    if not a or a.startswith(("{", '"')):
        return []
    m = re.search(r"&\s*(" + _IDENT.pattern + ")", a)
    if m:
        return [re.sub(r"\s+", "", m.group(1)).split("::")[-1]]
    m = re.search(r"TORCH_FN\s*\(\s*(" + _IDENT.pattern + r")\s*\)", a)
    if m:
        return [re.sub(r"\s+", "", m.group(1)).split("::")[-1]]
    if _IDENT.fullmatch(a):
        name = re.sub(r"\s+", "", a)
        if not _DISPATCH.match(name):
            return [name.split("::")[-1]]
    return []


def _directive_guards(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset of line start, macros whose absence encloses that line) for every line."""
    out: list[tuple[int, tuple[str, ...]]] = []
    stack: list[tuple[str, bool]] = []  # (macro whose absence guards, in the #else part)
    pos = 0
    for line in text.splitlines(keepends=True):
        s = line.strip()
        m = re.match(r"#\s*(ifndef|ifdef|if|elif|else|endif)\b(.*)", s)
        guards = tuple(g for g, neg in stack if g and not neg)
        out.append((pos, guards))
        if m:
            kw, rest = m.group(1), m.group(2).strip()
            if kw == "ifndef":
                stack.append((rest.split()[0] if rest else "", False))
            elif kw == "if":
                mm = re.fullmatch(r"!\s*defined\s*\(?\s*(\w+)\s*\)?", rest.split("//")[0].strip())
                stack.append((mm.group(1) if mm else "", False))
            elif kw == "ifdef":
                stack.append(("", False))
            elif kw in ("elif", "else") and stack:
                stack[-1] = (stack[-1][0], True)
            elif kw == "endif" and stack:
                stack.pop()
        pos += len(line)
    return out


def statements(text: str) -> list[Statement]:
    """Every ``m.def``/``m.impl`` statement of every TORCH_LIBRARY* block in C++ ``text``."""
    mask = _code_mask(text)
    lines = _directive_guards(text)
    starts = [p for p, _ in lines]

    def guards_at(off: int) -> tuple[str, ...]:
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lines[lo][1] if lines else ()

    out: list[Statement] = []
    for m in _BLOCK.finditer(text):
        if not mask[m.start()]:
            continue
        pstart = m.end() - 1
        pend = _match(text, mask, pstart, "(", ")")
        params = [text[a:b].strip() for a, b in _split_args(text, mask, pstart + 1, pend - 1)]
        receiver = params[-1] if params else "m"
        brace = _skip(text, pend)
        if brace >= len(text) or text[brace] != "{":
            continue
        bend = _match(text, mask, brace, "{", "}")
        call = re.compile(rf"\b{re.escape(receiver)}\s*\.\s*(def|impl)\s*\(")
        i = brace + 1
        while True:
            cm = call.search(text, i, bend)
            if not cm:
                break
            if not mask[cm.start()]:
                i = cm.end()
                continue
            open_ = cm.end() - 1
            close = _match(text, mask, open_, "(", ")")
            semi = _skip(text, close)
            end = semi + 1 if semi < len(text) and text[semi] == ";" else close
            spans = _split_args(text, mask, open_ + 1, close - 1)
            name = _literal(text, *spans[0]) if spans else None
            if name is None:
                i = end
                continue
            op = re.match(r"\s*([A-Za-z_][\w]*)", name)
            if not op:
                i = end
                continue
            syms: list[str] = []
            for a, b in spans[1:]:
                syms += _symbols(text[a:b])
            out.append(
                Statement(
                    RegistrationKind(cm.group(1)),
                    op.group(1),
                    tuple(syms),
                    cm.start(),
                    end,
                    text.count("\n", 0, cm.start()) + 1,
                    guards_at(cm.start()),
                )
            )
            i = end
    return out


def active_ops(text: str, macros: Mapping[str, str]) -> list[str]:
    """The op names a platform's preprocessor leaves registered (sorted, unique)."""
    kept = "\n".join(ln if ok else "" for _, ln, ok in cpp_active_lines(text, macros))
    return sorted({s.op for s in statements(kept)})


def defined_functions(text: str) -> set[str]:
    """Names of the functions C/C++/CUDA ``text`` defines (with a body), not only declares."""
    mask = _code_mask(text)
    out = set()
    for m in _DEF_HEAD.finditer(text):
        open_ = m.end() - 1
        if not mask[open_]:
            continue
        try:
            close = _match(text, mask, open_, "(", ")")
        except RegistrationError:
            continue
        j = close
        while j < len(text) and (not mask[j] or text[j] not in "{;"):
            j += 1
        if j < len(text) and text[j] == "{":
            out.add(m.group(1))
    return out


@dataclass(frozen=True)
class OpSource:
    """Where an op's implementation is: the files defining every function it links."""

    op: str
    symbols: tuple[str, ...]
    files: tuple[str, ...]


def op_sources(stmts: Sequence[Statement], sources: Mapping[str, str]) -> dict[str, OpSource]:
    """For each registered op: the files (among ``sources``) that define its functions."""
    defs: dict[str, set[str]] = {}
    for path, text in sources.items():
        for name in defined_functions(text):
            defs.setdefault(name, set()).add(path)
    symbols: dict[str, list[str]] = {}
    for s in stmts:
        bucket = symbols.setdefault(s.op, [])
        bucket += [x for x in s.symbols if x not in bucket]
    out = {}
    for op, syms in symbols.items():
        files = sorted({f for x in syms for f in defs.get(x, ())})
        out[op] = OpSource(op, tuple(syms), tuple(files))
    return out


@dataclass(frozen=True)
class GuardPlan:
    """The ops to guard (op -> macro) and the text with their statements wrapped."""

    guarded: Mapping[str, str]
    already: tuple[str, ...]
    text: str
    unmapped: tuple[str, ...]  # ops whose implementation is in no file of the tree


def plan_guards(
    text: str,
    sources: Mapping[str, str],
    excluded: Mapping[str, str],
    file: str = "registration file",
) -> GuardPlan:
    """Wrap exactly the statements of the ops whose every implementing file is in
    ``excluded`` (path -> macro, e.g. ``_WIN32``) in ``#ifndef MACRO``; nothing else moves."""
    stmts = statements(text)
    if not stmts:
        raise RegistrationError(file, "no-block")
    where = op_sources(stmts, sources)
    macro_of: dict[str, str] = {}
    for op, src in where.items():
        if not src.files or not all(f in excluded for f in src.files):
            continue
        macros = {excluded[f] for f in src.files}
        if len(macros) > 1:
            raise RegistrationError(
                file, "mixed", op=op, guards=[(f, excluded[f]) for f in src.files]
            )
        macro_of[op] = macros.pop()
    todo = [s for s in stmts if s.op in macro_of and macro_of[s.op] not in s.guards]
    already = sorted({s.op for s in stmts if s.op in macro_of} - {s.op for s in todo})
    # runs of consecutive statements with one macro, not crossing a directive line
    runs: list[list[Statement]] = []
    order = {id(s): k for k, s in enumerate(stmts)}
    for s in todo:
        prev = runs[-1][-1] if runs else None
        if (
            prev is not None
            and order[id(s)] == order[id(prev)] + 1
            and macro_of[s.op] == macro_of[prev.op]
            and not re.search(r"(?m)^[ \t]*#", text[prev.end : s.start])
        ):
            runs[-1].append(s)
        else:
            runs.append([s])
    edits: list[tuple[int, str]] = []
    for run in runs:
        first, last = run[0], run[-1]
        ls = text.rfind("\n", 0, first.start) + 1
        le = text.find("\n", last.end)
        le = len(text) if le < 0 else le + 1
        before, after = text[ls : first.start], text[last.end : le]
        if before.strip() or re.sub(r"//[^\n]*|/\*.*?\*/", "", after).strip():
            raise RegistrationError(file, "shared-line", op=first.op, line=first.line)
        macro = macro_of[first.op]
        files = sorted({f for s in run for f in where[s.op].files})
        why = f"{', '.join(files)} not built (CMake if({_CONDITION.get(macro, 'NOT ' + macro)}))"
        edits.append((ls, f"#ifndef {macro}  // wh: {why}\n"))
        edits.append((le, f"#endif  // {macro}\n"))
    new = text
    for pos, ins in sorted(edits, key=lambda e: e[0], reverse=True):
        new = new[:pos] + ins + new[pos:]
    unmapped = sorted(op for op, src in where.items() if not src.files)
    return GuardPlan(dict(sorted(macro_of.items())), tuple(already), new, tuple(unmapped))


def unresolved(
    text: str,
    macros: Mapping[str, str],
    sources: Mapping[str, str],
    compiled: Iterable[str],
) -> list[str]:
    """Ops still registered under ``macros`` whose every implementing file is not compiled
    (each would be an unresolved symbol at link time, LNK2019)."""
    kept = "\n".join(ln if ok else "" for _, ln, ok in cpp_active_lines(text, macros))
    built = set(compiled)
    out = []
    for op, src in sorted(op_sources(statements(kept), sources).items()):
        if src.files and not any(f in built for f in src.files):
            out.append(f"{op} (implemented in {', '.join(src.files)}, which is not compiled)")
    return out

"""Registered ops vs compiled sources: find ops whose implementation a platform guard drops."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wh.kernels.conditions import Platform, cmake_active_lines, cpp_active_lines

_SOURCE = re.compile(r"""["']?([\w./${}+-]+\.(?:cu|cc|cpp|cxx|c))["']?(?=[\s)"']|$)""")
_TORCH_REG = re.compile(r"\bm\.(def|impl)\s*\(\s*\"([A-Za-z_]\w*)[^;]*?;", re.DOTALL)
_TABLE_REG = re.compile(r"\{\s*\"([A-Za-z_]\w*)\"\s*,\s*\(?\s*(?:PyCFunction\s*\)\s*)?&?([\w:]+)")
_SYMBOL_REF = re.compile(r"&\s*([\w:]+)")


@dataclass(frozen=True)
class Registration:
    """One op registration that survives the preprocessor: op name, linked symbol, line."""

    op: str
    symbol: str
    line: int


@dataclass(frozen=True)
class ExcludedOp:
    """A registered op whose every implementing file is left out of the build."""

    op: str
    symbol: str
    line: int
    files: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.op} (registered at line {self.line}; implemented in {', '.join(self.files)})"


def _blank_inactive(text: str, macros: Mapping[str, str]) -> str:
    return "\n".join(ln if ok else "" for _, ln, ok in cpp_active_lines(text, macros))


def registrations(text: str, macros: Mapping[str, str]) -> list[Registration]:
    """The symbol-referencing registrations active under ``macros``.

    Understands torch ``m.def("name", &fn)`` / ``m.impl("name", kCUDA, &fn)`` statements
    and C method tables ``{"name", fn, METH_...}``; schema-only ``m.def`` links nothing.
    """
    live = _blank_inactive(text, macros)
    out = []
    for m in _TORCH_REG.finditer(live):
        ref = _SYMBOL_REF.search(m.group(0))
        if ref:
            line = live.count("\n", 0, m.start()) + 1
            out.append(Registration(m.group(2), ref.group(1).split("::")[-1], line))
    for m in _TABLE_REG.finditer(live):
        if m.group(2) in {"NULL", "nullptr"}:
            continue
        line = live.count("\n", 0, m.start()) + 1
        out.append(Registration(m.group(1), m.group(2).split("::")[-1], line))
    return sorted(out, key=lambda r: r.line)


def cmake_sources(text: str, variables: Mapping[str, str]) -> dict[str, bool]:
    """Every source file named in a CMakeLists, and whether any naming of it is active."""
    active = cmake_active_lines(text, variables)
    found: dict[str, bool] = {}
    for no, line in enumerate(text.splitlines()):
        code = line.split("#", 1)[0]
        for m in _SOURCE.finditer(code):
            name = m.group(1)
            found[name] = found.get(name, False) or active[no]
    return found


def defines_symbol(text: str, symbol: str) -> bool:
    """Whether C/C++/CUDA ``text`` holds a function definition (with a body) of ``symbol``."""
    pat = re.compile(rf"(?m)^[ \t]*(?:[\w:<>,*&]+[ \t]+)+[*&]?[ \t]*{re.escape(symbol)}[ \t]*\(")
    for m in pat.finditer(text):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        rest = text[j:]
        brace, semi = rest.find("{"), rest.find(";")
        if brace != -1 and (semi == -1 or brace < semi):
            return True
    return False


def _strip_prefix(name: str) -> str:
    return re.sub(r"^\$\{[\w]+\}/", "", name)


def excluded_ops(
    registration_text: str,
    cmake_text: str,
    sources: Mapping[str, str],
    platform: Platform,
) -> list[ExcludedOp]:
    """Ops registered on ``platform`` whose implementation files its CMake guards exclude.

    ``sources`` maps CMake-relative source paths to their text (files that could be read).
    An op is reported only if its symbol is defined somewhere and nowhere included.
    """
    listed = {
        _strip_prefix(k): v for k, v in cmake_sources(cmake_text, platform.cmake_vars).items()
    }
    out = []
    seen: set[str] = set()
    for reg in registrations(registration_text, platform.macros):
        if reg.symbol in seen:
            continue
        seen.add(reg.symbol)
        files = [f for f, txt in sources.items() if defines_symbol(txt, reg.symbol)]
        if not files or any(listed.get(f, True) for f in files):
            continue
        out.append(ExcludedOp(reg.op, reg.symbol, reg.line, tuple(sorted(files))))
    return out

"""Target platforms and the two guard languages they decide: C preprocessor and CMake if()."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from wh.errors import ConditionError
from wh.kernels.kinds import PlatformName

_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}


@dataclass(frozen=True)
class Platform:
    """What guards see on one target: defined C macros and CMake variables."""

    name: PlatformName
    macros: Mapping[str, str] = field(default_factory=dict)
    cmake_vars: Mapping[str, str] = field(default_factory=dict)

    def with_cmake(self, extra: Mapping[str, str]) -> Platform:
        return Platform(self.name, dict(self.macros), {**self.cmake_vars, **extra})


WINDOWS_MSVC = Platform(
    PlatformName.WINDOWS_MSVC,
    {"_WIN32": "1", "_WIN64": "1", "_MSC_VER": "1940", "__CUDACC__": "1"},
    {"WIN32": "1", "MSVC": "1", "CMAKE_SYSTEM_NAME": "Windows"},
)
LINUX_GCC = Platform(
    PlatformName.LINUX_GCC,
    {"__linux__": "1", "__unix__": "1", "__GNUC__": "12", "__CUDACC__": "1"},
    {"UNIX": "1", "LINUX": "1", "CMAKE_SYSTEM_NAME": "Linux", "CMAKE_COMPILER_IS_GNUCXX": "1"},
)


def cmake_truthy(value: str) -> bool:
    v = value.strip().upper()
    return not (v in _FALSE or v.endswith("-NOTFOUND"))


# ---------------------------------------------------------------- C preprocessor #if


_CPP_TOKEN = re.compile(r"\s*(defined|&&|\|\||==|!=|>=|<=|[()!<>]|[A-Za-z_]\w*|\d+[uUlL]*)")


def _cpp_tokens(expr: str) -> list[str]:
    expr = re.sub(r"/\*.*?\*/|//.*$", "", expr).strip()
    pos, out = 0, []
    while pos < len(expr):
        m = _CPP_TOKEN.match(expr, pos)
        if not m:
            raise ConditionError(expr, "cpp-unreadable")
        out.append(m.group(1))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return out


def eval_cpp(expr: str, macros: Mapping[str, str]) -> bool:
    """Evaluate a ``#if`` expression: defined(), !, &&, ||, comparisons, integers."""
    toks = _cpp_tokens(expr)
    i = 0

    def peek() -> str:
        return toks[i] if i < len(toks) else ""

    def take() -> str:
        nonlocal i
        i += 1
        return toks[i - 1]

    def value(name: str) -> int:
        raw = macros.get(name, "0") if not name[0].isdigit() else name
        digits = re.match(r"\d+", raw)
        return int(digits.group(0)) if digits else 1

    def primary() -> int:
        t = take()
        if t == "!":
            return int(not primary())
        if t == "(":
            v = orx()
            take()
            return v
        if t == "defined":
            paren = peek() == "("
            if paren:
                take()
            name = take()
            if paren:
                take()
            return int(name in macros)
        if not t:
            raise ConditionError(expr, "cpp-incomplete")
        return value(t)

    def cmp() -> int:
        v = primary()
        while peek() in ("==", "!=", ">=", "<=", ">", "<"):
            op, rhs = take(), primary()
            v = int(
                {
                    "==": v == rhs,
                    "!=": v != rhs,
                    ">=": v >= rhs,
                    "<=": v <= rhs,
                    ">": v > rhs,
                    "<": v < rhs,
                }[op]
            )
        return v

    def andx() -> int:
        v = cmp()
        while peek() == "&&":
            take()
            v = int(cmp() and v)
        return v

    def orx() -> int:
        v = andx()
        while peek() == "||":
            take()
            v = int(andx() or v)
        return v

    return bool(orx())


def cpp_active_lines(text: str, macros: Mapping[str, str]) -> list[tuple[int, str, bool]]:
    """Each line of C/C++ source with whether it survives the preprocessor's conditionals."""
    stack: list[tuple[bool, bool]] = []  # (this branch active, some branch already taken)
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = re.match(r"#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)", s)
        outer = all(a for a, _ in stack)
        if m:
            kw, rest = m.group(1), m.group(2).strip()
            if kw in ("ifdef", "ifndef", "if"):
                if kw == "if":
                    cond = eval_cpp(rest, macros)
                else:
                    name = rest.split()[0] if rest else ""
                    cond = (name in macros) == (kw == "ifdef")
                stack.append((cond, cond))
            elif kw == "elif" and stack:
                _, taken = stack[-1]
                cond = not taken and eval_cpp(rest, macros)
                stack[-1] = (cond, taken or cond)
            elif kw == "else" and stack:
                _, taken = stack[-1]
                stack[-1] = (not taken, True)
            elif kw == "endif" and stack:
                stack.pop()
            out.append((no, line, False))
            continue
        out.append((no, line, outer))
    return out


# ---------------------------------------------------------------- CMake if()


_CMAKE_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\(|\)|[^\s()"]+)')
_BINARY = {
    "VERSION_GREATER_EQUAL",
    "VERSION_GREATER",
    "VERSION_LESS",
    "VERSION_LESS_EQUAL",
    "VERSION_EQUAL",
    "STREQUAL",
    "EQUAL",
    "GREATER",
    "LESS",
    "GREATER_EQUAL",
    "LESS_EQUAL",
    "MATCHES",
}
_UNARY = {"DEFINED", "EXISTS", "COMMAND", "TARGET", "IS_DIRECTORY"}


def cmake_tokens(expr: str) -> list[str]:
    return [m.group(1) for m in _CMAKE_TOKEN.finditer(expr)]


def _expand(tok: str, variables: Mapping[str, str]) -> str:
    if tok.startswith('"') and tok.endswith('"'):
        tok = tok[1:-1]
    return re.sub(r"\$\{([A-Za-z0-9_.+-]+)\}", lambda m: variables.get(m.group(1), ""), tok)


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:4]) or (0,)


def eval_cmake(expr: str, variables: Mapping[str, str]) -> bool:
    """Evaluate a CMake ``if()`` condition with NOT/AND/OR, VERSION_* and string tests."""
    toks = cmake_tokens(expr)
    i = 0

    def peek(k: int = 0) -> str:
        return toks[i + k] if i + k < len(toks) else ""

    def take() -> str:
        nonlocal i
        i += 1
        return toks[i - 1]

    def operand(tok: str) -> str:
        if tok.startswith('"') or "${" in tok:
            return _expand(tok, variables)
        return variables.get(tok, tok)

    def truth(tok: str) -> bool:
        if tok.startswith('"') or "${" in tok:
            return cmake_truthy(_expand(tok, variables))
        if tok.upper() in _FALSE or tok.upper() in {"ON", "YES", "TRUE", "Y"} or tok.isdigit():
            return cmake_truthy(tok)
        return tok in variables and cmake_truthy(variables[tok])

    def atom() -> bool:
        t = take()
        if t == "(":
            v = orx()
            take()
            return v
        if t in _UNARY:
            name = take()
            return t == "DEFINED" and name in variables
        if peek() in _BINARY:
            op, rhs = take(), take()
            a, b = operand(t), operand(rhs)
            if op.startswith("VERSION_"):
                va, vb = _version(a), _version(b)
                return {
                    "VERSION_GREATER_EQUAL": va >= vb,
                    "VERSION_GREATER": va > vb,
                    "VERSION_LESS": va < vb,
                    "VERSION_LESS_EQUAL": va <= vb,
                    "VERSION_EQUAL": va == vb,
                }[op]
            if op == "STREQUAL":
                return a == b
            if op == "MATCHES":
                return re.search(b, a) is not None
            fa, fb = float(a or 0), float(b or 0)
            return {
                "EQUAL": fa == fb,
                "GREATER": fa > fb,
                "LESS": fa < fb,
                "GREATER_EQUAL": fa >= fb,
                "LESS_EQUAL": fa <= fb,
            }[op]
        if not t:
            raise ConditionError(expr, "cmake-incomplete")
        return truth(t)

    def notx() -> bool:
        if peek() == "NOT":
            take()
            return not notx()
        return atom()

    def andx() -> bool:
        v = notx()
        while peek() == "AND":
            take()
            v = notx() and v
        return v

    def orx() -> bool:
        v = andx()
        while peek() == "OR":
            take()
            v = andx() or v
        return v

    return orx()


_CMAKE_CMD = re.compile(r"^\s*(if|elseif|else|endif)\s*\(", re.IGNORECASE)


def cmake_commands(text: str) -> list[tuple[int, str, str]]:
    """(line, command, argument text) for if/elseif/else/endif, arguments across lines."""
    text = re.sub(r"#[^\n]*", "", text)
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _CMAKE_CMD.match(lines[i])
        if not m:
            i += 1
            continue
        start, depth, buf = i, 0, ""
        chunk = lines[i][m.end() - 1 :]
        while True:
            for ch in chunk:
                buf += ch
                depth += ch == "("
                depth -= ch == ")"
                if depth == 0:
                    break
            if depth == 0 or i + 1 >= len(lines):
                break
            i += 1
            chunk = "\n" + lines[i]
        out.append((start + 1, m.group(1).lower(), buf[1:-1].strip()))
        i += 1
    return out


def cmake_active_lines(text: str, variables: Mapping[str, str]) -> list[bool]:
    """For each line of a CMakeLists: is it inside branches that are taken on this platform."""
    n = len(text.splitlines())
    active = [True] * (n + 1)
    events = {line: (cmd, args) for line, cmd, args in cmake_commands(text)}
    stack: list[tuple[bool, bool]] = []
    for no in range(1, n + 1):
        if no in events:
            cmd, args = events[no]
            if cmd == "if":
                c = eval_cmake(args, variables)
                stack.append((c, c))
            elif cmd == "elseif" and stack:
                _, taken = stack[-1]
                c = not taken and eval_cmake(args, variables)
                stack[-1] = (c, taken or c)
            elif cmd == "else" and stack:
                stack[-1] = (not stack[-1][1], True)
            elif cmd == "endif" and stack:
                stack.pop()
            active[no] = False
            continue
        active[no] = all(a for a, _ in stack)
    return active[1:]

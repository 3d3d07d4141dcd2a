"""CMake source read as commands: names, arguments with their byte spans, and if() nesting."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")


@dataclass(frozen=True)
class Arg:
    """One argument as written: raw text, its value (quotes removed) and its span."""

    raw: str
    start: int
    end: int
    quoted: bool

    @property
    def value(self) -> str:
        if self.quoted:
            return self.raw[1:-1]
        m = _BRACKET_OPEN.match(self.raw)
        if m:
            return self.raw[m.end() : -len(m.group(0))]
        return self.raw


@dataclass(frozen=True)
class Command:
    """One command invocation ``name(args)``: ``start`` is the name, ``end`` is after ``)``."""

    file: str
    name: str
    args: tuple[Arg, ...]
    start: int
    end: int
    line: int
    # the if()/elseif()/else() branches this command sits in, outermost first:
    # (the condition's tokens, whether it is the negated else()-part)
    within: tuple[tuple[tuple[str, ...], bool], ...] = ()

    @property
    def lname(self) -> str:
        return self.name.lower()

    def values(self) -> list[str]:
        return [a.value for a in self.args]

    def condition(self) -> tuple[str, ...]:
        return tuple(a.raw for a in self.args)

    def text(self, source: str) -> str:
        return source[self.start : self.end]


def _skip_space_and_comments(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            m = _BRACKET_OPEN.match(text, i + 1)
            if m:
                close = "]" + m.group(1) + "]"
                j = text.find(close, m.end())
                i = n if j < 0 else j + len(close)
            else:
                j = text.find("\n", i)
                i = n if j < 0 else j + 1
        else:
            break
    return i


def _read_args(text: str, i: int, file: str) -> tuple[list[Arg], int]:
    """Arguments from just after ``(`` to the matching ``)``; returns (args, index after ``)``)."""
    args: list[Arg] = []
    depth = 0
    n = len(text)
    while True:
        i = _skip_space_and_comments(text, i)
        if i >= n:
            raise ValueError(f"{file}: unterminated command at end of file")
        c = text[i]
        if c == ")":
            if depth == 0:
                return args, i + 1
            depth -= 1
            args.append(Arg(")", i, i + 1, False))
            i += 1
        elif c == "(":
            depth += 1
            args.append(Arg("(", i, i + 1, False))
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            args.append(Arg(text[i : j + 1], i, j + 1, True))
            i = j + 1
        else:
            m = _BRACKET_OPEN.match(text, i)
            if m:
                close = "]" + m.group(1) + "]"
                j = text.find(close, m.end())
                j = n if j < 0 else j + len(close)
                args.append(Arg(text[i:j], i, j, False))
                i = j
                continue
            j = i
            while j < n and text[j] not in ' \t\r\n()#"':
                j += 2 if text[j] == "\\" else 1
            if j < n and text[j] == '"':  # unquoted-legacy: a"b c"d stays one argument
                k = text.find('"', j + 1)
                j = n if k < 0 else k + 1
                while j < n and text[j] not in " \t\r\n()#":
                    j += 1
            args.append(Arg(text[i:j], i, j, False))
            i = j


def parse(text: str, file: str = "CMakeLists.txt") -> list[Command]:
    """Every command of a CMake file in order, with the if() branches each one sits in."""
    out: list[Command] = []
    stack: list[tuple[tuple[str, ...], bool]] = []
    chains: list[tuple[str, ...]] = []  # the condition of the if()/elseif() last opened
    i, n = 0, len(text)
    while True:
        i = _skip_space_and_comments(text, i)
        if i >= n:
            return out
        m = _NAME.match(text, i)
        if not m:
            raise ValueError(f"{file}: line {text.count(chr(10), 0, i) + 1}: expected a command")
        j = m.end()
        while j < n and text[j] in " \t":
            j += 1
        if j >= n or text[j] != "(":
            raise ValueError(f"{file}: line {text.count(chr(10), 0, i) + 1}: expected '('")
        args, end = _read_args(text, j + 1, file)
        name = m.group(0)
        low = name.lower()
        line = text.count("\n", 0, i) + 1
        if low in ("elseif", "else", "endif") and stack:
            stack.pop()
        cmd = Command(file, name, tuple(args), i, end, line, tuple(stack))
        out.append(cmd)
        if low == "if":
            chains.append(cmd.condition())
            stack.append((cmd.condition(), False))
        elif low == "elseif" and chains:
            chains[-1] = cmd.condition()
            stack.append((cmd.condition(), False))
        elif low == "else" and chains:
            stack.append((chains[-1], True))
        elif low == "endif" and chains:
            chains.pop()
        i = end


def guarded_by(cmd: Command, condition: Sequence[str]) -> bool:
    """Whether ``cmd`` sits in an if() branch whose condition is exactly ``condition``."""
    want = tuple(condition)
    return any(not neg and cond == want for cond, neg in cmd.within)


TRUE = ("ON", "TRUE", "1", "YES")  # the spellings of a true constant that ``set`` takes


def switched_on(cmds: Sequence[Command], at: int) -> list[str]:
    """The variables ``set(X ON)`` (or TRUE, 1, YES) turns on at the top level of the first
    branch of the if() or elseif() at index ``at``, up to its elseif/else/endif, in order."""
    out: list[str] = []
    depth = 0
    for c in cmds[at + 1 :]:
        if c.lname == "if":
            depth += 1
        elif c.lname == "endif":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and c.lname in ("elseif", "else"):
            break
        elif depth == 0 and c.lname == "set":
            v = c.values()
            if len(v) >= 2 and v[1].upper() in TRUE and v[0] not in out:
                out.append(v[0])
    return out


def line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def line_end(text: str, pos: int) -> int:
    """Index just after the newline ending the line that holds ``pos`` (or end of text)."""
    j = text.find("\n", pos)
    return len(text) if j < 0 else j + 1


def indent_at(text: str, pos: int) -> str:
    """The leading blanks of the line that holds ``pos``."""
    start = line_start(text, pos)
    j = start
    while j < len(text) and text[j] in " \t":
        j += 1
    return text[start:j]


def tokens(condition: str) -> tuple[str, ...]:
    """The argument tokens of an if() condition written as text (``"NOT MSVC"``)."""
    cmds = parse(f"if({condition})\n")
    return cmds[0].condition()

"""The version auto-trigger anti-pattern: a toolchain version check that turns a switch on."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wh.kernels import cmakeparse
from wh.kernels.conditions import cmake_commands, cmake_tokens, eval_cmake
from wh.kernels.kinds import TriggerKind

_VERSION_OPS = {
    "VERSION_GREATER_EQUAL",
    "VERSION_GREATER",
    "VERSION_EQUAL",
    "VERSION_LESS",
    "VERSION_LESS_EQUAL",
}
_IFS = ("if", "elseif")
_VERSION_VAR = re.compile(r"CUDA\w*VERSION|CUDA_COMPILER_VERSION|CUDAToolkit_VERSION")


@dataclass(frozen=True)
class AutoTrigger:
    """A CMake condition that builds for an architecture because the toolchain is new enough."""

    line: int
    condition: str
    switch: str
    kind: TriggerKind
    file: str = "CMakeLists.txt"

    def describe(self) -> str:
        if self.kind is TriggerKind.OR_SWITCH:
            fix = f"if({self.switch})"
        else:
            fix = f"if(<version check> AND {self.switch}) or add the target's condition"
        return (
            f"{self.file}:{self.line}: if({self.condition}) turns on {self.switch}"
            " whenever the CUDA toolkit is new enough on this platform, whatever you build for;"
            f" rewrite as {fix}"
        )


def _has_version_test(tokens: list[str]) -> bool:
    return any(
        t in _VERSION_OPS and i > 0 and _VERSION_VAR.search(tokens[i - 1])
        for i, t in enumerate(tokens)
    )


def live(trigger: AutoTrigger, variables: Mapping[str, str]) -> bool:
    """Whether the trigger still fires on this platform once the toolchain is new enough:
    its condition evaluated with CUDA 99 and the platform's variables."""
    new = {
        k: "99.0" for k in ("CUDA_VERSION", "CMAKE_CUDA_COMPILER_VERSION", "CUDAToolkit_VERSION")
    }
    return eval_cmake(trigger.condition, {**variables, **new})


def left_on(
    files: Mapping[str, str], variables: Mapping[str, str], included: Sequence[str]
) -> list[AutoTrigger]:
    """The auto-triggers of the CMake files configure reads that still fire on this platform."""
    out = []
    for name in included:
        for t in find_autotriggers(files.get(name, "")):
            t = AutoTrigger(t.line, t.condition, t.switch, t.kind, name)
            if live(t, variables):
                out.append(t)
    return out


def find_autotriggers(cmake_text: str) -> list[AutoTrigger]:
    """Every if()/elseif() that ORs a CUDA version test with a switch, or sets one ON (pure)."""
    try:
        cmds = cmakeparse.parse(cmake_text)
    except ValueError:
        cmds = []
    out = []
    for line, cmd, args in cmake_commands(cmake_text):
        if cmd not in ("if", "elseif"):
            continue
        toks = cmake_tokens(args)
        if not _has_version_test(toks):
            continue
        if "OR" in toks:
            operands = [
                t
                for i, t in enumerate(toks)
                if re.fullmatch(r"[A-Za-z_]\w*", t)
                and t not in {"OR", "AND", "NOT", *_VERSION_OPS}
                and not (i + 1 < len(toks) and toks[i + 1] in _VERSION_OPS)
            ]
            for sw in operands:
                out.append(AutoTrigger(line, " ".join(toks), sw, TriggerKind.OR_SWITCH))
            continue
        # the switches its own first branch sets ON, wherever in the branch (a newer
        # version may set it after a long list(APPEND ...), not on the next line)
        for sw in _set_on_in_branch(cmds, line):
            out.append(AutoTrigger(line, " ".join(toks), sw, TriggerKind.SETS_SWITCH))
    return out


def _set_on_in_branch(cmds: Sequence[cmakeparse.Command], line: int) -> list[str]:
    """Variables that ``set(X ON)`` at the top level of the first branch of the if() or
    elseif() on ``line``, up to its elseif/else/endif."""
    at = next((i for i, c in enumerate(cmds) if c.line == line and c.lname in _IFS), None)
    return [] if at is None else cmakeparse.switched_on(cmds, at)

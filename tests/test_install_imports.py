"""The install package's own imports, read from its source: every import at the top of a
module (none inside a function), and no cycle between its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import wh.install

INSTALL = Path(wh.install.__file__).parent


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in INSTALL.glob("*.py")}


def _imports(tree: ast.AST) -> set[str]:
    """The sibling modules ``tree`` imports (``wh.install.X``, ``from wh.install import X``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "wh.install":
                out.update(a.name for a in node.names)
            elif node.module.startswith("wh.install."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith("wh.install."))
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> modules it imports), or [] when none."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return []


def test_no_import_inside_a_function_in_install() -> None:
    inside = [
        f"{name}.py:{node.lineno} ({fn.name})"
        for name, tree in _modules().items()
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert inside == []


def test_the_install_modules_import_each_other_without_a_cycle() -> None:
    graph = {name: _imports(tree) for name, tree in _modules().items()}
    assert _cycle(graph) == []
    # the pieces of installing are separate modules: checking what was written, watching
    # staged files, moving them into place, the journal; none of them needs the writer
    for piece in ("checker", "watch", "mover", "journal"):
        assert "staging" not in graph[piece] and "safeguard" not in graph[piece], piece


def test_a_cycle_is_found() -> None:
    """The check above can fail: the staging <-> safeguard cycle this package once had."""
    assert _cycle({"staging": {"safeguard"}, "safeguard": {"staging", "journal"}}) == [
        "safeguard",
        "staging",
        "safeguard",
    ]

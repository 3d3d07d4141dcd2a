"""The package's shape: the layers contract bites, no import cycle, imports at module level."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import grimp
import pytest
import wh
from wh.resolve.resolver import _sccs

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = REPO / "pyproject.toml"
PACKAGE = Path(wh.__file__).resolve().parent  # installer/wh
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent))


def _lint_imports(source_root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``make lint``'s import-linter run, with the project's contract, against the ``wh``
    found under ``source_root``."""
    assert LINT_IMPORTS, f"lint-imports is not beside {sys.executable} (pip install -e '.[dev]')"
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", str(PYPROJECT)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_real_tree_keeps_the_layers_contract(tmp_path: Path) -> None:
    done = _lint_imports(PACKAGE.parent, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 broken" in done.stdout and "KEPT" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "shown"),
    [
        # model holds pure values: it may not reach up to the use cases
        ("model/wheel.py", "import wh.app.install", "wh.model.wheel -> wh.app.install"),
        # "|" siblings may not import each other: resolve is pure, install does IO
        ("resolve/explain.py", "import wh.install.journal", "wh.resolve.explain -> wh.install"),
        # a function-level import counts as much as one at the top
        (
            "errors.py",
            "def _late() -> None:\n    import wh.cli.main\n",
            "wh.errors -> wh.cli.main",
        ),
    ],
)
def test_an_import_breaking_the_layer_rule_fails_the_contract_naming_it(
    tmp_path: Path, module: str, line: str, shown: str
) -> None:
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "wh", ignore=shutil.ignore_patterns("__pycache__"))
    broken = copy / "wh" / module
    broken.write_text(broken.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    done = _lint_imports(copy, tmp_path)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout and ", 0 broken" not in done.stdout, done.stdout
    assert shown in done.stdout, done.stdout


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (the resolver's Tarjan),
    sorted. A module importing itself (cli.main's ``python -m wh.cli.main`` guard) is no
    cycle."""
    return sorted(c for c in _sccs(graph) if len(c) > 1)


def _module_graph() -> dict[str, set[str]]:
    """Who imports whom among wh's modules, function-level imports included (grimp)."""
    g = grimp.build_graph("wh", cache_dir=None)
    return {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}


def test_cycles_finds_a_cycle_and_only_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_among_wh_modules() -> None:
    cycles = _cycles(_module_graph())
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


_LIFETIME = (
    "Windows only (job objects, process start times); and proc.lifetime is loaded by "
    "`wh --help`, which need not load ctypes"
)
_ELF = "the ELF reader loads only when a Linux binary is read (the load check)"
_LOADSCAN = "the load check (ELF/PE readers, recipes) loads only when a lock or verify runs it"
# Function-level imports kept outside wh/cli (where imports stay in the commands so that
# `wh --help` loads no use case), each with why. Key: (module, the import statement).
FUNCTION_LEVEL_IMPORTS: dict[tuple[str, str], str] = {
    ("wh.settings", "from platformdirs import user_cache_dir"): (
        "`wh --help` and every command given WH_CACHE_DIR never load platformdirs"
    ),
    ("wh.hashing", "import msvcrt"): "Windows only: msvcrt exists only there",
    ("wh.hashing", "from wh.proc import win32"): "Windows only: the shared-delete open",
    ("wh.cache.stamps", "from wh.proc import win32"): "Windows only: the NTFS change time",
    ("wh.wheel.portable", "import winreg"): "Windows only: winreg exists only there",
    ("wh.proc.win32", "from ctypes import wintypes"): "Windows only: kernel32's types",
    ("wh.proc.lifetime", "import ctypes"): _LIFETIME,
    ("wh.proc.lifetime", "from ctypes import wintypes"): _LIFETIME,
    ("wh.proc.memory", "import ctypes"): "Linux only: glibc's mallopt (the arena cap)",
    ("wh.wheel.nativeworker", "from wh.wheel.natives import Natives"): (
        "`wh lock` starts the helper before its own imports: the spawn must not wait for "
        "the readers"
    ),
    # Heavy libraries only some commands need: the offline ones never load them.
    ("wh.airgap.indexclient", "import urllib3"): (
        "the HTTP stack loads only when a command reaches an index (fetch, a lock with URL "
        "wheels); lock, install and verify from a wheelhouse never load it"
    ),
    ("wh.wheel.natives", "from elftools.elf.enums import ENUM_E_MACHINE"): _ELF,
    ("wh.wheel.peimage", "import pefile"): (
        "the PE reader loads only when a Windows binary is read (a Windows target's load check)"
    ),
    ("wh.wheelhouse.scan", "from filelock import FileLock"): (
        "filelock loads only when the scan cache is written: an unchanged wheelhouse (a "
        "remembered lock) never loads it"
    ),
    ("wh.app.why", "from wh.app.loadscan import why_libraries"): _LOADSCAN,
    ("wh.app.lockmemo", "from wh.app.lock import do_lock"): (
        "a remembered lock (nothing changed) answers without loading the resolver, the load "
        "check or the install machinery"
    ),
}


def _function_level_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, statement) for every import statement inside a function body in ``path``."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child.lineno, ast.unparse(child)
            functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            yield from walk(child, in_function or isinstance(child, functions))

    yield from walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _hidden_imports(under: str, skip: tuple[str, ...] = ()) -> list[str]:
    """Function-level imports below ``wh/<under>`` not in the list above, as text."""
    found = []
    for path in sorted((PACKAGE / under).rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(skip):
            continue
        module = _module_name(path)
        for line, imported in _function_level_imports(path):
            if (module, imported) not in FUNCTION_LEVEL_IMPORTS:
                found.append(f"installer/wh/{rel}:{line}: {imported}")
    return found


def test_function_level_imports_finds_them_and_skips_module_level_ones(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import os\n"
        "if os.name == 'nt':\n    import msvcrt\n"
        "def f():\n    import json\n    from . import sibling\n"
        "    def g():\n        from collections import abc\n"
        "class C:\n    import re\n    def m(self):\n        import zipfile\n"
        "h = lambda: __import__('x')\n",
        encoding="utf-8",
    )
    got = list(_function_level_imports(source))
    assert got == [
        (5, "import json"),
        (6, "from . import sibling"),
        (8, "from collections import abc"),
        (12, "import zipfile"),
    ]


def test_no_function_level_imports_outside_cli_but_the_listed_ones() -> None:
    hidden = _hidden_imports("", skip=("cli/",))
    assert hidden == [], "hoist these to module level, or list them with why:\n" + "\n".join(hidden)


def test_every_listed_function_level_import_is_still_there() -> None:
    """A stale entry would let a later import hide under its name."""
    present = {
        (_module_name(p), imported)
        for p in PACKAGE.rglob("*.py")
        for _, imported in _function_level_imports(p)
    }
    assert sorted(set(FUNCTION_LEVEL_IMPORTS) - present) == []

"""Path safety (``wh.wheel.portable``): archive paths that escape the folder they are
written under, and names Windows cannot create; validation, bundle extraction and the
owned-files listing all ask these functions."""

from __future__ import annotations

import random

import pytest
from wh.wheel.portable import path_problem, unsafe_path, unsafe_paths, windows_problem


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("a/b.py", False),
        ("a/../b.py", True),
        ("/etc/passwd", True),
        ("c:/x", True),
        ("D:x", True),
        ("a\\b", True),
        ("a/\x00b", True),
        ("a/\x1bb", True),
        ("a/\x1fb", True),
        ("a/\x7fb", True),
        ("a/\x80b", False),
        ("a/b\n", True),
        ("a//b", True),
        ("./a", True),
    ],
)
def test_unsafe_paths(name: str, bad: bool) -> None:
    assert (unsafe_path(name) is not None) == bad


def test_the_whole_list_test_misses_no_unsafe_path() -> None:
    """``unsafe_paths`` (one test over all paths, then path by path) finds exactly what
    ``unsafe_path`` finds, for paths built from the characters that matter."""
    rng = random.Random(11)
    parts = ["a", "b.py", ".", "..", "", ".x", "x.", "c:", "C:", "\\", "\x00", "\x7f", "\n", "é"]
    for _ in range(3000):
        paths = [
            "/".join(rng.choice(parts) for _ in range(rng.randrange(1, 4)))
            + ("/" if rng.random() < 0.2 else "")
            for _ in range(rng.randrange(0, 5))
        ]
        want = {p: why for p in paths if (why := unsafe_path(p))}
        assert unsafe_paths(paths) == want, paths
        # on Windows its own names too, each after the escape a path may also be
        both = {p: want.get(p) or windows_problem(p) for p in paths}
        assert unsafe_paths(paths, windows=True) == {p: w for p, w in both.items() if w}
        assert all(path_problem(p, windows=True) == both[p] for p in paths)


def test_windows_names_rules() -> None:
    bad = ["CON", "con.txt", "Aux.py", "nul", "COM1.log", "LPT9", "COM\u00b9", "x.", "x ", "a:b"]
    bad += ["a<b", "a|b", "a?b", 'a"b', "a*b", "CON  .txt", "lpt\u00b3.dat", "tab\there"]
    bad += ["dir./f.py", "dir /f.py", "AUX/f.py", "sub/Con"]  # a folder, not the leaf
    for name in bad:
        assert windows_problem(f"pkg/{name}") is not None, name
    for name in ["console.py", "auxiliary.py", "com10", "nul_handler.py", ".hidden", "a.b.c"]:
        assert windows_problem(f"pkg/{name}") is None, name

"""The wheels the resolver tests build as values are the ones a scan reads from real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.model.wheel import Wheel
from wh.wheelhouse.scan import scan

from tests.factory import as_scanned, make_wheel, wheel_value
from tests.scenarios import load_all, scenarios_root


def _fields(wheel: Wheel) -> tuple[object, ...]:
    """Every field the resolver reads, the ones left out of ``==`` included."""
    return (
        wheel.path,
        wheel.name,
        wheel.version,
        wheel.tags,
        wheel.build,
        wheel.requires_dist_text,
        wheel.requires_python_text,
        wheel.provides_extra,
        wheel.requires_dist,
        wheel.requires_python,
    )


CASES: list[tuple[str, str, list[str], dict[str, object]]] = [
    ("plain", "1.0", [], {}),
    ("Mixed.Case_name", "2.0b1", ["b>=1", "c; sys_platform == 'win32'"], {}),
    ("local", "2.9.1+cu130", [], {"tag": "cp312-cp312-manylinux_2_17_x86_64"}),
    ("py", "1.0", [], {"requires_python": ">=3.10,<3.14"}),
    ("built", "1.0", [], {"build": "1"}),
    (
        "extras",
        "1.0",
        ["base"],
        {"extras": {"cuda": ["cuda-rt", "nvtx; sys_platform == 'linux'"], "debug": ["dbg"]}},
    ),
]


@pytest.mark.parametrize(("name", "version", "requires", "kw"), CASES, ids=[c[0] for c in CASES])
def test_wheel_value_is_what_a_scan_reads_from_make_wheel(
    tmp_path: Path, name: str, version: str, requires: list[str], kw: dict[str, object]
) -> None:
    make_wheel(tmp_path, name, version, requires, **kw)  # type: ignore[arg-type]
    (scanned,) = scan(tmp_path, use_cache=False).wheels
    value = wheel_value(tmp_path, name, version, requires, **kw)  # type: ignore[arg-type]
    assert _fields(value) == _fields(scanned)


def test_every_scenario_wheelhouse_as_values_is_the_scanned_one(tmp_path: Path) -> None:
    root = scenarios_root()
    if root is None:
        pytest.skip("the shared resolver scenarios are absent")
    for i, sc in enumerate(load_all(root)):
        folder = tmp_path / str(i)
        folder.mkdir()
        sc.build_wheelhouse(folder)
        scanned = scan(folder, use_cache=False).wheels
        assert [_fields(w) for w in sc.wheels(folder)] == [_fields(w) for w in scanned], sc.id


def test_as_scanned_keeps_the_last_wheel_of_a_filename_in_filename_order() -> None:
    first = wheel_value(Path("h"), "b", "1.0", ["x"])
    again = wheel_value(Path("h"), "b", "1.0", ["y"])
    a = wheel_value(Path("h"), "a", "1.0")
    got = as_scanned([first, a, again])
    assert [w.filename for w in got] == ["a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"]
    assert got[1].requires_dist_text == ("y",)

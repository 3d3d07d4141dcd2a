"""Idempotent anchor patches: applied, already-applied, anchor-missing, ambiguous."""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.errors import BuildError
from wh.kernels.patches import Patch, Status, apply_patches, plan_patch

CMAKE = (
    "if(${CUDA_VERSION} VERSION_GREATER_EQUAL 12.8 OR SGL_KERNEL_ENABLE_SM100A)\n  x()\nendif()\n"
)
SM100 = Patch(
    "CMakeLists.txt",
    "if(${CUDA_VERSION} VERSION_GREATER_EQUAL 12.8 OR SGL_KERNEL_ENABLE_SM100A)",
    "if(SGL_KERNEL_ENABLE_SM100A)",
)


def test_applies_then_reports_already_applied() -> None:
    first = plan_patch(CMAKE, SM100)
    assert first.status is Status.APPLIED
    assert first.new_text.startswith("if(SGL_KERNEL_ENABLE_SM100A)\n")
    second = plan_patch(first.new_text, SM100)
    assert second.status is Status.ALREADY_APPLIED
    assert second.new_text == first.new_text


def test_replacement_containing_anchor_is_idempotent() -> None:
    guard = Patch(
        "ext.cc", '  m.def("transfer_kv");\n', '#ifndef _WIN32\n  m.def("transfer_kv");\n#endif\n'
    )
    text = 'void f() {\n  m.def("transfer_kv");\n}\n'
    once = plan_patch(text, guard)
    assert once.status is Status.APPLIED
    twice = plan_patch(once.new_text, guard)
    assert twice.status is Status.ALREADY_APPLIED
    assert twice.new_text.count("#ifndef _WIN32") == 1


def test_moved_anchor_names_nearest_lines() -> None:
    moved = CMAKE.replace("12.8", "12.9")
    out = plan_patch(moved, SM100)
    assert out.status is Status.ANCHOR_MISSING
    assert out.nearest and "line 1:" in out.nearest[0] and "12.9" in out.nearest[0]
    assert "nearest lines" in out.describe()


def test_count_mismatch_is_ambiguous() -> None:
    out = plan_patch(CMAKE + CMAKE, SM100)
    assert out.status is Status.AMBIGUOUS
    assert out.found == 2
    assert plan_patch(CMAKE + CMAKE, Patch(SM100.file, SM100.anchor, SM100.replacement, 2)).ok


def test_partly_patched_file_is_ambiguous() -> None:
    text = CMAKE + "if(SGL_KERNEL_ENABLE_SM100A)\n"
    assert plan_patch(text, SM100).status is Status.AMBIGUOUS


def test_apply_twice_changes_nothing_second_time(tmp_path: Path) -> None:
    f = tmp_path / "CMakeLists.txt"
    f.write_bytes(CMAKE.replace("\n", "\r\n").encode())
    first = apply_patches(tmp_path, [SM100])
    assert [o.status for o in first] == [Status.APPLIED]
    patched = f.read_bytes()
    assert b"\r\n" in patched  # line endings kept
    mtime = f.stat().st_mtime_ns
    second = apply_patches(tmp_path, [SM100])
    assert [o.status for o in second] == [Status.ALREADY_APPLIED]
    assert f.read_bytes() == patched and f.stat().st_mtime_ns == mtime


def test_dry_run_writes_nothing_and_reports(tmp_path: Path) -> None:
    f = tmp_path / "CMakeLists.txt"
    f.write_text(CMAKE)
    out = apply_patches(tmp_path, [SM100], dry_run=True)
    assert out[0].status is Status.APPLIED
    assert f.read_text() == CMAKE


def test_missing_anchor_raises_with_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text("project(x)\nif(SGL_KERNEL_ENABLE_SM90A)\n")
    with pytest.raises(BuildError) as err:
        apply_patches(tmp_path, [SM100])
    text = err.value.render()
    assert "CMakeLists.txt" in text and "VERSION_GREATER_EQUAL" in text
    assert "SGL_KERNEL_ENABLE_SM90A" in text  # the nearest line found
    assert (tmp_path / "CMakeLists.txt").read_text().startswith("project(x)")


def test_missing_file_is_reported(tmp_path: Path) -> None:
    out = apply_patches(tmp_path, [SM100], dry_run=True)
    assert out[0].status is Status.ANCHOR_MISSING
    assert "file does not exist" in out[0].describe()

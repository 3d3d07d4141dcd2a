"""Wheel validation: each hostile wheel is refused with its reason; sound wheels pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from wh.errors import WheelhouseError
from wh.install.validate import Limits, ambiguous, check_wheels, problems
from wh.model.wheel import to_wheel
from wh.wheel.wheelfile import read_meta

from tests.factory import make_wheel
from tests.hostile import CASES


def test_a_factory_wheel_is_sound(tmp_path: Path) -> None:
    w = make_wheel(tmp_path, "good", "1.0", files={"good/__init__.py": b"", "good/a.py": b"x"})
    assert problems(w) == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_wheel_is_refused(tmp_path: Path, case: str) -> None:
    wheel = CASES[case].make(tmp_path)
    found = problems(wheel)
    assert any(CASES[case].expect in p for p in found), found


@pytest.mark.parametrize("case", sorted(CASES))
def test_scan_acceptance_is_as_documented(tmp_path: Path, case: str) -> None:
    """Cases the scan lets through are the ones only validation stops."""
    from wh.model.wheel import WheelProblem

    wheel = CASES[case].make(tmp_path)
    try:
        read_meta(wheel)
        accepted = True
    except WheelProblem:
        accepted = False
    assert accepted == CASES[case].scan_accepts


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    a = CASES["dotdot"].make(tmp_path / "a")
    b = CASES["record_hash_mismatch"].make(tmp_path / "b")
    good = make_wheel(tmp_path / "c", "good", "1.0")
    with pytest.raises(WheelhouseError) as err:
        check_wheels([a, good, b])
    assert err.value.exit_code == 3
    text = "\n".join(err.value.details)
    assert "escapes the install root" in text
    assert "RECORD hash mismatch" in text
    assert "good" not in text


def test_limits_are_parameters(tmp_path: Path) -> None:
    w = make_wheel(tmp_path, "big", "1.0", files={"big/zeros": bytes(200_000)})
    assert problems(w) == []
    tight = Limits(max_total_bytes=100_000)
    assert any("more than the limit" in p for p in problems(w, tight))
    ratio = Limits(max_ratio=10, ratio_min_bytes=1000)
    assert any("zip bomb" in p for p in problems(w, ratio))


def test_same_identity_in_two_files_is_ambiguous(tmp_path: Path) -> None:
    a = make_wheel(tmp_path, "dup", "1.0")
    b = make_wheel(tmp_path / "x", "dup", "1.0.0", files={"dup/__init__.py": b"other\n"})
    b = b.rename(tmp_path / b.name)
    rebuilt = make_wheel(tmp_path / "y", "dup", "1.0", build="1", files={"dup/x.py": b""})

    def wheel(p: Path) -> object:
        from wh.hashing import sha256_file

        return to_wheel(p, read_meta(p), p.stat().st_size, sha256_file(p))

    wheels = [wheel(a), wheel(b), wheel(rebuilt)]
    found = ambiguous(wheels)  # type: ignore[arg-type]
    assert len(found) == 1
    assert "dup 1.0" in found[0] and a.name in found[0] and b.name in found[0]
    assert ambiguous(wheels, {"other"}) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_read_of_the_directory_finds_what_zipfile_finds(tmp_path: Path, case: str) -> None:
    """The structure check from the central-directory index (before an install) finds what
    the full check through zipfile finds, less only what needs the members' bytes."""
    wheel = CASES[case].make(tmp_path)
    # the size the archive declares is the size it has once inflated (the zip is sound)
    structural = [
        p.replace("the archive declares", "it has") for p in problems(wheel, contents=False)
    ]
    full = problems(wheel, contents=True)
    assert set(structural) <= set(full)
    needs_bytes = ("RECORD hash mismatch", "it has")
    assert all(any(s in p for s in needs_bytes) for p in set(full) - set(structural)), full


def test_the_index_and_its_reader_match_zipfile(tmp_path: Path) -> None:
    import zipfile

    from wh.install.validate import checked_index

    wheel = make_wheel(tmp_path, "good", "1.0", files={"good/__init__.py": b"", "good/a.py": b"x"})
    index, found = checked_index(wheel)
    assert found == [] and index is not None
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        assert index.names == [i.filename for i in infos]
        assert index.sizes == [i.file_size for i in infos]
        assert index.packed == [i.compress_size for i in infos]
        assert index.modes == [i.external_attr >> 16 for i in infos]
        assert all(index.read(n) == zf.read(n) for n in index.names)
    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(wheel.read_bytes()[:-30])
    index, found = checked_index(broken)
    assert index is None and any("not a valid zip" in p for p in found)


def test_a_member_whose_deflate_data_is_damaged_is_named(tmp_path: Path) -> None:
    """Inflating the module to hash it fails (zlib's error, which used to escape
    ``problems``); the check names the member and the cause, with the other problems."""
    from tests.hostile import member_damaged

    found = problems(member_damaged(tmp_path))
    assert found == [
        "'evil/__init__.py' cannot be read: damaged deflate data "
        "(Error -3 while decompressing data: invalid block type)"
    ]
    assert problems(member_damaged(tmp_path), contents=False) == []  # the bytes are not read

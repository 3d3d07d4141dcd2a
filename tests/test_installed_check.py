"""Member hashes: checked on the installed files, inside the transaction, and remembered by
the wheel's sha256 so identical bytes are checked once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from wh.env.environment import probe
from wh.errors import WheelhouseError
from wh.install import checker
from wh.install.layout import Schemes, layout
from wh.install.validate import installed_problems, problems

from tests.factory import make_wheel
from tests.hostile import CASES


def test_same_size_hash_mismatch_needs_the_contents_check(tmp_path: Path) -> None:
    wheel = CASES["record_hash_mismatch"].make(tmp_path)
    assert problems(wheel, contents=False) == []
    assert any("RECORD hash mismatch" in p for p in problems(wheel))
    # a RECORD size that disagrees with the archive is caught without decompressing
    sized = CASES["record_size_mismatch"].make(tmp_path / "sized")
    assert any("RECORD size mismatch" in p for p in problems(sized, contents=False))


def _installed(new_venv: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    wheel = make_wheel(
        tmp_path / "w",
        "tool",
        "1.0",
        files={
            "tool/__init__.py": b"VALUE = 1\n",
            "tool-1.0.data/scripts/tool-run": b"#!python\nprint('hi')\n",
        },
    )
    return new_venv([wheel]), wheel


def test_installed_files_are_checked_against_record(
    new_venv: Callable[..., Path], tmp_path: Path
) -> None:
    python, wheel = _installed(new_venv, tmp_path)
    schemes = Schemes.of(probe(python))
    lay = layout(wheel, schemes)
    installed_problems([lay], schemes.scripts)  # sound, and the rewritten script is left out
    module = schemes.purelib / "tool" / "__init__.py"
    module.write_bytes(b"VALUE = 2\n")
    with pytest.raises(WheelhouseError, match="failed validation") as err:
        installed_problems([lay], schemes.scripts)
    assert list(err.value.details) == [
        "tool-1.0-py3-none-any.whl: RECORD hash mismatch for 'tool/__init__.py'"
    ]
    module.unlink()
    with pytest.raises(WheelhouseError) as gone:
        installed_problems([lay], schemes.scripts)
    assert "'tool/__init__.py' is missing after the install" in gone.value.details[0]


def test_a_passed_digest_is_not_checked_again(
    new_venv: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, wheel = _installed(new_venv, tmp_path)
    env = probe(python)
    lay = layout(wheel, Schemes.of(env))
    digests = {wheel: hashlib.sha256(wheel.read_bytes()).hexdigest()}
    checker.verify_installed(env, [lay], digests)  # checked, and remembered
    (env.purelib / "tool" / "__init__.py").write_bytes(b"VALUE = 2\n")
    checker.verify_installed(env, [lay], digests)  # same bytes of wheel: not checked again
    with pytest.raises(WheelhouseError):
        checker.verify_installed(env, [lay])  # no digest, nothing to remember by
    monkeypatch.setenv("WH_VERIFY_REHASH", "1")
    with pytest.raises(WheelhouseError):
        checker.verify_installed(env, [lay], digests)


def test_checker_reports_an_earlier_batch_at_wait_and_drops_it_on_another_error(
    new_venv: Callable[..., Path], tmp_path: Path
) -> None:
    python, wheel = _installed(new_venv, tmp_path)
    env = probe(python)
    schemes = Schemes.of(env)
    lay = layout(wheel, schemes)
    (schemes.purelib / "tool" / "__init__.py").write_bytes(b"VALUE = 2\n")
    with checker.Checker(env) as check:
        check.submit([lay])  # checked on its thread while the caller goes on
        with pytest.raises(WheelhouseError, match="failed validation"):
            check.wait()
    # another error leaves the block: the thread is waited for, its finding dropped
    with pytest.raises(RuntimeError, match="backend failed"), checker.Checker(env) as check:
        check.submit([lay])
        raise RuntimeError("backend failed")
    assert check.pending and all(f.done() for f in check.pending)


def test_a_layout_keys_every_file_as_its_whole_path_would_be_keyed(tmp_path: Path) -> None:
    """``layout`` builds each file's comparison key from its base folder's key and its
    wheel path (no second normalisation of 60,000 paths): the overwrite check and the
    staging rounds must see exactly ``key`` of the full path, whatever scheme it lands in."""
    from wh.install.layout import key

    wheel = make_wheel(
        tmp_path / "w",
        "Deep_Pkg",
        "2.0",
        files={
            "deep_pkg/__init__.py": b"",
            "deep_pkg/sub/.hidden/data.bin": b"x" * 10,
            "top_module.py": b"A = 1\n",
            "Deep_Pkg-2.0.data/scripts/deep-run": b"#!python\n",
            "Deep_Pkg-2.0.data/headers/deep.h": b"int x;\n",
            "Deep_Pkg-2.0.data/data/share/deep/readme.txt": b"r\n",
            "Deep_Pkg-2.0.data/platlib/deep_native.py": b"",
        },
    )
    prefix = tmp_path / "env"
    # base folders as a caller may spell them: one with a redundant ".." in it
    site = prefix / "lib" / "x" / ".." / "site-packages"
    schemes = Schemes(site, site, prefix / "bin", prefix, "3.11")
    lay = layout(wheel, schemes)
    assert len(lay.files) >= 7
    for t in lay.files:
        assert t.cmp_key == key(t.text), t.rel
        assert ".." not in t.cmp_key
    # a Target made without a key gets the same one
    from wh.install.layout import Target

    assert Target(site, "deep_pkg/__init__.py", "").cmp_key == key(site / "deep_pkg/__init__.py")

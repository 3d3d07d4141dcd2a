"""Wheelhouse scan: metadata from the zip, every problem reported, stat-only rescans."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from wh.errors import WheelhouseError
from wh.wheel.writer import write_wheel
from wh.wheelhouse import scan as scan_module
from wh.wheelhouse.scan import scan

from tests.factory import make_wheel
from tests.fixtures import run_wh


def test_reads_identity_tags_and_metadata(tmp_path: Path) -> None:
    make_wheel(
        tmp_path,
        "torch",
        "2.9.1+cu130",
        ["filelock", "nvidia-cublas; sys_platform == 'linux'"],
        tag="cp312-cp312-win_amd64",
        requires_python=">=3.10",
        extras={"opt": ["numpy>=2"]},
    )
    wh = scan(tmp_path)
    assert wh.problems == ()
    (w,) = wh.wheels
    assert (w.name, str(w.version)) == ("torch", "2.9.1+cu130")
    assert {str(t) for t in w.tags} == {"cp312-cp312-win_amd64"}
    assert [str(r) for r in w.requires_dist][:2] == [
        "filelock",
        'nvidia-cublas; sys_platform == "linux"',
    ]
    assert str(w.requires_python) == ">=3.10"
    assert w.provides_extra == ("opt",)
    assert w.size == (tmp_path / w.filename).stat().st_size
    assert len(w.sha256) == 64


def test_reports_every_problem_at_once(tmp_path: Path) -> None:
    make_wheel(tmp_path, "good", "1.0")
    (tmp_path / "notzip-1.0-py3-none-any.whl").write_bytes(b"garbage")
    (tmp_path / "bad_name.whl").write_bytes(b"x")
    # filename says 'liar', METADATA says 'other'
    other = write_wheel(tmp_path / "x", "other", "1.0", {"o.py": b""})
    other.rename(tmp_path / "liar-1.0-py3-none-any.whl")
    # version mismatch
    v = write_wheel(tmp_path / "y", "pkg", "2.0", {"p.py": b""})
    v.rename(tmp_path / "pkg-1.0-py3-none-any.whl")
    # no METADATA
    with zipfile.ZipFile(tmp_path / "nometa-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("nometa-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    wh = scan(tmp_path)
    assert [w.filename for w in wh.wheels] == ["good-1.0-py3-none-any.whl"]
    reasons = {p.path.name: p.reason for p in wh.problems}
    assert "not a valid zip" in reasons["notzip-1.0-py3-none-any.whl"]
    assert "invalid wheel filename" in reasons["bad_name.whl"]
    assert "METADATA says 'other'" in reasons["liar-1.0-py3-none-any.whl"]
    assert "METADATA says 2.0" in reasons["pkg-1.0-py3-none-any.whl"]
    assert "METADATA is missing" in reasons["nometa-1.0-py3-none-any.whl"]


def test_unchanged_wheelhouse_rescans_by_stat_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_wheel(tmp_path, "pkg", "1.0")
    first = scan(tmp_path)

    def must_not_read(path: Path) -> None:
        raise AssertionError(f"{path} was opened on a warm rescan")

    monkeypatch.setattr(scan_module, "_read_one", must_not_read)
    monkeypatch.setattr(scan_module, "sha256_file", must_not_read)
    again = scan(tmp_path)
    assert again.wheels[0].sha256 == first.wheels[0].sha256


def test_a_damaged_scan_cache_is_read_again_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan cache is sealed (``stamps.seal``): an entry changed on disk (here a
    requirement dropped, the JSON still valid) was taken as the wheel's metadata; now the
    file is not read and the wheel's METADATA is read again."""
    import json

    from wh.cache.stamps import unseal

    monkeypatch.setenv("WH_CACHE_DIR", str(tmp_path / "cache"))
    make_wheel(tmp_path / "h", "app", "1.0", ["base>=2"])
    first = scan(tmp_path / "h")
    assert tuple(map(str, first.wheels[0].requires_dist)) == ("base>=2",)
    (cfile,) = (tmp_path / "cache" / "scan").glob("*.json")
    text = unseal(cfile.read_text())
    assert text is not None
    data = json.loads(text)
    (entry,) = data["entries"].values()
    entry["meta"]["requires_dist"] = []
    cfile.write_text(json.dumps(data))  # the same content a sealed file could hold, unsealed
    assert tuple(map(str, scan(tmp_path / "h").wheels[0].requires_dist)) == ("base>=2",)
    cfile.write_text("not json")
    assert tuple(map(str, scan(tmp_path / "h").wheels[0].requires_dist)) == ("base>=2",)


def test_in_place_rewrite_is_noticed_even_with_size_mtime_and_inode_kept(
    tmp_path: Path,
) -> None:
    path = make_wheel(tmp_path, "pkg", "1.0")
    first = scan(tmp_path)
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    with path.open("r+b") as f:  # same inode, same size
        f.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert path.stat().st_ino == st.st_ino
    assert scan(tmp_path).wheels[0].sha256 != first.wheels[0].sha256


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WheelhouseError, match="does not exist"):
        scan(tmp_path / "nope")


def test_cli_scan_lists_wheels_and_exclusions(tmp_path: Path) -> None:
    make_wheel(tmp_path, "pkg", "1.0+cu130")
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"x")
    r = run_wh("scan", "--wheelhouse", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1.0+cu130" in r.stdout
    assert "excluded broken-1.0-py3-none-any.whl: not a valid zip" in r.stdout
    strict = run_wh("scan", "--wheelhouse", tmp_path, "--strict")
    assert strict.returncode == 3
    # --json: one document, the error with the scan's report in it
    strict = run_wh("scan", "--wheelhouse", tmp_path, "--strict", "--json")
    assert strict.returncode == 3
    err = json.loads(strict.stdout)
    assert err["error"] == "wheelhouse" and len(err["fields"]["problems"]) == 1
    assert [w["version"] for w in err["report"]["wheels"]] == ["1.0+cu130"]


def test_metadata_only_scan_then_hash_just_what_is_needed(tmp_path: Path) -> None:
    """`wh lock` reads every wheel's metadata but hashes only the wheels it locks."""
    from wh.hashing import sha256_file
    from wh.wheelhouse.scan import add_hashes

    a = make_wheel(tmp_path, "a", "1.0")
    make_wheel(tmp_path, "b", "1.0")
    light = scan(tmp_path, hashes=False)
    assert [w.sha256 for w in light.wheels] == ["", ""]
    (wa,) = add_hashes([w for w in light.wheels if w.name == "a"])
    assert wa.sha256 == sha256_file(a)
    # the digest went into the cache: a later metadata-only scan knows it, b stays unhashed
    again = {w.name: w.sha256 for w in scan(tmp_path, hashes=False).wheels}
    assert again == {"a": wa.sha256, "b": ""}
    # a full scan hashes what is missing
    full = {w.name: w.sha256 for w in scan(tmp_path).wheels}
    assert full["a"] == wa.sha256 and len(full["b"]) == 64


def test_each_digest_is_told_as_soon_as_it_is_known_prehashed_or_not(tmp_path: Path) -> None:
    """``add_hashes(on_hashed=...)`` is told every wheel's digest, whether a ``Prehash``
    thread or ``add_hashes`` itself hashed it, on the caller's thread and before it
    returns (``wh lock`` caches a wheel's natives then, while the rest are hashed)."""
    import threading

    from wh.hashing import sha256_file
    from wh.wheelhouse.scan import Prehash, add_hashes

    for name in ("a", "b", "c"):
        make_wheel(tmp_path, name, "1.0")
    light = scan(tmp_path, hashes=False).wheels
    told: list[tuple[Path, str, threading.Thread]] = []
    with Prehash(light) as prehash:
        prehash.start("b")  # hashed by the prehash pool; a and c by add_hashes
        hashed = add_hashes(
            light,
            started=prehash.started,
            on_hashed=lambda p, d: told.append((p, d, threading.current_thread())),
        )
    assert sorted((p, d) for p, d, _ in told) == sorted((w.path, w.sha256) for w in hashed)
    assert all(d == sha256_file(p) for p, d, _ in told)
    assert {t for _, _, t in told} == {threading.current_thread()}
    # nothing to hash: nothing told
    told.clear()
    assert (
        add_hashes(hashed, on_hashed=lambda p, d: told.append((p, d, threading.current_thread())))
        == hashed
    )
    assert not told


def test_lock_bytes_do_not_depend_on_what_was_hashed_before(tmp_path: Path) -> None:
    house = tmp_path / "house"
    make_wheel(house, "app", "1.0", ["lib"])
    make_wheel(house, "lib", "2.0")
    make_wheel(house, "unrelated", "9.9")
    args = ["lock", "-r", "app", "--wheelhouse", house, "--platform", "win_amd64",
            "--python-version", "3.12", "--lockfile"]  # fmt: skip
    assert run_wh(*args, tmp_path / "cold.toml").returncode == 0
    assert run_wh("scan", "--wheelhouse", house).returncode == 0  # hashes everything
    assert run_wh(*args, tmp_path / "warm.toml").returncode == 0
    cold = (tmp_path / "cold.toml").read_text()
    assert cold == (tmp_path / "warm.toml").read_text().replace("warm.toml", "cold.toml")
    assert "unrelated" not in cold

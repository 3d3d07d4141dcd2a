"""The remembered interpreter probe: answers without a subprocess while nothing it read
changed, and probes again after any install, removal or edit of a distribution."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from wh.env import environment
from wh.env.environment import probe
from wh.install.backend import UvBackend, uv_binary

from tests.factory import make_wheel


def _no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(python: Path) -> dict[str, object]:
        raise AssertionError(f"{python} was probed again")

    monkeypatch.setattr(environment, "_run_probe", refuse)


def _install(python: Path, wheel: Path) -> None:
    uv = uv_binary()
    assert uv is not None
    UvBackend(uv).install(python, [wheel], link_mode="copy", reinstall=False)


def test_unchanged_environment_is_not_probed_again(
    new_venv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    python = new_venv([make_wheel(tmp_path / "w", "pkg", "1.0")])
    first = probe(python, cached=True)
    _no_subprocess(monkeypatch)
    again = probe(python, cached=True)
    assert again == first
    assert again.dists["pkg"].version == first.dists["pkg"].version


def test_uncached_probe_always_runs(
    new_venv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    python = new_venv()
    probe(python, cached=True)
    _no_subprocess(monkeypatch)
    with pytest.raises(AssertionError, match="probed again"):
        probe(python)


def test_install_and_removal_are_seen(new_venv: Callable[..., Path], tmp_path: Path) -> None:
    python = new_venv()
    assert "pkg" not in probe(python, cached=True).dists
    _install(python, make_wheel(tmp_path / "w", "pkg", "1.0"))
    env = probe(python, cached=True)
    assert str(env.dists["pkg"].version) == "1.0"
    dist_info = env.dists["pkg"].dist_info
    assert dist_info is not None
    shutil.rmtree(dist_info)
    assert "pkg" not in probe(python, cached=True).dists


def test_metadata_edited_in_place_is_seen(new_venv: Callable[..., Path], tmp_path: Path) -> None:
    python = new_venv([make_wheel(tmp_path / "w", "pkg", "1.0")])
    env = probe(python, cached=True)
    dist_info = env.dists["pkg"].dist_info
    assert dist_info is not None
    meta = dist_info / "METADATA"
    text = meta.read_text()
    with meta.open("r+") as f:  # same file, same length: only the change time moves
        f.write(text.replace("Version: 1.0", "Version: 1.1"))
    assert str(probe(python, cached=True).dists["pkg"].version) == "1.1"


def test_metadata_that_is_not_utf8_is_read_not_fatal(new_venv: Callable[..., Path]) -> None:
    """An old egg-info whose PKG-INFO is Latin-1 (an author's name), and a dist-info whose
    RECORD holds a byte UTF-8 does not: the probe used to fail on the first with
    UnicodeDecodeError, and wh then called the interpreter broken. Found by putting broken
    distributions into a real venv."""
    python = new_venv()
    site = probe(python).purelib
    (site / "oldpkg-0.9-py3.11.egg-info").write_bytes(
        b"Metadata-Version: 1.0\nName: oldpkg\nVersion: 0.9\nAuthor: Jos\xe9\n"
    )
    info = site / "odd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: odd\nVersion: 1.0\n")
    (info / "RECORD").write_bytes(b"odd/\xff.py,,\n")
    legacy = site / "legacy-1.0-py3.11.egg-info"
    legacy.mkdir()
    (legacy / "PKG-INFO").write_bytes(b"Metadata-Version: 1.0\nName: legacy\nVersion: 1.0\n\xe9\n")
    (legacy / "requires.txt").write_text("dep>=1\n\n[fast]\nspeedup\n")
    env = probe(python)
    assert str(env.dists["oldpkg"].version) == "0.9"
    assert str(env.dists["odd"].version) == "1.0"
    assert [str(r) for r in env.dists["legacy"].requires] == [
        "dep>=1",
        'speedup; extra == "fast"',
    ]


def test_pth_file_is_seen(new_venv: Callable[..., Path], tmp_path: Path) -> None:
    python = new_venv()
    env = probe(python, cached=True)
    extra = tmp_path / "extra"
    make_wheel(tmp_path / "w", "side", "2.0")
    _install(new_venv(), tmp_path / "w" / "side-2.0-py3-none-any.whl")
    donor = next((tmp_path / "venv1").rglob("side-2.0.dist-info"))
    shutil.copytree(donor, extra / donor.name)
    (env.purelib / "extra.pth").write_text(f"{extra}\n")
    assert str(probe(python, cached=True).dists["side"].version) == "2.0"


def test_a_venv_prefix_is_found_without_running_its_interpreter(
    new_venv: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where Python finds pyvenv.cfg (beside the executable or one folder up), for POSIX
    and Windows layouts, the same folder the interpreter reports; None outside a venv."""
    python = new_venv()
    reported = probe(python).prefix
    _no_subprocess(monkeypatch)
    found = environment.venv_prefix(python)
    assert found is not None and found.samefile(reported)
    assert environment.venv_prefix(found) == found  # the venv folder itself
    win = tmp_path / "win"
    (win / "Scripts").mkdir(parents=True)
    (win / "Scripts" / "python.exe").write_bytes(b"")
    (win / "pyvenv.cfg").write_text("home = C:\\Python311\n")
    assert environment.venv_prefix(win / "Scripts" / "python.exe") == win
    assert environment.venv_prefix(win) == win
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert environment.venv_prefix(beside / "python") == beside
    plain = tmp_path / "usr" / "bin"
    plain.mkdir(parents=True)
    (plain / "python3").write_bytes(b"")
    assert environment.venv_prefix(plain / "python3") is None


def test_requirements_come_from_metadata_headers_or_an_egg_infos_requires_txt(
    new_venv: Callable[..., Path],
) -> None:
    """A dist-info's requirements are its Requires-Dist headers (none: no requirements,
    without reading METADATA a second time); an egg-info without them has requires.txt."""
    python = new_venv()
    site = Path(probe(python).purelib)
    with_reqs = site / "needy-1.0.dist-info"
    with_reqs.mkdir()
    (with_reqs / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: needy\nVersion: 1.0\nRequires-Dist: six>=1\n"
        "Requires-Dist: idna; extra == 'web'\n\nRequires-Dist: not-a-header\n"
    )
    bare = site / "bare-1.0.dist-info"
    bare.mkdir()
    (bare / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bare\nVersion: 1.0\n\nRequires-Dist: in-the-body\n"
    )
    egg = site / "old-1.0-py3.11.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: old\nVersion: 1.0\n")
    (egg / "requires.txt").write_text("attrs>=20\n\n[web]\nidna\n")
    dists = probe(python).dists
    assert [str(r) for r in dists["needy"].requires] == ["six>=1", 'idna; extra == "web"']
    assert dists["bare"].requires == ()
    assert [str(r) for r in dists["old"].requires] == ["attrs>=20", 'idna; extra == "web"']


def test_a_pth_file_that_prints_does_not_break_the_probe(
    new_venv: Callable[..., Path], tmp_path: Path
) -> None:
    """A ``.pth`` line starting with ``import`` runs at every start-up and may print (legal):
    the probe's answer comes back in a file of its own, so install and verify still work
    and the output goes nowhere near the answer (issue 22, item 9)."""
    from tests.envsnap import diff, snapshot, wh

    python = new_venv()
    site = Path(probe(python).purelib)
    (site / "noisy.pth").write_text(
        'import sys; print("{\\"hello\\": 1} from a pth"); sys.stdout.flush()\n'
    )
    env = probe(python)
    assert env.prefix == python.parent.parent
    house = tmp_path / "house"
    make_wheel(house, "pkg", "1.0")
    lock = ("--lockfile", tmp_path / "pkg.toml", "--python", python)
    assert wh("lock", "-r", "pkg", *lock, "--wheelhouse", house, cwd=tmp_path).returncode == 0
    # uv's own interpreter query reads the start-up's stdout and fails on it (uv 0.13):
    # asked for by name, uv is refused before anything changes (exit 10, "target unusable")
    before = snapshot(python.parent.parent)
    refused = wh("install", "--locked", *lock, "--backend", "uv", cwd=tmp_path)
    assert refused.returncode == 10, refused.stderr
    assert "prints to stdout as it starts, which uv cannot work with" in refused.stderr
    assert 'start-up output: {"hello": 1} from a pth' in refused.stderr
    assert "use --backend pip" in refused.stderr
    assert diff(before, snapshot(python.parent.parent)) == []
    # by default wh takes pip, which runs inside the target and is not confused, and says so
    done = wh("install", "--locked", *lock, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "which uv cannot work with: installing with pip" in done.stderr
    again = wh("verify", *lock, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in done.stderr + again.stderr
    assert str(probe(python).dists["pkg"].version) == "1.0"
    assert (site / "noisy.pth").exists()

"""A fleet installing from one served wheelhouse, for a profile with an override: the
README's commands, run for real against nginx, with pip, with uv and with wh."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wh.install.backend import uv_binary
from wh.model.manifest import Manifest

from tests.factory import make_wheel
from tests.fixtures import make_venv, run_wh
from tests.indexserver import serve

PROFILE = """\
[profile.fleet]
requirements = ["app"]
# app 1.0 pins lib==1.0; the override installs lib 2.0 (pip's and uv's own resolvers would
# refuse it: only the lock's exact list keeps it)
overrides = [{ requirement = "lib==2.0", reason = "1.0 is broken on this fleet" }]
"""


def _versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    import json

    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {k.lower(): v for k, v in json.loads(out.stdout).items()}


def _clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_CACHE_DIR=str(tmp / "uv-cache"))
    return env


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    house = tmp_path / "wheelhouse"
    house.mkdir()
    make_wheel(house, "app", "1.0", ["lib==1.0"])
    make_wheel(house, "lib", "1.0")
    make_wheel(house, "lib", "2.0")
    (tmp_path / "wh.toml").write_text(PROFILE)
    r = run_wh("index", "--wheelhouse", house, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with serve(house, tmp_path) as url:
        yield url, tmp_path


def test_fleet_pip_installs_the_export(fleet: tuple[str, Path]) -> None:
    url, tmp = fleet
    python = Path(sys.executable)
    r = run_wh("lock", "fleet", "--python", python, cwd=tmp)
    assert r.returncode == 0, r.stderr
    r = run_wh("export", "fleet", "-o", "requirements.txt", cwd=tmp)
    assert r.returncode == 0, r.stderr
    text = (tmp / "requirements.txt").read_text()
    assert "lib==2.0 --hash=sha256:" in text and "app==1.0 --hash=sha256:" in text
    target = make_venv(tmp / "pip-venv")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(target),
            "install",
            "--no-deps",
            "--require-hashes",
            "-r",
            "requirements.txt",
            "--index-url",
            url,
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        check=False,
        env=_clean_env(tmp),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    got = _versions(target)
    assert got["app"] == "1.0" and got["lib"] == "2.0"


def test_fleet_uv_and_wh_install_the_url_lock(fleet: tuple[str, Path]) -> None:
    url, tmp = fleet
    python = Path(sys.executable)
    r = run_wh("lock", "fleet", "--python", python, "--index-url", url, cwd=tmp)
    assert r.returncode == 0, r.stderr
    lock = tmp / "lockfiles" / "pylock.fleet.toml"
    text = lock.read_text()
    assert f'url = "{url.removesuffix("simple/")}lib-2.0-py3-none-any.whl"' in text
    assert "path =" not in text
    target = make_venv(tmp / "uv-venv")
    uv = uv_binary()
    assert uv is not None
    done = subprocess.run(
        [str(uv), "pip", "install", "--python", str(target), "-r", str(lock)],
        cwd=tmp,
        capture_output=True,
        text=True,
        check=False,
        env=_clean_env(tmp),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _versions(target)["lib"] == "2.0"
    # another machine of the fleet: wh downloads the locked wheels, checks them, installs
    other = make_venv(tmp / "wh-venv")
    r = run_wh("install", "fleet", "--locked", "--python", other, cwd=tmp)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "downloading 2 locked wheel(s)" in r.stderr
    got = _versions(other)
    assert got["app"] == "1.0" and got["lib"] == "2.0"


def test_download_resumes_a_partial_file_and_refuses_a_wrong_sha256(tmp_path: Path) -> None:
    """Against nginx: a `.part` left by an interrupted download is resumed with a Range
    request (only the rest travels); a file whose sha256 differs never enters the folder."""
    import hashlib

    from wh.airgap.indexclient import Http
    from wh.errors import WheelhouseError

    root = tmp_path / "root"
    root.mkdir()
    wheel = make_wheel(root, "big", "1.0", files={"big/data.bin": os.urandom(1 << 20)})
    data = wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    dest = tmp_path / "house" / wheel.name
    dest.parent.mkdir()
    half = len(data) // 2
    (dest.parent / (wheel.name + ".part")).write_bytes(data[:half])
    with serve(root, tmp_path) as url:
        file_url = url.removesuffix("simple/") + wheel.name
        moved = Http(cache=tmp_path / "http").download(file_url, dest, digest)
        assert moved == len(data) - half and dest.read_bytes() == data
        assert not (dest.parent / (wheel.name + ".part")).exists()
        other = dest.with_name("other.whl")
        with pytest.raises(WheelhouseError, match="the index says"):
            Http(cache=tmp_path / "http").download(file_url, other, "0" * 64, attempts=2)
        assert not other.exists() and not other.with_name("other.whl.part").exists()


def test_a_fetch_with_nothing_new_reuses_its_resolution_until_refresh(tmp_path: Path) -> None:
    """Against nginx (no cache headers: pages are reused for PyPI's 600 s): the second fetch
    asks the index nothing; --refresh reads the pages again and sees a new release; a wheel
    of a consulted name that appears in the wheelhouse voids the remembered resolution."""
    from wh.airgap.indexclient import Http
    from wh.app.fetch import fetch
    from wh.model.profile import Profile
    from wh.model.target import declared

    win = declared("win_amd64", "3.12")
    root, house = tmp_path / "root", tmp_path / "house"
    root.mkdir()
    make_wheel(root, "app", "1.0", ["lib"])
    make_wheel(root, "lib", "1.0")
    profile = Profile("p").with_flags(requirements=["app"])
    r = run_wh("index", "--wheelhouse", root)
    assert r.returncode == 0, r.stderr
    with serve(root, tmp_path) as url:
        first = fetch(Manifest.of(profile), house, [(win, None)], index_url=url, http=Http())
        assert sorted(first.downloaded) == ["app-1.0-py3-none-any.whl", "lib-1.0-py3-none-any.whl"]
        http = Http()
        again = fetch(Manifest.of(profile), house, [(win, None)], index_url=url, http=http)
        assert again.replayed == [win.description] and http.requests == 0
        assert again.downloaded == [] and len(again.present) == 2
        make_wheel(root, "lib", "2.0")
        assert run_wh("index", "--wheelhouse", root).returncode == 0
        stale = fetch(
            Manifest.of(profile), house, [(win, None)], index_url=url, dry_run=True, http=Http()
        )
        assert {e.version for e in stale.closure if e.name == "lib"} == {"1.0"}
        fresh = fetch(
            Manifest.of(profile),
            house,
            [(win, None)],
            index_url=url,
            dry_run=True,
            http=Http(refresh=True),
        )
        assert fresh.replayed == [] and {e.version for e in fresh.closure if e.name == "lib"} == {
            "2.0"
        }
        remembered = fetch(
            Manifest.of(profile), house, [(win, None)], index_url=url, dry_run=True, http=Http()
        )
        assert remembered.replayed == [win.description]  # what the refreshed run resolved
        make_wheel(house, "lib", "3.0")  # a wheel the remembered resolution never saw
        local = fetch(
            Manifest.of(profile), house, [(win, None)], index_url=url, dry_run=True, http=Http()
        )
        assert local.replayed == [] and {e.version for e in local.closure if e.name == "lib"} == {
            "3.0"
        }

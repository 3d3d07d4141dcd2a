"""wh index: deterministic static index pages, and real pip and uv installing through nginx."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from wh.airgap.simpleindex import build_index, core_metadata
from wh.install.backend import uv_binary

from tests.factory import make_wheel
from tests.indexserver import serve


def _house(tmp: Path) -> Path:
    house = tmp / "wheelhouse"
    house.mkdir()
    make_wheel(house, "demo-app", "1.0", ["demo-lib>=1"], requires_python=">=3.8")
    make_wheel(house, "Demo_Lib", "1.0+cu130")
    return house


def test_index_pages_hashes_and_metadata(tmp_path: Path) -> None:
    house = _house(tmp_path)
    result = build_index(house)
    assert sorted(result.projects) == ["demo-app", "demo-lib"]
    root = (house / "simple" / "index.html").read_text()
    assert '<a href="demo-app/">demo-app</a>' in root
    page = (house / "simple" / "demo-app" / "index.html").read_text()
    wheel = house / "demo_app-1.0-py3-none-any.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    meta = (house / (wheel.name + ".metadata")).read_bytes()
    assert meta == core_metadata(wheel) and b"Requires-Dist: demo-lib>=1" in meta
    mdigest = hashlib.sha256(meta).hexdigest()
    assert f'href="../../{wheel.name}#sha256={digest}"' in page
    assert 'data-requires-python="&gt;=3.8"' in page
    assert f'data-core-metadata="sha256={mdigest}"' in page
    assert f'data-dist-info-metadata="sha256={mdigest}"' in page
    doc = json.loads((house / "simple" / "demo-lib" / "index.json").read_text())
    assert doc["meta"]["api-version"] == "1.1"
    assert doc["versions"] == ["1.0+cu130"]
    (f,) = doc["files"]
    assert f["url"] == "../../demo_lib-1.0%2Bcu130-py3-none-any.whl"
    assert (
        f["core-metadata"]["sha256"]
        == hashlib.sha256(
            (house / "demo_lib-1.0+cu130-py3-none-any.whl.metadata").read_bytes()
        ).hexdigest()
    )


def test_index_regenerates_in_place(tmp_path: Path) -> None:
    house = _house(tmp_path)
    build_index(house)
    snapshot = {p: p.read_bytes() for p in sorted(house.rglob("*")) if p.is_file()}
    again = build_index(house)
    assert again.written == [] and again.removed == []
    assert {p: p.read_bytes() for p in sorted(house.rglob("*")) if p.is_file()} == snapshot
    make_wheel(house, "demo-lib", "2.0")
    (house / "demo_app-1.0-py3-none-any.whl").unlink()
    result = build_index(house)
    assert not (house / "simple" / "demo-app").exists()
    assert not (house / "demo_app-1.0-py3-none-any.whl.metadata").exists()
    assert "demo-app" not in (house / "simple" / "index.html").read_text()
    assert "demo_lib-2.0-py3-none-any.whl" in (house / "simple/demo-lib/index.html").read_text()
    assert house / "simple" / "demo-app" in result.removed


# -- a real web server -------------------------------------------------------------------------


@pytest.fixture(params=["json", "html"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    """The index of a test wheelhouse behind nginx; JSON-negotiating or HTML-only."""
    house = _house(tmp_path)
    build_index(house)
    with serve(house, tmp_path, json=request.param == "json") as url:
        yield url, tmp_path, str(request.param)


def test_served_index_negotiates(served: tuple[str, Path, str]) -> None:
    url, _, mode = served
    req = urllib.request.Request(
        url + "demo-lib/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req) as resp:
        body = resp.read()
        ctype = resp.headers["Content-Type"]
    if mode == "json":
        assert ctype.startswith("application/vnd.pypi.simple.v1+json")
        assert json.loads(body)["name"] == "demo-lib"
    else:
        assert ctype.startswith("text/html") and b"demo_lib-1.0" in body


def _installed(target: Path) -> set[str]:
    return {p.name.split("-")[0].lower() for p in target.glob("*.dist-info")}


def test_pip_installs_from_served_index(served: tuple[str, Path, str]) -> None:
    url, tmp, _ = served
    target = tmp / "pip-target"
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    env = {k: v for k, v in env.items() if not k.startswith("PIP_") or k == "PIP_CONFIG_FILE"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-cache-dir",
            "--index-url",
            url,
            "--target",
            str(target),
            "demo-app",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(target) == {"demo_app", "demo_lib"}
    assert (target / "demo_lib-1.0+cu130.dist-info").is_dir()
    # pip read the PEP 658 metadata file instead of opening the wheel to resolve
    assert ".whl.metadata HTTP" in (tmp / "nginx" / "access.log").read_text()


def test_uv_installs_from_served_index(served: tuple[str, Path, str]) -> None:
    url, tmp, _ = served
    uv = uv_binary()
    assert uv is not None
    target = tmp / "uv-target"
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    done = subprocess.run(
        [
            str(uv),
            "pip",
            "install",
            "--no-config",
            "--no-cache",
            "--index-url",
            url,
            "--python",
            sys.executable,
            "--target",
            str(target),
            "demo-app",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(target) == {"demo_app", "demo_lib"}

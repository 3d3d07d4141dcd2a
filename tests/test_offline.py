"""Offline proof: lock, install and verify with no network at all (``unshare -n``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from wh.errors import ProcessError
from wh.install.backend import uv_binary
from wh.proc import spawn as proc

from tests.envsnap import make_venv, wh
from tests.factory import make_wheel


@pytest.mark.parametrize("uv_cache", ["auto", "shared", "private"])
def test_lock_install_verify_without_network(
    no_network: list[str], tmp_path: Path, uv_cache: str
) -> None:
    make_wheel(tmp_path / "house", "base", "1.0")
    make_wheel(tmp_path / "house", "app", "1.0", ["base>=1"])
    venv = make_venv(tmp_path / "venv")
    common = ["--python", venv, "--lockfile", "app.toml"]
    lock = wh(
        "lock", "-r", "app", "--wheelhouse", "house", *common, cwd=tmp_path, prefix=no_network
    )
    assert lock.returncode == 0, lock.stderr
    inst = wh(
        "install", "--locked", "--python", venv, "--lockfile", "app.toml",
        "--check-import", "app", "--uv-cache", uv_cache, cwd=tmp_path, prefix=no_network,
        env={"WH_UV_CACHE_DIR": str(tmp_path / "uv-cache")},
    )  # fmt: skip
    assert inst.returncode == 0, inst.stderr
    chosen = "shared" if uv_cache == "shared" else "private"  # auto: the cache is empty
    assert f"· {chosen} uv cache" in inst.stderr
    ver = wh("verify", *common, cwd=tmp_path, prefix=no_network)
    assert ver.returncode == 0, ver.stdout + ver.stderr
    assert "verification passed" in ver.stdout


def test_a_delegated_tool_reaching_for_the_network_fails_fast(
    no_network: list[str], tmp_path: Path
) -> None:
    """uv asked for an index from inside the namespace errors out quickly, with its output."""
    uv = uv_binary()
    assert uv is not None
    venv = make_venv(tmp_path / "venv")
    cmd = [
        *no_network, str(uv), "pip", "install", "--no-config", "--python", str(venv / "bin/python"),
        "--index-url", "http://example.invalid/simple", "--no-cache", "some-package-nowhere",
    ]  # fmt: skip
    start = time.monotonic()
    with pytest.raises(ProcessError) as err:
        proc.run(
            cmd, env=proc.clean_env({"UV_HTTP_RETRIES": "0"}), what="uv pip install", timeout=60
        )
    elapsed = time.monotonic() - start
    assert elapsed < 30
    text = "\n".join(err.value.details)
    assert "example.invalid" in text or "dns" in text.lower() or "network" in text.lower()


def test_pip_download_without_network_fails_fast(no_network: list[str], tmp_path: Path) -> None:
    cmd = [
        *no_network, sys.executable, "-m", "pip", "download", "--no-cache-dir", "--retries", "0",
        "--timeout", "5", "--index-url", "http://example.invalid/simple", "-d", str(tmp_path),
        "some-package-nowhere",
    ]  # fmt: skip
    start = time.monotonic()
    with pytest.raises(ProcessError) as err:
        proc.run(cmd, env=proc.clean_env(), what="pip download", timeout=60)
    assert time.monotonic() - start < 30
    assert "pip download failed with exit code" in err.value.message
    assert any("some-package-nowhere" in d for d in err.value.details)

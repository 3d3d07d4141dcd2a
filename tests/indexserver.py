"""Package indexes for tests: a folder's wheels as wh's static PEP 503/691 index, read by its
file:// URL or served over HTTP by a real nginx (PEP 691 negotiated by the server's config)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from wh.airgap.simpleindex import build_index


def simple_url(folder: Path) -> str:
    """The file:// URL of ``folder``'s simple root (``folder/simple/``)."""
    return (folder / "simple").as_uri() + "/"


def file_index(folder: Path) -> str:
    """``folder``'s wheels as a static index; its simple root as a file:// URL."""
    build_index(folder)
    return simple_url(folder)


_NGINX_CONF = """
worker_processes 1;
daemon off;
{user}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    types {{
        text/html html;
        application/vnd.pypi.simple.v1+json json;
        application/octet-stream whl metadata;
    }}
    # PEP 691 content negotiation without any server-side code: JSON to clients asking for it.
    map $http_accept $simple_index {{
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.v1\\+json" {json_index};
    }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /simple/ {{
            index $simple_index;
            add_header Vary Accept;
        }}
    }}
}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _nginx() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if Path(p).is_file()), None
    )
    if found is None:
        pytest.skip("nginx is not installed (.ci/run installs it: apt-get install -y nginx)")
    return found


@contextmanager
def serve(root: Path, work: Path, *, json: bool = True) -> Iterator[str]:
    """nginx serving ``root`` (its index made beforehand) on a free local port; yields the
    URL of its simple root. ``json``: JSON pages to clients asking for them, else HTML only.
    Its config and logs (``access.log``, ``error.log``) are under ``work / "nginx"``; skips
    the test where nginx is not installed."""
    nginx = _nginx()
    prefix = work / "nginx"
    (prefix / "tmp").mkdir(parents=True)
    port = _free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(
        _NGINX_CONF.format(
            prefix=prefix,
            port=port,
            root=root,
            user="user root;" if os.geteuid() == 0 else "",
            json_index="index.json" if json else "index.html",
        )
    )
    proc = subprocess.Popen(
        [nginx, "-p", str(prefix), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    log = prefix / "error.log"
                    pytest.fail(f"nginx exited: {log.read_text() if log.is_file() else ''}")
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)

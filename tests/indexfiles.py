"""Files of the real package index for the network tests: wh's own connection pool, with
retries, and the wheel of a pinned release that a target takes."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import urllib3
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from wh.airgap.indexclient import _pool_manager
from wh.model.target import Target

INDEX = "https://pypi.org/simple"

# wh's own connection pool (its certificates and proxy), with more patience per request:
# a fixture may make a few hundred requests in a burst, and one dropped connection or a
# moment without name resolution must not turn a whole module into errors
_POOL = _pool_manager()
_PATIENT = urllib3.Retry(
    total=8,
    backoff_factor=1.0,
    status_forcelist=(429, 500, 502, 503, 504),
    allowed_methods=frozenset({"GET"}),
    raise_on_status=False,
)


def get(url: str, start: int | None = None, end: int | None = None) -> bytes:
    """The body at ``url`` (a PEP 691 page where no range is given), or bytes
    ``start..end`` of it by a range request."""
    headers = {"Accept": "application/vnd.pypi.simple.v1+json"}
    if start is not None:
        headers = {"Range": f"bytes={start}-{(end or 0) - 1}"}
    timeout = urllib3.Timeout(connect=30, read=120)
    r = _POOL.request("GET", url, headers=headers, retries=_PATIENT, timeout=timeout)
    if r.status >= 400:
        raise RuntimeError(f"{url}: {r.status} {r.reason}")
    if start is not None and r.status != 206:
        raise RuntimeError(f"{url}: the server ignored the range request ({r.status})")
    data: bytes = r.data
    return data


def wheel_file(name: str, version: str, target: Target) -> dict[str, object]:
    """The index's file entry (PEP 691) of the wheel of ``name`` ``version`` that
    ``target`` ranks best."""
    files = json.loads(get(f"{INDEX}/{canonicalize_name(name)}/"))["files"]
    best: tuple[int, dict[str, object]] | None = None
    for f in files:
        fn = str(f["filename"])
        if not fn.endswith(".whl") or f.get("yanked"):
            continue
        try:
            _n, v, _b, tags = parse_wheel_filename(fn)
        except InvalidWheelFilename:  # old uploads with names packaging refuses
            continue
        rank = target.wheel_rank(tags)
        if str(v) == version and rank is not None and (best is None or rank < best[0]):
            best = (rank, f)
    assert best is not None, f"no wheel of {name} {version} for {target.description}"
    return best[1]


def download_pins(
    folder: Path, pins: Sequence[tuple[str, str]], target: Target
) -> tuple[list[dict[str, object]], int]:
    """Download the wheel of each (name, version) of ``pins`` that ``target`` ranks best
    (``wheel_file``) into ``folder``, four at a time: their file entries, and the bytes
    taken."""
    with ThreadPoolExecutor(4) as pool:
        files = list(pool.map(lambda p: wheel_file(p[0], p[1], target), pins))
        return files, sum(pool.map(lambda f: _download(folder, f), files))


def _download(folder: Path, f: dict[str, object]) -> int:
    """Download the index file ``f`` (a PEP 691 file entry) into ``folder``, checking its
    sha256 where the index gives one; the bytes it took."""
    data = get(str(f["url"]))
    digests = f.get("hashes")
    if isinstance(digests, dict) and "sha256" in digests:
        assert hashlib.sha256(data).hexdigest() == digests["sha256"], f["filename"]
    (folder / str(f["filename"])).write_bytes(data)
    return len(data)


def central_directory_offset(tail: bytes, tail_at: int) -> int:
    """Where a zip's central directory starts, from its last bytes (``tail``, which begin
    at ``tail_at``)."""
    i = tail.rfind(b"PK\x05\x06")
    cd_off = struct.unpack_from("<L", tail, i + 16)[0]
    if cd_off == 0xFFFFFFFF:  # zip64: the locator just before the end record says where
        j = tail.rfind(b"PK\x06\x06")
        cd_off = struct.unpack_from("<Q", tail, j + 48)[0]
    return int(cd_off)

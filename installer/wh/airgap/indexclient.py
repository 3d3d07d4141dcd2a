"""Read a package index: PEP 691 JSON project pages (PEP 503 HTML as fallback), PEP 658/714
``.metadata`` files, and wheel downloads checked against the index's sha256, over urllib3.

urllib3 gives thread-safe connection pools (one TLS handshake per host and thread, reused),
retries with backoff on 429/5xx and dropped connections, streaming bodies and Range
requests: what a parallel, resumable fetch needs, without hand-written socket handling.
Project pages are cached like pip and uv cache them: reused while the index's
``Cache-Control: max-age`` holds, then revalidated with ``If-None-Match``.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from email.parser import HeaderParser
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse
from urllib.request import url2pathname

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from wh.airgap.rangemeta import TAIL, metadata_from_ranges
from wh.errors import IndexUnavailable
from wh.model.wheel import WheelMeta
from wh.settings import cache_dir

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
_MAX_AGE_CAP = 600  # seconds a project page is reused without asking the index
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """One file of a project as an index lists it."""

    filename: str
    url: str  # absolute, without fragment
    sha256: str  # "" when the index gives none
    size: int | None
    requires_python: str | None
    metadata: bool  # the index serves ``<url>.metadata`` (PEP 658/714)
    metadata_sha256: str  # "" when not given
    yanked: bool
    index: str


def usable_wheels(
    files: Iterable[RemoteFile],
) -> Iterator[tuple[RemoteFile, Version, frozenset[Tag]]]:
    """The wheels among ``files`` that are not yanked and whose file names parse, each with
    its version and tags (source distributions and unreadable names are passed over)."""
    for f in files:
        if f.yanked or not f.filename.endswith(".whl"):
            continue
        try:
            _n, version, _b, tags = parse_wheel_filename(f.filename)
        except (InvalidWheelFilename, ValueError):
            continue
        yield f, version, tags


class _Links(HTMLParser):
    """The anchors of a PEP 503 page with their data- attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._attrs: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._attrs is not None:
            self.links.append((self._attrs, "".join(self._text).strip()))
            self._attrs = None


def _meta_flag(value: Any) -> tuple[bool, str]:
    """PEP 658/714 ``core-metadata``: false, true, or a hashes table (JSON) / ``sha256=``."""
    if isinstance(value, dict):
        return True, str(value.get("sha256", ""))
    if isinstance(value, str):
        algo, _, digest = value.partition("=")
        return value.lower() != "false", digest if algo == "sha256" else ""
    return bool(value), ""


def parse_json_page(
    text: str, page_url: str, index: str, keep: Callable[[str], bool] | None = None
) -> list[RemoteFile]:
    """The files of a PEP 691 project page (those whose name ``keep`` accepts). Pure."""
    doc = json.loads(text)
    files = doc.get("files", []) if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise ValueError("not a PEP 691 project page: no list of files")
    out = []
    for i, f in enumerate(files):
        if not (isinstance(f, dict) and isinstance(f.get("filename"), str)):
            raise ValueError(f"file {i} of the page has no filename")
        if keep is not None and not keep(f["filename"]):
            continue
        if not isinstance(f.get("url"), str):
            raise ValueError(f"{f['filename']}: no url")
        url, _frag = urldefrag(urljoin(page_url, f["url"]))
        meta = f.get("core-metadata", f.get("dist-info-metadata", False))
        has_meta, meta_sha = _meta_flag(meta)
        size = f.get("size")
        hashes = f.get("hashes", {})
        python = f.get("requires-python")
        out.append(
            RemoteFile(
                filename=f["filename"],
                url=url,
                sha256=str(hashes.get("sha256", "")) if isinstance(hashes, dict) else "",
                size=int(size) if isinstance(size, int) else None,
                requires_python=python if isinstance(python, str) and python else None,
                metadata=has_meta,
                metadata_sha256=meta_sha,
                yanked=bool(f.get("yanked", False)),
                index=index,
            )
        )
    return out


def parse_html_page(
    text: str, page_url: str, index: str, keep: Callable[[str], bool] | None = None
) -> list[RemoteFile]:
    """The files of a PEP 503 project page (those whose name ``keep`` accepts). Pure."""
    parser = _Links()
    parser.feed(text)
    out = []
    for attrs, label in parser.links:
        href = attrs.get("href")
        if not href:
            continue
        url, frag = urldefrag(urljoin(page_url, href))
        algo, _, digest = frag.partition("=")
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        has_meta, meta_sha = _meta_flag(meta) if meta is not None else (False, "")
        filename = label or url.rsplit("/", 1)[-1]
        if keep is not None and not keep(filename):
            continue
        out.append(
            RemoteFile(
                filename=filename,
                url=url,
                sha256=digest if algo == "sha256" else "",
                size=None,
                requires_python=attrs.get("data-requires-python") or None,
                metadata=has_meta,
                metadata_sha256=meta_sha,
                yanked="data-yanked" in attrs,
                index=index,
            )
        )
    return out


def parse_metadata(filename: str, data: bytes) -> WheelMeta:
    """The fields of a core metadata file the resolver reads. Pure."""
    text = data.decode("utf-8", errors="replace")
    msg = HeaderParser().parsestr(text)
    return WheelMeta(
        filename=filename,
        name=str(msg.get("Name", "")),
        version=str(msg.get("Version", "")),
        requires_dist=tuple(str(r) for r in msg.get_all("Requires-Dist") or ()),
        requires_python=str(msg["Requires-Python"]) if msg.get("Requires-Python") else None,
        provides_extra=tuple(str(e) for e in msg.get_all("Provides-Extra") or ()),
    )


def _pool_manager() -> Any:
    import urllib3

    retries = urllib3.Retry(
        total=5,
        backoff_factor=0.3,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET", "HEAD"}),
        raise_on_status=False,
    )
    kw: dict[str, Any] = {"num_pools": 16, "maxsize": 32, "retries": retries, "block": False}
    cert = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if cert:
        kw["ca_certs"] = cert
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if proxy:
        return urllib3.ProxyManager(proxy, **kw)
    return urllib3.PoolManager(**kw)


class Http:
    """One connection pool for every index a fetch reads, with the page cache."""

    def __init__(self, cache: Path | None = None, *, refresh: bool = False) -> None:
        self.refresh = refresh  # read every page from the index again, fresh or not
        self._pool: Any = None
        self._lock = threading.Lock()
        self.cache = cache or (cache_dir() / "http")
        self.requests = 0  # what went over the network (pages, metadata, downloads)

    @property
    def pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                self._pool = _pool_manager()
            return self._pool

    def _get(self, url: str, headers: Mapping[str, str], stream: bool = False) -> Any:
        import urllib3

        self.requests += 1
        try:
            return self.pool.request(
                "GET",
                url,
                headers=dict(headers),
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=15, read=120),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise IndexUnavailable(url, "unreachable", problem=str(exc)) from exc

    def page(self, url: str) -> tuple[str, str]:
        """A project page's text and content type: cached, revalidated once stale."""
        if url.startswith("file:"):
            return _file_page(url)
        path = self._header_path(url)
        body_path = path.with_suffix(".body")
        cached = _header(path)
        now = time.time()

        def cached_body() -> tuple[str, str] | None:
            try:
                data = body_path.read_bytes()
            except OSError:
                return None
            if cached is None or hashlib.sha256(data).hexdigest() != cached.get("sha256"):
                return None
            return _text(url, data), str(cached["type"])

        if cached and not self.refresh and now - float(cached["at"]) < float(cached["max_age"]):
            hit = cached_body()
            if hit is not None:
                return hit
        headers = {"Accept": _ACCEPT}
        if cached and cached.get("etag"):
            headers["If-None-Match"] = str(cached["etag"])
        resp = self._get(url, headers)
        if resp.status == 304 and cached:
            hit = cached_body()
            if hit is not None:
                cached["at"] = now
                _write(path, cached)
                return hit
            resp = self._get(url, {"Accept": _ACCEPT})
        if resp.status == 404:
            return "", "missing"
        if resp.status != 200:
            raise IndexUnavailable(url, "page-status", status=resp.status)
        raw = bytes(resp.data)
        ctype = (resp.headers.get("Content-Type") or "text/html").split(";")[0].strip()
        entry = {
            "at": now,
            "max_age": _max_age(resp.headers.get("Cache-Control")),
            "etag": resp.headers.get("ETag", ""),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "type": ctype,
        }
        try:
            body_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = body_path.with_name(f"{body_path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_bytes(raw)
            os.replace(tmp, body_path)
            _write(path, entry)
        except OSError:
            pass
        return _text(url, raw), ctype

    def page_state(self, url: str, *, recall: bool = True) -> str | None:
        """The sha256 of ``url``'s cached page while it is fresh (inside its max-age), else
        None (always, to ``recall`` a resolution, under ``refresh``). Reads the small header
        file only."""
        if self.refresh and recall:
            return None
        meta = _header(self._header_path(url))
        if meta is None or time.time() - meta["at"] >= meta["max_age"]:
            return None
        return str(meta["sha256"]) or None

    def _header_path(self, url: str) -> Path:
        """Where ``url``'s cached page header lies (its body beside it, ``.body``)."""
        key = hashlib.sha256(url.encode()).hexdigest()
        return self.cache / "pages" / key[:2] / f"{key}.json"

    def blob(self, url: str, sha256: str) -> bytes:
        """A small immutable file (a ``.metadata``), checked against ``sha256`` when given and
        cached by it."""
        path: Path | None = None
        if sha256:
            path = self.cache / "metadata" / sha256[:2] / sha256
            try:
                data = path.read_bytes()
                if hashlib.sha256(data).hexdigest() == sha256:
                    return data
            except OSError:
                pass
        if url.startswith("file:"):
            data = Path(url2pathname(urlparse(url).path)).read_bytes()
        else:
            resp = self._get(url, {})
            if resp.status != 200:
                raise IndexUnavailable(url, "file-status", status=resp.status)
            data = resp.data
        if sha256 and hashlib.sha256(data).hexdigest() != sha256:
            raise IndexUnavailable(
                url, "sha256", problem=hashlib.sha256(data).hexdigest(), expected=sha256
            )
        if path is not None:
            _store(path, data)
        return data

    def ranged_metadata(self, url: str, sha256: str, what: str) -> bytes:
        """METADATA of the wheel at ``url`` via Range requests, cached by the wheel's sha256."""
        path = self.cache / "ranged-metadata" / sha256[:2] / sha256 if sha256 else None
        if path is not None:
            try:
                return path.read_bytes()
            except OSError:
                pass
        if url.startswith("file:"):
            local = Path(url2pathname(urlparse(url).path))
            with local.open("rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - TAIL))
                tail = fh.read()

                def read_file(a: int, b: int) -> bytes:
                    fh.seek(a)
                    return fh.read(b - a)

                data = metadata_from_ranges(size, tail, read_file, what)
        else:
            resp = self._get(url, {"Range": f"bytes=-{TAIL}"})
            if resp.status == 200:  # no Range support: the server sent it all
                data = _member_from_whole(resp.data, what)
            elif resp.status == 206:
                total = int(str(resp.headers.get("Content-Range", "")).rpartition("/")[2])

                def read_http(a: int, b: int) -> bytes:
                    r = self._get(url, {"Range": f"bytes={a}-{b - 1}"})
                    if r.status != 206 or len(r.data) != b - a:
                        raise IndexUnavailable(
                            url, "range-status", status=r.status, byte_range=f"{a}-{b - 1}"
                        )
                    return bytes(r.data)

                data = metadata_from_ranges(total, bytes(resp.data), read_http, what)
            else:
                raise IndexUnavailable(url, "file-status", status=resp.status)
        if path is not None:
            _store(path, data)
        return data

    def download(
        self,
        url: str,
        dest: Path,
        sha256: str,
        *,
        attempts: int = 4,
    ) -> int:
        """Download ``url`` into ``dest``: through ``dest.part`` (resumed with a Range request
        after an interruption), checked against ``sha256`` before it is renamed into place.
        Returns the bytes transferred."""
        part = dest.with_name(dest.name + ".part")
        moved = 0
        last: Exception | None = None
        for attempt in range(attempts):
            try:
                moved += self._download_once(url, part)
            except (IndexUnavailable, OSError) as exc:
                last = exc
                time.sleep(min(2.0, 0.2 * 2**attempt))
                continue
            digest = _file_sha256(part)
            if sha256 and digest != sha256:
                part.unlink(missing_ok=True)
                last = IndexUnavailable(url, "download-sha256", problem=digest, expected=sha256)
                continue
            os.replace(part, dest)
            return moved
        assert last is not None
        if isinstance(last, IndexUnavailable):
            raise last
        raise IndexUnavailable(
            url, "download-failed", attempts=attempts, problem=str(last)
        ) from last

    def _download_once(self, url: str, part: Path) -> int:
        if url.startswith("file:"):
            data = Path(url2pathname(urlparse(url).path)).read_bytes()
            part.write_bytes(data)
            return len(data)
        have = part.stat().st_size if part.is_file() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        resp = self._get(url, headers, stream=True)
        try:
            if resp.status == 416:  # the part is complete already
                return 0
            if resp.status not in (200, 206):
                raise IndexUnavailable(url, "download-status", status=resp.status)
            mode = "ab" if resp.status == 206 else "wb"
            moved = 0
            with part.open(mode) as f:
                for chunk in resp.stream(_CHUNK):
                    f.write(chunk)
                    moved += len(chunk)
            return moved
        except Exception as exc:
            import urllib3

            if isinstance(exc, urllib3.exceptions.HTTPError):
                raise IndexUnavailable(url, "stream", problem=str(exc)) from exc
            raise
        finally:
            resp.release_conn()


def _text(url: str, data: bytes) -> str:
    """A page's text; a page that is not UTF-8 (an error page of a proxy, another
    encoding) is refused as a bad page of its index."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IndexUnavailable(url, "bad-page", problem=f"not UTF-8 text ({exc})") from exc


def _header(path: Path) -> dict[str, Any] | None:
    """A cached page's header (``page`` writes it, ``page`` and ``page_state`` read it);
    None where it is absent, not JSON, or lacks a field they read or has one of another
    type (a damaged entry: the page is fetched again)."""
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sound = (
        isinstance(cached, dict)
        and isinstance(cached.get("at"), (int, float))
        and isinstance(cached.get("max_age"), (int, float))
        and isinstance(cached.get("sha256"), str)
        and isinstance(cached.get("type"), str)
        and isinstance(cached.get("etag", ""), str)
    )
    return cached if sound else None


def _member_from_whole(data: bytes, what: str) -> bytes:
    return metadata_from_ranges(len(data), data, lambda a, b: data[a:b], what)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _file_page(url: str) -> tuple[str, str]:
    """A project page of a file:// index (wh index writes index.json and index.html)."""
    folder = Path(url2pathname(urlparse(url).path))
    for name, ctype in (("index.json", JSON_TYPE), ("index.html", "text/html")):
        p = folder / name
        if p.is_file():
            return _text(url, p.read_bytes()), ctype
    return "", "missing"


def _max_age(header: str | None) -> float:
    """Seconds a page may be reused: the index's ``max-age`` (capped at 600), 0 for
    ``no-cache``/``no-store``; when the index says nothing (this machine's PyPI mirror
    strips the header PyPI sends, ``max-age=600``), PyPI's own 600 s."""
    if header is None or not header.strip():
        return float(_MAX_AGE_CAP)
    if "no-cache" in header or "no-store" in header:
        return 0.0
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "max-age" and value.isdigit():
            return float(min(int(value), _MAX_AGE_CAP))
    return 0.0


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


@dataclass(frozen=True)
class IndexClient:
    """One index: its project pages and its files' metadata."""

    url: str  # the simple root, e.g. https://pypi.org/simple/
    http: Http

    def page_url(self, name: str) -> str:
        return self.url.rstrip("/") + f"/{name}/"

    def project(self, name: str, keep: Callable[[str], bool] | None = None) -> list[RemoteFile]:
        """The files of ``name`` on this index that ``keep`` accepts (default: every one;
        [] when the index has no such project)."""
        url = self.page_url(name)
        text, ctype = self.http.page(url)
        if ctype == "missing":
            return []
        try:
            if ctype == JSON_TYPE or ctype.endswith("+json"):
                return parse_json_page(text, url, self.url, keep)
            return parse_html_page(text, url, self.url, keep)
        except (ValueError, KeyError, TypeError) as exc:
            raise IndexUnavailable(url, "bad-page", problem=str(exc)) from exc

    def metadata(self, f: RemoteFile) -> WheelMeta:
        """The file's core metadata: its PEP 658 ``.metadata`` file where the index serves
        one, else the METADATA member read by Range requests (a few KiB of the wheel)."""
        if f.metadata:
            data = self.http.blob(f.url + ".metadata", f.metadata_sha256)
        else:
            data = self.http.ranged_metadata(f.url, f.sha256, f.filename)
        return parse_metadata(f.filename, data)


def pip_config_files() -> list[Path]:
    """pip's configuration files, lowest priority first (pip's own order: global, user,
    site; ``PIP_CONFIG_FILE`` last, ``os.devnull`` there meaning none at all)."""
    env = os.environ.get("PIP_CONFIG_FILE")
    if env == os.devnull:
        return []
    files: list[Path] = []
    if sys.platform == "win32":
        program_data = os.environ.get("PROGRAMDATA", r"C:\ProgramData")
        files.append(Path(program_data) / "pip" / "pip.ini")
        appdata = os.environ.get("APPDATA")
        files.append(Path.home() / "pip" / "pip.ini")
        if appdata:
            files.append(Path(appdata) / "pip" / "pip.ini")
        files.append(Path(sys.prefix) / "pip.ini")
    else:
        xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
        files += [Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs) if d]
        files.append(Path("/etc/pip.conf"))
        files.append(Path.home() / ".pip" / "pip.conf")
        xdg_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        files.append(Path(xdg_home) / "pip" / "pip.conf")
        files.append(Path(sys.prefix) / "pip.conf")
    if env:
        files.append(Path(env))
    return files


def configured_index() -> str:
    """The index pip is configured with (``PIP_INDEX_URL``, else ``index-url`` in pip's
    configuration files, ``[download]`` over ``[global]``), else PyPI. Read directly: a
    ``pip config`` subprocess would cost a no-op fetch half its time."""
    env = os.environ.get("PIP_INDEX_URL")
    if env:
        return env
    found = ""
    for path in pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        for section in ("global", "download"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url").strip() or found
    return found or "https://pypi.org/simple/"


def _store(path: Path, data: bytes) -> None:
    """Write a cache file whole (a temporary name, then a rename); failing only costs speed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass

"""wh fetch: resolve over an index's metadata, then download exactly that closure.

Mechanism tests serve factory wheels as a static index (``wh index`` output read through
file:// URLs); the network tests resolve the real sglang closure on the package index.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from wh import __version__
from wh.airgap.indexclient import parse_html_page, parse_json_page
from wh.airgap.rangemeta import TAIL, metadata_from_ranges
from wh.airgap.simpleindex import build_index, core_metadata
from wh.app.fetch import fetch, parse_index_option
from wh.app.prefetch import RECORDS
from wh.cli.main import cli
from wh.errors import ProfileError
from wh.model.manifest import Manifest
from wh.model.profile import Override, Profile
from wh.model.target import declared

from tests.factory import make_wheel
from tests.fixtures import bootstrap_offline
from tests.indexserver import file_index, simple_url
from tests.realprofile import uv_compile_argv, wh_flags

WIN = declared("win_amd64", "3.12")
LINUX = declared("manylinux_2_28_x86_64", "3.12")
WIN_FLAGS = ["--platform", "win_amd64", "--python-version", "3.12"]


def _stack(up: Path) -> None:
    """sglang's shape: the newest torchvision needs a torch sglang's pin excludes."""
    make_wheel(up, "app", "1.0", ["torch==2.9.1", "vision", "uvloop", "saver==0.0.9"])
    make_wheel(up, "vision", "0.29", ["torch>=2.14"], tag="cp312-cp312-win_amd64")
    make_wheel(up, "vision", "0.24", ["torch==2.9.1"], tag="cp312-cp312-win_amd64")
    make_wheel(up, "torch", "2.14.0", tag="cp312-cp312-win_amd64")
    make_wheel(up, "torch", "2.9.1", tag="cp312-cp312-win_amd64")
    make_wheel(up, "uvloop", "0.21", tag="cp312-cp312-manylinux_2_28_x86_64")
    make_wheel(up, "saver", "0.0.9", tag="cp312-cp312-manylinux_2_28_x86_64")


DROPS = ["uvloop; sys_platform == 'win32'", "saver; sys_platform == 'win32'"]


def test_fetch_backtracks_downloads_exactly_the_closure_and_locks(tmp_path: Path) -> None:
    up, house = tmp_path / "up", tmp_path / "house"
    up.mkdir()
    _stack(up)
    url = file_index(up)
    profile = Profile("p").with_flags(requirements=["app"], drops=DROPS)
    report = fetch(Manifest.of(profile), house, [(WIN, None)], index_url=url)
    assert report.missing == []
    assert sorted(report.downloaded) == [
        "app-1.0-py3-none-any.whl",
        "torch-2.9.1-cp312-cp312-win_amd64.whl",
        "vision-0.24-cp312-cp312-win_amd64.whl",
    ]
    assert sorted(p.name for p in house.iterdir()) == sorted([*report.downloaded, RECORDS])
    for e in report.closure:  # each wheel is the index's file, by sha256
        assert hashlib.sha256((house / e.filename).read_bytes()).hexdigest() == e.sha256
        # with what its compiled members need recorded, for a lock's load check
        assert json.loads((house / RECORDS / f"{e.sha256}.json").read_text())["sha256"] == e.sha256
    assert [(d.by, d.requirement) for _t, d in report.dropped] == [
        ("app 1.0", "saver==0.0.9"),
        ("app 1.0", "uvloop"),
    ]
    # the wheelhouse the fetch leaves locks, with the same answer
    assert report.resolutions[WIN.description].versions() == {
        "app": "1.0",
        "torch": "2.9.1",
        "vision": "0.24",
    }
    again = fetch(Manifest.of(profile), house, [(WIN, None)], index_url=url)
    assert again.downloaded == [] and sorted(again.present) == sorted(report.downloaded)


def test_fetch_reports_everything_missing_at_once_with_advice(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir()
    _stack(up)
    make_wheel(up, "sglang-kernel", "0.4.1", tag="cp312-cp312-manylinux_2_28_x86_64")
    url = file_index(up)
    house = tmp_path / "house"
    result = CliRunner().invoke(
        cli,
        [
            "fetch",
            "-r",
            "app",
            "-r",
            "sglang-kernel==0.4.1",
            "--index-url",
            url,
            "--wheelhouse",
            str(house),
            *WIN_FLAGS,
        ],
    )
    assert result.exit_code == 3, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    kernel = next(line for line in lines if line.startswith("sglang-kernel"))
    assert "wh build sgl-kernel" in kernel
    for dep in ("saver", "uvloop"):
        line = next(line for line in lines if line.startswith(dep))
        assert "wanted by app 1.0" in line and "has no wheel of" in line
        assert f"--drop \"{dep}; sys_platform == 'win32'\"" in line
    assert not house.exists() or not list(house.iterdir())  # nothing was downloaded
    # --json: one document, the error with the fetch's report in it
    args = ["fetch", "--json", "-r", "app", "-r", "sglang-kernel==0.4.1", "--index-url", url]
    result = CliRunner().invoke(cli, [*args, "--wheelhouse", str(house), *WIN_FLAGS])
    assert result.exit_code == 3, result.output
    err = json.loads(result.stdout)
    assert err["error"] == "wheelhouse" and err["fields"]["downloaded"] is False
    assert len(err["fields"]["missing"]) == 3
    assert sorted(m["requirement"].split()[0] for m in err["report"]["missing"]) == [
        "saver",
        "sglang-kernel",
        "uvloop",
    ]


def test_dry_run_json_prints_the_closure_and_downloads_nothing(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir()
    _stack(up)
    house = tmp_path / "house"
    args = ["fetch", "--dry-run", "--json", "-r", "app", "--index-url", file_index(up)]
    for d in DROPS:
        args += ["--drop", d]
    result = CliRunner().invoke(cli, [*args, "--wheelhouse", str(house), *WIN_FLAGS])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["missing"] == []
    by_name = {e["name"]: e for e in data["closure"]}
    assert sorted(by_name) == ["app", "torch", "vision"]
    e = by_name["vision"]
    assert set(e) >= {"name", "version", "filename", "url", "sha256"}
    assert e["version"] == "0.24" and e["url"].endswith("/vision-0.24-cp312-cp312-win_amd64.whl")
    assert e["sha256"] == hashlib.sha256((up / e["filename"]).read_bytes()).hexdigest()
    assert not house.exists()


def test_a_different_file_of_the_same_name_is_refused(tmp_path: Path) -> None:
    up, house = tmp_path / "up", tmp_path / "house"
    up.mkdir()
    house.mkdir()
    make_wheel(up, "lib", "1.0")
    url = file_index(up)
    make_wheel(house, "lib", "1.0", files={"lib/__init__.py": b"# not the index's\n"})
    report = fetch(
        Manifest.of(Profile("p").with_flags(requirements=["lib"])),
        house,
        [(WIN, None)],
        index_url=url,
    )
    assert [m.requirement for m in report.missing] == ["lib-1.0-py3-none-any.whl"]
    assert "different file of this name" in report.missing[0].reason
    assert report.downloaded == []


def test_a_wheel_only_the_wheelhouse_has_joins_the_closure(tmp_path: Path) -> None:
    """The stand-in sglang-kernel 0.4.3 win_amd64 wheel exists nowhere but the wheelhouse."""
    up, house = tmp_path / "up", tmp_path / "house"
    up.mkdir()
    house.mkdir()
    make_wheel(up, "sglang", "0.5.10", ["sglang-kernel==0.4.1"])
    make_wheel(up, "sglang-kernel", "0.4.1", tag="cp312-cp312-manylinux_2_28_x86_64")
    url = file_index(up)
    local = make_wheel(house, "sglang-kernel", "0.4.3", tag="cp310-abi3-win_amd64")
    profile = Profile("p", overrides=(Override(Requirement("sglang-kernel==0.4.3")),))
    profile = profile.with_flags(requirements=["sglang"])
    report = fetch(Manifest.of(profile), house, [(WIN, None)], index_url=url, dry_run=True)
    entry = next(e for e in report.closure if e.name == "sglang-kernel")
    assert entry.url is None and entry.filename == local.name
    assert entry.sha256 == hashlib.sha256(local.read_bytes()).hexdigest()


def test_a_package_index_is_the_only_source_of_its_package(tmp_path: Path) -> None:
    up, other, house = tmp_path / "up", tmp_path / "other", tmp_path / "house"
    up.mkdir()
    other.mkdir()
    make_wheel(up, "app", "1.0", ["torch"])
    make_wheel(up, "torch", "9.0", tag="cp312-cp312-win_amd64")  # a look-alike, newer
    make_wheel(other, "torch", "2.9.1+cu130", tag="cp312-cp312-win_amd64")
    profile = Profile("p").with_flags(requirements=["app"])
    report = fetch(
        Manifest.of(profile),
        house,
        [(WIN, None)],
        index_url=file_index(up),
        indexes={"torch": file_index(other)},
        dry_run=True,
    )
    torch = next(e for e in report.closure if e.name == "torch")
    assert torch.version == "2.9.1+cu130" and "/other/" in (torch.url or "")


def test_protected_build_not_on_the_index_is_kept_with_advice(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir()
    make_wheel(up, "app", "1.0", ["torch==2.9.1"])
    make_wheel(up, "torch", "2.9.1", tag="cp312-cp312-win_amd64")
    profile = Profile("p").with_flags(requirements=["app"], protections=["torch==2.9.1+cu130"])
    report = fetch(
        Manifest.of(profile), tmp_path / "h", [(WIN, None)], index_url=file_index(up), dry_run=True
    )
    assert [e.name for e in report.closure] == ["app"]
    assert len(report.kept) == 1 and "--index torch=URL" in report.kept[0]


def test_index_pages_parse_as_pip_reads_them(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir()
    wheel = make_wheel(up, "demo-lib", "1.0", requires_python=">=3.8")
    build_index(up)
    page = up / "simple" / "demo-lib"
    base = page.as_uri() + "/"
    (j,) = parse_json_page((page / "index.json").read_text(), base, "idx")
    (h,) = parse_html_page((page / "index.html").read_text(), base, "idx")
    for f in (j, h):
        assert f.filename == wheel.name and f.url == wheel.as_uri()
        assert f.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert f.requires_python == ">=3.8" and f.metadata
        assert f.metadata_sha256 == hashlib.sha256(core_metadata(wheel)).hexdigest()
    html = '<a href="x-1.0-py3-none-any.whl#sha256=ab" data-yanked="">x-1.0-py3-none-any.whl</a>'
    (y,) = parse_html_page(html, "https://i/simple/x/", "i")
    assert y.yanked and not y.metadata and y.url == "https://i/simple/x/x-1.0-py3-none-any.whl"


@pytest.mark.parametrize(
    "page",
    [
        "[]",  # not an object
        '{"files": "x"}',  # files not a list
        '{"files": [1]}',  # an entry not an object
        '{"files": [{"filename": ["a"]}]}',  # a filename not a string
        '{"files": [{"filename": "a-1-py3-none-any.whl", "url": 5}]}',
    ],
)
def test_a_malformed_json_page_is_a_bad_page_of_its_index(page: str) -> None:
    """Found by mutating the pages `wh index` writes: each of these raised Python's own
    AttributeError out of ``wh fetch``."""
    from wh.airgap.indexclient import JSON_TYPE, IndexClient
    from wh.errors import IndexUnavailable

    class Pages:
        def page(self, url: str) -> tuple[str, str]:
            return page, JSON_TYPE

    client = IndexClient("https://i/simple/", Pages())  # type: ignore[arg-type]
    with pytest.raises(IndexUnavailable) as info:
        client.project("a")
    assert "https://i/simple/a/" in info.value.message


def test_a_page_that_is_not_utf8_is_a_bad_page_of_its_index(tmp_path: Path) -> None:
    from wh.airgap.indexclient import Http, IndexClient
    from wh.errors import IndexUnavailable

    page = tmp_path / "simple" / "a"
    page.mkdir(parents=True)
    (page / "index.html").write_bytes(b"<a href='a-1-py3-none-any.whl'>\xff</a>")
    client = IndexClient((tmp_path / "simple").as_uri() + "/", Http(tmp_path / "cache"))
    with pytest.raises(IndexUnavailable, match="not UTF-8 text"):
        client.project("a")


@pytest.mark.parametrize("header", ["[]", '{"at": "x", "max_age": 1, "sha256": "a"}', "{"])
def test_a_damaged_cached_page_header_is_no_page_state(tmp_path: Path, header: str) -> None:
    """``page_state`` reads the header ``page`` writes; one of another shape used to raise
    AttributeError or ValueError there (``page`` checked it, its twin did not)."""
    from wh.airgap.indexclient import Http

    http = Http(tmp_path / "cache")
    path = http._header_path("https://i/simple/a/")
    path.parent.mkdir(parents=True)
    path.write_text(header)
    assert http.page_state("https://i/simple/a/") is None


def test_metadata_by_ranges_reads_only_the_directory_and_member(tmp_path: Path) -> None:
    """The Range-request path (for indexes without PEP 658 files): a wheel whose METADATA
    lies before the tail, and torch when this machine has it (a central directory larger
    than the tail, read by a second range)."""
    big = os.urandom(3 * TAIL)  # incompressible: METADATA lies far before the tail
    paths = [make_wheel(tmp_path, "w", "1.0", ["dep>=1"], files={"w/big.bin": big})]
    torch = sorted(Path("/opt/wheels").glob("torch-*.whl"))[:1]
    reads: list[tuple[int, int]] = []
    for p in [*paths, *torch]:
        data = p.read_bytes()

        def read(a: int, b: int, data: bytes = data) -> bytes:
            reads.append((a, b))
            return data[a:b]

        got = metadata_from_ranges(len(data), data[-TAIL:], read, p.name)
        assert got == core_metadata(p)
    sizes = sum(p.stat().st_size for p in [*paths, *torch])
    assert sum(b - a for a, b in reads) < sizes / 10  # the directory and a member only


def test_index_option_parsing() -> None:
    assert parse_index_option(["Torch=https://x/cu130"]) == {"torch": "https://x/cu130"}
    with pytest.raises(ProfileError):
        parse_index_option(["torch"])


def test_profile_indexes_key(tmp_path: Path) -> None:
    from wh.app.profiles import load_profile

    cfg = tmp_path / "wh.toml"
    cfg.write_text(
        '[profile.p]\nrequirements = ["torch"]\n'
        'indexes = { Torch = "https://download.pytorch.org/whl/cu130" }\n'
    )
    p = load_profile("p", [cfg])
    assert p.indexes == (("torch", "https://download.pytorch.org/whl/cu130"),)


# -- the package index ------------------------------------------------------------------------

REAL = [
    *wh_flags("torch==2.9.1+cu130"),
    "--drop",
    "uvloop; sys_platform == 'win32'",
    "--drop",
    "torch-memory-saver; sys_platform == 'win32'",
]


def _uv() -> str:
    from wh.install.backend import uv_binary

    return str(uv_binary())


def _dry_run(tmp_path: Path, platform: str, house: Path, *extra: str) -> dict[str, object]:
    result = CliRunner().invoke(
        cli,
        [
            "fetch",
            "--dry-run",
            "--json",
            *REAL,
            *extra,
            "--platform",
            platform,
            "--python-version",
            "3.12",
            "--wheelhouse",
            str(house),
        ],
    )
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def _uv_accepts(tmp_path: Path, closure: list[dict[str, str]], platform: str) -> str:
    """uv resolves the same roots with the closure as constraints (online)."""
    cons = tmp_path / f"constraints-{platform}.txt"
    cons.write_text("".join(f"{e['name']}=={e['version']}\n" for e in closure))
    uv_platform = "x86_64-pc-windows-msvc" if platform == "win_amd64" else "x86_64-manylinux_2_28"
    done = subprocess.run(
        uv_compile_argv(
            _uv(),
            tmp_path,
            uv_platform,
            "https://pypi.org/simple/",
            "--constraints",
            str(cons),
            "--find-links",
            str(tmp_path / "house"),
        ),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.network
def test_real_sglang_profile_resolves_for_windows(tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    stand_in = make_wheel(house, "sglang-kernel", "0.4.3", tag="cp310-abi3-win_amd64")
    data = _dry_run(tmp_path, "win_amd64", house)
    assert data["missing"] == [] and list(house.iterdir()) == [stand_in]
    closure = data["closure"]
    assert isinstance(closure, list)
    names = {e["name"] for e in closure}
    assert {"sglang", "kernels", "pymupdf", "sglang-kernel", "flashinfer-python"} <= names
    assert not {"uvloop", "torch-memory-saver", "torch"} & names  # dropped; protected torch kept
    by_name = {e["name"]: e for e in closure}
    assert by_name["sglang-kernel"]["url"] is None  # the stand-in, from the wheelhouse
    assert by_name["flashinfer-python"]["version"] == "0.6.11.post3"
    dropped = {(d["by"], d["requirement"].split(";")[0]) for d in data["dropped"]}  # type: ignore[attr-defined,index]
    assert ("sglang 0.5.10", "uvloop") in dropped
    assert ("sglang 0.5.10", "torch_memory_saver==0.0.9") in dropped
    compiled = _uv_accepts(tmp_path, closure, "win_amd64")
    for e in closure:
        if e["name"] != "sglang-kernel":
            assert f"{canonicalize_name(e['name'])}=={e['version']}" in compiled.replace("_", "-")


@pytest.mark.network
def test_real_sglang_profile_resolves_for_manylinux(tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    # PyPI's Linux torch 2.9.1 is a CUDA build: protected as that, its own requirements
    # (triton==3.5.1, the nvidia libraries) come from the index's metadata
    data = _dry_run(tmp_path, "manylinux_2_28_x86_64", house, "--protect", "torch==2.9.1")
    assert data["missing"] == []
    closure = data["closure"]
    assert isinstance(closure, list)
    by_name = {e["name"]: e for e in closure}
    # on Linux the win32 drops do not apply: uvloop and torch-memory-saver are resolved
    assert "uvloop" in by_name and "torch-memory-saver" in by_name
    assert by_name["sglang-kernel"]["version"] == "0.4.3"
    assert by_name["torch"]["version"] == "2.9.1" and by_name["triton"]["version"] == "3.5.1"
    assert all(e["url"] for e in closure)
    assert {u["drop"] for u in data["unused_drops"]} == {  # type: ignore[union-attr]
        'uvloop where sys_platform == "win32"',
        'torch-memory-saver where sys_platform == "win32"',
    }
    _uv_accepts(tmp_path, closure, "manylinux_2_28_x86_64")


# flake8 7.1.1 requires pyflakes>=3.2.0,<3.3.0: the override makes wh fetch exactly 3.1.0.
SMALL = ["-r", "flake8==7.1.1", "--override", "pyflakes==3.1.0", "--check-import", "flake8"]


@pytest.mark.network
@pytest.mark.slow
def test_small_real_profile_fetched_locked_bundled_installed_offline(
    no_network: list[str], tmp_path: Path
) -> None:
    base = Path(sys.base_prefix) / "bin" / "python3"
    house = tmp_path / "house"
    runner = CliRunner()
    fetched = runner.invoke(
        cli, ["fetch", "--json", *SMALL[:4], "--python", str(base), "--wheelhouse", str(house)]
    )
    assert fetched.exit_code == 0, fetched.output
    data = json.loads(fetched.output)
    names = sorted(parse_wheel_filename(f)[0] for f in data["downloaded"])
    assert names == ["flake8", "mccabe", "pycodestyle", "pyflakes"]
    assert data["resolutions"][next(iter(data["resolutions"]))]["pyflakes"] == "3.1.0"
    lock = tmp_path / "pylock.toml"
    locked = runner.invoke(
        cli,
        [
            "lock",
            *SMALL,
            "--python",
            str(base),
            "--wheelhouse",
            str(house),
            "--lockfile",
            str(lock),
        ],
    )
    assert locked.exit_code == 0, locked.output
    out = tmp_path / "small.zip"
    made = runner.invoke(
        cli,
        ["bundle", *SMALL, "--python", str(base), "--wheelhouse", str(house), "-o", str(out)],
    )
    assert made.exit_code == 0, made.output
    unpacked = tmp_path / "offline"
    with zipfile.ZipFile(out) as zf:
        zf.extractall(unpacked)
    # wh's own wheel is built without its C block search, so it installs on any target
    assert [w.name for w in unpacked.glob("**/wh-*.whl")] == [f"wh-{__version__}-py3-none-any.whl"]
    target = tmp_path / "target-venv"
    (script,) = unpacked.glob("*/install.sh")
    done = bootstrap_offline(no_network, script, target, base, tmp_path / "offline-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verification passed" in done.stdout
    show = subprocess.run(
        [str(target / "bin" / "python"), "-c", "import pyflakes; print(pyflakes.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert show.stdout.strip() == "3.1.0"


def test_the_configured_index_is_read_as_pip_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wh.airgap.indexclient import configured_index

    cfg = tmp_path / "pip.conf"
    cfg.write_text("[global]\nindex-url = https://a.example/simple/\n")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(cfg))
    got = configured_index()
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert got == pip.stdout.strip() == "https://a.example/simple/"
    cfg.write_text(cfg.read_text() + "[download]\nindex-url = https://b.example/simple/\n")
    assert configured_index() == "https://b.example/simple/"  # what `pip download` uses
    monkeypatch.setenv("PIP_INDEX_URL", "https://c.example/simple/")
    assert configured_index() == "https://c.example/simple/"
    monkeypatch.delenv("PIP_INDEX_URL")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert configured_index() == "https://pypi.org/simple/"


def test_a_wheel_the_index_gives_no_sha256_for_is_not_downloaded(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir()
    wheel = make_wheel(up, "lib", "1.0")
    page = up / "simple" / "lib"
    page.mkdir(parents=True)
    (page / "index.html").write_text(f'<a href="../../{wheel.name}">{wheel.name}</a>\n')
    house = tmp_path / "house"
    profile = Profile("p").with_flags(requirements=["lib"])
    report = fetch(Manifest.of(profile), house, [(WIN, None)], index_url=simple_url(up))
    assert [m.requirement for m in report.missing] == [wheel.name]
    assert "no sha256" in report.missing[0].reason and report.downloaded == []
    assert not list(house.glob("*.whl"))


@pytest.mark.parametrize(
    ("policy", "first"),
    [("if-necessary-or-explicit", "1.5"), ("allow", "2.0b1"), ("disallow", "1.5")],
)
def test_the_read_ahead_follows_the_resolvers_prerelease_rule(
    tmp_path: Path, policy: str, first: str
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from wh.airgap.indexclient import Http, IndexClient, RemoteFile
    from wh.airgap.remotesource import Source

    def file(version: str, tag: str = "py3-none-any") -> RemoteFile:
        name = f"lib-{version}-{tag}.whl"
        return RemoteFile(name, f"https://x/{name}", "", None, None, False, "", False, "x")

    files = [file("1.0"), file("1.5"), file("2.0b1"), file("3.0", "cp312-cp312-macosx_11_0_arm64")]
    client = IndexClient("https://x/simple/", Http())
    with ThreadPoolExecutor(1) as pool:
        source = Source(client, {}, (), WIN, tmp_path, pool, {}, prereleases=policy)
        best = source._likeliest(files, None)
        assert best is not None and best.filename == f"lib-{first}-py3-none-any.whl"
        only_pre = source._likeliest([file("2.0b1")], None)
        assert (only_pre is None) == (policy == "disallow")

"""The lock's [tool.wh] table as a typed value: its bytes are those wh wrote before it was
typed (golden locks), and reading a lock then writing its table back gives the same bytes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import tomli_w
import tomllib
from packaging.utils import canonicalize_name
from wh.app import lockfiles
from wh.errors import LockFormatError
from wh.model import lockfile as lockmod
from wh.model.requiredby import RequiredBy
from wh.model.toolwh import (
    Checks,
    LoadCheck,
    LockedProtection,
    OverrideUse,
    Snippet,
    ToolWh,
)

from tests.factory import make_wheel
from tests.fixtures import run_wh

URL_WHEELS = Path("/fleet-wheels")  # where a URL lock's wheels would be downloaded

GOLDEN = Path(__file__).parent / "golden"
DEMO = Path(__file__).parent.parent / "demo"
VERSION_MARK = "@WH_VERSION@"


def _seed_ocr(house: Path) -> None:
    """The unlimited-ocr stack for win_amd64, sglang-kernel built locally (a build record)."""
    make_wheel(
        house, "sglang", "0.5.10", ["sglang-kernel==0.4.1", "flashinfer-python", "torch", "uvloop"]
    )
    kernel = make_wheel(house, "sglang-kernel", "0.4.3", ["torch"], tag="cp310-abi3-win_amd64")
    make_wheel(house, "flashinfer-python", "0.6.11.post3", ["torch>=2.8"])
    make_wheel(house, "kernels", "0.11.7")
    make_wheel(house, "pymupdf", "1.27.2.2")
    make_wheel(house, "torch", "2.9.1+cu130", tag="cp312-cp312-win_amd64")
    record = {
        "recipe": {"name": "sgl-kernel", "sha256": "0" * 64, "file": "recipes/sgl-kernel.toml"},
        "provides": ["flash_ops"],
        "torch": {"version": "2.9.1+cu130", "cuda": "13.0"},
    }
    kernel.with_name(kernel.name + ".build.json").write_text(json.dumps(record), "utf-8")


def _seed_fleet(house: Path) -> None:
    make_wheel(house, "app", "1.2.0", ["lib>=1", "winonly; sys_platform == 'win32'", "gone"])
    make_wheel(house, "lib", "1.4.1", extras={"fast": ["speedup"]})
    make_wheel(house, "speedup", "0.3")


CASES = {
    "ocr-win": (
        _seed_ocr,
        [
            "unlimited-ocr",
            "--protect",
            "torch==2.9.1+cu130",
            "--platform",
            "win_amd64",
            "--python-version",
            "3.12",
        ],
    ),
    "fleet-linux": (
        _seed_fleet,
        [
            "-r",
            "app",
            "-r",
            "lib[fast]",
            "--drop",
            "gone",
            "--override",
            "lib==1.4.1",
            "--check-import",
            "app",
            "--check-snippet",
            "import lib",
            "--allow-overwrite",
            "speedup",
            "--skip-load-check",
            "pure Python",
            "--index-url",
            "http://10.0.0.1:8000/simple/",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
        ],
    ),
}


def produce(tmp_path: Path, case: str) -> bytes:
    """The lock ``wh lock`` writes for ``case`` (a fixed wheelhouse, a declared target)."""
    seed, args = CASES[case]
    seed(tmp_path / "wheelhouse")
    lock = tmp_path / "lockfiles" / "pylock.toml"
    r = run_wh("lock", *args, "--wheelhouse", tmp_path / "wheelhouse", "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    return lock.read_bytes()


def _blank_digest(data: bytes) -> bytes:
    return re.sub(rb'^digest = "sha256:[0-9a-f]*"$', b'digest = "sha256:"', data, flags=re.M)


def _versionless(data: bytes) -> bytes:
    """The lock with wh's version replaced by a mark and its digest blanked."""
    from wh import __version__

    return _blank_digest(data).replace(
        f'wh-version = "{__version__}"'.encode(), f'wh-version = "{VERSION_MARK}"'.encode()
    )


def expected(case: str) -> bytes:
    """The golden lock with this wh's version, its digest computed as wh computes it."""
    from wh import __version__

    body = (
        (GOLDEN / f"{case}.toml").read_bytes().replace(VERSION_MARK.encode(), __version__.encode())
    )
    return _sealed(body)


def _sealed(blanked: bytes) -> bytes:
    """Lock bytes with a blank digest, the digest filled in as wh computes it."""
    digest = hashlib.sha256(blanked).hexdigest()
    return blanked.replace(b'digest = "sha256:"', f'digest = "sha256:{digest}"'.encode(), 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_lock_bytes_are_the_golden_ones(tmp_path: Path, case: str) -> None:
    """The goldens were written by wh before [tool.wh] was typed (python -m tests.test_toolwh
    tests/golden, on that commit): the same input gives the same bytes, digest included."""
    assert produce(tmp_path, case) == expected(case)


def _rewritten(data: bytes, path: Path) -> bytes:
    """The lock read into values, its [tool.wh] and required-by edges written back from them."""
    lock = lockmod.parse(data, path, url_wheels=URL_WHEELS)
    doc = tomllib.loads(data.decode("utf-8"))
    doc["tool"]["wh"] = lock.tool.to_toml()
    for raw in doc["packages"]:
        edges = lock.packages[canonicalize_name(raw["name"])].required_by
        raw["tool"]["wh"]["required-by"] = [e.to_toml() for e in edges]
    return tomli_w.dumps(doc).encode()


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_locks_read_and_write_back_to_their_bytes(tmp_path: Path, case: str) -> None:
    data = expected(case)
    path = tmp_path / "lockfiles" / "pylock.toml"
    assert _rewritten(data, path) == data
    tool = lockmod.parse(data, path, url_wheels=URL_WHEELS).tool
    assert tool.format == 1 and b"format" not in data  # format 1 is implied, not written
    assert ToolWh.from_toml(tool.to_toml()) == tool


def test_the_fields_read_from_a_golden_lock() -> None:
    lock = lockmod.parse(expected("ocr-win"), Path("lockfiles/pylock.toml"), url_wheels=URL_WHEELS)
    tool = lock.tool
    assert tool.profile == lock.profile == "unlimited-ocr"
    assert tool.target is not None and tool.target.platform == "win_amd64"
    assert tool.target.markers["sys_platform"] == "win32"
    assert tool.install_order == lock.levels and tool.install_order[-1] == ("sglang",)
    (torch,) = tool.protections
    assert (torch.name, torch.version, torch.record_sha256) == ("torch", "2.9.1+cu130", None)
    assert [e.parent for e in torch.required_by] == ["flashinfer-python", "sglang", "sglang-kernel"]
    assert tool.overrides_applied[-1] == OverrideUse(
        "sglang 0.5.10", "sglang-kernel==0.4.1", "sglang-kernel==0.4.3", tool.overrides[1].reason
    )
    assert [(d.name, d.marker) for d in tool.drops] == [
        ("torch-memory-saver", 'sys_platform == "win32"'),
        ("uvloop", 'sys_platform == "win32"'),
    ]
    assert tool.drops_applied[0].by == "sglang 0.5.10"
    assert tool.checks.imports == ("sgl_kernel", "sglang")
    assert tool.checks.snippets[0].label == "CUDA is available to torch"
    (record,) = tool.build_records.values()
    assert record.provides == ("flash_ops",) and record.torch == ("2.9.1+cu130", "13.0")
    assert record.recipe_name == "sgl-kernel"
    assert tool.load_check == LoadCheck(checked=True, platform="windows x86_64")
    edges = lock.packages[canonicalize_name("sglang-kernel")].required_by
    assert edges == (
        RequiredBy("sglang-kernel==0.4.3"),
        RequiredBy(
            "sglang-kernel==0.4.3",
            canonicalize_name("sglang"),
            "0.5.10",
            (),
            "sglang-kernel==0.4.1",
        ),
    )
    fleet = lockmod.parse(
        expected("fleet-linux"), Path("lockfiles/pylock.toml"), url_wheels=URL_WHEELS
    ).tool
    assert fleet.index_url == "http://10.0.0.1:8000/simple/"
    assert fleet.load_check == LoadCheck(checked=False, skipped="pure Python")
    assert fleet.checks.snippets == (Snippet("import lib"),)
    assert fleet.build_records == {} and fleet.allow_overwrite == ("speedup",)


def test_required_by_edges_keep_their_text() -> None:
    for pair in (
        ["profile", "lib[fast]==1.4.1"],
        ["app 1.2.0", "lib==1.4.1 (by override of lib>=1)"],
        ["torch[cuda,dev] 2.9.1+cu130", "triton>=3"],
    ):
        assert RequiredBy.from_toml(pair).to_toml() == pair
    edge = RequiredBy.from_toml(["torch[cuda,dev] 2.9.1+cu130", "triton>=3"])
    assert (edge.parent, edge.parent_version, edge.parent_extras) == (
        "torch",
        "2.9.1+cu130",
        ("cuda", "dev"),
    )
    assert edge.describe() == "torch[cuda,dev] 2.9.1+cu130 requires triton>=3"
    root = RequiredBy.from_toml(["profile", "lib[fast]==1.4.1"])
    assert root.parent is None and root.requirement == "lib[fast]==1.4.1"


def test_a_table_without_the_later_keys_reads_as_their_defaults() -> None:
    """A lock written before a key existed (no drops, load check, kept installs...) reads
    as it did when each consumer looked the key up with its default."""
    old = {
        "profile": "p",
        "target": {"description": "d", "python-version": "3.12.0", "markers": {}},
        "roots": ["a"],
        "install-order": [["a"]],
        "protections": [{"name": "Torch", "version": "2.9.1"}],
        "digest": "sha256:",
    }
    tool = ToolWh.from_toml(old)
    assert (tool.link_mode, tool.backend, tool.load_check, tool.index_url) == (
        "copy",
        "auto",
        None,
        None,
    )
    assert tool.drops == () and tool.kept_installed == () and tool.checks == Checks()
    assert tool.protections == (LockedProtection(canonicalize_name("torch"), "2.9.1"),)
    assert tool.build_records == {} and tool.needs == () and tool.format == 1


def _with_format(data: bytes, line: bytes) -> bytes:
    return _sealed(_blank_digest(data).replace(b"[tool.wh]\n", b"[tool.wh]\n" + line + b"\n", 1))


def test_a_lock_of_a_newer_format_is_refused_and_format_1_reads_the_same() -> None:
    path = Path("lockfiles/pylock.toml")
    plain = lockmod.parse(expected("fleet-linux"), path, url_wheels=URL_WHEELS)
    explicit = lockmod.parse(
        _with_format(expected("fleet-linux"), b"format = 1"), path, url_wheels=URL_WHEELS
    )
    assert explicit.packages == plain.packages  # the same lock but for its digest
    assert replace(explicit.tool, digest="") == replace(plain.tool, digest="")
    with pytest.raises(LockFormatError) as caught:
        lockmod.parse(
            _with_format(expected("fleet-linux"), b"format = 2"), path, url_wheels=URL_WHEELS
        )
    err = caught.value
    assert err.exit_code == 5
    assert err.message == (
        f"{path}: [tool.wh] format 2 is not one this wh reads (it reads formats 1 to 1)"
    )
    assert err.to_json()["fields"] == {"path": str(path), "format": "2", "supported": 1}
    later = ToolWh(profile="p", format=2).to_toml()
    assert list(later)[:2] == ["format", "profile"] and "format" not in ToolWh().to_toml()


def test_a_malformed_tool_table_is_refused_with_the_lock_named() -> None:
    path = Path("lockfiles/pylock.toml")
    broken = _blank_digest(expected("fleet-linux")).replace(
        b"protections = []", b"protections = [1]"
    )
    digest = hashlib.sha256(broken).hexdigest()
    broken = broken.replace(b'digest = "sha256:"', f'digest = "sha256:{digest}"'.encode(), 1)
    with pytest.raises(LockFormatError, match=r"\[tool.wh\] is malformed"):
        lockmod.parse(broken, path, url_wheels=URL_WHEELS)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (("required-by", 3), "expected an array, found 3"),
        (("required-by", [["profile"]]), "not enough values to unpack"),
        (("extras", [1]), "expected a name, found 1"),
        (("protected", "yes"), "expected true or false, found 'yes'"),
        (("dependencies", [{"nom": "torch"}]), "KeyError: 'name'"),
    ],
    ids=["required-by", "edge", "extras", "protected", "dependency"],
)
def test_a_malformed_package_table_is_refused_with_the_lock_and_package_named(
    edit: tuple[str, object], problem: str
) -> None:
    """A lock whose digest was recomputed after an edit (a digest is no signature): what
    PEP 751 leaves free in a package (its [tool.wh], its dependencies' names) used to
    raise Python's own error from the parser, found by mutating the golden locks."""
    path = Path("lockfiles/pylock.toml")
    doc = tomllib.loads(expected("ocr-win").decode())
    key, value = edit
    pkg = doc["packages"][0]
    if key == "dependencies":
        pkg["dependencies"] = value
    else:
        pkg["tool"]["wh"][key] = value
    data = _blank_digest(tomli_w.dumps(doc).encode())
    digest = hashlib.sha256(data).hexdigest()
    data = data.replace(b'digest = "sha256:"', f'digest = "sha256:{digest}"'.encode(), 1)
    with pytest.raises(LockFormatError) as caught:
        lockmod.parse(data, path)
    assert caught.value.message.startswith(
        f"{path}: [tool.wh] is malformed (package {pkg['name']}: "
    )
    assert problem in caught.value.message


def test_a_lock_written_for_a_live_target_reads_back_to_its_bytes(
    tmp_path: Path, new_venv: Callable[..., Path]
) -> None:
    """The demo: `wh lock ocr-demo` against a venv that has the +cu130 demo-torch (a live
    target: protections carry the RECORD digest; checks, overrides, extra requirements)."""
    spec = importlib.util.spec_from_file_location("demo_run", DEMO / "run.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    house, pre = tmp_path / "wheelhouse", tmp_path / "pre"
    for src in sorted((DEMO / "packages").iterdir()):
        demo.build_wheel(src, pre if src.name == demo.PREINSTALLED else house)
    python = new_venv(sorted(pre.glob("*.whl")))
    path = tmp_path / "pylock.ocr-demo.toml"
    r = run_wh(
        "lock", "ocr-demo", "-c", DEMO / "wh.toml", "--wheelhouse", house,
        "--python", python, "--lockfile", path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = path.read_bytes()
    assert _rewritten(data, path) == data
    tool = lockfiles.read(path).tool
    (torch,) = tool.protections
    assert torch.name == "demo-torch" and torch.version == "2.9.1+cu130"
    assert torch.record_sha256 and len(torch.record_sha256) == 64
    assert tool.target is not None and tool.target.platform is None
    assert "platform_release" not in tool.target.markers
    assert [e.requirement for e in tool.extra_requirements] == ["demo-kernels-hub==0.11.7"]


if __name__ == "__main__":  # regenerate the goldens: python -m tests.test_toolwh OUT_DIR
    import tempfile

    for name in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            data = produce(Path(tmp), name)
            out = Path(sys.argv[1]) / f"{name}.toml"
            out.write_bytes(_versionless(data))
            print(out)

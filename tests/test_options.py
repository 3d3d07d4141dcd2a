"""No flag silently ignored: every option of every command (found by click introspection of
installer/wh/cli/main.py) either changes what the command does or is refused with why.

Each (command, option) has one row. ``Diff`` runs the command twice on the same inputs, once
without and once with the option, and asserts that what it did differs (exit code, output,
files written), and where ``shows`` is set that the run with it says what it did;
``Refused`` asserts exit 2 and the reason. Options that matter only in a busy environment run
while another process holds its install lock (``hold``); `wh build` runs ``--check`` on the
real upstream tree (no compiler). A new option without a row fails this test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from wh import __version__
from wh.cli.flags import Rule
from wh.cli.main import cli
from wh.env.environment import venv_python

from tests.envsnap import WH
from tests.factory import make_wheel
from tests.fixtures import make_venv
from tests.indexserver import file_index

REPO = Path(__file__).resolve().parents[1]
UPSTREAM = REPO.parent / "shared" / "upstream" / "sgl-kernel-0.4.0"
HOLD_S = 1.5  # how long a waiting wh waits before the holder lets go


@dataclass(frozen=True)
class Diff:
    base: tuple[str, ...]
    extra: tuple[str, ...]  # appended to base
    replace: tuple[str, ...] = ()  # removed from base first (an option changing value)
    shows: str = ""  # said by the run with the option, not by the one without
    env: tuple[tuple[str, str], ...] = ()  # extra environment for both runs
    hold: str = ""  # a venv whose install lock another process holds meanwhile


@dataclass(frozen=True)
class Refused:
    argv: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class ByTest:
    """Proven by a named test that runs the CLI with the option and without it, where that
    needs what a row cannot give: ``--refresh`` needs an index that sends max-age and a
    release published between two runs (tests/test_fleet.py serves one)."""

    test: str  # module::function
    flag: str


# placeholders filled by the fixture: {H} wheelhouse, {H2} other wheelhouse, {P} the venv
# with torch +cu130, {Q} a bare venv, {F} a venv with the lock installed, {L} the lock of
# profile p for {P}, {O} an output folder (fresh per run), {B} a bundle, {W} wh's wheels
LOCK = ("lock", "p", "--wheelhouse", "{H}", "--python", "{P}", "--lockfile", "{O}/l.toml")
DRY = (
    "install",
    "p",
    "--wheelhouse",
    "{H}",
    "--python",
    "{P}",
    "--lockfile",
    "{O}/l.toml",
    "--dry-run",
)
LOCKED = ("install", "--locked", "--lockfile", "{L}", "--python", "{F}", "--dry-run")
VERIFY = ("verify", "--lockfile", "{L}", "--python", "{F}")
WHY = ("why", "lib", "--lockfile", "{L}")
BUNDLE = (
    "bundle",
    "p",
    "--wheelhouse",
    "{H}",
    "--python",
    "{P}",
    "-o",
    "{O}/b.zip",
    "--wh-wheels",
    "{W}",
)
NOT_LOCKED = "has no effect with --locked/--bundle"
REAL = ("install", "p", "--wheelhouse", "{H}", "--python", "{R}", "--lockfile", "{O}/l.toml")
LOCKED_REAL = ("install", "--locked", "--lockfile", "{L}", "--python", "{F}")
# the real upstream tree, previewed for Windows: no compiler, under a second
BUILD = ("build", "sgl-kernel", "--source", "{U}", "--check", "--target-os", "windows")
BUILD_K = ("build", "{K}", *BUILD[2:])

# {I}: the wheelhouse's wheels as a file:// index (no row of fetch reaches the network)
FETCH = (
    "fetch",
    "p",
    "--wheelhouse",
    "{H}",
    "--platform",
    "manylinux_2_28_x86_64",
    "--python-version",
    "3.11",
    "--index-url",
    "{I}",
)
FETCH_NEW = (*FETCH[:2], "--wheelhouse", "{O}/w", *FETCH[4:])  # downloads into a new folder
EXPORT = ("export", "p")
# {X}: a wheelhouse whose one wheel has an extension module needing a library nothing has
NATIVE = ("-r", "native", "--wheelhouse", "{X}", "--python", "{P}", "--lockfile", "{O}/n.toml")
NATIVE_BUNDLE = ("-r", "native", "--wheelhouse", "{X}", "--python", "{P}", "-o", "{O}/n.zip")
NATIVE_BUNDLE += ("--wh-wheels", "{W}")

ROWS: dict[tuple[str, str], Diff | Refused | ByTest] = {
    # scan
    ("scan", "wheelhouse"): Diff(
        ("scan", "--wheelhouse", "{H}"), ("--wheelhouse", "{H2}"), ("--wheelhouse", "{H}")
    ),
    ("scan", "strict"): Diff(("scan", "--wheelhouse", "{H}"), ("--strict",)),
    ("scan", "as_json"): Diff(("scan", "--wheelhouse", "{H}"), ("--json",)),
    ("scan", "verbose"): Refused(("scan", "-v"), "runs no delegated command"),
    # lock
    ("lock", "profile_name"): Diff(LOCK, ("q",), ("p",)),
    ("lock", "configs"): Diff(LOCK, ("-c", "{C}")),
    ("lock", "requirements"): Diff(LOCK, ("-r", "other")),
    ("lock", "allow_overwrite"): Diff(LOCK, ("--allow-overwrite", "clash-a")),
    ("lock", "extra_requirements"): Diff(LOCK, ("--extra-requirement", "other==1.0")),
    ("lock", "overrides"): Diff(LOCK, ("--override", "lib==1.0")),
    ("lock", "protections"): Diff(LOCK, ("--protect", "torch")),
    ("lock", "imports"): Diff(LOCK, ("--check-import", "app")),
    ("lock", "snippets"): Diff(LOCK, ("--check-snippet", "pass")),
    ("lock", "link_mode"): Diff(LOCK, ("--link-mode", "hardlink")),
    ("lock", "backend"): Diff(LOCK, ("--backend", "pip")),
    ("lock", "lockfile"): Diff(
        LOCK, ("--lockfile", "{O}/other.toml"), ("--lockfile", "{O}/l.toml")
    ),
    ("lock", "wheelhouse"): Diff(LOCK, ("--wheelhouse", "{H2}"), ("--wheelhouse", "{H}")),
    ("lock", "python"): Diff(LOCK, ("--python", "{Q}"), ("--python", "{P}")),
    ("lock", "platform"): Diff(LOCK, ("--platform", "win_amd64")),
    ("lock", "drops"): Diff(LOCK, ("--drop", "lib")),
    ("lock", "skip_load_check"): Diff(("lock", *NATIVE), ("--skip-load-check", "test")),
    ("lock", "allow_missing"): Diff(
        ("lock", *NATIVE), ("--allow-missing-library", "libwhmissing.so.1=test")
    ),
    ("lock", "index_url"): Diff(LOCK, ("--index-url", "http://127.0.0.1:8080/simple/")),
    ("lock", "python_version"): Diff(LOCK, ("--python-version", "3.12")),
    ("lock", "check"): Diff(LOCK, ("--check",)),
    ("lock", "ignore_installed"): Diff(LOCK, ("--ignore-installed",)),
    ("lock", "prereleases"): Diff(LOCK, ("--prereleases", "allow")),
    ("lock", "as_json"): Diff(LOCK, ("--json",)),
    ("lock", "verbose"): Diff(LOCK, ("-v",)),
    # install (dry runs unless the option only matters when installing)
    ("install", "profile_name"): Diff(DRY, ("q",), ("p",)),
    ("install", "configs"): Diff(DRY, ("-c", "{C}")),
    ("install", "requirements"): Diff(DRY, ("-r", "other")),
    ("install", "allow_overwrite"): Diff(
        (*DRY, "-r", "clash-a", "-r", "clash-b"), ("--allow-overwrite", "clash-b")
    ),
    ("install", "extra_requirements"): Diff(DRY, ("--extra-requirement", "other==1.0")),
    ("install", "overrides"): Diff(DRY, ("--override", "lib==1.0")),
    ("install", "protections"): Diff((*DRY, "-r", "torch==2.10.0"), ("--protect", "torch")),
    ("install", "imports"): Diff(DRY, ("--check-import", "app")),
    ("install", "snippets"): Diff(DRY, ("--check-snippet", "pass")),
    ("install", "link_mode"): Diff(DRY, ("--link-mode", "hardlink")),
    ("install", "backend"): Diff(DRY, ("--backend", "pip")),
    ("install", "lockfile"): Diff(DRY, ("--lockfile", "{O}/b.toml"), ("--lockfile", "{O}/l.toml")),
    ("install", "wheelhouse"): Diff(DRY, ("--wheelhouse", "{H2}"), ("--wheelhouse", "{H}")),
    ("install", "python"): Diff(DRY, ("--python", "{Q}"), ("--python", "{P}")),
    ("install", "platform"): Diff(DRY, ("--platform", "win_amd64")),
    ("install", "python_version"): Diff(DRY, ("--python-version", "3.12")),
    ("install", "locked"): Diff(DRY, ("--locked",)),
    ("install", "dry_run"): Diff(REAL, ("--dry-run",)),
    ("install", "reinstall"): Diff(LOCKED, ("--reinstall",)),
    # another process holds {F} for HOLD_S s: the default waits it out, 0.5 s gives up (12)
    ("install", "lock_timeout"): Diff(
        LOCKED_REAL, ("--lock-timeout", "0.5"), shows="gave up after 0.5 s", hold="{F}"
    ),
    ("install", "bundle"): Diff(("install", "--python", "{Q}", "--dry-run"), ("--bundle", "{B}")),
    # a real reinstall: auto unpacks through a throwaway cache (uv's is empty), shared
    # fills uv's cache ({O}/uv: files written)
    ("install", "uv_cache"): Diff(
        (*LOCKED_REAL, "--reinstall"),
        ("--uv-cache", "shared"),
        shows="shared uv cache (--uv-cache shared)",
        env=(("WH_UV_CACHE_DIR", "{O}/uv"),),
    ),
    ("install", "checks_mode"): Diff(
        (*LOCKED_REAL, "--check-import", "no_such_mod"), ("--checks", "warn")
    ),
    ("install", "trust"): Diff(
        ("install", "--bundle", "{B}", "--python", "{Q}", "--dry-run"), ("--trust", "{S}.pub")
    ),
    ("install", "allow_unsigned"): Diff(
        ("install", "--bundle", "{B}", "--python", "{Q}", "--dry-run"), ("--allow-unsigned",)
    ),
    ("install", "as_json"): Diff(DRY, ("--json",)),
    ("install", "drops"): Diff(DRY, ("--drop", "lib")),
    ("install", "skip_load_check"): Diff(
        ("install", *NATIVE, "--dry-run"), ("--skip-load-check", "test")
    ),
    ("install", "allow_missing"): Diff(
        ("install", *NATIVE, "--dry-run"), ("--allow-missing-library", "libwhmissing.so.1=test")
    ),
    ("install", "verbose"): Diff(DRY, ("-v",)),
    # keygen
    ("keygen", "key"): Diff(("keygen", "{O}/k"), ("{O}/k2",), ("{O}/k",)),
    ("keygen", "as_json"): Diff(("keygen", "{O}/k"), ("--json",)),
    ("keygen", "verbose"): Refused(("keygen", "{O}/k", "-v"), "runs no delegated command"),
    # verify
    ("verify", "profile_name"): Diff(("verify", "--python", "{F}"), ("p",)),
    ("verify", "configs"): Refused((*VERIFY, "-c", "{C}"), "has no effect without a PROFILE"),
    ("verify", "requirements"): Refused((*VERIFY, "-r", "x"), "verify, which reads the lock"),
    ("verify", "allow_overwrite"): Refused((*VERIFY, "--allow-overwrite", "x"), "verify reads"),
    ("verify", "extra_requirements"): Refused(
        (*VERIFY, "--extra-requirement", "x"), "verify reads"
    ),
    ("verify", "overrides"): Refused((*VERIFY, "--override", "x==1"), "verify reads the lock"),
    ("verify", "drops"): Refused((*VERIFY, "--drop", "x"), "verify reads the lock"),
    ("verify", "protections"): Diff(VERIFY, ("--protect", "nothere")),
    ("verify", "imports"): Diff(VERIFY, ("--check-import", "no_such_mod")),
    ("verify", "snippets"): Diff(VERIFY, ("--check-snippet", "raise SystemExit(3)")),
    ("verify", "link_mode"): Refused((*VERIFY, "--link-mode", "copy"), "verify reads the lock"),
    ("verify", "backend"): Refused((*VERIFY, "--backend", "uv"), "verify reads the lock"),
    ("verify", "lockfile"): Diff(VERIFY, ("--lockfile", "{O}/none.toml"), ("--lockfile", "{L}")),
    ("verify", "python"): Diff(VERIFY, ("--python", "{Q}"), ("--python", "{F}")),
    ("verify", "as_json"): Diff(VERIFY, ("--json",)),
    ("verify", "verbose"): Diff((*VERIFY, "--check-import", "app"), ("-v",)),
    # why
    ("why", "name"): Diff(WHY, ("app",), ("lib",)),
    ("why", "profile_name"): Diff(("why", "lib"), ("p",)),
    ("why", "lockfile"): Diff(WHY, ("--lockfile", "{O}/none.toml"), ("--lockfile", "{L}")),
    ("why", "libraries"): Diff(WHY, ("--libraries",)),
    ("why", "version"): Diff(
        (*WHY, "--python", "{P}", "--wheelhouse", "{H}"), ("--version", "0.5")
    ),
    ("why", "wheelhouse"): Refused(
        (*WHY, "--wheelhouse", "{H}"), "has no effect without --version"
    ),
    ("why", "python"): Refused((*WHY, "--python", "{P}"), "has no effect without --version"),
    ("why", "platform"): Refused((*WHY, "--platform", "win_amd64"), "without --version"),
    ("why", "python_version"): Refused((*WHY, "--python-version", "3.12"), "without --version"),
    ("why", "as_json"): Diff(WHY, ("--json",)),
    ("why", "verbose"): Refused((*WHY, "-v"), "has no effect without --version"),
    # index
    ("index", "wheelhouse"): Diff(
        ("index", "--wheelhouse", "{H2}"), ("--wheelhouse", "{H3}"), ("--wheelhouse", "{H2}")
    ),
    ("index", "as_json"): Diff(("index", "--wheelhouse", "{H2}"), ("--json",)),
    ("index", "verbose"): Refused(("index", "--wheelhouse", "{H2}", "-v"), "runs no delegated"),
    # recover
    ("recover", "python"): Diff(
        ("recover", "--python", "{F}"), ("--python", "{O}/none"), ("--python", "{F}")
    ),
    ("recover", "lock_timeout"): Diff(
        ("recover", "--python", "{F}"),
        ("--lock-timeout", "0.5"),
        shows="gave up after 0.5 s",
        hold="{F}",
    ),
    ("recover", "as_json"): Diff(("recover", "--python", "{F}"), ("--json",)),
    # bundle
    ("bundle", "sign_key"): Diff(BUNDLE, ("--sign", "{S}")),
    ("bundle", "drops"): Diff(BUNDLE, ("--drop", "lib")),
    ("bundle", "profile_name"): Diff(BUNDLE, ("q",), ("p",)),
    ("bundle", "configs"): Diff(BUNDLE, ("-c", "{C}")),
    ("bundle", "requirements"): Diff(BUNDLE, ("-r", "other")),
    ("bundle", "allow_overwrite"): Diff(BUNDLE, ("--allow-overwrite", "clash-a")),
    ("bundle", "extra_requirements"): Diff(BUNDLE, ("--extra-requirement", "other==1.0")),
    ("bundle", "overrides"): Diff(BUNDLE, ("--override", "lib==1.0")),
    ("bundle", "protections"): Diff(BUNDLE, ("--protect", "torch")),
    ("bundle", "imports"): Diff(BUNDLE, ("--check-import", "app")),
    ("bundle", "snippets"): Diff(BUNDLE, ("--check-snippet", "pass")),
    ("bundle", "link_mode"): Diff(BUNDLE, ("--link-mode", "hardlink")),
    ("bundle", "backend"): Diff(BUNDLE, ("--backend", "pip")),
    ("bundle", "lockfile"): Refused((*BUNDLE, "--lockfile", "x.toml"), "bundle's lock is written"),
    ("bundle", "wheelhouse"): Diff(BUNDLE, ("--wheelhouse", "{H2}"), ("--wheelhouse", "{H}")),
    ("bundle", "python"): Diff(BUNDLE, ("--python", "{Q}"), ("--python", "{P}")),
    ("bundle", "platform"): Diff(BUNDLE, ("--platform", "win_amd64")),
    ("bundle", "python_version"): Diff(BUNDLE, ("--python-version", "3.12")),
    ("bundle", "output"): Diff(BUNDLE, ("-o", "{O}/c.tar"), ("-o", "{O}/b.zip")),
    ("bundle", "wh_wheels"): Diff(BUNDLE, ("--wh-wheels", "{O}/nowheels"), ("--wh-wheels", "{W}")),
    ("bundle", "as_json"): Diff(BUNDLE, ("--json",)),
    ("bundle", "verbose"): Diff(BUNDLE, ("-v",)),
    ("bundle", "skip_load_check"): Diff(("bundle", *NATIVE_BUNDLE), ("--skip-load-check", "test")),
    ("bundle", "allow_missing"): Diff(
        ("bundle", *NATIVE_BUNDLE), ("--allow-missing-library", "libwhmissing.so.1=test")
    ),
    # fetch: online; its profile flags act through the same `_profile` as lock's, proven by
    # the network tests; the flags it cannot use are refused here
    ("fetch", "profile_name"): Diff(FETCH, ("q",), ("p",)),
    ("fetch", "configs"): Diff(FETCH, ("-c", "{C}")),
    ("fetch", "requirements"): Diff(FETCH, ("-r", "other")),
    ("fetch", "extra_requirements"): Diff(FETCH, ("--extra-requirement", "other==1.0")),
    ("fetch", "overrides"): Diff((*FETCH, "--json"), ("--override", "lib==1.0")),
    ("fetch", "protections"): Diff((*FETCH, "--json"), ("--protect", "torch==2.9.1")),
    ("fetch", "wheelhouse"): Diff(FETCH, ("--wheelhouse", "{H2}"), ("--wheelhouse", "{H}")),
    ("fetch", "python"): Diff(FETCH, ("--python", "{P}")),
    ("fetch", "platforms"): Diff(FETCH, ("--platform", "win_amd64")),
    ("fetch", "python_versions"): Diff(FETCH, ("--python-version", "3.12")),
    ("fetch", "index_pins"): Diff(
        (*FETCH, "-r", "absent"), ("--index", "absent=http://127.0.0.1:9/simple")
    ),
    ("fetch", "as_json"): Diff(FETCH, ("--json",)),
    ("fetch", "drops"): Diff((*FETCH, "--json"), ("--drop", "lib")),
    ("fetch", "dry_run"): Diff(FETCH_NEW, ("--dry-run",)),
    ("fetch", "index_url"): Diff(FETCH, ("--index-url", "{I2}"), ("--index-url", "{I}")),
    ("fetch", "jobs"): Diff(FETCH_NEW, ("--jobs", "1")),
    ("fetch", "allow_missing"): ByTest(
        "tests.test_loadcheck::test_fetch_says_the_wheelhouse_would_not_lock_and_keeps_its_wheels",
        "--allow-missing-library",
    ),
    ("fetch", "skip_load_check"): ByTest(
        "tests.test_loadcheck::test_fetch_says_the_wheelhouse_would_not_lock_and_keeps_its_wheels",
        "--skip-load-check",
    ),
    ("fetch", "refresh"): ByTest(
        "tests.test_fleet::test_a_fetch_with_nothing_new_reuses_its_resolution_until_refresh",
        "refresh=True",
    ),
    # export
    ("export", "profile_name"): Diff(EXPORT, ("q",), ("p",)),
    ("export", "lockfile"): Diff(("export",), ("--lockfile", "{L}")),
    ("export", "output"): Diff(EXPORT, ("-o", "{O}/r.txt")),
    ("export", "as_json"): Diff(EXPORT, ("--json",)),
    ("export", "verbose"): Refused((*EXPORT, "-v"), "runs no delegated command"),
    ("fetch", "verbose"): Diff((*FETCH, "--python", "{P}"), ("-v",)),
    ("fetch", "lockfile"): Refused(
        ("fetch", "-r", "x", "--lockfile", "l.toml"), "only downloads wheels"
    ),
    ("fetch", "link_mode"): Refused(("fetch", "-r", "x", "--link-mode", "copy"), "only downloads"),
    ("fetch", "backend"): Refused(("fetch", "-r", "x", "--backend", "uv"), "only downloads"),
    ("fetch", "imports"): Refused(("fetch", "-r", "x", "--check-import", "x"), "only downloads"),
    ("fetch", "snippets"): Refused(("fetch", "-r", "x", "--check-snippet", "x"), "only downloads"),
    ("fetch", "allow_overwrite"): Refused(
        ("fetch", "-r", "x", "--allow-overwrite", "x"), "only downloads"
    ),
    # build: --check previews on the real upstream tree; building for real needs nvcc and
    # minutes (tests/kernel/test_build_whdemo.py builds into --wheelhouse)
    ("build", "recipe"): Diff(BUILD, ("{K}",), ("sgl-kernel",), shows="auto-trigger left"),
    ("build", "variants"): Diff(BUILD, ("--variant", "fa3"), shows="FA3 (sgl-attn hopper/)"),
    ("build", "source"): Diff(
        BUILD, ("--source", "{U}/sgl-kernel"), ("--source", "{U}"), shows="looks like the project"
    ),
    ("build", "wheelhouse"): Refused((*BUILD, "--wheelhouse", "x"), "nothing is built"),
    ("build", "check_only"): Diff(
        tuple(a for a in BUILD if a != "--check"), ("--check",), shows="would be applied"
    ),
    ("build", "as_json"): Diff(BUILD, ("--json",), shows='"guarded_ops"'),
    ("build", "archs"): Diff(BUILD, ("--arch", "89"), shows="gencodes compute_89, sm_89"),
    ("build", "target_os"): Diff(
        BUILD, ("--target-os", "linux"), ("--target-os", "windows"), shows="hidden on linux: 0"
    ),
    # the recipe {K} lacks the operations that fix the gencodes: CUDA 12.8 (not 12.4) adds
    # Blackwell ones through upstream's version trigger
    ("build", "cuda_version"): Diff(
        (*BUILD_K, "--cuda-version", "12.4"),
        ("--cuda-version", "12.8"),
        ("--cuda-version", "12.4"),
        shows="sm_100a",
    ),
    ("build", "emit"): Diff(BUILD, ("--emit", "{O}/tree"), shows="emitted {O}/tree"),
    # the recipe {N} pins another inputs_sha256 than the tree has
    ("build", "allow_unpinned"): Diff(
        ("build", "{N}", "--source", "{U}", "--check", "--target-os", "windows"),
        ("--allow-unpinned",),
        shows="warning: unpinned (--allow-unpinned): inputs_sha256",
    ),
}

# install --locked/--bundle: what the lock fixes is refused (the rows above show that the
# same options act without --locked)
LOCKED_ROWS: dict[str, tuple[str, ...]] = {
    "requirements": ("-r", "x"),
    "extra_requirements": ("--extra-requirement", "x"),
    "overrides": ("--override", "x==1"),
    "allow_overwrite": ("--allow-overwrite", "x"),
    "wheelhouse": ("--wheelhouse", "{H}"),
}


def all_options() -> Iterator[tuple[str, str]]:
    for name, cmd in sorted(cli.commands.items()):
        for p in cmd.params:
            if p.name and p.name != "help":
                yield name, p.name


def test_every_option_of_every_command_has_a_row() -> None:
    have = set(all_options())
    assert have - set(ROWS) == set(), "options with no proof that they act or are refused"
    assert set(ROWS) - have == set(), "rows for options that no longer exist"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("options")
    os.environ.setdefault("WH_CACHE_DIR", str(root / "cache"))
    h, h2, h3 = root / "house", root / "house2", root / "house3"
    make_wheel(h, "app", "1.0", ["lib>=0.5", "torch"])
    make_wheel(h, "lib", "1.0")
    make_wheel(h, "lib", "2.0")
    make_wheel(h, "lib", "3.0rc1")
    make_wheel(h, "other", "1.0")
    make_wheel(h, "torch", "2.9.1")
    make_wheel(h, "torch", "2.10.0")
    make_wheel(h, "clash-a", "1.0", files={"shared.py": b"a = 1\n"})
    make_wheel(h, "clash-b", "1.0", files={"shared.py": b"b = 2\n"})
    (h / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    make_wheel(h2, "app", "1.0", ["lib"])
    make_wheel(h2, "lib", "0.9")
    make_wheel(h3, "lib", "0.8")
    cu = make_wheel(root / "cu", "torch", "2.9.1+cu130")
    (root / "wh.toml").write_text(
        '[profile.p]\nrequirements = ["app"]\n[profile.q]\nrequirements = ["other"]\n'
    )
    (root / "other.toml").write_text('[profile.p]\nrequirements = ["other"]\n')
    tool = root / "tool"
    make_wheel(tool, "wh", __version__)
    (root / "nowheels").mkdir()
    p = make_venv(root / "p", [cu])
    q = make_venv(root / "q")
    f = make_venv(root / "f", [cu])
    make_venv(root / "r", [cu])  # installed into by the one row that really installs
    recipe = (REPO / "installer/wh/kernels/recipes/sgl-kernel.toml").read_text()
    no_gencodes = recipe
    for op in ('switch = "SGL_KERNEL_ENABLE_SM100A"\n', 'op = "gencodes"\n'):
        start = no_gencodes.rindex("[[operations]]", 0, no_gencodes.index(op))
        end = no_gencodes.index("[[operations]]", start + 1)
        no_gencodes = no_gencodes[:start] + no_gencodes[end:]
    (root / "r.toml").write_text(no_gencodes)
    pin = recipe.split('inputs_sha256 = "')[1].split('"')[0]
    (root / "n.toml").write_text(recipe.replace(pin, "0" * 64))
    lock = root / "l.toml"
    runner = CliRunner()
    index = _file_index(h, root / "index")
    old = Path.cwd()
    os.chdir(root)
    try:
        for argv in (
            ["lock", "p", "--wheelhouse", h, "--python", p, "--lockfile", lock],
            ["lock", "p", "--wheelhouse", h, "--python", p],  # lockfiles/pylock.p.toml
            ["install", "--locked", "--lockfile", lock, "--python", f],
            ["bundle", "p", "--wheelhouse", h, "--python", q, "-o", root / "b.zip",
             "--wh-wheels", tool],
            ["keygen", root / "k"],
            ["lock", "q", "--wheelhouse", h, "--python", p],  # lockfiles/pylock.q.toml
        ):  # fmt: skip
            r = runner.invoke(cli, [str(a) for a in argv])
            assert r.exit_code == 0, r.output
    finally:
        os.chdir(old)
    return {
        "root": str(root),
        "H": str(h),
        "H2": str(h2),
        "H3": str(h3),
        "P": str(p),
        "Q": str(q),
        "F": str(f),
        "L": str(lock),
        "C": str(root / "other.toml"),
        "B": str(root / "b.zip"),
        "W": str(tool),
        "S": str(root / "k"),
        "I": index,
        "X": str(_native_house(root / "native")),
        "I2": _file_index(h2, root / "index2"),
        "R": str(venv_python(root / "r")),
        "U": str(UPSTREAM),
        "K": str(root / "r.toml"),
        "N": str(root / "n.toml"),
    }


def _native_house(at: Path) -> Path:
    """A wheelhouse with ``native 1.0``, whose extension module needs ``libwhmissing.so.1``
    (a real ELF file built with gcc; the library is in no wheel and not on the system)."""
    import subprocess

    build = at / "build"
    build.mkdir(parents=True)
    (build / "missing.c").write_text("int wh_missing(void) { return 1; }\n")
    (build / "ext.c").write_text("int wh_missing(void);\nint ext(void) { return wh_missing(); }\n")
    cc = ["gcc", "-shared", "-fPIC"]
    subprocess.run(
        [*cc, "-o", build / "libwhmissing.so.1", build / "missing.c",
         "-Wl,-soname,libwhmissing.so.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [*cc, "-o", build / "ext.so", build / "ext.c", "-Wl,--no-as-needed",
         build / "libwhmissing.so.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    house = at / "house"
    make_wheel(
        house,
        "native",
        "1.0",
        tag="cp311-cp311-linux_x86_64",
        files={"native/__init__.py": b"", "native/_ext.so": (build / "ext.so").read_bytes()},
    )
    return house


def _file_index(house: Path, at: Path) -> str:
    """A copy of ``house``'s wheels served as a static index, by its file:// URL."""
    at.mkdir()
    for w in house.glob("*.whl"):
        if w.name.startswith("broken-"):
            continue
        shutil.copy2(w, at / w.name)
    return file_index(at)


def _fill(argv: Sequence[str], world: dict[str, str], out: Path) -> list[str]:
    return [a.format(**world, O=str(out)) for a in argv]


def _run(
    argv: list[str],
    world: dict[str, str],
    out: Path,
    env: Sequence[tuple[str, str]] = (),
    hold: str = "",
) -> tuple[int, str, dict[str, str]]:
    """Exit code, output (stdout and stderr) and every file written, for one invocation;
    ``hold``: a venv whose install lock another process holds until the command has
    waited HOLD_S s for it.
    `wh build --check` reads only (the build tests prove the tree untouched): the same
    command line, run for several rows, runs once."""
    if argv[0] == "build" and "--emit" not in argv and not env and not hold:
        key = tuple(argv)
        if key not in _READ_ONLY:
            _READ_ONLY[key] = _invoke(argv, world, out, env, hold)
        return _READ_ONLY[key]
    return _invoke(argv, world, out, env, hold)


def _invoke(
    argv: list[str], world: dict[str, str], out: Path, env: Sequence[tuple[str, str]], hold: str
) -> tuple[int, str, dict[str, str]]:
    out.mkdir(parents=True)
    environ = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    environ.update((k, v.format(**world, O=str(out))) for k, v in env)
    logs = out.parent / f".{out.name}.log"
    with logs.open("w+") as log:
        holder = _hold(Path(hold.format(**world)).parent.parent) if hold else None
        child = subprocess.Popen(
            [str(WH), *argv], cwd=world["root"], env=environ, stdout=log, stderr=log, text=True
        )
        try:
            if holder is not None:
                _release_when_waited(child, holder, logs)
            code = child.wait(300)
        finally:
            if holder is not None:
                holder.terminate()
                holder.communicate(timeout=30)  # closes its pipe too
        text = logs.read_text().replace(str(out), "{O}")
    files = {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }
    return code, text, files


def _release_when_waited(
    child: subprocess.Popen[str], holder: subprocess.Popen[str], logs: Path
) -> None:
    """Release the held lock HOLD_S s after ``child`` said it is waiting for it: a child
    with a shorter --lock-timeout has given up by then, one with the default gets it."""
    seen = None
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if seen is None and "waiting for" in logs.read_text():
            seen = time.monotonic()
        if seen is not None and time.monotonic() - seen > HOLD_S:
            holder.terminate()
            return
        time.sleep(0.05)


_READ_ONLY: dict[tuple[str, ...], tuple[int, str, dict[str, str]]] = {}


def _hold(prefix: Path) -> subprocess.Popen[str]:
    """Another process holding ``prefix``'s install lock (as a second wh would) until it is
    ended (or 300 s)."""
    script = (
        "import sys, time\n"
        "from filelock import FileLock\n"
        "lock = FileLock(sys.argv[1]); lock.acquire(); print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(prefix / ".wh-install.lock"), "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _unzip_lock(files: dict[str, str], out: Path) -> dict[str, str]:
    """A bundle's lock (and its signature) decide what it installs: compare them, not the
    archive."""
    import zipfile

    extra: dict[str, str] = {}
    for name in files:
        if name.endswith(".zip"):
            with zipfile.ZipFile(out / name) as zf:
                for n in zf.namelist():
                    if n.endswith((".toml", ".whl", ".sig")):
                        extra[n] = hashlib.sha256(zf.read(n)).hexdigest()
    return extra


DIFF_ROWS = sorted(k for k, v in ROWS.items() if isinstance(v, Diff))


@pytest.mark.parametrize(("command", "option"), DIFF_ROWS, ids=[f"{c}-{o}" for c, o in DIFF_ROWS])
def test_option_changes_behaviour(
    world: dict[str, str], tmp_path: Path, command: str, option: str
) -> None:
    row = ROWS[(command, option)]
    assert isinstance(row, Diff)
    if command == "build" and not UPSTREAM.is_dir():
        pytest.skip(f"the real upstream sgl-kernel tree is absent: expected {UPSTREAM}")
    base = list(row.base)
    if row.replace:
        i = next(
            i for i in range(len(base)) if tuple(base[i : i + len(row.replace)]) == row.replace
        )
        del base[i : i + len(row.replace)]
    if option == "dry_run":  # the base is the real install into a bare venv
        first = _fill([*base, *row.extra], world, tmp_path / "a")
        second = _fill(list(row.base), world, tmp_path / "b")
    else:
        first = _fill(list(row.base), world, tmp_path / "a")
        second = _fill([*base, *row.extra], world, tmp_path / "b")
    a = _run(first, world, tmp_path / "a", row.env, row.hold)
    b = _run(second, world, tmp_path / "b", row.env, row.hold)
    if row.shows:
        with_it, without = (a, b) if option == "dry_run" else (b, a)
        shows = row.shows.format(**world, O="{O}")
        assert shows in with_it[1], with_it[1]
        assert shows not in without[1], without[1]
    if command == "bundle":
        a = (a[0], a[1], {**a[2], **_unzip_lock(a[2], tmp_path / "a")})
        b = (b[0], b[1], {**b[2], **_unzip_lock(b[2], tmp_path / "b")})
        a = (a[0], "", {k: v for k, v in a[2].items() if not k.endswith(".zip")})
        b = (b[0], "", {k: v for k, v in b[2].items() if not k.endswith(".zip")})
        if option in ("as_json", "verbose", "output"):
            a, b = _run(first, world, tmp_path / "c"), _run(second, world, tmp_path / "d")
            a = (a[0], a[1].replace("{O}/b.zip", ""), {})
            b = (b[0], b[1].replace("{O}/c.tar", ""), {})
    assert a != b, f"{command} {option}: same exit code, output and files with and without it"
    assert "Traceback" not in a[1] + b[1]


BY_TEST = sorted(k for k, v in ROWS.items() if isinstance(v, ByTest))


@pytest.mark.parametrize(("command", "option"), BY_TEST, ids=[f"{c}-{o}" for c, o in BY_TEST])
def test_option_is_proven_by_a_named_test(command: str, option: str) -> None:
    import importlib
    import inspect

    row = ROWS[(command, option)]
    assert isinstance(row, ByTest)
    module, func = row.test.split("::")
    fn = getattr(importlib.import_module(module), func)
    assert row.flag in inspect.getsource(fn), f"{row.test} does not use {row.flag}"


REFUSED_ROWS = sorted(k for k, v in ROWS.items() if isinstance(v, Refused))


@pytest.mark.parametrize(
    ("command", "option"), REFUSED_ROWS, ids=[f"{c}-{o}" for c, o in REFUSED_ROWS]
)
def test_option_is_refused_with_why(
    world: dict[str, str], tmp_path: Path, command: str, option: str
) -> None:
    row = ROWS[(command, option)]
    assert isinstance(row, Refused)
    if command == "build" and not UPSTREAM.is_dir():
        pytest.skip(f"the real upstream sgl-kernel tree is absent: expected {UPSTREAM}")
    code, text, files = _run(_fill(row.argv, world, tmp_path / "o"), world, tmp_path / "o")
    assert code == 2, text
    assert row.reason in text, text
    assert files == {}
    # and `--help` does not offer an option the command never uses
    cmd = cli.commands[command]
    param = next(p for p in cmd.params if p.name == option)
    assert isinstance(param, click.Option)
    helptext = CliRunner().invoke(cli, [command, "--help"]).output
    always = not any(r.param == option and r.when is not None for r in _rules(command))
    if always:
        assert param.hidden and param.opts[-1] not in helptext.split()


def _rules(command: str) -> tuple[Rule, ...]:
    from wh.cli import flags as cli_flags

    table = {
        "install": cli_flags.INSTALL,
        "verify": cli_flags.VERIFY,
        "fetch": cli_flags.FETCH,
        "bundle": cli_flags.BUNDLE,
        "why": cli_flags.WHY,
        "scan": cli_flags.SCAN,
        "index": cli_flags.INDEX,
        "build": cli_flags.BUILD,
    }
    return tuple(table.get(command, ()))


@pytest.mark.parametrize("option", sorted(LOCKED_ROWS))
@pytest.mark.parametrize("mode", ["--locked", "--bundle"])
def test_locked_install_refuses_what_the_lock_fixes(
    world: dict[str, str], tmp_path: Path, option: str, mode: str
) -> None:
    where = ("--lockfile", "{L}") if mode == "--locked" else ("--bundle", "{B}")
    head = ("install", mode if mode == "--locked" else "", *where, "--python", "{F}")
    argv = tuple(a for a in head if a) + LOCKED_ROWS[option]
    code, text, _files = _run(_fill(argv, world, tmp_path / "o"), world, tmp_path / "o")
    assert code == 2, text
    assert NOT_LOCKED in text and "re-lock" in text


# refusals that hold only in one mode (the option acts elsewhere: rows above)
CONDITIONAL = [
    (("why", "lib", "p", "--lockfile", "{L}"), "[PROFILE] has no effect with --lockfile"),
    (
        ("install", "--bundle", "{B}", "--lockfile", "{L}", "--python", "{F}"),
        "--lockfile has no effect with --bundle",
    ),
    (
        ("install", "--locked", "--lockfile", "{L}", "--python", "{F}", "-c", "{C}"),
        "--config has no effect with --locked and no PROFILE",
    ),
    (
        (
            "install",
            "--locked",
            "--lockfile",
            "{L}",
            "--python",
            "{F}",
            "--backend",
            "pip",
            "--uv-cache",
            "private",
        ),
        "--uv-cache has no effect with --backend pip",
    ),
]


@pytest.mark.parametrize(("argv", "reason"), CONDITIONAL, ids=[r for _a, r in CONDITIONAL])
def test_conditional_refusals(
    world: dict[str, str], tmp_path: Path, argv: tuple[str, ...], reason: str
) -> None:
    code, text, files = _run(_fill(argv, world, tmp_path / "o"), world, tmp_path / "o")
    assert code == 2, text
    assert reason in text and files == {}


def test_the_table_covers_only_real_commands() -> None:
    assert {c for c, _o in ROWS} == set(cli.commands)

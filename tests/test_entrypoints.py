"""entry_points.txt read as the backends read it, and nothing a backend writes that no
RECORD predicted survives an install, in any install mode."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wh.install.backend import uv_binary
from wh.install.entrypoints import as_pip, as_uv, script_names
from wh.wheel.writer import write_wheel

from tests.envsnap import Scene, diff, make_venv, restored, site_packages, snapshot, wh
from tests.factory import make_wheel

# entry_points.txt -> (what uv 0.13.9 created, what pip 26.3 created), as each did in
# real venvs (None: the backend refused the wheel and wrote nothing)
CASES = {
    "header-comment": ("[console_scripts] ; comment\na1 = m:f\n", ["a1"], []),
    "comments": (
        "[console_scripts]\n; b1 = m:f\n# b2 = m:f\nb3 = m:f ; inline\nB4 = m:f\n",
        None,
        [" b1", "b3", "B4"],
    ),
    "section-case": ("[Console_Scripts]\nc1 = m:f\n", [], []),
    "section-spaces": ("[ console_scripts ]\nd1 = m:f\n", [], []),
    "indented-header": ("[console_scripts]\nf1 = m:f\n  [x]\nf2 = m:f\n", ["f1", "f2"], ["f1"]),
    "spaces-in-name": (
        "[console_scripts]\nrem g1 = m:f\n[console_scripts]\ng2=m:f\n",
        None,  # uv: "duplicate section at line 3"
        [" g1", "g2"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_backends_reading_is_modelled(case: str) -> None:
    text, uv, pip = CASES[case]
    assert sorted(as_pip(text)) == sorted(pip)
    if uv is not None:
        assert sorted(as_uv(text)) == sorted(uv)
    assert set(uv or []) | set(pip) <= set(script_names(text.encode()))


def _scripts(venv: Path) -> set[str]:
    return {
        n for n in os.listdir(venv / "bin") if "ctivate" not in n and not n.startswith("python")
    }


@pytest.mark.parametrize("case", ["header-comment", "comments", "indented-header"])
def test_the_real_backends_create_only_predicted_scripts(tmp_path: Path, case: str) -> None:
    """Real uv and real pip install the wheel; every script they create is predicted."""
    text = CASES[case][0]
    wheel = write_wheel(
        tmp_path / "house", "m", "1.0", {"m/__init__.py": b"def f(): pass\n"},
        extra_dist_info={"entry_points.txt": text.encode()},
    )  # fmt: skip
    uv, pip = make_venv(tmp_path / "uv"), make_venv(tmp_path / "pip")
    uv_bin = uv_binary()
    assert uv_bin is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    subprocess.run(
        [uv_bin, "pip", "install", "--offline", "--no-index", "--no-config", "-q",
         "--python", uv / "bin" / "python", wheel],
        env=env, check=False, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", pip / "bin" / "python", "install", "-q",
         "--no-index", "--isolated", wheel],
        env={**env, "PIP_CONFIG_FILE": os.devnull}, check=True, capture_output=True,
    )  # fmt: skip
    predicted = set(script_names(text.encode()))
    assert _scripts(uv) <= predicted
    assert _scripts(pip) <= predicted
    assert _scripts(uv) | _scripts(pip), "the case creates some script"


class Env(Scene):
    """A venv where `other 1.0` owns the script `othertool`."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        write_wheel(
            self.house, "other", "1.0", {"other/__init__.py": b"def main(): pass\n"},
            extra_dist_info={"entry_points.txt": b"[console_scripts]\nothertool = other:main\n"},
        )  # fmt: skip
        self.settle("other", "other.toml")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(tmp_path_factory.mktemp("ep"))


@pytest.fixture
def env(base: Env, tmp_path: Path) -> Iterator[Env]:
    with restored(base.venv, tmp_path):
        yield base


@pytest.mark.parametrize("backend", ["uv", "pip"])
def test_a_script_hidden_behind_a_header_comment_is_a_refused_overwrite(
    env: Env, tmp_path: Path, backend: str
) -> None:
    """`[console_scripts] ; comment` then `othertool = ...`: uv creates `othertool`,
    which `other` owns; wh reads the header as uv does and refuses the overwrite."""
    house = tmp_path / "house"
    write_wheel(
        house, "evil", "1.0", {"evil/__init__.py": b"def x(): pass\n"},
        extra_dist_info={"entry_points.txt": b"[console_scripts] ; hi\nothertool = evil:x\n"},
    )  # fmt: skip
    done = wh("install", "-r", "evil", "--wheelhouse", house, "--python", env.venv,
              "--backend", backend, "--lockfile", house / "l.toml", cwd=env.root)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "othertool" in done.stderr and "other" in done.stderr
    assert "overwrite" in done.stderr
    env.unchanged()  # othertool among them, byte for byte


def _two_batches(house: Path) -> None:
    make_wheel(house, "low", "1.0")
    make_wheel(house, "high", "1.0", ["low"])


@pytest.mark.parametrize(
    ("mode", "args"),
    [
        ("uv-staged", ["-r", "high", "--backend", "uv"]),  # one uv call into .wh-stage
        ("uv-direct", ["-r", "low", "--backend", "uv"]),  # one batch: uv writes in place
        ("pip", ["-r", "high", "--backend", "pip"]),
    ],
)
@pytest.mark.parametrize("where", ["site-packages/evil.pth", "share/stray/x.txt", "bin/stray"])
def test_a_file_no_record_predicted_is_refused_and_removed(
    env: Env, tmp_path: Path, mode: str, args: list[str], where: str
) -> None:
    """As if the backend wrote a file no wheel names (``WH_TEST_FAULT=1:write:PATH``):
    refused with exit 7 naming it, and the rollback removes it."""
    house = tmp_path / "house"
    _two_batches(house)
    sp = site_packages(env.venv)
    stray = (sp / where.split("/", 1)[1]) if where.startswith("site-") else env.venv / where
    # what the message names: the new entry at the top of its folder
    top = {"site-packages/evil.pth": stray, "bin/stray": stray}.get(where, env.venv / "share")
    assert not os.path.lexists(top)
    done = wh("install", "--wheelhouse", house, "--python", env.venv, *args,
              "--lockfile", house / "l.toml", cwd=env.root,
              env={"WH_TEST_FAULT": f"1:write:{stray}"})  # fmt: skip
    assert done.returncode == 7, done.stderr
    assert "the backend wrote 1 path(s) that no wheel predicted; the install was refused" in (
        done.stderr
    )
    assert f"{top}: written, but no wheel's RECORD names it" in done.stderr
    assert "the environment was restored to its state before" in done.stderr
    assert not os.path.lexists(top)
    env.unchanged()


def test_a_script_rewritten_in_place_is_reported(env: Env, tmp_path: Path) -> None:
    """Another distribution's script changed although no wheel names it: refused, and the
    error says its earlier bytes could not be restored (wh never backed them up)."""
    house = tmp_path / "house"
    _two_batches(house)
    tool = env.venv / "bin" / "othertool"
    done = wh("install", "-r", "high", "--wheelhouse", house, "--python", env.venv,
              "--lockfile", house / "l.toml", cwd=env.root,
              env={"WH_TEST_FAULT": f"1:write:{tool}"})  # fmt: skip
    assert done.returncode == 7, done.stderr
    assert f"{tool}: rewritten in place, though no wheel names it" in done.stderr
    assert "could not be restored" in done.stderr
    after = snapshot(env.venv)
    assert diff(env.before, after) == ["changed bin/othertool"]

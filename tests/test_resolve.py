"""The resolver on the mission's own cases: overrides, protections, markers, prereleases."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from wh.errors import ResolutionError
from wh.model.candidates import CandidateIndex
from wh.model.manifest import Manifest, policy
from wh.model.overrides import Applied
from wh.model.pinned import Pinned
from wh.model.profile import Override
from wh.model.requiredby import RequiredBy
from wh.model.resolution import Resolution
from wh.model.target import Target, declared
from wh.model.wheel import Wheel
from wh.resolve.resolver import install_levels, resolve

from tests.factory import as_scanned, wheel_value

LINUX = declared("manylinux_2_28_x86_64", "3.12")
WINDOWS = declared("win_amd64", "3.12")
TORCH_PIN = {
    canonicalize_name("torch"): Pinned(
        canonicalize_name("torch"), Version("2.9.1+cu130"), reason="CUDA 13 build for sm_86"
    )
}


class House:
    """A wheelhouse as values: ``Wheel``s built from metadata, no file written.

    ``wheels`` lists them as a scan of the folder would (``as_scanned``).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._added: list[Wheel] = []

    def add(
        self,
        name: str,
        version: str,
        requires: Iterable[str] = (),
        *,
        tag: str = "py3-none-any",
        extras: Mapping[str, Iterable[str]] | None = None,
    ) -> House:
        self._added.append(
            wheel_value(self.folder, name, version, requires, tag=tag, extras=extras)
        )
        return self

    @property
    def wheels(self) -> list[Wheel]:
        return as_scanned(self._added)


@pytest.fixture
def house() -> House:
    return House(Path("wheelhouse"))


def _resolve(
    house: House,
    *roots: str,
    target: Target = LINUX,
    overrides: Iterable[Override] = (),
    pins: Mapping[NormalizedName, Pinned] | None = None,
    prereleases: str = "if-necessary-or-explicit",
    undeclared: Iterable[NormalizedName] = (),
) -> Resolution:
    manifest = Manifest(
        requirements=tuple(Requirement(r) for r in roots),
        overrides=tuple(overrides),
        prereleases=policy(prereleases),
        undeclared=frozenset(undeclared),
    )
    return resolve(manifest, CandidateIndex.build(house.wheels, target, dict(pins or {})))


def _fails(house: House, *roots: str, target: Target = LINUX, **kw: object) -> str:
    with pytest.raises(ResolutionError) as info:
        _resolve(house, *roots, target=target, **kw)
    return info.value.render()


def _sglang(house: House) -> House:
    return house.add("sglang", "0.5.10", ["sglang-kernel==0.4.1"]).add("sglang-kernel", "0.4.3")


KERNEL_OVERRIDE = Override(Requirement("sglang-kernel==0.4.3"), reason="0.4.3 is ABI compatible")


def test_without_override_a_transitive_pin_missing_from_the_wheelhouse_fails(
    house: House,
) -> None:
    text = _fails(_sglang(house), "sglang")
    assert "sglang 0.5.10 requires sglang-kernel==0.4.1" in text
    assert "version 0.4.3 is refused by sglang 0.5.10 requires sglang-kernel==0.4.1" in text
    assert "--override 'sglang-kernel==0.4.3'" in text


def test_override_applies_to_a_transitive_dependency_and_is_recorded(house: House) -> None:
    res = _resolve(_sglang(house), "sglang", overrides=[KERNEL_OVERRIDE])
    assert res.versions() == {"sglang": "0.5.10", "sglang-kernel": "0.4.3"}
    assert res.applied == (
        Applied(
            "sglang 0.5.10", "sglang-kernel==0.4.1", "sglang-kernel==0.4.3", KERNEL_OVERRIDE.reason
        ),
    )
    assert res.unused_overrides == ()
    (by,) = res.packages[canonicalize_name("sglang-kernel")].required_by
    assert by == RequiredBy(
        "sglang-kernel==0.4.3", canonicalize_name("sglang"), "0.5.10", (), "sglang-kernel==0.4.1"
    )
    assert by.to_toml() == [
        "sglang 0.5.10",
        "sglang-kernel==0.4.3 (by override of sglang-kernel==0.4.1)",
    ]


def test_unused_overrides_are_reported(house: House) -> None:
    unused = Override(Requirement("flashinfer==0.3"), reason="nobody needs it here")
    res = _resolve(_sglang(house), "sglang", overrides=[KERNEL_OVERRIDE, unused])
    assert res.unused_overrides == (unused,)


def test_override_conflicting_with_a_protection_is_refused_naming_both(house: House) -> None:
    house.add("vllm", "0.11.0", ["torch>=2.9"]).add("torch", "2.9.1").add("torch", "2.10.0")
    override = Override(Requirement("torch==2.10.0"), reason="newer kernels")
    text = _fails(house, "vllm", pins=TORCH_PIN, overrides=[override])
    assert "vllm 0.11.0 requires torch==2.10.0 (override of 'torch>=2.9': newer kernels)" in text
    assert "torch is protected: only the installed 2.9.1+cu130 is acceptable" in text
    assert "the override torch==2.10.0 (newer kernels) conflicts with the protection" in text
    assert "torch 2.9.1+cu130 (CUDA 13 build for sm_86)" in text


def test_a_protection_for_a_name_nobody_requires_is_a_no_op(house: House) -> None:
    house.add("a", "1.0")
    res = _resolve(house, "a", pins=TORCH_PIN)
    assert res.versions() == {"a": "1.0"}
    assert res.pins == {}


@pytest.mark.parametrize("requirement", ["torch", "torch==2.9.1", "torch>=2.9", "torch<2.10"])
def test_protected_install_satisfies_requirements_its_version_meets(
    house: House, requirement: str
) -> None:
    house.add("torch", "2.9.1").add("torch", "2.10.0")
    res = _resolve(house, requirement, pins=TORCH_PIN)
    chosen = res.packages[canonicalize_name("torch")].candidate
    assert (str(chosen.version), chosen.pinned, chosen.wheel) == ("2.9.1+cu130", True, None)
    assert set(res.pins) == {"torch"}


def test_protected_install_satisfies_a_transitive_public_pin(house: House) -> None:
    house.add("vllm", "0.11.0", ["torch==2.9.1"]).add("torch", "2.9.1").add("torch", "2.10.0")
    assert _resolve(house, "vllm", pins=TORCH_PIN).versions() == {
        "torch": "2.9.1+cu130",
        "vllm": "0.11.0",
    }


@pytest.mark.parametrize(
    ("requirement", "why"),
    [
        ("torch>=2.10", "refused by profile requires torch>=2.10"),
        ("torch>2.9.1", "PEP 440: >2.9.1 never admits local builds of 2.9.1 such as +cu130"),
        ("torch==2.9.1+cpu", "the local label +cu130 differs from the +cpu"),
    ],
)
def test_protected_install_refuses_requirements_it_does_not_meet(
    house: House, requirement: str, why: str
) -> None:
    house.add("torch", "2.9.1").add("torch", "2.10.0")
    text = _fails(house, requirement, pins=TORCH_PIN)
    assert f"profile requires {requirement}" in text
    assert "torch is protected: only the installed 2.9.1+cu130 is acceptable" in text
    assert why in text
    assert "torch-2.10.0-py3-none-any.whl: would replace the protected installed torch" in text
    assert "torch is protected at 2.9.1+cu130 (CUDA 13 build for sm_86)" in text


def test_override_extras_join_the_extras_of_the_original_requirement(house: House) -> None:
    house.add("sglang", "0.5.10", ["sglang-kernel[cuda]==0.4.1"])
    house.add("sglang-kernel", "0.4.3", extras={"cuda": ["cuda-rt"], "debug": ["dbg-tools"]})
    house.add("cuda-rt", "13.0").add("dbg-tools", "1.0")
    override = Override(Requirement("sglang-kernel[debug]==0.4.3"), reason="debug build")
    res = _resolve(house, "sglang", overrides=[override])
    assert res.versions() == {
        "cuda-rt": "13.0",
        "dbg-tools": "1.0",
        "sglang": "0.5.10",
        "sglang-kernel": "0.4.3",
    }
    assert res.packages[canonicalize_name("sglang-kernel")].extras == {"cuda", "debug"}
    assert res.applied[0].replacement == "sglang-kernel[cuda,debug]==0.4.3"


def test_markers_are_evaluated_for_the_declared_target(house: House) -> None:
    house.add("app", "1.0", ["pywin32; sys_platform == 'win32'", "uvloop; sys_platform == 'linux'"])
    house.add("pywin32", "311", tag="cp312-cp312-win_amd64")
    house.add("uvloop", "0.21", tag="cp312-cp312-manylinux_2_17_x86_64")
    assert _resolve(house, "app", target=WINDOWS).versions() == {"app": "1.0", "pywin32": "311"}
    assert _resolve(house, "app", target=LINUX).versions() == {"app": "1.0", "uvloop": "0.21"}


def test_the_wheel_marker_decides_whether_an_overridden_dependency_applies(house: House) -> None:
    house.add("app", "1.0", ["uvloop==0.19; sys_platform == 'linux'"]).add("uvloop", "0.21")
    override = Override(Requirement("uvloop==0.21"), reason="py3.12 support")
    assert _resolve(house, "app", target=LINUX, overrides=[override]).versions() == {
        "app": "1.0",
        "uvloop": "0.21",
    }
    res = _resolve(house, "app", target=WINDOWS, overrides=[override])
    assert res.versions() == {"app": "1.0"}
    assert res.unused_overrides == (override,)


def test_an_override_marker_restricts_where_it_applies(house: House) -> None:
    house.add("app", "1.0", ["b==2.0"]).add("b", "1.0").add("b", "2.0")
    override = Override(Requirement("b==1.0; sys_platform == 'win32'"), reason="win bug")
    win = _resolve(house, "app", target=WINDOWS, overrides=[override])
    assert win.versions() == {"app": "1.0", "b": "1.0"}
    assert [a.replacement for a in win.applied] == ["b==1.0"]
    linux = _resolve(house, "app", target=LINUX, overrides=[override])
    assert linux.versions() == {"app": "1.0", "b": "2.0"}
    assert linux.unused_overrides == (override,)


def test_local_versions_follow_pep_440(house: House) -> None:
    house.add("torch", "2.9.1+cu130").add("torch", "2.9.1+cpu")
    assert _resolve(house, "torch==2.9.1").versions() == {"torch": "2.9.1+cu130"}
    assert _resolve(house, "torch==2.9.1+cpu").versions() == {"torch": "2.9.1+cpu"}
    assert _resolve(house, "torch<=2.9.1").versions() == {"torch": "2.9.1+cu130"}
    text = _fails(house, "torch<2.9.1")
    assert "PEP 440: <2.9.1 never admits local builds of 2.9.1" in text


@pytest.mark.parametrize(
    ("policy", "root", "expected"),
    [
        ("if-necessary-or-explicit", "a", "1.0"),
        ("if-necessary-or-explicit", "a>=1.0a1", "1.0"),  # a final release still wins
        ("if-necessary-or-explicit", "a>1.0", "2.0b1"),  # only a prerelease is in range
        ("allow", "a", "2.0b1"),
        ("disallow", "a", "1.0"),
    ],
)
def test_prerelease_policy(house: House, policy: str, root: str, expected: str) -> None:
    house.add("a", "0.9").add("a", "1.0").add("a", "2.0b1")
    assert _resolve(house, root, prereleases=policy).versions() == {"a": expected}


def test_disallowed_prereleases_are_never_chosen(house: House) -> None:
    house.add("a", "2.0b1")
    text = _fails(house, "a", prereleases="disallow")
    assert "a-2.0b1-py3-none-any.whl: 2.0b1 is a prerelease, and they are disallowed" in text


def test_a_prerelease_is_the_fallback_when_final_releases_conflict(house: House) -> None:
    house.add("a", "1.0", ["b<1"]).add("a", "2.0b1", ["b>=1"]).add("b", "1.0")
    assert _resolve(house, "a").versions() == {"a": "2.0b1", "b": "1.0"}


def test_unknown_prerelease_policy_is_refused(house: House) -> None:
    house.add("a", "1.0")
    with pytest.raises(ValueError, match="prereleases must be one of"):
        _resolve(house, "a", prereleases="sometimes")


def test_answer_does_not_depend_on_the_order_of_wheels(house: House) -> None:
    house.add("app", "1.0", ["b", "c[x]"]).add("app", "2.0", ["b<2", "c>=2"])
    house.add("b", "1.0", ["c<3"]).add("b", "2.0", ["c>=3"])
    for v in ("1.0", "2.0", "3.0"):
        house.add("c", v, extras={"x": ["d"]})
    house.add("c", "2.0", tag="cp312-cp312-manylinux_2_17_x86_64")
    house.add("d", "1.0").add("d", "1.0+local")
    wheels = house.wheels
    manifest = Manifest(requirements=(Requirement("app"),))
    expected = resolve(manifest, CandidateIndex.build(wheels, LINUX, {}))
    assert expected.versions() == {"app": "2.0", "b": "1.0", "c": "2.0"}
    chosen_c = expected.packages[canonicalize_name("c")].candidate.wheel
    assert chosen_c is not None and "manylinux" in chosen_c.filename
    for seed in range(5):
        shuffled = list(wheels)
        random.Random(seed).shuffle(shuffled)
        again = resolve(manifest, CandidateIndex.build(shuffled, LINUX, {}))
        assert again == expected


def test_install_levels_put_dependencies_first_and_cycles_together() -> None:
    n = canonicalize_name
    graph = {n("app"): {n("b")}, n("b"): {n("c")}, n("c"): {n("b")}, n("d"): set()}
    assert install_levels(graph) == ((n("b"), n("c"), n("d")), (n("app"),))


def test_undeclared_roots_come_before_the_other_roots_in_the_install_order(
    house: House,
) -> None:
    # kernels sits on a deeper chain than the root app: by depth alone it would come later
    house.add("app", "1").add("kernels", "0.11.7", ["huggingface-hub"])
    house.add("huggingface-hub", "1", ["filelock"]).add("filelock", "3")
    plain = _resolve(house, "app", "kernels")
    assert plain.levels == (("app", "filelock"), ("huggingface-hub",), ("kernels",))
    said = _resolve(house, "app", "kernels", undeclared=[canonicalize_name("kernels")])
    assert said.levels == (("filelock",), ("huggingface-hub",), ("kernels",), ("app",))

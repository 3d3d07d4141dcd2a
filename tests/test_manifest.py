"""The Manifest, the resolver's one input: built from a profile, pins per target, stand-ins,
the one prerelease rule. From values: no wheel file is written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from wh.errors import ProfileError, ProtectionError, ResolutionError
from wh.model.candidates import CandidateIndex
from wh.model.choices import Prereleases
from wh.model.installed import InstalledDist
from wh.model.manifest import Manifest, StandIns, order_prereleases
from wh.model.profile import Profile
from wh.model.target import declared
from wh.model.wheel import Wheel, WheelMeta, to_wheel
from wh.resolve.resolver import resolve

LINUX = declared("manylinux_2_28_x86_64", "3.12")
N = canonicalize_name


def _wheel(name: str, version: str, *requires: str) -> Wheel:
    meta = WheelMeta(f"{name}-{version}-py3-none-any.whl", name, version, requires, None, ())
    return to_wheel(Path("/nowhere") / meta.filename, meta, 1, "0" * 64)


def _dist(name: str, version: str) -> InstalledDist:
    return InstalledDist(N(name), name, Version(version), (), None, None, "pip")


def test_a_manifest_of_a_profile_carries_its_roots_overrides_drops_and_protections() -> None:
    profile = Profile("p").with_flags(
        requirements=["app"],
        extra_requirements=["kernels==0.11.7"],
        overrides=["lib>=2"],
        drops=["uvloop; sys_platform == 'win32'"],
        protections=["torch==2.9.1+cu130"],
    )
    m = Manifest.of(profile, prereleases="allow", keep_installed=False)
    assert [str(r) for r in m.requirements] == ["app", "kernels==0.11.7"]
    assert m.undeclared == {"kernels"}
    assert list(m.override_map) == ["lib"] and list(m.drop_map) == ["uvloop"]
    assert [(p.name, str(p.version)) for p in m.protections] == [("torch", "2.9.1+cu130")]
    assert m.prereleases is Prereleases.ALLOW and not m.keep_installed and m.profile is profile
    with pytest.raises(ValueError, match="prereleases must be one of"):
        Manifest.of(profile, prereleases="sometimes")


def test_the_prerelease_word_becomes_the_policy_once_where_the_manifest_is_made() -> None:
    """``Manifest.of`` turns the word (the CLI's, the profile's) into the member; the
    manifest keeps the member as given, and a copy of it is the same value."""
    profile = Profile("p").with_flags(requirements=["app"])
    for word in Prereleases.values():
        m = Manifest.of(profile, prereleases=word)
        assert m.prereleases is Prereleases(word) and type(m.prereleases) is Prereleases
        assert Manifest.of(profile, prereleases=Prereleases(word)) == m
        assert replace(m, keep_installed=False).prereleases is m.prereleases
    assert Manifest.of(profile).prereleases is Prereleases.IF_NECESSARY_OR_EXPLICIT
    with pytest.raises(ValueError, match=r"one of \('if-necessary-or-explicit', 'allow'"):
        Manifest.of(profile, prereleases="Allow")


def test_protections_become_pins_per_target() -> None:
    m = Manifest.of(Profile("p").with_flags(requirements=["app"], protections=["torch"]))
    wheels = [_wheel("torch", "2.9.1", "filelock")]
    live = {N("torch"): _dist("torch", "2.9.0")}
    pins, absent = m.pins_for(LINUX, live, wheels)
    assert pins[N("torch")].version == Version("2.9.0") and absent == set()
    # absent from the environment and no exact build named: the lock must refuse it later
    assert m.pins_for(LINUX, {}, wheels) == ({}, {N("torch")})
    with pytest.raises(ProfileError, match="needs a version for a declared target"):
        m.pins_for(LINUX, None, wheels)

    exact = Manifest.of(Profile("p").with_flags(protections=["torch==2.9.1"]))
    pins, absent = exact.pins_for(LINUX, {}, wheels)  # the named build installs from its wheel
    assert [str(r) for r in pins[N("torch")].requires] == ["filelock"] and absent == set()
    with pytest.raises(ProtectionError, match=r"protects torch 2\.9\.1 but /venv has torch"):
        exact.pins_for(LINUX, live, wheels, "/venv")


def test_preferences_are_the_other_installed_distributions_unless_turned_off() -> None:
    m = Manifest.of(Profile("p").with_flags(requirements=["app"], protections=["torch"]))
    live = {N("torch"): _dist("torch", "2.9.0"), N("numpy"): _dist("numpy", "2.1")}
    pins, _ = m.pins_for(LINUX, live, [])
    assert list(m.preferences(live, pins)) == ["numpy"]
    assert Manifest(keep_installed=False).preferences(live, pins) == {}
    assert m.preferences(None, pins) == {}


def test_stand_ins_resolve_named_or_absent_names_to_what_is_never_locked() -> None:
    wheels = [_wheel("app", "1.0", "gone", "lib"), _wheel("lib", "1.0", "gone2")]
    index = CandidateIndex.build(wheels, LINUX, {})
    roots = (Requirement("app"),)
    with pytest.raises(ResolutionError):
        resolve(Manifest(requirements=roots), index, hints=False)
    res = resolve(Manifest(requirements=roots, stand_ins=StandIns(absent=True)), index)
    assert sorted(res.packages) == ["app", "lib"]
    assert {n: [e.parent_text for e in by] for n, by in res.unavailable.items()} == {
        "gone": ["app 1.0"],
        "gone2": ["lib 1.0"],
    }
    # named stand-ins stand in for a name even where wheels of it exist
    named = StandIns(frozenset({N("lib"), N("gone")}))
    res = resolve(Manifest(requirements=roots, stand_ins=named), index)
    assert sorted(res.packages) == ["app"] and sorted(res.unavailable) == ["gone", "lib"]


def test_one_prerelease_rule_orders_any_items() -> None:
    versions = [Version(v) for v in ("2.0b1", "1.5", "1.0a1", "1.0")]
    same = lambda v: v  # noqa: E731
    assert order_prereleases(versions, "allow", same) == versions
    assert [str(v) for v in order_prereleases(versions, "if-necessary-or-explicit", same)] == [
        "1.5",
        "1.0",
        "2.0b1",
        "1.0a1",
    ]
    assert [str(v) for v in order_prereleases(versions, "disallow", same)] == ["1.5", "1.0"]

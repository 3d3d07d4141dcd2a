"""Every unsatisfiable answer says who asked for what, what the wheelhouse had, and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.utils import canonicalize_name as N
from packaging.version import Version
from wh.app import lockfiles
from wh.app.hooks import TargetSpec
from wh.app.lock import do_lock
from wh.app.why import explain, why
from wh.errors import LockMissingError, NotInLockError, ResolutionError
from wh.model import lockfile as lockmod
from wh.model.candidates import CandidateIndex
from wh.model.manifest import Manifest
from wh.model.profile import Override, Profile, default_lock_path
from wh.model.target import declared
from wh.model.wheel import Wheel
from wh.resolve.resolver import resolve

from tests.factory import as_scanned, make_wheel, wheel_value
from tests.scenarios import load, scenarios_root

LINUX = declared("manylinux_2_28_x86_64", "3.12")
ROOT = scenarios_root()
# Where the wheels built as values would be: no file is written there.
HOUSE = Path("wheelhouse")


def _manifest(*roots: str) -> Manifest:
    return Manifest(requirements=tuple(Requirement(r) for r in roots))


def _scenario_error(sid: str) -> ResolutionError:
    if ROOT is None:
        pytest.skip("the shared resolver scenarios are absent")
    sc = load(ROOT / sid, ROOT)
    wheels = sc.wheels()
    with pytest.raises(ResolutionError) as info:
        manifest = Manifest(requirements=tuple(sc.roots()), prereleases=sc.prereleases)
        resolve(manifest, CandidateIndex.build(wheels, sc.target(), {}))
    return info.value


# (scenario, lines the explanation must hold: requirements, chains, per-wheel reasons, hint)
SCENARIO_MESSAGES = [
    (
        "local/local-transitive-conflicting.toml",
        [
            "cannot satisfy the requirements on b from the wheelhouse (requested by a 1.0.0, "
            "profile)",
            "- a 1.0.0 requires b==2.0.0+bar",
            "(a 1.0.0 is in play because: profile requires a)",
            "- profile requires b==2.0.0+foo",
            "b-2.0.0+bar-py3-none-any.whl: version 2.0.0+bar is refused by profile requires "
            "b==2.0.0+foo (the local label +bar differs from the +foo that ==2.0.0+foo asks for)",
            "b-2.0.0+foo-py3-none-any.whl: version 2.0.0+foo is refused by a 1.0.0 requires "
            "b==2.0.0+bar",
        ],
    ),
    (
        "local/local-greater-than.toml",
        [
            "a-1.2.3+foo-py3-none-any.whl: version 1.2.3+foo is refused by profile requires "
            "a>1.2.3 (PEP 440: >1.2.3 never admits local builds of 1.2.3 such as +foo)",
            "only the profile asks for a (a>1.2.3)",
        ],
    ),
    (
        "requires_python/python-greater-than-current.toml",
        [
            "- profile requires a==1.0.0",
            "a-1.0.0-py3-none-any.whl: Requires-Python >=3.10 excludes Python 3.9.0",
            "no wheel of a fits the target",
        ],
    ),
    (
        "wheels/no-sdist-no-wheels-with-matching-platform.toml",
        [
            "a-1.0.0-py3-none-macosx_10_0_ppc64.whl: tag py3-none-macosx_10_0_ppc64 does not "
            "fit x86_64-manylinux2014 / CPython 3.12",
        ],
    ),
    (
        "does_not_exist/transitive-requires-package-does-not-exist.toml",
        [
            "- a 1.0.0 requires b",
            "(a 1.0.0 is in play because: profile requires a)",
            "the wheelhouse has no wheel named b",
            "hint: add a wheel of b to the wheelhouse",
        ],
    ),
    (
        "excluded/excluded-only-compatible-version.toml",
        [
            "- a 1.0.0 requires b==1.0.0",
            "- a 3.0.0 requires b==3.0.0",
            "- profile requires b<3.0.0,>=2.0.0",
            "b-2.0.0-py3-none-any.whl: version 2.0.0 is refused by a 1.0.0 requires b==1.0.0; "
            "a 3.0.0 requires b==3.0.0",
        ],
    ),
    (
        "extras/extra-incompatible-with-extra.toml",
        [
            "- a[extra-b,extra-c] 1.0.0 requires b==1.0.0",
            "- a[extra-b,extra-c] 1.0.0 requires b==2.0.0",
            "is in play because: profile requires a[extra_b,extra_c]",
        ],
    ),
]


@pytest.mark.parametrize(("sid", "lines"), SCENARIO_MESSAGES, ids=[s for s, _ in SCENARIO_MESSAGES])
def test_scenario_explanations(sid: str, lines: list[str]) -> None:
    text = _scenario_error(sid).render()
    for line in lines:
        assert line in text, f"missing {line!r} in:\n{text}"


def test_explanation_shows_the_whole_chain_from_the_profile() -> None:
    wheels = as_scanned(
        [
            wheel_value(HOUSE, "app", "1.0", ["mid>=1"]),
            wheel_value(HOUSE, "mid", "1.0", ["leaf==1.0"]),
            wheel_value(HOUSE, "other", "1.0", ["leaf==2.0"]),
            wheel_value(HOUSE, "leaf", "1.0"),
            wheel_value(HOUSE, "leaf", "2.0"),
        ]
    )
    with pytest.raises(ResolutionError) as info:
        resolve(_manifest("app", "other"), CandidateIndex.build(wheels, LINUX, {}))
    err = info.value
    assert err.message == (
        "cannot satisfy the requirements on leaf from the wheelhouse "
        "(requested by mid 1.0, other 1.0)"
    )
    assert (
        "      (mid 1.0 is in play because: profile requires app; app 1.0 requires mid>=1)"
        in err.details
    )
    assert "      (other 1.0 is in play because: profile requires other)" in err.details
    assert "--override 'leaf==2.0'" in err.hint
    assert err.to_json()["exit_code"] == 4


def test_explanation_names_the_override_that_caused_the_conflict() -> None:
    wheels = as_scanned(
        [
            wheel_value(HOUSE, "sglang", "0.5.10", ["sglang-kernel==0.4.1"]),
            wheel_value(HOUSE, "sglang-kernel", "0.4.3"),
        ]
    )
    override = Override(Requirement("sglang-kernel==0.4.5"), reason="needs the 0.4.5 fix")
    with pytest.raises(ResolutionError) as info:
        resolve(
            Manifest(requirements=(Requirement("sglang"),), overrides=(override,)),
            CandidateIndex.build(wheels, LINUX, {}),
        )
    text = info.value.render()
    assert (
        "sglang 0.5.10 requires sglang-kernel==0.4.5 "
        "(override of 'sglang-kernel==0.4.1': needs the 0.4.5 fix)"
    ) in text
    assert "version 0.4.3 is refused by sglang 0.5.10 requires sglang-kernel==0.4.5" in text
    assert "the override for sglang-kernel (sglang-kernel==0.4.5) is part of the conflict" in text
    assert "a version the wheelhouse has: 0.4.3" in text


def test_explanation_names_the_rejected_wheel_of_a_version_another_wheel_provides() -> None:
    wheels = as_scanned(
        [
            wheel_value(HOUSE, "a", "2.0", tag="cp312-cp312-win_amd64"),
            wheel_value(HOUSE, "a", "1.0", tag="cp312-cp312-manylinux_2_17_x86_64"),
        ]
    )
    with pytest.raises(ResolutionError) as info:
        resolve(_manifest("a>=2"), CandidateIndex.build(wheels, LINUX, {}))
    assert info.value.details == (
        "a:",
        "  - profile requires a>=2",
        "  the wheelhouse offers:",
        "    a-1.0-cp312-cp312-manylinux_2_17_x86_64.whl: version 1.0 is refused by profile "
        "requires a>=2",
        "    a-2.0-cp312-cp312-win_amd64.whl: tag cp312-cp312-win_amd64 does not fit "
        "manylinux_2_28_x86_64 / CPython 3.12",
    )
    assert "only the profile asks for a (a>=2)" in info.value.hint


def test_candidate_index_explain_without_labels_reads_as_plain_specifiers() -> None:
    wheels = as_scanned(
        [
            wheel_value(HOUSE, "a", "1.0"),
            wheel_value(HOUSE, "a", "2.0+x"),
        ]
    )
    index = CandidateIndex.build(wheels, LINUX, {})
    assert index.explain(canonicalize_name("a"), [SpecifierSet(">2.0")]) == [
        "a-1.0-py3-none-any.whl: version 1.0 does not satisfy >2.0",
        "a-2.0+x-py3-none-any.whl: version 2.0+x does not satisfy >2.0 (PEP 440: >2.0 never "
        "admits local builds of 2.0 such as +x)",
    ]
    assert index.explain(canonicalize_name("a"), [SpecifierSet(">=1")]) == [
        "a-1.0-py3-none-any.whl: 1.0 satisfies >=1",
        "a-2.0+x-py3-none-any.whl: 2.0+x satisfies >=1",
    ]


# -- wh why: the lock a manifest makes, explained with the same manifest ----------------------


def _why_manifest() -> Manifest:
    profile = Profile("p").with_flags(
        requirements=["app"],
        overrides=["lib>=2"],
        drops=["uvloop; sys_platform == 'linux'"],
    )
    return Manifest.of(profile)


def _why_wheels() -> list[Wheel]:
    return as_scanned(
        [
            wheel_value(HOUSE, "app", "1.0", ["lib<2", "uvloop; sys_platform == 'linux'", "dep"]),
            wheel_value(HOUSE, "dep", "1.0", ["lib>=1"]),
            wheel_value(HOUSE, "lib", "1.5"),
            wheel_value(HOUSE, "lib", "2.1"),
            wheel_value(HOUSE, "uvloop", "0.19"),
        ]
    )


def test_why_explains_the_overrides_and_drops_of_the_resolution_its_manifest_locks() -> None:
    """From values: the manifest's resolution, rendered as its lock and read back, explained;
    each override, drop and chain why reports is one the resolution made."""
    manifest = _why_manifest()
    wheels = _why_wheels()
    resolution = resolve(manifest, CandidateIndex.build(wheels, LINUX, {}))
    path = default_lock_path(manifest.profile.name)
    data = lockmod.render(
        resolution, manifest.profile, LINUX, path, digests={w.path: "0" * 64 for w in wheels}
    )
    lock = lockfiles.from_bytes(data, path)

    lib = explain(lock, "lib")
    assert lib.version == Version("2.1") == resolution.packages[N("lib")].candidate.version
    applied = {(a.by, a.original, a.replacement, a.reason) for a in resolution.applied}
    assert {(a.by, a.original, a.replacement, a.reason) for a in lib.overrides} == applied
    assert {(by, original) for by, original, _, _ in applied} == {
        ("app 1.0", "lib<2"),
        ("dep 1.0", "lib>=1"),
    }
    # the shortest chain from the roots, through the override the resolver applied
    assert [[(x.parent, x.requirement) for x in c] for c in lib.chains] == [
        [("profile", "app"), ("app 1.0", "lib>=2 (by override of lib<2)")]
    ]
    required = {e.text for e in resolution.packages[N("lib")].required_by}
    assert {c[-1].requirement for c in lib.chains} <= required

    uvloop = explain(lock, "uvloop")
    assert N("uvloop") not in resolution.packages and uvloop.only_dropped
    assert [(d.by, d.requirement, d.marker) for d in uvloop.dropped] == [
        (d.by, d.requirement, d.marker) for d in resolution.dropped
    ]
    with pytest.raises(NotInLockError):
        explain(lock, "nothing")


def test_why_finds_the_lock_that_lock_writes_for_the_same_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wh lock` and `wh why` given one manifest: why reads the lock lock wrote (the
    profile's default lock path) and reports what lock reported."""
    monkeypatch.chdir(tmp_path)
    house = tmp_path / "wheelhouse"
    make_wheel(house, "app", "1.0", ["lib<2", "uvloop; sys_platform == 'linux'", "dep"])
    make_wheel(house, "dep", "1.0", ["lib>=1"])
    make_wheel(house, "lib", "1.5")
    make_wheel(house, "lib", "2.1")
    manifest = _why_manifest()
    spec = TargetSpec(None, "manylinux_2_28_x86_64", "3.12")
    made = do_lock(manifest, house, default_lock_path(manifest.profile.name), spec)

    report = why(manifest, "lib", spec)
    assert report.lockfile == made.path == Path("lockfiles/pylock.p.toml")
    assert report.version == made.resolution.packages[N("lib")].candidate.version
    assert [(a.by, a.original, a.replacement) for a in report.overrides] == [
        (a.by, a.original, a.replacement) for a in made.resolution.applied
    ]
    dropped = why(manifest, "uvloop", spec).dropped
    assert [(d.by, d.requirement) for d in dropped] == [
        (d.by, d.requirement) for d in made.resolution.dropped
    ]
    # another manifest's profile names another lock
    other = Manifest.of(Profile("q").with_flags(requirements=["app"]))
    with pytest.raises(LockMissingError):
        why(other, "lib", spec)
    # with --version: why that version was not chosen, against the wheelhouse
    older = why(manifest, "lib", spec, version=Version("1.5"), wheelhouse=house)
    assert older.why_not[0] == "the lock has lib 2.1"
    assert any("1.5 does not satisfy >=2" in line for line in older.why_not)

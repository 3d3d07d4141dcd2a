"""How an install is carried out, decided from values before anything changes: staged or
direct, which uv cache, which link mode; an unsupported combination refused with why."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from wh.errors import InstallError
from wh.install.backend import PipBackend, UvBackend
from wh.install.strategy import (
    Cache,
    Facts,
    Placement,
    Request,
    decide,
    request,
    wants_cached,
)
from wh.install.uvcache import Release, Wheel, release
from wh.model.choices import LinkMode, UvCacheMode

UV = UvBackend.capabilities
PIP = PipBackend.capabilities
STAGE = Path("/venv/.wh-stage")
WHEELS = (
    Wheel(canonicalize_name("torch"), "2.9.1", 900),
    Wheel(canonicalize_name("idna"), "3.2", 100),
)


def _facts(
    batches: int = 3, stageable: bool = True, cached: frozenset[Release] | None = None
) -> Facts:
    return Facts(batches, stageable, STAGE, WHEELS, cached)


def _ask(link: str = "copy", cache: str = "auto") -> Request:
    return Request(LinkMode(link), "--link-mode", UvCacheMode(cache))


def test_uv_stages_a_plan_of_several_batches_into_a_venv_through_a_private_cache() -> None:
    s = decide("uv", UV, _ask(), _facts(cached=frozenset()))
    assert s.placement is Placement.STAGED and s.stage == STAGE
    assert s.cache is Cache.PRIVATE and s.private_cache == STAGE / ".uv-cache"
    assert s.cache_reason == "private uv cache: 0.0 of 0.0 MB of wheels not in uv's cache"
    # each file written once: hardlinked from the throwaway cache, which is then removed
    assert s.link_mode is LinkMode.COPY and s.stage_link_mode is LinkMode.HARDLINK
    assert s.to_json()["placement"] == "staged" and s.to_json()["cache"] == "private"
    assert s.describe().startswith(f"staged (uv writes every wheel into {STAGE} at once")


def test_a_filled_uv_cache_is_shared() -> None:
    s = decide("uv", UV, _ask(), _facts(cached=frozenset({release("torch", "2.9.1")})))
    assert s.placement is Placement.STAGED and s.cache is Cache.SHARED
    assert s.private_cache is None and s.stage_link_mode is LinkMode.COPY


def test_another_link_mode_links_into_the_users_cache() -> None:
    s = decide("uv", UV, _ask("hardlink", "private"), _facts())
    assert s.cache is Cache.SHARED and s.private_cache is None
    assert s.cache_reason == "shared uv cache: link mode hardlink links into it"
    assert s.stage_link_mode is LinkMode.HARDLINK


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        (_facts(batches=1), "one batch: one uv call"),
        (_facts(batches=0), "nothing to install"),
        (_facts(stageable=False), "not a venv with every install folder under its prefix"),
    ],
)
def test_uv_installs_directly_through_its_own_cache_when_staging_gains_nothing_or_cannot(
    facts: Facts, why: str
) -> None:
    s = decide("uv", UV, _ask(cache="private"), facts)
    assert s.placement is Placement.DIRECT and s.stage is None
    assert why in s.placement_reason
    assert s.cache is Cache.SHARED and s.private_cache is None


def test_pip_installs_directly_and_through_no_uv_cache() -> None:
    s = decide("pip", PIP, _ask(cache="private"), _facts())
    assert s.placement is Placement.DIRECT and s.cache is Cache.NONE
    assert s.describe() == (
        "direct (pip installs into the environment only: one call per batch); "
        "pip unpacks through no uv cache"
    )


@pytest.mark.parametrize("link", ["hardlink", "symlink", "clone"])
def test_pip_with_a_link_mode_is_refused_naming_the_rule_the_source_and_the_fix(
    link: str,
) -> None:
    with pytest.raises(InstallError) as err:
        decide(
            "pip",
            PIP,
            Request(LinkMode(link), "the lock's link-mode (l.toml)", UvCacheMode.AUTO),
            _facts(),
        )
    assert err.value.exit_code == 7  # installer backend (README's exit codes)
    assert err.value.message == (
        f"pip cannot install with link mode {link!r} (it supports: copy), which the lock's "
        "link-mode (l.toml) asks for; nothing was changed"
    )
    assert err.value.hint == "use --backend uv, or --link-mode copy"


def test_the_user_cache_is_read_only_when_the_choice_depends_on_it() -> None:
    assert wants_cached(UV, _ask(), _facts())
    assert not wants_cached(UV, _ask(cache="shared"), _facts())
    assert not wants_cached(UV, _ask("symlink"), _facts())
    assert not wants_cached(UV, _ask(), _facts(batches=1))
    assert not wants_cached(UV, _ask(), _facts(stageable=False))
    assert not wants_cached(PIP, _ask(), _facts())


def test_a_link_mode_that_is_none_of_the_known_ones_is_refused() -> None:
    assert request("clone", "--link-mode", "auto") == Request(
        LinkMode.CLONE, "--link-mode", UvCacheMode.AUTO
    )
    with pytest.raises(InstallError, match="link mode 'teleport', which the lock"):
        request("teleport", "the lock's link-mode (l.toml)", "auto")

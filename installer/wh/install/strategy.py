"""How an install is carried out, decided before anything changes: staged or direct, which
uv cache, which link mode, which backend. ``wh install --dry-run`` prints it.

Staged: the backend writes every wheel of the plan in one call (one per overwrite round)
into the staging folder beside the environment, and each batch then moves into place
(``staging``). Direct: one backend call per batch into the environment. A staged copy-mode
install with uv unpacks through the user's uv cache (shared) or a throwaway one inside the
staging folder (private, see ``uvcache``).

``decide`` is pure: it takes the backend's capabilities, what was asked and the facts about
the plan and the target (``Facts``, read by ``facts``), and refuses a combination the
backend cannot carry out (pip with link mode hardlink) before the journal moves any file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from wh.env.environment import Environment
from wh.errors import LinkModeError
from wh.install import uvcache
from wh.install.backend import Backend, Capabilities, UvBackend, unsupported_link_mode
from wh.install.layout import Schemes, WheelLayout
from wh.install.stagedir import can_stage, stage_root
from wh.model.choices import LinkMode, StrEnum, UvCacheMode
from wh.model.plan import Plan


class Placement(StrEnum):
    STAGED = "staged"  # every wheel into the staging folder at once, then moved batch by batch
    DIRECT = "direct"  # one backend call per batch, into the environment


class Cache(StrEnum):
    """The uv cache the backend unpacks wheels through."""

    SHARED = "shared"  # the user's
    PRIVATE = "private"  # a throwaway one inside the staging folder, removed before the end
    NONE = "none"  # the backend unpacks through no uv cache (pip)


@dataclass(frozen=True)
class Request:
    """What was asked for."""

    link_mode: LinkMode
    link_mode_from: str  # where the link mode was asked for, named by a refusal
    uv_cache: UvCacheMode


@dataclass(frozen=True)
class Facts:
    """What the decision reads of the plan and the target (``facts``)."""

    batches: int
    stageable: bool  # ``stagedir.can_stage``
    stage: Path  # where the staging folder would be
    wheels: tuple[uvcache.Wheel, ...] = ()  # what the plan installs, with its sizes
    # the releases the user's uv cache holds, read only when the choice depends on it;
    # None: not read, or unreadable (counts as holding nothing)
    cached: frozenset[uvcache.Release] | None = None


@dataclass(frozen=True)
class Strategy:
    backend: str
    link_mode: LinkMode  # what the backend is asked for in the environment
    placement: Placement
    placement_reason: str
    cache: Cache
    cache_reason: str  # also the status line of a staged install
    stage: Path | None = None  # the staging folder, when staged

    @property
    def private_cache(self) -> Path | None:
        """The throwaway uv cache a staged install unpacks through, if it has one."""
        if self.cache is Cache.PRIVATE and self.stage is not None:
            return self.stage / uvcache.PRIVATE_DIR
        return None

    @property
    def stage_link_mode(self) -> LinkMode:
        """The link mode of the staging calls: hardlinks from a private cache, so each file
        is written once and, once the cache is removed, has one link, as a copy would."""
        return LinkMode.HARDLINK if self.private_cache is not None else self.link_mode

    def describe(self) -> str:
        return f"{self.placement} ({self.placement_reason}); {self.cache_reason}"

    def to_json(self) -> dict[str, str | None]:
        return {
            "backend": self.backend,
            "link_mode": str(self.link_mode),
            "placement": str(self.placement),
            "placement_reason": self.placement_reason,
            "cache": str(self.cache),
            "cache_reason": self.cache_reason,
            "stage": None if self.stage is None else str(self.stage),
        }


def request(link_mode: str, link_mode_from: str, uv_cache: str) -> Request:
    """What was asked for, as values; a link mode that is none of ``LinkMode`` (a lock
    edited by hand) is refused before anything changes."""
    try:
        mode = LinkMode(link_mode)
    except ValueError:
        raise LinkModeError(
            link_mode, "unknown", source=link_mode_from, allowed=[str(m) for m in LinkMode]
        ) from None
    return Request(mode, link_mode_from, UvCacheMode(uv_cache))


def refuse_unsupported(name: str, caps: Capabilities, request: Request) -> None:
    """Refuse (exit 7) a link mode ``name`` cannot install with, naming the rule and where
    the link mode came from."""
    why = unsupported_link_mode(name, caps, request.link_mode)
    if why is None:
        return
    raise LinkModeError(
        str(request.link_mode),
        "unsupported",
        source=request.link_mode_from,
        why=why,
        allowed=[str(m) for m in sorted(caps.link_modes)],
        uv=request.link_mode in UvBackend.capabilities.link_modes,
    )


def _stages(caps: Capabilities, facts: Facts) -> bool:
    """Staging pays (more than one batch) and can be done (the backend and the target can)."""
    return caps.stages and facts.batches > 1 and facts.stageable


def _placement(name: str, caps: Capabilities, facts: Facts) -> tuple[Placement, str]:
    if not caps.stages:
        return Placement.DIRECT, f"{name} installs into the environment only: one call per batch"
    if facts.batches == 0:
        return Placement.DIRECT, "nothing to install"
    if facts.batches == 1:
        return Placement.DIRECT, f"one batch: one {name} call"
    if not facts.stageable:
        return Placement.DIRECT, (
            "not a venv with every install folder under its prefix, or it holds a "
            f"{facts.stage.name} wh did not make: one {name} call per batch"
        )
    return Placement.STAGED, (
        f"{name} writes every wheel into {facts.stage} at once, then each batch moves into place"
    )


def wants_cached(caps: Capabilities, request: Request, facts: Facts) -> bool:
    """Whether the choice of cache depends on what the user's uv cache holds."""
    return (
        caps.uv_cache
        and request.link_mode is LinkMode.COPY
        and request.uv_cache is UvCacheMode.AUTO
        and _stages(caps, facts)
    )


def decide(name: str, caps: Capabilities, request: Request, facts: Facts) -> Strategy:
    """Pure: how the backend ``name`` with ``caps`` carries out the plan ``facts`` describe."""
    refuse_unsupported(name, caps, request)
    placement, why = _placement(name, caps, facts)
    staged = placement is Placement.STAGED
    if not caps.uv_cache:
        cache, reason = Cache.NONE, f"{name} unpacks through no uv cache"
    elif not staged:
        cache, reason = Cache.SHARED, "shared uv cache: an install that is not staged uses it"
    elif request.link_mode is not LinkMode.COPY:
        cache, reason = (
            Cache.SHARED,
            f"shared uv cache: link mode {request.link_mode} links into it",
        )
    else:
        choice = uvcache.choose(request.uv_cache, facts.wheels, facts.cached)
        cache = Cache.PRIVATE if choice.private else Cache.SHARED
        reason = choice.reason
    return Strategy(
        name, request.link_mode, placement, why, cache, reason, facts.stage if staged else None
    )


def facts(
    backend: Backend,
    request: Request,
    env: Environment,
    plan: Plan,
    layouts: Mapping[Path, WheelLayout],
) -> Facts:
    """Read what ``decide`` needs: the plan's batches and sizes, whether the target can be
    staged, and (only when the choice depends on it) what the user's uv cache holds."""
    found = Facts(
        batches=len(plan.batches),
        stageable=can_stage(env.prefix, Schemes.of(env)),
        stage=stage_root(env.prefix),
        wheels=tuple(
            uvcache.Wheel(
                a.package.name, str(a.package.version), layouts[a.package.wheel].unpacked_size
            )
            for a in plan.changes
        ),
    )
    if not wants_cached(backend.capabilities, request, found):
        return found
    where = backend.cache_dir()
    cached = uvcache.cached_releases(where) if where is not None else None
    return replace(found, cached=None if cached is None else frozenset(cached))


def choose(
    backend: Backend,
    request: Request,
    env: Environment,
    plan: Plan,
    layouts: Mapping[Path, WheelLayout],
) -> Strategy:
    """The strategy for installing ``plan`` into ``env`` with ``backend`` (reads the facts,
    then ``decide``)."""
    refuse_unsupported(backend.name, backend.capabilities, request)  # before reading anything
    return decide(
        backend.name, backend.capabilities, request, facts(backend, request, env, plan, layouts)
    )

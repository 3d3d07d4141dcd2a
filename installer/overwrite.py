"""No silent overwrite: refuse a wheel that would write a file another distribution owns."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from installer.environment import InstalledDist
from installer.errors import WheelhouseError
from installer.layout import Target, WheelLayout, installed_files, key


@dataclass(frozen=True)
class Clash:
    """``writer`` (a wheel of the plan) would write ``path``, which ``owner`` owns."""

    path: str
    writer: NormalizedName
    owner: NormalizedName
    owner_is_installed: bool

    def describe(self) -> str:
        where = "installed" if self.owner_is_installed else "also in the plan"
        return f"{self.writer} would overwrite {self.path}, owned by {self.owner} ({where})"


def clashes(
    layouts: Sequence[WheelLayout],
    installed: Mapping[NormalizedName, InstalledDist],
    *,
    allow_overwrite: Collection[str] = (),
) -> list[Clash]:
    """Files written by two distributions, per the installed RECORDs and the plan's wheels.

    Distributions the plan replaces own nothing (their files are moved aside first). A file
    with the same hash on both sides is no clash (pkg_resources-style namespace
    ``__init__.py``). ``allow_overwrite`` names distributions that may overwrite, or be
    overwritten, silently.
    """
    allowed = {canonicalize_name(n) for n in allow_overwrite}
    changing = {lay.name for lay in layouts}
    owners: dict[str, tuple[NormalizedName, str, bool]] = {}
    for name, dist in installed.items():
        if name in changing:
            continue
        for owned in installed_files(dist):
            owners.setdefault(key(owned.path), (name, owned.hash, True))
    found: list[Clash] = []
    for lay in layouts:
        # the path as text is made only for a clash (60,000 files, a handful of clashes)
        writes: list[tuple[str, Target | Path, str]] = [(t.cmp_key, t, t.hash) for t in lay.files]
        writes += [(key(p), p, "") for p in lay.scripts]
        for k, what, digest in writes:
            prev = owners.get(k)
            if prev is None:
                owners[k] = (lay.name, digest, False)
                continue
            owner, owner_digest, is_installed = prev
            if owner == lay.name or (digest and digest == owner_digest):
                continue
            if owner in allowed or lay.name in allowed:
                continue
            path = what.text if isinstance(what, Target) else str(what)
            found.append(Clash(os.path.normpath(path), lay.name, owner, is_installed))
    return found


def refuse_clashes(found: Sequence[Clash]) -> None:
    if not found:
        return
    pairs = sorted({(c.writer, c.owner) for c in found})
    raise WheelhouseError(
        f"{len(found)} file(s) would be overwritten by another distribution; nothing was installed",
        details=[c.describe() for c in found[:50]]
        + ([f"... and {len(found) - 50} more"] if len(found) > 50 else []),
        hint="remove the conflicting distribution first, or allow it deliberately with "
        'allow-overwrite = ["' + '", "'.join(sorted({w for w, _ in pairs})) + '"] in the profile '
        "and re-lock (`wh lock PROFILE --allow-overwrite "
        + " --allow-overwrite ".join(sorted({w for w, _ in pairs}))
        + "`): a lock keeps what it allows",
    )


_LOCK_SITE = Path(os.path.abspath(os.sep)) / "wh-lock-site"


def between_wheels(wheels: Sequence[Path], allow_overwrite: Collection[str] = ()) -> list[str]:
    """Files two wheels of one lock would both write, from their RECORDs, before any
    environment is involved (what `wh lock` and `wh bundle` report): one line per file,
    naming the distributions and the profile field that allows it. Identical files (a
    shared namespace ``__init__.py``) are no overwrite. A wheel too broken to map is left
    to the install's own checks, which name what is wrong with it."""
    from installer.layout import Schemes, layout

    site = _LOCK_SITE / "site-packages"
    schemes = Schemes(site, site, _LOCK_SITE / "scripts", _LOCK_SITE, "3")
    layouts: list[WheelLayout] = []
    for w in wheels:
        try:
            layouts.append(layout(w, schemes))
        except (OSError, ValueError, KeyError, StopIteration):  # a broken wheel: install says
            continue
    out = []
    for c in clashes(layouts, {}, allow_overwrite=allow_overwrite):
        rel = os.path.relpath(c.path, site) if c.path.startswith(str(site)) else c.path
        out.append(f"{c.writer} and {c.owner} both write {rel.replace(os.sep, '/')}")
    return out


def allow_hint(lines: Sequence[str]) -> str:
    """The profile field (and flag) that allows the overwrites ``between_wheels`` found."""
    writers = sorted({line.split(" and ", 1)[0] for line in lines})
    return (
        "the install refuses a file written by two distributions; if the later one may win, "
        'allow it in the profile: allow-overwrite = ["' + '", "'.join(writers) + '"] '
        "(or --allow-overwrite " + " --allow-overwrite ".join(writers) + ")"
    )

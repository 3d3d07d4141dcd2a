"""Verify an environment against a lock: closure (overrides counted), protections, checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from installer import proc
from installer.environment import Environment, InstalledDist
from installer.lock import Lock


@dataclass(frozen=True)
class Finding:
    """One verification result; ``ok`` False means the environment fails verification."""

    ok: bool
    kind: str  # installed | requirement | override | protection | check | warning
    message: str

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "kind": self.kind, "message": self.message}


def closure(env: Environment, lock: Lock) -> list[Finding]:
    """Every locked package installed at its version; every requirement of it satisfied."""
    out: list[Finding] = []
    overrides = {
        canonicalize_name(Requirement(o["requirement"]).name): Requirement(o["requirement"])
        for o in lock.overrides
    }
    for name in sorted(lock.packages):
        pkg = lock.packages[name]
        have = env.dists.get(name)
        if have is None:
            out.append(Finding(False, "installed", f"{name} {pkg.version} is not installed"))
            continue
        if have.version != pkg.version:
            out.append(
                Finding(
                    False,
                    "installed",
                    f"{name} is {have.version} but the lock says {pkg.version}",
                )
            )
            continue
        out.append(Finding(True, "installed", f"{name} {have.version}"))
    drops = {canonicalize_name(d["name"]): d for d in lock.tool.get("drops", [])}
    names = sorted(set(lock.packages) | {canonicalize_name(p["name"]) for p in lock.protections})
    for name in names:
        dist = env.dists.get(name)
        if dist is None:
            continue
        extras = frozenset(lock.packages[name].extras) if name in lock.packages else frozenset()
        out.extend(_requirements(env, dist, extras, overrides, drops))
    return out


def _requirements(
    env: Environment,
    dist: InstalledDist,
    extras: frozenset[NormalizedName],
    overrides: Mapping[NormalizedName, Requirement],
    drops: Mapping[NormalizedName, Mapping[str, str]],
) -> list[Finding]:
    out: list[Finding] = []
    for req in dist.requires:
        if not (env.target.evaluate(req.marker) or env.target.evaluate(req.marker, extras)):
            continue
        dep = canonicalize_name(req.name)
        plain = Requirement(str(req))
        plain.marker = None
        have = env.dists.get(dep)
        who = f"{dist.name} {dist.version}"
        drop = drops.get(dep)
        if drop is not None and have is None:
            marker = drop.get("marker") or ""
            if env.target.evaluate(Marker(marker) if marker else None):
                out.append(
                    Finding(
                        True,
                        "drop",
                        f"{who} requires {plain}: dropped"
                        + (f" where {marker}" if marker else "")
                        + f" ({drop.get('reason') or 'no reason given'})",
                    )
                )
                continue
            out.append(
                Finding(
                    False,
                    "requirement",
                    f"{who} requires {plain}, not installed; the lock drops it only where "
                    f"{marker}, which does not hold for {env.target.description}",
                )
            )
            continue
        if have is None:
            out.append(Finding(False, "requirement", f"{who} requires {plain}, not installed"))
        elif req.specifier.contains(have.version, prereleases=True):
            continue
        elif dep in overrides and overrides[dep].specifier.contains(have.version, prereleases=True):
            out.append(
                Finding(
                    True,
                    "override",
                    f"{dep} {have.version} satisfies {dist.name}'s {req.specifier} by override "
                    f"({overrides[dep]})",
                )
            )
        else:
            out.append(
                Finding(
                    False,
                    "requirement",
                    f"{who} requires {plain} but {dep} {have.version} is installed",
                )
            )
    return out


def protections(
    env: Environment, lock: Lock, before: Mapping[NormalizedName, InstalledDist] | None = None
) -> list[Finding]:
    """Protected distributions are present, at the locked version, with unchanged RECORD."""
    out: list[Finding] = []
    for p in lock.protections:
        name = canonicalize_name(p["name"])
        have = env.dists.get(name)
        if have is None:
            out.append(Finding(False, "protection", f"protected {name} is missing"))
            continue
        expected_record = p.get("record-sha256")
        if before is not None and name in before:
            expected_record = before[name].record_sha256
        if str(have.version) != p["version"]:
            out.append(
                Finding(
                    False,
                    "protection",
                    f"protected {name} is {have.version}, expected {p['version']}",
                )
            )
        elif expected_record and have.record_sha256 != expected_record:
            out.append(Finding(False, "protection", f"protected {name} {have.version} changed"))
        else:
            out.append(Finding(True, "protection", f"protected {name} {have.version} unchanged"))
    return out


def run_checks(
    env: Environment, imports: list[str], snippets: list[dict[str, str]]
) -> list[Finding]:
    """Import checks and Python snippets, each run in the target interpreter."""
    out: list[Finding] = []
    for mod in imports:
        done = proc.run(
            [env.python, "-c", f"import {mod}"], env=proc.clean_env(), check=False, timeout=600
        )
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        out.append(
            Finding(
                done.returncode == 0,
                "check",
                f"import {mod}" + ("" if done.returncode == 0 else f" failed: {tail}"),
            )
        )
    for snip in snippets:
        done = proc.run(
            [env.python, "-c", snip["code"]], env=proc.clean_env(), check=False, timeout=600
        )
        label = snip.get("description") or snip["code"]
        tail = ((done.stderr or done.stdout).strip().splitlines() or [""])[-1]
        out.append(
            Finding(
                done.returncode == 0,
                "check",
                label + ("" if done.returncode == 0 else f" failed: {tail}"),
            )
        )
    return out

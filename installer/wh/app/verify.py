"""Verify an environment against a lock: closure (overrides counted), protections, checks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wh.env.environment import Environment
from wh.install.outside import unsatisfied
from wh.model.choices import StrEnum
from wh.model.installed import InstalledDist
from wh.model.lockfile import Lock
from wh.model.plan import Guard
from wh.model.protection import Standing, standing
from wh.model.toolwh import DropRule, Snippet
from wh.proc import spawn as proc


class FindingKind(StrEnum):
    """What a verification result is about (its ``kind`` in JSON output)."""

    INSTALLED = "installed"  # a locked package is (not) installed at its version
    REQUIREMENT = "requirement"  # an installed distribution's requirement
    OVERRIDE = "override"  # a requirement an override replaced
    DROP = "drop"  # a requirement a drop removed
    PROTECTION = "protection"
    CHECK = "check"  # an import or snippet check
    LOAD = "load"  # the load check of compiled members
    WARNING = "warning"  # reported, does not fail verification


@dataclass(frozen=True)
class Finding:
    """One verification result; ``ok`` False means the environment fails verification."""

    ok: bool
    kind: FindingKind
    message: str
    advice: str = ""  # what can make it pass (shown with a failure)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"ok": self.ok, "kind": self.kind, "message": self.message}
        if self.advice:
            out["advice"] = self.advice
        return out


def closure(env: Environment, lock: Lock) -> list[Finding]:
    """Every locked package installed at its version; every requirement of it satisfied."""
    out: list[Finding] = []
    overrides = {
        canonicalize_name(Requirement(o.requirement).name): Requirement(o.requirement)
        for o in lock.tool.overrides
    }
    for name in sorted(lock.packages):
        pkg = lock.packages[name]
        have = env.dists.get(name)
        if have is None:
            out.append(
                Finding(False, FindingKind.INSTALLED, f"{name} {pkg.version} is not installed")
            )
            continue
        if have.version != pkg.version:
            out.append(
                Finding(
                    False,
                    FindingKind.INSTALLED,
                    f"{name} is {have.version} but the lock says {pkg.version}",
                )
            )
            continue
        out.append(Finding(True, FindingKind.INSTALLED, f"{name} {have.version}"))
    drops = {d.name: d for d in lock.tool.drops}
    names = sorted(set(lock.packages) | lock.tool.protected_names)
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
    drops: Mapping[NormalizedName, DropRule],
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
            marker = drop.marker
            if env.target.evaluate(Marker(marker) if marker else None):
                out.append(
                    Finding(
                        True,
                        FindingKind.DROP,
                        f"{who} requires {plain}: dropped"
                        + (f" where {marker}" if marker else "")
                        + f" ({drop.reason or 'no reason given'})",
                    )
                )
                continue
            out.append(
                Finding(
                    False,
                    FindingKind.REQUIREMENT,
                    f"{who} requires {plain}, not installed; the lock drops it only where "
                    f"{marker}, which does not hold for {env.target.description}",
                )
            )
            continue
        if have is None:
            out.append(
                Finding(False, FindingKind.REQUIREMENT, f"{who} requires {plain}, not installed")
            )
        elif req.specifier.contains(have.version, prereleases=True):
            continue
        elif dep in overrides and overrides[dep].specifier.contains(have.version, prereleases=True):
            out.append(
                Finding(
                    True,
                    FindingKind.OVERRIDE,
                    f"{dep} {have.version} satisfies {dist.name}'s {req.specifier} by override "
                    f"({overrides[dep]})",
                )
            )
        else:
            out.append(
                Finding(
                    False,
                    FindingKind.REQUIREMENT,
                    f"{who} requires {plain} but {dep} {have.version} is installed",
                )
            )
    return out


def protections(
    env: Environment, lock: Lock, before: Mapping[NormalizedName, InstalledDist] | None = None
) -> list[Finding]:
    """Protected distributions are present, at the locked version, with unchanged RECORD."""
    out: list[Finding] = []
    for p in lock.tool.protections:
        name = p.name
        have = env.dists.get(name)
        since = before.get(name) if before is not None else None
        now = standing(have, Version(p.version), p.record_sha256, since=since)
        out.append(_protection_finding(name, have, now, f"expected {p.version}"))
    return out


def _protection_finding(
    name: NormalizedName, have: InstalledDist | None, now: Standing, wanted: str
) -> Finding:
    """What verify says of a protected distribution that ``standing`` placed at ``now``;
    ``wanted`` words the protected version after the one installed."""
    if have is None or now is Standing.MISSING:
        return Finding(False, FindingKind.PROTECTION, f"protected {name} is missing")
    if now is Standing.OTHER_VERSION:
        return Finding(
            False, FindingKind.PROTECTION, f"protected {name} is {have.version}, {wanted}"
        )
    if now is Standing.CHANGED:
        return Finding(False, FindingKind.PROTECTION, f"protected {name} {have.version} changed")
    return Finding(True, FindingKind.PROTECTION, f"protected {name} {have.version} unchanged")


def run_checks(env: Environment, imports: list[str], snippets: list[Snippet]) -> list[Finding]:
    """Import checks and Python snippets, each run in the target interpreter. A failure
    carries its whole exception chain and, for a library the loader cannot find, its name."""
    out: list[Finding] = []
    for mod in imports:
        done = proc.run(
            [env.python, "-c", f"import {mod}"], env=proc.clean_env(), check=False, timeout=600
        )
        ok = done.returncode == 0
        cause, advice = ("", "") if ok else failure_cause(done.stderr or done.stdout)
        out.append(
            Finding(
                ok, FindingKind.CHECK, f"import {mod}" + ("" if ok else f" failed: {cause}"), advice
            )
        )
    for snip in snippets:
        done = proc.run(
            [env.python, "-c", snip.code], env=proc.clean_env(), check=False, timeout=600
        )
        label = snip.label
        ok = done.returncode == 0
        cause, advice = ("", "") if ok else failure_cause(done.stderr or done.stdout)
        if not ok and not cause:
            cause = f"exit code {done.returncode}"
        out.append(
            Finding(ok, FindingKind.CHECK, label + ("" if ok else f" failed: {cause}"), advice)
        )
    return out


_LIBRARY = re.compile(
    r"(?P<lib>[\w.+-]+\.(?:so(?:\.\d+)*|dll|dylib)): cannot open shared object file"
    r"|(?:Library not loaded|image not found)[: ]+(?P<mac>\S+)"
    r"|DLL load failed while importing (?P<win>\w+)"
)


def failure_cause(output: str) -> tuple[str, str]:
    """The exception chain of a traceback (every exception line, last first) and advice.

    Python prints a chain root cause first ("The above exception was the direct cause of
    the following exception"); the lines that start at column 0 and are neither
    "Traceback" nor those joiners are the exceptions themselves.
    """
    lines = output.strip().splitlines()
    chain = [
        ln.strip()
        for ln in lines
        if ln
        and not ln[0].isspace()
        and not ln.startswith("Traceback")
        and not ln.startswith(("The above exception", "During handling of the above"))
    ]
    cause = " <- caused by: ".join(reversed(chain)) if chain else (lines[-1] if lines else "")
    m = _LIBRARY.search(output)
    if m:
        lib = m.group("lib") or m.group("mac") or m.group("win")
        return cause, (
            f"the loader cannot find {lib}: add the wheel that ships it to the lock (for "
            "libnvrtc/libcudart/libcublas: the nvidia-cuda-nvrtc/-runtime/cublas wheels of "
            "the CUDA major the build needs) or put its folder on LD_LIBRARY_PATH (PATH on "
            "Windows); on a build box without that library or GPU, install with --checks warn"
        )
    missing = re.search(r"No module named '([^']+)'", output)
    if missing:
        return cause, (
            f"no module {missing.group(1)!r} in the environment: add the distribution that "
            "provides it to the profile's requirements, or correct the check's module name"
        )
    return cause, "run the check by hand in the target interpreter to see all of its output"


def guarded(
    env: Environment,
    guards: Mapping[NormalizedName, Guard],
    before: Mapping[NormalizedName, InstalledDist] | None,
) -> list[Finding]:
    """Protections given at install/verify time: present, at their version, unchanged."""
    out: list[Finding] = []
    for name in sorted(guards):
        g = guards[name]
        have = env.dists.get(name)
        since = before.get(name) if before is not None else None
        now = standing(have, g.version, since=since)
        out.append(_protection_finding(name, have, now, f"not {g.version}"))
    return out


def whole_environment(
    env: Environment, lock: Lock, before: Environment | None = None
) -> list[Finding]:
    """Every installed distribution's requirements, not only the lock's closure (which
    ``closure`` reports): a failure the install caused fails; one already there before it
    is a warning."""
    covered = set(lock.packages) | lock.tool.protected_names
    now = unsatisfied({n: d for n, d in env.dists.items()}, env.target)
    was = unsatisfied(before.dists, before.target) if before is not None else {}
    out: list[Finding] = []
    for (name, req), message in sorted(now.items()):
        if name in covered:
            continue  # closure() reported it
        if (name, req) in was:
            out.append(
                Finding(True, FindingKind.WARNING, f"{message} (already so before this install)")
            )
        else:
            out.append(
                Finding(
                    False,
                    FindingKind.REQUIREMENT,
                    message + " (outside the lock)",
                    f"add {name} to the profile's requirements so the lock resolves it with "
                    "the rest, or install what it requires",
                )
            )
    return out

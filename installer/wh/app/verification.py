"""`wh verify`: the environment against its lock (closure, every other distribution's
requirements, protections, checks, the load check), and the refusal that lists what failed."""

from __future__ import annotations

from pathlib import Path

from wh.app.asked import Asked
from wh.app.loadscan import verify_findings
from wh.app.verify import (
    Finding,
    FindingKind,
    closure,
    guarded,
    protections,
    run_checks,
    whole_environment,
)
from wh.env.environment import Environment, probe, second_copies, unparsed_requirements
from wh.errors import VerificationFailedError
from wh.install.safeguard import unversioned_notes
from wh.kernels.advice import advice_for
from wh.model import lockfile as lockmod
from wh.model.toolwh import Snippet


def verify_env(
    lock: lockmod.Lock,
    python: Path,
    before: Environment | None = None,
    after: Environment | None = None,
    asked: Asked | None = None,
) -> list[Finding]:
    """The environment against the lock: closure, every other installed distribution's
    requirements, protections (the lock's and ``asked``'s), the profile's checks and
    ``asked``'s. ``after`` is a probe taken once the install wrote everything (else one is
    taken). With ``asked.checks == "warn"`` a failed import or snippet check is a warning."""
    asked = asked or Asked()
    env = after or probe(python)
    checks = lock.tool.checks
    findings = closure(env, lock)
    findings += whole_environment(env, lock, before)
    findings += protections(env, lock, before.dists if before else None)
    findings += guarded(env, asked.guards, before.dists if before else None)
    snippets = [*checks.snippets, *(Snippet(c, d) for c, d in asked.snippets)]
    ran = run_checks(env, [*checks.imports, *asked.imports], snippets)
    if asked.checks == "warn":
        ran = [
            f
            if f.ok
            else Finding(True, FindingKind.WARNING, f"{f.message} (--checks warn: kept)", f.advice)
            for f in ran
        ]
    findings += ran
    findings += needs_warnings(lock, env)
    findings += installed_twice(env)
    findings += unversioned(env)
    findings += unread_metadata(env)
    findings += verify_findings(lock, env)
    return findings


def installed_twice(env: Environment) -> list[Finding]:
    """A warning for each second installed copy of a name (``Environment.shadowed``):
    Python sees the first; an install that replaces it is refused until one is removed."""
    out = []
    for name, copies in second_copies(env).items():
        first = env.dists.get(name)
        seen = f"{first.version} at {first.dist_info}" if first is not None else "another copy"
        label = first.display_name if first is not None else name
        out += [
            Finding(
                True,
                FindingKind.WARNING,
                f"{label} is installed twice: {copy} is behind {seen}, the one Python finds "
                "(delete the stale copy's metadata folder)",
            )
            for copy in copies
        ]
    return out


def unversioned(env: Environment) -> list[Finding]:
    """A warning for each installed distribution whose version is not PEP 440
    (``Environment.unversioned``): wh cannot compare or check it, and every install that
    changes something is refused until it is uninstalled (``refuse_unversioned``)."""
    return [Finding(True, FindingKind.WARNING, note) for note in unversioned_notes(env)]


def unread_metadata(env: Environment) -> list[Finding]:
    """A warning for what wh could not read of the installed metadata: a metadata folder
    that names no distribution (its files are owned by nothing), and a requirement that
    is not PEP 508 (the closure check above could not follow it: it passed without it)."""
    out = [
        Finding(
            True,
            FindingKind.WARNING,
            f"the metadata at {where} names no distribution (no Name): wh cannot tell what "
            "it installed, and its files count as owned by nothing (reinstall the package it "
            "belongs to, or delete the folder)",
        )
        for where in env.nameless
    ]
    out += [
        Finding(True, FindingKind.WARNING, f"{note}: the dependency check did not follow it")
        for _, note in unparsed_requirements(env)
    ]
    return out


def needs_warnings(lock: lockmod.Lock, env: Environment) -> list[Finding]:
    """Warn when the profile's launch needs a capability no installed build provides."""
    needs = list(lock.tool.needs)
    if not needs:
        return []
    provided: set[str] = set()
    known = False
    for rec in lock.tool.build_records.values():
        if rec.provides is not None:
            known = True
            provided.update(rec.provides)
    out = []
    for need in needs:
        if known and need not in provided:
            out.append(
                Finding(
                    True,
                    FindingKind.WARNING,
                    f"the profile's launch needs {need!r}, which no locally built wheel provides"
                    f" ({advice_for(need)})",
                )
            )
    return out


def raise_on_failures(findings: list[Finding], *, installing: bool = False) -> None:
    """Exit 8 with every failed finding and advice that can make each pass."""
    bad = [f for f in findings if not f.ok]
    if not bad:
        return
    advice = list(dict.fromkeys(f.advice for f in bad if f.advice))
    if (
        any(f.kind in (FindingKind.INSTALLED, FindingKind.PROTECTION) for f in bad)
        and not installing
    ):
        advice.append(
            "`wh install --locked PROFILE` puts back what the lock names (protected "
            "distributions are never touched: reinstall their build by hand)"
        )
    if installing:
        advice.append("the install was rolled back: the environment is as it was")
        if any(f.kind == FindingKind.CHECK for f in bad) and not any(
            "--checks warn" in a for a in advice
        ):
            advice.append("with --checks warn an install keeps going past failed import checks")
    raise VerificationFailedError([f.message for f in bad], advice)

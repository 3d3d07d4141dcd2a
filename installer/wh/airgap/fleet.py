"""A fleet installs from one machine's served wheelhouse: pinned requirements with hashes for
pip, and the wheels of a URL lock (`wh lock --index-url`) downloaded before an install."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from wh import progress
from wh.airgap.indexclient import Http
from wh.errors import LockWheelsError, WheelhouseError
from wh.model.lockfile import Lock, LockedPackage, package_list
from wh.proc import threads


def requirements_text(lock: Lock) -> str:
    """The lock as a requirements file: one ``name==version --hash=sha256:...`` per locked
    wheel, in install order, for ``pip install --no-deps --require-hashes -r`` (pip then
    installs exactly the locked wheels; its resolver never sees the wheels' own metadata, so
    the profile's overrides and drops hold)."""
    tool = lock.tool
    lines = [
        f"# wh export of {lock.path.name}: profile {lock.profile}, target "
        f"{tool.target.description if tool.target else '?'}",
        "# install with: pip install --no-deps --require-hashes -r THIS_FILE "
        "--index-url http://HOST/simple/",
    ]
    for a in tool.overrides_applied:
        lines.append(f"# override: {a.by}: {a.original} -> {a.replacement}")
    for d in tool.drops_applied:
        lines.append(f"# dropped: {d.by}: {d.requirement}")
    for p in tool.protections:
        lines.append(f"# protected, not listed: {p.name} {p.version} (kept as installed)")
    for pkg in ordered(lock):
        lines.append(f"{pkg.name}=={pkg.version} --hash=sha256:{pkg.sha256}")
    return "\n".join(lines) + "\n"


def ordered(lock: Lock) -> list[LockedPackage]:
    """The lock's packages in its install order (protected ones left out: never installed)."""
    pkgs = {p.name: p for p in package_list(lock) if not p.protected}
    seen = [n for level in lock.levels for n in level if n in pkgs]
    rest = sorted(set(pkgs) - set(seen))
    return [pkgs[n] for n in [*seen, *rest]]


def download_locked(lock: Lock) -> list[str]:
    """Download the URL wheels of ``lock`` that are not in wh's cache yet, each checked
    against the lock's sha256 before it is used. Returns the downloaded file names."""
    todo: Sequence[LockedPackage] = [
        p for p in package_list(lock) if p.url and not p.wheel.is_file()
    ]
    if not todo:
        return []
    progress.status(f"downloading {len(todo)} locked wheel(s) from {lock.tool.index_url or '?'}")
    http = Http()
    problems: list[str] = []
    done: list[str] = []
    lock_ = threading.Lock()

    def one(p: LockedPackage) -> None:
        assert p.url is not None
        p.wheel.parent.mkdir(parents=True, exist_ok=True)
        try:
            http.download(p.url, p.wheel, p.sha256)
        except WheelhouseError as exc:
            with lock_:
                problems.append(f"{p.filename}: {exc.message}")
            return
        with lock_:
            done.append(p.filename)

    # six at a time, the largest first (as `wh fetch` downloads)
    with threads.pool(6, "wh-fleet") as pool:
        list(pool.map(one, sorted(todo, key=lambda p: -p.size)))
    problems.sort()
    if problems:
        raise LockWheelsError(lock.path, problems, downloaded=True)
    return sorted(done)

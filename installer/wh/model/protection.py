"""Where an installed distribution stands against a protection: the one decision that the
plan, the resolver's pins and verify each take before they word it their own way."""

from __future__ import annotations

from enum import Enum

from packaging.version import Version

from wh.model.installed import InstalledDist


class Standing(Enum):
    """An installed distribution against what a protection keeps."""

    MISSING = "missing"  # not installed
    OTHER_VERSION = "other-version"  # installed at another version than the protected one
    CHANGED = "changed"  # that version, but its files (RECORD) differ
    KEPT = "kept"  # as protected


def standing(
    have: InstalledDist | None,
    version: Version | None = None,
    record_sha256: str | None = None,
    *,
    since: InstalledDist | None = None,
) -> Standing:
    """Where ``have`` (None: not installed) stands against a protection at ``version``
    (None: any version) whose RECORD digest was ``record_sha256`` (None or "": not
    compared). ``since``, the same distribution probed earlier (before an install), takes
    the place of ``record_sha256``: any change of its version or RECORD digest since then
    is a change."""
    if have is None:
        return Standing.MISSING
    if version is not None and have.version != version:
        return Standing.OTHER_VERSION
    if since is not None:
        if (since.version, since.record_sha256) != (have.version, have.record_sha256):
            return Standing.CHANGED
    elif record_sha256 and have.record_sha256 != record_sha256:
        return Standing.CHANGED
    return Standing.KEPT

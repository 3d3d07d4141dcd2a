"""Wheels already proven sound, remembered by sha256 so identical bytes are not checked twice.

Validation is a pure function of a wheel's bytes, and install checks every wheel's sha256
against the lock before validating, so a verdict recorded for a digest holds for any file
with that digest. ``WH_VERIFY_REHASH=1`` trusts nothing remembered (it also re-hashes
wheels the scan cache knows).
"""

from __future__ import annotations

import os
import re

from wh import settings
from wh.settings import cache_dir

# Bump when a check changes what it accepts: older verdicts are then ignored.
_VERSION = "1"
_HEX = re.compile(r"[0-9a-f]{64}")


def _marker(check: str, sha256: str) -> str:
    return os.path.join(cache_dir(), "verified", f"{check}-v{_VERSION}", sha256)


def _trusting() -> bool:
    return not settings.current().verify_rehash


def known(check: str, sha256: str) -> bool:
    """Whether a wheel with this digest passed ``check`` ("structure" or "contents")."""
    return bool(_HEX.fullmatch(sha256)) and _trusting() and os.path.exists(_marker(check, sha256))


def remember(check: str, sha256: str) -> None:
    if not _HEX.fullmatch(sha256):
        return
    path = _marker(check, sha256)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        pass  # only costs a later re-check

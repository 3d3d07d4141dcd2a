"""A distribution installed in an environment, as a value (the probe reads it; env owns IO)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName
from packaging.version import Version


@dataclass(frozen=True)
class InstalledDist:
    """A distribution installed in a target environment."""

    name: NormalizedName
    display_name: str
    version: Version
    requires: tuple[Requirement, ...]
    dist_info: Path | None
    record_sha256: str | None
    installer: str

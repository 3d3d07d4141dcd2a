"""The staging folder: where a staged install's backend writes every wheel, inside the
environment's prefix (so the journal watches it), before the batches move into place."""

from __future__ import annotations

import os
from pathlib import Path

from wh.install.layout import Schemes, inside, real

STAGE_DIR = ".wh-stage"


def stage_root(prefix: Path) -> Path:
    """The staging folder of the environment at ``prefix``."""
    return real(prefix) / STAGE_DIR


def can_stage(prefix: Path, schemes: Schemes) -> bool:
    """A venv whose install folders all lie under its prefix: the backend's ``--prefix``
    layout then mirrors the environment's, one relative path for one file.

    Not when the staging folder exists already: wh's own never outlives an install (a
    killed one is rolled back, staging folder included, before the next starts), so it
    is someone else's, and wh installs batch by batch around it."""
    root = real(prefix)
    if not (root / "pyvenv.cfg").is_file() or os.path.lexists(root / STAGE_DIR):
        return False
    return all(inside(p, root) for p in (schemes.purelib, schemes.platlib, schemes.scripts))

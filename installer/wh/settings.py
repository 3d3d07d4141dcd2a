"""What wh reads from its process environment: the ``WH_*`` variables, in one place."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def cache_dir() -> Path:
    env = os.environ.get("WH_CACHE_DIR")
    if env:
        return Path(env)
    return Path(user_cache_dir("wh", appauthor=False))

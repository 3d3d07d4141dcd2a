"""The closed sets of install settings: how installed files relate to the backend's cache
(link mode), and which uv cache a staged copy-mode install unpacks through (``--uv-cache``)."""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10: the same, a str whose str() is its value

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)


class LinkMode(StrEnum):
    """``--link-mode`` and the lock's ``link-mode``: how the backend places each file."""

    COPY = "copy"
    HARDLINK = "hardlink"
    SYMLINK = "symlink"
    CLONE = "clone"


class UvCacheMode(StrEnum):
    """``--uv-cache``: the user's uv cache (shared), a throwaway one (private), or the
    cheaper of the two for what the user's cache holds (auto, see ``uvcache.choose``)."""

    AUTO = "auto"
    SHARED = "shared"
    PRIVATE = "private"

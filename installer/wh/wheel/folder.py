"""Which entries of a folder are wheels. Apart from ``wheelfile`` so that the natives
helper of ``wh lock``, which lists a wheelhouse too, does not load packaging and email
with it."""

from __future__ import annotations

import os


def is_wheel_entry(entry: os.DirEntry[str]) -> bool:
    """Whether a folder entry is a wheel of a wheelhouse: a ``*.whl`` file (a link to one
    counts; the name is compared as written, on every OS)."""
    return entry.name.endswith(".whl") and entry.is_file()

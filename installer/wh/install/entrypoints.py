"""Console and GUI script names in ``entry_points.txt``, read the way each backend reads it.

The backends disagree on odd files, so wh predicts the union of what they would create
(every script a backend writes must be predicted: the overwrite check, the journal and
the reserved-path check all work from the prediction):

- uv reads the file as an INI file: ``;`` and ``#`` start comment lines, a section header
  may be followed by a comment (``[console_scripts] ; comment``), an indented line
  continues the value before it, section names are case-sensitive. Python's
  ``configparser`` (``delimiters="="``, ``optionxform=str``) reads it alike; it is what
  pypa/installer uses.
- pip reads it with ``importlib.metadata``: stripped lines, ``#`` lines skipped (``;``
  lines are not: ``; b = m:f`` is an entry), a header is a whole line ``[...]``; then it
  gives ``NAME = VALUE`` to distlib, whose pattern finds the script name by a search
  (``rem g = m:f`` makes a script named ``" g"``).

Measured with uv 0.13.9 and pip 26.3 on the cases in ``tests/test_entrypoints.py``.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterator

GROUPS = ("console_scripts", "gui_scripts")

# distlib's ENTRY_RE (pip's script maker), searched in "NAME = VALUE"
_DISTLIB = re.compile(
    r"(?P<name>([^\[]\S*))\s*=\s*(?P<callable>(\w+)([:\.]\w+)*)\s*"
    r"(\[\s*(?P<flags>[\w-]+(=\w+)?(,\s*\w+(=\w+)?)*)\s*\])?"
)


def as_uv(text: str) -> Iterator[str]:
    """Script names as an INI reader (uv, pypa/installer) finds them."""
    parser = configparser.ConfigParser(
        delimiters=("=",), interpolation=None, strict=False, default_section="\0"
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.ParsingError:
        pass  # what parsed is kept; uv refuses such a file, so it writes nothing more
    except configparser.Error:
        return
    for group in GROUPS:
        if parser.has_section(group):
            yield from parser.options(group)


def as_pip(text: str) -> Iterator[str]:
    """Script names as pip finds them (importlib.metadata, then distlib's pattern)."""
    group: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group not in GROUPS or "=" not in line:
            continue
        name, _, value = line.partition("=")
        found = _DISTLIB.search(f"{name.strip()} = {value.strip()}")
        if found:
            yield found.group("name")


def script_names(data: bytes) -> list[str]:
    """Every script name some backend would create from ``entry_points.txt``, in order."""
    text = data.decode("utf-8", "replace")
    out: dict[str, None] = {}
    for name in (*as_uv(text), *as_pip(text)):
        for variant in (name, name.strip()):
            if variant:
                out.setdefault(variant, None)
    return list(out)

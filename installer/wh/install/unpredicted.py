"""What a backend wrote that no wheel's RECORD predicted: found after it wrote, in every
install mode, so the install is refused and rolled back instead of carrying it.

The prediction (``layout``) is every file of every wheel, the files a backend adds to a
``.dist-info`` folder, the console scripts (``entrypoints``), and bytecode of predicted
modules (pip compiles them). What is compared:

- the files under each root the journal watches, against the listing it took before;
- the top of the environment, of each site folder and of the scripts folder (a new entry
  there is under no watched root, e.g. ``site-packages/evil.pth``);
- the scripts folder's files, by (inode, size, mtime): one rewritten in place that no
  wheel names (another distribution's script).

New entries are handed to the journal (``Transaction.watch``), so the rollback removes
them; a file rewritten in place cannot be restored, and the error says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from wh.errors import UnpredictedWritesError
from wh.install.journal import RESERVED_NAMES, Record, Transaction, Watched
from wh.install.layout import Schemes, WheelLayout, key

_Stat = tuple[int, int, int]


@dataclass(frozen=True)
class Before:
    """The listings taken before the install: top-level names per folder, and the
    scripts folder's files with their (inode, size, mtime_ns)."""

    tops: dict[str, frozenset[str]]
    scripts: dict[str, _Stat]


def _names(folder: Path) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def _stats(folder: Path) -> dict[str, _Stat]:
    out: dict[str, _Stat] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        out[e.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def _folders(schemes: Schemes) -> list[Path]:
    return list(dict.fromkeys([schemes.data, *schemes.site_dirs(), schemes.scripts]))


def take(schemes: Schemes) -> Before:
    return Before({str(f): _names(f) for f in _folders(schemes)}, _stats(schemes.scripts))


def _predicted(layouts: Iterable[WheelLayout]) -> set[str]:
    out: set[str] = set()
    for lay in layouts:
        out.update(t.cmp_key for t in lay.files)
        out.update(key(s) for s in lay.scripts)
    return out


def _bytecode_of_predicted(k: str, predicted: set[str]) -> bool:
    """``.../__pycache__/mod.cpython-312.pyc`` of a predicted ``.../mod.py`` (pip compiles
    what it installs), or of one already there (pip runs under the target's interpreter,
    whose start-up imports what its .pth files name, e.g. virtualenv's ``_virtualenv``)."""
    folder, name = os.path.split(k)
    if os.path.basename(folder) != "__pycache__" or not name.endswith(".pyc"):
        return False
    source = os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")
    return source in predicted or os.path.isfile(source)


def _files_under(root: Path) -> Iterable[Path]:
    if root.is_symlink() or not root.is_dir():
        if os.path.lexists(root):
            yield root
        return
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            yield Path(dirpath) / f


def _new_under(w: Watched, predicted: set[str]) -> Iterator[Path]:
    """The files under the watched root ``w`` that are new and predicted by no wheel.

    Strings only, a key made per folder, the before-listing consulted only for a file no
    wheel predicts: a watched root can hold a whole wheel's files (torch: 12,000), almost
    all of them predicted."""
    root = w.root
    had = set(w.entries) if w.existed else set()
    if not os.path.isdir(root) or os.path.islink(root):
        if os.path.lexists(root) and key(root) not in predicted and (not w.existed):
            yield Path(root)
        return
    fold = os.path.normcase
    for dirpath, _dirs, files in os.walk(root):
        dkey = key(dirpath)
        rel_dir = dirpath[len(root) + 1 :].replace(os.sep, "/")
        for f in files:
            k = f"{dkey}{os.sep}{fold(f)}"
            if k in predicted or _bytecode_of_predicted(k, predicted):
                continue
            if (f"{rel_dir}/{f}" if rel_dir else f) not in had:
                yield Path(dirpath) / f


def find(
    record: Record, layouts: Sequence[WheelLayout], schemes: Schemes, before: Before
) -> tuple[list[Path], list[Path]]:
    """(new paths no wheel predicted, scripts rewritten in place that no wheel names)."""
    predicted = _predicted(layouts)
    watched = {key(w.root) for w in record.watched}
    new: list[Path] = []

    def unexpected(p: Path) -> bool:
        k = key(p)
        return k not in predicted and not _bytecode_of_predicted(k, predicted)

    own = {n.casefold() for n in RESERVED_NAMES}
    for w in record.watched:
        root = Path(w.root)
        if root.parent == schemes.data and root.name.casefold() in own:
            continue  # uv's lock, wh's staging folder: watched, written by the tools
        new.extend(_new_under(w, predicted))
    for folder in _folders(schemes):
        for name in sorted(_names(folder) - before.tops.get(str(folder), frozenset())):
            p = folder / name
            if key(p) in watched or name.casefold() in own:
                continue
            if any(unexpected(f) for f in _files_under(p)):
                new.append(p)  # an unpredicted entry at the top: removed as a whole
    changed = [
        schemes.scripts / name
        for name, st in sorted(_stats(schemes.scripts).items())
        if name in before.scripts
        and before.scripts[name] != st
        and key(schemes.scripts / name) not in predicted
    ]
    return sorted(set(new)), changed


def refuse(txn: Transaction, new: Sequence[Path], changed: Sequence[Path]) -> None:
    """Raise (inside the transaction, which rolls back) when ``find`` found anything;
    the new paths are journaled first, so the rollback removes them."""
    if not new and not changed:
        return
    if new:
        txn.watch(new)
    raise UnpredictedWritesError(new, changed)

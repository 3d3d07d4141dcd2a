"""pyelftools' reading of a whole ELF file: the oracle the hand-written reader
(``natives.read_member``) is compared with, on gcc's output and on real wheels."""

from __future__ import annotations

import io
from typing import NamedTuple


class ElfNeeds(NamedTuple):
    machine: str
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    soname: str
    versions: frozenset[tuple[str, str]]


def pyelftools_needs(data: bytes) -> ElfNeeds | None:
    """What pyelftools reads from a whole file; None for one without a dynamic section.
    An empty entry of ``DT_RPATH``/``DT_RUNPATH`` (``a::b``) is dropped, as the reader
    drops it: glibc searches the run's working directory there, which a lock cannot know."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    f = ELFFile(io.BytesIO(data))
    dyn = next((s for s in f.iter_sections() if isinstance(s, DynamicSection)), None)
    if dyn is None:
        return None
    tags = list(dyn.iter_tags())

    def paths(tag: str, attr: str) -> tuple[str, ...]:
        return tuple(
            p for t in tags if t.entry.d_tag == tag for p in getattr(t, attr).split(":") if p
        )

    versions = frozenset(
        (vn.name, aux.name)
        for s in f.iter_sections()
        if isinstance(s, GNUVerNeedSection)
        for vn, auxes in s.iter_versions()
        for aux in auxes
    )
    return ElfNeeds(
        str(f["e_machine"]).removeprefix("EM_").lower(),
        tuple(t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"),
        paths("DT_RPATH", "rpath"),
        paths("DT_RUNPATH", "runpath"),
        next((t.soname for t in tags if t.entry.d_tag == "DT_SONAME"), ""),
        versions,
    )

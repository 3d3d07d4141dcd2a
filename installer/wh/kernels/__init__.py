"""wh build: turn a pinned source tree into a checked CUDA wheel (recipe, patches, toolchain)."""

from __future__ import annotations

from wh.kernels.provenance import read_build_record

__all__ = ["read_build_record"]

"""wh build: turn a pinned source tree into a checked CUDA wheel (recipe, patches, toolchain)."""

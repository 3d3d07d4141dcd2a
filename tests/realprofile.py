"""The real sglang profile that the online fetch tests and the fetch bench resolve against the
package index: its roots, overrides and protected torch, as `wh` flags and as the input files
of `uv pip compile` (the reference they are compared with)."""

from __future__ import annotations

from pathlib import Path

ROOT = "sglang==0.5.10"
EXTRAS = ("kernels==0.11.7", "pymupdf==1.27.2.2")
OVERRIDES = ("sglang-kernel==0.4.3", "flashinfer-python==0.6.11.post3")
TORCH = "torch==2.9.1"


def wh_flags(torch: str = TORCH) -> list[str]:
    """The profile as `wh fetch`/`wh lock` flags, ``torch`` the protected build."""
    flags = ["-r", ROOT]
    for extra in EXTRAS:
        flags += ["--extra-requirement", extra]
    for override in OVERRIDES:
        flags += ["--override", override]
    return [*flags, "--protect", torch]


def uv_inputs(folder: Path) -> tuple[Path, Path]:
    """The same roots and overrides written in ``folder`` for `uv pip compile`: the
    requirements file and the ``--overrides`` file (uv has no protection: torch is pinned
    there as an override)."""
    folder.mkdir(parents=True, exist_ok=True)
    roots = folder / "roots.txt"
    roots.write_text("".join(f"{r}\n" for r in (ROOT, *EXTRAS)))
    overrides = folder / "overrides.txt"
    overrides.write_text("".join(f"{r}\n" for r in (*OVERRIDES, TORCH)))
    return roots, overrides

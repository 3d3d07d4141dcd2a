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


def uv_compile_argv(uv: str, folder: Path, platform: str, index: str, *extra: str) -> list[str]:
    """`uv pip compile` of the same roots and overrides for CPython 3.12 on ``platform``
    (uv's ``--python-platform``) against ``index``, ``extra`` options added; its input files
    written in ``folder`` (uv has no protection: torch is pinned there as an override)."""
    folder.mkdir(parents=True, exist_ok=True)
    roots = folder / "roots.txt"
    roots.write_text("".join(f"{r}\n" for r in (ROOT, *EXTRAS)))
    overrides = folder / "overrides.txt"
    overrides.write_text("".join(f"{r}\n" for r in (*OVERRIDES, TORCH)))
    return [
        uv,
        "pip",
        "compile",
        "--no-config",
        "--no-header",
        "--python-version",
        "3.12",
        "--python-platform",
        platform,
        "--index-url",
        index,
        *extra,
        "--overrides",
        str(overrides),
        str(roots),
    ]

"""Which CUDA architectures a wheel's binaries hold (cuobjdump), against what was asked."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wh.errors import ToolMissingError, ToolOutputError, WheelCheckError
from wh.kernels.kinds import CodeKind
from wh.proc import spawn as proc

_BINARY_SUFFIXES = (".so", ".pyd", ".dll")
_ARCH = re.compile(r"\bsm_(\d+[a-z]?)\b")


@dataclass(frozen=True)
class ArchReport:
    """SASS (cubin) and PTX architectures found in one binary of a wheel."""

    binary: str
    sass: frozenset[str]
    ptx: frozenset[str]


def parse_listing(text: str, kind: CodeKind) -> frozenset[str]:
    """Architectures in ``cuobjdump --list-elf`` (kind "ELF") or ``--list-ptx`` ("PTX") output."""
    found = set()
    for line in text.splitlines():
        if line.strip().startswith(f"{kind} file"):
            found.update(_ARCH.findall(line.split(":", 1)[-1]))
    return frozenset(found)


def wanted(archs: Sequence[str]) -> tuple[frozenset[str], frozenset[str]]:
    """CMake-style ``["86"]`` / ``["86-real", "90-virtual"]`` -> (SASS set, PTX set)."""
    sass, ptx = set(), set()
    for a in archs:
        num, _, kind = a.partition("-")
        if kind in ("", "real"):
            sass.add(num)
        if kind in ("", "virtual"):
            ptx.add(num)
    return frozenset(sass), frozenset(ptx)


def cmake_architectures(archs: Sequence[str]) -> str:
    """``["86"]`` -> ``86-real;86-virtual`` (SASS and PTX spelled out)."""
    out = []
    for a in archs:
        out.extend([f"{a}-real", f"{a}-virtual"] if "-" not in a else [a])
    return ";".join(out)


def arch_problems(reports: Sequence[ArchReport], archs: Sequence[str]) -> list[str]:
    """Every binary's extra or missing architectures, one line each (pure)."""
    sass, ptx = wanted(archs)
    problems = []
    with_code = [r for r in reports if r.sass or r.ptx]
    if not with_code:
        return [
            "no binary in the wheel holds CUDA device code"
            f" (expected sm_{', sm_'.join(sorted(sass))})"
        ]
    for r in with_code:
        extra_sass, extra_ptx = r.sass - sass, r.ptx - ptx
        if extra_sass:
            problems.append(
                f"{r.binary}: SASS for sm_{', sm_'.join(sorted(extra_sass))} not asked for"
            )
        if extra_ptx:
            problems.append(
                f"{r.binary}: PTX for compute_{', compute_'.join(sorted(extra_ptx))} not asked for"
            )
    for a in sorted(sass):
        if not any(a in r.sass for r in with_code):
            problems.append(f"no binary holds SASS for sm_{a}")
    for a in sorted(ptx):
        if not any(a in r.ptx for r in with_code):
            problems.append(f"no binary holds PTX for compute_{a}")
    return problems


def find_cuobjdump(env: Mapping[str, str] | None = None) -> Path | None:
    """cuobjdump on PATH, under CUDA_HOME/CUDA_PATH, or from the nvidia-cuda-cuobjdump wheel."""
    env = os.environ if env is None else env
    exe = "cuobjdump.exe" if os.name == "nt" else "cuobjdump"
    on_path = shutil.which(exe, path=env.get("PATH"))
    if on_path:
        return Path(on_path)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var) and (Path(env[var]) / "bin" / exe).is_file():
            return Path(env[var]) / "bin" / exe
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations or [] if spec else []:
        for hit in sorted(Path(root).glob(f"*/bin/{exe}")):
            return hit
    return None


def inspect_wheel(wheel: Path, cuobjdump: Path, scratch: Path) -> list[ArchReport]:
    """Unpack the wheel's binaries into ``scratch`` and list their ELF/PTX architectures."""
    reports = []
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(_BINARY_SUFFIXES) or ".so." in n]
        for name in names:
            target = scratch / Path(name).name
            target.write_bytes(zf.read(name))
            listed: dict[CodeKind, frozenset[str]] = {}
            for kind in CodeKind:
                done = proc.run([cuobjdump, kind.flag, target], check=False, what="cuobjdump")
                if (
                    done.returncode != 0
                    and "does not contain device code" not in done.stdout + done.stderr
                ):
                    raise ToolOutputError(
                        "cuobjdump",
                        name,
                        output=(done.stdout + done.stderr).strip().splitlines()[-5:],
                    )
                listed[kind] = parse_listing(done.stdout, kind)
            reports.append(ArchReport(name, listed[CodeKind.ELF], listed[CodeKind.PTX]))
    return reports


def check_wheel_archs(wheel: Path, archs: Sequence[str], scratch: Path) -> list[ArchReport]:
    """Raise a BuildError unless the wheel holds exactly the asked-for SASS/PTX."""
    tool = find_cuobjdump()
    if tool is None:
        raise ToolMissingError("cuobjdump")
    scratch.mkdir(parents=True, exist_ok=True)
    reports = inspect_wheel(wheel, tool, scratch)
    problems = arch_problems(reports, archs)
    if problems:
        raise WheelCheckError(wheel.name, "archs", problems=problems, archs=archs)
    return reports

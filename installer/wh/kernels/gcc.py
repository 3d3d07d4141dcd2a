"""The Linux toolchain: gcc + nvcc found on PATH, CUDA_HOME or /usr/local/cuda."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet

from wh.errors import ToolMissingError, ToolOutputError
from wh.kernels.conditions import LINUX_GCC, Platform
from wh.kernels.kinds import ToolchainKind
from wh.kernels.toolchain import ToolchainInfo, require_cuda
from wh.proc import spawn as proc


def parse_nvcc_version(text: str) -> str:
    """``nvcc --version`` output -> ``13.0.88`` (or ``13.0`` if only the release is shown)."""
    m = re.search(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)", text)
    if m:
        return m.group(2)
    m = re.search(r"release (\d+\.\d+)", text)
    if not m:
        raise ToolOutputError("nvcc", output=text.splitlines()[-3:])
    return m.group(1)


def find_nvcc(env: Mapping[str, str]) -> Path | None:
    """nvcc on PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin."""
    hit = shutil.which("nvcc", path=env.get("PATH"))
    if hit:
        return Path(hit)
    for root in (env.get("CUDA_HOME", ""), env.get("CUDA_PATH", ""), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return Path(root) / "bin" / "nvcc"
    return None


def _cuda_home(nvcc: Path) -> Path:
    real = nvcc.resolve()
    text = real.read_bytes()[:200] if real.stat().st_size < 4096 else b""
    wrapped = re.search(rb"exec\s+(\S+/bin/nvcc)", text)  # a shell wrapper like /usr/local/bin/nvcc
    return Path(wrapped.group(1).decode()).parent.parent if wrapped else real.parent.parent


@dataclass(frozen=True)
class GccToolchain:
    """gcc (or $CXX) + nvcc, generator Ninja when available."""

    info: ToolchainInfo
    platform: Platform = LINUX_GCC

    @classmethod
    def discover(cls, cuda: SpecifierSet, env: Mapping[str, str]) -> GccToolchain:
        nvcc = find_nvcc(env)
        if nvcc is None:
            raise ToolMissingError(
                "nvcc", looked=["looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin"]
            )
        version = parse_nvcc_version(proc.run([nvcc, "--version"], what="nvcc --version").stdout)
        require_cuda(version, cuda, str(nvcc))
        cxx = env.get("CUDAHOSTCXX") or env.get("CXX") or shutil.which("g++", path=env.get("PATH"))
        if not cxx:
            raise ToolMissingError("g++")
        host_version = proc.run(
            [cxx, "-dumpfullversion", "-dumpversion"], what="g++"
        ).stdout.strip()
        generator = "Ninja" if shutil.which("ninja", path=env.get("PATH")) else "Unix Makefiles"
        home = _cuda_home(nvcc)
        info = ToolchainInfo(
            ToolchainKind.GCC, cxx, host_version, str(nvcc), version, str(home), generator
        )
        return cls(info)

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        env = dict(base)
        env["CUDACXX"] = str(Path(self.info.cuda_home) / "bin" / "nvcc")
        env["CUDA_HOME"] = self.info.cuda_home
        env["CUDAHOSTCXX"] = self.info.host_compiler
        env["CMAKE_GENERATOR"] = self.info.generator
        return env

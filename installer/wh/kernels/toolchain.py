"""The toolchain boundary: what a build needs from MSVC or gcc + nvcc, behind one Protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Protocol

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from wh.errors import CudaVersionError
from wh.kernels.conditions import Platform
from wh.kernels.kinds import ToolchainKind


@dataclass(frozen=True)
class ToolchainInfo:
    """The versions a build record keeps."""

    kind: ToolchainKind
    host_compiler: str
    host_version: str
    nvcc: str
    cuda_version: str
    cuda_home: str
    generator: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


class Toolchain(Protocol):
    """A host compiler + nvcc, ready to configure a CMake build."""

    @property
    def info(self) -> ToolchainInfo: ...

    @property
    def platform(self) -> Platform: ...

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The build environment: ``base`` plus what the compilers need."""
        ...


def require_cuda(found: str, spec: SpecifierSet, where: str) -> None:
    """BuildError unless CUDA ``found`` satisfies the recipe's ``cuda`` specifier."""
    if not str(spec):
        return
    try:
        ok = Version(found) in spec
    except InvalidVersion:
        ok = False
    if not ok:
        raise CudaVersionError("spec", spec=str(spec), found=found, where=where)

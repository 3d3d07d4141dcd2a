"""A planned tree seen from one target platform: what its configure builds, fetches and
links, the gencodes per library, the auto-triggers left and the ops left unresolved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wh.kernels import autotrigger, torchreg
from wh.kernels.cmakeeval import Configured, Target, configure
from wh.kernels.conditions import Platform
from wh.kernels.kinds import PlatformName
from wh.kernels.prune import Plan


@dataclass
class Preview:
    """One platform's view of a plan."""

    platform: PlatformName
    cuda_version: str
    configured: Configured
    autotriggers: list[autotrigger.AutoTrigger] = field(default_factory=list)
    excluded_here: list[str] = field(default_factory=list)  # exclusions that bite here
    hidden_ops: list[str] = field(default_factory=list)  # guarded ops the preprocessor drops here
    unresolved: list[str] = field(default_factory=list)  # registered, implementation not built

    def targets(self) -> dict[str, Target]:
        return self.configured.targets

    def gencodes(self) -> dict[str, list[str]]:
        return {name: t.gencodes() for name, t in sorted(self.targets().items())}


def variables(platform: Platform, defines: Mapping[str, str], cuda: str) -> dict[str, str]:
    """What if() sees: the platform's variables, the recipe's defines, the CUDA version."""
    return {
        **platform.cmake_vars,
        **defines,
        "CUDA_VERSION": cuda,
        "CMAKE_CUDA_COMPILER_VERSION": cuda,
        "CUDAToolkit_VERSION": cuda,
    }


def preview(plan: Plan, platform: Platform, defines: Mapping[str, str], cuda: str) -> Preview:
    """Evaluate the planned files as ``platform``'s configure would (pure)."""
    var = variables(platform, defines, cuda)
    cfg = configure(plan.files, var)
    out = Preview(platform.name, cuda, cfg)
    out.autotriggers = autotrigger.left_on(plan.files, var, cfg.included)
    compiled = {s for t in cfg.targets.values() for s in t.sources}
    out.excluded_here = [e.path for e in plan.exclusions if e.path not in compiled]
    reg = plan.registration
    if reg and reg in plan.files:
        after = set(torchreg.active_ops(plan.files[reg], platform.macros))
        out.hidden_ops = sorted(op for op in plan.guards if op not in after)
        # only the targets that compile the registration file link its ops
        linked = {s for t in cfg.targets.values() if reg in t.sources for s in t.sources}
        sources = {
            k: v
            for k, v in plan.files.items()
            if k.endswith((".cu", ".cc", ".cpp", ".c")) and k != reg
        }
        out.unresolved = torchreg.unresolved(plan.files[reg], platform.macros, sources, linked)
    return out

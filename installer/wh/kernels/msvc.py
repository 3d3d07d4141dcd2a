"""The Windows toolchain: Visual Studio via vswhere, vcvarsall x64 captured once, CUDA chosen."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PureWindowsPath

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from wh import settings
from wh.errors import CudaVersionError, ToolMissingError, ToolOutputError
from wh.kernels import envblock
from wh.kernels.conditions import WINDOWS_MSVC, Platform
from wh.kernels.gcc import parse_nvcc_version
from wh.kernels.kinds import ToolchainKind
from wh.kernels.toolchain import ToolchainInfo, require_cuda
from wh.proc import spawn as proc

VC_COMPONENT = "Microsoft.VisualStudio.Component.VC.Tools.x86.x64"
_CUDA_VAR = re.compile(r"^CUDA_PATH_V(\d+)_(\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class VsInstall:
    """One Visual Studio installation reported by vswhere."""

    path: str
    version: str
    name: str
    prerelease: bool

    @property
    def vcvarsall(self) -> PureWindowsPath:
        return PureWindowsPath(self.path) / "VC" / "Auxiliary" / "Build" / "vcvarsall.bat"


def _version_key(v: str) -> Version:
    try:
        return Version(v)
    except InvalidVersion:
        return Version("0")


def parse_vswhere(text: str) -> list[VsInstall]:
    """``vswhere -format json`` output -> installs, stable before preview, newest first."""
    try:
        data = json.loads(text or "[]")
    except ValueError as exc:
        raise ToolOutputError("vswhere", str(exc)) from exc
    installs = [
        VsInstall(
            path=str(d.get("installationPath", "")),
            version=str(d.get("installationVersion", "0")),
            name=str(d.get("displayName", "")),
            prerelease=bool(d.get("isPrerelease", False)),
        )
        for d in data
        if isinstance(d, dict) and d.get("installationPath")
    ]
    return sorted(
        installs, key=lambda i: (i.prerelease, [-p for p in _version_key(i.version).release])
    )


def parse_set_output(text: str) -> dict[str, str]:
    """``cmd /c set`` output -> environment (names kept as printed)."""
    env = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name and not name.startswith(("=", " ")):
            env[name] = value
    return env


def env_diff(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """Variables vcvarsall added or changed (names compared case-insensitively, as Windows does)."""
    old = {k.upper(): v for k, v in before.items()}
    return {k: v for k, v in after.items() if old.get(k.upper()) != v}


def cuda_installs(env: Mapping[str, str]) -> dict[Version, str]:
    """``CUDA_PATH_V12_8=...`` variables -> {12.8: path}."""
    out = {}
    for k, v in env.items():
        m = _CUDA_VAR.match(k)
        if m and v:
            out[Version(f"{m.group(1)}.{m.group(2)}")] = v
    return out


def choose_cuda(
    installs: Mapping[Version, str], spec: SpecifierSet, wanted: str = ""
) -> tuple[Version, str]:
    """The CUDA to build with: ``wanted`` (WH_CUDA_VERSION) if set, else the newest in ``spec``."""
    if not installs:
        raise ToolMissingError("cuda")
    listed = [str(v) for v in sorted(installs)]
    if wanted:
        v = Version(wanted)
        if v not in installs:
            raise CudaVersionError("not-installed", wanted=wanted, installed=listed)
        require_cuda(str(v), spec, installs[v])
        return v, installs[v]
    fitting = [v for v in installs if not str(spec) or v in spec]
    if not fitting:
        raise CudaVersionError("none-fits", spec=str(spec), installed=listed)
    best = max(fitting)
    return best, installs[best]


def cuda_path_entries(path_value: str, keep: str) -> str:
    """PATH without other CUDA toolkits' bin folders (so nvcc and its DLLs match ``keep``)."""
    out = []
    for entry in path_value.split(";"):
        low = entry.lower().replace("/", "\\")
        if "nvidia gpu computing toolkit\\cuda\\v" in low and not low.startswith(keep.lower()):
            continue
        out.append(entry)
    return ";".join(out)


def build_environment(
    base: Mapping[str, str], vcvars: Mapping[str, str], cuda_home: str
) -> envblock.Fitted:
    """base + vcvarsall's changes + the chosen CUDA first on PATH; de-duplicated and sized."""
    env = dict(base)
    upper = {k.upper(): k for k in env}
    for k, v in vcvars.items():
        env[upper.get(k.upper(), k)] = v
    path_key = next((k for k in env if k.upper() == "PATH"), "PATH")
    bin_dir = str(PureWindowsPath(cuda_home) / "bin")
    env[path_key] = bin_dir + ";" + cuda_path_entries(env.get(path_key, ""), cuda_home)
    env["CUDA_PATH"] = cuda_home
    env["CUDA_HOME"] = cuda_home
    env["CUDAToolkit_ROOT"] = cuda_home
    env["CUDACXX"] = str(PureWindowsPath(bin_dir) / "nvcc.exe")
    env["DISTUTILS_USE_SDK"] = "1"
    return envblock.fit(env)


@dataclass(frozen=True)
class MsvcToolchain:
    """cl.exe from the chosen Visual Studio + nvcc from the chosen CUDA; generator Ninja."""

    info: ToolchainInfo
    vcvars: Mapping[str, str] = field(default_factory=dict)
    platform: Platform = WINDOWS_MSVC

    @classmethod
    def discover(cls, cuda: SpecifierSet, env: Mapping[str, str]) -> MsvcToolchain:
        root = env.get("ProgramFiles(x86)", r"C:\Program Files (x86)")
        vswhere = PureWindowsPath(root) / "Microsoft Visual Studio" / "Installer" / "vswhere.exe"
        args = [
            str(vswhere),
            "-format",
            "json",
            "-products",
            "*",
            "-prerelease",
            "-requires",
            VC_COMPONENT,
        ]
        installs = parse_vswhere(proc.run(args, what="vswhere").stdout)
        if not installs:
            raise ToolMissingError(
                "msvc", looked=[f"vswhere -requires {VC_COMPONENT} returned nothing"]
            )
        vs = installs[0]
        before = parse_set_output(proc.run(["cmd", "/d", "/c", "set"], what="set").stdout)
        script = f'"{vs.vcvarsall}" x64 >nul && set'
        after = parse_set_output(
            proc.run(["cmd", "/d", "/s", "/c", script], what="vcvarsall").stdout
        )
        vcvars = env_diff(before, after)
        if "VCToolsVersion" not in after:
            raise ToolOutputError("vcvarsall", vs.name)
        _, cuda_home = choose_cuda(cuda_installs(env), cuda, settings.current().cuda_version or "")
        nvcc = str(PureWindowsPath(cuda_home) / "bin" / "nvcc.exe")
        full = parse_nvcc_version(proc.run([nvcc, "--version"], what="nvcc --version").stdout)
        require_cuda(full, cuda, nvcc)
        generator = "Ninja" if shutil.which("ninja") else "Visual Studio 17 2022"
        info = ToolchainInfo(
            ToolchainKind.MSVC,
            f"{vs.name} ({vs.path})",
            after.get("VCToolsVersion", ""),
            nvcc,
            full,
            cuda_home,
            generator,
        )
        return cls(info, vcvars)

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        env = build_environment(base, self.vcvars, self.info.cuda_home).env
        env["CMAKE_GENERATOR"] = self.info.generator
        return env

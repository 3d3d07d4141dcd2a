"""The build pipeline: source -> patches -> pre-build checks -> wheel -> post-build checks."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from installer import proc
from installer.build import archcheck, envblock, patches, source
from installer.build.autotrigger import find_autotriggers
from installer.build.conditions import Platform
from installer.build.provenance import write_build_record
from installer.build.recipe import Effective, load_recipe, parse_choices, resolve
from installer.build.registration import excluded_ops
from installer.build.toolchain import Toolchain, detect
from installer.errors import BuildError, ProcessError


@dataclass(frozen=True)
class Options:
    """What ``wh build`` was asked for."""

    recipe: str
    variants: Sequence[str] = ()
    source: Path | None = None
    wheelhouse: Path = Path("wheelhouse")
    work: Path = Path(".wh-cache/build")
    check_only: bool = False
    archs: Sequence[str] = ()


@dataclass
class Report:
    """Everything a build (or --check) found; rendered as text or JSON by the CLI."""

    recipe: str
    variant: Mapping[str, bool]
    archs: Sequence[str]
    defines: Mapping[str, str]
    source: Mapping[str, str] = field(default_factory=dict)
    patches: list[dict[str, object]] = field(default_factory=list)
    autotriggers: list[str] = field(default_factory=list)
    excluded_ops: list[str] = field(default_factory=list)
    toolchain: Mapping[str, str] = field(default_factory=dict)
    wheel: str = ""
    record: str = ""
    binaries: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _source_root(eff: Effective, override: Path | None) -> Path:
    if override is not None:
        return override.resolve()
    pin = eff.recipe.source.path
    if not pin:
        raise BuildError(
            f"recipe {eff.recipe.name} names no source path",
            hint="pass --source PATH (the folder or archive of the pinned source)",
        )
    base = eff.recipe.file.parent if eff.recipe.file else Path.cwd()
    return (base / pin).resolve()


def _read(root: Path, rel: str) -> str | None:
    f = root / rel
    return f.read_bytes().decode("utf-8", "replace") if f.is_file() else None


def _variables(eff: Effective, tc: Toolchain | None) -> dict[str, str]:
    cuda = tc.info.cuda_version if tc else "0"
    return {**eff.defines, "CUDA_VERSION": cuda, "CMAKE_CUDA_COMPILER_VERSION": cuda}


def prebuild_checks(
    project: Path, eff: Effective, platform: Platform, variables: Mapping[str, str], report: Report
) -> dict[str, str]:
    """Plan patches in memory and run the auto-trigger and registration checks on the result."""
    files = patches.read_files(project, eff.patches)
    outcomes = patches.plan_patches(files, eff.patches)
    report.patches = [o.to_json() for o in outcomes]
    reg = eff.recipe.registration
    cmake_rel = reg.cmake if reg else "CMakeLists.txt"
    cmake = files.get(cmake_rel) or _read(project, cmake_rel) or ""
    report.autotriggers = [a.describe() for a in find_autotriggers(cmake)]
    if reg:
        reg_text = files.get(reg.source) or _read(project, reg.source)
        if reg_text is None:
            raise BuildError(f"registration source {reg.source} not found in {project}")
        sources = {}
        from installer.build.registration import cmake_sources

        for rel in [*cmake_sources(cmake, {}), reg.source]:
            text = files.get(rel) or _read(project, rel)
            if text is not None:
                sources[rel] = text
        found = excluded_ops(reg_text, cmake, sources, platform.with_cmake(variables))
        report.excluded_ops = [e.describe() for e in found]
    return files


def _toolchain(eff: Effective, env: Mapping[str, str], optional: bool) -> Toolchain | None:
    try:
        return detect(eff.recipe.cuda, env)
    except (BuildError, ProcessError):
        if optional:
            return None
        raise


def _expected_platform_tag(tc: Toolchain) -> str:
    return "win_amd64" if tc.platform.name.startswith("windows") else "linux"


def check_wheel_name(wheel: Path, eff: Effective, tc: Toolchain) -> None:
    """Name, version and tags of the built wheel against the recipe and this interpreter."""
    try:
        name, version, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise BuildError(f"the build produced an invalid wheel name {wheel.name}") from exc
    problems = []
    if name != canonicalize_name(eff.recipe.dist):
        problems.append(f"name: expected {eff.recipe.dist}, found {name}")
    if str(version) != eff.recipe.version:
        problems.append(f"version: expected {eff.recipe.version}, found {version}")
    plat = _expected_platform_tag(tc)
    if not all(plat in t.platform for t in tags):
        problems.append(
            f"platform tag: expected {plat}*, found {', '.join(sorted({t.platform for t in tags}))}"
        )
    if not set(tags) & set(sys_tags()):
        problems.append(f"no tag of {wheel.name} is installable by {sys.executable}")
    if problems:
        raise BuildError(
            f"the built wheel {wheel.name} is not what the recipe promises",
            details=problems,
            hint="check the recipe's version/dist and the project's pyproject (wheel.py-api)",
        )


def import_check(
    wheel: Path, modules: Sequence[str], scratch: Path, environment: str = "isolated"
) -> None:
    """Import each module from the built wheel.

    ``isolated``: the wheel alone in a fresh venv. ``build``: the wheel unpacked first on
    ``sys.path`` of the build interpreter, whose packages (torch) the extension loads.
    """
    if not modules:
        return
    prefix: list[str] = []
    if environment == "build":
        unpacked = scratch / "unpacked"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(unpacked)
        py = Path(sys.executable)
        prefix = [f"import sys; sys.path.insert(0, {str(unpacked)!r}); "]
    else:
        venv = scratch / "venv"
        proc.run([sys.executable, "-m", "venv", "--clear", venv], what="python -m venv")
        py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        proc.run(
            [py, "-m", "pip", "install", "--no-deps", "--no-index", "--isolated", wheel],
            env=proc.clean_env(),
            what="pip install",
        )
    for mod in modules:
        code = "".join(prefix) + f"import {mod}"
        done = proc.run([py, "-c", code], check=False, what=f"import {mod}")
        if done.returncode != 0:
            raise BuildError(
                f"the built wheel installs but `import {mod}` fails",
                details=(done.stdout + done.stderr).strip().splitlines()[-8:],
                hint="a missing DLL/.so or an unresolved symbol:"
                " check the registered ops and link flags",
            )


def build(opts: Options) -> Report:
    """Run ``wh build`` (or ``--check``) and return its report; every failure is a BuildError."""
    recipe = load_recipe(opts.recipe)
    eff = resolve(recipe, parse_choices(opts.variants), opts.archs)
    report = Report(recipe.name, eff.variant, eff.archs, eff.defines)
    src = _source_root(eff, opts.source)
    report.source = {"path": str(src), **source.verify(src, recipe.source)}
    if not (recipe.source.sha256 or recipe.source.tree_sha256 or recipe.source.git_commit):
        report.warnings.append(
            "the recipe pins no source hash or commit (found: "
            + ", ".join(f"{k}={v}" for k, v in report.source.items() if k != "path")
            + ")"
        )
    env = dict(os.environ)
    tc = _toolchain(eff, env, optional=opts.check_only)
    if tc:
        report.toolchain = tc.info.to_json()
    elif opts.check_only:
        report.warnings.append("no usable toolchain found; checks assume CUDA_VERSION 0")
    from installer.build.conditions import LINUX_GCC, WINDOWS_MSVC

    platform = tc.platform if tc else (WINDOWS_MSVC if sys.platform == "win32" else LINUX_GCC)
    if recipe.platforms and platform.name not in recipe.platforms:
        report.warnings.append(
            f"recipe is written for {', '.join(recipe.platforms)}, this is {platform.name}"
        )
    variables = _variables(eff, tc)
    work = (opts.work / recipe.name).resolve()
    if opts.check_only:
        project = src / recipe.source.subdirectory if not source.is_archive(src) else src
        if source.is_archive(src):
            project = source.materialize(src, work / "check") / recipe.source.subdirectory
        prebuild_checks(project, eff, platform, variables, report)
        return report
    assert tc is not None
    tree = source.materialize(src, work / "src")
    project = tree / recipe.source.subdirectory
    prebuild_checks(project, eff, platform, variables, report)
    if report.excluded_ops:
        raise BuildError(
            f"{len(report.excluded_ops)} registered op(s) have their implementation"
            f" excluded on {platform.name}",
            details=report.excluded_ops,
            hint="guard their registrations with the same condition as the CMake exclusion"
            " (if(NOT WIN32) -> #ifndef _WIN32, if(NOT MSVC) -> #ifndef _MSC_VER),"
            " as a recipe patch",
        )
    outcomes = patches.apply_patches(project, eff.patches)
    report.patches = [o.to_json() for o in outcomes]
    wheel = _run_backend(project, eff, tc, work, report)
    check_wheel_name(wheel, eff, tc)
    reports = archcheck.check_wheel_archs(wheel, eff.archs, work / "archcheck")
    report.binaries = [
        {"binary": r.binary, "sass": sorted(r.sass), "ptx": sorted(r.ptx)} for r in reports
    ]
    with tempfile.TemporaryDirectory(prefix="wh-import-") as tmp:
        import_check(wheel, recipe.imports, Path(tmp), recipe.check_env)
    opts.wheelhouse.mkdir(parents=True, exist_ok=True)
    final = opts.wheelhouse.resolve() / wheel.name
    shutil.copy2(wheel, final)
    report.wheel = str(final)
    record = write_build_record(final, _record(eff, report))
    report.record = str(record)
    return report


def _record(eff: Effective, report: Report) -> dict[str, Any]:
    return {
        "recipe": {
            "name": eff.recipe.name,
            "sha256": eff.recipe.file_sha256,
            "file": str(eff.recipe.file),
        },
        "source": dict(report.source),
        "variant": dict(eff.variant),
        "defines": dict(eff.defines),
        "architectures": list(eff.archs),
        "patches": report.patches,
        "toolchain": dict(report.toolchain),
        "binaries": report.binaries,
        "provides": list(eff.provides),
        "autotriggers_left": report.autotriggers,
        # the torch the extension was compiled against: `wh lock` refuses it next to another
        "torch": build_torch(),
    }


def build_torch() -> dict[str, str]:
    """The build interpreter's torch: its version with the local label (2.9.1+cu130) and
    the CUDA it was built with (from torch/version.py), read without importing torch.
    Empty when the build interpreter has no torch."""
    from importlib import metadata

    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return {}
    out = {"version": dist.version}
    try:
        text = Path(str(dist.locate_file("torch/version.py"))).read_text(encoding="utf-8")
    except OSError:
        return out
    m = re.search(r"^cuda\b[^=\n]*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    if m:
        out["cuda"] = m.group(1)
    return out


def cached_generator(cache_text: str) -> str | None:
    """The ``CMAKE_GENERATOR`` recorded in a CMakeCache.txt (pure)."""
    for line in cache_text.splitlines():
        if line.startswith("CMAKE_GENERATOR:"):
            return line.split("=", 1)[1].strip()
    return None


def ensure_build_dir(build_dir: Path, generator: str) -> bool:
    """Clean ``build_dir`` if its cache was made by another generator; True if cleaned."""
    cache = build_dir / "CMakeCache.txt"
    if cache.is_file():
        found = cached_generator(cache.read_text(encoding="utf-8", errors="replace"))
        if found is not None and found != generator:
            shutil.rmtree(build_dir)
            return True
    return False


def _run_backend(project: Path, eff: Effective, tc: Toolchain, work: Path, report: Report) -> Path:
    build_dir = work / f"build-{tc.info.generator.replace(' ', '-').lower()}"
    if ensure_build_dir(build_dir, tc.info.generator):
        report.warnings.append(f"{build_dir} was configured with another generator: cleaned")
    out = work / "dist"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    defines = {**eff.defines, "CMAKE_CUDA_ARCHITECTURES": archcheck.cmake_architectures(eff.archs)}
    env = tc.environment(proc.clean_env(eff.env))
    fitted = envblock.fit(env, sep=os.pathsep) if os.name == "nt" else None
    if fitted:
        env = fitted.env
        if fitted.removed_path_entries:
            report.warnings.append(f"PATH: {fitted.removed_path_entries} duplicate entries dropped")
    args: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-build-isolation",
        "--no-deps",
        "--no-index",
        "-w",
        out,
        project,
    ]
    args += [f"--config-settings=cmake.define.{k}={v}" for k, v in sorted(defines.items())]
    args += [
        f"--config-settings=build-dir={build_dir}",
        "--config-settings=cmake.build-type=Release",
    ]
    try:
        proc.run(args, env=env, cwd=project, what=f"building {eff.recipe.name}")
    except ProcessError as exc:
        raise BuildError(
            f"building {eff.recipe.name} failed",
            details=exc.details,
            hint="read the compiler output above; rerun with --check"
            " to see the patch and registration state",
        ) from exc
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(
            f"the build of {eff.recipe.name} produced {len(wheels)} wheels in {out}, expected 1",
            hint="check that the project's build backend is scikit-build-core"
            " and that the build finished",
        )
    return wheels[0]

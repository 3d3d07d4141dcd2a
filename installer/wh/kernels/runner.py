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

from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from wh.proc import spawn as proc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
from importlib import metadata

from wh.errors import (
    BuildBackendError,
    BuildError,
    BuildOptionError,
    CudaVersionError,
    EmitError,
    PatchError,
    ProcessError,
    RecipeRefusedError,
    RegistrationError,
    SourceError,
    WheelCheckError,
)
from wh.kernels import archcheck, envblock, preview, prune, source
from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC, Platform
from wh.kernels.gcc import GccToolchain
from wh.kernels.kinds import CheckEnvironment, OpKind
from wh.kernels.msvc import MsvcToolchain
from wh.kernels.operations import wanted_codes
from wh.kernels.recipe import Effective, load_recipe, parse_choices, resolve
from wh.kernels.registration import cmake_sources, excluded_ops
from wh.kernels.toolchain import Toolchain
from wh.model.choices import TargetOS
from wh.wheel import buildrecord


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
    target_os: TargetOS | None = None  # evaluate conditions as that platform
    cuda_version: str | None = None  # the CUDA version conditions see
    emit: Path | None = None  # write the patched tree there, build nothing
    allow_unpinned: bool = False


@dataclass
class Report:
    """Everything a build (or --check) found; rendered as text or JSON by the CLI."""

    recipe: str
    variant: Mapping[str, bool]
    archs: Sequence[str]
    defines: Mapping[str, str]
    target_os: TargetOS | None = None  # set before any report is returned
    cuda_version: str = ""
    source: Mapping[str, str] = field(default_factory=dict)
    operations: list[dict[str, object]] = field(default_factory=list)
    patches: list[dict[str, object]] = field(default_factory=list)
    excluded_sources: list[dict[str, object]] = field(default_factory=list)
    guarded_ops: list[str] = field(default_factory=list)
    registration_guards: Mapping[str, str] = field(default_factory=dict)
    unmapped_ops: int = 0
    autotriggers: list[str] = field(default_factory=list)
    gencodes: Mapping[str, list[str]] = field(default_factory=dict)
    libraries: Mapping[str, dict[str, object]] = field(default_factory=dict)
    fetch_content: list[str] = field(default_factory=list)
    subdirectories: list[str] = field(default_factory=list)
    switches: Mapping[str, str] = field(default_factory=dict)
    excluded_ops: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    emitted: Mapping[str, object] = field(default_factory=dict)
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
        raise SourceError("no-path", recipe=eff.recipe.name)
    base = eff.recipe.file.parent if eff.recipe.file else Path.cwd()
    return (base / pin).resolve()


def _read(root: Path, rel: str) -> str | None:
    f = root / rel
    return f.read_bytes().decode("utf-8", "replace") if f.is_file() else None


TARGETS = {TargetOS.WINDOWS: WINDOWS_MSVC, TargetOS.LINUX: LINUX_GCC}


def _target(opts: Options, tc: Toolchain | None) -> Platform:
    if opts.target_os:
        if opts.target_os not in TARGETS:
            raise BuildOptionError(
                "--target-os", opts.target_os, "unknown", allowed=TargetOS.values()
            )
        return TARGETS[opts.target_os]
    if tc:
        return tc.platform
    return WINDOWS_MSVC if sys.platform == "win32" else LINUX_GCC


def check_plan(
    project: Path,
    eff: Effective,
    platform: Platform,
    cuda: str,
    report: Report,
) -> prune.Plan:
    """Plan the recipe in memory and preview it as ``platform`` with CUDA ``cuda``; fill
    ``report`` and its ``problems`` (every one, not the first)."""
    files = prune.read_tree(project, eff)
    plan = prune.plan(files, eff)
    report.operations = [r.to_json() for r in plan.results] + [
        {**o.to_json(), "op": OpKind.TEXT_PATCH, "what": o.patch.why} for o in plan.patches
    ]
    report.patches = [o.to_json() for o in plan.patches]
    defines = {**eff.defines, "CMAKE_CUDA_ARCHITECTURES": archcheck.cmake_architectures(eff.archs)}
    view = preview.preview(plan, platform, defines, cuda)
    report.excluded_sources = [
        {
            "path": e.path,
            "condition": e.condition,
            "guard": f"#ifndef {e.macro}",
            "excluded_here": e.path in view.excluded_here,
        }
        for e in plan.exclusions
    ]
    report.guarded_ops = view.hidden_ops
    report.registration_guards = plan.guards
    report.unmapped_ops = len(plan.unmapped_ops)
    report.autotriggers = [a.describe() for a in view.autotriggers]
    report.gencodes = view.gencodes()
    report.libraries = {
        n: {"sources": len(t.sources), "links": t.links, "file": f"{t.file}:{t.line}"}
        for n, t in sorted(view.targets().items())
    }
    report.fetch_content = view.configured.fetched
    report.subdirectories = view.configured.subdirectories
    names = [op.switch for op in eff.operations if hasattr(op, "switch")]
    report.switches = {
        n: view.configured.variables.get(n, "undefined") for n in dict.fromkeys(names)
    }
    report.problems = plan.problems()
    if plan.registration:
        report.excluded_ops = view.unresolved
    else:
        reg = eff.recipe.registration
        if reg:
            report.excluded_ops = _legacy_excluded(
                project, plan, reg.source, reg.cmake, platform, defines, cuda
            )
    report.problems += [
        f"registered but not built on {platform.name}: {e}" for e in report.excluded_ops
    ]
    report.problems += variant_problems(eff, view)
    return plan


def _legacy_excluded(
    project: Path,
    plan: prune.Plan,
    reg_source: str,
    cmake_rel: str,
    platform: Platform,
    defines: Mapping[str, str],
    cuda: str,
) -> list[str]:
    """The registration check for recipes without a guard operation (C method tables too)."""
    files = plan.files
    cmake = files.get(cmake_rel) or _read(project, cmake_rel) or ""
    reg_text = files.get(reg_source) or _read(project, reg_source)
    if reg_text is None:
        raise RegistrationError(reg_source, "missing", project=project)
    sources = {}
    for rel in [*cmake_sources(cmake, {}), reg_source]:
        text = files.get(rel) or _read(project, rel)
        if text is not None:
            sources[rel] = text
    variables = {**defines, "CUDA_VERSION": cuda, "CMAKE_CUDA_COMPILER_VERSION": cuda}
    found = excluded_ops(reg_text, cmake, sources, platform.with_cmake(variables))
    return [e.describe() for e in found]


def variant_problems(eff: Effective, view: preview.Preview) -> list[str]:
    """An extension a variant adds must be configured, for the recipe's architectures only."""
    out = []
    want = set(wanted_codes(eff.archs))
    for name in [p for p in eff.provides if p not in eff.recipe.provides]:
        t = view.targets().get(name)
        if t is None:
            out.append(
                f"the variant provides {name}, but {view.platform} configures no target {name}"
            )
            continue
        codes = set(t.gencodes())
        if not codes or not codes <= want:
            out.append(
                f"{name} is configured with gencodes {', '.join(sorted(codes)) or 'none'},"
                f" not {', '.join(sorted(want))}"
            )
        disabled = [d for d in t.definitions if "DISABLE_SM8" in d]
        if disabled and any(c.endswith(("_80", "_86", "_89")) for c in want):
            out.append(f"{name} is compiled with {', '.join(disabled)}: its sm_8x path is left out")
    return out


def _pin(src: Path, project: Path, eff: Effective, opts: Options, report: Report) -> None:
    inputs = prune.input_files(project, eff)
    found, problems = source.check_pin(src, project, eff.recipe.source, inputs)
    report.source = {"path": str(src), "project": str(project), **found}
    if problems and not opts.allow_unpinned:
        raise SourceError("unpinned", path=src, recipe=eff.recipe.name, problems=problems)
    report.warnings += [f"unpinned (--allow-unpinned): {p}" for p in problems]


def detect(cuda: SpecifierSet, env: Mapping[str, str]) -> Toolchain:
    """The toolchain for this machine: MSVC on Windows, gcc elsewhere."""
    if sys.platform == "win32":
        return MsvcToolchain.discover(cuda, env)
    return GccToolchain.discover(cuda, env)


def _toolchain(eff: Effective, env: Mapping[str, str], optional: bool) -> Toolchain | None:
    try:
        return detect(eff.recipe.cuda, env)
    except (BuildError, ProcessError):
        if optional:
            return None
        raise


def _expected_platform_tag(tc: Toolchain) -> str:
    return "win_amd64" if tc.platform.name.target_os is TargetOS.WINDOWS else "linux"


def source_version(project: Path) -> str | None:
    """``[project].version`` of the project's pyproject.toml, if it says one."""
    f = project / "pyproject.toml"
    if not f.is_file():
        return None
    try:
        data = tomllib.loads(f.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    version = data.get("project", {}).get("version")
    return version if isinstance(version, str) else None


def check_wheel_name(wheel: Path, eff: Effective, tc: Toolchain, version_: str = "") -> None:
    """Name, version and tags of the built wheel against the recipe and this interpreter."""
    try:
        name, version, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise WheelCheckError(wheel.name, "name") from exc
    problems = []
    if name != canonicalize_name(eff.recipe.dist):
        problems.append(f"name: expected {eff.recipe.dist}, found {name}")
    expected = version_ or eff.recipe.version
    if str(version) != expected:
        problems.append(f"version: expected {expected}, found {version}")
    plat = _expected_platform_tag(tc)
    if not all(plat in t.platform for t in tags):
        problems.append(
            f"platform tag: expected {plat}*, found {', '.join(sorted({t.platform for t in tags}))}"
        )
    if not set(tags) & set(sys_tags()):
        problems.append(f"no tag of {wheel.name} is installable by {sys.executable}")
    if problems:
        raise WheelCheckError(wheel.name, "promise", problems=problems)


def import_check(
    wheel: Path,
    modules: Sequence[str],
    scratch: Path,
    environment: CheckEnvironment = CheckEnvironment.ISOLATED,
) -> None:
    """Import each module from the built wheel.

    ``isolated``: the wheel alone in a fresh venv. ``build``: the wheel unpacked first on
    ``sys.path`` of the build interpreter, whose packages (torch) the extension loads.
    """
    if not modules:
        return
    prefix: list[str] = []
    if environment is CheckEnvironment.BUILD:
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
            raise WheelCheckError(
                wheel.name,
                "import",
                module=mod,
                problems=(done.stdout + done.stderr).strip().splitlines()[-8:],
            )


def build(opts: Options) -> Report:
    """Run ``wh build`` (or ``--check``, ``--emit``) and return its report, or a BuildError."""
    recipe = load_recipe(opts.recipe)
    eff = resolve(recipe, parse_choices(opts.variants), opts.archs)
    report = Report(recipe.name, eff.variant, eff.archs, eff.defines)
    src = _source_root(eff, opts.source)
    if not src.exists():
        raise SourceError("missing", path=src)
    preview_only = opts.check_only or opts.emit is not None
    env = dict(os.environ)
    tc = _toolchain(eff, env, optional=preview_only)
    if tc:
        report.toolchain = tc.info.to_json()
    platform = _target(opts, tc)
    target_os = report.target_os = platform.name.target_os
    if not preview_only and tc and platform.name != tc.platform.name:
        raise BuildOptionError(
            "--target-os", str(opts.target_os), "other-machine", platform=tc.platform.name
        )
    refused = eff.refused.get(target_os)
    if refused:
        raise RecipeRefusedError(recipe.name, target_os, refused)
    cuda = _cuda(opts, tc, report, preview_only)
    report.cuda_version = cuda
    if recipe.platforms and platform.name not in recipe.platforms:
        report.warnings.append(
            f"recipe is written for {', '.join(recipe.platforms)}, this is {platform.name}"
        )
    work = (opts.work / recipe.name).resolve()
    tree = source.materialize(src, work / "check") if source.is_archive(src) else src
    project = tree / recipe.source.subdirectory
    if not (project / "CMakeLists.txt").is_file() and (tree / "CMakeLists.txt").is_file():
        raise SourceError(
            "project-itself", path=src, project=project, subdirectory=recipe.source.subdirectory
        )
    _pin(src, project, eff, opts, report)
    found_version = source_version(project)
    if found_version and found_version != recipe.version:
        # only an unpinned tree gets here: the inputs digest covers pyproject.toml
        report.warnings.append(
            f"the source is {recipe.dist} {found_version}; the recipe was checked against"
            f" {recipe.version}: the wheel is expected to be {found_version}"
        )
        report.source = {**report.source, "version": found_version}
    plan = check_plan(project, eff, platform, cuda, report)
    if opts.check_only and opts.emit is None:
        return report
    if report.problems:
        raise PatchError("not-clean", recipe=recipe.name, path=src, problems=report.problems)
    if opts.emit is not None:
        report.emitted = emit(tree, recipe.source.subdirectory, plan, opts.emit)
        return report
    assert tc is not None
    if "tree_sha256" not in report.source and not source.is_archive(src):
        report.source = {**report.source, "tree_sha256": source.tree_digest(src)}
    copy = source.materialize(src, work / "src")
    project = copy / recipe.source.subdirectory
    for rel, text in plan.changed().items():
        (project / rel).write_bytes(plan.encoded(rel, text))
    reread = prune.plan(prune.read_tree(project, eff), eff)
    if reread.changed() or not reread.ok:
        raise PatchError(
            "read-back-copy", path=project, problems=reread.problems() or sorted(reread.changed())
        )
    wheel = _run_backend(project, eff, tc, work, report)
    check_wheel_name(wheel, eff, tc, report.source.get("version", ""))
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
    record = buildrecord.write(final, _record(eff, report))
    report.record = str(record)
    return report


def _cuda(opts: Options, tc: Toolchain | None, report: Report, preview_only: bool) -> str:
    found = tc.info.cuda_version if tc else ""
    if opts.cuda_version:
        if not preview_only and found and not found.startswith(opts.cuda_version):
            raise CudaVersionError("option", wanted=opts.cuda_version, found=found)
        return opts.cuda_version
    if found:
        return ".".join(found.split(".")[:2])
    report.warnings.append(
        "no CUDA toolkit found: conditions evaluated with CUDA_VERSION 13.0 (pass --cuda-version)"
    )
    return "13.0"


def _same_tree(a: Path, b: Path) -> bool:
    def listing(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }

    return listing(a) == listing(b)


def emit(tree: Path, subdirectory: str, plan: prune.Plan, out: Path) -> dict[str, object]:
    """Write a copy of ``tree`` with the planned files to ``out`` (the tree is not touched).

    The copy is made beside ``out`` and moved into place; an ``out`` that already holds
    the same bytes is left as it is; one that holds something else is refused.
    """
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise EmitError(out, "file")
    if out == tree or tree in out.parents:
        raise EmitError(out, "inside", tree=tree)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.wh-", dir=out.parent))
    try:
        staged = tmp / "tree"
        shutil.copytree(tree, staged, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        changed = plan.changed()
        for rel, text in changed.items():
            (staged / subdirectory / rel).write_bytes(plan.encoded(rel, text))
        state = "written"
        if out.exists() and any(out.iterdir()):
            if not _same_tree(staged, out):
                raise EmitError(out, "occupied")
            state = "unchanged (byte-identical to what is there)"
        else:
            if out.exists():
                out.rmdir()
            staged.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prefix = f"{subdirectory}/" if subdirectory else ""
    return {"path": str(out), "state": state, "changed": sorted(prefix + r for r in changed)}


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
        "operations": report.operations,
        "guarded_ops": report.guarded_ops,
        "excluded_sources": report.excluded_sources,
        "gencodes": dict(report.gencodes),
        "toolchain": dict(report.toolchain),
        "binaries": report.binaries,
        "provides": list(eff.provides),
        "autotriggers_left": report.autotriggers,
        "target_os": report.target_os,
        # the torch the extension was compiled against: `wh lock` refuses it next to another
        "torch": build_torch(),
    }


def build_torch() -> dict[str, str]:
    """The build interpreter's torch: its version with the local label (2.9.1+cu130) and
    the CUDA it was built with (from torch/version.py), read without importing torch.
    Empty when the build interpreter has no torch."""
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
        raise BuildBackendError(eff.recipe.name, "failed", output=exc.details) from exc
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildBackendError(eff.recipe.name, "wheel-count", wheels=len(wheels), folder=out)
    return wheels[0]

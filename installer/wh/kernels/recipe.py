"""Recipes: the TOML that pins a source tree and says how to patch, configure and check it."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from wh.errors import BuildOptionError, RecipeError, RecipeLoadError, VariantError
from wh.kernels.kinds import CheckEnvironment
from wh.kernels.operations import Operation, from_table
from wh.kernels.patches import Patch
from wh.model.choices import TargetOS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


@dataclass(frozen=True)
class Source:
    """Where the source is and how it is pinned."""

    path: str = ""
    sha256: str = ""  # of an archive
    tree_sha256: str = ""  # of a folder, see source.tree_digest
    git_commit: str = ""
    subdirectory: str = ""
    # sha256 over the files the recipe reads (CMake files, registration file, the sources
    # it excludes, pyproject.toml), relative to the project: see source.inputs_digest
    inputs_sha256: str = ""

    @property
    def pinned(self) -> bool:
        return bool(self.sha256 or self.tree_sha256 or self.git_commit or self.inputs_sha256)


@dataclass(frozen=True)
class Addon:
    """What one side of a variant adds: defines, patches, environment, provided features."""

    defines: Mapping[str, str] = field(default_factory=dict)
    patches: tuple[Patch, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    provides: tuple[str, ...] = ()
    operations: tuple[Operation, ...] = ()
    # target OS -> why this side of the variant cannot be built there
    refused: Mapping[TargetOS, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """A named on/off switch of a recipe (``fa3 = true``)."""

    name: str
    default: bool
    on: Addon
    off: Addon
    description: str = ""


@dataclass(frozen=True)
class RegistrationCheck:
    """Which op registration file and CMakeLists to compare before building."""

    source: str
    cmake: str = "CMakeLists.txt"


@dataclass(frozen=True)
class Recipe:
    """A parsed recipe, before a variant is chosen."""

    name: str
    dist: str
    version: str
    cuda: SpecifierSet
    archs: tuple[str, ...]
    source: Source
    defines: Mapping[str, str]
    env: Mapping[str, str]
    patches: tuple[Patch, ...]
    operations: tuple[Operation, ...]
    imports: tuple[str, ...]
    provides: tuple[str, ...]
    registration: RegistrationCheck | None
    check_env: CheckEnvironment
    variants: Mapping[str, Variant]
    platforms: tuple[str, ...]
    file: Path | None = None
    file_sha256: str = ""


@dataclass(frozen=True)
class Effective:
    """A recipe with its variants decided: everything a build needs."""

    recipe: Recipe
    variant: Mapping[str, bool]
    archs: tuple[str, ...]
    defines: Mapping[str, str]
    env: Mapping[str, str]
    patches: tuple[Patch, ...]
    provides: tuple[str, ...]
    operations: tuple[Operation, ...] = ()
    refused: Mapping[TargetOS, str] = field(default_factory=dict)  # target OS -> why


def _operations(value: object, where: str, archs: Sequence[str]) -> tuple[Operation, ...]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise RecipeError(where, "tables", value="operations")
    return tuple(from_table(v, f"{where}[{i}]", archs) for i, v in enumerate(value))


def _table(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise RecipeError(where, "table", key=f"[{key}]")
    return value


def _strs(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecipeError(where, "strings")
    return tuple(value)


def _defines(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise RecipeError(where, "table")
    out = {}
    for k, v in value.items():
        if isinstance(v, bool):
            out[k] = "ON" if v else "OFF"
        elif isinstance(v, (str, int)):
            out[k] = str(v)
        else:
            raise RecipeError(f"{where}.{k}", "scalar")
    return out


def _patches(value: object, where: str) -> tuple[Patch, ...]:
    if not isinstance(value, list):
        raise RecipeError(where, "tables", value="patches")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise RecipeError(f"{where}[{i}]", "table")
        missing = [k for k in ("file", "anchor", "replacement") if k not in item]
        if missing:
            raise RecipeError(f"{where}[{i}]", "lacks", missing=missing)
        out.append(
            Patch(
                file=str(item["file"]),
                anchor=str(item["anchor"]),
                replacement=str(item["replacement"]),
                count=int(item.get("count", 1)),
                why=str(item.get("why", "")),
            )
        )
    return tuple(out)


def _addon(data: Mapping[str, Any], where: str, archs: Sequence[str]) -> Addon:
    refused = data.get("refused", {})
    if not isinstance(refused, dict) or not all(
        k in TargetOS.values() and isinstance(v, str) for k, v in refused.items()
    ):
        raise RecipeError(f"{where}.refused", "refused", allowed=TargetOS.values())
    return Addon(
        defines=_defines(data.get("defines", {}), f"{where}.defines"),
        patches=_patches(data.get("patches", []), f"{where}.patches"),
        env=_defines(data.get("env", {}), f"{where}.env"),
        provides=_strs(data.get("provides", []), f"{where}.provides"),
        operations=_operations(data.get("operations", []), f"{where}.operations", archs),
        refused={TargetOS(k): v for k, v in refused.items()},
    )


def parse_recipe(data: Mapping[str, Any], *, file: Path | None = None, sha256: str = "") -> Recipe:
    """Build a Recipe from TOML data (pure); every problem is a BuildError naming the key."""
    where = str(file) if file else "recipe"
    head = _table(data, "recipe", where)
    for key in ("name", "version"):
        if not isinstance(head.get(key), str):
            raise RecipeError(where, "required", key=f"[recipe].{key}")
    try:
        cuda = SpecifierSet(str(head.get("cuda", "")))
    except InvalidSpecifier as exc:
        raise RecipeError(where, "specifier", key="[recipe].cuda", problem=str(exc)) from exc
    src = _table(data, "source", where)
    source = Source(
        path=str(src.get("path", "")),
        sha256=str(src.get("sha256", "")).lower(),
        tree_sha256=str(src.get("tree_sha256", "")).lower(),
        git_commit=str(src.get("git_commit", "")).lower(),
        subdirectory=str(src.get("subdirectory", "")),
        inputs_sha256=str(src.get("inputs_sha256", "")).lower(),
    )
    archs = _strs(head.get("archs", ["86"]), "[recipe].archs")
    reg = data.get("registration")
    registration = None
    if isinstance(reg, dict):
        registration = RegistrationCheck(
            str(reg["source"]), str(reg.get("cmake", "CMakeLists.txt"))
        )
    variants = {}
    for vname, v in _table(data, "variants", where).items():
        if not isinstance(v, dict):
            raise RecipeError(where, "table", key=f"[variants.{vname}]")
        variants[vname] = Variant(
            name=vname,
            default=bool(v.get("default", False)),
            on=_addon(_table(v, "on", where), f"variants.{vname}.on", archs),
            off=_addon(_table(v, "off", where), f"variants.{vname}.off", archs),
            description=str(v.get("description", "")),
        )
    return Recipe(
        name=head["name"],
        dist=str(head.get("dist", head["name"])),
        version=head["version"],
        cuda=cuda,
        archs=archs,
        source=source,
        defines=_defines(data.get("defines", {}), "[defines]"),
        env=_defines(data.get("env", {}), "[env]"),
        patches=_patches(data.get("patches", []), "[[patches]]"),
        operations=_operations(data.get("operations", []), "[[operations]]", archs),
        imports=_strs(_table(data, "checks", where).get("imports", []), "[checks].imports"),
        check_env=_check_env(_table(data, "checks", where).get("environment", "isolated")),
        provides=_strs(head.get("provides", []), "[recipe].provides"),
        registration=registration,
        variants=variants,
        platforms=_strs(head.get("platforms", []), "[recipe].platforms"),
        file=file,
        file_sha256=sha256,
    )


def _check_env(value: Any) -> CheckEnvironment:
    """Where import checks run: ``isolated`` (a fresh venv with only the wheel) or ``build``
    (the interpreter that built it, for extensions that import torch at load time)."""
    if value not in CheckEnvironment.values():
        raise RecipeError(
            "[checks].environment", "environment", value=value, allowed=CheckEnvironment.values()
        )
    return CheckEnvironment(value)


def parse_choices(items: Sequence[str]) -> dict[str, bool]:
    """``["fa3", "fa3=off"]`` -> ``{"fa3": False}``; last one wins."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        v = value.strip().lower() or "on"
        if v not in {"on", "off", "true", "false", "1", "0"}:
            raise BuildOptionError("--variant", item, "on-off")
        out[name.strip()] = v in {"on", "true", "1"}
    return out


def resolve(recipe: Recipe, choices: Mapping[str, bool], archs: Sequence[str] = ()) -> Effective:
    """Decide the variants (pure): base settings then each variant's on/off addon, in order."""
    unknown = sorted(set(choices) - set(recipe.variants))
    if unknown:
        raise VariantError(recipe.name, unknown, list(recipe.variants))
    defines, env = dict(recipe.defines), dict(recipe.env)
    patches, provides = list(recipe.patches), list(recipe.provides)
    operations = list(recipe.operations)
    refused: dict[TargetOS, str] = {}
    chosen = {}
    for name, var in recipe.variants.items():
        on = choices.get(name, var.default)
        chosen[name] = on
        add = var.on if on else var.off
        defines.update(add.defines)
        env.update(add.env)
        patches.extend(add.patches)
        operations.extend(add.operations)
        for os_name, why in add.refused.items():
            refused[os_name] = f"--variant {name}={'on' if on else 'off'}: {why}"
        provides.extend(p for p in add.provides if p not in provides)
    return Effective(
        recipe=recipe,
        variant=chosen,
        archs=tuple(archs) or recipe.archs,
        defines=defines,
        env=env,
        patches=tuple(patches),
        provides=tuple(provides),
        operations=tuple(operations),
        refused=refused,
    )


def shipped() -> list[str]:
    """Names of the recipes shipped with wh."""
    root = resources.files("wh.kernels") / "recipes"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_recipe(name_or_path: str) -> Recipe:
    """A shipped recipe by name, or a recipe file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise RecipeLoadError(str(path), "no-file")
        raw = path.read_bytes()
        file: Path | None = path.resolve()
    else:
        res = resources.files("wh.kernels") / "recipes" / f"{name_or_path}.toml"
        if not res.is_file():
            raise RecipeLoadError(name_or_path, "unknown", shipped=shipped())
        raw = res.read_bytes()
        file = Path(str(res))
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RecipeLoadError(name_or_path, "toml", problem=str(exc)) from exc
    return parse_recipe(data, file=file, sha256=hashlib.sha256(raw).hexdigest())

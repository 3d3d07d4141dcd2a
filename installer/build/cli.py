"""The ``wh build`` click command: parses options, calls the runner, renders the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from installer.errors import WhError

if TYPE_CHECKING:  # the runner (recipes, toolchains, patches) loads only when `wh build` runs
    from installer.build.runner import Report


def _render(report: Report, check_only: bool) -> str:
    lines = [
        f"recipe {report.recipe} variant {dict(report.variant)} archs {', '.join(report.archs)}"
    ]
    if report.toolchain:
        t = report.toolchain
        lines.append(
            f"toolchain: {t['kind']} {t['host_version']},"
            f" CUDA {t['cuda_version']}, {t['generator']}"
        )
    lines.append("source: " + ", ".join(f"{k}={v}" for k, v in report.source.items()))
    verb = "would be" if check_only else "is"
    for p in report.patches:
        status = p["status"]
        shown = {"applied": f"{verb} applied"}.get(str(status), str(status))
        lines.append(f"  patch {p['file']}: {shown} ({p['why']})")
        nearest = p.get("nearest")
        for near in nearest if isinstance(nearest, list) else []:
            lines.append(f"      nearest {near}")
    for a in report.autotriggers:
        lines.append(f"  auto-trigger left in place: {a}")
    for e in report.excluded_ops:
        lines.append(f"  excluded implementation: {e}")
    for b in report.binaries:
        lines.append(f"  {b['binary']}: SASS {b['sass']} PTX {b['ptx']}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.wheel:
        lines.append(f"built {report.wheel}")
        lines.append(f"record {report.record}")
    return "\n".join(lines)


@click.command("build")
@click.argument("recipe")
@click.option("--variant", "variants", multiple=True, help="NAME or NAME=on/off (repeatable)")
@click.option("--source", type=click.Path(path_type=Path), help="the source folder or archive")
@click.option(
    "--wheelhouse", type=click.Path(path_type=Path), default=Path("wheelhouse"), show_default=True
)
@click.option(
    "--check", "check_only", is_flag=True, help="apply nothing; report what each patch would do"
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option(
    "--arch", "archs", multiple=True, help="CUDA architecture (repeatable; default from the recipe)"
)
def build(
    recipe: str,
    variants: tuple[str, ...],
    source: Path | None,
    wheelhouse: Path,
    check_only: bool,
    as_json: bool,
    archs: tuple[str, ...],
) -> None:
    """Build RECIPE (a shipped recipe name or a .toml path) into a checked wheel."""
    from installer.build.runner import Options
    from installer.build.runner import build as run_build

    opts = Options(recipe, variants, source, wheelhouse, check_only=check_only, archs=archs)
    try:
        report = run_build(opts)
    except WhError as exc:
        if as_json:
            click.echo(json.dumps(exc.to_json(), indent=2))
        else:
            click.echo(exc.render(), err=True)
        sys.exit(exc.exit_code)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, default=str))
    else:
        click.echo(_render(report, check_only))
    bad = [p for p in report.patches if p["status"] in ("anchor-missing", "ambiguous")]
    if check_only and (bad or report.excluded_ops):
        sys.exit(11)

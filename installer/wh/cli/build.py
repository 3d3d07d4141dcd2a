"""The ``wh build`` click command: parses options, calls the runner, renders the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from wh.errors import WhError
from wh.model.choices import TargetOS

if TYPE_CHECKING:  # the runner (recipes, toolchains, patches) loads only when `wh build` runs
    from wh.kernels.runner import Report


def _render(report: Report, check_only: bool) -> str:
    # an anchor patch's statuses say applied and already-applied in the same words
    from wh.kernels.opresult import Status

    lines = [
        f"recipe {report.recipe} variant {dict(report.variant)} archs {', '.join(report.archs)}"
        f" target {report.target_os} CUDA {report.cuda_version}"
    ]
    if report.toolchain:
        t = report.toolchain
        lines.append(
            f"toolchain: {t['kind']} {t['host_version']},"
            f" CUDA {t['cuda_version']}, {t['generator']}"
        )
    lines.append("source: " + ", ".join(f"{k}={v}" for k, v in report.source.items()))
    verb = "would be applied" if check_only else "applied"
    for op in report.operations:
        status = str(op["status"])
        shown = verb if status == Status.APPLIED else status
        lines.append(f"  {op['op']} {op['what']}: {shown} [{op['file'] or '-'}]")
        if status not in (Status.APPLIED, Status.ALREADY_APPLIED):
            lines.append(f"      looked for {op.get('looked_for', '')}")
            cands = op.get("candidates") or op.get("nearest") or []
            places = op.get("places") or []
            for c in [
                *(places if isinstance(places, list) else []),
                *(cands if isinstance(cands, list) else []),
            ]:
                lines.append(f"      candidate {c}")
    for e in report.excluded_sources:
        here = "excluded here" if e["excluded_here"] else "built here"
        lines.append(f"  source {e['path']} only if({e['condition']}): {here}")
    if report.registration_guards:
        lines.append(
            f"  registrations guarded: {len(report.registration_guards)} op(s);"
            f" hidden on {report.target_os}: {len(report.guarded_ops)}"
            + (f" ({', '.join(report.guarded_ops)})" if report.guarded_ops else "")
        )
    if report.unmapped_ops:
        lines.append(
            f"  registrations whose implementation is in no file of this tree: "
            f"{report.unmapped_ops} (not guarded; a full checkout maps them)"
        )
    for name, codes in report.gencodes.items():
        lines.append(f"  library {name}: gencodes {', '.join(codes) or 'none'}")
    if report.switches:
        lines.append("  switches: " + ", ".join(f"{k}={v}" for k, v in report.switches.items()))
    if report.fetch_content:
        lines.append(f"  fetched: {', '.join(report.fetch_content)}")
    for a in report.autotriggers:
        lines.append(f"  auto-trigger left: {a}")
    for p in report.problems:
        lines.append(f"problem: {p}")
    for b in report.binaries:
        lines.append(f"  {b['binary']}: SASS {b['sass']} PTX {b['ptx']}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.emitted:
        em = report.emitted
        changed = em.get("changed")
        names = ", ".join(str(c) for c in changed) if isinstance(changed, list) else ""
        lines.append(f"emitted {em['path']}: {em['state']}; changed: {names or 'nothing'}")
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
    "--check",
    "check_only",
    is_flag=True,
    help="change nothing; report what each operation and patch would do",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option(
    "--arch", "archs", multiple=True, help="CUDA architecture (repeatable; default from the recipe)"
)
@click.option(
    "--target-os",
    type=click.Choice(TargetOS.values()),
    help="evaluate every condition as this platform's toolchain would (default: this machine)",
)
@click.option("--cuda-version", help="the CUDA version conditions see (default: the nvcc found)")
@click.option(
    "--emit",
    type=click.Path(path_type=Path),
    help="write the patched source tree to this folder and build nothing (implies --check)",
)
@click.option(
    "--allow-unpinned", is_flag=True, help="go on with a source other than the recipe's pin"
)
def build(
    recipe: str,
    variants: tuple[str, ...],
    source: Path | None,
    wheelhouse: Path,
    check_only: bool,
    as_json: bool,
    archs: tuple[str, ...],
    target_os: str | None,
    cuda_version: str | None,
    emit: Path | None,
    allow_unpinned: bool,
) -> None:
    """Build RECIPE (a shipped recipe name or a .toml path) into a checked wheel."""
    from wh.kernels.runner import Options
    from wh.kernels.runner import build as run_build

    opts = Options(
        recipe,
        variants,
        source,
        wheelhouse,
        check_only=check_only,
        archs=archs,
        target_os=TargetOS(target_os) if target_os else None,
        cuda_version=cuda_version,
        emit=emit,
        allow_unpinned=allow_unpinned,
    )
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
        click.echo(_render(report, check_only and emit is None))
    if report.problems:
        sys.exit(11)

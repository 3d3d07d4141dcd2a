"""The `wh export` command: a lock as pinned requirements with hashes (logic in fleet)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wh.cli.common import common


@click.command("export")
@common
@click.argument("profile_name", metavar="[PROFILE]", required=False)
@click.option("--lockfile", type=click.Path(path_type=Path), help="Lock to export.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Write here (default: stdout)."
)
def export_cmd(
    as_json: bool,
    verbose: int,
    profile_name: str | None,
    lockfile: Path | None,
    output: Path | None,
) -> None:
    """Write a lock as pinned requirements with hashes, for `pip install --no-deps
    --require-hashes -r FILE` on machines that reach a served wheelhouse."""
    from wh.airgap.fleet import requirements_text
    from wh.app import lockfiles
    from wh.model.profile import default_lock_path

    if not lockfile and not profile_name:
        raise click.UsageError("name a PROFILE or pass --lockfile")
    path = lockfile or default_lock_path(str(profile_name))
    text = requirements_text(lockfiles.read(path))
    if output is not None:
        output.write_text(text, encoding="utf-8")
    if as_json:
        click.echo(json.dumps({"lockfile": str(path), "output": str(output), "text": text}))
    elif output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output} from {path}")

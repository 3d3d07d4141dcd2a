"""The `wh recover` command: finish or roll back an install a killed wh left behind."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wh import progress
from wh.cli.reporters import Lines


@click.command()
@click.option(
    "--python",
    "python",
    type=click.Path(path_type=Path),
    help="Environment to recover (default: the active one).",
)
@click.option(
    "--lock-timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds to wait for another wh using the environment.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.pass_context
def recover(ctx: click.Context, python: Path | None, lock_timeout: float, as_json: bool) -> None:
    """Roll back an interrupted install (or complete its commit); no-op when there is none."""
    from wh.env.environment import default_python
    from wh.install.safeguard import recover_env

    ctx.meta["wh.json"] = as_json  # errors are rendered as JSON too
    target = python or default_python()
    with progress.reporting(Lines()):  # waiting for another wh is said, as install says it
        done = recover_env(target, timeout=lock_timeout)
    if as_json:
        click.echo(json.dumps({"python": str(target), "recovered": bool(done), "message": done}))
    else:
        click.echo(done or "nothing to recover")

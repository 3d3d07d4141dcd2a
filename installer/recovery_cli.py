"""The `wh recover` command: finish or roll back an install a killed wh left behind."""

from __future__ import annotations

from pathlib import Path

import click


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
def recover(python: Path | None, lock_timeout: float) -> None:
    """Roll back an interrupted install (or complete its commit); no-op when there is none."""
    from installer.environment import default_python
    from installer.safeguard import recover_env

    done = recover_env(python or default_python(), timeout=lock_timeout)
    click.echo(done or "nothing to recover")

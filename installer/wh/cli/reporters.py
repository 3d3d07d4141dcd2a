"""How the CLI shows progress: the reporters it installs in ``wh.progress`` for a command."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from wh import progress
from wh.proc import threads


class Lines:
    """Status lines on stderr; no hashing bar (nothing to draw it on)."""

    def status(self, message: str) -> None:
        click.echo(f"· {message}", err=True)

    def hashing_total(self, count: int) -> None:
        pass

    def hashed(self, path: Path) -> None:
        pass


def lines(quiet: bool) -> progress.Reporter:
    """Status lines on stderr, or nothing with ``quiet`` (--json)."""
    return progress.Silent() if quiet else Lines()


@contextmanager
def showing(quiet: bool) -> Iterator[None]:
    """Progress on stderr for the block: a bar while hashing (on a terminal), status lines
    otherwise; nothing with ``quiet`` (--json)."""
    if quiet or not sys.stderr.isatty():  # no bar to draw: rich is not even imported
        with progress.reporting(lines(quiet)):
            yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        console=console,
        transient=True,
    )
    with threads.starting():  # the bar's refresh thread leaves Ctrl-C to the main thread
        bar.start()
    try:
        task = bar.add_task("hashing", total=0, visible=False)

        class Drawn:
            def status(self, message: str) -> None:
                console.print(f"· {message}")

            def hashing_total(self, count: int) -> None:
                bar.update(task, total=count, completed=0, visible=count > 0)

            def hashed(self, path: Path) -> None:
                bar.advance(task)

        with progress.reporting(Drawn()):
            yield
    finally:
        bar.stop()

"""The options every command shares (--json, -v), apart from main so that the commands in
their own modules (export) take them without importing main (an import cycle)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def common(f: F) -> F:
    """--json and -v, shared by every command."""

    def set_json(ctx: click.Context, _p: click.Parameter, value: bool) -> bool:
        ctx.meta["wh.json"] = value
        return value

    def set_verbose(_ctx: click.Context, _p: click.Parameter, value: int) -> int:
        if value:
            logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
        return value

    f = click.option(
        "--json",
        "as_json",
        is_flag=True,
        callback=set_json,
        expose_value=True,
        is_eager=True,
        help="Machine-readable output on stdout.",
    )(f)
    f = click.option(
        "-v", "--verbose", count=True, callback=set_verbose, help="Show delegated commands."
    )(f)
    return f

"""The options every command shares (--json, -v), and the command class main's commands are
made with, apart from main so that the commands in their own modules (export) take them
without importing main (an import cycle)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class Command(click.Command):
    """A click command whose parser matches an argument that is exactly a short option
    (``-r``) at once.

    Click's parser tries every option argument as a long option first, and for ``-r`` that
    fails by building a NoSuchOption (a translated message and difflib's close matches)
    before it falls back to the short option: about 0.3 million instructions an ``-r``, a
    tenth of a remembered lock given 240 roots. The fallback is what runs here, so the
    parse is click's: the same values, sources and errors."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        short: Mapping[str, object] | None = getattr(parser, "_short_opt", None)
        process: Callable[[str, Any], None] | None = getattr(parser, "_process_opts", None)
        match_short: Callable[[str, Any], None] | None = getattr(parser, "_match_short_opt", None)
        if ctx.token_normalize_func is not None or not (short and process and match_short):
            return parser  # normalized names, or a click without these: its parser as is

        def process_opts(arg: str, state: Any) -> None:
            if arg in short:
                match_short(arg, state)
            else:
                process(arg, state)

        parser._process_opts = process_opts  # type: ignore[method-assign]
        return parser


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

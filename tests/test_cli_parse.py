"""wh's commands parse their arguments as click's own parser does (cli/common.py's Command
matches an exact short option such as ``-r`` without click's failed long-option try)."""

from __future__ import annotations

from typing import Any

import click
import click.parser
import pytest
from wh.cli.common import Command
from wh.cli.main import cli

ARGVS = [
    ["-r", "a", "-r", "b"],
    ["-ra"],
    ["-r=a"],
    ["-r"],
    ["-r", "-v"],
    ["-vv"],
    ["-v", "-v", "-r", "a"],
    ["-x"],
    ["-rx", "a"],
    ["--requirement", "a", "--requirement=b"],
    ["--lockfile", "-r", "-r", "a"],
    ["--", "-r", "a"],
    ["base", "-r", "a", "-c", "wh.toml"],
    ["-h"],
    ["--json", "-r", "a", "--no-such-flag"],
]


def _parse(cmd: click.Command, parser_of: Any, argv: list[str]) -> object:
    ctx = click.Context(cmd, info_name=cmd.name)
    try:
        opts, largs, order = parser_of(cmd, ctx).parse_args(list(argv))
    except click.UsageError as exc:
        return (type(exc).__name__, exc.format_message())
    return opts, largs, [p.name for p in order]


WH_COMMANDS = sorted(n for n, c in cli.commands.items() if isinstance(c, Command))


def test_the_commands_that_take_roots_are_made_with_the_wh_command_class() -> None:
    assert {"lock", "install", "fetch", "bundle"} <= set(WH_COMMANDS)


@pytest.mark.parametrize("name", WH_COMMANDS)
@pytest.mark.parametrize("argv", ARGVS, ids=" ".join)
def test_a_command_parses_as_clicks_own_parser_does(name: str, argv: list[str]) -> None:
    cmd = cli.commands[name]
    ours = _parse(cmd, type(cmd).make_parser, argv)
    clicks = _parse(cmd, click.Command.make_parser, argv)
    assert ours == clicks


def test_an_exact_short_option_is_matched_without_a_failed_long_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []

    class Counted(click.NoSuchOption):
        def __init__(self, option_name: str, *a: Any, **kw: Any) -> None:
            made.append(option_name)
            super().__init__(option_name, *a, **kw)

    monkeypatch.setattr(click.parser, "NoSuchOption", Counted)
    cmd = cli.commands["lock"]
    argv = ["-r", "a", "-r", "b", "-v"]
    _parse(cmd, click.Command.make_parser, argv)
    assert made == ["-r", "-r", "-v"]  # click's own: each tried as a long option first
    made.clear()
    opts = _parse(cmd, type(cmd).make_parser, argv)
    assert made == []
    assert isinstance(opts, tuple) and opts[0]["requirements"] == ["a", "b"]


def test_an_interrupt_python_wraps_while_a_class_is_made_still_aborts() -> None:
    """Ctrl-C (or wh's SIGTERM) landing while a module's class is created, in a field's
    ``__set_name__``, reaches wh as a RuntimeError on Python 3.11: wh still aborts as for
    any interrupt (exit status 1, "Aborted!"), not with a traceback."""
    import click
    from click.testing import CliRunner
    from wh.cli.main import WhGroup

    @click.group(cls=WhGroup)
    def group() -> None:
        pass

    @group.command()
    def importing() -> None:
        class Field:
            def __set_name__(self, owner: type, name: str) -> None:
                raise KeyboardInterrupt("signal 15")

        class Platform:  # made only for its fields' __set_name__
            symbol_versions = Field()

    result = CliRunner().invoke(group, ["importing"])
    assert result.exit_code == 1, result.output
    assert "Aborted!" in result.output
    assert not isinstance(result.exception, RuntimeError)

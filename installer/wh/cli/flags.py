"""Options a command cannot use where they were given: refused with why, never ignored.

Several commands share option sets (the profile's flags); some of them mean nothing for one
command (`verify --override`) or in one mode (`install --locked --allow-overwrite`). Each such
option is listed here with the reason and the fix; `refuse_in` wraps a command so that an
option given explicitly under a rule is a usage error (exit 2) naming every one at once, and
hides from `--help` what a command never uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import wraps
from typing import Any

import click
from click.core import ParameterSource


@dataclass(frozen=True)
class Rule:
    """``param`` (its Python name) refused with ``reason`` when ``when`` holds of the
    command's parsed values (always, when None: the option is also hidden from --help)."""

    param: str
    reason: str
    when: Callable[[Mapping[str, Any]], bool] | None = None


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user wrote the option (a default or an unset flag is not given)."""
    source = ctx.get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _flag(cmd: click.Command, name: str) -> str:
    for p in cmd.params:
        if p.name == name:
            opts = [o for o in p.opts if o.startswith("--")] or list(p.opts)
            return opts[0] if isinstance(p, click.Option) else p.human_readable_name
    return name


def refused(ctx: click.Context, rules: Sequence[Rule], values: Mapping[str, Any]) -> list[str]:
    """One line per option given where a rule refuses it."""
    cmd = ctx.command
    return [
        f"{_flag(cmd, r.param)} {r.reason}"
        for r in rules
        if given(ctx, r.param) and (r.when is None or r.when(values))
    ]


def refuse_in(cmd: click.Command, rules: Sequence[Rule]) -> None:
    """Make ``cmd`` refuse what ``rules`` name before it does anything."""
    callback = cmd.callback
    assert callback is not None
    for r in rules:
        if r.when is None:
            for p in cmd.params:
                if p.name == r.param and isinstance(p, click.Option):
                    p.hidden = True

    @wraps(callback)
    def checked(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        lines = refused(ctx, rules, kwargs)
        if lines:
            raise click.UsageError("\n".join(lines) if len(lines) > 1 else lines[0], ctx=ctx)
        return callback(*args, **kwargs)

    cmd.callback = checked


def _pip(kw: Mapping[str, Any]) -> bool:
    return kw.get("backend") == "pip"


def _locked(kw: Mapping[str, Any]) -> bool:
    return bool(kw.get("locked") or kw.get("bundle"))


_RELOCK = "re-lock with `wh lock PROFILE {flag} ...` (or drop --locked to lock and install)"

INSTALL = (
    *(
        Rule(
            name,
            f"has no effect with --locked/--bundle: the lock fixes {what}; "
            + _RELOCK.format(flag=flag),
            _locked,
        )
        for name, flag, what in (
            ("requirements", "-r", "the roots"),
            ("extra_requirements", "--extra-requirement", "the roots"),
            ("overrides", "--override", "every requirement"),
            ("allow_overwrite", "--allow-overwrite", "which overwrites are allowed"),
            ("drops", "--drop", "which dependencies are dropped"),
            ("skip_load_check", "--skip-load-check", "whether the load check ran"),
            ("allow_missing", "--allow-missing-library", "which libraries may be missing"),
        )
    ),
    Rule(
        "wheelhouse",
        "has no effect with --locked/--bundle: the lock names each wheel by its path; "
        + _RELOCK.format(flag="--wheelhouse DIR"),
        _locked,
    ),
    Rule(
        "lockfile",
        "has no effect with --bundle: the bundle carries its own lock",
        lambda kw: bool(kw.get("bundle")),
    ),
    Rule(
        "configs",
        "has no effect with --locked and no PROFILE: -c only says where to find a profile "
        "(name the PROFILE whose protections and checks should apply)",
        lambda kw: _locked(kw) and not kw.get("profile_name"),
    ),
    *(
        Rule(
            name,
            "has no effect without --bundle: only a bundle carries a signature "
            "(`wh bundle --sign KEY` makes one)",
            lambda kw: not kw.get("bundle"),
        )
        for name in ("trust", "allow_unsigned")
    ),
    Rule(
        "uv_cache",
        "has no effect with --backend pip: only uv installs unpack through a uv cache "
        "(the other link modes link into uv's shared cache, and say so)",
        _pip,
    ),
)

_VERIFY_LOCK = "verify reads the lock, which fixes it: re-lock with `wh lock PROFILE {flag} ...`"
VERIFY = (
    Rule(
        "requirements",
        "has no effect on verify, which reads the lock: name the lock instead (the lock of "
        "`wh lock -r ...` is lockfiles/pylock.cli.toml: `wh verify cli`, or --lockfile PATH)",
    ),
    *(
        Rule(name, "has no effect on " + _VERIFY_LOCK.format(flag=flag))
        for name, flag in (
            ("extra_requirements", "--extra-requirement"),
            ("overrides", "--override"),
            ("drops", "--drop"),
            ("allow_overwrite", "--allow-overwrite"),
            ("link_mode", "--link-mode"),
            ("backend", "--backend"),
        )
    ),
    Rule(
        "configs",
        "has no effect without a PROFILE: -c only says where to find the profile whose "
        "protections verify should check",
        lambda kw: not kw.get("profile_name"),
    ),
)

_SILENT = "has nothing to show: `wh {cmd}` runs no delegated command (-v shows those)"
SCAN = (Rule("verbose", _SILENT.format(cmd="scan")),)
INDEX = (Rule("verbose", _SILENT.format(cmd="index")),)
KEYGEN = (Rule("verbose", _SILENT.format(cmd="keygen")),)
EXPORT = (
    Rule("verbose", _SILENT.format(cmd="export")),
    Rule(
        "profile_name",
        "has no effect with --lockfile: PROFILE only names the default lock "
        "lockfiles/pylock.PROFILE.toml",
        lambda kw: bool(kw.get("lockfile")),
    ),
)

_FETCH_WHY = "has no effect on `wh fetch`, which only downloads wheels: give it to `wh lock`"
FETCH = tuple(
    Rule(name, _FETCH_WHY)
    for name in ("lockfile", "link_mode", "backend", "imports", "snippets", "allow_overwrite")
)

BUNDLE = (
    Rule(
        "lockfile",
        "has no effect on `wh bundle`: the bundle's lock is written inside it as "
        "pylock.<profile>.toml",
    ),
)


BUILD = (
    Rule(
        "wheelhouse",
        "has no effect with --check/--emit: nothing is built (drop --check/--emit to build "
        "the wheel into it)",
        lambda kw: bool(kw.get("check_only") or kw.get("emit")),
    ),
)


def _no_version(kw: Mapping[str, Any]) -> bool:
    return not kw.get("version")


WHY = (
    *(
        Rule(
            name,
            "has no effect without --version: the chains come from the lock alone "
            "(add --version V to ask why V was not chosen)",
            _no_version,
        )
        for name in ("wheelhouse", "python", "platform", "python_version", "verbose")
    ),
    Rule(
        "profile_name",
        "has no effect with --lockfile: PROFILE only names the default lock "
        "lockfiles/pylock.PROFILE.toml",
        lambda kw: bool(kw.get("lockfile")),
    ),
)

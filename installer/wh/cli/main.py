"""The `wh` command line: parse flags, call the app's use cases, render their reports and errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if __name__ == "__main__":  # `python -m wh.cli.main`: run the module the subcommands import,
    from wh.cli.main import main as _main  # not a second copy of it (a circular import)

    _main()
    sys.exit(0)

import click

from wh import __version__, progress, settings
from wh.cli import reporters
from wh.cli.common import Command, common
from wh.errors import TargetOptionsError, VerifyError, WhError
from wh.model.choices import BackendChoice, ChecksMode, LinkMode, Prereleases, UvCacheMode

if TYPE_CHECKING:
    from wh.app.hooks import TargetSpec
    from wh.model.manifest import Manifest
    from wh.model.profile import Profile

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CODES = """\b
Exit codes:
  0  success            7  installer backend failed
  1  unexpected error   8  verification failed
  2  usage error        9  profile malformed or unknown
  3  wheelhouse problem 10 target interpreter/platform unusable
  4  resolution conflict 11 build failed
  5  lock missing, stale, tampered or unable to load  12 environment busy (another wh)
  6  protection refused 13 delegated command failed
"""


class WhGroup(click.Group):
    """Renders every WhError in one place, as text on stderr or JSON on stdout."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with settings.run():  # the WH_* variables, read once
                return super().invoke(ctx)
        except WhError as exc:
            if ctx.meta.get("wh.json"):
                click.echo(json.dumps(exc.to_json(), indent=2))
            else:
                click.echo(exc.render(), err=True)
            ctx.exit(exc.exit_code)
        except RuntimeError as exc:
            # Python 3.11 wraps what a class's creation raises (``__set_name__``: a
            # dataclass's fields, while a module is imported) in RuntimeError: Ctrl-C, or
            # the SIGTERM that wh turns into one, landing there is still an interrupt
            if _interrupted(exc):
                raise KeyboardInterrupt(str(exc.__cause__ or exc)) from exc
            raise


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was caused, however indirectly, by a KeyboardInterrupt."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


@click.group(
    cls=WhGroup, epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="wh")
def cli() -> None:
    """wh: lock and install GPU Python stacks from a wheelhouse, offline."""


def wheelhouse_option(f: F) -> F:
    return click.option(
        "--wheelhouse",
        type=click.Path(path_type=Path),
        default=Path("wheelhouse"),
        show_default=True,
        help="Folder of wheels.",
    )(f)


def target_options(f: F) -> F:
    f = click.option(
        "--python",
        "python",
        type=click.Path(path_type=Path),
        help="Target interpreter or venv (default: the active environment).",
    )(f)
    f = click.option("--platform", help="Declared target platform, e.g. win_amd64.")(f)
    f = click.option("--python-version", help="Declared target Python, e.g. 3.12.")(f)
    return f


def profile_options(f: F) -> F:
    opts = [
        click.argument("profile_name", metavar="[PROFILE]", required=False),
        click.option(
            "-c",
            "--config",
            "configs",
            multiple=True,
            type=click.Path(path_type=Path, exists=True, dir_okay=False),
            help="Extra wh.toml/pyproject.toml to search for profiles.",
        ),
        click.option(
            "-r",
            "--requirement",
            "requirements",
            multiple=True,
            help="Root requirement (repeatable).",
        ),
        click.option(
            "--allow-overwrite",
            "allow_overwrite",
            multiple=True,
            help="A distribution allowed to overwrite (or be overwritten by) another's files.",
        ),
        click.option(
            "--extra-requirement",
            "extra_requirements",
            multiple=True,
            help="A requirement no metadata declares, e.g. 'kernels==0.11.7' (repeatable).",
        ),
        click.option(
            "--override",
            "overrides",
            multiple=True,
            help="Override every wheel's requirement on a name, e.g. 'kernel==0.4.3'.",
        ),
        click.option(
            "--drop",
            "drops",
            multiple=True,
            help="Drop a dependency where a marker holds: 'uvloop; sys_platform == \"win32\"'.",
        ),
        click.option(
            "--protect",
            "protections",
            multiple=True,
            help="Protect an installed distribution: NAME or NAME==VERSION.",
        ),
        click.option(
            "--check-import", "imports", multiple=True, help="Module to import after install."
        ),
        click.option(
            "--check-snippet", "snippets", multiple=True, help="Python code that must exit 0."
        ),
        click.option(
            "--link-mode",
            type=click.Choice(LinkMode.values()),
            help="How files are placed (default from the profile: copy).",
        ),
        click.option(
            "--backend",
            type=click.Choice(BackendChoice.values()),
            help="Installer backend (default: uv, else pip).",
        ),
        click.option(
            "--lockfile",
            type=click.Path(path_type=Path),
            help="Lock path (default: lockfiles/pylock.<profile>.toml).",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def load_options(f: F) -> F:
    """--allow-missing-library and --skip-load-check (the load check's escape hatches)."""
    f = click.option(
        "--skip-load-check",
        "skip_load_check",
        is_flag=False,
        flag_value="--skip-load-check given",
        default=None,
        metavar="[REASON]",
        help="Lock without checking that compiled members find their libraries (recorded "
        "in the lock with REASON).",
    )(f)
    f = click.option(
        "--allow-missing-library",
        "allow_missing",
        multiple=True,
        metavar="NAME[=REASON]",
        help="A library the target provides outside the lock, e.g. 'libnuma.so.1=apt "
        "install libnuma1' (repeatable; recorded in the lock).",
    )(f)
    return f


def _load(kw: dict[str, Any]) -> Any:
    from wh.model.loadoptions import LoadOptions

    return LoadOptions.parse(kw.pop("skip_load_check", None), kw.pop("allow_missing", ()))


def _profile(kw: dict[str, Any]) -> Profile:
    from wh.model.profile import Profile

    name = kw["profile_name"]
    if name:  # only a named profile reads files (tomllib): a lock from -r alone does not
        from wh.app.profiles import default_search, load_profile

        base = load_profile(name, [*kw["configs"], *default_search(Path.cwd())])
    elif kw["requirements"] or kw["extra_requirements"]:
        base = Profile(name="cli")
    else:
        raise click.UsageError("name a PROFILE or pass --requirement")
    return base.with_flags(
        requirements=kw["requirements"],
        extra_requirements=kw["extra_requirements"],
        allow_overwrite=kw["allow_overwrite"],
        overrides=kw["overrides"],
        protections=kw["protections"],
        drops=kw["drops"],
        imports=kw["imports"],
        snippets=kw["snippets"],
        link_mode=kw["link_mode"],
        backend=kw["backend"],
    )


def _manifest(
    kw: dict[str, Any],
    *,
    prereleases: str = "if-necessary-or-explicit",
    keep_installed: bool = True,
) -> Manifest:
    """The one resolver input, from the profile and the flags."""
    from wh.model.manifest import Manifest

    return Manifest.of(_profile(kw), prereleases=prereleases, keep_installed=keep_installed)


def _named_manifest(name: str | None) -> Manifest:
    """The manifest of a command that takes PROFILE but not the profile's flags (``why``):
    the profile found where ``lock`` looks (wh.toml, pyproject.toml, the built-ins), else
    one of that name with nothing in it, whose lock is lockfiles/pylock.NAME.toml too."""
    from wh.app.profiles import default_search, find_profile
    from wh.model.manifest import Manifest
    from wh.model.profile import Profile

    found = find_profile(name, default_search(Path.cwd())) if name else None
    return Manifest.of(found or Profile(name=name or "cli"))


def _known_profile(kw: dict[str, Any]) -> Profile:
    """The named profile where one is given and defined; else an empty one (a lock made
    from flags, or a bundle's, carries its own protections and checks)."""
    from wh.model.profile import Profile

    name = kw["profile_name"]
    if not name:
        return Profile(name="cli")
    from wh.app.profiles import default_search, find_profile

    return find_profile(name, [*kw["configs"], *default_search(Path.cwd())]) or Profile(name="cli")


def _lock_path(kw: dict[str, Any], profile_name: str) -> Path:
    from wh.model.profile import default_lock_path

    return kw["lockfile"] or default_lock_path(profile_name)


def _spec(kw: dict[str, Any]) -> TargetSpec:
    from wh.app.hooks import TargetSpec

    return TargetSpec(kw["python"], kw["platform"], kw["python_version"])


def _emit(as_json: bool, data: Any, text: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        text()


def _emit_or_refuse(
    as_json: bool, data: Any, text: Callable[[], None], refusal: WhError | None
) -> None:
    """``_emit``, then end in ``refusal`` where there is one; with ``--json`` only the
    refusal, carrying ``data`` as its report: one JSON document either way."""
    if refusal is not None and as_json:
        raise refusal.reporting(data)
    _emit(as_json, data, text)
    if refusal is not None:
        raise refusal


@cli.command()
@common
@wheelhouse_option
@click.option("--strict", is_flag=True, help="Exit 3 when any wheel had to be excluded.")
def scan(as_json: bool, verbose: int, wheelhouse: Path, strict: bool) -> None:
    """List the wheels of a wheelhouse and every wheel that had to be excluded."""
    from wh.app.scan import scan_report

    with reporters.showing(as_json):
        report = scan_report(wheelhouse)
    wh = report.wheelhouse

    def text() -> None:
        for w in wh.wheels:
            built = "  [built locally]" if w.built_locally else ""
            click.echo(
                f"{w.name:30} {w.version!s:18} {w.size:>12,}  {w.sha256[:12]}  {w.filename}{built}"
            )
        click.echo(f"{len(wh.wheels)} wheel(s), {len(wh.problems)} excluded")
        for p in wh.problems:
            click.echo(f"excluded {p}")

    _emit_or_refuse(as_json, report.to_json(), text, report.refusal(strict))


@cli.command()
@common
@profile_options
@wheelhouse_option
@target_options
@load_options
@click.option("--check", is_flag=True, help="Only tell whether the lock is still true.")
@click.option(
    "--ignore-installed",
    is_flag=True,
    help="Resolve from the wheelhouse alone, not keeping what the environment has.",
)
@click.option(
    "--prereleases",
    type=click.Choice(Prereleases.values()),
    default=Prereleases.IF_NECESSARY_OR_EXPLICIT.value,
    show_default=True,
)
@click.option(
    "--index-url",
    help="Name each wheel by its URL on this index (a `wh index` of the wheelhouse, served), "
    "not by path: a lock for the machines of a fleet.",
)
def lock(
    as_json: bool,
    verbose: int,
    wheelhouse: Path,
    check: bool,
    prereleases: str,
    ignore_installed: bool,
    index_url: str | None,
    **kw: Any,
) -> None:
    """Resolve PROFILE from the wheelhouse and write a PEP 751 lock."""
    from wh.app.lockmemo import lock_report

    load = _load(kw)
    manifest = _manifest(kw, prereleases=prereleases, keep_installed=not ignore_installed)
    path = _lock_path(kw, manifest.profile.name)
    with reporters.showing(as_json):
        if check:
            from wh.app.lock import lock_is_current

            current = lock_is_current(manifest, wheelhouse, path, _spec(kw), load=load)
            _emit(
                as_json,
                current.to_json(),
                lambda: click.echo(f"{current.lockfile} is up to date"),
            )
            return
        report = lock_report(manifest, wheelhouse, path, _spec(kw), index_url=index_url, load=load)

    def text() -> None:
        packages = report.packages
        click.echo(f"locked {len(packages)} package(s) for {report.target_description}")
        for i, level in enumerate(report.install_order, 1):
            click.echo(f"  level {i}: " + ", ".join(f"{n} {packages[n]}" for n in level))
        for a in report.overrides_applied:
            click.echo(
                f"override: {a.by}: {a.original} -> {a.replacement}"
                + (f" ({a.reason})" if a.reason else "")
            )
        for o in report.unused_overrides:
            click.echo(f"unused override: {o.requirement} (nothing required {o.name})")
        for d in report.drops_applied:
            click.echo(f"dropped: {d.by}: {d.requirement} ({d.reason or 'no reason'})")
        for u in report.unused_drops:
            click.echo(f"unused drop: {u} (no wheel requires it on this target)")
        for n, version in report.protected.items():
            click.echo(f"protected: {n} {version} kept as installed")
        if report.excluded_wheels:
            click.echo(f"excluded {len(report.excluded_wheels)} wheel(s):")
            for e in report.excluded_wheels:
                click.echo(f"  {e.filename}: {e.reason}")
        if report.skipped_for_target:
            click.echo(
                f"skipped {len(report.skipped_for_target)} wheel(s) of locked packages "
                "for this target:"
            )
            for e in report.skipped_for_target:
                click.echo(f"  {e.filename}: {e.reason}")
        if report.overwrites:
            from wh.install.overwrite import allow_hint

            click.echo(f"overwrites: {len(report.overwrites)} file(s) written by two wheels:")
            for line in report.overwrites:
                click.echo(f"  {line}")
            click.echo(f"  {allow_hint(report.overwrites)}")
        _print_load_check(report.load_check)
        click.echo(f"{'wrote' if report.changed else 'unchanged'} {report.lockfile}")

    _emit(as_json, report.to_json(), text)


def _print_load_check(lc: Mapping[str, Any]) -> None:
    if not lc:
        return
    if not lc.get("checked"):
        click.echo(f"load check skipped: {lc.get('skipped', '')} (recorded in the lock)")
        return
    click.echo(
        f"load check: {lc['binaries']} compiled member(s), {lc['needs-met']} need(s) met "
        f"({lc['platform']})"
    )
    for a in lc.get("allowed-missing", []):
        click.echo(f"  allowed missing: {a['library']} ({a['reason']}), needed by {a['needed-by']}")
    for w in lc.get("warnings", []):
        click.echo(f"  warning: {w}")


@cli.command()
@common
@profile_options
@wheelhouse_option
@target_options
@load_options
@click.option("--locked", is_flag=True, help="Install the existing lock as is; never re-lock.")
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@click.option(
    "--reinstall", is_flag=True, help="Reinstall every locked package (never protected ones)."
)
@click.option(
    "--lock-timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds to wait for another wh installing into the same environment.",
)
@click.option(
    "--bundle",
    type=click.Path(path_type=Path),
    help="Install a `wh bundle` archive or unpacked folder (verified first; implies --locked).",
)
@click.option(
    "--trust",
    "trust",
    multiple=True,
    type=click.Path(path_type=Path),
    help="With --bundle: the public key (KEY.pub) of a bundle maker you trust (repeatable); "
    "the bundle must be signed by one of them.",
)
@click.option(
    "--allow-unsigned",
    is_flag=True,
    help="With --bundle: install a bundle no trusted key signed (check its sha256 otherwise).",
)
@click.option(
    "--uv-cache",
    type=click.Choice(UvCacheMode.values()),
    default=UvCacheMode.AUTO.value,
    show_default=True,
    help="Copy-mode installs with uv: unpack through the user's uv cache (shared) or a "
    "throwaway one, each file written once (private); auto: private when uv's cache lacks "
    "at least half the bytes.",
)
@click.option(
    "--checks",
    "checks_mode",
    type=click.Choice(ChecksMode.values()),
    default=ChecksMode.ALL.value,
    show_default=True,
    help="all: a failed import/snippet check undoes the install; warn: install and report "
    "it (a build box without a GPU).",
)
def install(
    as_json: bool,
    verbose: int,
    wheelhouse: Path,
    locked: bool,
    dry_run: bool,
    reinstall: bool,
    lock_timeout: float,
    bundle: Path | None,
    trust: tuple[Path, ...],
    allow_unsigned: bool,
    uv_cache: str,
    checks_mode: str,
    **kw: Any,
) -> None:
    """Lock PROFILE (unless --locked) and install it, offline, in dependency order."""
    from wh.app.install import do_install
    from wh.app.lock import do_lock
    from wh.env.environment import default_python

    if kw["platform"] or kw["python_version"]:
        raise TargetOptionsError("install-declared")
    if bundle is not None:
        from wh.app.bundle import open_bundle

        with progress.reporting(reporters.lines(as_json)):
            kw["lockfile"] = open_bundle(
                bundle,
                on_close=click.get_current_context().call_on_close,
                trust=trust,
                allow_unsigned=allow_unsigned,
            )
        locked = True
    load = _load(kw)
    python = kw["python"] or default_python()
    from wh.app.asked import from_flags

    preread = None
    if locked:
        if not (kw["profile_name"] or kw["lockfile"]):
            raise click.UsageError("name a PROFILE or pass --lockfile")
        path = _lock_path(kw, str(kw["profile_name"]))
        # the named profile's protections guard a lock made without them
        asked = from_flags(
            _known_profile(kw).protections,
            kw["protections"],
            kw["imports"],
            kw["snippets"],
            ChecksMode(checks_mode),
        )
    else:
        manifest = _manifest(kw)
        path = _lock_path(kw, manifest.profile.name)
        asked = from_flags((), (), (), (), ChecksMode(checks_mode))  # the profile's are in the lock
    with reporters.showing(as_json):
        if not locked:
            made = do_lock(
                manifest,
                wheelhouse,
                path,
                _spec({**kw, "python": python}),
                write=not dry_run,  # a dry run writes nothing, the lock included
                load=load,
            )
            if dry_run:
                from wh.app import lockfiles

                preread = lockfiles.from_bytes(made.data, path)
        result = do_install(
            path,
            python,
            dry_run=dry_run,
            reinstall=reinstall,
            backend_name=BackendChoice(kw["backend"]) if kw["backend"] else None,
            link_mode=LinkMode(kw["link_mode"]) if kw["link_mode"] else None,
            lock_timeout=lock_timeout,
            uv_cache=UvCacheMode(uv_cache),
            asked=asked,
            lock=preread,
        )
    plan = result.plan
    data = {
        "lockfile": str(path),
        "dry_run": dry_run,
        "backend": result.backend,
        "link_mode": result.link_mode,
        "plan": plan.to_json(),
        "checks": list(result.checks),
        "verify": [f.to_json() for f in result.findings],
    }
    if dry_run and result.strategy is not None:
        data["strategy"] = result.strategy.to_json()

    def text() -> None:
        click.echo(
            f"plan for {result.env_before.python} ({result.backend}, {result.link_mode}, "
            f"lock {path}):"
        )
        if not plan.batches:
            click.echo("  nothing to do")
        for i, batch in enumerate(plan.batches, 1):
            click.echo(f"  batch {i}: " + "; ".join(a.describe() for a in batch))
        for a in plan.kept:
            click.echo(f"  keep {a.package.name} {a.package.version}")
        if dry_run:
            if result.strategy is not None:
                click.echo(f"  strategy: {result.strategy.describe()}")
            for label in result.checks:
                click.echo(f"  would check: {label}")
            click.echo("dry run: nothing was changed")
        _print_findings(result.findings)

    _emit(as_json, data, text)
    _finish(as_json, result.findings)


def _finish(as_json: bool, findings: list[Any]) -> None:
    """Exit 8 on failed verification; in JSON mode the findings already carry the details."""
    from wh.app.verification import raise_on_failures

    if as_json:
        if any(not f.ok for f in findings):
            raise SystemExit(VerifyError.exit_code)
        return
    raise_on_failures(findings)


def _print_findings(findings: list[Any]) -> None:
    if not findings:
        return
    click.echo("verify:")
    for f in findings:
        mark = "ok  " if f.ok and f.kind != "warning" else ("warn" if f.ok else "FAIL")
        click.echo(f"  {mark} {f.message}")
    bad = sum(not f.ok for f in findings)
    click.echo("verification passed" if not bad else f"verification FAILED ({bad} problem(s))")


@cli.command()
@common
@profile_options
@click.option(
    "--python",
    "python",
    type=click.Path(path_type=Path),
    help="Environment to verify (default: the active one).",
)
def verify(as_json: bool, verbose: int, python: Path | None, **kw: Any) -> None:
    """Check an environment against PROFILE's lock: closure, protections, checks."""
    from wh.app import lockfiles
    from wh.app.asked import from_flags
    from wh.app.verification import verify_env
    from wh.env.environment import default_python
    from wh.model.profile import default_lock_path

    name = kw["profile_name"]
    if name is None and not kw["lockfile"]:
        raise click.UsageError("name a PROFILE or pass --lockfile")
    path = kw["lockfile"] or default_lock_path(str(name))
    from wh.install.safeguard import recover_env

    asked = from_flags(
        _known_profile(kw).protections if name and name != "cli" else (),
        kw["protections"],
        kw["imports"],
        kw["snippets"],
    )
    target = python or default_python()
    recovered = recover_env(target)  # a killed install is rolled back
    if recovered:
        click.echo(recovered, err=True)
    findings = verify_env(lockfiles.read(path), target, asked=asked)
    _emit(
        as_json,
        {"lockfile": str(path), "verify": [f.to_json() for f in findings]},
        lambda: _print_findings(findings),
    )
    _finish(as_json, findings)


@cli.command()
@common
@click.argument("name")
@click.argument("profile_name", metavar="[PROFILE]", required=False)
@click.option("--lockfile", type=click.Path(path_type=Path))
@click.option("--version", "version", help="Explain why this version was not chosen.")
@click.option(
    "--libraries", is_flag=True, help="List the native libraries NAME needs and who provides each."
)
@wheelhouse_option
@target_options
def why(
    as_json: bool,
    verbose: int,
    name: str,
    profile_name: str | None,
    lockfile: Path | None,
    version: str | None,
    libraries: bool,
    wheelhouse: Path,
    **kw: Any,
) -> None:
    """Why NAME is in the lock (the chain of requirements), or why --version was not chosen."""
    from packaging.version import InvalidVersion, Version

    from wh.app.why import why as why_report

    if not lockfile and not profile_name:
        raise click.UsageError("name a PROFILE or pass --lockfile")
    asked = None
    if version:
        try:
            asked = Version(version)
        except InvalidVersion:
            raise click.BadParameter(
                f"{version!r} is not a PEP 440 version (e.g. 0.4.1, 2.9.1+cu130)",
                param_hint="--version",
            ) from None
    report = why_report(
        _named_manifest(profile_name),
        name,
        _spec(kw),
        lockfile=lockfile,
        version=asked,
        libraries=libraries,
        wheelhouse=wheelhouse,
    )
    key, path = report.name, report.lockfile

    def text() -> None:
        for d in report.dropped:
            click.echo(
                f"{key} is dropped in {path}: {d.by} requires {d.requirement}, dropped"
                + (f" where {d.marker}" if d.marker else "")
                + f" ({d.reason or 'no reason given'})"
            )
        if report.only_dropped:
            return
        click.echo(f"{key} {report.version or '(protected, kept)'} is in {path} because:")
        for c in report.chains:
            click.echo(
                "  " + "  ->  ".join(f"{link.parent} requires {link.requirement}" for link in c)
            )
        for a in report.overrides:
            click.echo(
                f"  override: {a.by} asked {a.original}, replaced by {a.replacement}"
                + (f" ({a.reason})" if a.reason else "")
            )
        if version:
            click.echo(f"why not {key} {version}:")
            for line in report.why_not:
                click.echo(f"  {line}")
        if report.libraries is not None:
            click.echo(f"native libraries {key} needs ({len(report.libraries)}):")
            for row in report.libraries:
                where = row.by if row.ok else f"MISSING: {row.problem}"
                click.echo(f"  {row.member}: {row.library} <- {where}")

    _emit(as_json, report.to_json(), text)


def _register_subcommands() -> None:
    """Commands that live in their own subpackages, added to the group here."""
    from wh.cli.build import build
    from wh.cli.export import export_cmd
    from wh.cli.recover import recover

    cli.add_command(build)
    cli.add_command(recover)
    cli.add_command(export_cmd)


_register_subcommands()


# -- air-gapped workstations and fleets: fetch, bundle, index (logic in fetch/bundle/index) --


def _fetch_targets(kw: dict[str, Any]) -> list[Any]:
    from wh.app.fetch import fetch_targets

    platforms, versions = kw["platforms"], kw["python_versions"]
    if bool(platforms) != bool(versions):
        raise click.UsageError("a declared target needs --platform and --python-version")
    return fetch_targets(kw["python"], platforms, versions)


@cli.command()
@common
@profile_options
@wheelhouse_option
@click.option(
    "--python", "python", type=click.Path(path_type=Path), help="Fetch for a live interpreter."
)
@click.option(
    "--platform", "platforms", multiple=True, help="Declared platform, e.g. win_amd64 (repeat)."
)
@click.option(
    "--python-version", "python_versions", multiple=True, help="Declared Python, e.g. 3.12."
)
@click.option(
    "--index",
    "index_pins",
    multiple=True,
    help="Take one package from its own index: NAME=URL (repeatable).",
)
@click.option(
    "--index-url",
    help="The index to resolve and download from (default: pip's configured index-url, else PyPI).",
)
@click.option("--dry-run", is_flag=True, help="Resolve and print the closure; download nothing.")
@click.option(
    "--refresh",
    is_flag=True,
    help="Read every project page from the index again (default: reuse one read in the last "
    "10 minutes, or the index's own max-age).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 32),
    default=6,
    show_default=True,
    help="Wheels downloading at once.",
)
@load_options
def fetch(
    as_json: bool,
    verbose: int,
    wheelhouse: Path,
    index_pins: tuple[str, ...],
    index_url: str | None,
    dry_run: bool,
    jobs: int,
    refresh: bool,
    **kw: Any,
) -> None:
    """Resolve PROFILE over the index's metadata, then download exactly those wheels."""
    from wh.app.fetch import fetch as do_fetch
    from wh.app.fetch import parse_index_option, pip_env_note

    load = _load(kw)
    manifest = _manifest(kw)
    targets = _fetch_targets(kw)
    with reporters.showing(as_json):
        progress.status(pip_env_note())
        report = do_fetch(
            manifest,
            wheelhouse,
            targets,
            indexes=parse_index_option(index_pins),
            index_url=index_url,
            dry_run=dry_run,
            jobs=jobs,
            refresh=refresh,
            load=load,
        )

    def text() -> None:
        for t, n in report.resolved_per_target().items():
            click.echo(f"resolved {n} wheel(s) for {t}")
        for t, d in report.dropped:
            click.echo(
                f"dropped for {t}: {d.by} requires {d.requirement} ({d.reason or 'no reason'})"
            )
        for t, u in report.unused_drops:
            click.echo(f"unused drop for {t}: {u.describe()} (no wheel requires it there)")
        for k in report.kept:
            click.echo(f"kept: {k}")
        if report.dry_run:
            for e in report.closure:
                click.echo(f"  {e.filename}  {e.url or '(in the wheelhouse)'}")
            click.echo("dry run: nothing was downloaded")
            return
        click.echo(
            f"downloaded {len(report.downloaded)} wheel(s) ({report.downloaded_bytes:,} bytes), "
            f"{len(report.present)} already present, into {report.wheelhouse}"
        )
        for t, r in report.resolutions.items():
            if t in report.load_refused:
                click.echo(f"the wheelhouse resolves for {t} but fails its load check (below)")
                continue
            check = report.load_checks.get(t)
            loads = ""
            if check is not None and not check.checked:
                loads = f"; load check skipped: {check.skipped}"
            elif check is not None and check.binaries:
                loads = (
                    f"; {check.binaries} compiled member(s) find their {check.needs_met} need(s)"
                )
            elif check is not None:
                loads = "; no compiled members"
            click.echo(f"the wheelhouse locks for {t}: {len(r.packages)} package(s){loads}")

    _emit_or_refuse(as_json, report.to_json(), text, report.refusal())


@cli.command("index")
@common
@wheelhouse_option
def index_cmd(as_json: bool, verbose: int, wheelhouse: Path) -> None:
    """Turn the wheelhouse into a static package index (serve the folder, use /simple/)."""
    from wh.airgap.simpleindex import build_index

    result = build_index(wheelhouse)
    data = {
        "index": str(result.root),
        "projects": {n: [f.filename for f in fs] for n, fs in result.projects.items()},
        "written": [str(p) for p in result.written],
        "removed": [str(p) for p in result.removed],
        "excluded": [str(p) for p in result.problems],
    }

    def text() -> None:
        files = sum(len(fs) for fs in result.projects.values())
        click.echo(
            f"indexed {len(result.projects)} project(s), {files} wheel(s) in {result.root}: "
            f"{len(result.written)} file(s) written, {len(result.removed)} removed"
        )
        for p in result.problems:
            click.echo(f"excluded {p}")
        click.echo(f"serve {wheelhouse} and use --index-url http://HOST/simple/")

    _emit(as_json, data, text)


@cli.command()
@common
@profile_options
@wheelhouse_option
@target_options
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="Bundle file: .zip (default), .tar or .tar.gz.",
)
@click.option(
    "--wh-wheels",
    type=click.Path(path_type=Path),
    help="Folder with wh's wheel and its dependencies for the target "
    "(default: build wh from its source tree and fetch its dependencies).",
)
@click.option(
    "--sign",
    "sign_key",
    type=click.Path(path_type=Path),
    help="Sign the bundle's manifest with this ed25519 private key (`wh keygen KEY`).",
)
@load_options
def bundle(
    as_json: bool,
    verbose: int,
    wheelhouse: Path,
    output: Path,
    wh_wheels: Path | None,
    sign_key: Path | None,
    **kw: Any,
) -> None:
    """Write one archive to install PROFILE offline: lock, wheels, wh, manifest, scripts."""
    from wh.app.bundle import make_bundle

    load = _load(kw)
    manifest = _manifest(kw)
    with reporters.showing(as_json):
        result = make_bundle(
            manifest,
            wheelhouse,
            _spec(kw),
            output,
            tool_wheels=wh_wheels,
            sign_key=sign_key,
            load=load,
        )
    for need in result.needs_installed:  # loud on stderr, JSON or not: the bundle lacks it
        click.echo(
            f"warning: the bundle carries no wheel of {need}: the offline machine must already "
            "have exactly that build installed, or the bundle's install is refused (exit 6); "
            "to carry it, put its wheel in the wheelhouse and bundle again",
            err=True,
        )

    def text() -> None:
        click.echo(
            f"wrote {result.path}: {len(result.packages)} locked wheel(s), "
            f"{len(result.tool_wheels)} wheel(s) for wh, {result.files} file(s), "
            f"{result.size:,} bytes"
        )
        click.echo(f"sha256 {result.sha256}  (compare it on the offline machine)")
        if result.signed_by:
            click.echo(f"signed by {result.signed_by}: install with --trust KEY.pub")
        click.echo("offline: unpack it, then run install.ps1 (Windows) or install.sh")

    _emit(as_json, result.to_json(), text)


@cli.command()
@common
@click.argument("key", type=click.Path(path_type=Path))
def keygen(as_json: bool, verbose: int, key: Path) -> None:
    """Make an ed25519 key pair for `wh bundle --sign`: KEY (private) and KEY.pub."""
    from wh.airgap.signing import generate

    fp = generate(key)
    data = {"private_key": str(key), "public_key": f"{key}.pub", "fingerprint": fp}
    _emit(
        as_json,
        data,
        lambda: click.echo(
            f"wrote {key} (keep it private) and {key}.pub (give it to whoever installs): {fp}"
        ),
    )


def _refusals() -> None:
    """Options a command cannot use where given are refused with why (wh/cli/flags.py)."""
    from wh.cli import flags as cf
    from wh.cli.export import export_cmd

    for cmd, rules in (
        (install, cf.INSTALL),
        (verify, cf.VERIFY),
        (fetch, cf.FETCH),
        (bundle, cf.BUNDLE),
        (why, cf.WHY),
        (scan, cf.SCAN),
        (index_cmd, cf.INDEX),
        (keygen, cf.KEYGEN),
        (export_cmd, cf.EXPORT),
        (cli.commands["build"], cf.BUILD),
    ):
        cf.refuse_in(cmd, rules)


_refusals()


def main() -> None:
    from wh.proc.lifetime import sigterm_as_interrupt
    from wh.proc.memory import cap_malloc_arenas

    sigterm_as_interrupt()  # SIGTERM rolls an install back like Ctrl-C
    cap_malloc_arenas()  # before any thread: two glibc arenas keep a lock's peak lower
    cli(prog_name="wh")

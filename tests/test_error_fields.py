"""Errors built from data carry it as fields: the text is derived from them (the same words
as before they had fields), and so is the JSON (its "fields")."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from wh import errors
from wh.app import lockfiles
from wh.errors import (
    AmbiguousWheelsError,
    BackendError,
    BackendFailedError,
    BreakingPlanError,
    BundleError,
    BundleOverwriteError,
    BundleSignatureError,
    CommandError,
    DeclaredTargetError,
    EmptyProfileError,
    EnvironmentHeldError,
    FetchMissingError,
    IndexOptionError,
    IndexUnavailable,
    InjectedFaultError,
    InstallFailedError,
    InstallStillRunningError,
    InterpreterError,
    JournalError,
    KeyFileError,
    LinkModeError,
    LockBugError,
    LockDigestError,
    LockEntryError,
    LockError,
    LockKeptError,
    LockMissingError,
    LockSettingError,
    LockStaleError,
    LockSyntaxError,
    LockTargetError,
    LockWheelsError,
    LongPathsError,
    MoveError,
    NoTargetError,
    NotInLockError,
    OverwriteError,
    PackagesMissingError,
    ProfileFileError,
    ProfileKeyError,
    ProtectedChangeError,
    ProtectedNotInstalledError,
    ProtectedVersionError,
    ProtectionVersionError,
    RangeProblem,
    RequiresDistError,
    ResolutionConflictError,
    ResolutionGaveUpError,
    SettingError,
    StagingError,
    TargetOptionsError,
    ToolWheelsError,
    UnknownProfileError,
    UnportablePathsError,
    UnpredictedWritesError,
    UvCacheError,
    VenvMismatchError,
    VerificationFailedError,
    WheelhouseMissingError,
    WheelMetadataError,
    WheelsExcludedError,
    WheelsInvalidError,
    WheelsSwappedError,
    WhError,
)

from tests.fixtures import run_wh

LOCK = Path("lockfiles/pylock.toml")


@pytest.mark.parametrize(
    ("error", "message", "hint", "fields"),
    [
        (
            LockMissingError(LOCK),
            f"lock {LOCK} does not exist",
            f"create it with `wh lock PROFILE --lockfile {LOCK}`",
            {"path": str(LOCK)},
        ),
        (
            LockSyntaxError(LOCK, "Expected '=' (at line 1, column 5)", pep751=False),
            f"{LOCK}: not valid TOML (Expected '=' (at line 1, column 5))",
            "re-create it with `wh lock`",
            {"path": str(LOCK), "problem": "Expected '=' (at line 1, column 5)", "pep751": False},
        ),
        (
            LockSyntaxError(LOCK, "lock-version missing", pep751=True),
            f"{LOCK}: not a valid PEP 751 lock: lock-version missing",
            "re-create it with `wh lock`",
            {"path": str(LOCK), "problem": "lock-version missing", "pep751": True},
        ),
        (
            LockEntryError(LOCK, "torch", "one-wheel"),
            f"{LOCK}: package torch must name exactly one wheel by path or URL",
            "wh installs exactly one wheel per package; re-create with `wh lock`",
            {"path": str(LOCK), "package": "torch", "rule": "one-wheel"},
        ),
        (
            LockEntryError(LOCK, "torch", "no-sha256", found=("md5", "sha1")),
            f"{LOCK}: torch has no sha256 hash (found: md5, sha1)",
            "md5 and sha1 are refused; re-create the lock with `wh lock`",
            {"path": str(LOCK), "package": "torch", "rule": "no-sha256", "found": ["md5", "sha1"]},
        ),
        (
            LockEntryError(LOCK, "torch", "no-sha256"),
            f"{LOCK}: torch has no sha256 hash (found: none)",
            "md5 and sha1 are refused; re-create the lock with `wh lock`",
            {"path": str(LOCK), "package": "torch", "rule": "no-sha256", "found": []},
        ),
        (
            LockEntryError(LOCK, "torch", "no-size"),
            f"{LOCK}: torch has no size",
            "re-create it with `wh lock`",
            {"path": str(LOCK), "package": "torch", "rule": "no-size"},
        ),
        (
            LockDigestError(LOCK),
            f"{LOCK}: the lock's digest does not match its contents (edited by hand?)",
            "never edit a lock; re-create it with `wh lock` and review the diff",
            {"path": str(LOCK)},
        ),
        (
            LockWheelsError(LOCK, ["a.whl: missing (expected at /w/a.whl)"]),
            f"1 wheel(s) named by {LOCK} do not match it; nothing was installed",
            "restore the exact wheels the lock names, or re-lock with `wh lock`",
            {
                "path": str(LOCK),
                "problems": ["a.whl: missing (expected at /w/a.whl)"],
                "downloaded": False,
            },
        ),
        (
            LockTargetError(LOCK, None, Path("/v/bin/python"), ["sys_platform: ..."]),
            f"{LOCK} was made for another target, not for /v/bin/python",
            "lock for this environment: `wh lock PROFILE --python PATH`",
            {
                "path": str(LOCK),
                "made_for": None,
                "python": "/v/bin/python",
                "problems": ["sys_platform: ..."],
            },
        ),
        (
            LockKeptError(LOCK, ["six: the lock keeps installed 1.16.0, the environment has 1.17"]),
            f"{LOCK} relies on installed distributions that changed; nothing was installed",
            "re-lock for this environment with `wh lock PROFILE --python PATH`",
            {
                "path": str(LOCK),
                "problems": ["six: the lock keeps installed 1.16.0, the environment has 1.17"],
            },
        ),
        (
            NotInLockError("numpy", LOCK),
            f"numpy is not in {LOCK}",
            "`wh why` explains packages of the lock; check the name, or re-lock",
            {"name": "numpy", "path": str(LOCK)},
        ),
    ],
)
def test_the_text_and_json_come_from_the_fields(
    error: LockError, message: str, hint: str, fields: dict[str, object]
) -> None:
    assert isinstance(error, LockError) and error.exit_code == 5
    assert (error.message, error.hint) == (message, hint)
    assert error.render().splitlines()[0] == f"error: {message}"
    assert error.to_json()["fields"] == fields
    json.dumps(error.to_json())  # JSON values only


def test_an_error_without_fields_has_the_json_it_had() -> None:
    assert WhError("x", hint="y").to_json() == {
        "error": "error",
        "exit_code": 1,
        "message": "x",
        "details": [],
        "hint": "y",
    }


def test_reading_a_lock_raises_the_error_with_its_fields(tmp_path: Path) -> None:
    path = tmp_path / "pylock.toml"
    with pytest.raises(LockMissingError) as missing:
        lockfiles.read(path)
    assert missing.value.path == path
    path.write_text("lock-version = \n", encoding="utf-8")
    with pytest.raises(LockSyntaxError) as bad:
        lockfiles.read(path)
    assert bad.value.pep751 is False and bad.value.path == path


def test_the_cli_prints_the_fields_of_a_missing_lock(tmp_path: Path) -> None:
    lock = tmp_path / "none.toml"
    r = run_wh("why", "torch", "--lockfile", lock, "--json")
    assert r.returncode == 5
    out = json.loads(r.stdout)
    assert out["message"] == f"lock {lock} does not exist"
    assert out["fields"] == {"path": str(lock)}


def test_a_refused_plan_names_each_protected_distribution() -> None:
    python = Path("/v/bin/python")
    missing = ProtectedChangeError(
        python, [("torch", "protected torch 2.9.1 is not installed", True)]
    )
    assert missing.exit_code == 6
    assert missing.message == (
        "the plan would change a protected distribution; nothing was installed"
    )
    assert missing.details == ("protected torch 2.9.1 is not installed",)
    assert missing.hint.startswith(
        f"the lock keeps torch as installed and carries no wheel of it: install that exact "
        f"build into {python} first"
    )
    assert missing.to_json()["fields"] == {
        "python": str(python),
        "refusals": [
            {"name": "torch", "reason": "protected torch 2.9.1 is not installed", "missing": True}
        ],
    }
    replaced = ProtectedChangeError(python, [("torch", "would replace torch", False)])
    assert replaced.hint.startswith("protected distributions are never replaced")


# Every refusal's class, with the words it said before it had fields: (error, exit code,
# message, hint, details, fields).
W = Path("/w")
PY = Path("/v/bin/python")
WHERE = "wh.toml [profile.ocr]"
FIELD_CASES: list[tuple[WhError, int, str, str, list[str], dict[str, object]]] = [
    (
        SettingError("WH_OFFLINE", "yes", "flag", "stay offline"),
        2,
        "WH_OFFLINE='yes' is not 1 or 0",
        "set WH_OFFLINE=1 to stay offline, or unset it (0 or empty is off)",
        [],
        {"name": "WH_OFFLINE", "value": "yes", "rule": "flag", "purpose": "stay offline"},
    ),
    (
        SettingError("WH_UV_CONCURRENT_INSTALLS", "0", "count"),
        2,
        "WH_UV_CONCURRENT_INSTALLS='0' is not a positive whole number",
        "set it to how many wheels uv may write at once (e.g. 8), or unset it",
        [],
        {"name": "WH_UV_CONCURRENT_INSTALLS", "value": "0", "rule": "count"},
    ),
    (
        SettingError("WH_CUDA_VERSION", "12", "cuda"),
        2,
        "WH_CUDA_VERSION='12' is not a CUDA version",
        "set it to an installed toolkit's MAJOR.MINOR (e.g. 12.8), or unset it",
        [],
        {"name": "WH_CUDA_VERSION", "value": "12", "rule": "cuda"},
    ),
    (
        SettingError("WH_TEST_FAULT", "x:fail", "fault"),
        2,
        "WH_TEST_FAULT spec 'x:fail' is not BATCH:ACTION",
        "BATCH is a number or 'hashed'; ACTION is fail, interrupt, sleep:SECONDS "
        "or write:ABSOLUTE-PATH; unset WH_TEST_FAULT outside tests",
        [],
        {"name": "WH_TEST_FAULT", "value": "x:fail", "rule": "fault"},
    ),
    (
        WheelhouseMissingError(W),
        3,
        "wheelhouse /w does not exist or is not a folder",
        "pass --wheelhouse PATH, or create the folder and put wheels in it",
        [],
        {"root": "/w"},
    ),
    (
        WheelsExcludedError(W, ["a.whl: bad zip"]),
        3,
        "1 wheel(s) excluded from /w",
        "remove or replace the broken wheels",
        ["a.whl: bad zip"],
        {"root": "/w", "problems": ["a.whl: bad zip"]},
    ),
    (
        WheelsInvalidError([("a.whl", ["no RECORD", "bad tag"])]),
        3,
        "1 wheel(s) failed validation; nothing was installed",
        "replace these wheels with sound builds (never install a wheel whose RECORD "
        "does not match its contents)",
        ["a.whl: no RECORD", "a.whl: bad tag"],
        {"wheels": [{"filename": "a.whl", "problems": ["no RECORD", "bad tag"]}]},
    ),
    (
        AmbiguousWheelsError(["six 1.0: a.whl and b.whl are different files"]),
        3,
        "1 ambiguous wheel(s) in the wheelhouse; nothing was locked",
        "keep exactly one file per name, version and tag (or give the rebuild a higher build tag)",
        ["six 1.0: a.whl and b.whl are different files"],
        {"problems": ["six 1.0: a.whl and b.whl are different files"]},
    ),
    (
        OverwriteError(["b writes x, owned by a", "c writes y", "b writes z"], ["b", "c", "b"]),
        3,
        "3 file(s) would be overwritten by another distribution; nothing was installed",
        "remove the conflicting distribution first, or allow it deliberately with "
        'allow-overwrite = ["b", "c"] in the profile and re-lock (`wh lock PROFILE '
        "--allow-overwrite b --allow-overwrite c`): a lock keeps what it allows",
        ["b writes x, owned by a", "c writes y", "b writes z"],
        {"clashes": ["b writes x, owned by a", "c writes y", "b writes z"], "writers": ["b", "c"]},
    ),
    (
        BundleOverwriteError(W / "b.zip", "ocr", ["b and a both write x"]),
        3,
        "the bundle's install would fail: 1 file(s) are written by two of its wheels; "
        "no bundle was written to /w/b.zip",
        "the install refuses a file written by two distributions; if the later one may win, "
        'allow it in [profile.ocr]: allow-overwrite = ["b"] (or --allow-overwrite b)',
        ["b and a both write x"],
        {"output": "/w/b.zip", "profile": "ocr", "overwrites": ["b and a both write x"]},
    ),
    (
        UnportablePathsError("Windows", ["a/CON.py: a reserved name"]),
        3,
        "1 path(s) in the locked wheels cannot be written on Windows as named; nothing was bundled",
        "these wheels would install wrongly or overwrite each other on Windows: "
        "replace them with builds made for the target, or leave them out of the profile",
        ["a/CON.py: a reserved name"],
        {"system": "Windows", "problems": ["a/CON.py: a reserved name"]},
    ),
    (
        ToolWheelsError(None),
        3,
        "wh is not running from its source tree, so its wheel cannot be built",
        "pass --wh-wheels DIR holding wh's wheel and its dependencies for the target",
        [],
        {"target": None, "missing": []},
    ),
    (
        ToolWheelsError("win_amd64 cp312", ["click: no wheel"]),
        3,
        "wh's own dependencies cannot be had as wheels for win_amd64 cp312",
        "pass --wh-wheels DIR holding wh's wheel and its dependencies",
        ["click: no wheel"],
        {"target": "win_amd64 cp312", "missing": ["click: no wheel"]},
    ),
    (
        FetchMissingError(["torch: no wheel"], downloaded=False),
        3,
        "1 requirement(s) cannot be had as wheels; nothing was downloaded",
        "follow the advice on each line, then run `wh fetch` again: wheels already "
        "in the wheelhouse are checked, not downloaded twice",
        ["torch: no wheel"],
        {"missing": ["torch: no wheel"], "downloaded": False},
    ),
    (
        FetchMissingError(["torch: HTTP 404"], downloaded=True),
        3,
        "1 wheel(s) could not be had",
        "follow the advice on each line, then run `wh fetch` again: wheels already "
        "in the wheelhouse are checked, not downloaded twice",
        ["torch: HTTP 404"],
        {"missing": ["torch: HTTP 404"], "downloaded": True},
    ),
    (
        WheelMetadataError("a.whl"),
        3,
        "a.whl: expected one .dist-info/METADATA",
        "",
        [],
        {"filename": "a.whl", "problem": None},
    ),
    (
        WheelMetadataError("a.whl", "METADATA is too large"),
        3,
        "a.whl: METADATA is too large",
        "replace the wheel with a sound build; `wh scan` excludes it too",
        [],
        {"filename": "a.whl", "problem": "METADATA is too large"},
    ),
    (
        RequiresDistError("a.whl", "https://i/simple/", "b >=", "bad spec"),
        3,
        "a.whl on https://i/simple/: Requires-Dist 'b >=' is not a valid requirement (bad spec)",
        "exclude this version with a tighter requirement or an override",
        [],
        {
            "filename": "a.whl",
            "index": "https://i/simple/",
            "requirement": "b >=",
            "problem": "bad spec",
        },
    ),
    (
        IndexUnavailable("https://i/simple/six/", "unreachable", problem="timed out"),
        3,
        "cannot reach https://i/simple/six/: timed out",
        "check the network or the index URL (`pip config list` shows the "
        "configured one), then run `wh fetch` again",
        [],
        {"url": "https://i/simple/six/", "rule": "unreachable", "problem": "timed out"},
    ),
    (
        IndexUnavailable("https://i/simple/six/", "page-status", status=503),
        3,
        "https://i/simple/six/ answered HTTP 503",
        "check the index URL; run `wh fetch` again when the index is back",
        [],
        {"url": "https://i/simple/six/", "rule": "page-status", "status": 503},
    ),
    (
        IndexUnavailable("https://i/a.whl.metadata", "file-status", status=500),
        3,
        "https://i/a.whl.metadata answered HTTP 500",
        "run `wh fetch` again; if it persists the index lacks this file",
        [],
        {"url": "https://i/a.whl.metadata", "rule": "file-status", "status": 500},
    ),
    (
        IndexUnavailable("https://i/a.whl", "download-status", status=403),
        3,
        "https://i/a.whl answered HTTP 403",
        "",
        [],
        {"url": "https://i/a.whl", "rule": "download-status", "status": 403},
    ),
    (
        IndexUnavailable("https://i/a.whl", "range-status", status=200, byte_range="0-99"),
        3,
        "https://i/a.whl: Range 0-99 answered 200",
        "",
        [],
        {"url": "https://i/a.whl", "rule": "range-status", "status": 200, "range": "0-99"},
    ),
    (
        IndexUnavailable("https://i/a.whl.metadata", "sha256", problem="ab", expected="cd"),
        3,
        "https://i/a.whl.metadata: sha256 ab, the index says cd",
        "the index or a proxy served a different file; run `wh fetch` again",
        [],
        {"url": "https://i/a.whl.metadata", "rule": "sha256", "problem": "ab", "expected": "cd"},
    ),
    (
        IndexUnavailable("https://i/a.whl", "download-sha256", problem="ab", expected="cd"),
        3,
        "https://i/a.whl: sha256 ab, the index says cd",
        "the download was corrupted or the index changed; run `wh fetch` again",
        [],
        {"url": "https://i/a.whl", "rule": "download-sha256", "problem": "ab", "expected": "cd"},
    ),
    (
        IndexUnavailable("https://i/a.whl", "download-failed", attempts=4, problem="reset"),
        3,
        "downloading https://i/a.whl failed 4 times: reset",
        "run `wh fetch` again: the partial file is resumed",
        [],
        {"url": "https://i/a.whl", "rule": "download-failed", "problem": "reset", "attempts": 4},
    ),
    (
        IndexUnavailable("https://i/a.whl", "stream", problem="IncompleteRead"),
        3,
        "https://i/a.whl: IncompleteRead",
        "",
        [],
        {"url": "https://i/a.whl", "rule": "stream", "problem": "IncompleteRead"},
    ),
    (
        IndexUnavailable("https://i/simple/six/", "bad-page", problem="no files"),
        3,
        "https://i/simple/six/: not a valid project page (no files)",
        "check that the URL is a simple index root (it ends in /simple/)",
        [],
        {"url": "https://i/simple/six/", "rule": "bad-page", "problem": "no files"},
    ),
    (
        RangeProblem("a.whl", "no-end-record", number=65536),
        3,
        "a.whl: no zip end record in its last 65536 bytes",
        "",
        [],
        {"what": "a.whl", "rule": "no-end-record", "number": 65536},
    ),
    (
        RangeProblem("a.whl", "no-zip64-locator"),
        3,
        "a.whl: zip64 end locator missing",
        "",
        [],
        {"what": "a.whl", "rule": "no-zip64-locator"},
    ),
    (
        RangeProblem("a.whl", "no-zip64-record"),
        3,
        "a.whl: zip64 end record missing",
        "",
        [],
        {"what": "a.whl", "rule": "no-zip64-record"},
    ),
    (
        RangeProblem("a.whl", "bad-central-entry", number=0),
        3,
        "a.whl: central directory entry 0 is malformed",
        "",
        [],
        {"what": "a.whl", "rule": "bad-central-entry", "number": 0},
    ),
    (
        RangeProblem("a.whl", "metadata-count", number=2),
        3,
        "a.whl: expected one .dist-info/METADATA, found 2",
        "",
        [],
        {"what": "a.whl", "rule": "metadata-count", "number": 2},
    ),
    (
        RangeProblem("a.whl", "bad-local-header", member="a.dist-info/METADATA"),
        3,
        "a.whl: local header of a.dist-info/METADATA is malformed",
        "",
        [],
        {"what": "a.whl", "rule": "bad-local-header", "member": "a.dist-info/METADATA"},
    ),
    (
        RangeProblem("a.whl", "inflate", member="a.dist-info/METADATA", problem="bad block"),
        3,
        "a.whl: a.dist-info/METADATA does not inflate (bad block)",
        "",
        [],
        {
            "what": "a.whl",
            "rule": "inflate",
            "member": "a.dist-info/METADATA",
            "problem": "bad block",
        },
    ),
    (
        RangeProblem("a.whl", "method", member="a.dist-info/METADATA", number=12),
        3,
        "a.whl: a.dist-info/METADATA uses zip compression method 12",
        "",
        [],
        {"what": "a.whl", "rule": "method", "member": "a.dist-info/METADATA", "number": 12},
    ),
    (
        ResolutionConflictError(
            ["six"], "/w", ["a", "b"], ["six:", "  - a needs six<1"], ["h1", "h2"]
        ),
        4,
        "cannot satisfy the requirements on six from /w (requested by a, b)",
        "h1\n      h2",
        ["six:", "  - a needs six<1"],
        {"packages": ["six"], "source": "/w", "parents": ["a", "b"], "advice": ["h1", "h2"]},
    ),
    (
        PackagesMissingError(["torch", "six"], ["six: no wheel", "torch: no wheel"]),
        4,
        "the wheelhouse lacks 2 package(s) the profile needs: six, torch",
        "add wheels of all of them (online, `wh fetch PROFILE` fetches them in one go; "
        "`wh build` for a package without a wheel for this platform), and replace the "
        "broken ones",
        ["six: no wheel", "torch: no wheel"],
        {"packages": ["six", "torch"], "problems": ["six: no wheel", "torch: no wheel"]},
    ),
    (
        ResolutionGaveUpError(200),
        4,
        "resolution gave up after 200 rounds of backtracking",
        "pin the packages involved more tightly in the profile's requirements",
        [],
        {"rounds": 200},
    ),
    (
        BreakingPlanError(PY, ["pydantic 2 needs pydantic-core==2.1"], ["pydantic", "pydantic"]),
        4,
        "the plan would break 1 requirement(s) of distributions installed in /v/bin/python "
        "outside the lock; nothing was changed",
        "add them to the profile so the lock resolves them with the rest (-r pydantic), "
        "or remove them from the environment deliberately",
        ["pydantic 2 needs pydantic-core==2.1"],
        {
            "python": "/v/bin/python",
            "broken": ["pydantic 2 needs pydantic-core==2.1"],
            "names": ["pydantic"],
        },
    ),
    (
        LockStaleError(LOCK, "ocr", [f"p{i}" for i in range(61)]),
        5,
        f"{LOCK} is out of date",
        "re-lock with `wh lock ocr` and review the diff",
        [f"p{i}" for i in range(60)],
        {"path": str(LOCK), "profile": "ocr", "problems": [f"p{i}" for i in range(61)]},
    ),
    (
        LockSettingError(LOCK, "backend", "conda", ["auto", "uv", "pip"]),
        5,
        f"{LOCK}: [tool.wh] backend 'conda' is not one of auto, uv, pip",
        "re-lock it with `wh lock PROFILE`, or pass --backend",
        [],
        {"path": str(LOCK), "key": "backend", "value": "conda", "allowed": ["auto", "uv", "pip"]},
    ),
    (
        LockBugError("no sha256", "a.whl"),
        5,
        "wh has no sha256 for a.whl; this is a bug in wh",
        "",
        [],
        {"problem": "no sha256", "filename": "a.whl"},
    ),
    (
        LockBugError("lock-version missing"),
        5,
        "wh produced an invalid lock: lock-version missing",
        "",
        [],
        {"problem": "lock-version missing", "filename": None},
    ),
    (
        WheelsSwappedError([W / "a.whl"]),
        5,
        "1 wheel(s) changed after their sha256 was checked against the lock, while they were "
        "being installed; the install was refused",
        "find what writes the wheelhouse during installs (a sync tool, another "
        "user), stop it, and install again",
        ["/w/a.whl: replaced or rewritten since it was hashed"],
        {"paths": ["/w/a.whl"]},
    ),
    (
        BundleError(W, "missing"),
        5,
        "bundle /w does not exist",
        "pass the bundle file or folder",
        [],
        {"path": "/w", "rule": "missing"},
    ),
    (
        BundleError(W, "no-info", member="WH-BUNDLE"),
        5,
        "/w is not a wh bundle: WH-BUNDLE is missing",
        "",
        [],
        {"path": "/w", "rule": "no-info", "member": "WH-BUNDLE"},
    ),
    (
        BundleError(W, "no-manifest", member="SHA256SUMS"),
        5,
        "/w has no SHA256SUMS; it is not a wh bundle or it was damaged",
        "make the bundle again with `wh bundle`",
        [],
        {"path": "/w", "rule": "no-manifest", "member": "SHA256SUMS"},
    ),
    (
        BundleError(W, "unreadable-manifest", member="SHA256SUMS", problem="Permission denied"),
        5,
        "/w has no readable SHA256SUMS (Permission denied); it is not a wh bundle or it "
        "was damaged; nothing was installed",
        "make the bundle again with `wh bundle`",
        [],
        {
            "path": "/w",
            "rule": "unreadable-manifest",
            "member": "SHA256SUMS",
            "problem": "Permission denied",
        },
    ),
    (
        BundleError(W, "manifest-mismatch", problems=["a.whl: missing"]),
        5,
        "bundle /w: 1 file(s) do not match its manifest; nothing was installed",
        "the bundle was damaged or tampered with: copy it again from its source",
        ["a.whl: missing"],
        {"path": "/w", "rule": "manifest-mismatch", "problems": ["a.whl: missing"]},
    ),
    (
        BundleError(
            W / "b.zip", "unsafe-entries", problems=[f"'../{i}': escapes" for i in range(21)]
        ),
        5,
        "/w/b.zip: 21 unsafe entry(ies); nothing was unpacked or installed",
        "the bundle was not made by `wh bundle`, or it was tampered with",
        [*(f"'../{i}': escapes" for i in range(20)), "... and 1 more"],
        {
            "path": "/w/b.zip",
            "rule": "unsafe-entries",
            "problems": [f"'../{i}': escapes" for i in range(21)],
        },
    ),
    (
        BundleError(W / "b.rar", "not-an-archive"),
        5,
        "/w/b.rar is neither a zip nor a tar archive",
        "",
        [],
        {"path": "/w/b.rar", "rule": "not-an-archive"},
    ),
    (
        BundleError(W / "b.tar", "unreadable-entry", member="wheels/a.whl"),
        5,
        "/w/b.tar: cannot read 'wheels/a.whl'",
        "",
        [],
        {"path": "/w/b.tar", "rule": "unreadable-entry", "member": "wheels/a.whl"},
    ),
    (
        BundleSignatureError(W, "unsigned-but-trusted", trusted=["SHA256:b", "SHA256:a"]),
        5,
        "bundle /w is not signed, and --trust asks for a signature by SHA256:a, SHA256:b; "
        "nothing was installed",
        "get the signed bundle from its maker (`wh bundle --sign KEY`); an "
        "unsigned copy may have been replaced on the way",
        [],
        {"root": "/w", "rule": "unsigned-but-trusted", "trusted": ["SHA256:a", "SHA256:b"]},
    ),
    (
        BundleSignatureError(W, "unsigned"),
        5,
        "bundle /w is not signed, so nothing says who made it; nothing was installed",
        "ask its maker for a signed bundle (`wh bundle --sign KEY`) and pass "
        "--trust KEY.pub, or pass --allow-unsigned if you checked the archive's "
        "sha256 another way",
        [],
        {"root": "/w", "rule": "unsigned"},
    ),
    (
        BundleSignatureError(W, "malformed", signature=W / "SHA256SUMS.sig"),
        5,
        "/w/SHA256SUMS.sig is malformed; nothing was installed",
        "the bundle was damaged or tampered with: copy it again from its maker",
        [],
        {"root": "/w", "rule": "malformed", "signature": "/w/SHA256SUMS.sig"},
    ),
    (
        BundleSignatureError(W, "no-trusted-key", signer="SHA256:s"),
        5,
        "bundle /w is signed by SHA256:s, but no key is trusted; nothing was installed",
        "pass --trust KEY.pub with the public key of the bundle's maker (compare its "
        "fingerprint with SHA256:s by `ssh-keygen -lf KEY.pub`)",
        [],
        {"root": "/w", "rule": "no-trusted-key", "signer": "SHA256:s"},
    ),
    (
        BundleSignatureError(W, "untrusted", signer="SHA256:s", trusted=["SHA256:a"]),
        5,
        "bundle /w is signed by SHA256:s, which is none of the trusted keys (SHA256:a); "
        "nothing was installed",
        "pass --trust with the public key of the bundle's real maker; a bundle signed "
        "by an unknown key may come from anyone",
        [],
        {"root": "/w", "rule": "untrusted", "signer": "SHA256:s", "trusted": ["SHA256:a"]},
    ),
    (
        BundleSignatureError(W, "mismatch", signer="SHA256:s"),
        5,
        "the signature of bundle /w does not match its SHA256SUMS: the manifest (and so the "
        "lock or a wheel) changed after signing; nothing was installed",
        "the bundle was tampered with or damaged: copy it again from its maker",
        [],
        {"root": "/w", "rule": "mismatch", "signer": "SHA256:s"},
    ),
    (
        ProtectedNotInstalledError("torch", "2.9.1", PY, ["the profile requires torch"], []),
        6,
        "torch is protected but not installed in /v/bin/python; the plan would install "
        "torch 2.9.1 from the wheelhouse",
        "install the torch build you need into the environment first, or name the exact "
        "build to install from the wheelhouse: --protect 'torch==VERSION' (the wheelhouse "
        "has no torch wheel)",
        ["the profile requires torch"],
        {
            "name": "torch",
            "version": "2.9.1",
            "python": "/v/bin/python",
            "required_by": ["the profile requires torch"],
            "available": [],
        },
    ),
    (
        ProtectedNotInstalledError("torch", "2.9.1", PY, [], ["2.9.1", "2.8.0"]),
        6,
        "torch is protected but not installed in /v/bin/python; the plan would install "
        "torch 2.9.1 from the wheelhouse",
        "install the torch build you need into the environment first, or name the exact "
        "build to install from the wheelhouse: --protect 'torch==2.9.1' or "
        "--protect 'torch==2.8.0'",
        [],
        {
            "name": "torch",
            "version": "2.9.1",
            "python": "/v/bin/python",
            "required_by": [],
            "available": ["2.9.1", "2.8.0"],
        },
    ),
    (
        ProtectedVersionError("torch", "2.9.1", "the environment", "2.8.0", "wh.toml"),
        6,
        "the profile protects torch 2.9.1 but the environment has torch 2.8.0",
        "install torch 2.9.1 first, or correct the protection in wh.toml",
        [],
        {
            "name": "torch",
            "version": "2.9.1",
            "where": "the environment",
            "installed": "2.8.0",
            "source": "wh.toml",
        },
    ),
    (
        JournalError(W / ".wh-journal", "unfinished"),
        7,
        "an unfinished install journal exists in /w/.wh-journal",
        "run `wh recover --python PATH` first",
        [],
        {"journal": "/w/.wh-journal", "rule": "unfinished"},
    ),
    (
        JournalError(W / ".wh-journal", "unreadable", problem="bad JSON"),
        7,
        "the install journal in /w/.wh-journal is unreadable (bad JSON)",
        "inspect /w/.wh-journal by hand; its backup/ folder holds the moved-aside files",
        [],
        {"journal": "/w/.wh-journal", "rule": "unreadable", "problem": "bad JSON"},
    ),
    (
        JournalError(W / ".wh-journal", "foreign", paths=["/etc/passwd"]),
        7,
        "the install journal in /w/.wh-journal names 1 path(s) wh never journals; "
        "it was not written by wh for this environment, and nothing was changed",
        "inspect /w/.wh-journal by hand (its backup/ folder holds moved-aside files), "
        "then remove it",
        ["/etc/passwd"],
        {"journal": "/w/.wh-journal", "rule": "foreign", "paths": ["/etc/passwd"]},
    ),
    (
        InstallFailedError("move-aside", "[Errno 13] denied"),
        7,
        "could not move aside the files this install replaces ([Errno 13] denied); "
        "nothing was changed",
        "close programs using the environment, free disk space, and retry",
        [],
        {"rule": "move-aside", "problem": "[Errno 13] denied"},
    ),
    (
        InstallFailedError("restored", "[Errno 28] full"),
        7,
        "the install failed: [Errno 28] full; the environment was restored to its state before",
        "free disk space or fix permissions, then retry",
        [],
        {"rule": "restored", "problem": "[Errno 28] full"},
    ),
    (
        InstallFailedError("rollback-failed", "OSError(28)", "[Errno 30] read-only"),
        7,
        "the install failed (OSError(28)) and rolling back failed too ([Errno 30] read-only)",
        "free the disk or fix permissions, then run `wh recover --python PATH`",
        [],
        {"rule": "rollback-failed", "problem": "OSError(28)", "rollback": "[Errno 30] read-only"},
    ),
    (
        InjectedFaultError(3),
        7,
        "injected fault after batch 3 (WH_TEST_FAULT)",
        "",
        [],
        {"batch": 3},
    ),
    (
        StagingError("unexpected-records", ["a.whl: no /s/a.dist-info/RECORD"]),
        7,
        "the backend staged 1 wheel(s) where wh did not expect them; "
        "the environment was not changed",
        "report this with the output of `wh install -v`; install with --backend pip meanwhile",
        ["a.whl: no /s/a.dist-info/RECORD"],
        {"rule": "unexpected-records", "paths": ["a.whl: no /s/a.dist-info/RECORD"]},
    ),
    (
        StagingError("unrecorded-files", [f"f{i}" for i in range(21)]),
        7,
        "the backend staged 21 file(s) that no wheel's RECORD names",
        "report this; install with --backend pip meanwhile",
        [f"f{i}" for i in range(20)],
        {"rule": "unrecorded-files", "paths": [f"f{i}" for i in range(21)]},
    ),
    (
        MoveError(W / "s/x", W / "x", "Is a directory"),
        7,
        "could not move /w/x into place: Is a directory",
        "remove what is in the way at that path (a folder where a file belongs, a "
        "file another program holds open), then retry",
        ["from /w/s/x"],
        {"source": "/w/s/x", "dest": "/w/x", "problem": "Is a directory"},
    ),
    (
        UvCacheError(W / "uv", "Device busy"),
        7,
        "could not remove the private uv cache /w/uv: Device busy",
        "close programs using files under it; the install was rolled back, retry",
        [],
        {"cache": "/w/uv", "problem": "Device busy"},
    ),
    (
        LinkModeError("reflink", "unknown", source="the lock", allowed=["copy", "hardlink"]),
        7,
        "link mode 'reflink', which the lock asks for, is not one of copy, hardlink; "
        "nothing was changed",
        "pass --link-mode copy, or re-lock with a valid link-mode",
        [],
        {
            "link_mode": "reflink",
            "rule": "unknown",
            "source": "the lock",
            "allowed": ["copy", "hardlink"],
        },
    ),
    (
        LinkModeError(
            "symlink",
            "unsupported",
            source="--link-mode",
            why="pip cannot install with link mode symlink",
            allowed=["copy"],
            uv=True,
        ),
        7,
        "pip cannot install with link mode symlink, which --link-mode asks for; "
        "nothing was changed",
        "use --backend uv, or --link-mode copy",
        [],
        {
            "link_mode": "symlink",
            "rule": "unsupported",
            "source": "--link-mode",
            "why": "pip cannot install with link mode symlink",
            "allowed": ["copy"],
            "uv": True,
        },
    ),
    (
        LinkModeError("hardlink", "backend", why="pip cannot hardlink"),
        7,
        "pip cannot hardlink",
        "use --backend uv, or --link-mode copy",
        [],
        {"link_mode": "hardlink", "rule": "backend", "why": "pip cannot hardlink"},
    ),
    (
        UnpredictedWritesError([W / "bin/x"], [W / "bin/y"]),
        7,
        "the backend wrote 2 path(s) that no wheel predicted; the install was refused",
        "report this with the wheel and `wh install -v` output; a wheel's "
        "entry_points.txt that the backends read differently is the usual cause",
        [
            "/w/bin/x: written, but no wheel's RECORD names it",
            "/w/bin/y: rewritten in place, though no wheel names it; its earlier bytes could "
            "not be restored",
        ],
        {"new": ["/w/bin/x"], "changed": ["/w/bin/y"]},
    ),
    (
        BackendError("uv", "unavailable"),
        7,
        "uv is not available",
        "install uv, or use --backend pip",
        [],
        {"backend": "uv", "rule": "unavailable"},
    ),
    (
        BackendError("pip", "cannot-stage"),
        7,
        "pip cannot write wheels into a staging folder: it installs into the environment only",
        "report this: wh stages only with a backend whose capabilities say it stages",
        [],
        {"backend": "pip", "rule": "cannot-stage"},
    ),
    (
        BackendFailedError(
            CommandError("uv", "uv pip install", "failed", what="uv install", returncode=2)
        ),
        7,
        "uv install failed with exit code 2",
        "see the output above",
        ["uv pip install"],
        {
            "process": {
                "command": "uv",
                "shown": "uv pip install",
                "rule": "failed",
                "what": "uv install",
                "returncode": 2,
            }
        },
    ),
    (
        VerificationFailedError(["torch: not installed"], ["install torch", "re-lock"]),
        8,
        "verification failed: 1 problem(s)",
        "install torch; re-lock",
        ["torch: not installed"],
        {"problems": ["torch: not installed"], "advice": ["install torch", "re-lock"]},
    ),
    (
        VerificationFailedError(["x"], []),
        8,
        "verification failed: 1 problem(s)",
        "inspect with `wh why NAME`",
        ["x"],
        {"problems": ["x"], "advice": []},
    ),
    (
        ProfileKeyError(WHERE, "requirements", "requirement", value="torch>", problem="bad"),
        9,
        f"{WHERE}: requirements 'torch>' is not a valid requirement",
        "write a PEP 508 requirement such as 'sglang-kernel==0.4.3'",
        ["bad"],
        {
            "where": WHERE,
            "key": "requirements",
            "rule": "requirement",
            "value": "torch>",
            "problem": "bad",
        },
    ),
    (
        ProfileKeyError(WHERE, "drop", "pinned-drop", value="uvloop==1"),
        9,
        f"{WHERE}: drop 'uvloop==1' names a version, extras or URL",
        "a drop is a name and an optional marker: 'uvloop; sys_platform == \"win32\"'",
        [],
        {"where": WHERE, "key": "drop", "rule": "pinned-drop", "value": "uvloop==1"},
    ),
    (
        ProfileKeyError(WHERE, "backend", "choice", value="conda", expected=["auto", "uv"]),
        9,
        f"{WHERE}: backend 'conda' is not one of auto, uv",
        "set backend to one of: auto, uv",
        [],
        {
            "where": WHERE,
            "key": "backend",
            "rule": "choice",
            "value": "conda",
            "expected": ["auto", "uv"],
        },
    ),
    (
        ProfileKeyError(WHERE, "protect", "protection-version", value="torch==x"),
        9,
        f"{WHERE}: protection 'torch==x' has an invalid version",
        "write NAME or NAME==VERSION, e.g. torch==2.9.1+cu130",
        [],
        {"where": WHERE, "key": "protect", "rule": "protection-version", "value": "torch==x"},
    ),
    (
        ProfileKeyError(WHERE, "protect", "empty-protection"),
        9,
        f"{WHERE}: empty protection",
        "write NAME or NAME==VERSION",
        [],
        {"where": WHERE, "key": "protect", "rule": "empty-protection"},
    ),
    (
        ProfileKeyError(WHERE, "", "unknown-keys", found=["reqs"], expected=["drop", "needs"]),
        9,
        f"{WHERE}: unknown key(s) reqs",
        "allowed keys: drop, needs",
        [],
        {
            "where": WHERE,
            "key": "",
            "rule": "unknown-keys",
            "found": ["reqs"],
            "expected": ["drop", "needs"],
        },
    ),
    (
        ProfileKeyError(WHERE, "overrides", "not-a-list"),
        9,
        f"{WHERE}: overrides must be a list",
        "write overrides = [ ... ]",
        [],
        {"where": WHERE, "key": "overrides", "rule": "not-a-list"},
    ),
    (
        ProfileKeyError(WHERE, "protect", "entry-keys", found=["x", "y"]),
        9,
        f"{WHERE}: protect entry has unknown key(s) x, y",
        "",
        [],
        {"where": WHERE, "key": "protect", "rule": "entry-keys", "found": ["x", "y"]},
    ),
    (
        ProfileKeyError(WHERE, "overrides", "entry-shape", expected=["requirement"]),
        9,
        f"{WHERE}: each overrides entry must be a string or a table with 'requirement'",
        'write overrides = [{ requirement = "...", reason = "..." }]',
        [],
        {"where": WHERE, "key": "overrides", "rule": "entry-shape", "expected": ["requirement"]},
    ),
    (
        ProfileKeyError(WHERE, "drop", "drop-shape", expected=["name"]),
        9,
        f"{WHERE}: each drop entry must be a string or a table with 'name'",
        'write drop = [{ name = "uvloop", marker = "sys_platform == \'win32\'", reason = "..." }]',
        [],
        {"where": WHERE, "key": "drop", "rule": "drop-shape", "expected": ["name"]},
    ),
    (
        ProfileKeyError(WHERE, "overrides", "two-overrides", value="six"),
        9,
        f"{WHERE}: two overrides for six",
        "keep one override per package",
        [],
        {"where": WHERE, "key": "overrides", "rule": "two-overrides", "value": "six"},
    ),
    (
        ProfileKeyError(WHERE, "drop", "two-drops", value="uvloop"),
        9,
        f"{WHERE}: two drops for uvloop",
        "keep one drop per name",
        [],
        {"where": WHERE, "key": "drop", "rule": "two-drops", "value": "uvloop"},
    ),
    (
        ProfileKeyError(WHERE, "checks", "not-a-table"),
        9,
        f"{WHERE}: checks must be a table",
        "write [profile.NAME.checks]",
        [],
        {"where": WHERE, "key": "checks", "rule": "not-a-table"},
    ),
    (
        ProfileKeyError(WHERE, "checks.snippets", "snippet-code"),
        9,
        f"{WHERE}: checks.snippets entries need 'code'",
        "",
        [],
        {"where": WHERE, "key": "checks.snippets", "rule": "snippet-code"},
    ),
    (
        ProfileKeyError(WHERE, "checks.imports", "imports"),
        9,
        f"{WHERE}: checks.imports must be a list of module names",
        "",
        [],
        {"where": WHERE, "key": "checks.imports", "rule": "imports"},
    ),
    (
        ProfileKeyError(WHERE, "indexes", "indexes"),
        9,
        f"{WHERE}: indexes must be a table of package = index URL",
        'write indexes = { torch = "https://download.pytorch.org/whl/cu130" }',
        [],
        {"where": WHERE, "key": "indexes", "rule": "indexes"},
    ),
    (
        ProfileFileError(W / "wh.toml", "Expected '=' (at line 1, column 3)"),
        9,
        "/w/wh.toml: not valid TOML (Expected '=' (at line 1, column 3))",
        "fix the syntax at the line named",
        [],
        {"path": "/w/wh.toml", "problem": "Expected '=' (at line 1, column 3)"},
    ),
    (
        ProfileFileError(W / "wh.toml"),
        9,
        "/w/wh.toml: 'profile' must be a table of tables",
        "",
        [],
        {"path": "/w/wh.toml", "problem": None},
    ),
    (
        UnknownProfileError("ocr", []),
        9,
        "no profile named 'ocr'",
        "known profiles: none; define one under [profile.ocr] in wh.toml or "
        "[tool.wh.profile.NAME] in pyproject.toml",
        [],
        {"name": "ocr", "known": []},
    ),
    (
        UnknownProfileError("ocr", ["a", "b"]),
        9,
        "no profile named 'ocr'",
        "known profiles: a, b; define one under [profile.ocr] in wh.toml or "
        "[tool.wh.profile.NAME] in pyproject.toml",
        [],
        {"name": "ocr", "known": ["a", "b"]},
    ),
    (
        EmptyProfileError("ocr"),
        9,
        "profile 'ocr' has no requirements",
        "add requirements to the profile or pass --requirement",
        [],
        {"name": "ocr"},
    ),
    (
        IndexOptionError("torch"),
        9,
        "--index 'torch' is not NAME=URL",
        "e.g. --index torch=https://download.pytorch.org/whl/cu130",
        [],
        {"option": "--index", "value": "torch"},
    ),
    (
        ProtectionVersionError("torch", "win_amd64 cp312"),
        9,
        "protection of torch needs a version for a declared target (win_amd64 cp312)",
        "pass --protect 'torch==VERSION' with the version installed on the target machine, "
        "e.g. torch==2.9.1+cu130",
        [],
        {"name": "torch", "target": "win_amd64 cp312"},
    ),
    (
        KeyFileError(W / "k", "unreadable", private=True, problem="No such file or directory"),
        9,
        "cannot read the signing key /w/k (No such file or directory)",
        "make one with `wh keygen KEY` (or `ssh-keygen -t ed25519 -N '' -f KEY`)",
        [],
        {
            "path": "/w/k",
            "rule": "unreadable",
            "private": True,
            "problem": "No such file or directory",
        },
    ),
    (
        KeyFileError(W / "k.pub", "unreadable", private=False, problem="Is a directory"),
        9,
        "cannot read the trusted key /w/k.pub (Is a directory)",
        "pass --trust with the signer's public key file (KEY.pub)",
        [],
        {"path": "/w/k.pub", "rule": "unreadable", "private": False, "problem": "Is a directory"},
    ),
    (
        KeyFileError(W / "k", "passphrase", private=True),
        9,
        "the signing key /w/k is protected by a passphrase, which wh does not ask for",
        "sign with an unencrypted copy kept offline, e.g. `ssh-keygen -p -N '' -f COPY` on a "
        "copy of the key",
        [],
        {"path": "/w/k", "rule": "passphrase", "private": True},
    ),
    (
        KeyFileError(W / "k", "not-private", private=True, problem="bad PEM"),
        9,
        "/w/k is not an ed25519 private key wh can read (bad PEM)",
        "use a key made by `wh keygen KEY`, `ssh-keygen -t ed25519` or "
        "`openssl genpkey -algorithm ed25519`",
        [],
        {"path": "/w/k", "rule": "not-private", "private": True, "problem": "bad PEM"},
    ),
    (
        KeyFileError(W / "k.pub", "not-public", private=False, problem="bad line"),
        9,
        "/w/k.pub is not an ed25519 public key wh can read (bad line)",
        "pass the signer's KEY.pub (OpenSSH `ssh-ed25519 ...` line or PEM public key)",
        [],
        {"path": "/w/k.pub", "rule": "not-public", "private": False, "problem": "bad line"},
    ),
    (
        KeyFileError(W / "k", "not-ed25519", private=True, problem="RSAPrivateKey"),
        9,
        "/w/k is a RSAPrivateKey, not an ed25519 key",
        "bundles are signed with ed25519 keys only: `wh keygen KEY`",
        [],
        {"path": "/w/k", "rule": "not-ed25519", "private": True, "problem": "RSAPrivateKey"},
    ),
    (
        KeyFileError(W / "k.pub", "not-ed25519", private=False, problem="RSAPublicKey"),
        9,
        "/w/k.pub is a RSAPublicKey, not an ed25519 key",
        "bundles are signed with ed25519 keys only",
        [],
        {"path": "/w/k.pub", "rule": "not-ed25519", "private": False, "problem": "RSAPublicKey"},
    ),
    (
        KeyFileError(W / "k.pub", "exists", private=False),
        9,
        "/w/k.pub exists; wh keygen never overwrites a key",
        "choose another path, or remove the old key deliberately",
        [],
        {"path": "/w/k.pub", "rule": "exists", "private": False},
    ),
    (
        TargetOptionsError("python-and-declared"),
        10,
        "--python cannot be combined with --platform/--python-version",
        "use --python for a live interpreter, or both --platform and "
        "--python-version for a declared target",
        [],
        {"rule": "python-and-declared"},
    ),
    (
        TargetOptionsError("half-declared"),
        10,
        "a declared target needs both --platform and --python-version",
        "e.g. --platform win_amd64 --python-version 3.12",
        [],
        {"rule": "half-declared"},
    ),
    (
        TargetOptionsError("install-declared"),
        10,
        "install needs a live interpreter, not a declared target",
        "use --python PATH (lock for a declared target with `wh lock`)",
        [],
        {"rule": "install-declared"},
    ),
    (
        NoTargetError(None, Path("/wh")),
        10,
        "no target environment: no --python was given and no virtual environment is active",
        "name the target with --python PATH (an interpreter or a venv folder), or "
        "activate the venv to install into (VIRTUAL_ENV); wh never installs into the "
        "environment it runs from (/wh)",
        [],
        {"venv": None, "own": "/wh"},
    ),
    (
        NoTargetError("/wh", Path("/wh")),
        10,
        "no target environment: no --python was given and the active environment /wh is wh's own",
        "name the target with --python PATH (an interpreter or a venv folder), or "
        "activate the venv to install into (VIRTUAL_ENV); wh never installs into the "
        "environment it runs from (/wh)",
        [],
        {"venv": "/wh", "own": "/wh"},
    ),
    (
        InterpreterError(PY, "missing"),
        10,
        "target interpreter /v/bin/python does not exist",
        "pass --python with the path of an existing interpreter or venv",
        [],
        {"python": "/v/bin/python", "rule": "missing"},
    ),
    (
        InterpreterError(PY, "unprobed", output=["probing failed", "Traceback"]),
        10,
        "target interpreter /v/bin/python could not be probed",
        "check that it is a working CPython 3.10 or newer",
        ["probing failed", "Traceback"],
        {"python": "/v/bin/python", "rule": "unprobed", "output": ["probing failed", "Traceback"]},
    ),
    (
        InterpreterError(PY, "not-json", problem="Expecting value", output=["hi"]),
        10,
        "/v/bin/python is not a Python interpreter wh can use: its answer to the probe is not "
        "JSON (Expecting value)",
        "pass --python with a CPython 3.10+ interpreter or a venv folder, and check "
        "that nothing in its site-packages replaces the json module",
        ["hi"],
        {
            "python": "/v/bin/python",
            "rule": "not-json",
            "problem": "Expecting value",
            "output": ["hi"],
        },
    ),
    (
        InterpreterError(PY, "too-old", version="3.8.10", packaging="25.0"),
        10,
        "/v/bin/python is Python 3.8.10; wh needs a target of Python 3.10 or newer "
        "(its probe runs packaging 25.0, which needs 3.10)",
        "create the target venv with Python 3.10 or newer, e.g. `py -3.12 -m venv "
        "VENV` on Windows or `python3.12 -m venv VENV`",
        [],
        {"python": "/v/bin/python", "rule": "too-old", "version": "3.8.10", "packaging": "25.0"},
    ),
    (
        InterpreterError(PY, "no-markers"),
        10,
        "/v/bin/python is not a Python interpreter wh can use: its answer to the probe "
        "lacks the environment's markers",
        "pass --python with a CPython 3.10+ interpreter or a venv folder",
        [],
        {"python": "/v/bin/python", "rule": "no-markers"},
    ),
    (
        InterpreterError(PY, "prints", output=["hello"]),
        10,
        "/v/bin/python prints to stdout as it starts, which uv cannot work with; nothing "
        "was installed",
        "use --backend pip, or remove the print from the .pth file (or "
        "sitecustomize) in its site-packages that prints it",
        ["start-up output: hello"],
        {"python": "/v/bin/python", "rule": "prints", "output": ["hello"]},
    ),
    (
        VenvMismatchError(PY, Path("/usr"), Path("/v")),
        10,
        "/v/bin/python reports its environment at /usr, but its pyvenv.cfg is in /v",
        "pass --python with the interpreter of the venv to install into",
        [],
        {"python": "/v/bin/python", "prefix": "/usr", "venv": "/v"},
    ),
    (
        DeclaredTargetError("--platform", "amiga", ["linux", "windows"]),
        10,
        "unknown platform 'amiga'",
        "use a wheel platform tag (win_amd64, manylinux_2_28_x86_64, "
        "macosx_11_0_arm64, musllinux_1_2_x86_64) or one of: linux, windows",
        [],
        {"option": "--platform", "value": "amiga", "known": ["linux", "windows"]},
    ),
    (
        DeclaredTargetError("--python-version", "2.7"),
        10,
        "invalid --python-version '2.7'",
        "give a CPython version such as 3.12 or 3.12.4",
        [],
        {"option": "--python-version", "value": "2.7"},
    ),
    (
        LongPathsError("C:\\v", ["C:\\v\\a"], 260),
        10,
        "1 file(s) of this install would have paths of 260 characters or more under C:\\v, "
        "which Windows refuses without long paths; nothing was installed",
        "enable long paths (as administrator: New-ItemProperty -Path "
        "HKLM:\\SYSTEM\\CurrentControlSet\\Control\\FileSystem -Name LongPathsEnabled "
        "-Value 1 -PropertyType DWORD -Force, then open a new shell), or use a venv with "
        "a shorter path, such as C:\\venvs\\ocr",
        ["C:\\v\\a"],
        {"prefix": "C:\\v", "paths": ["C:\\v\\a"], "limit": 260},
    ),
    (
        EnvironmentHeldError(Path("/v"), "wh (pid 7)", 2.5, "/v/.wh-install.lock"),
        12,
        "wh (pid 7) holds /v; gave up after 2.5 s",
        "wait for it to finish, or retry with a longer --lock-timeout",
        ["lock file: /v/.wh-install.lock"],
        {
            "prefix": "/v",
            "holder": "wh (pid 7)",
            "timeout": 2.5,
            "lock_file": "/v/.wh-install.lock",
        },
    ),
    (
        InstallStillRunningError("wh install ocr", [("uv", 7), ("", 8)]),
        12,
        "environment busy: a process of the interrupted install 'wh install ocr' is still "
        "running; nothing was rolled back",
        "wait for it to exit (or end it), then run `wh recover --python PATH`; "
        "`--lock-timeout` says how long wh waits",
        ["uv (pid 7) is alive", "process (pid 8) is alive"],
        {
            "description": "wh install ocr",
            "live": [{"what": "uv", "pid": 7}, {"what": "", "pid": 8}],
        },
    ),
    (
        CommandError("/bin/x", "/bin/x -v", "cannot-run", problem="Permission denied"),
        13,
        "cannot run /bin/x: Permission denied",
        "check that the program exists and is executable",
        ["/bin/x -v"],
        {
            "command": "/bin/x",
            "shown": "/bin/x -v",
            "rule": "cannot-run",
            "problem": "Permission denied",
        },
    ),
    (
        CommandError("/bin/x", "/bin/x -v", "timeout", timeout=5),
        13,
        "/bin/x did not finish within 5 s",
        "",
        ["/bin/x -v"],
        {"command": "/bin/x", "shown": "/bin/x -v", "rule": "timeout", "timeout": 5},
    ),
    (
        CommandError("/bin/x", "/bin/x -v", "failed", what="x", returncode=1, output=["oops"]),
        13,
        "x failed with exit code 1",
        "",
        ["/bin/x -v", "oops"],
        {
            "command": "/bin/x",
            "shown": "/bin/x -v",
            "rule": "failed",
            "what": "x",
            "returncode": 1,
            "output": ["oops"],
        },
    ),
]


@pytest.mark.parametrize(
    ("error", "exit_code", "message", "hint", "details", "fields"),
    FIELD_CASES,
    ids=[f"{type(c[0]).__name__}-{i}" for i, c in enumerate(FIELD_CASES)],
)
def test_each_refusal_derives_its_text_from_its_fields(
    error: WhError,
    exit_code: int,
    message: str,
    hint: str,
    details: list[str],
    fields: dict[str, object],
) -> None:
    assert error.exit_code == exit_code
    assert (error.message, error.hint, list(error.details)) == (message, hint, details)
    out = error.to_json()
    assert out["fields"] == fields
    assert (out["message"], out["hint"], out["details"]) == (message, hint, details)
    assert json.loads(json.dumps(out)) == out  # JSON values only


def _raised_names() -> dict[str, list[str]]:
    """The error classes named by calls in wh's source outside kernels/ (raise sites and
    the errors functions build and return), with where."""
    found: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE)
        if rel.parts[0] == "kernels" or rel.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                found.setdefault(node.func.id, []).append(f"{rel}:{node.lineno}")
    return found


SOURCE = Path(errors.__file__).parent


def _subclasses_elsewhere_without_fields(names: set[str]) -> list[str]:
    """Error classes defined outside errors.py (and kernels/) that derive from one of
    errors.py's ``names`` and define no ``fields``."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE)
        if rel.parts[0] == "kernels" or rel.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            defines = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            if bases & names and "fields" not in defines:
                found.append(f"{rel}:{node.lineno} {node.name}")
    return found


def test_every_error_raised_carries_fields() -> None:
    """A class of errors.py either says which data it is built from (``fields``) or is a
    family base (an exit code and kind) that no code outside kernels/ constructs: a new
    prose-only refusal fails here."""
    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, WhError) and cls.__module__ == errors.__name__
    }
    calls = _raised_names()
    prose = {
        name: calls[name]
        for name, cls in classes.items()
        if cls.fields is WhError.fields and name in calls
    }
    assert prose == {}
    bases = {name for name, cls in classes.items() if cls.fields is WhError.fields}
    assert _subclasses_elsewhere_without_fields(set(classes)) == []
    assert "ProfileError" in bases and "LockMissingError" not in bases  # the walk sees both
    assert "LockMissingError" in calls  # and finds raise sites


def test_the_cli_prints_the_fields_of_a_malformed_profile(tmp_path: Path) -> None:
    (tmp_path / "wh.toml").write_text(
        '[profile.ocr]\nrequirements = ["six"]\nbackend = "conda"\n', encoding="utf-8"
    )
    r = run_wh("lock", "ocr", "--json", cwd=tmp_path)
    assert r.returncode == 9
    out = json.loads(r.stdout)
    where = f"{tmp_path / 'wh.toml'} [profile.ocr]"
    assert out["message"] == f"{where}: backend 'conda' is not one of auto, uv, pip"
    assert out["fields"] == {
        "where": where,
        "key": "backend",
        "rule": "choice",
        "value": "conda",
        "expected": ["auto", "uv", "pip"],
    }


def test_a_hint_command_keeps_a_path_with_a_space_one_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The uninstall a refusal of a distribution with a version that is not PEP 440 hints,
    quoted for the user's shell: POSIX here, cmd.exe's rules where os.name is "nt"."""
    cmd = ["/opt/wh env/bin/python", "-m", "pip", "--python", "/v 1/bin/python", "uninstall", "x"]
    err = errors.UnversionedInstalledError([("x", "UNKNOWN", "/v 1/x.dist-info", "why")], cmd)
    assert "`'/opt/wh env/bin/python' -m pip --python '/v 1/bin/python' uninstall x`" in str(
        err.hint
    )
    assert err.fields()["uninstall"] == cmd
    win = [r"C:\Program Files\wh\python.exe", "-m", "pip", "uninstall", "x"]
    monkeypatch.setattr(errors.os, "name", "nt")
    assert errors.command_line(win) == r'"C:\Program Files\wh\python.exe" -m pip uninstall x'

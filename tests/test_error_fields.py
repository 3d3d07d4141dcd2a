"""Errors built from data carry it as fields: the text is derived from them (the same words
as before they had fields), and so is the JSON (its "fields")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wh.app import lockfiles
from wh.errors import (
    LockDigestError,
    LockEntryError,
    LockError,
    LockKeptError,
    LockMissingError,
    LockSyntaxError,
    LockTargetError,
    LockWheelsError,
    NotInLockError,
    ProtectedChangeError,
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

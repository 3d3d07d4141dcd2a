"""The typed reports the app hands the CLI: JSON as before, and a remembered lock's report
read back from its JSON is the report that was remembered."""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement
from wh.app.lockreport import FileNote, LockReport
from wh.model.overrides import Applied, Dropped
from wh.model.profile import Override


def test_a_lock_report_round_trips_through_the_json_the_memo_keeps() -> None:
    report = LockReport(
        lockfile=Path("lockfiles/pylock.p.toml"),
        changed=True,
        target={"description": "CPython 3.12 on win_amd64", "platform": "win_amd64"},
        packages={"app": "1.0", "lib": "2.0"},
        install_order=(("lib",), ("app",)),
        overrides_applied=(Applied("app 1.0", "lib<2", "lib>=2", "newer lib"),),
        unused_overrides=(Override(Requirement("other==1")),),
        drops_applied=(Dropped("app 1.0", "uvloop", 'sys_platform == "win32"', ""),),
        unused_drops=("absent",),
        protected={"torch": "2.9.1+cu130"},
        excluded_wheels=(FileNote("bad-1.0-py3-none-any.whl", "no RECORD"),),
        skipped_for_target=(FileNote("lib-2.0-cp312-cp312-manylinux_2_28_x86_64.whl", "tag"),),
        overwrites=("a and b both write x.py",),
        load_check={"checked": False, "skipped": "given"},
    )
    data = report.to_json()
    assert list(data) == [
        "lockfile",
        "changed",
        "target",
        "packages",
        "install_order",
        "overrides_applied",
        "unused_overrides",
        "drops_applied",
        "unused_drops",
        "protected",
        "excluded_wheels",
        "skipped_for_target",
        "overwrites",
        "load_check",
    ]
    assert data["overrides_applied"] == [
        {"by": "app 1.0", "original": "lib<2", "replacement": "lib>=2", "reason": "newer lib"}
    ]
    assert data["unused_overrides"] == ["other==1"]
    assert data["install_order"] == [["lib"], ["app"]]
    again = LockReport.from_json(data)
    assert again.to_json() == data
    assert again.target_description == "CPython 3.12 on win_amd64"
    assert [o.name for o in again.unused_overrides] == ["other"]

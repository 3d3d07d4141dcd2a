"""Where an installed distribution stands against a protection (``wh.model.protection``),
from values: the plan, the resolver's pins and verify all decide through ``standing``."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version
from wh.app.verify import guarded
from wh.env.environment import Environment
from wh.model.installed import InstalledDist
from wh.model.plan import Guard
from wh.model.protection import Standing, standing
from wh.model.target import Target


def _torch(version: str = "2.9.1+cu130", record: str | None = "abc") -> InstalledDist:
    return InstalledDist(
        name=canonicalize_name("torch"),
        display_name="torch",
        version=Version(version),
        requires=(),
        dist_info=None,
        record_sha256=record,
        installer="uv",
    )


def test_missing_other_version_changed_and_kept() -> None:
    v = Version("2.9.1+cu130")
    assert standing(None, v) is Standing.MISSING
    assert standing(None) is Standing.MISSING
    assert standing(_torch("2.8.0"), v) is Standing.OTHER_VERSION
    assert standing(_torch("2.8.0")) is Standing.KEPT  # no version named: any is kept
    assert standing(_torch(), Version("2.9.1.0+cu130")) is Standing.KEPT  # PEP 440 equal
    assert standing(_torch(), v, "abc") is Standing.KEPT
    assert standing(_torch(), v, "other") is Standing.CHANGED
    assert standing(_torch(record=None), v, "abc") is Standing.CHANGED
    assert standing(_torch(), v, None) is Standing.KEPT  # a lock without the digest
    assert standing(_torch(), v, "") is Standing.KEPT


def test_an_earlier_probe_replaces_the_locked_digest() -> None:
    v = Version("2.9.1+cu130")
    assert standing(_torch(), v, "locked", since=_torch()) is Standing.KEPT
    assert standing(_torch(), v, "abc", since=_torch(record="before")) is Standing.CHANGED
    # a RECORD that appeared since, or a version changed back and forth, is a change too
    assert standing(_torch(), since=_torch(record=None)) is Standing.CHANGED
    assert standing(_torch(), since=_torch("2.8.0")) is Standing.CHANGED
    # the protected version is asked first
    assert standing(_torch("2.8.0"), v, since=_torch("2.8.0")) is Standing.OTHER_VERSION


def test_verify_words_each_standing_of_an_asked_protection() -> None:
    """``verify.guarded`` (protections asked at install/verify time) says each standing."""

    def env(*dists: InstalledDist) -> Environment:
        t = Target("test", "3.12.0", (), {})
        p = Path("/env")
        return Environment(p / "bin/python", p, p, p, p / "bin", t, {d.name: d for d in dists})

    name = canonicalize_name("torch")
    guard = {name: Guard(name, Version("2.9.1+cu130"))}
    said = [
        (f.ok, f.message)
        for e, before in [
            (env(), None),
            (env(_torch("2.8.0")), None),
            (env(_torch()), {name: _torch(record="before")}),
            (env(_torch()), {name: _torch()}),
        ]
        for f in guarded(e, guard, before)
    ]
    assert said == [
        (False, "protected torch is missing"),
        (False, "protected torch is 2.8.0, not 2.9.1+cu130"),
        (False, "protected torch 2.9.1+cu130 changed"),
        (True, "protected torch 2.9.1+cu130 unchanged"),
    ]

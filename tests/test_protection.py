"""Where an installed distribution stands against a protection (``wh.model.protection``),
from values: the plan, the resolver's pins and verify all decide through ``standing``."""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import Version
from wh.model.installed import InstalledDist
from wh.model.protection import Standing, standing


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

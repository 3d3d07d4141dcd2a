"""The closed sets of words (wh/model/choices.py): members are their strings everywhere a
string went before (lock bytes, JSON, f-strings, CLI choices), and a lock naming a word
outside a set is refused by name."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from wh.cli.main import cli
from wh.model.choices import (
    BackendChoice,
    ChecksMode,
    LinkMode,
    Prereleases,
    StrEnum,
    TargetOS,
    UvCacheMode,
)
from wh.model.plan import ActionKind

from tests.factory import make_wheel
from tests.fixtures import run_wh

# the words as they were strings: lock bytes, JSON output and CLI choices depend on them
WORDS: dict[type[StrEnum], tuple[str, ...]] = {
    LinkMode: ("copy", "hardlink", "symlink", "clone"),
    BackendChoice: ("auto", "uv", "pip"),
    Prereleases: ("if-necessary-or-explicit", "allow", "disallow"),
    ChecksMode: ("all", "warn"),
    UvCacheMode: ("auto", "shared", "private"),
    TargetOS: ("windows", "linux"),
    ActionKind: ("install", "replace", "reinstall", "keep"),
}


@pytest.mark.parametrize("kind", list(WORDS))
def test_the_words_are_what_they_were(kind: type[StrEnum]) -> None:
    assert kind.values() == WORDS[kind]


@pytest.mark.parametrize("member", [LinkMode.HARDLINK, Prereleases.IF_NECESSARY_OR_EXPLICIT])
def test_a_member_is_its_string_wherever_it_goes(member: StrEnum) -> None:
    value = member.value
    assert member == value and isinstance(member, str)
    assert str(member) == value and f"{member}" == value and f"[{member:>10}]" == f"[{value:>10}]"
    assert repr(member) == repr(value) and f"{member!r}" == f"{value!r}"
    assert json.dumps({"k": member}) == json.dumps({"k": value})
    assert {value: 1}[member] == 1  # a key looked up by either


@pytest.mark.parametrize(
    ("command", "option", "kind"),
    [
        ("install", "link_mode", LinkMode),
        ("install", "backend", BackendChoice),
        ("install", "uv_cache", UvCacheMode),
        ("install", "checks_mode", ChecksMode),
        ("lock", "prereleases", Prereleases),
        ("build", "target_os", TargetOS),
    ],
)
def test_cli_choices_are_the_words(command: str, option: str, kind: type[StrEnum]) -> None:
    param = next(p for p in cli.commands[command].params if p.name == option)
    assert tuple(param.type.choices) == WORDS[kind]  # type: ignore[attr-defined]


def _reseal(lock: Path, old: bytes, new: bytes) -> None:
    """Rewrite ``old`` as ``new`` in the lock and give it a digest that matches again."""
    data = lock.read_bytes()
    assert old in data
    data = re.sub(rb'^digest = "sha256:[0-9a-f]*"$', b'digest = "sha256:"', data, flags=re.M)
    data = data.replace(old, new)
    digest = hashlib.sha256(data).hexdigest().encode()
    lock.write_bytes(data.replace(b'digest = "sha256:"', b'digest = "sha256:' + digest + b'"'))


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        (b'link-mode = "copy"', b'link-mode = "teleport"', "link-mode"),
        (b'backend = "auto"', b'backend = "conda"', "backend"),
    ],
)
def test_a_lock_naming_an_unknown_word_is_refused_before_anything_changes(
    tmp_path: Path, new_venv: Callable[..., Path], old: bytes, new: bytes, key: str
) -> None:
    house = tmp_path / "wheelhouse"
    make_wheel(house, "lib", "1.0")
    python = new_venv()
    lock = tmp_path / "l.toml"
    r = run_wh("lock", "-r", "lib", "--wheelhouse", house, "--python", python, "--lockfile", lock)
    assert r.returncode == 0, r.stderr
    _reseal(lock, old, new)
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python)
    assert r.returncode == 5, r.stdout + r.stderr  # lock missing, stale or tampered
    assert f"[tool.wh] {key} {new.split(b'= ')[1].decode()[1:-1]!r} is not one of" in r.stderr
    assert not list(python.parent.parent.glob("lib/python*/site-packages/lib"))
    r = run_wh("install", "--locked", "--lockfile", lock, "--python", python, f"--{key}",
               "copy" if key == "link-mode" else "auto")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr  # the flag wins over the lock's word

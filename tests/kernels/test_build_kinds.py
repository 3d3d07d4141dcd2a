"""The kernel build's closed sets of words are StrEnums: each recipe op word makes its
operation, and the members read as their words in messages and in JSON."""

from __future__ import annotations

import json

import pytest
from wh.errors import RecipeError
from wh.kernels.conditions import LINUX_GCC, WINDOWS_MSVC
from wh.kernels.kinds import OpKind, PlatformName
from wh.kernels.operations import from_table
from wh.kernels.opresult import Result, Status
from wh.kernels.recipe import parse_recipe
from wh.model.choices import TargetOS

# the smallest valid [[operations]] table of each op
TABLES: dict[str, dict[str, object]] = {
    "exclude-source": {"source": "a.cu", "condition": "NOT MSVC"},
    "switch-autotrigger": {"switch": "SW"},
    "add-condition": {"switch": "SW", "condition": "NOT MSVC"},
    "under-switch": {"switch": "SW", "commands": ["include(x.cmake)"]},
    "gencodes": {},
    "guard-registrations": {"file": "ext.cc"},
}


def test_every_recipe_op_word_makes_an_operation_of_that_kind() -> None:
    assert set(OpKind.recipe_ops()) == set(TABLES)
    assert OpKind.TEXT_PATCH not in OpKind.recipe_ops()
    for word, table in TABLES.items():
        op = from_table({"op": word, **table}, "[[operations]][0]", ["86"])
        assert op.kind is OpKind(word)


def test_text_patch_is_no_recipe_op() -> None:
    with pytest.raises(RecipeError) as err:
        from_table({"op": "text-patch"}, "w", ())
    assert err.value.rule == "unknown-op"


def test_members_read_as_their_words() -> None:
    res = Result(OpKind.GENCODES, "sm_86 only", "", Status.ALREADY_APPLIED, "flags")
    assert json.dumps(res.to_json()["op"]) == '"gencodes"'
    assert (
        json.dumps({"op": OpKind.UNDER_SWITCH, Status.ABSENT: 1})
        == '{"op": "under-switch", "absent": 1}'
    )
    assert f"{res.kind} {res.status}" == "gencodes already-applied"
    assert res.describe() == ": gencodes sm_86 only: already-applied"
    assert f"{WINDOWS_MSVC.name}" == str(WINDOWS_MSVC.name) == "windows-msvc"


def test_each_platform_is_one_target_os() -> None:
    assert WINDOWS_MSVC.name.target_os is TargetOS.WINDOWS
    assert LINUX_GCC.name.target_os is TargetOS.LINUX
    assert {p.target_os for p in PlatformName} == set(TargetOS)


def test_a_variant_refuses_target_os_words_only() -> None:
    head = {"recipe": {"name": "r", "version": "1"}}
    recipe = parse_recipe({**head, "variants": {"v": {"on": {"refused": {"windows": "no"}}}}})
    (os_name,) = recipe.variants["v"].on.refused
    assert os_name is TargetOS.WINDOWS
    with pytest.raises(RecipeError) as err:
        parse_recipe({**head, "variants": {"v": {"on": {"refused": {"macos": "no"}}}}})
    assert (
        err.value.message == "variants.v.on.refused must map windows/linux to the reason (a string)"
    )
    assert err.value.allowed == ("windows", "linux")

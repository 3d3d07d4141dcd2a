"""wh's cache files are sealed: a file whose bytes changed after wh wrote it is not read."""

from __future__ import annotations

from pathlib import Path

from wh.cache.stamps import read_json, seal, unseal, write_json


def test_a_sealed_text_reads_back_and_any_changed_byte_does_not() -> None:
    text = '{"a": [1, 2], "b": "c\\u00e9"}'
    sealed = seal(text)
    assert unseal(sealed) == text
    for i in range(len(sealed)):
        if sealed[i] == "\n":
            continue
        changed = sealed[:i] + ("x" if sealed[i] != "x" else "y") + sealed[i + 1 :]
        assert unseal(changed) is None, i
    assert unseal(text) is None  # not sealed
    assert unseal(sealed[:-1]) is None  # cut short


def test_read_json_answers_only_what_write_json_wrote(tmp_path: Path) -> None:
    path = tmp_path / "k" / "entry.json"
    assert read_json(path) is None  # absent
    write_json(path, {"x": [1, "é"]})
    assert read_json(path) == {"x": [1, "é"]}
    raw = path.read_text(encoding="utf-8")
    path.write_text(raw.replace("1", "2"), encoding="utf-8")
    assert read_json(path) is None  # damaged
    path.write_bytes(b"\xff\xfe")
    assert read_json(path) is None  # not text
    path.write_text(seal("not json"), encoding="utf-8")
    assert read_json(path) is None  # sealed, but not JSON
    write_json(path, {"plain": True}, sealed=False)  # a file others read (a record)
    assert path.read_text(encoding="utf-8") == '{"plain": true}' and read_json(path) is None

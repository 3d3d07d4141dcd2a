"""The install journal, in-process over a real venv: begin, roll back, recover, commit."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from wh.cache.stamps import seal, unseal
from wh.env.environment import probe
from wh.errors import JournalError, WheelhouseError
from wh.install import journal
from wh.install.layout import Schemes, layout
from wh.install.overwrite import clashes
from wh.install.safeguard import preflight
from wh.wheel.writer import write_wheel

from tests.envsnap import diff, make_venv, site_packages, snapshot, wh


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with `lib 1.0` installed (copied per test)."""
    root = tmp_path_factory.mktemp("jbase")
    write_wheel(root / "house", "lib", "1.0", {"lib/__init__.py": b"1\n", "lib/a/x.py": b"x\n"})
    venv = make_venv(root / "venv")
    done = wh("install", "-r", "lib==1.0", "--wheelhouse", "house", "--python", venv, cwd=root)
    assert done.returncode == 0, done.stderr
    return venv


@pytest.fixture
def venv(base: Path, tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "venv"
    shutil.copytree(base, dst, symlinks=True)
    # the copied venv's pyvenv.cfg and scripts still work: only site-packages matters here
    return dst


def _new_wheel(tmp_path: Path) -> Path:
    files = {
        "lib/__init__.py": b"2\n",
        "lib/b/y.py": b"y\n",
        "lib-2.0.data/scripts/lib-tool": b"#!python\n",
        "lib-2.0.data/data/share/lib/doc.txt": b"doc\n",
    }
    return write_wheel(tmp_path / "house2", "lib", "2.0", files)


def _simulate_install(venv: Path) -> None:
    """What a backend does halfway: new files, a rewritten file, a new dist-info."""
    sp = site_packages(venv)
    (sp / "lib").mkdir(exist_ok=True)
    (sp / "lib" / "__init__.py").write_text("2\n")
    (sp / "lib" / "b").mkdir()
    (sp / "lib" / "b" / "y.py").write_text("y\n")
    (sp / "lib-2.0.dist-info").mkdir()
    (sp / "lib-2.0.dist-info" / "METADATA").write_text("Name: lib\n")
    (venv / "bin" / "lib-tool").write_text("#!python\n")
    (venv / "share" / "lib").mkdir(parents=True)
    (venv / "share" / "lib" / "doc.txt").write_text("doc\n")


def _begin(venv: Path, tmp_path: Path) -> journal.Transaction:
    env = probe(venv)
    schemes = Schemes.of(env)
    lay = layout(_new_wheel(tmp_path), schemes)
    record = journal.plan_record(schemes, env.prefix, [lay], [env.dists["lib"]], "lib 2.0")  # type: ignore[index]
    keep = [*schemes.site_dirs(), schemes.scripts, schemes.data]
    return journal.Transaction.begin(env.prefix, record, keep)


def test_begin_moves_the_old_distribution_aside(venv: Path, tmp_path: Path) -> None:
    txn = _begin(venv, tmp_path)
    sp = site_packages(venv)
    assert not (sp / "lib-1.0.dist-info").exists()
    assert not (sp / "lib").exists()  # emptied folders are pruned
    assert txn.record.state == "moved"
    assert journal.read(venv) is not None
    txn.rollback()


def test_rollback_restores_everything(venv: Path, tmp_path: Path) -> None:
    before = snapshot(venv)
    txn = _begin(venv, tmp_path)
    _simulate_install(venv)
    txn.rollback()
    assert diff(before, snapshot(venv)) == []
    assert not (venv / ".wh-journal").exists()


def test_recover_after_a_crash_is_idempotent(venv: Path, tmp_path: Path) -> None:
    before = snapshot(venv)
    _begin(venv, tmp_path)
    _simulate_install(venv)
    record = journal.read(venv)
    assert record is not None
    # a crash halfway through a first rollback: only part of the backups went back
    Path(record.moves[0]).parent.mkdir(parents=True, exist_ok=True)
    (venv / ".wh-journal" / "backup" / "0").rename(record.moves[0])
    done = journal.recover_if_needed(venv)
    assert done is not None and "rolled back the interrupted install of lib 2.0" in done
    assert diff(before, snapshot(venv)) == []
    assert journal.recover_if_needed(venv) is None


def test_a_journal_folder_a_held_file_keeps_is_not_rolled_back_twice(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows: an antivirus holding a file in the journal keeps its folder after a
    rollback. The record goes first, so the next wh finds an empty journal and undoes
    nothing installed since (a second rollback would delete it as "new")."""
    import shutil

    before = snapshot(venv)
    txn = _begin(venv, tmp_path)
    _simulate_install(venv)
    real_rmtree = shutil.rmtree

    def held(path: object, *a: object, **k: object) -> None:
        if Path(str(path)).name != ".wh-journal":
            real_rmtree(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(journal.fsretry, "rmtree", held)
    monkeypatch.setattr(journal.shutil, "rmtree", held)
    txn.rollback()
    left = diff(before, snapshot(venv))
    assert left and all(line.startswith("added .wh-journal") for line in left), left
    assert not (venv / ".wh-journal" / "journal.json").exists()
    monkeypatch.undo()
    later = site_packages(venv) / "installed_since.py"  # a later install's file
    later.write_text("kept\n")
    assert "empty install journal" in (journal.recover_if_needed(venv) or "")
    assert diff(before, snapshot(venv)) == [f"added {later.relative_to(venv).as_posix()}"]


def test_a_committed_journal_is_finished_not_undone(venv: Path, tmp_path: Path) -> None:
    txn = _begin(venv, tmp_path)
    _simulate_install(venv)
    after = {k: v for k, v in snapshot(venv).items() if not k.startswith(".wh-journal")}
    from dataclasses import replace

    journal._write(txn.dir, replace(txn.record, state="committed"))  # killed while committing
    done = journal.recover_if_needed(venv)
    assert done is not None and "completed the interrupted commit" in done
    assert diff(after, snapshot(venv)) == []


def test_an_empty_journal_folder_is_removed(venv: Path) -> None:
    (venv / ".wh-journal" / "backup").mkdir(parents=True)
    assert "empty install journal" in (journal.recover_if_needed(venv) or "")
    assert not (venv / ".wh-journal").exists()


def test_keyboard_interrupt_inside_a_transaction_rolls_back(venv: Path, tmp_path: Path) -> None:
    env = probe(venv)
    before = snapshot(venv)
    lay = layout(_new_wheel(tmp_path), Schemes.of(env))
    with (
        pytest.raises(KeyboardInterrupt),
        journal.transaction(
            Schemes.of(env),
            env.prefix,
            [lay],
            [env.dists["lib"]],
            "lib 2.0",  # type: ignore[index]
        ),
    ):
        _simulate_install(venv)
        raise KeyboardInterrupt
    assert diff(before, snapshot(venv)) == []


def test_begin_refuses_when_a_journal_exists(venv: Path, tmp_path: Path) -> None:
    (venv / ".wh-journal").mkdir()
    from wh.errors import InstallError

    with pytest.raises(InstallError, match="unfinished install journal") as err:
        _begin(venv, tmp_path)
    assert "wh recover" in err.value.hint


def test_layout_maps_schemes(venv: Path, tmp_path: Path) -> None:
    env = probe(venv)
    lay = layout(_new_wheel(tmp_path), Schemes.of(env))
    paths = {os.path.relpath(t.path, os.path.realpath(venv)) for t in lay.files}
    sp = os.path.relpath(os.path.realpath(site_packages(venv)), os.path.realpath(venv))
    assert f"{sp}/lib/b/y.py" in paths
    assert "bin/lib-tool" in paths
    assert "share/lib/doc.txt" in paths
    assert f"{sp}/lib-2.0.dist-info/INSTALLER" in paths


def test_allow_overwrite(venv: Path, tmp_path: Path) -> None:
    env = probe(venv)
    squat = write_wheel(tmp_path / "h", "squat", "1.0", {"lib/__init__.py": b"mine\n"})
    lay = layout(squat, Schemes.of(env))
    found = clashes([lay], env.dists)
    assert [(c.writer, c.owner) for c in found] == [("squat", "lib")]
    assert clashes([lay], env.dists, allow_overwrite=["squat"]) == []
    assert clashes([lay], env.dists, allow_overwrite=["LIB"]) == []
    with pytest.raises(WheelhouseError, match="would be overwritten"):
        preflight(env, [squat])
    assert preflight(env, [squat], allow_overwrite=["squat"])


def test_identical_files_are_no_clash(venv: Path, tmp_path: Path) -> None:
    env = probe(venv)
    twin = write_wheel(tmp_path / "h", "twin", "1.0", {"lib/__init__.py": b"1\n"})
    assert clashes([layout(twin, Schemes.of(env))], env.dists) == []


def test_two_new_wheels_writing_one_file_clash(venv: Path, tmp_path: Path) -> None:
    env = probe(venv)
    a = write_wheel(tmp_path / "h", "aa", "1.0", {"shared/x.py": b"a\n"})
    b = write_wheel(tmp_path / "h", "bb", "1.0", {"shared/x.py": b"b\n"})
    found = clashes([layout(a, Schemes.of(env)), layout(b, Schemes.of(env))], env.dists)
    assert [c.describe().split(" (")[0] for c in found] == [
        f"bb would overwrite {found[0].path}, owned by aa"
    ]


def test_a_signal_while_the_journal_is_made_leaves_no_journal_and_nothing_moved(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM becomes a KeyboardInterrupt; one that lands while ``begin`` makes the journal
    folder (its fsync takes milliseconds) or writes the record removes the journal again
    and leaves the environment as it was: a killed install must not leave a journal for an
    install that never began."""
    before = snapshot(venv)
    for hook in ("_fsync_dir", "_write"):
        real = getattr(journal, hook)

        def interrupted(*a: object, _real: object = real) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(journal, hook, interrupted)
        with pytest.raises(KeyboardInterrupt):
            _begin(venv, tmp_path)
        monkeypatch.setattr(journal, hook, real)
        assert not (venv / journal.JOURNAL_DIR).exists(), hook
        assert not diff(before, snapshot(venv)), hook
    # the handler runs as the call that made the folder returns
    real_mkdir = Path.mkdir

    def made_then_interrupted(self: Path, *a: Any, **kw: Any) -> None:
        real_mkdir(self, *a, **kw)
        if self.name == journal.JOURNAL_DIR:
            raise KeyboardInterrupt

    monkeypatch.setattr(Path, "mkdir", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        _begin(venv, tmp_path)
    monkeypatch.setattr(Path, "mkdir", real_mkdir)
    assert not (venv / journal.JOURNAL_DIR).exists()
    assert not diff(before, snapshot(venv))


def test_a_journal_folder_made_by_another_between_the_check_and_begin_is_left_alone(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the journal folder appears after ``begin`` looked (only a wh that ignores the
    environment's lock could make it), ``begin`` refuses as for any unfinished journal and
    leaves that folder and what is in it."""
    real_mkdir = Path.mkdir

    def raced(self: Path, *a: Any, **kw: Any) -> None:
        if self.name == journal.JOURNAL_DIR:
            real_mkdir(self)
            (self / "journal.json").write_text("theirs")
        real_mkdir(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", raced)
    with pytest.raises(JournalError, match="unfinished install journal"):
        _begin(venv, tmp_path)
    monkeypatch.setattr(Path, "mkdir", real_mkdir)
    assert (venv / journal.JOURNAL_DIR / "journal.json").read_text() == "theirs"


def _damaged(record: dict[str, Any], how: str) -> tuple[dict[str, Any] | list[Any], str]:
    """``record`` (a journal as JSON) with one field of another shape, and the refusal's
    words for it."""
    d = json.loads(json.dumps(record))
    existed = next(i for i, w in enumerate(d["watched"]) if w["existed"] and w["entries"])
    match how:
        case "entries-as-text":  # read as a list, its letters: every other file "new"
            d["watched"][existed]["entries"] = "lib"
            return d, f"its watched[{existed}].entries is not a list of paths"
        case "existed-as-text":  # bool("false") is True, and 0 would remove the folder
            d["watched"][existed]["existed"] = "false"
            return d, f"its watched[{existed}].existed is not true or false"
        case "state":
            d["state"] = "rolling"
            return d, "its state is not one of prepared, moved, committed"
        case "pid":
            d["pid"] = "12"
            return d, "its pid is not a number"
        case "moves":
            d["moves"] = [*d["moves"], 7]
            return d, "its moves is not a list of paths"
        case "writer":
            d["writers"] = [{"pid": 1, "started": "", "group": "yes"}]
            return d, "its writers[0].group is not true or false"
        case "watched":
            d["watched"] = {"root": "/"}
            return d, "its watched is not a list"
    return [d], "it is not a JSON object"


@pytest.mark.parametrize(
    "how",
    ["entries-as-text", "existed-as-text", "state", "pid", "moves", "writer", "watched", "list"],
)
@pytest.mark.parametrize("sealed", [True, False])
def test_a_journal_with_a_field_of_another_shape_is_refused_and_nothing_touched(
    venv: Path, tmp_path: Path, how: str, sealed: bool
) -> None:
    """A rollback deletes, under each watched folder that existed, what its ``entries``
    do not name: a damaged journal that read a string as a list of its letters (or
    "false" as true) would delete files no install wrote. Each field of another shape is
    refused by name, sealed or not (a journal of an older wh has no seal), and the
    environment is left as it is."""
    _begin(venv, tmp_path)
    _simulate_install(venv)
    path = venv / ".wh-journal" / "journal.json"
    record = json.loads(unseal(path.read_text(encoding="utf-8")) or "")
    bad, words = _damaged(record, how)
    text = json.dumps(bad)
    path.write_text(seal(text) if sealed else text, encoding="utf-8")
    before = snapshot(venv)
    with pytest.raises(JournalError) as caught:
        journal.recover_if_needed(venv)
    assert caught.value.rule == "unreadable" and caught.value.problem == words
    assert diff(before, snapshot(venv)) == []


def test_a_damaged_journal_is_refused_and_one_without_a_seal_still_recovers(
    venv: Path, tmp_path: Path
) -> None:
    """The journal's first line is a sha256 of the rest: a byte changed since (bit rot, an
    edit) is refused with nothing touched. A journal as a wh before seals wrote it (the
    same JSON, no seal) is read by its shape and rolled back."""
    before = snapshot(venv)
    _begin(venv, tmp_path)
    _simulate_install(venv)
    path = venv / ".wh-journal" / "journal.json"
    raw = path.read_text(encoding="utf-8")
    text = unseal(raw)
    assert text is not None and raw.endswith(text)
    path.write_text(raw.replace('"moved"', '"mowed"'), encoding="utf-8")
    during = snapshot(venv)
    with pytest.raises(JournalError, match="a sha256 of the rest, does not match the rest"):
        journal.recover_if_needed(venv)
    assert diff(during, snapshot(venv)) == []
    path.write_text(text, encoding="utf-8")  # unsealed, as an older wh wrote it
    done = journal.recover_if_needed(venv)
    assert done is not None and "rolled back the interrupted install of lib 2.0" in done
    assert diff(before, snapshot(venv)) == []

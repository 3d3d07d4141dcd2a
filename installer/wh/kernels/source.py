"""Locating and pinning a recipe's source: archive sha256, tree digest, git commit."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
from pathlib import Path

from wh.errors import SourceError, SourcePinError
from wh.kernels.recipe import Source
from wh.proc import spawn as proc

_SKIP = {".git", "__pycache__", ".hg", ".svn"}
_ARCHIVES = (".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tar", ".zip")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_digest(root: Path) -> str:
    """sha256 over sorted (POSIX relative path, file sha256) lines; VCS folders left out."""
    h = hashlib.sha256()
    files = sorted(
        p for p in root.rglob("*") if p.is_file() and not _SKIP & set(p.relative_to(root).parts)
    )
    for p in files:
        h.update(f"{p.relative_to(root).as_posix()}\0{file_sha256(p)}\n".encode())
    return h.hexdigest()


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.endswith(_ARCHIVES)


def verify(path: Path, pin: Source) -> dict[str, str]:
    """Check every pin the recipe sets; return the hashes found (for the build record)."""
    if not path.exists():
        raise SourceError("missing", path=path)
    found: dict[str, str] = {}
    if is_archive(path):
        found["sha256"] = file_sha256(path)
        if pin.sha256 and pin.sha256 != found["sha256"]:
            raise SourcePinError(path, "sha256", pin.sha256, found["sha256"])
        return found
    found["tree_sha256"] = tree_digest(path)
    if pin.tree_sha256 and pin.tree_sha256 != found["tree_sha256"]:
        raise SourcePinError(path, "tree_sha256", pin.tree_sha256, found["tree_sha256"])
    if pin.git_commit:
        head = proc.run(["git", "-C", path, "rev-parse", "HEAD"], what="git rev-parse").stdout
        found["git_commit"] = head.strip()
        if not found["git_commit"].startswith(pin.git_commit):
            raise SourcePinError(path, "git commit", pin.git_commit, found["git_commit"])
    return found


def materialize(path: Path, dest: Path) -> Path:
    """A fresh private copy of the source (folder copied, archive unpacked) at ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    if is_archive(path):
        dest.mkdir(parents=True)
        if path.name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                zf.extractall(dest)
        else:
            with tarfile.open(path) as tf:
                tf.extractall(dest, filter="data")
        entries = list(dest.iterdir())
        return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest
    shutil.copytree(path, dest, ignore=shutil.ignore_patterns(*_SKIP, "build", "dist"))
    return dest


def inputs_digest(project: Path, files: list[str]) -> str:
    """sha256 over sorted (relative path, sha256 of the file with CRLF read as LF) lines of
    the files a recipe reads: a checkout with Windows line endings pins the same."""
    h = hashlib.sha256()
    for rel in sorted(files):
        body = (project / rel).read_bytes().replace(b"\r\n", b"\n")
        h.update(f"{rel}\0{hashlib.sha256(body).hexdigest()}\n".encode())
    return h.hexdigest()


def git_head(path: Path) -> str | None:
    """The commit checked out at ``path`` (a git work tree), or None if it is not one."""
    if not (path / ".git").exists():
        return None
    done = proc.run(["git", "-C", path, "rev-parse", "HEAD"], check=False, what="git rev-parse")
    return done.stdout.strip() if done.returncode == 0 else None


def check_pin(
    root: Path, project: Path, pin: Source, inputs: list[str]
) -> tuple[dict[str, str], list[str]]:
    """What the tree is (digests, commit) and every way it differs from the recipe's pin.

    An unpinned recipe is one problem; a git commit that cannot be read (not a checkout) is
    not a problem when the inputs digest matches, since the files read are the pinned ones.
    """
    found: dict[str, str] = {"inputs_sha256": inputs_digest(project, inputs)}
    problems: list[str] = []
    if not pin.pinned:
        problems.append(
            "the recipe pins no source (git_commit, inputs_sha256, tree_sha256 or sha256)"
        )
    if pin.inputs_sha256 and pin.inputs_sha256 != found["inputs_sha256"]:
        problems.append(
            f"inputs_sha256: the recipe pins {pin.inputs_sha256[:16]}..., this tree has "
            f"{found['inputs_sha256'][:16]}... (over {', '.join(sorted(inputs))})"
        )
    if pin.tree_sha256:
        found["tree_sha256"] = tree_digest(root)
        if pin.tree_sha256 != found["tree_sha256"]:
            problems.append(
                f"tree_sha256: the recipe pins {pin.tree_sha256[:16]}..., this tree has "
                f"{found['tree_sha256'][:16]}..."
            )
    if pin.git_commit:
        head = git_head(root)
        if head is None:
            found["git_commit"] = "not a git checkout"
            if not pin.inputs_sha256:
                problems.append(
                    f"git_commit: the recipe pins {pin.git_commit}; {root} is not a git checkout"
                    " (and the recipe pins no inputs_sha256 to check instead)"
                )
        else:
            found["git_commit"] = head
            if not head.startswith(pin.git_commit):
                problems.append(
                    f"git_commit: the recipe pins {pin.git_commit}, {root} is at {head}"
                )
    return found, problems

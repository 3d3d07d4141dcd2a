"""Hostile wheels, written with zipfile directly: one factory per attack, with its expected error.

``python -m tests.hostile DIR`` regenerates the committed corpus in ``tests/corpus/``.
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wh.model.lockfile import _DIGEST_BLANK, _DIGEST_RE
from wh.wheel.writer import metadata_text, record_hash

_EPOCH = (2020, 1, 1, 0, 0, 0)
Member = tuple[str, bytes, int]  # archive name, data, unix mode (0o644, or S_IFLNK|0o777)


def members(
    name: str = "evil",
    version: str = "1.0",
    files: dict[str, bytes] | None = None,
    *,
    wheel_version: str = "1.0",
    meta_name: str | None = None,
    meta_version: str | None = None,
    di: str | None = None,
) -> list[Member]:
    """A compliant wheel's members (RECORD last) that a factory then corrupts."""
    di = di or f"{name}-{version}.dist-info"
    body = files if files is not None else {f"{name}/__init__.py": b"x = 1\n"}
    out: list[Member] = [(k, v, 0o644) for k, v in body.items()]
    meta = metadata_text(meta_name or name, meta_version or version).encode()
    out.append((f"{di}/METADATA", meta, 0o644))
    wheel = f"Wheel-Version: {wheel_version}\nGenerator: hostile\nRoot-Is-Purelib: true\n"
    out.append((f"{di}/WHEEL", (wheel + "Tag: py3-none-any\n").encode(), 0o644))
    return out


def _honest_row(name: str, data: bytes) -> str:
    return f"{name},{record_hash(data)},{len(data)}"


def with_record(
    ms: list[Member],
    di: str,
    *,
    extra_rows: list[str] | None = None,
    row: Callable[[str, bytes], str] = _honest_row,
) -> list[Member]:
    """``ms`` with a RECORD last: a ``row`` for each member (its true hash and size unless
    told otherwise), then ``extra_rows``, then RECORD's own."""
    rows = [row(n, d) for n, d, _m in ms]
    rows += extra_rows or []
    rows.append(f"{di}/RECORD,,")
    return [*ms, (f"{di}/RECORD", ("\n".join(rows) + "\n").encode(), 0o644)]


def write_zip(path: Path, ms: list[Member]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, data, mode in ms:
            info = zipfile.ZipInfo(n, date_time=_EPOCH)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def _std(d: Path, ms: list[Member], name: str = "evil", version: str = "1.0") -> Path:
    di = f"{name}-{version}.dist-info"
    return write_zip(d / f"{name}-{version}-py3-none-any.whl", with_record(ms, di))


def not_a_zip(d: Path) -> Path:
    p = d / "evil-1.0-py3-none-any.whl"
    d.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"this is not a zip file\n" * 10)
    return p


def truncated(d: Path) -> Path:
    p = _std(d, members())
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p


def duplicate_entry(d: Path) -> Path:
    ms = members()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate, which is the point
        return _std(d, [*ms, ("evil/__init__.py", b"x = 2\n", 0o644)])


def _path_attack(d: Path, bad: str) -> Path:
    return _std(d, [*members(), (bad, b"pwned\n", 0o644)])


def dotdot(d: Path) -> Path:
    return _path_attack(d, "../../../../tmp/evil_dotdot.py")


def absolute(d: Path) -> Path:
    return _path_attack(d, "/tmp/evil_absolute.py")


def drive_letter(d: Path) -> Path:
    return _path_attack(d, "C:/Windows/evil.py")


def backslash(d: Path) -> Path:
    return _path_attack(d, "evil\\..\\..\\evil_backslash.py")


def control_char(d: Path) -> Path:
    return _path_attack(d, "evil/bell\x07.py")


def nul_byte(d: Path) -> Path:
    """A NUL in a name (zipfile cannot write one: the bytes are patched afterwards)."""
    p = _path_attack(d, "evil/nulQQ.py")
    data = p.read_bytes()
    assert data.count(b"evil/nulQQ.py") == 2  # local header, central directory
    first = data.index(b"evil/nulQQ.py")
    last = data.rindex(b"evil/nulQQ.py")
    patched = data[:first] + b"evil/nul\0Q.py" + data[first + 13 :]
    patched = patched[:last] + b"evil/nul\0Q.py" + patched[last + 13 :]
    p.write_bytes(patched)
    return p


def symlink(d: Path) -> Path:
    return _std(d, [*members(), ("evil/link", b"/etc/passwd", 0o120777)])


def redigest(data: bytes) -> bytes:
    """A hand-edited lock with its ``[tool.wh] digest`` recomputed, as anyone can (unkeyed)."""
    m = _DIGEST_RE.search(data)
    assert m is not None
    blank = data[: m.start()] + _DIGEST_BLANK + data[m.end() :]
    digest = hashlib.sha256(blank).hexdigest()
    return blank.replace(_DIGEST_BLANK, f'digest = "sha256:{digest}"'.encode(), 1)


def zip_bomb(d: Path) -> Path:
    """20 MiB of zeros in ~20 KiB: a 1000:1 ratio, past the 200:1 limit."""
    return _std(d, [*members(), ("evil/zeros.bin", bytes(20 << 20), 0o644)])


def metadata_bomb(d: Path) -> Path:
    """METADATA of 80 MiB (a blank line, then zeros) in ~80 KiB: read whole, as ``wh lock``
    once did, it takes hundreds of MB; past the 64 MiB bound on a metadata file."""
    di = "evil-1.0.dist-info"
    ms = [
        (n, data + b"\n" + bytes(80 << 20), m) if n == f"{di}/METADATA" else (n, data, m)
        for n, data, m in members()
    ]
    return _std(d, ms)


def total_ratio_bomb(d: Path) -> Path:
    """40 members of 1 MiB of zeros each, every one far below the per-member threshold
    (16 MiB), 1000:1 together."""
    zeros = [(f"evil/zeros{i:02}.bin", bytes(1 << 20), 0o644) for i in range(40)]
    return _std(d, [*members(), *zeros])


def two_dist_infos(d: Path) -> Path:
    ms = members()
    ms.append(("other-2.0.dist-info/METADATA", metadata_text("other", "2.0").encode(), 0o644))
    return _std(d, ms)


def no_dist_info(d: Path) -> Path:
    return write_zip(d / "evil-1.0-py3-none-any.whl", [("evil/__init__.py", b"x = 1\n", 0o644)])


def metadata_mismatch(d: Path) -> Path:
    return _std(d, members(meta_name="innocent", meta_version="9.9"))


def dist_info_mismatch(d: Path) -> Path:
    di = "innocent-1.0.dist-info"
    return write_zip(d / "evil-1.0-py3-none-any.whl", with_record(members(di=di), di))


def wheel_version_2(d: Path) -> Path:
    return _std(d, members(wheel_version="2.0"))


def record_missing(d: Path) -> Path:
    return write_zip(d / "evil-1.0-py3-none-any.whl", members())


def record_hash_mismatch(d: Path) -> Path:
    di = "evil-1.0.dist-info"
    ms = with_record(members(), di)
    # same length as RECORD says: only the bytes themselves (checked once installed) tell
    ms[0] = ("evil/__init__.py", b"pwned\n", 0o644)
    return write_zip(d / "evil-1.0-py3-none-any.whl", ms)


def record_size_mismatch(d: Path) -> Path:
    di = "evil-1.0.dist-info"
    ms = with_record(members(), di, row=lambda n, b: f"{n},{record_hash(b)},{len(b) + 5}")
    return write_zip(d / "evil-1.0-py3-none-any.whl", ms)


def unlisted_file(d: Path) -> Path:
    di = "evil-1.0.dist-info"
    ms = with_record(members(), di)
    return write_zip(d / "evil-1.0-py3-none-any.whl", [*ms, ("evil/sneaky.py", b"y = 2\n", 0o644)])


def record_escape(d: Path) -> Path:
    di = "evil-1.0.dist-info"
    row = f"../../../bin/evil,{record_hash(b'')},0"
    return write_zip(d / "evil-1.0-py3-none-any.whl", with_record(members(), di, extra_rows=[row]))


def record_md5(d: Path) -> Path:
    di = "evil-1.0.dist-info"
    ms = with_record(members(), di, row=lambda n, b: f"{n},md5=deadbeef,{len(b)}")
    return write_zip(d / "evil-1.0-py3-none-any.whl", ms)


def _rewrite_member(path: Path, name: str, patch: Callable[[bytearray, int, int], None]) -> Path:
    """Patch ``name``'s stored bytes in place: ``patch(data, start, end)`` sees the whole
    archive and where the member's compressed data lies; its central directory entry is
    at ``data.find(b"PK\\x01\\x02" ...)`` for patches of the headers."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    off = info.header_offset
    n, e = (
        int.from_bytes(data[off + 26 : off + 28], "little"),
        int.from_bytes(data[off + 28 : off + 30], "little"),
    )
    start = off + 30 + n + e
    patch(data, start, start + info.compress_size)
    path.write_bytes(bytes(data))
    return path


def _break(data: bytearray, start: int, end: int) -> None:
    """The member's deflate data replaced, at the same length, by a stream of the first
    half of its bytes that then holds a block of the reserved type 3, which every
    inflater rejects (its sizes and CRC in the headers stay those of the whole member)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = zlib.decompressobj(-15).decompress(bytes(data[start:end]))
    broken = c.compress(head[: len(head) // 2]) + c.flush(zlib.Z_SYNC_FLUSH) + b"\x07"
    assert len(broken) <= end - start, "the member compresses too well to break in place"
    data[start:end] = broken + bytes(end - start - len(broken))


def central_entry(data: bytes | bytearray, name: str) -> int:
    """Where ``name``'s central directory entry starts in a zip's bytes."""
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name.encode():
        at = data.find(b"PK\x01\x02", at + 4)
    return at


def metadata_damaged(d: Path) -> Path:
    """METADATA's compressed bytes damaged in transit (its size and CRC as before)."""
    di = "evil-1.0.dist-info"
    meta = metadata_text("evil", "1.0") + "".join(f"Classifier: c{i}\n" for i in range(60))
    ms = [m if not m[0].endswith("METADATA") else (m[0], meta.encode(), m[2]) for m in members()]
    path = write_zip(d / "evil-1.0-py3-none-any.whl", with_record(ms, di))
    return _rewrite_member(path, f"{di}/METADATA", _break)


def member_damaged(d: Path) -> Path:
    """A module's compressed bytes damaged: only reading it (to hash it) finds out."""
    body = {"evil/__init__.py": b"".join(b"x%d = %d\n" % (i, i * 7) for i in range(400))}
    path = _std(d, members(files=body))
    return _rewrite_member(path, "evil/__init__.py", _break)


def metadata_encrypted(d: Path) -> Path:
    """METADATA flagged as encrypted, which wheels never are."""
    path = _std(d, members())

    def flag(data: bytearray, start: int, end: int) -> None:
        name = "evil-1.0.dist-info/METADATA"
        at = central_entry(data, name)
        data[at + 8] |= 1
        local = int.from_bytes(data[at + 42 : at + 46], "little")
        data[local + 6] |= 1

    return _rewrite_member(path, "evil-1.0.dist-info/METADATA", flag)


def record_not_csv(d: Path) -> Path:
    """A RECORD row with a carriage return inside an unquoted field (and a quote, so the
    csv reader, not the plain-line one, reads it)."""
    di = "evil-1.0.dist-info"
    return write_zip(
        d / "evil-1.0-py3-none-any.whl",
        with_record(members(), di, extra_rows=['evil/a"b\rc.py,,']),
    )


def zip_version(d: Path) -> Path:
    """A member that needs "zip version 25.5" to extract, more than any zip tool knows, in
    an archive with a name that is not ASCII (so ``zipfile``, not wh's own directory
    reader, reads it, and raises NotImplementedError on opening it)."""
    path = _std(d, members(files={"evil/__init__.py": b"x = 1\n", "evil/caf\u00e9.py": b""}))

    def version(data: bytearray, start: int, end: int) -> None:
        at = central_entry(data, "evil/__init__.py")
        data[at + 6] = 255
        local = int.from_bytes(data[at + 42 : at + 46], "little")
        data[local + 4] = 255

    return _rewrite_member(path, "evil/__init__.py", version)


@dataclass(frozen=True)
class Case:
    make: Callable[[Path], Path]
    expect: str  # a fragment of the validation problem
    scan_accepts: bool  # wh scan's metadata read lets it through (validate must catch it)


CASES: dict[str, Case] = {
    "not_a_zip": Case(not_a_zip, "not a valid zip file", False),
    "truncated": Case(truncated, "not a valid zip file, or truncated", False),
    "duplicate_entry": Case(duplicate_entry, "duplicate entry 'evil/__init__.py'", True),
    "dotdot": Case(dotdot, "escapes the install root with '..'", True),
    "absolute": Case(absolute, "is absolute", True),
    "drive_letter": Case(drive_letter, "starts with a drive letter", True),
    "backslash": Case(backslash, "contains a backslash", True),
    "control_char": Case(control_char, "contains a control character", True),
    "nul_byte": Case(nul_byte, "contains a control character", True),
    "symlink": Case(symlink, "symlink entry 'evil/link'", True),
    "zip_bomb": Case(zip_bomb, "(zip bomb?)", True),
    "metadata_bomb": Case(metadata_bomb, "METADATA' expands", False),
    "total_ratio_bomb": Case(total_ratio_bomb, "bytes in all, more than 200:1 (zip bomb?)", True),
    "two_dist_infos": Case(two_dist_infos, "expected exactly one .dist-info folder", False),
    "no_dist_info": Case(no_dist_info, "expected exactly one .dist-info folder, found none", False),
    "metadata_mismatch": Case(metadata_mismatch, "METADATA Name 'innocent'", False),
    "dist_info_mismatch": Case(dist_info_mismatch, "name 'innocent' does not match", True),
    "wheel_version_2": Case(wheel_version_2, "Wheel-Version 2.0", True),
    "record_missing": Case(record_missing, "RECORD is missing", True),
    "record_hash_mismatch": Case(record_hash_mismatch, "RECORD hash mismatch", True),
    "record_size_mismatch": Case(record_size_mismatch, "RECORD size mismatch", True),
    "unlisted_file": Case(unlisted_file, "'evil/sneaky.py' is not listed in RECORD", True),
    "record_escape": Case(record_escape, "points outside the environment", True),
    "record_md5": Case(record_md5, "sha256 or stronger is required", True),
    "metadata_damaged": Case(metadata_damaged, "METADATA: damaged deflate data", False),
    "metadata_encrypted": Case(metadata_encrypted, "METADATA is encrypted", False),
    "record_not_csv": Case(record_not_csv, "RECORD is not CSV", True),
    "zip_version": Case(zip_version, "zip file version 25.5", False),
}


def write_corpus(root: Path) -> dict[str, Path]:
    """Each case in its own folder (the wheels share a filename)."""
    return {name: case.make(root / name) for name, case in CASES.items()}


if __name__ == "__main__":
    for n, p in write_corpus(Path(sys.argv[1])).items():
        print(f"{n}: {p}")

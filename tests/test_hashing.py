"""wh.hashing: digests of files read in several reads."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from wh import hashing


def test_a_file_of_several_reads_and_a_partial_one_hashes_whole(tmp_path: Path) -> None:
    data = os.urandom(3 * hashing._CHUNK + 17)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert hashing.file_digest(path) == (hashlib.sha256(data).digest(), len(data))
    fd = hashing.open_binary(path)
    try:
        os.lseek(fd, 5, os.SEEK_SET)
        assert hashing.fd_digest(fd, "sha512") == (hashlib.sha512(data[5:]).digest(), len(data) - 5)
    finally:
        os.close(fd)
    assert hashing.sha256_many([path]) == {path: hashlib.sha256(data).hexdigest()}

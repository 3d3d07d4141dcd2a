"""RECORD: the CSV of ``path,hash,size`` rows that every wheel and every installed
``.dist-info`` folder carries. The one reader of it in wh: a wheel's member (through
``wheelfile.ZipIndex.rows``) and an installed distribution's file both come here."""

from __future__ import annotations

import csv
import io
from pathlib import Path


class RecordError(ValueError):
    """A RECORD that is not CSV (``csv.reader`` refuses it: a carriage return or quote
    where a field cannot hold one)."""


def rows(text: str) -> list[list[str]]:
    """A RECORD's rows, as ``csv.reader`` reads them; ``RecordError`` where it refuses them.

    A RECORD with no quote, carriage return or NUL has only plain ``path,hash,size`` lines,
    which ``str.split`` reads exactly as csv does, several times faster (a torch wheel has
    20,000 rows); anything else goes through csv."""
    if '"' in text or "\r" in text or "\x00" in text:
        try:
            return list(csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            raise RecordError(f"not CSV: {exc}") from exc
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.split(",") if line else [] for line in lines]


def decode(data: bytes) -> list[list[str]]:
    """The rows of RECORD's bytes (UTF-8; a byte that is not becomes U+FFFD)."""
    return rows(data.decode("utf-8", "replace"))


def wheel_rows(data: bytes) -> list[list[str]]:
    """A wheel's RECORD rows (``decode``), each path with "/" between its folders, as the
    archive names its members: the RECORD format lets one written on Windows separate them
    with backslashes (PyPI's pymupdf 1.27.2.2 for win_amd64 does), while a zip names every
    member with forward slashes (APPNOTE 4.4.17; wh refuses a member named with a
    backslash, ``portable.unsafe_paths``). A path that climbs out with ``..\\`` is then
    refused as one with ``../``."""
    return _slashed(decode(data))


def _slashed(rows: list[list[str]]) -> list[list[str]]:
    """``rows`` with "/" between the folders of each path (see ``wheel_rows``)."""
    for row in rows:
        if row and "\\" in row[0]:
            row[0] = row[0].replace("\\", "/")
    return rows


def fields(row: list[str]) -> tuple[str, str, str]:
    """A row's path, hash and size ("" where the row has no such column)."""
    return (
        row[0] if row else "",
        row[1] if len(row) > 1 else "",
        row[2] if len(row) > 2 else "",
    )


def entries(record: list[list[str]]) -> dict[str, tuple[str, str]]:
    """path -> (hash, size) for every row with a hash column; the last row of a path counts."""
    out: dict[str, tuple[str, str]] = {}
    for row in record:
        if len(row) >= 2:
            out[row[0]] = (row[1], row[2] if len(row) > 2 else "")
    return out


def installed(dist_info: Path) -> list[list[str]] | None:
    """The rows of an installed distribution's ``RECORD``, paths with "/" between their
    folders as ``wheel_rows`` gives them (a RECORD written on Windows may use backslashes);
    None where it has none (conda and Debian packages ship a dist-info without one) or it
    cannot be read or parsed."""
    try:
        return _slashed(decode((dist_info / "RECORD").read_bytes()))
    except (OSError, RecordError):
        return None


def installed_paths(record: list[list[str]]) -> list[str]:
    """The paths the rows of ``installed`` name, relative to the site folder."""
    return [row[0] for row in record if row and row[0]]

"""Write compliant wheels (METADATA, WHEEL, RECORD with hashes) from files in memory."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.utils import canonicalize_name

_EPOCH = (2020, 1, 1, 0, 0, 0)


def dist_info_name(name: str, version: str) -> str:
    return f"{canonicalize_name(name).replace('-', '_')}-{version}.dist-info"


def wheel_filename(name: str, version: str, tag: str, build: str | None = None) -> str:
    stem = canonicalize_name(name).replace("-", "_")
    parts = [stem, version, *([build] if build else []), tag]
    return "-".join(parts) + ".whl"


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def metadata_text(
    name: str,
    version: str,
    *,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    summary: str = "",
) -> str:
    lines = ["Metadata-Version: 2.3", f"Name: {name}", f"Version: {version}"]
    if summary:
        lines.append(f"Summary: {summary}")
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Provides-Extra: {e}" for e in provides_extra]
    lines += [f"Requires-Dist: {r}" for r in requires_dist]
    return "\n".join(lines) + "\n"


def write_wheel(
    out_dir: Path,
    name: str,
    version: str,
    files: Mapping[str, bytes],
    *,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    tag: str = "py3-none-any",
    build: str | None = None,
    summary: str = "",
    extra_dist_info: Mapping[str, bytes] | None = None,
) -> Path:
    """Write one wheel into ``out_dir`` and return its path. Output is byte-reproducible."""
    di = dist_info_name(name, version)
    pure = tag.endswith("-none-any")
    wheel_txt = (
        "Wheel-Version: 1.0\nGenerator: wh\n"
        f"Root-Is-Purelib: {'true' if pure else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in _expand_tag(tag))
    )
    if build:
        wheel_txt += f"Build: {build}\n"
    members: dict[str, bytes] = dict(files)
    members[f"{di}/METADATA"] = metadata_text(
        name,
        version,
        requires_dist=requires_dist,
        requires_python=requires_python,
        provides_extra=provides_extra,
        summary=summary,
    ).encode()
    members[f"{di}/WHEEL"] = wheel_txt.encode()
    for k, v in (extra_dist_info or {}).items():
        members[f"{di}/{k}"] = v
    record_lines = [f"{arc},{record_hash(data)},{len(data)}" for arc, data in members.items()]
    record_lines.append(f"{di}/RECORD,,")
    members[f"{di}/RECORD"] = ("\n".join(record_lines) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / wheel_filename(name, version, tag, build)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arc, data in members.items():
            info = zipfile.ZipInfo(arc, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def _expand_tag(tag: str) -> list[str]:
    py, abi, plat = tag.split("-")
    return [f"{a}-{b}-{c}" for a in py.split(".") for b in abi.split(".") for c in plat.split(".")]

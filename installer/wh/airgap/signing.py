"""Bundle signatures: who made a bundle, by an ed25519 signature over its manifest.

A bundle's ``SHA256SUMS`` names the sha256 of every file in it (the lock, every wheel, wh
itself, the bootstrap scripts), so one signature over those bytes covers them all: the
lock's own ``[tool.wh] digest`` is unkeyed (anyone who edits a lock can recompute it), the
signature is not. ``SHA256SUMS.sig`` holds it as text::

    wh-signature 1
    key ed25519 SHA256:<fingerprint>
    signature <base64 of the 64 signature bytes>

Keys are plain ed25519 keys in the formats the usual tools write, read through the
``cryptography`` library: ``wh keygen`` (PKCS#8 PEM private key, OpenSSH public key),
``ssh-keygen -t ed25519 -N '' -f KEY`` (OpenSSH private key; a passphrase is refused
with what to do), or ``openssl genpkey -algorithm ed25519 -out KEY`` with
``openssl pkey -in KEY -pubout -out KEY.pub`` (PEM). A fingerprint is what
``ssh-keygen -lf KEY.pub`` prints for the key (sha256 of its OpenSSH wire form).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from wh.errors import BundleSignatureError, KeyFileError

SIGNATURE = "SHA256SUMS.sig"
_MAGIC = "wh-signature 1"


@dataclass(frozen=True)
class Signed:
    """What checking a bundle's signature found: the signer's fingerprint, or unsigned."""

    fingerprint: str | None  # None: no signature was verified and the user allowed that
    claimed: str | None = None  # who an unverified signature names (no key was trusted)

    def describe(self) -> str:
        if self.claimed is not None:
            return (
                f"bundle signature NOT checked (it names {self.claimed}, but no --trust key "
                "was given); installing it because --allow-unsigned was given"
            )
        if self.fingerprint is None:
            return "bundle is NOT signed; installing it because --allow-unsigned was given"
        return f"bundle signature verified: signed by the trusted key {self.fingerprint}"


def fingerprint(key: Ed25519PublicKey) -> str:
    """``SHA256:<base64>`` of the key's OpenSSH wire form, exactly what ``ssh-keygen -lf
    KEY.pub`` prints, so a user can compare it with what the maker announced."""
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An ed25519 private key from a PEM (PKCS#8) or OpenSSH file."""
    data = _read_key(path, private=True)
    key: object
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # the file is encrypted
        raise KeyFileError(path, "passphrase", private=True) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(path, "not-private", private=True, problem=str(exc)) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(path, "not-ed25519", private=True, problem=type(key).__name__)
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """An ed25519 public key from an OpenSSH line (``ssh-ed25519 AAAA...``) or a PEM file."""
    data = _read_key(path, private=False)
    key: object
    try:
        if data.lstrip().startswith(b"ssh-"):
            key = serialization.load_ssh_public_key(data.strip())
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(path, "not-public", private=False, problem=str(exc)) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(path, "not-ed25519", private=False, problem=type(key).__name__)
    return key


def _read_key(path: Path, *, private: bool) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KeyFileError(path, "unreadable", private=private, problem=str(exc.strerror)) from exc


def generate(path: Path) -> str:
    """Write a new key pair: ``path`` (PKCS#8 PEM, mode 0600) and ``path.pub`` (OpenSSH);
    return the fingerprint. Refuses to overwrite either file."""
    pub = path.with_name(path.name + ".pub")
    existing = [p for p in (path, pub) if p.exists()]
    if existing:
        raise KeyFileError(existing[0], "exists", private=existing[0] == path)
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private)
    pub.write_bytes(public + b" wh-bundle-signing\n")
    return fingerprint(key.public_key())


def sign(manifest: bytes, key: Ed25519PrivateKey) -> str:
    """The text of ``SHA256SUMS.sig`` for the manifest bytes."""
    signature = base64.b64encode(key.sign(manifest)).decode()
    return f"{_MAGIC}\nkey ed25519 {fingerprint(key.public_key())}\nsignature {signature}\n"


def check(
    root: Path,
    manifest: bytes,
    trusted: Sequence[Path],
    *,
    allow_unsigned: bool,
) -> Signed:
    """Whether the bundle at ``root`` (its manifest bytes given) was signed by a ``trusted``
    key; raises LockError (exit 5) when it was not and the user did not allow that."""
    sig_path = root / SIGNATURE
    keys = {fingerprint(k): k for k in (load_public_key(p) for p in trusted)}
    if not sig_path.is_file():
        if keys:
            raise BundleSignatureError(root, "unsigned-but-trusted", trusted=sorted(keys))
        if not allow_unsigned:
            raise BundleSignatureError(root, "unsigned")
        return Signed(None)
    lines = sig_path.read_text(encoding="utf-8", errors="replace").splitlines()
    fields = dict(line.partition(" ")[::2] for line in lines[1:] if line)
    signer = fields.get("key", "").removeprefix("ed25519 ").strip()
    if not lines or lines[0] != _MAGIC or "signature" not in fields or not signer:
        raise BundleSignatureError(root, "malformed", signature=sig_path)
    if not keys:
        if allow_unsigned:
            return Signed(None, claimed=signer)
        raise BundleSignatureError(root, "no-trusted-key", signer=signer)
    key = keys.get(signer)
    if key is None:
        raise BundleSignatureError(root, "untrusted", signer=signer, trusted=sorted(keys))
    try:
        key.verify(base64.b64decode(fields["signature"], validate=True), manifest)
    except (InvalidSignature, ValueError) as exc:
        raise BundleSignatureError(root, "mismatch", signer=signer) from exc
    return Signed(signer)

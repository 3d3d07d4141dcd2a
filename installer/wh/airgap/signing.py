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

from wh.errors import LockError, ProfileError

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
    data = _read_key(
        path,
        "the signing key",
        "make one with `wh keygen KEY` (or `ssh-keygen -t ed25519 -N '' -f KEY`)",
    )
    key: object
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # the file is encrypted
        raise ProfileError(
            f"the signing key {path} is protected by a passphrase, which wh does not ask for",
            hint="sign with an unencrypted copy kept offline, e.g. "
            "`ssh-keygen -p -N '' -f COPY` on a copy of the key",
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ProfileError(
            f"{path} is not an ed25519 private key wh can read ({exc})",
            hint="use a key made by `wh keygen KEY`, `ssh-keygen -t ed25519` or "
            "`openssl genpkey -algorithm ed25519`",
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise _not_ed25519(path, key, "bundles are signed with ed25519 keys only: `wh keygen KEY`")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """An ed25519 public key from an OpenSSH line (``ssh-ed25519 AAAA...``) or a PEM file."""
    data = _read_key(
        path, "the trusted key", "pass --trust with the signer's public key file (KEY.pub)"
    )
    key: object
    try:
        if data.lstrip().startswith(b"ssh-"):
            key = serialization.load_ssh_public_key(data.strip())
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ProfileError(
            f"{path} is not an ed25519 public key wh can read ({exc})",
            hint="pass the signer's KEY.pub (OpenSSH `ssh-ed25519 ...` line or PEM public key)",
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise _not_ed25519(path, key, "bundles are signed with ed25519 keys only")
    return key


def _read_key(path: Path, what: str, hint: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"cannot read {what} {path} ({exc.strerror})", hint=hint) from exc


def _not_ed25519(path: Path, key: object, hint: str) -> ProfileError:
    return ProfileError(f"{path} is a {type(key).__name__}, not an ed25519 key", hint=hint)


def generate(path: Path) -> str:
    """Write a new key pair: ``path`` (PKCS#8 PEM, mode 0600) and ``path.pub`` (OpenSSH);
    return the fingerprint. Refuses to overwrite either file."""
    pub = path.with_name(path.name + ".pub")
    existing = [p for p in (path, pub) if p.exists()]
    if existing:
        raise ProfileError(
            f"{existing[0]} exists; wh keygen never overwrites a key",
            hint="choose another path, or remove the old key deliberately",
        )
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
            raise LockError(
                f"bundle {root} is not signed, and --trust asks for a signature by "
                f"{', '.join(sorted(keys))}; nothing was installed",
                hint="get the signed bundle from its maker (`wh bundle --sign KEY`); an "
                "unsigned copy may have been replaced on the way",
            )
        if not allow_unsigned:
            raise LockError(
                f"bundle {root} is not signed, so nothing says who made it; nothing was installed",
                hint="ask its maker for a signed bundle (`wh bundle --sign KEY`) and pass "
                "--trust KEY.pub, or pass --allow-unsigned if you checked the archive's "
                "sha256 another way",
            )
        return Signed(None)
    lines = sig_path.read_text(encoding="utf-8", errors="replace").splitlines()
    fields = dict(line.partition(" ")[::2] for line in lines[1:] if line)
    signer = fields.get("key", "").removeprefix("ed25519 ").strip()
    if not lines or lines[0] != _MAGIC or "signature" not in fields or not signer:
        raise LockError(
            f"{sig_path} is malformed; nothing was installed",
            hint="the bundle was damaged or tampered with: copy it again from its maker",
        )
    if not keys:
        if allow_unsigned:
            return Signed(None, claimed=signer)
        raise LockError(
            f"bundle {root} is signed by {signer}, but no key is trusted; nothing was installed",
            hint="pass --trust KEY.pub with the public key of the bundle's maker (compare its "
            f"fingerprint with {signer} by `ssh-keygen -lf KEY.pub`)",
        )
    key = keys.get(signer)
    if key is None:
        raise LockError(
            f"bundle {root} is signed by {signer}, which is none of the trusted keys "
            f"({', '.join(sorted(keys))}); nothing was installed",
            hint="pass --trust with the public key of the bundle's real maker; a bundle signed "
            "by an unknown key may come from anyone",
        )
    try:
        key.verify(base64.b64decode(fields["signature"], validate=True), manifest)
    except (InvalidSignature, ValueError) as exc:
        raise LockError(
            f"the signature of bundle {root} does not match its SHA256SUMS: the "
            "manifest (and so the lock or a wheel) changed after signing; nothing was installed",
            hint="the bundle was tampered with or damaged: copy it again from its maker",
        ) from exc
    return Signed(signer)

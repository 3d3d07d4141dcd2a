"""Signed bundles (issue 22): `wh keygen`, `wh bundle --sign KEY`, and `wh install --bundle
--trust KEY.pub`; an unsigned bundle installs only with --allow-unsigned. Each refusal:
exit 5, the message, and the target environment unchanged."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from wh.airgap import signing
from wh.app.bundle import MANIFEST, extract, write_manifest
from wh.cli.main import cli

from tests.envsnap import diff, snapshot
from tests.hostile import redigest
from tests.test_bundle import _bundle, _has, _venv


def _keygen(path: Path) -> Path:
    done = CliRunner().invoke(cli, ["keygen", str(path)])
    assert done.exit_code == 0, done.output
    assert "SHA256:" in done.output
    return path


def _install(bundle: Path, python: Path, *extra: str) -> Result:
    args = ["install", "--bundle", str(bundle), "--python", str(python), *extra]
    return CliRunner().invoke(cli, args)


def test_a_signed_bundle_installs_when_its_key_is_trusted(tmp_path: Path) -> None:
    key = _keygen(tmp_path / "keys" / "maker")
    out = _bundle(tmp_path, sign=key)
    with zipfile.ZipFile(out) as zf:
        assert "demo/SHA256SUMS.sig" in zf.namelist()
    python = _venv(tmp_path / "venv")
    done = _install(out, python, "--trust", f"{key}.pub")
    assert done.exit_code == 0, done.output
    fp = signing.fingerprint(signing.load_public_key(Path(f"{key}.pub")))
    assert f"bundle signature verified: signed by the trusted key {fp}" in done.output
    assert _has(python, "demo_app")


def _refused(tmp_path: Path, bundle: Path, *extra: str) -> str:
    python = _venv(tmp_path / "target")
    before = snapshot(python.parent.parent)
    done = _install(bundle, python, *extra)
    assert done.exit_code == 5, done.output
    assert "nothing was installed" in done.output
    assert diff(before, snapshot(python.parent.parent)) == []
    return done.output


def test_an_unsigned_bundle_needs_allow_unsigned(tmp_path: Path) -> None:
    out = _bundle(tmp_path)
    err = _refused(tmp_path, out)
    assert "is not signed, so nothing says who made it" in err
    assert "--allow-unsigned" in err
    python = _venv(tmp_path / "venv")
    done = _install(out, python, "--allow-unsigned")
    assert done.exit_code == 0, done.output
    assert "bundle is NOT signed; installing it because --allow-unsigned was given" in done.output


def test_a_bundle_signed_by_another_key_or_trusted_by_nobody_is_refused(tmp_path: Path) -> None:
    maker = _keygen(tmp_path / "keys" / "maker")
    stranger = _keygen(tmp_path / "keys" / "stranger")
    out = _bundle(tmp_path, sign=stranger)
    err = _refused(tmp_path, out, "--trust", f"{maker}.pub")
    assert "which is none of the trusted keys" in err
    err = _refused(tmp_path, out)
    assert "but no key is trusted" in err and "--trust KEY.pub" in err
    # allowed without a key, the output says the signature was not checked, not "unsigned"
    python = _venv(tmp_path / "venv")
    done = _install(out, python, "--allow-unsigned")
    assert done.exit_code == 0, done.output
    fp = signing.fingerprint(signing.load_public_key(Path(f"{stranger}.pub")))
    assert f"bundle signature NOT checked (it names {fp}, but no --trust key" in done.output


def test_an_unsigned_copy_is_refused_where_a_key_is_trusted(tmp_path: Path) -> None:
    """Stripping the signature does not downgrade to "unsigned, allowed"."""
    key = _keygen(tmp_path / "keys" / "maker")
    out = _bundle(tmp_path, sign=key)
    root = tmp_path / "stripped"
    extract(out, root)
    (root / "demo" / signing.SIGNATURE).unlink()
    err = _refused(tmp_path, root / "demo", "--trust", f"{key}.pub", "--allow-unsigned")
    assert "is not signed, and --trust asks for a signature" in err


def test_a_hand_edited_lock_with_a_recomputed_digest_is_caught_by_the_signature(
    tmp_path: Path,
) -> None:
    """The lock's digest is unkeyed: an editor recomputes it, and the manifest too. Only the
    signature over the manifest tells (issue 22)."""
    key = _keygen(tmp_path / "keys" / "maker")
    out = _bundle(tmp_path, sign=key)
    root = tmp_path / "edited"
    extract(out, root)
    lock = root / "demo" / "pylock.demo.toml"
    data = lock.read_bytes().replace(b'"demo_app"', b'"demo_app", "evil_extra"', 1)
    lock.write_bytes(redigest(data + b"\n# edited\n"))
    write_manifest(root / "demo")  # the editor rewrites SHA256SUMS as well
    err = _refused(tmp_path, root / "demo", "--trust", f"{key}.pub")
    assert "does not match its SHA256SUMS" in err


def test_an_emptied_manifest_does_not_bypass_the_signature(tmp_path: Path) -> None:
    """The attack: empty SHA256SUMS (so no file is listed), move the wheels out of
    ``wheels/`` (so none is "unlisted"), point an edited lock at them and recompute its
    digest. The signature must still be checked, and the lock must be a listed file."""
    key = _keygen(tmp_path / "keys" / "maker")
    out = _bundle(tmp_path, sign=key)
    root = tmp_path / "emptied"
    extract(out, root)
    demo = root / "demo"
    (demo / "elsewhere").mkdir()
    for w in [*(demo / "wheels").glob("*.whl"), *(demo / "wh").glob("*.whl")]:
        w.rename(demo / "elsewhere" / w.name)
    lock = demo / "pylock.demo.toml"
    edited = lock.read_bytes().replace(b'path = "wheels/', b'path = "elsewhere/')
    lock.write_bytes(redigest(edited))
    (demo / MANIFEST).write_bytes(b"")
    err = _refused(tmp_path, demo, "--trust", f"{key}.pub")
    assert "does not match its SHA256SUMS" in err
    # unsigned and allowed: the manifest must still list the lock and bundle.txt
    (demo / signing.SIGNATURE).unlink()
    err = _refused(tmp_path / "u", demo, "--allow-unsigned")
    assert "bundle.txt: not in the manifest" in err


@pytest.mark.parametrize("tool", ["ssh-keygen", "openssl"])
def test_keys_made_by_ssh_keygen_or_openssl_sign_and_verify(tmp_path: Path, tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    key = tmp_path / "key"
    if tool == "ssh-keygen":
        cmd = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(key)]
        subprocess.run(cmd, check=True)
    else:
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", key], check=True)
        pub = ["openssl", "pkey", "-in", key, "-pubout", "-out", f"{key}.pub"]
        subprocess.run(pub, check=True)
    out = _bundle(tmp_path, sign=key)
    python = _venv(tmp_path / "venv")
    done = _install(out, python, "--trust", f"{key}.pub")
    assert done.exit_code == 0, done.output
    if tool == "ssh-keygen":  # the fingerprint is the one ssh-keygen prints
        printed = subprocess.run(
            ["ssh-keygen", "-lf", f"{key}.pub"], capture_output=True, text=True, check=True
        ).stdout.split()[1]
        assert f"signed by the trusted key {printed}" in done.output


def test_keygen_never_overwrites_and_trust_needs_a_bundle(tmp_path: Path) -> None:
    key = _keygen(tmp_path / "k")
    again = CliRunner().invoke(cli, ["keygen", str(key)])
    assert again.exit_code == 9 and "never overwrites a key" in again.output
    python = Path(sys.executable)
    done = CliRunner().invoke(cli, ["install", "x", "--trust", f"{key}.pub", "--python", python])
    assert done.exit_code == 2 and "has no effect without --bundle" in done.output
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert (tmp_path / "k.pub").read_text().startswith("ssh-ed25519 ")
    assert MANIFEST == "SHA256SUMS"


def test_an_unusable_signing_key_is_refused_before_any_work(tmp_path: Path) -> None:
    from wh.errors import ProfileError

    junk = tmp_path / "junk"
    junk.write_text("not a key\n")
    with pytest.raises(ProfileError, match="is not an ed25519 private key") as info:
        _bundle(tmp_path, sign=junk)
    assert info.value.exit_code == 9 and "wh keygen KEY" in info.value.hint
    assert not (tmp_path / "demo.zip").exists()
    if shutil.which("ssh-keygen") is None:
        return
    locked = tmp_path / "locked"
    cmd = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(locked)]
    subprocess.run(cmd, check=True)
    (tmp_path / "b2").mkdir()
    (tmp_path / "b3").mkdir()
    with pytest.raises(ProfileError, match="protected by a passphrase"):
        _bundle(tmp_path / "b2", sign=locked)
    rsa = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", rsa], check=True)
    with pytest.raises(ProfileError, match="not an ed25519 key"):
        _bundle(tmp_path / "b3", sign=rsa)

"""Helpers for the tests of remote Docker daemons over TLS: a CA and
certificates made with ``cryptography`` as a daemon and its clients hold them, a target's
``docker_tls`` for them, and the address of the TLS daemon tests/test_docker.py starts (its
second daemon, containers/second-dockerd.sh with ``DOCKERD2_TLS``)."""

from __future__ import annotations

import datetime
import ipaddress
import re
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from workflow_helpers import docker_config

#: tests/test_docker.py's second daemon (``dockerd --tlsverify``): its port, its bridge and
#: that bridge's gateway (an address of this machine that is not a loopback one, as another
#: machine's would be), where the daemon listens besides 127.0.0.1.
PORT = 23751
BRIDGE, GATEWAY = "ebdocker2", "172.31.250.1"
REMOTE = f"tcp://{GATEWAY}:{PORT}"
LOOPBACK = f"tcp://127.0.0.1:{PORT}"
#: Added to a snakemake's environment: the target's ``docker_tls`` files alone count.
NO_TLS_ENV = {"DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": ""}


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key, path: Path, password: bytes | None = None) -> None:
    encryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )


def _ca(cn: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(cn: str, ca, usage, ips: tuple[str, ...] = ()):
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if ips:
        names = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), *names]), critical=False
        )
    return builder.sign(ca_key, hashes.SHA256()), key


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(root: Path) -> Path:
    """Certificates as a daemon and its clients hold them, under ``root``:

    - ``server/``: ``ca.pem``, ``server-cert.pem``, ``server-key.pem`` (the daemon's
      ``--tlscacert/--tlscert/--tlskey``; the certificate names 127.0.0.1 and
      :data:`GATEWAY`);
    - ``client/``: ``ca.pem``, ``cert.pem``, ``key.pem``, a ``DOCKER_CERT_PATH`` folder the
      daemon trusts;
    - ``other/``: the same files from another CA (a wrong CA; a client the daemon refuses);
    - ``garbled.pem`` (not PEM) and ``encrypted-key.pem`` (the client's key, encrypted).
    """
    ca, other = _ca("embryo-bench test CA"), _ca("another CA")
    server = _leaf("dockerd", ca, ExtendedKeyUsageOID.SERVER_AUTH, ("127.0.0.1", GATEWAY))
    for folder, authority in (("client", ca), ("other", other)):
        d = root / folder
        d.mkdir(parents=True)
        cert, key = _leaf(f"{folder} client", authority, ExtendedKeyUsageOID.CLIENT_AUTH)
        (d / "ca.pem").write_bytes(_pem(authority[0]))
        (d / "cert.pem").write_bytes(_pem(cert))
        _write_key(key, d / "key.pem")
        if folder == "client":
            _write_key(key, root / "encrypted-key.pem", password=b"secret")
    (root / "server").mkdir()
    (root / "server/ca.pem").write_bytes(_pem(ca[0]))
    (root / "server/server-cert.pem").write_bytes(_pem(server[0]))
    _write_key(server[1], root / "server/server-key.pem")
    (root / "garbled.pem").write_text("not a certificate\n")
    return root


def tls(folder: Path, **changes: Path) -> dict:
    """A target's ``docker_tls`` for the files of ``folder`` (a DOCKER_CERT_PATH layout),
    with ``changes`` (key -> another path)."""
    files = {"ca_cert": "ca.pem", "client_cert": "cert.pem", "client_key": "key.pem"}
    return {k: str(changes.get(k, folder / name)) for k, name in files.items()}


def in_pki(text: str, pki: Path) -> str:
    """``text`` with each ``{relative/path}`` replaced by that path under ``pki``."""
    return re.sub(r"\{([^}]+)\}", lambda m: str(pki / m.group(1)), text)


def tls_config(
    outdir: Path,
    docker_host: str,
    docker_tls: dict | None = None,
    name: str = "docker-tls",
    **more,
) -> dict:
    """workflow_helpers.docker_config (TINY, one epoch) with its target, named ``name``, on
    ``docker_host`` (and ``docker_tls``, ``more`` settings)."""
    config = docker_config(outdir, epochs=1)
    target = config["targets"][0]
    target.update(name=name, docker_host=docker_host, **more)
    if docker_tls is not None:
        target["docker_tls"] = docker_tls
    return config

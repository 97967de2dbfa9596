"""Remote Docker daemons only over authenticated channels (issue 31, item 3).

Plan-time checks with certificates this file makes (``cryptography``): plain ``tcp://`` to an
address that is not a loopback one is refused unless the target accepts an unauthenticated
daemon; ``docker_tls`` files (or ``DOCKER_TLS_VERIFY`` / ``DOCKER_CERT_PATH``) that are
missing, garbled or do not match are each one line naming the file. Then against a real
``dockerd --tlsverify`` (containers/second-dockerd.sh with ``DOCKERD2_TLS``) listening on
127.0.0.1 and on the gateway of its own bridge (an address that is not a loopback one): the
daemon check passes with the right certificates, names the CA or the certificate it used when
they are wrong, and a tiny training run goes through it (image shipped over TLS). Tests
needing a daemon skip without one (fail instead when EMBRYO_BENCH_REQUIRE names docker).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from embryo_bench.cli import main
from embryo_bench.docker_api import Daemon, docker_client
from embryo_bench.errors import ConfigError, DockerError
from embryo_bench.plan import Plan

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from conftest import require_or_skip  # noqa: E402
from workflow_helpers import docker_config, job_counts, snakemake  # noqa: E402

#: The TLS daemon: its port, its bridge and that bridge's gateway (the address that is not a
#: loopback one). Apart from test_docker.py's second daemon (23751, ebdocker2).
PORT = 23760
BRIDGE, GATEWAY = "ebdocker3", "172.31.251.1"
REMOTE = f"tcp://{GATEWAY}:{PORT}"
LOOPBACK = f"tcp://127.0.0.1:{PORT}"


# --- certificates --------------------------------------------------------------------------


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
      ``--tlscacert/--tlscert/--tlskey``; the certificate names 127.0.0.1 and the gateway);
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


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls(folder: Path, **changes: Path) -> dict:
    """A target's ``docker_tls`` for the files of ``folder`` (a DOCKER_CERT_PATH layout),
    with ``changes`` (key -> another path)."""
    files = {"ca_cert": "ca.pem", "client_cert": "cert.pem", "client_key": "key.pem"}
    return {k: str(changes.get(k, folder / name)) for k, name in files.items()}


def in_pki(text: str, pki: Path) -> str:
    """``text`` with each ``{relative/path}`` replaced by that path under ``pki``."""
    return re.sub(r"\{([^}]+)\}", lambda m: str(pki / m.group(1)), text)


def tls_config(outdir: Path, docker_host: str, docker_tls: dict | None = None, **more) -> dict:
    """workflow_helpers.docker_config (TINY, one epoch) with its target on ``docker_host``."""
    config = docker_config(outdir, epochs=1)
    target = config["targets"][0]
    target.update(name="docker-tls", docker_host=docker_host, **more)
    if docker_tls is not None:
        target["docker_tls"] = docker_tls
    return config


def check_config(tmp_path: Path, config: dict, capsys) -> tuple[int, str]:
    """``embryo-bench check-config`` of ``config``: (exit status, its last line)."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    status = main(["check-config", str(path)])
    captured = capsys.readouterr()
    lines = (captured.err or captured.out).strip().splitlines()
    return status, lines[-1] if lines else ""


@pytest.fixture
def no_docker_env(monkeypatch):
    for name in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- at plan time (check-config), no daemon -------------------------------------------------


def test_plain_tcp_to_another_machine_is_refused_unless_accepted(tmp_path, capsys, no_docker_env):
    """The README's own example (tcp://10.0.0.7:2376, no TLS anywhere) was "valid"."""
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376")
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert line.startswith(
        f"embryo-bench: error: {tmp_path / 'config.yaml'}: target docker-tls: docker_host "
        "tcp://10.0.0.7:2376 is plain TCP to another machine: no authentication"
    )
    assert "give docker_tls: {ca_cert, client_cert, client_key} (or set DOCKER_TLS_VERIFY=1" in line
    assert "or set accept_unauthenticated_daemon: true" in line
    config["targets"][0]["accept_unauthenticated_daemon"] = True
    assert check_config(tmp_path, config, capsys)[0] == 0
    for loopback in ("tcp://127.0.0.1:2375", "tcp://localhost:2375", "tcp://[::1]:2375"):
        config = tls_config(tmp_path / "out", loopback)
        assert check_config(tmp_path, config, capsys)[0] == 0
        assert Plan.from_config(config, hardware_check="none").targets["docker-tls"].daemon == (
            Daemon(loopback)
        )


def test_docker_host_from_the_environment_is_checked_too(tmp_path, capsys, no_docker_env):
    """A docker target without docker_host uses DOCKER_HOST: the same rule."""
    config = docker_config(tmp_path / "out")
    no_docker_env.setenv("DOCKER_HOST", "tcp://10.0.0.7:2375")
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert "target docker-1cpu: DOCKER_HOST tcp://10.0.0.7:2375 is plain TCP" in line
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    assert check_config(tmp_path, config, capsys)[0] == 0


def test_tls_files_are_resolved_and_checked_at_plan_time(pki, tmp_path, capsys, no_docker_env):
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376", tls(pki / "client"))
    assert check_config(tmp_path, config, capsys)[0] == 0
    daemon = Plan.from_config(config, hardware_check="none").targets["docker-tls"].daemon
    assert daemon == Daemon(
        "tcp://10.0.0.7:2376",
        str(pki / "client/ca.pem"),
        str(pki / "client/cert.pem"),
        str(pki / "client/key.pem"),
        "docker_tls",
    )
    assert "PRIVATE KEY" not in daemon.to_json()  # paths only


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"client_cert": "missing.pem"}, "docker_tls.client_cert {missing.pem}: no such file"),
        ({"ca_cert": "garbled.pem"}, "docker_tls.ca_cert {garbled.pem}: not a PEM certificate"),
        ({"client_cert": "garbled.pem"}, "docker_tls.client_cert {garbled.pem}: not a PEM"),
        (
            {"client_key": "other/key.pem"},
            "docker_tls.client_key {other/key.pem} is not the key of docker_tls.client_cert "
            "{client/cert.pem}",
        ),
        (
            {"client_key": "encrypted-key.pem"},
            "docker_tls.client_key {encrypted-key.pem}: not an unencrypted PEM private key",
        ),
    ],
    ids=["missing client cert", "garbled CA", "garbled cert", "key of another cert", "encrypted"],
)
def test_a_bad_tls_file_is_one_line_naming_it(pki, tmp_path, capsys, no_docker_env, changes, said):
    paths = {k: pki / v for k, v in changes.items()}
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376", tls(pki / "client", **paths))
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert line.startswith(
        f"embryo-bench: error: {tmp_path / 'config.yaml'}: target docker-tls: docker_host "
        f"tcp://10.0.0.7:2376: " + in_pki(said, pki)
    ), line


def test_the_docker_environment_gives_the_tls_files(pki, tmp_path, capsys, no_docker_env):
    """No docker_tls: DOCKER_TLS_VERIFY with DOCKER_CERT_PATH's ca.pem, cert.pem, key.pem,
    as the docker CLI reads them; a file missing there is named as such."""
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376")
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    no_docker_env.setenv("DOCKER_CERT_PATH", str(pki / "client"))
    daemon = Plan.from_config(config, hardware_check="none").targets["docker-tls"].daemon
    assert (daemon.ca_cert, daemon.client_key) == (
        str(pki / "client/ca.pem"), str(pki / "client/key.pem")
    )  # fmt: skip
    assert daemon.tls_from == "DOCKER_CERT_PATH"
    partial = tmp_path / "certs"
    partial.mkdir()
    for name in ("ca.pem", "cert.pem"):
        shutil.copy(pki / "client" / name, partial / name)
    no_docker_env.setenv("DOCKER_CERT_PATH", str(partial))
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert line.endswith(f"DOCKER_CERT_PATH's key.pem {partial / 'key.pem'}: no such file")


def test_tls_settings_that_cannot_apply_are_refused(pki, tmp_path, capsys, no_docker_env):
    config = tls_config(tmp_path / "out", "ssh://bench@gpu-box", tls(pki / "client"))
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2 and "docker_tls is for tcp:// addresses; ssh:// uses keys" in line
    # Two targets on one daemon that reach it differently.
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376", tls(pki / "client"))
    config["targets"].append(
        {**config["targets"][0], "name": "docker-tls-2", "docker_tls": tls(pki / "other")}
    )
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert "targets docker-tls and docker-tls-2: one docker_host tcp://10.0.0.7:2376" in line


# --- a real dockerd --tlsverify -------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_daemon(pki, tmp_path_factory):
    """``dockerd --tlsverify`` with the test CA's certificates (containers/second-dockerd.sh,
    DOCKERD2_TLS) at :data:`LOOPBACK` and :data:`REMOTE`: its own data root, exec root,
    bridge and ID; stopped (and its data removed) after the module. Yields a client through
    its unix socket (the test's own view of it)."""
    import docker

    try:
        docker_client(timeout=10)
    except DockerError as exc:
        require_or_skip("docker", f"no Docker daemon: {exc}")
    root = tmp_path_factory.mktemp("dockerd-tls")
    env = {
        **os.environ,
        "DOCKERD2_ROOT": str(root),
        "DOCKERD2_TLS": str(pki / "server"),
        "DOCKERD2_LISTEN": f"127.0.0.1 {GATEWAY}",
        "DOCKERD2_BRIDGE": BRIDGE,
        "DOCKERD2_GATEWAY": f"{GATEWAY}/24",
    }
    script = ["bash", str(REPO / "containers/second-dockerd.sh")]
    proc = subprocess.run([*script, "start", str(PORT)], env=env, text=True, capture_output=True)
    try:
        if proc.returncode:
            require_or_skip("docker", f"TLS dockerd did not start: {proc.stderr[-2000:]}")
        assert f"tcp://{GATEWAY}:{PORT} (TLS, --tlsverify)" in proc.stdout, proc.stdout
        yield docker.DockerClient(base_url=f"unix://{root}/docker.sock")
    finally:
        subprocess.run([*script, "stop"], env=env, capture_output=True)


def _plan(config: dict) -> Plan:
    return Plan.from_config(config, hardware_check="local")


@pytest.mark.slow
def test_the_daemon_check_passes_over_tls(tls_daemon, pki, tmp_path, no_docker_env):
    """The plan's hardware check reaches the daemon over TLS, with the target's files or the
    Docker environment's; the client it builds is that daemon's."""
    config = tls_config(tmp_path / "out", REMOTE, tls(pki / "client"))
    daemon = _plan(config).targets["docker-tls"].daemon
    assert docker_client(daemon).info()["ID"] == tls_daemon.info()["ID"]
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    no_docker_env.setenv("DOCKER_CERT_PATH", str(pki / "client"))
    plan = _plan(tls_config(tmp_path / "out", REMOTE))
    assert plan.targets["docker-tls"].daemon.tls_from == "DOCKER_CERT_PATH"
    # ship-image by hand: an address, with the environment's TLS.
    assert docker_client(REMOTE).info()["ID"] == tls_daemon.info()["ID"]
    # The environment's daemon (a docker target without docker_host, image builds).
    no_docker_env.setenv("DOCKER_HOST", REMOTE)
    _plan(docker_config(tmp_path / "out"))
    assert docker_client().info()["ID"] == tls_daemon.info()["ID"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("address", "files", "said"),
    [
        (
            REMOTE,
            {"ca_cert": "other/ca.pem"},
            "(DockerException: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable "
            "to get local issuer certificate); over TLS with docker_tls.ca_cert {other/ca.pem} "
            "and docker_tls.client_cert {client/cert.pem}",
        ),
        (
            REMOTE,
            {"client_cert": "other/cert.pem", "client_key": "other/key.pem"},
            "over TLS with docker_tls.ca_cert {client/ca.pem} and docker_tls.client_cert "
            "{other/cert.pem}",
        ),
        (REMOTE, None, "is plain TCP to another machine: no authentication"),
        (LOOPBACK, None, "that daemon speaks TLS: give the target docker_tls"),
    ],
    ids=["wrong CA", "a client the daemon does not trust", "plain tcp", "plain tcp, loopback"],
)
def test_what_fails_is_named(tls_daemon, pki, tmp_path, no_docker_env, address, files, said):
    """Each a ConfigError of one line: the certificate problems from the daemon check, naming
    the CA and client certificate it used; plain tcp:// to the gateway refused before any
    connection; plain tcp:// to the loopback address answered by an HTTPS server."""
    docker_tls = tls(pki / "client", **{k: pki / v for k, v in files.items()}) if files else None
    with pytest.raises(ConfigError) as err:
        _plan(tls_config(tmp_path / "out", address, docker_tls))
    message = str(err.value)
    assert in_pki(said, pki) in message
    assert message.startswith("target docker-tls: ") and "\n" not in message


@pytest.mark.slow
def test_snakemake_names_the_wrong_ca_in_one_line(tls_daemon, pki, tmp_path, no_docker_env):
    config = tls_config(tmp_path / "out", REMOTE, tls(pki / "client", ca_cert=pki / "other/ca.pem"))
    proc = snakemake(tmp_path, config, "-n", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"over TLS with docker_tls.ca_cert {pki / 'other/ca.pem'}" in text
    assert "Traceback" not in text and "embryo_bench/" not in text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def tls_run(tls_daemon, pki, tmp_path_factory):
    """The docker target on :data:`REMOTE` over TLS, one epoch, through the workflow: the
    image is shipped there over TLS and trained there. (work dir, config, output dir)."""
    work = tmp_path_factory.mktemp("tls-run")
    config = tls_config(work / "out", REMOTE, tls(pki / "client"))
    env = {"DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": ""}  # the target's files alone
    snakemake(work, config, env=env)
    return work, config, work / "out"


@pytest.mark.slow
def test_a_run_trains_through_the_tls_daemon(tls_run, tls_daemon, pki):
    work, config, out = tls_run
    key = "tcp-172.31.251.1-23760"
    record = json.loads((out / f"images/daemon@{key}.json").read_text())
    assert (
        Daemon.from_dict(record)
        == Plan.from_config(config, hardware_check="none").targets["docker-tls"].daemon
    )
    assert record["client_key"] == str(pki / "client/key.pem")  # the path, never the key
    sent = json.loads((out / f"images/cpu@{key}.json").read_text())
    assert sent["channel"] == "tls" and sent["shipped"] and sent["bytes"] > 1e8
    assert sent["daemon"]["id"] == tls_daemon.info()["ID"]
    assert tls_daemon.images.get(sent["image_id"])
    metrics = json.loads((out / "train/docker-tls/repeat-1/metrics.json").read_text())
    assert metrics["container"]["channel"] == "tls"
    assert metrics["container"]["docker_host"] == REMOTE
    assert metrics["container"]["daemon"]["id"] == tls_daemon.info()["ID"]
    prov = pd.read_csv(out / "figures/provenance.csv", keep_default_na=False)
    assert prov["docker_daemon"].tolist() == [tls_daemon.info()["ID"]]
    assert prov["docker_channel"].tolist() == ["tls"]
    assert prov["container_isolation"].tolist() == [
        "network none, cap_drop ALL, no-new-privileges, pids 4096"
    ]


@pytest.mark.slow
def test_a_moved_certificate_retrains_nothing(tls_run, pki, tmp_path):
    """The certificates' paths are how the daemon is reached, not what is trained: moved,
    the daemon record is written again (ship_image and train take it ancient()) and the
    figures, which show the configuration, are drawn again; no image is sent, no run
    retrains."""
    work, config, _ = tls_run
    moved = tmp_path / "moved"
    shutil.copytree(pki / "client", moved)
    config = json.loads(json.dumps(config))
    config["targets"][0]["docker_tls"] = tls(moved)
    proc = snakemake(work, config, "-n", env={"DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": ""})
    jobs = job_counts(proc.stdout)
    assert jobs == {"daemon": 1, "figures_spec": 1, "figures": 1, "all": 1}, proc.stdout[-3000:]

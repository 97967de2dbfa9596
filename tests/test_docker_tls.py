"""Remote Docker daemons only over authenticated channels, at plan time.

With certificates made by tls_helpers.make_pki (``cryptography``; conftest's ``pki``) and no
daemon: plain ``tcp://`` to an address that is not a loopback one is refused unless the
target accepts an unauthenticated daemon; ``docker_tls`` files (or ``DOCKER_TLS_VERIFY`` /
``DOCKER_CERT_PATH``) that are missing, garbled or do not match are each one line naming the
file. Against a real ``dockerd --tlsverify`` (the daemon check, its errors, a training run
through it, a moved certificate): tests/test_docker.py, whose second daemon is that daemon.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from tls_helpers import in_pki, tls, tls_config
from workflow_helpers import docker_config

from embryo_bench.cli import main
from embryo_bench.planning.plan import Plan
from embryo_bench.runners.docker_api import Daemon


def check_config(tmp_path: Path, config: dict, capsys) -> tuple[int, str]:
    """``embryo-bench check-config`` of ``config``: (exit status, its last line)."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    status = main(["check-config", str(path)])
    captured = capsys.readouterr()
    lines = (captured.err or captured.out).strip().splitlines()
    return status, lines[-1] if lines else ""


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


def test_docker_host_from_the_environment_is_checked_too(pki, tmp_path, capsys, no_docker_env):
    """A docker target without docker_host uses DOCKER_HOST: the same rules as a
    docker_host, TLS files included (DOCKER_TLS_VERIFY with a DOCKER_CERT_PATH that does not
    exist was accepted); a target's acceptance of plain TCP is for its docker_host only."""
    config = docker_config(tmp_path / "out")
    no_docker_env.setenv("DOCKER_HOST", "tcp://10.0.0.5:2376")
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert "target docker-1cpu: DOCKER_HOST tcp://10.0.0.5:2376 is plain TCP" in line
    assert "set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH, or use an ssh:// address" in line
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    no_docker_env.setenv("DOCKER_CERT_PATH", "/nonexistent")
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert line.endswith(
        "target docker-1cpu: DOCKER_HOST tcp://10.0.0.5:2376: DOCKER_CERT_PATH's ca.pem "
        "/nonexistent/ca.pem: no such file"
    ), line
    no_docker_env.setenv("DOCKER_CERT_PATH", str(pki / "client"))
    assert check_config(tmp_path, config, capsys)[0] == 0
    daemon = Plan.from_config(config, hardware_check="none").targets["docker-1cpu"].daemon
    assert (daemon.address, daemon.ca_cert) == ("tcp://10.0.0.5:2376", str(pki / "client/ca.pem"))
    config["targets"][0]["accept_unauthenticated_daemon"] = True
    status, line = check_config(tmp_path, config, capsys)
    assert status == 2
    assert "target docker-1cpu: accept_unauthenticated_daemon is for a tcp:// docker_host" in line


def test_a_client_of_the_environments_daemon_is_refused_plain_tcp(pki, no_docker_env):
    """Where a client is built (image builds, the runner of a target without docker_host):
    plain TCP to another machine in DOCKER_HOST is refused before anything is sent to it
    (it was tried), and missing TLS files are named."""
    from embryo_bench.errors import ConfigError
    from embryo_bench.runners.docker_api import docker_client

    no_docker_env.setenv("DOCKER_HOST", "tcp://10.0.0.5:2376")
    with pytest.raises(ConfigError, match=r"^DOCKER_HOST tcp://10.0.0.5:2376 is plain TCP to"):
        docker_client(None, timeout=5)
    with pytest.raises(ConfigError, match="plain TCP"):
        docker_client(Daemon(), timeout=5)
    no_docker_env.setenv("DOCKER_TLS_VERIFY", "1")
    no_docker_env.setenv("DOCKER_CERT_PATH", "/nonexistent")
    with pytest.raises(ConfigError, match="DOCKER_CERT_PATH's ca.pem /nonexistent/ca.pem: no such"):
        docker_client(None, timeout=5)


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


def test_a_plan_made_again_on_a_cluster_node_needs_no_tls_files(tmp_path, no_docker_env):
    """A cluster job parses the workflow again on its node (on_this_machine=False): the TLS
    files are resolved to the same paths but not read there (a preprocessing job needs no
    certificate); where a client of the daemon is built, they are checked."""
    from embryo_bench.errors import ConfigError
    from embryo_bench.runners.docker_api import docker_client

    missing = tmp_path / "elsewhere"
    config = tls_config(tmp_path / "out", "tcp://10.0.0.7:2376", tls(missing))
    with pytest.raises(ConfigError, match=r"docker_tls.ca_cert .*/elsewhere/ca.pem: no such file"):
        Plan.from_config(config, hardware_check="none")
    plan = Plan.from_config(config, hardware_check="none", on_this_machine=False)
    daemon = plan.targets["docker-tls"].daemon
    assert (daemon.ca_cert, daemon.client_key) == (
        str(missing / "ca.pem"),
        str(missing / "key.pem"),
    )
    with pytest.raises(ConfigError, match=r"docker_tls.ca_cert .*/elsewhere/ca.pem: no such file"):
        docker_client(daemon, timeout=5)


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

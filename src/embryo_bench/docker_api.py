"""Access to Docker daemons through the Docker SDK for Python: a checked client for a daemon
address, and who a daemon is. Apart from image building (:mod:`embryo_bench.containers`), so
that the code a host training run hashes does not include the image builds (issue 24).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from .errors import ConfigError, DockerError

#: The forms a ``docker_host`` may take.
ADDRESS_FORMS = "tcp://HOST:PORT, ssh://[USER@]HOST[:PORT] or unix:///PATH"


def check_address(docker_host: str) -> None:
    """Check that ``docker_host`` is a Docker daemon address the SDK can use (issue 25: a
    malformed one was reported as "no Docker daemon answers", and ``ssh://`` without a host
    quietly tried 127.0.0.1:22).

    Raises:
        ConfigError: an unknown scheme, no host (tcp, ssh), a port that is not a number in
            1..65535, or no socket path (unix); the message names the address and the forms.
    """
    try:
        parts = urlsplit(docker_host)
        port = parts.port  # ValueError when not a number or out of range
        host = parts.hostname
    except ValueError as exc:
        raise ConfigError(
            f"docker_host {docker_host!r} cannot be parsed ({exc}); expected {ADDRESS_FORMS}"
        ) from None
    if parts.scheme not in ("tcp", "ssh", "unix"):
        raise ConfigError(
            f"docker_host {docker_host!r}: scheme {parts.scheme or 'missing'!r}; "
            f"expected {ADDRESS_FORMS}"
        )
    if parts.scheme == "unix":
        if not parts.path:
            raise ConfigError(f"docker_host {docker_host!r}: no socket path; expected unix:///PATH")
        return
    if not host:
        raise ConfigError(f"docker_host {docker_host!r}: no host; expected {ADDRESS_FORMS}")
    if port == 0:
        raise ConfigError(f"docker_host {docker_host!r}: port 0; expected {ADDRESS_FORMS}")


def docker_client(docker_host: str | None = None, timeout: int = 120):
    """A Docker SDK client for ``docker_host`` (``unix://``, ``tcp://``, ``ssh://``) or, when
    None/empty, for the environment (``DOCKER_HOST`` or the local socket), checked with a ping.

    Raises:
        DockerError: the daemon does not answer; the message names the address.
    """
    # The SDK only when a daemon is asked for: planning host-only workflows, and every
    # training, import this module without needing it.
    import docker

    address = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = (
            docker.DockerClient(base_url=docker_host, timeout=timeout)
            if docker_host
            else docker.from_env(timeout=timeout)
        )
        client.ping()
    except Exception as exc:  # DockerException, requests errors, paramiko errors, ...
        hint = (
            "over SSH the key and the host's key must be in ~/.ssh (config, known_hosts) and "
            "that user must be able to run `docker system dial-stdio` there"
            if address.startswith("ssh://")
            else "start dockerd or set DOCKER_HOST / the target's docker_host"
        )
        raise DockerError(
            f"no Docker daemon answers at {address} ({type(exc).__name__}: "
            f"{str(exc).strip() or 'no message'}); {hint}"
        ) from exc
    return client


def daemon_identity(info: dict) -> dict:
    """Who a Docker daemon is, from its ``info()``: the machine a container ran on.

    Returns:
        dict with ``id`` (the daemon's ID), ``name`` (its host name), ``os``, ``kernel``,
        ``ncpu``, ``memory_mib`` (MemTotal / 2**20), ``server_version``, ``storage_driver``,
        ``cgroup_version`` and ``gpu_runtime`` (True when an ``nvidia`` runtime is there).
    """
    return {
        "id": info.get("ID", ""),
        "name": info.get("Name", ""),
        "os": info.get("OperatingSystem", ""),
        "kernel": info.get("KernelVersion", ""),
        "ncpu": info.get("NCPU", 0),
        "memory_mib": round(info.get("MemTotal", 0) / 2**20),
        "server_version": info.get("ServerVersion", ""),
        "storage_driver": info.get("Driver", ""),
        "cgroup_version": info.get("CgroupVersion", ""),
        "gpu_runtime": "nvidia" in (info.get("Runtimes") or {}),
    }

"""The Docker daemons the docker targets run on, and the records their runs wait for.

A target with a ``docker_host`` has its image sent to that daemon and its runs wait for two
records, both named by the daemon's file key (:func:`daemon_key`): the image on that daemon
and how the daemon is reached (its address and TLS files). The daemons are checked before
any job (:func:`check_daemons`): one address, one file key, one way to reach it.
"""

from __future__ import annotations

import re

from ..errors import ConfigError
from ..runners import docker_api
from ..vocabulary import layout
from .targets import Target


def daemon_key(docker_host: str) -> str:
    """A file-name-safe key of a Docker daemon address, e.g. ``tcp://127.0.0.1:23750`` ->
    ``tcp-127.0.0.1-23750``, ``ssh://bench@gpu-box`` -> ``ssh-bench-gpu-box``."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", docker_host).strip("-")


def check_daemons(targets: dict[str, Target]) -> dict[str, docker_api.Daemon]:
    """:func:`daemon_key` -> how the daemon of every ``docker_host`` a running target
    names is reached (:class:`embryo_bench.runners.docker_api.Daemon`), checked.

    Args:
        targets: name -> every target that runs.

    Raises:
        ConfigError: two addresses have the same key, or targets on one daemon reach it
            differently (``docker_tls``, ``accept_unauthenticated_daemon``).
    """
    out: dict[str, docker_api.Daemon] = {}
    names: dict[str, str] = {}
    for t in targets.values():
        if t.runner == "docker" and t.docker_host:
            key = daemon_key(t.docker_host)
            seen = out.setdefault(key, t.daemon)
            first = names.setdefault(key, t.name)
            if seen.address != t.docker_host:
                raise ConfigError(
                    f"targets: docker_host {t.docker_host} and {seen.address} have the "
                    f"same file key {key}; write one of them differently"
                )
            if seen != t.daemon:
                raise ConfigError(
                    f"targets {first} and {t.name}: one docker_host {t.docker_host} reached "
                    f"two ways ({docker_api.TLS_SETTING}, "
                    f"{docker_api.UNAUTHENTICATED_SETTING}); give them the same settings"
                )
    return out


def image_record(outdir: str, target: Target) -> list[str]:
    """The image record a docker target's runs need ([] for host targets): the build's
    record, or for a target with a ``docker_host`` the record of that image on that
    daemon (``images/<image>@<daemon_key>.json``, written by the rule that sends it); paths
    under ``outdir``."""
    if target.runner != "docker":
        return []
    if target.docker_host:
        key = daemon_key(target.docker_host)
        return [f"{outdir}/{layout.image_record(target.image, key)}"]
    return [f"{outdir}/{layout.image_record(target.image)}"]


def daemon_record(outdir: str, target: Target) -> list[str]:
    """The daemon record a docker target with a ``docker_host`` needs (how its daemon is
    reached: :class:`embryo_bench.runners.docker_api.Daemon`, written by the rule ``daemon``),
    a path under ``outdir``; [] for other targets."""
    if target.runner != "docker" or not target.docker_host:
        return []
    return [f"{outdir}/{layout.daemon_record(daemon_key(target.docker_host))}"]

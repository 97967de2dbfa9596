"""Whether each hardware target can run, checked before any job starts.

Where the jobs run decides what is checked (config ``hardware_check``):

- ``local``: this host (the cores this process may use, NVML GPUs) and, for docker
  targets, the Docker daemon the target names (ping, its ``NCPU``).
- ``slurm``: the cluster's nodes as ``sinfo`` reports them (CPUs, memory, GPU GRES). A
  target runs if one node has all it asks for. The submitting host's own cores, GPUs and
  Docker daemon do not matter there; a docker target's daemon is checked on the node when
  its job starts (:func:`embryo_bench.docker_runner.check_hardware`).
- ``none``: nothing is checked (the scheduler or the job reports what is missing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from .errors import ConfigError, EmbryoBenchError

#: Memory a docker target's container gets when the target sets none (``mem_limit``).
DEFAULT_CONTAINER_MEMORY = "4g"
#: Memory a cluster reserves for a host-runner training job whose target sets none.
DEFAULT_HOST_MEMORY = "8g"


def size_mib(size: str) -> int:
    """A Docker memory size ("512m", "3g", "2048k"; Docker's own parser,
    ``docker.utils.parse_bytes``, so it means what ``mem_limit`` means) in MiB, rounded up.

    Raises:
        ConfigError: Docker cannot parse the size, or it is empty or negative.
    """
    from docker.errors import DockerException
    from docker.utils import parse_bytes

    try:
        value = parse_bytes(str(size)) if str(size).strip() else -1
    except DockerException:
        value = -1
    if value < 0:
        raise ConfigError(f"size {size!r}: expected a Docker memory size such as 512m or 4g")
    return -(-int(value) // (1024 * 1024))


def target_memory_mib(target: dict) -> int:
    """Memory a target's training job needs, MiB: its ``memory`` (the container limit of
    docker targets), else 4 GiB for docker targets (the runner's default ``mem_limit``) and
    8 GiB for host targets."""
    default = DEFAULT_CONTAINER_MEMORY if target["runner"] == "docker" else DEFAULT_HOST_MEMORY
    return size_mib(target.get("memory", default))


@dataclass(frozen=True)
class Node:
    """One machine jobs can run on: usable CPUs, memory (MiB, None if unknown), GPUs."""

    name: str
    cpus: int
    memory_mib: int | None
    gpus: int


class ClusterError(EmbryoBenchError):
    """The cluster could not be asked for its nodes (sinfo missing, failing or garbled)."""


def gres_gpus(gres: str) -> int:
    """GPUs in a Slurm GRES string, e.g. ``gpu:a100:4(S:0-1),gpu:v100:2`` -> 6; ``(null)``
    -> 0. A ``gpu`` entry without a count counts as 1 (Slurm's own default)."""
    total = 0
    for entry in re.split(r",(?![^()]*\))", gres or ""):
        entry = re.sub(r"\(.*?\)", "", entry).strip()
        parts = entry.split(":")
        if parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        m = re.match(r"^(\d+)", count)
        total += int(m.group(1)) if m else 1
    return total


def parse_sinfo(text: str) -> list[Node]:
    """Nodes from ``sinfo -h -N -o '%N|%c|%m|%G'`` output (one line per node and partition;
    duplicates merged).

    Raises:
        ClusterError: a line does not have the four ``|``-separated fields.
    """
    nodes: dict[str, Node] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != 4 or not fields[1].strip().rstrip("+").isdigit():
            raise ClusterError(
                f"sinfo line {number}: expected 'node|cpus|memory MB|gres', got {line!r}"
            )
        name, cpus, memory, gres = (f.strip() for f in fields)
        mem = memory.rstrip("+")
        nodes[name] = Node(
            name=name,
            cpus=int(cpus.rstrip("+")),
            memory_mib=int(mem) if mem.isdigit() else None,
            gpus=gres_gpus(gres),
        )
    return list(nodes.values())


def slurm_nodes(sinfo: str = "sinfo") -> list[Node]:
    """The Slurm cluster's nodes, from ``sinfo``.

    Raises:
        ClusterError: sinfo is not installed, fails (e.g. slurmctld down) or reports no node.
    """
    exe = shutil.which(sinfo)
    if exe is None:
        raise ClusterError(
            f"hardware_check: slurm needs {sinfo!r} on PATH to see the cluster's nodes; "
            "install Slurm's client tools or set hardware_check: none"
        )
    try:
        proc = subprocess.run(
            [exe, "-h", "-N", "-o", "%N|%c|%m|%G"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{sinfo} did not answer within 60 s (is slurmctld up?)") from exc
    if proc.returncode != 0:
        raise ClusterError(f"{sinfo} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    nodes = parse_sinfo(proc.stdout)
    if not nodes:
        raise ClusterError(f"{sinfo} lists no node")
    return nodes


def local_node() -> Node:
    """This host as a :class:`Node`: the cores this process may use (affinity), physical
    memory (/proc/meminfo, None elsewhere) and NVML's GPU count."""
    from .provenance import gpu_names

    memory = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) // 1024
    except OSError:
        pass
    return Node(
        name="this host",
        cpus=len(os.sched_getaffinity(0)),
        memory_mib=memory,
        gpus=len(gpu_names()),
    )


def why_not_on_nodes(target: dict, nodes: list[Node]) -> str | None:
    """Why no Slurm node can hold ``target`` (its cpus, memory and GPUs together), or None
    if one can."""
    need_mem = target_memory_mib(target)
    need_gpus = int(target.get("gpus", 0))
    for node in nodes:
        if (
            node.cpus >= target["cpus"]
            and (node.memory_mib is None or node.memory_mib >= need_mem)
            and node.gpus >= need_gpus
        ):
            return None
    biggest = ", ".join(
        f"{n.name}: {n.cpus} cpus, {n.memory_mib} MiB, {n.gpus} GPUs" for n in nodes[:5]
    )
    return (
        f"asks for {target['cpus']} cpus, {need_mem} MiB and {need_gpus} GPUs on one node; "
        f"no Slurm node has that (sinfo: {biggest}{', ...' if len(nodes) > 5 else ''})"
    )


def why_not_here(target: dict, host: Node, daemon_info: dict | None) -> str | None:
    """Why ``target`` cannot run on this host, or None if it can. ``daemon_info`` is the
    Docker daemon's ``info()`` for docker targets (reachability is checked by the caller)."""
    if target["runner"] == "docker":
        cores, where = (daemon_info or {}).get("NCPU", 0), "the Docker daemon has"
    else:
        cores, where = host.cpus, "this host has"
    if target["cpus"] > cores:
        return f"asks for {target['cpus']} cpus, {where} {cores}"
    if target.get("gpus", 0) > host.gpus and not target.get("docker_host"):
        return f"asks for {target['gpus']} GPUs, this host has {host.gpus} (NVML)"
    return None

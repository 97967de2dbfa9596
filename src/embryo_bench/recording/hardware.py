"""The machines runs happen on: facts about this host, and whether a target can run where the
jobs run.

Where the jobs run decides what is checked before any job starts (config ``hardware_check``,
the policy in :func:`embryo_bench.planning.targets.resolve_targets`):

- ``local``: this host (the cores this process may use, NVML GPUs) and, for docker
  targets, the Docker daemon the target names (ping, its ``NCPU``): :class:`LocalProbe`.
- ``slurm``: the cluster's nodes as ``sinfo`` reports them (CPUs, memory, GPU GRES). A
  target runs if one node has all it asks for: :class:`SlurmProbe`. A docker target's daemon
  is checked on the node when its job starts, with the same :func:`why_not`.
- ``none``: nothing is checked (the scheduler or the job reports what is missing).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import ConfigError, DockerError, EmbryoBenchError


class Needs(Protocol):
    """What a check needs of a target or run spec."""

    name: str
    runner: str
    cpus: int
    gpus: int
    docker_host: str
    memory_mib: int


class Probed(Needs, Protocol):
    """What the ``local`` check (:class:`LocalProbe`) needs of a target: :class:`Needs` and,
    for a docker target, how its daemon is reached (a
    :class:`embryo_bench.planning.targets.Target`'s ``daemon``, an
    :class:`embryo_bench.runners.docker_api.Daemon`; None for a host target). A run spec has
    no ``daemon``: it is not probed."""

    daemon: Hashable | None


# --- facts about this host -----------------------------------------------------------------


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else :func:`platform.processor`."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


#: CPU flags that decide which kernels the frameworks run (SIMD width, FMA, matrix units).
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "amx_tile", "amx_bf16")


def cpu_flags() -> list[str]:
    """The CPU's SIMD-relevant flags from /proc/cpuinfo (:data:`SIMD_FLAGS` and every
    ``avx512*``), sorted; [] where /proc/cpuinfo is absent."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = line.split(":", 1)[1].split()
                return sorted(f for f in have if f in SIMD_FLAGS or f.startswith("avx512"))
    except OSError:
        pass
    return []


def cpu_id() -> str:
    """The CPU's vendor and CPUID family/model/stepping from /proc/cpuinfo, e.g.
    "GenuineIntel 6/143/8": it tells two CPUs apart where a VM's model name does not
    ("Intel(R) Xeon(R) Processor"); "unknown" where /proc/cpuinfo is absent."""
    fields = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if not key:  # the first processor's block ends
                break
            fields.setdefault(key, value.strip())
    except OSError:
        return "unknown"
    if "vendor_id" not in fields:
        return "unknown"
    numbers = "/".join(fields.get(k, "?") for k in ("cpu family", "model", "stepping"))
    return f"{fields['vendor_id']} {numbers}"


def this_machine() -> dict:
    """This machine as a machine baseline records it (``embryo-bench calibrate``;
    :mod:`embryo_bench.recording.baseline` compares two) and as every run's provenance
    records it (:func:`embryo_bench.reporting.runs.machine_identity` reads it back): hostname,
    cpu_model, cpu_id (:func:`cpu_id`), cpu_flags (:func:`cpu_flags`), host_cores (logical
    CPUs of the machine, not those of a run after pinning) and memory_mib (physical memory,
    MiB; :func:`memory_mib`)."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_id": cpu_id(),
        "cpu_flags": cpu_flags(),
        "host_cores": os.cpu_count(),
        "memory_mib": memory_mib(),
    }


def visible_cores() -> int:
    """Cores this process may run on (scheduler affinity), not the host's total."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 0


def run_cores(cpus: float) -> list[int]:
    """The cores a run of ``cpus`` CPUs is pinned to: the first ceil(cpus) cores this process
    may run on (the trainer pins itself to these,
    :func:`embryo_bench.training.backend.limit_threads`;
    a container on this machine sees the same cores, so its runner samples them)."""
    import math

    return sorted(os.sched_getaffinity(0))[: max(1, math.ceil(cpus))]


def cpu_quota() -> float | None:
    """The cgroup CPU quota of this process in cores (quota / period), or None when
    unlimited or unreadable (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``)."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        base = Path("/sys/fs/cgroup/cpu")
        quota = int((base / "cpu.cfs_quota_us").read_text())
        period = int((base / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


def memory_mib() -> int | None:
    """Physical memory of this host in MiB (/proc/meminfo), None where unreadable."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def _nvml(query, fallback):
    """``query(pynvml)`` between nvmlInit and nvmlShutdown; ``fallback`` without pynvml or a
    driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver
        return fallback
    try:
        return query(pynvml)
    finally:
        pynvml.nvmlShutdown()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_names() -> list[str]:
    """Names of the NVIDIA GPUs visible through NVML; [] without a driver or pynvml."""
    return _nvml(
        lambda nv: [
            _text(nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(i)))
            for i in range(nv.nvmlDeviceGetCount())
        ],
        [],
    )


def gpu_driver() -> str:
    """NVIDIA driver version from NVML, or "none" without a driver or pynvml."""

    def query(nv):
        try:
            return _text(nv.nvmlSystemGetDriverVersion())
        except Exception:
            return "unknown"

    return _nvml(query, "none")


def _version_text(version: int) -> str:
    """NVML's CUDA version number as text: 13000 -> "13.0", 12040 -> "12.4"."""
    return f"{version // 1000}.{version % 1000 // 10}"


def gpu_identity(indices: list[int]) -> list[dict]:
    """What NVML says of each GPU a run was given (its identity, recorded with the run):
    index (NVML's), name, uuid, memory_total_mib (MiB), compute_capability ("9.0"),
    driver_version and cuda_driver_version (the newest CUDA the driver supports, "13.0");
    a reading the GPU or driver does not give is None. [] without a driver or pynvml, or
    for no indices.

    Raises:
        nothing: an index NVML does not know gives ``{"index": i, "error": "..."}``.
    """

    def query(nv):
        def read(fn, *args):
            try:
                return fn(*args)
            except Exception:  # a reading this GPU or driver does not give
                return None

        driver = read(nv.nvmlSystemGetDriverVersion)
        cuda = read(nv.nvmlSystemGetCudaDriverVersion)
        out = []
        for i in indices:
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                out.append({"index": i, "error": f"NVML has no GPU {i}: {exc}"})
                continue
            memory = read(nv.nvmlDeviceGetMemoryInfo, h)
            capability = read(nv.nvmlDeviceGetCudaComputeCapability, h)
            uuid = read(nv.nvmlDeviceGetUUID, h)
            out.append(
                {
                    "index": i,
                    "name": _text(nv.nvmlDeviceGetName(h)),
                    "uuid": None if uuid is None else _text(uuid),
                    "memory_total_mib": None if memory is None else memory.total / 2**20,
                    "compute_capability": (
                        None if capability is None else f"{capability[0]}.{capability[1]}"
                    ),
                    "driver_version": None if driver is None else _text(driver),
                    "cuda_driver_version": None if cuda is None else _version_text(cuda),
                }
            )
        return out

    return _nvml(query, []) if indices else []


def nvml_index_of(uuid: str) -> int | None:
    """NVML's index of the GPU with this UUID (``GPU-...``, as CUDA_VISIBLE_DEVICES may name
    it), or None where NVML does not know it or is absent."""

    def query(nv):
        try:
            return int(nv.nvmlDeviceGetIndex(nv.nvmlDeviceGetHandleByUUID(uuid)))
        except Exception:
            return None

    return _nvml(query, None)


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
    except (DockerException, ValueError, OverflowError):
        # Docker reads the digits as a float: "nang" and "infg" fail in its int().
        value = -1
    if value < 0:
        raise ConfigError(f"size {size!r}: expected a Docker memory size such as 512m or 4g")
    return -(-int(value) // (1024 * 1024))


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
    memory and NVML's GPU count."""
    return Node("this host", visible_cores(), memory_mib(), len(gpu_names()))


def why_not_on_nodes(target: Needs, nodes: list[Node]) -> str | None:
    """Why no Slurm node can hold ``target`` (its cpus, memory and GPUs together), or None
    if one can."""
    need_mem = target.memory_mib
    for node in nodes:
        if (
            node.cpus >= target.cpus
            and (node.memory_mib is None or node.memory_mib >= need_mem)
            and node.gpus >= target.gpus
        ):
            return None
    biggest = ", ".join(
        f"{n.name}: {n.cpus} cpus, {n.memory_mib} MiB, {n.gpus} GPUs" for n in nodes[:5]
    )
    return (
        f"asks for {target.cpus} cpus, {need_mem} MiB and {target.gpus} GPUs on one node; "
        f"no Slurm node has that (sinfo: {biggest}{', ...' if len(nodes) > 5 else ''})"
    )


def why_not(target: Needs, host: Node, daemon_info: dict | None = None) -> str | None:
    """Why ``target`` cannot run here, or None if it can: checked before any job (planning)
    and again by the docker runner right before it starts a container.

    Args:
        target: a :class:`embryo_bench.planning.targets.Target` or
        :class:`embryo_bench.vocabulary.spec.RunSpec`.
        host: this host (:func:`local_node`).
        daemon_info: the Docker daemon's ``info()`` (docker targets; reachability is
            checked by the caller).

    Cores: a docker target's daemon must have its cpus (``NCPU``), a host target this
    process's visible cores. GPUs: this host's NVML GPUs, or for a remote daemon
    (``docker_host``) an ``nvidia`` runtime there.
    """
    if target.runner == "docker":
        cores, where = (daemon_info or {}).get("NCPU", 0), "the Docker daemon has"
    else:
        cores, where = host.cpus, "this host has"
    if target.cpus > cores:
        return f"asks for {target.cpus} cpus, {where} {cores}"
    if target.gpus > 0:
        if target.runner == "docker" and target.docker_host:
            if "nvidia" not in (daemon_info or {}).get("Runtimes", {}):
                return (
                    f"asks for {target.gpus} GPUs; the Docker daemon at {target.docker_host} "
                    "has no nvidia runtime"
                )
        elif target.gpus > host.gpus:
            return f"asks for {target.gpus} GPUs, this host has {host.gpus} (NVML)"
    return None


class LocalProbe:
    """The ``local`` hardware check: :func:`why_not` against this host and, for docker
    targets (:class:`embryo_bench.planning.targets.Target`), the daemon each reaches (its
    ``daemon``: address and TLS files), asked once per daemon.

    Args:
        host: this host (default :func:`local_node`).
        daemon_info: a daemon's ``info()`` from how a target reaches it
            (:func:`embryo_bench.runners.docker_api.daemon_info`); raises
            :class:`embryo_bench.errors.DockerError` when it does not answer.
    """

    def __init__(
        self, host: Node | None = None, *, daemon_info: Callable[[Hashable], dict]
    ) -> None:
        self.host = host or local_node()
        self._daemon_info = daemon_info
        self._daemons: dict[Hashable, tuple[dict | None, str | None]] = {}

    def daemon(self, daemon: Hashable) -> tuple[dict | None, str | None]:
        """(the daemon's info, None), or (None, why it does not answer)."""
        if daemon not in self._daemons:
            try:
                self._daemons[daemon] = (self._daemon_info(daemon), None)
            except DockerError as exc:
                self._daemons[daemon] = (None, str(exc))
        return self._daemons[daemon]

    def __call__(self, target: Probed) -> str | None:
        info = None
        if target.runner == "docker":
            info, error = self.daemon(target.daemon)
            if error:
                return error
        return why_not(target, self.host, info)


class SlurmProbe:
    """The ``slurm`` hardware check: :func:`why_not_on_nodes` against the cluster's nodes."""

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes

    def __call__(self, target: Needs) -> str | None:
        return why_not_on_nodes(target, self.nodes)

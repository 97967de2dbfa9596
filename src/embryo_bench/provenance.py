"""What a measurement was taken on: CPU, cores, GPUs, library versions, commit, dataset."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from .backend import backend_name, framework_versions


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else :func:`platform.processor`."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def visible_cores() -> int:
    """Cores this process may run on (scheduler affinity), not the host's total."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 0


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


def gpu_names() -> list[str]:
    """Names of the NVIDIA GPUs visible through NVML; [] without a driver or pynvml."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver: no GPUs
        return []
    try:
        names = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else name)
        return names
    finally:
        pynvml.nvmlShutdown()


def gpu_driver() -> str:
    """NVIDIA driver version from NVML, or "none" without a driver or pynvml."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver
        return "none"
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        return "unknown"
    finally:
        pynvml.nvmlShutdown()


def git_commit(cwd: str | Path | None = None) -> str:
    """HEAD commit of the working tree (suffixed ``-dirty`` with local changes), or
    "unknown" outside a git checkout. ``EMBRYO_BENCH_GIT_COMMIT`` (set by the docker runner
    for the container, which has no checkout) takes precedence."""
    if os.environ.get("EMBRYO_BENCH_GIT_COMMIT"):
        return os.environ["EMBRYO_BENCH_GIT_COMMIT"]
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        return rev + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def collect(seed: int, dataset: dict) -> dict:
    """Provenance dict for ``metrics.json``.

    Args:
        seed: the run's random seed.
        dataset: the source description written by the index stage (name, synthetic flag,
            sha256 or "synthetic").

    Returns:
        dict with cpu_model, visible_cores (after pinning), host_cores, cpu_quota_cores
        (cgroup quota in cores, None if unlimited), gpus (names), gpu_driver,
        python, platform, keras_backend, versions (distribution -> version), seed,
        git_commit, dataset, container_image and scheduler (:func:`scheduler_job`).
    """
    return {
        "cpu_model": cpu_model(),
        "visible_cores": visible_cores(),
        "host_cores": os.cpu_count(),
        "cpu_quota_cores": cpu_quota(),
        "gpus": gpu_names(),
        "gpu_driver": gpu_driver(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "keras_backend": backend_name(),
        "versions": framework_versions(),
        "seed": seed,
        "git_commit": git_commit(),
        "dataset": dataset,
        "container_image": os.environ.get("EMBRYO_BENCH_IMAGE", ""),
        "scheduler": scheduler_job(),
    }


#: Slurm's job environment (sbatch/srun set these) -> provenance key.
SLURM_ENV = {
    "SLURM_JOB_ID": "job_id",
    "SLURM_JOB_PARTITION": "partition",
    "SLURM_JOB_NODELIST": "nodes",
    "SLURM_CPUS_PER_TASK": "cpus_per_task",
    "SLURM_MEM_PER_NODE": "mem_per_node_mib",
    "SLURM_JOB_GPUS": "gpus",
    "SLURM_CLUSTER_NAME": "cluster",
}


def scheduler_job(environ: dict | None = None) -> dict | None:
    """The batch scheduler's view of this run: ``{"name": "slurm", "job_id": ..., "partition":
    ..., "nodes": ..., "cpus_per_task": ..., "mem_per_node_mib": ..., ...}`` from the Slurm
    job environment (only the variables present), or None outside a Slurm job."""
    env = os.environ if environ is None else environ
    if "SLURM_JOB_ID" not in env:
        return None
    job = {"name": "slurm"}
    for var, key in SLURM_ENV.items():
        if var in env:
            value = env[var]
            job[key] = int(value) if value.isdigit() else value
    return job

"""What a measurement was taken on: CPU, cores, GPUs (facts from
:mod:`embryo_bench.recording.hardware`),
library versions, commit, dataset, the batch scheduler's job."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from .hardware import cpu_quota, gpu_driver, gpu_names, this_machine, visible_cores


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


def collect(seed: int, dataset: dict, keras_backend: str, versions: dict[str, str]) -> dict:
    """Provenance dict for ``metrics.json``.

    Args:
        seed: the run's random seed.
        dataset: the source description written by the index stage (name, synthetic flag,
            sha256 or "synthetic").
        keras_backend: the Keras backend the run trains on
            (:func:`embryo_bench.training.backend.backend_name`).
        versions: distribution -> version of the frameworks
            (:func:`embryo_bench.training.backend.framework_versions`).

    Returns:
        dict with :func:`embryo_bench.recording.hardware.this_machine`'s keys, as a machine baseline
        records them (:func:`embryo_bench.reporting.runs.run_machine` reads them back): hostname
        (inside a container: the container's, see the runner's ``container.daemon`` for the
        machine), cpu_model, cpu_id, cpu_flags (SIMD), host_cores, memory_mib (MiB); then
        visible_cores (after pinning),
        cpu_quota_cores (cgroup quota in cores, None if unlimited), gpus (names), gpu_driver,
        python, platform, keras_backend, versions (distribution -> version), seed,
        git_commit, dataset, container_image, scheduler (:func:`scheduler_job`) and
        packages (:func:`installed_packages`: the whole environment, to compare runs made
        on different machines).
    """
    return {
        **this_machine(),
        "visible_cores": visible_cores(),
        "cpu_quota_cores": cpu_quota(),
        "gpus": gpu_names(),
        "gpu_driver": gpu_driver(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "keras_backend": keras_backend,
        "versions": versions,
        "seed": seed,
        "git_commit": git_commit(),
        "dataset": dataset,
        "container_image": os.environ.get("EMBRYO_BENCH_IMAGE", ""),
        "scheduler": scheduler_job(),
        "packages": installed_packages(),
    }


def installed_packages() -> list[str]:
    """Every distribution installed in this interpreter's environment as ``name==version``
    (names normalised as in PEP 503, sorted): the equivalent of ``pip freeze``, read with
    importlib.metadata."""
    import importlib.metadata as md

    from packaging.utils import canonicalize_name

    found = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if name:
            found[canonicalize_name(name)] = dist.version
    return [f"{n}=={v}" for n, v in sorted(found.items())]


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

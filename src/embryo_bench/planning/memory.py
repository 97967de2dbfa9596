"""Memory limits a job runs under, and the refusal of a job that would hold more.

A job's need (:class:`Need`) is an estimate and a lower bound of what it holds
(:mod:`embryo_bench.planning.bounds` for the paper's jobs,
:mod:`embryo_bench.planning.workload_bounds` for every other workload's); it is checked
against each limit the job runs under (:func:`memory_limits`: a docker target's container
limit, what a Slurm cluster reserves, this machine's memory) by :func:`check_need`, and a
docker target's limit itself against what Docker can apply (:func:`check_containers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..vocabulary.units import MIB, size_text

#: Memory a trainer needs before any data or model of ours, MiB: TensorFlow's own. Measured
#: on the cpu image (TensorFlow 2.21) with the smallest model the tests train (16 px input,
#: 1,105,796 parameters, 160 images of 16 px): killed for memory at a 300m limit, trained at
#: 330m, 2026-11-25. A lower bound for any run.
TRAINER_BASE_MIB = 300
#: Docker's smallest memory limit (the daemon, 20.10: "Minimum memory limit allowed is
#: 6MB"); 0 means no limit at all.
DOCKER_MIN_MEMORY_MIB = 6


@dataclass(frozen=True)
class Need:
    """What a job holds in memory at least (an estimate, a lower bound)."""

    job: str
    bytes: float
    detail: str
    fix: str


def memory_limits(target, hardware_check: str, machine_mib: int | None) -> list[tuple[int, str]]:
    """(MiB, description) of each memory limit a target's trainer runs under: a docker
    target's ``memory`` (its container's limit), a host target's ``memory`` when a Slurm
    cluster reserves it, and this machine's memory when the jobs run here (``local``) and
    the container runs on this machine."""
    limits = []
    if target.runner == "docker":
        limits.append((target.memory_mib, f"its memory limit is {target.memory}"))
    elif hardware_check == "slurm":
        limits.append(
            (target.memory_mib, f"its memory is {target.memory} (what the cluster reserves)")
        )
    here = target.runner == "host" or not target.docker_host
    if hardware_check == "local" and here and machine_mib:
        limits.append((machine_mib, machine_text(machine_mib)))
    return limits


def check_containers(targets: dict) -> None:
    """Refuse a docker target's memory limit that Docker cannot apply: 0 (Docker reads it as
    no limit at all) or below :data:`DOCKER_MIN_MEMORY_MIB`.

    Args:
        targets: name -> :class:`embryo_bench.planning.targets.Target` of every target that runs.

    Raises:
        ConfigError: naming the target and its memory.
    """
    for t in targets.values():
        if t.runner != "docker":
            continue
        if t.memory_mib == 0:
            raise ConfigError(
                f"target {t.name}: memory {t.memory}: Docker reads 0 as no limit at all (the "
                f"run would record {t.memory}); give a limit, e.g. 4g"
            )
        if t.memory_mib < DOCKER_MIN_MEMORY_MIB:
            raise ConfigError(
                f"target {t.name}: memory {t.memory}: below Docker's minimum memory limit "
                f"({DOCKER_MIN_MEMORY_MIB} MiB), and a trainer needs more than "
                f"{TRAINER_BASE_MIB} MiB; give e.g. 4g"
            )


def check_need(need: Need, limit_mib: int, where: str) -> None:
    """Refuse ``need`` above ``limit_mib``.

    Raises:
        ConfigError: "<job> would hold at least <size> (<detail>; an estimate, a lower
            bound); <where>: <fix>".
    """
    if need.bytes > limit_mib * MIB:
        raise ConfigError(
            f"{need.job} would hold at least {size_text(need.bytes)} ({need.detail}; an "
            f"estimate, a lower bound); {where}: {need.fix}"
        )


def machine_text(machine_mib: int) -> str:
    """ "this machine has <size>", for a message."""
    return f"this machine has {size_text(machine_mib * MIB)}"

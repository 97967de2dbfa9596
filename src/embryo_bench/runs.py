"""Which training runs a config asks for: hardware targets, sweep points and repeats.

A *run* is one training of the model: a target (a machine from ``targets:``, or a point of
a ``sweeps:`` entry derived from one) and a repeat number 1..N. Each run is its own cached
Snakemake job writing ``train/<target>/repeat-<k>/``; repeat k trains with seed
``train.seed + k - 1`` (MLPerf-style repeated runs, reported as median and min-max).
"""

from __future__ import annotations

import itertools

from .errors import ConfigError

#: Backends whose packages the project's container images install.
IMAGE_BACKENDS = {"tensorflow"}


def repeats_of(target: dict, default: int) -> int:
    """Repeats of a target: its own ``repeats``, else the config's ``train.repeats``."""
    return int(target.get("repeats", default))


def run_seed(base_seed: int, repeat: int) -> int:
    """Seed of repeat ``repeat`` (1-based): ``base_seed + repeat - 1``.

    Raises:
        ValueError: repeat < 1.
    """
    if repeat < 1:
        raise ValueError(f"repeat numbers start at 1, got {repeat}")
    return base_seed + repeat - 1


def sweep_point_name(base: str, batch_size: int, threads: int) -> str:
    """Name of a sweep point's derived target, e.g. ``host-1cpu.bs64-t2``."""
    return f"{base}.bs{batch_size}-t{threads}"


def expand_sweeps(sweeps: list[dict], targets: dict[str, dict], train: dict) -> dict[str, dict]:
    """The derived targets of every ``sweeps:`` entry (seed 003: batch size and threads).

    Each entry names a ``target`` and lists ``batch_size`` and/or ``threads`` values (each
    defaulting to the target's own); every combination becomes a target named by
    :func:`sweep_point_name`, a copy of the base target with ``batch_size``, ``threads``,
    ``repeats`` (the entry's, default 1) and ``sweep`` = {base, batch_size, threads} set.

    Raises:
        ConfigError: an entry names a target that is not (or no longer, after the hardware
            check) among ``targets``, or two entries produce the same point.
    """
    points: dict[str, dict] = {}
    for i, entry in enumerate(sweeps):
        base = entry["target"]
        if base not in targets:
            raise ConfigError(
                f"sweeps[{i}].target {base!r}: no such target runs here "
                f"(running: {', '.join(sorted(targets)) or 'none'})"
            )
        t = targets[base]
        batch_sizes = entry.get("batch_size", [train["batch_size"]])
        threads = entry.get("threads", [t.get("threads", t["cpus"])])
        for b, n in itertools.product(batch_sizes, threads):
            name = sweep_point_name(base, b, n)
            if name in points or name in targets:
                raise ConfigError(f"sweeps[{i}]: point {name} is given twice")
            points[name] = {
                **{k: v for k, v in t.items() if k != "paper_system"},  # not the paper's system
                "name": name,
                "batch_size": int(b),
                "threads": int(n),
                "repeats": int(entry.get("repeats", 1)),
                "sweep": {"base": base, "batch_size": int(b), "threads": int(n)},
            }
    return points


def check_backend(target: dict) -> None:
    """Check that a docker target's backend is installed in the project's images.

    Raises:
        ConfigError: a docker target asks for a backend other than TensorFlow (the images
            pin tensorflow only); host targets use whatever the host environment has.
    """
    backend = target.get("backend", "tensorflow")
    if target["runner"] == "docker" and backend not in IMAGE_BACKENDS:
        raise ConfigError(
            f"target {target['name']}: backend {backend} with runner docker: the images "
            f"install {', '.join(sorted(IMAGE_BACKENDS))} only; use runner: host in an "
            f"environment with {backend} installed"
        )


def cost_base(cost: dict, targets: list[dict], running: list[str]) -> tuple[str, str]:
    """The target that time and cost are normalised to (``cost.base_target``), and a note
    when it cannot be used here.

    Args:
        cost: the config's ``cost`` section (may be empty).
        targets: the config's targets, as written (before the hardware check).
        running: names of the main targets that run here.

    Returns:
        (base target name or "", note): the note is non-empty when the base target exists
        but was skipped on this host, in which case cost is not normalised.

    Raises:
        ConfigError: the base target is not among the targets, or has no ``hourly_usd``.
    """
    base = (cost or {}).get("base_target", "")
    if not base:
        return "", ""
    configured = {t["name"]: t for t in targets}
    if base not in configured:
        raise ConfigError(
            f"cost.base_target {base!r}: no such target (targets: {', '.join(configured)})"
        )
    if configured[base].get("hourly_usd") is None:
        raise ConfigError(f"cost.base_target {base!r} has no hourly_usd")
    if base not in running:
        return "", f"cost not normalised: base target {base} does not run here (skipped)"
    return base, ""

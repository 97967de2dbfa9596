"""What a training run leaves behind, written the same way by both runners.

:func:`finish_run` is the one writer of a run's ``telemetry.csv`` and ``metrics.json``: the
host runner calls it with its own :class:`embryo_bench.recording.telemetry.Measurement`, the docker
runner with the measurement it took from outside the container (the trainer inside the
container calls it without one, and its metrics are finished outside).
"""

from __future__ import annotations

from pathlib import Path

from ..io import atomic_path, write_json
from ..vocabulary.layout import METRICS, METRICS_FORMAT, TELEMETRY
from .telemetry import Measurement, summarise


def finish_run(
    out_dir: str | Path,
    metrics: dict,
    measurement: Measurement | None = None,
    **extra,
) -> dict:
    """Write a run's ``telemetry.csv`` (when measured) and ``metrics.json``.

    Args:
        out_dir: the run folder.
        metrics: the trainer's metrics (needs ``n_train`` and ``epochs``).
        measurement: the run's telemetry and CPU energy, or None (inside a container, where
            the runner measures from outside).
        extra: more top-level entries (e.g. ``container``, ``runner``).

    Returns:
        the metrics written: ``metrics`` with ``extra`` and, when measured, ``telemetry``
        (:func:`embryo_bench.recording.telemetry.summarise` of the samples: CPU %, memory, GPU
        readings, energy in J, images per joule or "not measured (...)").
    """
    out = Path(out_dir)
    metrics = {"format": METRICS_FORMAT, **metrics, **extra}
    if measurement is not None:
        frame = measurement.frame()
        with atomic_path(out / TELEMETRY) as tmp:
            frame.to_csv(tmp, index=False)
        metrics["telemetry"] = summarise(
            frame,
            metrics.get("images_per_epoch", metrics["n_train"]) * metrics["epochs"],
            measurement.gpus,
            measurement.cpu_energy_j,
            measurement.cores,
            measurement.sampler.in_process,
        )
    write_json(out / METRICS, metrics)
    return metrics

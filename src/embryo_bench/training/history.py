"""What a run's history sums to in ``metrics.json``: the three timings side by side
(:func:`summarise`: training only, with evaluation, time to accuracy), the throughput
windows' steady state (:func:`window_summary`) and how long a files input's steps waited
(:func:`input_wait_summary`). Plain pandas and numpy: no Keras.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..recording.evidence import divergence
from .inputs import input_bound


def time_to_accuracy(
    history: pd.DataFrame, target: float, clock: str = "wall_seconds"
) -> tuple[float | None, int | None]:
    """Seconds (cumulative ``clock`` column) and epochs until test accuracy first reaches
    ``target``; (None, None) if it never does. With the default clock, ``wall_seconds``
    (training plus the per-epoch test scoring), this is MLPerf's/DAWNBench's time to
    accuracy, which counts evaluation."""
    reached = history.index[history["test_accuracy"] >= target]
    if len(reached) == 0:
        return None, None
    i = reached[0]
    return float(history[clock].iloc[: i + 1].sum()), int(history["epoch"].iloc[i])


def _finite(value) -> float | None:
    """``value`` as a float, or None where it is NaN (no test set scored)."""
    value = float(value)
    return None if np.isnan(value) else value


def summarise(history: pd.DataFrame, images_per_epoch: int, target: float) -> dict:
    """Summary metrics from a history table (see
    :data:`embryo_bench.training.epochs.HISTORY_COLUMNS`).

    Three timings, side by side: ``training_seconds``, the ``fit`` time only
    (sum of epoch_seconds); ``wall_seconds``, training plus the test scoring after every
    epoch (sum of wall_seconds: the original script's clock, datetime.now around the whole
    loop); ``time_to_accuracy_seconds``, wall seconds until test accuracy first reaches
    ``target`` (MLPerf, evaluation included), None for a run that diverged (its
    accuracy is not the model's, even where a number crossed the target).

    Returns a dict: epochs, training_seconds, wall_seconds, eval_seconds_total,
    first_epoch_seconds, steady_epoch_seconds (mean over epochs 2.., None with one epoch),
    mean_images_per_s (steady-state images/s; the first epoch's when there is only one),
    final_test_accuracy, best_test_accuracy, accuracy_target, time_to_accuracy_seconds,
    epochs_to_accuracy (all times in s), diverged (why the run diverged,
    :func:`embryo_bench.recording.evidence.divergence`, or None), gpu_energy_per_epoch_j (the
    mean over epochs 2.. of the GPUs' energy in an epoch's training, J; None without a
    counter).
    """
    epochs = history["epoch_seconds"].to_numpy(float)
    steady = float(epochs[1:].mean()) if len(epochs) > 1 else None
    joules = history.get("gpu_energy_j", pd.Series(dtype=float)).to_numpy(float)
    later = joules[1:] if len(joules) > 1 else joules
    later = later[~np.isnan(later)]
    diverged = divergence(history)
    tta, tta_epochs = (None, None) if diverged else time_to_accuracy(history, target)
    return {
        "epochs": int(len(history)),
        "training_seconds": float(epochs.sum()),
        "wall_seconds": float(history["wall_seconds"].sum()),
        "eval_seconds_total": float(history["eval_seconds"].sum()),
        "first_epoch_seconds": float(epochs[0]),
        "steady_epoch_seconds": steady,
        "mean_images_per_s": images_per_epoch / (steady if steady else float(epochs[0])),
        # None (JSON null, not NaN) for a workload scored on no test set.
        "final_test_accuracy": _finite(history["test_accuracy"].iloc[-1]),
        "best_test_accuracy": _finite(history["test_accuracy"].max()),
        "accuracy_target": target,
        "time_to_accuracy_seconds": tta,
        "epochs_to_accuracy": tta_epochs,
        "diverged": diverged,
        # The GPUs' energy an epoch's training took (the first epoch's left out, as above),
        # from their own counters; None on the CPU.
        "gpu_energy_per_epoch_j": float(later.mean()) if len(later) else None,
    }


def window_summary(windows: pd.DataFrame) -> dict:
    """Steady-state throughput over a run's full windows
    (:data:`embryo_bench.training.epochs.WINDOW_COLUMNS`: no partial batch), leaving out the first
    window of epoch 1 (tracing and compilation).

    Returns:
        dict: window_steps (the most steps in a window), windows (counted),
        median_images_per_s,
        cv (standard deviation / mean of the windows' images/s, a fraction),
        worst_images_per_s (the slowest window), worst_ratio (slowest / median); the
        statistics are None with fewer than two windows.
    """
    first = (windows["epoch"] == 1) & (windows["window"] == 1)
    rates = windows.loc[~first & windows["full"].astype(bool), "images_per_s"].to_numpy(float)
    steps = int(windows["steps"].max()) if len(windows) else 0
    out = {"window_steps": steps, "windows": int(len(rates))}
    if len(rates) < 2:
        return out | dict.fromkeys(
            ("median_images_per_s", "cv", "worst_images_per_s", "worst_ratio")
        )
    median = float(np.median(rates))
    return out | {
        "median_images_per_s": median,
        "cv": float(rates.std(ddof=1) / rates.mean()),
        "worst_images_per_s": float(rates.min()),
        "worst_ratio": float(rates.min() / median),
    }


def input_wait_summary(history: pd.DataFrame) -> dict:
    """How long a run's training steps waited for their batches (files input: the feed's
    own timing, :mod:`embryo_bench.training.inputs`): seconds over every epoch, the share of
    training time, and the input-bound verdict
    (:func:`embryo_bench.training.inputs.input_bound`). Memory input is not timed: every
    value None.

    Returns:
        dict: seconds (s), share (0-1), input_bound (a sentence, or None).
    """
    waits = history.get("input_wait_seconds")
    if waits is None or waits.isna().all():
        return {"seconds": None, "share": None, "input_bound": None}
    seconds = float(waits.sum())
    share = seconds / float(history["epoch_seconds"].sum())
    return {"seconds": seconds, "share": share, "input_bound": input_bound(share)}

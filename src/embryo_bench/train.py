"""Train the paper CNN on the augmented shards and record timing, accuracy and provenance.

Training uses only the Keras 3 API (any backend). One ``fit`` call per epoch, so each epoch's
wall time is measured on its own and the test set is scored between epochs without being
counted as training time. Outputs (all written atomically):

* ``history.csv``: epoch, epoch_seconds, train_loss, train_accuracy, test_loss, test_accuracy,
  images_per_s (training images / epoch_seconds), eval_seconds;
* ``metrics.json``: totals, first-epoch vs steady-state times, time to accuracy, telemetry
  summary (CPU %, memory, GPU, energy), provenance;
* ``telemetry.csv``: one sample a second of the training process (:mod:`embryo_bench.telemetry`);
* ``model.keras`` and ``settings.json`` (preprocessing and training settings, read back by
  ``embryo-bench evaluate``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import provenance
from .backend import distribution_scope, limit_threads
from .io import atomic_path, write_json
from .stages import load_dataset
from .telemetry import ProcessSampler, RaplMeter
from .telemetry import summarise as summarise_telemetry

log = logging.getLogger(__name__)

HISTORY_COLUMNS = [
    "epoch",
    "epoch_seconds",
    "train_loss",
    "train_accuracy",
    "test_loss",
    "test_accuracy",
    "images_per_s",
    "eval_seconds",
]


def time_to_accuracy(history: pd.DataFrame, target: float) -> tuple[float | None, int | None]:
    """Training seconds (cumulative epoch_seconds) and epochs until test accuracy first reaches
    ``target``; (None, None) if it never does (MLPerf/DAWNBench time-to-accuracy)."""
    reached = history.index[history["test_accuracy"] >= target]
    if len(reached) == 0:
        return None, None
    i = reached[0]
    return float(history["epoch_seconds"].iloc[: i + 1].sum()), int(history["epoch"].iloc[i])


def summarise(history: pd.DataFrame, n_train: int, target: float) -> dict:
    """Summary metrics from a history table (see :data:`HISTORY_COLUMNS`).

    Returns a dict: training_seconds (sum of epoch seconds, s), first_epoch_seconds,
    steady_epoch_seconds (mean over epochs 2.., None with one epoch), mean_images_per_s
    (steady-state images/s; the first epoch's when there is only one), final_test_accuracy,
    best_test_accuracy, accuracy_target, time_to_accuracy_seconds, epochs_to_accuracy.
    """
    epochs = history["epoch_seconds"].to_numpy(float)
    steady = float(epochs[1:].mean()) if len(epochs) > 1 else None
    tta, tta_epochs = time_to_accuracy(history, target)
    return {
        "epochs": int(len(history)),
        "training_seconds": float(epochs.sum()),
        "first_epoch_seconds": float(epochs[0]),
        "steady_epoch_seconds": steady,
        "mean_images_per_s": n_train / (steady if steady else float(epochs[0])),
        "final_test_accuracy": float(history["test_accuracy"].iloc[-1]),
        "best_test_accuracy": float(history["test_accuracy"].max()),
        "accuracy_target": target,
        "time_to_accuracy_seconds": tta,
        "epochs_to_accuracy": tta_epochs,
    }


def fit_epoch(model, x: np.ndarray, y: np.ndarray, batch_size: int) -> tuple[float, dict]:
    """Train ``model`` for one epoch on in-memory arrays, reshuffled (the pipeline's data
    path: uint8 images (N, S, S, 1), int32 labels (N,)).

    Returns (wall seconds of the epoch, Keras logs of the epoch: loss, accuracy).
    """
    t0 = time.perf_counter()
    fit = model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=True, verbose=0)
    return time.perf_counter() - t0, {k: float(v[-1]) for k, v in fit.history.items()}


def _train_epochs(model, data: dict, epochs: int, batch_size: int, n_train: int, rows: list):
    """One ``fit`` call per epoch, then the test split scored; appends a history row
    (:data:`HISTORY_COLUMNS`) per epoch to ``rows``."""
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        fit = model.fit(
            data["x_train"],
            data["y_train"],
            batch_size=batch_size,
            epochs=1,
            shuffle=True,
            verbose=0,
        )
        t1 = time.perf_counter()
        ev = model.evaluate(
            data["x_test"], data["y_test"], batch_size=batch_size, verbose=0, return_dict=True
        )
        t2 = time.perf_counter()
        rows.append(
            {
                "epoch": epoch,
                "epoch_seconds": t1 - t0,
                "train_loss": float(fit.history["loss"][-1]),
                "train_accuracy": float(fit.history["accuracy"][-1]),
                "test_loss": float(ev["loss"]),
                "test_accuracy": float(ev["accuracy"]),
                "images_per_s": n_train / (t1 - t0),
                "eval_seconds": t2 - t1,
            }
        )
        log.info(
            "epoch %d/%d: %.1f s, %.0f images/s, train acc %.4f, test acc %.4f",
            epoch,
            epochs,
            t1 - t0,
            n_train / (t1 - t0),
            rows[-1]["train_accuracy"],
            rows[-1]["test_accuracy"],
        )


def run_training(
    shards: list[str],
    out_dir: str | Path,
    *,
    target: str,
    threads: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    dropout: float,
    seed: int,
    accuracy_target: float,
    preprocessing: dict,
    dataset: dict,
    runner: str = "host",
    strategy: str = "none",
    replicas: int = 1,
    repeat: int = 1,
    cpus: int | None = None,
    gpus: int = 0,
    telemetry: bool = True,
) -> dict:
    """Train one run and write history.csv, metrics.json, model.keras, settings.json.

    Args:
        shards: augmented ``.npz`` shards (see :mod:`embryo_bench.stages`).
        out_dir: run folder.
        target: hardware target name (recorded).
        threads: CPU threads for the backend's pools (the target's threads, default cpus).
        cpus: cores the process is pinned to (the target's cpus; default ``threads``).
        repeat: repeat number (1-based), recorded; the caller derives ``seed`` from it.
        gpus: GPUs assigned to the run (0..gpus-1 sampled through NVML).
        telemetry: sample this process (off inside a container: the docker runner samples
            the container from outside and writes telemetry.csv itself).
        epochs, batch_size, learning_rate, dropout: paper: 20, 480, 1e-4, 0.5.
        seed: seeds Python, NumPy and the backend (``keras.utils.set_random_seed``).
        accuracy_target: test accuracy for time-to-accuracy (paper: ~0.85).
        preprocessing: the settings that produced the shards (frame_size, crop_fraction,
            invert_centre, rotation_step, image_size), saved for ``evaluate``.
        dataset: source description (name, synthetic flag, sha256) for provenance.
        runner: recorded in metrics.json ("host", or "docker" inside a container).
        strategy, replicas: "none", or "mirrored" over ``replicas`` devices
            (:func:`embryo_bench.backend.distribution_scope`); global batch = batch_size.

    Returns:
        the metrics dict written to ``metrics.json`` (times in s, throughput in images/s),
        with ``telemetry`` from the run's own samples (``telemetry.csv``, see
        :mod:`embryo_bench.telemetry`) and RAPL CPU energy where the host exposes it.

    Raises:
        DataError: a shard is missing or malformed, or a split is empty.
        KeyError: ``preprocessing`` lacks ``image_size``.
    """
    t_setup = time.perf_counter()
    cores = limit_threads(threads, cpus)
    # Provenance before training: the commit and environment the run started from.
    prov = provenance.collect(seed, dataset)
    import keras

    from .model import build_model, compile_model

    scope, replicas_in_sync = distribution_scope(strategy, replicas)
    keras.utils.set_random_seed(seed)
    data = load_dataset(shards)
    n_train, n_test = len(data["y_train"]), len(data["y_test"])
    with scope:
        model = compile_model(
            build_model(preprocessing["image_size"], classes=4, dropout=dropout), learning_rate
        )
    setup_seconds = time.perf_counter() - t_setup
    log.info(
        "target %s: %d train / %d test images, %d parameters, %d threads, backend %s",
        target,
        n_train,
        n_test,
        model.count_params(),
        threads,
        keras.backend.backend(),
    )
    rows = []
    sampler = ProcessSampler(float(cpus or threads), list(range(gpus))) if telemetry else None
    rapl = RaplMeter()
    if sampler:
        rapl.start()
        sampler.start()
    try:
        _train_epochs(model, data, epochs, batch_size, n_train, rows)
    finally:
        if sampler:
            sampler.stop()
    cpu_energy = rapl.stop() if sampler else None
    history = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    out = Path(out_dir)
    with atomic_path(out / "history.csv") as tmp:
        history.to_csv(tmp, index=False)
    if sampler:
        frame = sampler.frame()
        with atomic_path(out / "telemetry.csv") as tmp:
            frame.to_csv(tmp, index=False)
    with atomic_path(out / "model.keras", suffix=".keras") as tmp:
        model.save(tmp)
    settings = {
        "target": target,
        "preprocessing": preprocessing,
        "training": {
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "dropout": dropout,
            "seed": seed,
            "threads": threads,
            "cpus": cpus or threads,
            "repeat": repeat,
            "backend": keras.backend.backend(),
        },
        "classes": {str(k): k + 1 for k in range(4)},
    }
    write_json(out / "settings.json", settings)
    metrics = {
        "target": target,
        "repeat": repeat,
        "seed": seed,
        "backend": keras.backend.backend(),
        "runner": runner,
        "n_train": n_train,
        "n_test": n_test,
        "batch_size": batch_size,
        "parameter_count": int(model.count_params()),
        "setup_seconds": setup_seconds,
        **summarise(history, n_train, accuracy_target),
        "eval_seconds_total": float(history["eval_seconds"].sum()),
        "label_counts_train": np.bincount(data["y_train"], minlength=4).tolist(),
        "label_counts_test": np.bincount(data["y_test"], minlength=4).tolist(),
        "threads": threads,
        "cpu_affinity": cores,
        "strategy": strategy,
        "replicas_in_sync": replicas_in_sync,
        "provenance": prov,
    }
    if sampler:
        metrics["telemetry"] = summarise_telemetry(frame, n_train * len(history), gpus, cpu_energy)
    write_json(out / "metrics.json", metrics)
    return metrics

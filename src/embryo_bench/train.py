"""Train the paper CNN on the augmented shards and record timing, accuracy and provenance.

Training uses only the Keras 3 API (any backend). One ``fit`` call per epoch, so each epoch's
wall time is measured on its own and the test set is scored between epochs without being
counted as training time. A run has three steps: :func:`setup` (threads, seed, provenance,
data, model), :func:`train_epochs`, :func:`write_outputs`; :func:`run_training` does all
three from a :class:`embryo_bench.spec.RunSpec`. Outputs (all written atomically):

* ``history.csv``: epoch, epoch_seconds, train_loss, train_accuracy, test_loss, test_accuracy,
  images_per_s (training images / epoch_seconds), eval_seconds;
* ``metrics.json``: totals, first-epoch vs steady-state times, time to accuracy, telemetry
  summary (CPU %, memory, GPU, energy), provenance (:func:`embryo_bench.record.finish_run`);
* ``telemetry.csv``: one sample a second of the training process (:mod:`embryo_bench.telemetry`);
* ``model.keras`` and ``settings.json`` (the preprocessing the training data was made with,
  read from the shards, and the classes: what ``embryo-bench evaluate`` needs).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import provenance
from .backend import distribution_scope, limit_threads
from .errors import ConfigError
from .io import atomic_path, write_json
from .record import finish_run
from .spec import Preprocessing, RunSpec
from .stages import load_dataset
from .telemetry import Measurement, ProcessSampler

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


@dataclass
class Session:
    """A run ready to train (:func:`setup`).

    Attributes:
        spec: the run's settings. model: the compiled Keras model.
        data: x_train, y_train, x_test, y_test (see :func:`embryo_bench.stages.load_dataset`).
        preprocessing: the settings the shards were made with.
        provenance: :func:`embryo_bench.provenance.collect`, taken before training.
        cores: the cores the process is pinned to. replicas_in_sync: devices training.
        backend: the Keras backend loaded. setup_seconds: wall time of the setup (s).
    """

    spec: RunSpec
    model: object
    data: dict
    preprocessing: Preprocessing
    provenance: dict
    cores: list[int]
    replicas_in_sync: int
    backend: str
    setup_seconds: float

    @property
    def n_train(self) -> int:
        """Training images per epoch."""
        return len(self.data["y_train"])


def select_backend(backend: str) -> None:
    """Make ``import keras`` load ``backend`` (``KERAS_BACKEND``); call before Keras is
    imported.

    Raises:
        ConfigError: Keras is already loaded on another backend in this process.
    """
    if "keras" in sys.modules:
        loaded = sys.modules["keras"].backend.backend()
        if loaded != backend:
            raise ConfigError(f"run asks for Keras backend {backend}; {loaded} is loaded")
        return
    os.environ["KERAS_BACKEND"] = backend


def setup(spec: RunSpec, shards: list[str], dataset: dict) -> Session:
    """Prepare a run: choose the backend, pin to ``spec.cpus`` cores with ``spec.threads``
    threads, record provenance, seed everything, load the shards (checked against
    ``spec.preprocessing``), build and compile the model (in the distribution strategy's
    scope).

    Args:
        spec: the run.
        shards: augmented ``.npz`` shards (see :mod:`embryo_bench.stages`).
        dataset: the index stage's source description (provenance).

    Raises:
        DataError: a shard is missing or malformed, made with other settings than the
            spec's, or a split is empty.
        ConfigError: another backend is already loaded, or a strategy the backend or the
            devices cannot give.
    """
    t_setup = time.perf_counter()
    select_backend(spec.backend)
    cores = limit_threads(spec.threads, spec.cpus)
    # Provenance before training: the commit and environment the run started from.
    prov = provenance.collect(spec.seed, dataset)
    import keras

    from .model import build_model, compile_model

    scope, replicas_in_sync = distribution_scope(spec.strategy, spec.replicas)
    keras.utils.set_random_seed(spec.seed)
    data, pp = load_dataset(shards, spec.preprocessing)
    with scope:
        model = compile_model(
            build_model(pp.image_size, classes=4, dropout=spec.dropout), spec.learning_rate
        )
    session = Session(
        spec=spec,
        model=model,
        data=data,
        preprocessing=pp,
        provenance=prov,
        cores=cores,
        replicas_in_sync=replicas_in_sync,
        backend=keras.backend.backend(),
        setup_seconds=time.perf_counter() - t_setup,
    )
    log.info(
        "target %s: %d train / %d test images, %d parameters, %d threads, backend %s",
        spec.target,
        session.n_train,
        len(data["y_test"]),
        model.count_params(),
        spec.threads,
        session.backend,
    )
    return session


def train_epochs(session: Session) -> pd.DataFrame:
    """Train ``spec.epochs`` epochs, one ``fit`` call per epoch, scoring the test split after
    each (not counted as training time).

    Returns:
        the history (:data:`HISTORY_COLUMNS`, one row per epoch; seconds, images/s).
    """
    spec, model, data, n_train = session.spec, session.model, session.data, session.n_train
    rows = []
    for epoch in range(1, spec.epochs + 1):
        seconds, logs = fit_epoch(model, data["x_train"], data["y_train"], spec.batch_size)
        t1 = time.perf_counter()
        ev = model.evaluate(
            data["x_test"], data["y_test"], batch_size=spec.batch_size, verbose=0, return_dict=True
        )
        rows.append(
            {
                "epoch": epoch,
                "epoch_seconds": seconds,
                "train_loss": logs["loss"],
                "train_accuracy": logs["accuracy"],
                "test_loss": float(ev["loss"]),
                "test_accuracy": float(ev["accuracy"]),
                "images_per_s": n_train / seconds,
                "eval_seconds": time.perf_counter() - t1,
            }
        )
        log.info(
            "epoch %d/%d: %.1f s, %.0f images/s, train acc %.4f, test acc %.4f",
            epoch,
            spec.epochs,
            seconds,
            n_train / seconds,
            rows[-1]["train_accuracy"],
            rows[-1]["test_accuracy"],
        )
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def write_outputs(session: Session, history: pd.DataFrame, out_dir: str | Path) -> dict:
    """Write ``history.csv``, ``model.keras`` and ``settings.json``; return the run's metrics
    (without telemetry, which :func:`embryo_bench.record.finish_run` adds and writes).

    Returns:
        dict: target, repeat, seed, backend (as loaded), runner, cpus, gpus, n_train, n_test,
        batch_size, parameter_count, setup_seconds, :func:`summarise`'s times (s) and
        throughput (images/s), eval_seconds_total, label counts, threads, cpu_affinity,
        strategy, replicas_in_sync, provenance.
    """
    spec, data, out = session.spec, session.data, Path(out_dir)
    with atomic_path(out / "history.csv") as tmp:
        history.to_csv(tmp, index=False)
    with atomic_path(out / "model.keras", suffix=".keras") as tmp:
        session.model.save(tmp)
    write_json(
        out / "settings.json",
        {
            "preprocessing": session.preprocessing.to_dict(),
            "classes": {str(k): k + 1 for k in range(4)},
            "backend": session.backend,
        },
    )
    return {
        "target": spec.target,
        "repeat": spec.repeat,
        "seed": spec.seed,
        "backend": session.backend,
        "runner": spec.runner,
        "cpus": spec.cpus,
        "gpus": spec.gpus,
        "n_train": session.n_train,
        "n_test": int(len(data["y_test"])),
        "batch_size": spec.batch_size,
        "parameter_count": int(session.model.count_params()),
        "setup_seconds": session.setup_seconds,
        **summarise(history, session.n_train, spec.accuracy_target),
        "eval_seconds_total": float(history["eval_seconds"].sum()),
        "label_counts_train": np.bincount(data["y_train"], minlength=4).tolist(),
        "label_counts_test": np.bincount(data["y_test"], minlength=4).tolist(),
        "threads": spec.threads,
        "cpu_affinity": session.cores,
        "strategy": spec.strategy,
        "replicas_in_sync": session.replicas_in_sync,
        "provenance": session.provenance,
    }


def run_training(
    spec: RunSpec,
    shards: list[str],
    dataset: dict,
    out_dir: str | Path,
    *,
    measure: bool = True,
) -> dict:
    """Train one run and write its outputs (:func:`setup`, :func:`train_epochs`,
    :func:`write_outputs`, :func:`embryo_bench.record.finish_run`).

    Args:
        spec: the run's settings (``run.json``).
        shards: augmented ``.npz`` shards.
        dataset: the index stage's source description (provenance).
        out_dir: the run folder.
        measure: sample this process (telemetry.csv, RAPL energy); off inside a container,
            where the docker runner samples the container from outside and finishes the
            metrics itself.

    Returns:
        the metrics written to ``metrics.json`` (times in s, throughput in images/s).

    Raises:
        DataError, ConfigError: as :func:`setup`.
    """
    session = setup(spec, shards, dataset)
    if not measure:
        history = train_epochs(session)
        return finish_run(out_dir, write_outputs(session, history, out_dir))
    with Measurement(ProcessSampler(float(spec.cpus), list(range(spec.gpus)))) as m:
        history = train_epochs(session)
    return finish_run(out_dir, write_outputs(session, history, out_dir), m)

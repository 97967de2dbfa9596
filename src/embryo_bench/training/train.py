"""Train one run of any workload and record timing, accuracy and provenance: the paper CNN
on its augmented shards, or a workload's model on its prepared arrays (from memory, or in its
``files`` input mode from its image files).

A run is described by two things: its :class:`embryo_bench.vocabulary.spec.RunSpec`
(``run.json``: every setting, resolved by the plan) and what it trains on, one
:class:`embryo_bench.vocabulary.spec.TrainingInput` of the kind its spec names
(:attr:`RunSpec.input_kind`: ``shards`` for the paper's, ``arrays`` for every other). The
kinds differ only in how the data is loaded, which model is built and what is recorded of
them (:class:`InputKind`, :data:`KINDS`: the paper's shards by :mod:`embryo_bench.data.stages`
and its CNN by :mod:`embryo_bench.workloads.paper`; a workload's arrays by
:mod:`embryo_bench.data.arrays` and its model by its builder,
:mod:`embryo_bench.workloads.build`); everything else is one path for every workload.

Training uses only the Keras 3 API (any backend). One ``fit`` call per run, with the test
set scored after every epoch as Keras validation; a callback times each epoch's training
and scoring apart (:func:`fit_epochs`), so three timings are reported side by side
(:func:`summarise`): training only, training plus evaluation (the paper's clock), and time
to accuracy with evaluation (MLPerf). A run has three steps: :func:`setup` (threads, seed,
provenance, data, model), :func:`train_epochs` (between two calibration probes,
:mod:`embryo_bench.recording.calibrate`; a files input through
:class:`embryo_bench.training.inputs.TimedFeed`), :func:`write_outputs`;
:func:`run_training` does all three. Outputs (all written atomically):

* ``history.csv``: :data:`HISTORY_COLUMNS` (``progress.csv`` holds the same rows while the
  run trains, one appended per epoch; it is removed when the run finishes);
* ``metrics.json``: totals, first-epoch vs steady-state times, time to accuracy, telemetry
  summary (CPU %, memory, GPU, energy), provenance
  (:func:`embryo_bench.recording.record.finish_run`);
* ``telemetry.csv``: one sample a second of the training process
  (:mod:`embryo_bench.recording.telemetry`);
* ``windows.csv``: throughput about :data:`WINDOWS_PER_EPOCH` times an epoch
  (:data:`WINDOW_COLUMNS`), the run's own probe of the machine's speed;
* ``model.keras`` and ``settings.json`` (what ``embryo-bench evaluate`` needs: for a run on
  shards the preprocessing they were made with and the classes, for a run on arrays its
  workload).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import stages
from ..data.arrays import load_run_arrays
from ..data.imagefolder import list_image_folder
from ..errors import ConfigError, DataError
from ..io import atomic_path, write_json
from ..recording import provenance
from ..recording.calibrate import PROBE_METHOD, efficiency, matmul_probe, training_flops_per_image
from ..recording.evidence import divergence
from ..recording.hardware import gpu_identity
from ..recording.record import finish_run
from ..recording.telemetry import Measurement, NvmlGpus, ProcessSampler
from ..runners.lifeline import check_parent
from ..vocabulary.layout import HISTORY, MODEL, PROGRESS, SETTINGS, WINDOWS
from ..vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS, Preprocessing, RunSpec, TrainingInput
from .backend import (
    backend_devices,
    backend_name,
    compute_settings,
    device_memory_peak_mib,
    distribution_scope,
    framework_versions,
    input_pipeline,
    limit_threads,
    select_gpus,
    set_precision,
)
from .inputs import (
    INPUT_WAIT_COLUMNS,
    Augment,
    ImageFiles,
    TimedFeed,
    add_input_wait,
    feed_errors,
    input_bound,
)

log = logging.getLogger(__name__)

#: Throughput windows per epoch: each window's images/s is the run's own probe of
#: the machine's speed, many times per run. A window is this fraction of an epoch's steps
#: (at least one step: the paper's 102 steps an epoch give windows of 10 steps, the offline
#: demo's 2 give windows of one); an epoch's last window may be shorter.
WINDOWS_PER_EPOCH = 10


def window_steps_for(steps_per_epoch: int) -> int:
    """Training steps per throughput window: ``steps_per_epoch`` // :data:`WINDOWS_PER_EPOCH`,
    at least 1."""
    return max(1, steps_per_epoch // WINDOWS_PER_EPOCH)


#: The most training steps Keras runs per call into the backend
#: (``compile(steps_per_execution=...)``) when the run leaves the number to the trainer
#: (``train.steps_per_execution`` 0). Keras calls a compiled step from Python once per
#: execution, with its callbacks and epoch iterator around it; at the studies' small
#: batches that dispatch costs a few percent of a step (TensorFlow's MNIST network at batch
#: 50, 45 ms steps on an EPYC core: about 9 % more samples per CPU second with 10 steps per
#: call). Ten steps leave under a tenth of that cost, and are the paper's
#: 102-step epochs' whole window (10 steps), so a window is one call there.
MAX_STEPS_PER_EXECUTION = 10


def steps_per_execution_for(
    steps_per_epoch: int, epoch_steps: int = 0, most: int = 0, backend: str = "tensorflow"
) -> int:
    """Training steps per Keras execution (``compile(steps_per_execution=...)``): the largest
    divisor of the throughput window's steps (:func:`window_steps_for`) not above ``most``.

    Steps per execution change only how often Python calls the compiled step: the batches,
    the updates and the losses stay the same. Keras calls the batch callbacks once per
    execution, with the index of its first step, so every window (a multiple of
    :func:`window_steps_for`'s steps) must begin an execution: hence a divisor of the window.
    An epoch whose steps are not a multiple of it ends with a shorter execution: TensorFlow's
    loop stops where the data ends. Not so where the epoch ends before its data (the
    original variant's ``epoch_steps`` over endless passes: Keras would run every execution
    whole, past the epoch's end), nor on JAX (Keras reads a short last execution as input that
    ran out, with a warning): there it divides the epoch's steps as well.

    Args:
        steps_per_epoch: training steps (batches) an epoch.
        epoch_steps: the original variant's fixed steps an epoch (0: one pass over the data).
        most: at most this many (``train.steps_per_execution``); 0: :data:`MAX_STEPS_PER_EXECUTION`.
        backend: the Keras backend; "torch" always 1 (Keras runs one step per call there).

    Returns:
        an int >= 1 (1 where ``most`` is 1).

    Raises:
        ValueError: steps_per_epoch < 1 or most < 0.
    """
    if steps_per_epoch < 1 or most < 0:
        raise ValueError(f"steps_per_epoch {steps_per_epoch} must be >= 1 and most {most} >= 0")
    if backend == "torch":
        return 1
    limit = most or MAX_STEPS_PER_EXECUTION
    whole = epoch_steps or (steps_per_epoch if backend != "tensorflow" else 0)
    window = window_steps_for(steps_per_epoch)
    return max(n for n in range(1, limit + 1) if window % n == 0 and (not whole or whole % n == 0))


#: Columns of ``windows.csv``: epoch, window (1.. within the epoch), steps, images, full
#: (every batch in it full: a partial last batch costs more per image, so such a window is not
#: compared with the others), seconds (its training time, s), images_per_s, ended_unix_s
#: (wall clock, s since 1970).
WINDOW_COLUMNS = [
    "epoch",
    "window",
    "steps",
    "images",
    "full",
    "seconds",
    "images_per_s",
    "ended_unix_s",
]

HISTORY_COLUMNS = [
    "epoch",
    "epoch_seconds",
    "eval_seconds",
    "wall_seconds",
    "train_loss",
    "train_accuracy",
    "test_loss",
    "test_accuracy",
    "images_per_s",
    "ended_unix_s",
    "gpu_energy_j",
    *INPUT_WAIT_COLUMNS,
]


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
    """Summary metrics from a history table (see :data:`HISTORY_COLUMNS`).

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
    """Steady-state throughput over a run's full windows (:data:`WINDOW_COLUMNS`: no partial
    batch), leaving out the first window of epoch 1 (tracing and compilation).

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


def progress_line(row: dict, epochs: int, eta_seconds: float | None) -> str:
    """One log line for a finished epoch: epoch k/N, training and scoring seconds, loss,
    accuracy, test accuracy, images/s and the estimated time left."""
    eta = "" if eta_seconds is None else f", ETA {eta_seconds / 60:.1f} min"
    return (
        f"epoch {row['epoch']}/{epochs}: {row['epoch_seconds']:.1f} s training + "
        f"{row['eval_seconds']:.1f} s test, loss {row['train_loss']:.4f}, accuracy "
        f"{row['train_accuracy']:.4f}, test accuracy {row['test_accuracy']:.4f}, "
        f"{row['images_per_s']:.0f} images/s{eta}"
    )


def fit_epochs(
    model,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    *,
    batch_size: int,
    epochs: int,
    seed: int = 0,
    on_epoch=None,
    epoch_steps: int = 0,
    test_subset: int = 0,
    windows: list[dict] | None = None,
    window_steps: int | None = None,
    feed=None,
    energy=None,
) -> list[dict]:
    """Train ``model`` for ``epochs`` epochs in one ``fit`` call, reshuffled every epoch,
    scoring ``test`` after each (Keras validation); each epoch timed by a callback.

    Args:
        model: a compiled Keras model.
        train, test: (images uint8 (N, S, S, 1), labels int32 (N,)).
        batch_size: images per batch, for training and scoring.
        epochs: epochs to train. seed: the shuffle's seed.
        on_epoch: called with each finished epoch's row (e.g. to log and save progress).
        epoch_steps: batches per epoch from reshuffled passes, each pass's leftover dropped
            (the original script); 0: one pass over ``train`` per epoch.
        test_subset: score a new random subset of this many test images after each epoch
            (the original script's test batch); 0: the whole test set.
        windows: if given, one row (:data:`WINDOW_COLUMNS`) is appended per throughput
            window of ``window_steps`` training steps (default :func:`window_steps_for`;
            an epoch's last one may be shorter).
            The clock is read at the start of a batch, after waiting for the previous step
            (once per window, so asynchronous backends still run ahead between windows);
            no batch-end callback is used, which would make Keras wait for every step.
            ``model``'s ``steps_per_execution`` must divide ``window_steps`` (and
            ``epoch_steps``): :func:`steps_per_execution_for`.
        feed: the training batches, ready (files mode:
            :class:`embryo_bench.training.inputs.TimedFeed`, one pass over ``train`` an
            epoch; ``train`` then gives only the labels' count); default: the in-memory
            :func:`embryo_bench.backend.input_pipeline` over ``train``. A feed that times its
            waits (``waited_seconds``) adds each epoch's wait to its row
            (:func:`embryo_bench.training.inputs.add_input_wait`).
        energy: the GPUs' energy counter, J (:meth:`embryo_bench.recording.telemetry.
            NvmlGpus.energy_j`), read where each epoch's training starts and ends; None (a
            CPU run, no NVML) leaves ``gpu_energy_j`` empty.

    Returns:
        one row per epoch (:data:`HISTORY_COLUMNS`): epoch_seconds (the epoch's training,
        s), eval_seconds (its test scoring, s), wall_seconds (both, plus Keras's own work
        between them, s), losses and accuracies, images_per_s (training images /
        epoch_seconds), ended_unix_s (when the epoch's scoring ended, wall clock, s since
        1970: the clock of telemetry.csv's ``unix_s``, to place epochs on its samples),
        gpu_energy_j (the energy the run's GPUs used in the epoch's training, J; NaN
        without a counter).

    Raises:
        ValueError: the model's ``steps_per_execution`` does not divide ``window_steps``
            or ``epoch_steps``.
        ConfigError: ``epoch_steps`` with a files ``feed``.

    The batches come from :func:`embryo_bench.training.backend.input_pipeline`, built once: one
    ``fit`` call per run, not per epoch, so the input pipelines are not rebuilt and torn
    down at every epoch boundary (the source of the 10-20 s stalls at 0 % CPU per epoch of
    earlier runs).
    """
    import keras

    images_per_epoch = epoch_steps * batch_size if epoch_steps else len(train[1])
    if feed is None:
        feed = input_pipeline(*train, batch_size, shuffle=True, seed=seed, endless=epoch_steps > 0)
    elif epoch_steps:
        raise ConfigError(
            f"train.original.epoch_steps {epoch_steps}: fixed-step epochs need memory input; "
            "a files feed gives one pass over the images an epoch"
        )
    waited = getattr(feed, "waited_seconds", None)
    # A workload without a test split (the text-generation scripts held none out): no
    # scoring, the test columns NaN.
    scored = len(test[1]) > 0
    scoring = (
        input_pipeline(*test, batch_size, shuffle=test_subset > 0, seed=seed + 1, take=test_subset)
        if scored
        else None
    )
    steps = {"steps_per_epoch": epoch_steps} if epoch_steps else {}
    rows: list[dict] = []
    n_steps = epoch_steps or -(-len(train[1]) // batch_size)
    window_steps = window_steps or window_steps_for(n_steps)
    per_call = int(getattr(model, "steps_per_execution", 1) or 1)
    if window_steps % per_call or epoch_steps % per_call:
        raise ValueError(
            f"steps_per_execution {per_call} must divide the window's {window_steps} steps "
            f"and the fixed epoch's {epoch_steps} (0: none): windows and epochs would end "
            "late (steps_per_execution_for chooses a divisor)"
        )

    def images_in(first: int, last: int) -> int:
        """Images of steps first..last-1 of an epoch (its last batch may be partial)."""
        if epoch_steps:
            return (last - first) * batch_size
        return min(last * batch_size, len(train[1])) - first * batch_size

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch, self.window_from = epoch + 1, 0
            self.begin = self.scoring = self.window_start = time.perf_counter()
            self.waited = waited() if waited else 0.0
            self.joules = energy() if energy else None

        def close_window(self, step: int, now: float) -> None:
            if windows is not None and step > self.window_from:
                seconds = now - self.window_start
                images = images_in(self.window_from, step)
                windows.append(
                    {
                        "epoch": self.epoch,
                        "window": 1 + self.window_from // window_steps,
                        "steps": step - self.window_from,
                        "images": images,
                        "full": images == (step - self.window_from) * batch_size,
                        "seconds": seconds,
                        "images_per_s": images / seconds,
                        "ended_unix_s": time.time(),
                    }
                )
            self.window_from, self.window_start = step, now

        def on_train_batch_begin(self, batch, logs=None):
            # With several steps per execution Keras calls this at each execution's first
            # step (a divisor of window_steps: every window's start is one), and, where it
            # does not know the epoch's length, once past the epoch's end before it finds no
            # data: that window is closed by on_test_begin at n_steps.
            if windows is not None and 0 < batch < n_steps and batch % window_steps == 0:
                keras.ops.convert_to_numpy(self.model.optimizer.iterations)
                self.close_window(batch, time.perf_counter())

        def on_test_begin(self, logs=None):
            # Wait for the epoch's last training step before reading the clock: JAX (and
            # GPUs) dispatch steps asynchronously, and without this the training time would
            # be counted as scoring (Keras on JAX showed 0.016 s epochs and 22 s scoring).
            # The optimizer's step counter is an output of the last step.
            keras.ops.convert_to_numpy(self.model.optimizer.iterations)
            self.scoring = time.perf_counter()
            self.close_window(n_steps, self.scoring)
            self.waited = waited() - self.waited if waited else 0.0
            now = energy() if energy else None
            self.joules = float("nan") if now is None or self.joules is None else now - self.joules

        def on_epoch_end(self, epoch, logs=None):
            if not scored:  # no scoring: the epoch's training ends here
                self.on_test_begin()
            end = time.perf_counter()
            seconds = self.scoring - self.begin
            row = {
                "epoch": epoch + 1,
                "epoch_seconds": seconds,
                "eval_seconds": end - self.scoring,
                "wall_seconds": end - self.begin,
                "train_loss": float(logs["loss"]),
                "train_accuracy": float(logs["accuracy"]),
                "test_loss": float(logs["val_loss"]) if scored else float("nan"),
                "test_accuracy": float(logs["val_accuracy"]) if scored else float("nan"),
                "images_per_s": images_per_epoch / seconds,
                "ended_unix_s": time.time(),
                "gpu_energy_j": self.joules,
            }
            if waited:
                add_input_wait(row, self.waited)
            rows.append(row)
            if on_epoch is not None:
                on_epoch(row)

    with feed_errors(feed):
        model.fit(
            **feed.fit_kwargs(),
            **(scoring.validation_kwargs() if scored else {}),
            epochs=epochs,
            verbose=0,
            callbacks=[EpochClock()],
            **steps,
        )
    return rows


@dataclass
class Session:
    """A run ready to train (:func:`setup`).

    Attributes:
        spec: the run's settings. model: the compiled Keras model.
        data: x_train, y_train, x_test, y_test (see :func:`embryo_bench.data.stages.load_dataset`).
        preprocessing: the settings the shards were made with (input kind shards); None
            for a run on arrays.
        provenance: :func:`embryo_bench.recording.provenance.collect`, taken before training.
        cores: the cores the process is pinned to. replicas_in_sync: devices training.
        backend: the Keras backend loaded. setup_seconds: wall time of the setup (s).
        windows: the throughput windows measured so far (:data:`WINDOW_COLUMNS`).
        gpu_indices: NVML's indices of the GPUs the run was given (:func:`select_gpus`).
        devices: what trains: ``gpus``, NVML's identity of each GPU given
            (:func:`embryo_bench.recording.hardware.gpu_identity`), and ``backend``, the
            framework's own view (:func:`embryo_bench.training.backend.backend_devices`).
    """

    spec: RunSpec
    model: object
    data: dict
    preprocessing: Preprocessing | None
    provenance: dict
    cores: list[int]
    replicas_in_sync: int
    backend: str
    setup_seconds: float
    windows: list[dict] = field(default_factory=list)
    gpu_indices: list[int] = field(default_factory=list)
    devices: dict = field(default_factory=dict)
    #: A workload's image files, for its ``files`` input mode (None: memory).
    files: Path | None = None

    @property
    def n_train(self) -> int:
        """Training images (after the variant's holdout)."""
        return len(self.data["y_train"])

    @property
    def images_per_epoch(self) -> int:
        """Images trained per epoch: every training image, or the variant's epoch_steps
        batches."""
        s = self.spec
        return s.epoch_steps * s.batch_size if s.epoch_steps else self.n_train


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


def seed_everything(seed: int) -> None:
    """``keras.utils.set_random_seed(seed)`` (Python's, NumPy's, Keras's and the backend's
    random generators) without importing TensorFlow into a run on another backend.

    Keras seeds TensorFlow whenever it is installed, importing it (+460 MiB RSS and
    TensorFlow's start-up in every JAX or PyTorch run, whose numbers then are not that
    framework's alone). On a backend other than TensorFlow, TensorFlow is hidden from that one
    call (``sys.modules`` entry None: Keras finds it not installed, and remembers that for the
    process); runs on those backends feed Keras numpy arrays, not ``tf.data``. Call after
    :func:`select_backend`.
    """
    import keras

    if keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return
    sys.modules["tensorflow"] = None  # type: ignore[assignment]
    try:
        keras.utils.set_random_seed(seed)
    finally:
        del sys.modules["tensorflow"]


@dataclass(frozen=True)
class InputKind:
    """How a run of one input kind (:data:`embryo_bench.vocabulary.spec.INPUT_KINDS`) gets
    its data and its model, and what it records of them: the only place the trainer tells
    the kinds apart (:data:`KINDS`); each kind's functions live with its data
    (:mod:`embryo_bench.data.stages` for the shards, :mod:`embryo_bench.data.arrays`) and its
    models (:mod:`embryo_bench.workloads.paper`, :mod:`embryo_bench.workloads.build`).

    Attributes:
        load: (spec, input) -> (data: ``x_train``, ``y_train``, ``x_test``, ``y_test``;
            the preprocessing settings the data was made with, or None).
        model: (spec, preprocessing, steps per execution) -> the compiled Keras model
            (Keras is imported by then).
        settings: (spec, preprocessing) -> what ``settings.json`` records beside the model.
        classes: spec -> the number of classes its labels count.
        data: spec -> how messages name its data. setting: spec -> the configuration's
            prefix of its batch size (``train.``, ``workloads: <name>'s ``).
    """

    load: Callable[[RunSpec, TrainingInput], tuple[dict, Preprocessing | None]]
    model: Callable[[RunSpec, Preprocessing | None, int], object]
    settings: Callable[[RunSpec, Preprocessing | None], dict]
    classes: Callable[[RunSpec], int]
    data: Callable[[RunSpec], str]
    setting: Callable[[RunSpec], str]


def _shards_model(spec: RunSpec, pp: Preprocessing, per_call: int):
    # The paper CNN's module imports Keras: only now, after the backend is chosen.
    from ..workloads.paper import build_for_run

    return build_for_run(spec, pp.image_size, steps_per_execution=per_call)


def _arrays_model(spec: RunSpec, pp: None, per_call: int):
    # The builders' module imports Keras: only now, after the backend is chosen.
    from ..workloads.build import build_for_spec

    return build_for_spec(spec.workload, spec.learning_rate, steps_per_execution=per_call)


#: Each input kind's :class:`InputKind`.
KINDS = {
    INPUT_SHARDS: InputKind(
        load=lambda spec, inputs: stages.load_run_shards(spec, inputs.paths),
        model=_shards_model,
        settings=lambda spec, pp: stages.run_settings(pp),
        classes=lambda spec: stages.CLASSES,
        data=lambda spec: "the shards",
        setting=lambda spec: "train.",
    ),
    INPUT_ARRAYS: InputKind(
        load=lambda spec, inputs: (load_run_arrays(spec, inputs.arrays), None),
        model=_arrays_model,
        settings=lambda spec, pp: {"workload": dataclasses.asdict(spec.workload)},
        classes=lambda spec: spec.workload.classes,
        data=lambda spec: f"workload {spec.workload.name}'s arrays",
        setting=lambda spec: f"workloads: {spec.workload.name}'s ",
    ),
}


def setup(spec: RunSpec, inputs: TrainingInput, dataset: dict) -> Session:
    """Prepare a run: choose the backend, give it the run's GPUs and no others
    (:func:`embryo_bench.training.backend.select_gpus`; none to a CPU run), pin to
    ``spec.cpus`` cores with ``spec.threads`` threads, record provenance and the devices
    (NVML's identity of each GPU, the framework's view), seed everything, load the data of
    the run's input kind (:data:`KINDS`: the shards, checked against ``spec.preprocessing``,
    or a workload's arrays), build and compile the model under the run's precision (a Keras
    dtype policy) in the distribution strategy's scope.

    Args:
        spec: the run.
        inputs: what it trains on (:class:`embryo_bench.vocabulary.spec.TrainingInput`, of
            the kind its spec names).
        dataset: the index stage's source description, or a workload's data info
            (provenance).

    Raises:
        DataError: a shard is missing or malformed, made with other settings than the
            spec's, or a split is empty; a workload's arrays missing, damaged or not its shape.
        ConfigError: ``inputs`` of another kind than the spec's, another backend is already
            loaded, a strategy the backend or the devices cannot give, GPUs the backend does
            not see, a batch size larger than the training set, a workload's builder that
            cannot be imported.
    """
    t_setup = time.perf_counter()
    if inputs.kind != spec.input_kind:
        raise ConfigError(
            f"run {spec.target}: trains on {spec.input_kind}, given {inputs.kind} to train on"
        )
    kind = KINDS[inputs.kind]
    select_backend(spec.backend)
    run = f"run {spec.target} repeat {spec.repeat}"
    gpu_indices = select_gpus(spec.gpus, spec.backend, run)
    cores = limit_threads(spec.threads, spec.cpus)
    # Provenance before training: the commit and environment the run started from.
    prov = provenance.collect(spec.seed, dataset, backend_name(), framework_versions())
    # Keras (and so the model modules) only now: the backend is chosen above, and Keras
    # reads KERAS_BACKEND once, at its first import.
    import keras

    devices = {"gpus": gpu_identity(gpu_indices), "backend": backend_devices(spec.gpus, run)}
    set_precision(spec.precision)
    scope, replicas_in_sync = distribution_scope(spec.strategy, spec.replicas)
    seed_everything(spec.seed)
    data, pp = kind.load(spec, inputs)
    _check_batch(spec, len(data["y_train"]))
    with scope:
        model = run_model(spec, pp, len(data["y_train"]))
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
        gpu_indices=gpu_indices,
        devices=devices,
        files=Path(inputs.files) if inputs.files else None,
    )
    w = spec.workload
    log.info(
        "target %s, workload %s%s: %d train / %d test samples, %d parameters, %d threads, "
        "backend %s on %s, %s, variant %s, %s input",
        spec.target,
        spec.workload_name,
        " (SYNTHETIC data)" if w and w.synthetic else "",
        session.n_train,
        len(data["y_test"]),
        model.count_params(),
        spec.threads,
        session.backend,
        ", ".join(devices["backend"]["devices"]),
        spec.precision,
        spec.variant,
        spec.input_mode,
    )
    return session


def run_model(spec: RunSpec, pp: Preprocessing | None, n_train: int):
    """The run's compiled model, by its input kind (:data:`KINDS`): the paper CNN at the
    shards' image size, or a workload's by its builder with its recipe
    (:mod:`embryo_bench.workloads.build`; Keras is imported by now), running
    :func:`steps_per_execution_for`'s steps per execution (``n_train``: the training
    samples, whose batches make an epoch).

    Raises:
        ConfigError: a builder that cannot be imported or refuses the shape.
    """
    import keras

    per_call = steps_per_execution_for(
        spec.epoch_steps or -(-n_train // spec.batch_size),
        spec.epoch_steps,
        spec.steps_per_execution,
        keras.backend.backend(),
    )
    return KINDS[spec.input_kind].model(spec, pp, per_call)


def _check_batch(spec: RunSpec, n: int) -> None:
    """Refuse a batch larger than the ``n`` training samples (such a run trained
    one short batch per epoch while every table said the batch size asked for), and an
    empty training set (whose advice would have been a batch size up to 0).

    Raises:
        ConfigError: naming the setting.
    """
    if spec.batch_size <= n:
        return
    kind = KINDS[spec.input_kind]
    setting = f"sweeps: point {spec.target}'s " if spec.sweep else kind.setting(spec)
    if not n:
        data = kind.data(spec)
        raise ConfigError(
            f"run {spec.target} repeat {spec.repeat}: {data} hold no training sample; "
            f"expected at least one batch, {spec.batch_size:,} ({setting}batch_size)"
        )
    raise ConfigError(
        f"run {spec.target} repeat {spec.repeat}: {setting}batch_size {spec.batch_size} > "
        f"the {n:,} training images: every step would train all of them, not a batch of "
        f"{spec.batch_size}; use a batch size up to {n:,}"
    )


def files_feed(session: Session) -> TimedFeed | None:
    """The training batches of a workload's ``files`` input mode: its ``train/`` image files
    (``embryo-bench workload-files``) decoded, and augmented as its study's generator did,
    by ``workers`` threads (:class:`embryo_bench.training.inputs.TimedFeed`, which times how
    long the steps wait); None for memory input.

    Raises:
        DataError: the folder is missing, or holds other labels than the arrays.
    """
    if session.spec.input_mode != "files":
        return None
    w = session.spec.workload
    if session.files is None:
        raise DataError(f"run {session.spec.target}: workload {w.name} reads files: no folder")
    paths, labels, _ = list_image_folder(session.files / "train")
    if len(labels) != len(session.data["y_train"]):
        raise DataError(
            f"{session.files / 'train'}: {len(labels)} images; the workload's arrays hold "
            f"{len(session.data['y_train'])} training samples"
        )
    augment = Augment(**w.augmentation) if w.augmentation else None
    source = ImageFiles([str(p) for p in paths], labels, w.input_shape, augment)
    return TimedFeed(source, session.spec.batch_size, seed=session.spec.seed, workers=w.workers)


def train_epochs(session: Session, out_dir: str | Path | None = None) -> pd.DataFrame:
    """Train ``spec.epochs`` epochs (:func:`fit_epochs`), logging one line per epoch and,
    with ``out_dir``, appending each epoch to its ``progress.csv`` as soon as it ends (so a
    run stopped at epoch 19 of 20 still shows what it measured; that file is not an output
    of the rule, so nothing looks complete). A GPU run reads its GPUs' energy counters
    around each epoch's training (NVML, :class:`embryo_bench.recording.telemetry.NvmlGpus`).

    Returns:
        the history (:data:`HISTORY_COLUMNS`, one row per epoch; seconds, images/s).
    """
    spec, data = session.spec, session.data
    progress = Path(out_dir) / PROGRESS if out_dir is not None else None
    if progress is not None:
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.unlink(missing_ok=True)
    rows: list[dict] = []
    counter = NvmlGpus(session.gpu_indices)
    energy = counter.energy_j if counter.available else None

    def on_epoch(row: dict) -> None:
        rows.append(row)
        walls = [r["wall_seconds"] for r in rows]
        per_epoch = sum(walls[1:]) / (len(walls) - 1) if len(walls) > 1 else walls[0]
        log.info(progress_line(row, spec.epochs, per_epoch * (spec.epochs - row["epoch"])))
        if progress is not None:
            pd.DataFrame([row], columns=HISTORY_COLUMNS).to_csv(
                progress, mode="a", header=not progress.exists(), index=False
            )

    try:
        fit_epochs(
            session.model,
            (data["x_train"], data["y_train"]),
            (data["x_test"], data["y_test"]),
            batch_size=spec.batch_size,
            epochs=spec.epochs,
            seed=spec.seed,
            on_epoch=on_epoch,
            epoch_steps=spec.epoch_steps,
            test_subset=spec.test_subset,
            windows=session.windows,
            feed=files_feed(session),
            energy=energy,
        )
    finally:
        counter.close()
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def saved_model_bytes(model) -> int:
    """The bytes of ``model``'s variables and its optimizer's (Adam: two moments per weight),
    the bulk of its ``.keras`` file (16,834,436 parameters: 202,013,232 of 202,055,726 B)."""
    variables = [*model.weights, *getattr(model.optimizer, "variables", [])]
    return int(sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables))


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


def write_outputs(
    session: Session,
    history: pd.DataFrame,
    out_dir: str | Path,
    calibration: tuple[dict | None, dict | None] = (None, None),
) -> dict:
    """Write ``history.csv``, ``model.keras`` and ``settings.json``; return the run's metrics
    (without telemetry, which :func:`embryo_bench.recording.record.finish_run` adds and writes).

    Args:
        calibration: the :func:`embryo_bench.recording.calibrate.matmul_probe` results just before
        and
            just after training (None: not probed).

    Returns:
        dict: target, repeat, seed, backend (as loaded), runner, cpus, gpus, n_train,
        images_per_epoch, variant (with epoch_steps, holdout, test_subset), n_test,
        batch_size, parameter_count, setup_seconds, :func:`summarise`'s times (s) and
        throughput (images/s), throughput_windows (:func:`window_summary`), jit_compile,
        steps_per_execution (the training steps Keras ran per call,
        :func:`steps_per_execution_for`),
        calibration (the probes: before, after, in GFLOP/s), flops (training FLOPs per image
        and the run's achieved GFLOP/s and efficiency,
        :func:`embryo_bench.recording.calibrate.efficiency`), label counts, threads,
        precision (the Keras dtype policy), device_memory_peak_mib (the most the framework
        held on its GPUs, MiB; None on the CPU: :func:`embryo_bench.training.backend.
        device_memory_peak_mib`), cpu_affinity, strategy, replicas_in_sync, provenance (with
        ``compute``, the settings that choose kernels, and ``devices``, what trained:
        :attr:`Session.devices`).

    Raises:
        StorageError: no space for ``model.keras`` (checked against
            :func:`saved_model_bytes` first); nothing is written then.
    """
    spec, data, out = session.spec, session.data, Path(out_dir)
    # The model first: by far the largest file, so a full disk stops the run before any
    # other output is written.
    with atomic_path(
        out / MODEL, suffix=".keras", needed_bytes=saved_model_bytes(session.model)
    ) as tmp:
        session.model.save(tmp)
    with atomic_path(out / HISTORY) as tmp:
        history.to_csv(tmp, index=False)
    windows = pd.DataFrame(session.windows, columns=WINDOW_COLUMNS)
    with atomic_path(out / WINDOWS) as tmp:
        windows.to_csv(tmp, index=False)
    kind = KINDS[spec.input_kind]
    settings = kind.settings(spec, session.preprocessing)
    write_json(out / SETTINGS, {**settings, "backend": session.backend})
    summary = summarise(history, session.images_per_epoch, spec.accuracy_target)
    classes = kind.classes(spec)
    flops = training_flops_per_image(session.model)
    before, after = calibration
    return {
        "target": spec.target,
        "repeat": spec.repeat,
        "workload": spec.workload_name,
        "input_mode": spec.input_mode,
        "input_wait": input_wait_summary(history),
        "seed": spec.seed,
        "backend": session.backend,
        "runner": spec.runner,
        "cpus": spec.cpus,
        "gpus": spec.gpus,
        "n_train": session.n_train,
        "images_per_epoch": session.images_per_epoch,
        "variant": spec.variant,
        "epoch_steps": spec.epoch_steps,
        "holdout": spec.holdout,
        "test_subset": spec.test_subset,
        "n_test": int(len(data["y_test"])),
        "batch_size": spec.batch_size,
        "parameter_count": int(session.model.count_params()),
        "setup_seconds": session.setup_seconds,
        **summary,
        "throughput_windows": window_summary(windows),
        "jit_compile": bool(getattr(session.model, "jit_compile", False)),
        "steps_per_execution": int(getattr(session.model, "steps_per_execution", 1)),
        "calibration": {"before": before, "after": after, "method": PROBE_METHOD},
        "flops": {
            "training_flops_per_image": flops["training_flops"],
            "forward_flops_per_image": flops["forward_flops"],
            **efficiency(flops["training_flops"], summary["mean_images_per_s"], before, after),
        },
        "label_counts_train": np.bincount(data["y_train"], minlength=classes).tolist(),
        "label_counts_test": np.bincount(data["y_test"], minlength=classes).tolist(),
        "threads": spec.threads,
        "precision": spec.precision,
        "device_memory_peak_mib": device_memory_peak_mib(),
        "cpu_affinity": session.cores,
        "strategy": spec.strategy,
        "replicas_in_sync": session.replicas_in_sync,
        "provenance": {
            **session.provenance,
            "compute": compute_settings(session.model),
            "devices": session.devices,
        },
    }


def run_training(
    spec: RunSpec,
    inputs: TrainingInput,
    dataset: dict,
    out_dir: str | Path,
    *,
    measure: bool = True,
) -> dict:
    """Train one run and write its outputs (:func:`setup`, :func:`train_epochs`,
    :func:`write_outputs`, :func:`embryo_bench.recording.record.finish_run`).

    Args:
        spec: the run's settings (``run.json``).
        inputs: what it trains on, of the kind its spec names
            (:class:`embryo_bench.vocabulary.spec.TrainingInput`: the augmented shards, or a
            workload's arrays and, in its ``files`` input mode, its image folder).
        dataset: the index stage's source description, or a workload's data info
            (provenance).
        out_dir: the run folder.
        measure: sample this process (telemetry.csv, RAPL energy); off inside a container,
            where the docker runner samples the container from outside and finishes the
            metrics itself.

    Returns:
        the metrics written to ``metrics.json`` (times in s, throughput in images/s), with
        wall_clock: started_unix_s and ended_unix_s (s since 1970) of the timed part (the
        probes and the training).

    Raises:
        DataError, ConfigError: as :func:`setup`.
        Interrupted: the process was tied to its parent (:mod:`embryo_bench.runners.lifeline`) and
            the parent went away before the outputs were written.
    """
    session = setup(spec, inputs, dataset)
    measurement = (
        Measurement(ProcessSampler(float(spec.cpus), session.gpu_indices, session.cores))
        if measure
        else contextlib.nullcontext()
    )
    with measurement:
        started = time.time()
        before = matmul_probe(spec.probe_seconds)
        history = train_epochs(session, out_dir)
        after = matmul_probe(spec.probe_seconds)
        ended = time.time()
    check_parent()  # nothing is written for a parent that is gone
    metrics = write_outputs(session, history, out_dir, calibration=(before, after))
    if metrics["diverged"]:
        log.warning(
            "run %s repeat %d diverged: %s (flagged diverged; no time to accuracy)",
            spec.target,
            spec.repeat,
            metrics["diverged"],
        )
    # When the timed part ran, on the wall clock: the evidence that rounds ran in their
    # planned order and that no two timed runs overlapped.
    metrics["wall_clock"] = {"started_unix_s": started, "ended_unix_s": ended}
    metrics = finish_run(out_dir, metrics, measurement if measure else None)
    (Path(out_dir) / PROGRESS).unlink(missing_ok=True)  # history.csv now holds every epoch
    return metrics

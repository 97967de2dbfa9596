"""The training loop of a run: one Keras ``fit`` call (:func:`fit_epochs`), each epoch's
training and test scoring timed apart by a callback, and the run's throughput measured about
:data:`WINDOWS_PER_EPOCH` times an epoch (:data:`WINDOW_COLUMNS`); how many steps Keras runs
per call into the backend (:func:`steps_per_execution_for`); the history's columns
(:data:`HISTORY_COLUMNS`) and its log line. :mod:`embryo_bench.training.train` runs it for a
run, ``embryo-bench batch-limit`` for its trials; it imports Keras only inside
:func:`fit_epochs`, after the backend is chosen.
"""

from __future__ import annotations

import time

import numpy as np

from .backend import input_pipeline
from .inputs import INPUT_WAIT_COLUMNS, add_input_wait, feed_errors

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
            (the paper's original script; a study that counted steps); 0: one pass over
            ``train`` per epoch. A ``feed`` must give as many (its ``steps``).
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
        feed: the training batches, ready (files mode, or arrays augmented per batch:
            :class:`embryo_bench.training.inputs.TimedFeed`, ``steps`` batches an epoch;
            ``train`` then gives only the labels' count); default: the in-memory
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
            or ``epoch_steps``, or a ``feed`` gives another number of batches an epoch
            than ``epoch_steps``.

    The batches come from :func:`embryo_bench.training.backend.input_pipeline`, built once: one
    ``fit`` call per run, not per epoch, so the input pipelines are not rebuilt and torn
    down at every epoch boundary (the source of the 10-20 s stalls at 0 % CPU per epoch of
    earlier runs).
    """
    import keras

    images_per_epoch = epoch_steps * batch_size if epoch_steps else len(train[1])
    if feed is None:
        feed = input_pipeline(*train, batch_size, shuffle=True, seed=seed, endless=epoch_steps > 0)
    elif epoch_steps and feed.steps != epoch_steps:
        raise ValueError(f"the feed gives {feed.steps} batches an epoch, not {epoch_steps}")
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

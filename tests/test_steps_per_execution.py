"""Several training steps per call into the backend (Keras's
``steps_per_execution``): the same history to the last digit, the throughput windows ending
at the same steps (with a short last execution), the original variant's fixed-step epochs
not overrun, the files feed's waits still counted, and the number recorded. Trainings run in
fresh processes (as a run does), on tiny models."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_or_skip

from embryo_bench.training.epochs import (
    MAX_STEPS_PER_EXECUTION,
    steps_per_execution_for,
    window_steps_for,
)
from embryo_bench.vocabulary.spec import Preprocessing, RunSpec

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("steps", "epoch_steps", "most", "backend", "expected"),
    [
        (102, 0, 0, "tensorflow", 10),  # the paper: windows of 10 steps, one call each
        (1100, 0, 0, "tensorflow", 10),  # TF's MNIST network at batch 50: windows of 110
        (80, 0, 0, "tensorflow", 8),  # windows of 8: the largest divisor up to 10
        (25, 0, 0, "tensorflow", 2),  # windows of 2; the epoch's last call trains one step
        (25, 25, 0, "tensorflow", 1),  # fixed-step epochs: a call may not run past their end
        (100, 100, 0, "tensorflow", 10),  # the original variant's 100-step epochs
        (1101, 0, 0, "jax", 1),  # JAX: a divisor of the epoch too
        (1100, 0, 0, "jax", 10),
        (1100, 0, 0, "torch", 1),  # Keras runs one step a call on PyTorch
        (1100, 0, 1, "tensorflow", 1),  # train.steps_per_execution 1: Keras's default
        (1100, 0, 4, "tensorflow", 2),  # at most 4 that divides 110
        (5, 0, 0, "tensorflow", 1),  # windows of one step
    ],
)
def test_steps_per_execution_divides_the_window_and_a_fixed_epoch(
    steps, epoch_steps, most, backend, expected
):
    got = steps_per_execution_for(steps, epoch_steps, most, backend)
    assert got == expected
    assert window_steps_for(steps) % got == 0 and got <= (most or MAX_STEPS_PER_EXECUTION)
    if epoch_steps or backend == "jax":
        assert steps % got == 0
    with pytest.raises(ValueError, match="steps_per_epoch 0"):
        steps_per_execution_for(0)


def test_run_json_holds_steps_per_execution_only_where_set():
    """Left out at 0 (the trainer's choice): the run.json of every run planned before the
    setting existed stays as it was, and reads back the same."""
    pp = Preprocessing(
        frame_size=480, crop_fraction=2 / 3, invert_centre=128, rotation_step=18, image_size=64
    )
    base = dict(target="t", repeat=1, runner="host", cpus=1, threads=1, gpus=0,
                backend="tensorflow", strategy="none", replicas=1, epochs=1, batch_size=8,
                learning_rate=1e-3, dropout=0.5, seed=0, accuracy_target=0.9,
                probe_seconds=0, preprocessing=pp)  # fmt: skip
    auto, four = RunSpec(**base), RunSpec(**base, steps_per_execution=4)
    assert "steps_per_execution" not in auto.to_dict()
    assert four.to_dict()["steps_per_execution"] == 4
    for spec in (auto, four):
        assert RunSpec.from_dict(json.loads(spec.to_json())) == spec


#: Trains a tiny model with 1 and with N steps per execution, from the same seed, in one
#: process, and prints per run: the history's losses and accuracies, the windows' (epoch,
#: window, steps, images), the optimizer's steps and a checksum of the weights.
DRIVER = """
import json, sys
import numpy as np
from embryo_bench.training.backend import limit_threads
limit_threads(1)
import keras
from embryo_bench.training.inputs import ArrayImages, TimedFeed
from embryo_bench.training.backend import seed_everything
from embryo_bench.training.epochs import fit_epochs
from embryo_bench.workloads.paper import build_model, compile_model

per_call, mode, batch, epoch_steps = int(sys.argv[1]), sys.argv[2], *map(int, sys.argv[3:5])
rng = np.random.default_rng(0)
x = rng.integers(0, 256, (100, 16, 16, 1), dtype=np.uint8)
y = (np.arange(100) % 4).astype(np.int32)
out = {}
for n in (1, per_call):
    seed_everything(0)
    model = compile_model(build_model(16, variant="original" if mode == "fixed" else "keras"),
                          1e-3, variant="original" if mode == "fixed" else "keras",
                          steps_per_execution=n)
    windows, kwargs = [], {}
    if mode == "fixed":
        kwargs = dict(epoch_steps=epoch_steps, test_subset=12)
    if mode == "files":
        kwargs = dict(feed=TimedFeed(ArrayImages(x, y), batch, seed=0, workers=1))
    rows = fit_epochs(model, (x, y), (x[:20], y[:20]), batch_size=batch, epochs=2, seed=0,
                      windows=windows, **kwargs)
    keys = ["train_loss", "train_accuracy", "test_loss", "test_accuracy"]
    if mode == "files":
        keys.append("input_wait_seconds")
    out[n] = {
        "history": [[r[k] for k in keys] for r in rows],
        "windows": [[w[k] for k in ("epoch", "window", "steps", "images")] for w in windows],
        "steps": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        "weights": [float(np.asarray(w, np.float64).sum()) for w in model.weights],
        "per_call": int(model.steps_per_execution),
    }
print(json.dumps(out))
"""


def _both(
    per_call: int, mode: str, batch: int = 4, epoch_steps: int = 0, backend: str = "tensorflow"
) -> tuple[dict, dict]:
    """(one step a call, ``per_call`` a call): what DRIVER prints for each, training 100
    images in batches of ``batch`` (``mode`` "memory", "files", or "fixed": the original
    variant's ``epoch_steps``)."""
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(REPO / "src")}
    argv = [str(per_call), mode, str(batch), str(epoch_steps)]
    proc = subprocess.run([sys.executable, "-c", DRIVER, *argv], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["1"], out[str(per_call)]


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_several_steps_a_call_train_the_same_history_and_windows_on_tensorflow():
    """100 images, batch 4: 25 steps an epoch, windows of 2 steps; 2 steps a call end each
    epoch with a call of one step. Losses, accuracies, weights and windows as with one."""
    one, two = _both(steps_per_execution_for(25), "memory")
    assert (one["per_call"], two["per_call"]) == (1, 2)
    assert two["history"] == one["history"]  # to the last digit
    assert two["weights"] == one["weights"]
    assert one["steps"] == two["steps"] == 50
    expected = [[e, k, 2, 8] if k < 13 else [e, 13, 1, 4] for e in (1, 2) for k in range(1, 14)]
    assert one["windows"] == two["windows"] == expected


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_fixed_step_epochs_are_not_overrun_with_several_steps_a_call():
    """The original variant's epochs of 20 steps over endless reshuffled passes of 25
    batches: 2 steps a call train exactly 20 steps an epoch (Keras runs whole calls, past an
    epoch's end where a call does not divide it: hence a divisor of epoch_steps), the same
    history as one a call, windows of 2 steps."""
    assert steps_per_execution_for(25, 25) == 1  # windows of 2 do not divide 25 steps
    per_call = steps_per_execution_for(20, 20)
    one, two = _both(per_call, "fixed", epoch_steps=20)
    assert two["per_call"] == 2 and one["steps"] == two["steps"] == 40
    assert two["history"] == one["history"] and two["weights"] == one["weights"]
    assert one["windows"] == two["windows"] == [[e, k, 2, 8] for e in (1, 2) for k in range(1, 11)]


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_a_files_feed_with_several_steps_a_call_still_times_its_waits():
    """Files input (a TimedFeed over arrays, one worker): each epoch's row has its waits with
    2 steps a call, and the same losses as with one."""
    one, two = _both(2, "files")
    assert two["per_call"] == 2 and one["steps"] == two["steps"] == 50
    assert [h[:4] for h in two["history"]] == [h[:4] for h in one["history"]]
    assert all(h[4] > 0 for h in two["history"]), two["history"]
    assert two["windows"] == one["windows"] and len(two["windows"]) == 26


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_several_steps_a_call_train_the_same_history_on_jax():
    if importlib.util.find_spec("jax") is None:
        require_or_skip("jax", "jax is not installed (optional Keras backend)")
    per_call = steps_per_execution_for(20, backend="jax")  # batch 5: 20 steps, windows of 2
    one, two = _both(per_call, "memory", batch=5, backend="jax")
    assert two["per_call"] == 2 and one["steps"] == two["steps"] == 40
    assert two["history"] == one["history"] and two["weights"] == one["weights"]
    assert two["windows"] == one["windows"] and len(two["windows"]) == 20


def test_fit_refuses_steps_per_execution_that_do_not_divide_the_window():
    import numpy as np

    from embryo_bench.training.epochs import fit_epochs
    from embryo_bench.workloads.paper import build_model, compile_model

    model = compile_model(build_model(16), steps_per_execution=3)
    x = np.zeros((40, 16, 16, 1), np.uint8)
    y = np.zeros(40, np.int32)
    with pytest.raises(ValueError, match="steps_per_execution 3 must divide the window's 2"):
        fit_epochs(model, (x, y), (x, y), batch_size=2, epochs=1, windows=[])

"""The trainer on a workload other than the paper's: its arrays, its model by its
builder, memory and files input, the input wait and the input-bound verdict, and arrays that
are not the workload's named in one line. Each training runs in its own process (as a run
does): TensorFlow's thread pools are set once per process."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from embryo_bench.data.arrays import read_arrays, write_arrays, write_synthetic
from embryo_bench.data.imagefolder import write_image_folder
from embryo_bench.planning.plan import Plan
from embryo_bench.planning.workloads import model_code
from embryo_bench.training import inputs

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())


def _spec(entry: dict, **train_changes):
    """The spec of host-1cpu repeat 1 of ``entry``: 1 epoch, no probes."""
    config = copy.deepcopy(OFFLINE)
    config["train"] |= {"probe_seconds": 0, **train_changes}
    config["workloads"] = [entry]
    config["sweeps"] = []
    plan = Plan.from_config(config, probe=lambda target: None)
    return plan.spec("host-1cpu", 1, entry["name"])


def _arrays(tmp_path: Path, spec, n_train=96, n_test=32) -> Path:
    w = spec.workload
    path = tmp_path / "arrays.npz"
    write_synthetic(path, w.input_shape, w.input_dtype, w.classes, n_train, n_test, seed=0,
                    vocabulary=w.vocabulary, dataset=w.dataset)  # fmt: skip
    return path


CATSDOGS = {"name": "catsdogs-cnn", "data": "synthetic", "epochs": 2, "batch_size": 16,
            "train_samples": 96, "test_samples": 32}  # fmt: skip


#: Runs the trainer's command in a fresh process; with SLOW_DECODE set, each image's decoding
#: first sleeps that many seconds (the trainer's files feed built with that decoder).
DRIVER = """
import functools, os, sys, time
from embryo_bench import cli
from embryo_bench.training import inputs, train

delay = float(os.environ.get("SLOW_DECODE", "0"))
if delay:
    def slow(path, shape):
        time.sleep(delay)
        return inputs.decode_image(path, shape)
    train.ImageFiles = functools.partial(inputs.ImageFiles, decode=slow)
sys.exit(cli.main(sys.argv[1:]))
"""


def _train(tmp_path: Path, spec, arrays: Path, name: str, files: Path | None = None,
           slow: float = 0.0, path: Path | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """``embryo-bench train`` of ``spec`` on ``arrays`` in a fresh process, into
    ``tmp_path/name`` (with ``path`` on its PYTHONPATH too)."""
    spec_file = tmp_path / f"{name}.json"
    spec.write(spec_file)
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"label": "SYNTHETIC"}))
    argv = ["train", "--spec", str(spec_file), "--arrays", str(arrays), "--source-info",
            str(info), "--out-dir", str(tmp_path / name)]  # fmt: skip
    if files:
        argv += ["--files", str(files)]
    python_path = os.pathsep.join(str(p) for p in (REPO / "src", path) if p)
    env = {**os.environ, "SLOW_DECODE": str(slow), "PYTHONPATH": python_path}
    return subprocess.run([sys.executable, "-c", DRIVER, *argv], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def _metrics(tmp_path: Path, name: str) -> dict:
    return json.loads((tmp_path / name / "metrics.json").read_text())


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_workload_trains_from_its_arrays_in_memory(tmp_path):
    spec = _spec({"name": "mnist-mlp", "data": "synthetic", "epochs": 1, "batch_size": 32})
    proc = _train(tmp_path, spec, _arrays(tmp_path, spec), "run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = _metrics(tmp_path, "run")
    assert (metrics["workload"], metrics["input_mode"]) == ("mnist-mlp", "memory")
    assert metrics["parameter_count"] == 669_706 and metrics["n_train"] == 96
    assert metrics["input_wait"] == {"seconds": None, "share": None, "input_bound": None}
    history = pd.read_csv(tmp_path / "run" / "history.csv")
    assert {"input_wait_seconds", "input_wait_share"} <= set(history.columns)
    settings = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert settings["workload"]["name"] == "mnist-mlp"


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_augmented_arrays_in_fixed_step_epochs_train_the_steps_asked_and_time_their_wait(
    tmp_path,
):
    """A workload trained as the V100 post's tutorial was (an endless augmenting generator,
    epochs of a fixed step count) from arrays in memory: each epoch trains epoch_steps
    batches, metrics.json says so (images_per_epoch = steps x batch), and the augmented
    feed's wait is measured (memory input without augmentation measures none)."""
    spec = _spec({**CATSDOGS, "augment": True, "epoch_steps": 9})
    assert spec.epoch_steps == 9 and spec.workload.augmentation
    proc = _train(tmp_path, spec, _arrays(tmp_path, spec), "run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = _metrics(tmp_path, "run")
    assert (metrics["epoch_steps"], metrics["images_per_epoch"]) == (9, 9 * 16)
    assert metrics["input_mode"] == "memory" and metrics["input_wait"]["seconds"] is not None
    history = pd.read_csv(tmp_path / "run" / "history.csv")
    assert len(history) == 2 and history["input_wait_seconds"].notna().all()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_real_imdb_fasttext_trains_an_embedding_of_its_datas_bigram_vocabulary(tmp_path):
    """With real IMDb (an imdb.npz in Keras's format, made here), imdb-fasttext's arrays
    carry each review's training-set bigrams and the model's embedding has the data's
    20,001 + distinct-bigram rows: 50 x vocabulary + 51 parameters, as his script's."""
    from embryo_bench.data import datasets

    reviews = [[5, 19998, 7], [1, 2, 3, 4, 5, 6], [8], [40, 41]]
    x = np.empty(4, dtype=object)
    for i, review in enumerate(reviews):
        x[i] = review
    imdb = tmp_path / "imdb.npz"
    np.savez_compressed(imdb, x_train=x, y_train=np.array([1, 0, 1, 0]), x_test=x[:2],
                        y_test=np.array([0, 1]))  # fmt: skip
    arrays = tmp_path / "arrays.npz"
    spec = _spec({"name": "imdb-fasttext", "epochs": 1, "batch_size": 2})
    info = datasets.prepare("imdb", {"imdb.npz": imdb}, arrays, shape=(400,), ngram_range=2)
    assert spec.workload.vocabulary == 0 and info["vocabulary"] > 20_001
    proc = _train(tmp_path, spec, arrays, "run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _metrics(tmp_path, "run")["parameter_count"] == 50 * info["vocabulary"] + 51


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_several_steps_a_call_record_their_number_and_train_the_same_history(tmp_path):
    """100 samples in batches of 4: 25 steps an epoch, windows of 2, so 2 steps a call (the
    last call of an epoch one); ``train.steps_per_execution: 1`` gives Keras's one. Both
    record the number that ran, train the same losses and close the same windows."""
    entry = {"name": "mnist-mlp", "data": "synthetic", "epochs": 2, "batch_size": 4}
    auto, one = _spec(entry), _spec(entry, steps_per_execution=1)
    assert (auto.steps_per_execution, one.steps_per_execution) == (0, 1)
    arrays = _arrays(tmp_path, auto, n_train=100)
    for name, spec in (("auto", auto), ("one", one)):
        proc = _train(tmp_path, spec, arrays, name)
        assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = {name: _metrics(tmp_path, name) for name in ("auto", "one")}
    assert [metrics[n]["steps_per_execution"] for n in ("auto", "one")] == [2, 1]
    assert metrics["auto"]["provenance"]["compute"]["steps_per_execution"] == 2
    columns = ["train_loss", "train_accuracy", "test_loss", "test_accuracy"]
    history = {n: pd.read_csv(tmp_path / n / "history.csv")[columns] for n in ("auto", "one")}
    pd.testing.assert_frame_equal(history["auto"], history["one"], check_exact=True)
    windows = {n: pd.read_csv(tmp_path / n / "windows.csv") for n in ("auto", "one")}
    steps = [list(windows[n]["steps"]) for n in ("auto", "one")]
    assert steps[0] == steps[1] == ([2] * 12 + [1]) * 2


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
# Its input-wait share is a timing: another test's training beside it slows the compute.
@pytest.mark.alone
def test_slowed_decoding_makes_a_files_run_input_bound_and_memory_input_does_not(tmp_path):
    """Decoding slowed on purpose (50 ms an image, one worker) flags the run input-bound with
    its share; the same workload from memory is not flagged. The sleep is long beside the
    steps' compute so that a busy machine, which slows the compute and not the sleep, still
    waits most of the time (20 ms gave a share of 0.46 under a CI run with other work)."""
    spec = _spec({**CATSDOGS, "input": "files", "workers": 1})
    arrays = _arrays(tmp_path, spec)
    x, y, _, _ = read_arrays(arrays)
    files = tmp_path / "files"
    write_image_folder(x, y, files / "train", ["cats", "dogs"])
    proc = _train(tmp_path, spec, arrays, "slow", files=files, slow=0.05)
    assert proc.returncode == 0, proc.stderr[-2000:]
    slow = _metrics(tmp_path, "slow")
    assert slow["input_mode"] == "files"
    wait = slow["input_wait"]
    assert wait["share"] > 0.5 and wait["input_bound"].startswith("input-bound: "), wait
    proc = _train(tmp_path, _spec(CATSDOGS), arrays, "memory")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _metrics(tmp_path, "memory")["input_wait"]["input_bound"] is None


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_arrays_of_another_shape_are_named_in_one_line(tmp_path):
    spec = _spec({"name": "mnist-mlp", "data": "synthetic"})
    path = tmp_path / "arrays.npz"
    x = np.zeros((4, 32, 32, 3), np.uint8)
    y = np.zeros(4, np.int32)
    write_arrays(path, x, y, x, y, {"dataset": "cifar10", "synthetic": True})
    proc = _train(tmp_path, spec, path, "run")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"embryo-bench: error: {path}: x_train holds uint8 samples of shape (32, 32, 3); "
        "workload mnist-mlp expects uint8 samples of shape (28, 28, 1)"
    )
    assert not (tmp_path / "run" / "metrics.json").exists()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_user_model_that_does_not_fit_is_refused_before_training(tmp_path, monkeypatch):
    """50 outputs for 10 classes trained and was reported like any run; now the trainer's
    setup refuses it in one line naming the setting, and writes no run."""
    (tmp_path / "mymodels.py").write_text(
        "import keras\n"
        "def wide(input_shape, classes):\n"
        "    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),\n"
        "                             keras.layers.Dense(50)])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = {"name": "mine", "model": "mymodels:wide", "dataset": "mnist", "data": "synthetic",
             "epochs": 1, "batch_size": 32, "learning_rate": 0.01}  # fmt: skip
    spec = _spec(entry)
    proc = _train(tmp_path, spec, _arrays(tmp_path, spec), "run", path=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "embryo-bench: error: workloads (mine): model 'mymodels:wide' returned a model whose "
        "output is (None, 50); expected (None, 10): one probability per class of its 10 "
        "(sparse categorical cross-entropy)"
    )
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_an_empty_training_set_is_named_not_a_batch_size_of_0():
    from embryo_bench.errors import ConfigError
    from embryo_bench.training.train import _check_batch

    spec = _spec({"name": "mnist-mlp", "data": "synthetic", "batch_size": 32})
    with pytest.raises(ConfigError) as err:
        _check_batch(spec, 0)
    assert str(err.value) == (
        "run host-1cpu repeat 1: workload mnist-mlp's arrays hold no training sample; expected "
        "at least one batch, 32 (workloads: mnist-mlp's batch_size)"
    )


def test_arrays_declaring_more_than_their_file_holds_are_refused_before_they_are_read(tmp_path):
    """A damaged header asking for 10^15 bytes ended in a MemoryError traceback."""
    import io
    import zipfile

    from embryo_bench.data.arrays import load_run_arrays
    from embryo_bench.errors import DataError

    spec = _spec({"name": "mnist-mlp", "data": "synthetic"})
    path = _arrays(tmp_path, spec, n_train=4, n_test=2)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (10**15, 28, 28, 1)}
    )
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    members["x_test.npy"] = header.getvalue() + bytes(64)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(DataError) as err:
        load_run_arrays(spec, path)
    assert str(err.value) == (
        f"{path}: x_test declares ({10**15}, 28, 28, 1) uint8 ({784 * 10**15:,} bytes), and the "
        "file holds 64 bytes of it; expected an array of its header's size (a damaged or "
        "truncated file)"
    )


def test_a_builders_code_is_hashed_as_code_and_a_users_as_its_file(tmp_path, monkeypatch):
    package = model_code("embryo_bench.workloads.minimaxir:mnist_mlp")
    assert package == model_code("embryo_bench.workloads.minimaxir:mnist_cnn")  # one module
    assert package != model_code("embryo_bench.workloads.wu:tf_mnist_deep")
    own = tmp_path / "mymodels.py"
    own.write_text("def small(input_shape, classes):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = model_code("mymodels:small")
    own.write_text("def small(input_shape, classes):\n    return 1\n")
    assert model_code("mymodels:small") != before


def test_every_catalog_augmentation_is_one_the_files_mode_applies():
    """cifar10-cnn's shifts (width/height_shift_range) failed its files runs with a
    TypeError after every job before them had run."""
    from embryo_bench.workloads.catalog import catalog

    rng = np.random.default_rng(0)
    for w in catalog().values():
        if w.augmentation and len(w.input_shape) == 3:
            augment = inputs.Augment(**dict(w.augmentation))
            x = rng.integers(0, 256, w.input_shape, dtype=np.uint8)
            assert augment.apply(x, rng).shape == x.shape, w.name

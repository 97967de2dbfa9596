"""The trainer on a workload other than the paper's (issue 32): its arrays, its model by its
builder, memory and files input, the input wait and the input-bound verdict, and arrays that
are not the workload's named in one line."""

from __future__ import annotations

import copy
import functools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from embryo_bench.data.arrays import write_arrays, write_synthetic
from embryo_bench.data.imagefolder import write_image_folder
from embryo_bench.errors import DataError
from embryo_bench.planning.plan import Plan
from embryo_bench.planning.workloads import model_code
from embryo_bench.training import inputs, train

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


@pytest.mark.slow
def test_a_workload_trains_from_its_arrays_in_memory(tmp_path):
    spec = _spec({"name": "mnist-mlp", "data": "synthetic", "epochs": 1, "batch_size": 32})
    out = tmp_path / "run"
    metrics = train.run_training(spec, [], {"label": "mnist (SYNTHETIC)"}, out,
                                 arrays=_arrays(tmp_path, spec))  # fmt: skip
    assert (metrics["workload"], metrics["input_mode"]) == ("mnist-mlp", "memory")
    assert metrics["parameter_count"] == 669_706 and metrics["n_train"] == 96
    assert metrics["input_wait"] == {"seconds": None, "share": None, "input_bound": None}
    history = pd.read_csv(out / "history.csv")
    assert {"input_wait_seconds", "input_wait_share"} <= set(history.columns)
    assert json.loads((out / "settings.json").read_text())["workload"]["name"] == "mnist-mlp"


def _slow_decode(path, shape, delay=0.02):
    time.sleep(delay)
    return inputs.decode_image(path, shape)


@pytest.mark.slow
def test_slowed_decoding_makes_a_files_run_input_bound_and_memory_input_does_not(
    tmp_path, monkeypatch
):
    """The issue's test: decoding slowed on purpose (20 ms an image, one worker) flags the
    run input-bound with its share; the same workload from memory is not flagged."""
    spec = _spec({**CATSDOGS, "input": "files", "workers": 1})
    arrays = _arrays(tmp_path, spec)
    x, y, _, _ = train.read_arrays(arrays)
    files = tmp_path / "files"
    write_image_folder(x, y, files / "train", ["cats", "dogs"])
    monkeypatch.setattr(train, "ImageFiles", functools.partial(inputs.ImageFiles,
                                                                decode=_slow_decode))  # fmt: skip
    slow = train.run_training(spec, [], {}, tmp_path / "slow", arrays=arrays, files=files)
    assert slow["input_mode"] == "files"
    wait = slow["input_wait"]
    assert wait["share"] > 0.5 and wait["input_bound"].startswith("input-bound: "), wait
    memory_spec = _spec(CATSDOGS)
    fast = train.run_training(memory_spec, [], {}, tmp_path / "memory", arrays=arrays)
    assert fast["input_wait"]["input_bound"] is None


def test_arrays_of_another_shape_are_named_in_one_line(tmp_path):
    spec = _spec({"name": "mnist-mlp", "data": "synthetic"})
    path = tmp_path / "arrays.npz"
    x = np.zeros((4, 32, 32, 3), np.uint8)
    y = np.zeros(4, np.int32)
    write_arrays(path, x, y, x, y, {"dataset": "cifar10", "synthetic": True})
    with pytest.raises(DataError) as err:
        train.setup(spec, [], {}, arrays=path)
    assert str(err.value) == (
        f"{path}: x_train holds uint8 samples of shape (32, 32, 3); workload mnist-mlp "
        "expects uint8 samples of shape (28, 28, 1)"
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

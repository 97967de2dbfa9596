"""A memory-input run holds its data once ("a run never holds more than
the dataset once plus one batch per input worker").

The paper's workload reads its augmented shards into one array per split holding each image
once, plus one shard's images while they are read (:func:`test_the_paper_shards_are_read_
into_their_arrays_once`, traced by tracemalloc: NumPy reports its data allocations to it).

Two ``embryo-bench train`` runs, each in a fresh process, of the same workload on synthetic
arrays that differ only in their training samples (about 256 MiB more in the large run):
what the runs hold that does not depend on the data (TensorFlow, the model, the batches in
flight) is the same in both, so the growth of the peak RSS from the small run to the large
one is how many times the extra data is held. Before the fix the TensorFlow pipeline held
it 3-4 times (a ``tf.constant`` of the images, captured again by tf.data when it rewrote the
pipeline's graph); now once.

The model is a tiny one of the test's own (:func:`tiny_model`, a user workload's builder),
so that a whole epoch over the data takes about a second: the data path is what is measured.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import yaml

from embryo_bench.data import stages
from embryo_bench.data.arrays import load_run_arrays, write_synthetic
from embryo_bench.errors import DataError
from embryo_bench.io import save_arrays
from embryo_bench.planning.plan import Plan
from embryo_bench.vocabulary.spec import Preprocessing

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())

#: One sample: a 64 x 64 RGB image, 12 KiB; the test also runs on 8 x 8 RGB samples (196
#: bytes with the label, about a text-generation sample's 164), where the order of the
#: indices costs as much as the data would: tf.data's shuffle buffer held about 300 B an
#: index (one tensor each), 2.17 times a text sample's data in bench_studies' probe.
SHAPE = (64, 64, 3)
SMALL_SAMPLE = (8, 8, 3)
#: What shuffling may hold per sample (B): one pass's order, int64 indices and their
#: slices (about 20 B a sample measured for 2 million).
INDEX_BYTES = 24
BATCH = 256
#: The extra training data of the large run (MiB), and the small run's training data.
EXTRA_MIB = 256
SMALL_MIB = 16
#: What the large run may hold beyond the extra data, one batch and the order of the indices
#: (MiB): the allocators' rounding and the RSS's noise between two processes. The growth
#: beyond the extra data measured 3-11 MiB (3 pairs of runs, 64 px); the old
#: pipeline's extra copies were 2-3 x 256 MiB (it grew 818 MiB).
MARGIN_MIB = 24

ENTRY = {
    "name": "memory-probe",
    "catalog": "cifar10-cnn",
    "model": "test_memory_bound:tiny_model",
    "input_shape": list(SHAPE),
    "data": "synthetic",
    "epochs": 1,
    "batch_size": BATCH,
}

#: ``embryo-bench train`` in this process, then its peak RSS (KiB) as the last line.
DRIVER = """
import resource, sys
from embryo_bench import cli
rc = cli.main(sys.argv[1:])
print("peak_rss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(rc)
"""


def tiny_model(input_shape, classes):
    """A model that costs next to nothing per sample: the images' mean colour, one dense
    layer (a user workload's builder: ``test_memory_bound:tiny_model``)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape, dtype="uint8"),
            keras.layers.Rescaling(1 / 255),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(classes, activation="softmax"),
        ]
    )


def _spec(entry: dict = ENTRY):
    config = copy.deepcopy(OFFLINE)
    config["train"] |= {"probe_seconds": 0}
    config["workloads"] = [entry]
    config["sweeps"] = []
    plan = Plan.from_config(config, probe=lambda target: None)
    return plan.spec("host-1cpu", 1, entry["name"])


def _start(tmp_path: Path, spec, n_train: int, name: str) -> subprocess.Popen:
    """``embryo-bench train`` of ``spec`` on ``n_train`` synthetic samples (one test batch),
    in a fresh process."""
    w = spec.workload
    arrays = tmp_path / f"{name}.npz"
    write_synthetic(arrays, w.input_shape, w.input_dtype, w.classes, n_train, BATCH, seed=0)
    spec_file = tmp_path / f"{name}.json"
    spec.write(spec_file)
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"label": "SYNTHETIC"}))
    argv = ["train", "--spec", str(spec_file), "--arrays", str(arrays), "--source-info",
            str(info), "--out-dir", str(tmp_path / name)]  # fmt: skip
    path = os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])
    env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.Popen([sys.executable, "-c", DRIVER, *argv], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def _peak_mib(proc: subprocess.Popen) -> float:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return int(out.strip().splitlines()[-1].split()[1]) / 1024


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
@pytest.mark.parametrize("shape", [SHAPE, SMALL_SAMPLE], ids=["64px", "8px"])
def test_a_memory_run_holds_its_training_data_once(tmp_path, shape):
    spec = _spec({**ENTRY, "input_shape": list(shape)})
    per_sample = int(np.prod(shape)) + 4  # uint8 pixels, an int32 label
    small = SMALL_MIB * 2**20 // per_sample
    big = small + EXTRA_MIB * 2**20 // per_sample
    # Both at once (each process's own peak is measured): the test's wall time halves.
    runs = {n: _start(tmp_path, spec, n, f"run-{n}") for n in (small, big)}
    peaks = {n: _peak_mib(proc) for n, proc in runs.items()}
    extra = (big - small) * per_sample / 2**20
    batch = BATCH * per_sample / 2**20
    order = (big - small) * INDEX_BYTES / 2**20
    grew = peaks[big] - peaks[small]
    assert grew <= extra + batch + order + MARGIN_MIB, (
        f"the peak RSS grew by {grew:.0f} MiB for {extra:.0f} MiB more training data "
        f"({grew / extra:.2f} times it); bound: the data once + one batch ({batch:.1f} MiB) "
        f"+ the order of the indices ({order:.1f} MiB) + {MARGIN_MIB} MiB"
    )


def test_a_files_run_keeps_none_of_its_training_images_in_memory(tmp_path):
    """Files input reads the training images from files; the arrays' training images are
    dropped, not kept alive by an empty view of them (``x_train[:0]`` held them all)."""
    spec = _spec({**ENTRY, "input": "files"})
    arrays = tmp_path / "arrays.npz"
    write_synthetic(arrays, SHAPE, "uint8", spec.workload.classes, 64, 8, seed=0)
    data = load_run_arrays(spec, arrays)
    x = data["x_train"]
    assert x.shape == (0, *SHAPE) and x.dtype == "uint8"
    assert x.base is None, "an empty view that keeps the training images alive"
    assert len(data["y_train"]) == 64 and data["x_test"].shape == (8, *SHAPE)


def _augment_shard(path: Path, rng, n: int, size: int = 64) -> dict:
    """An augment-stage shard of ``n`` random images of ``size`` px (both splits), its
    settings saying 64 px; its arrays."""
    settings = {
        "stage": "augment",
        "preprocessing": Preprocessing(
            frame_size=48, crop_fraction=0.5, invert_centre=128, rotation_step=90.0, image_size=64
        ),
    }
    arrays = {
        "images": rng.integers(0, 256, (n, size, size), dtype=np.uint8),
        "cells": rng.integers(1, 5, n).astype(np.int8),
        "split": np.where(rng.random(n) < 0.8, "train", "test"),
        "embryo": np.full(n, "E01"),
        "frame": np.arange(n).astype(str),
        "angle": np.zeros(n, np.float32),
    }
    record = {**settings, "preprocessing": settings["preprocessing"].to_dict()}
    save_arrays(path, **arrays, settings=np.array(json.dumps(record, sort_keys=True)))
    return arrays


def test_the_paper_shards_are_read_into_their_arrays_once(tmp_path):
    """Eight shards, 16 MiB of images: the peak of what load_dataset allocates is the arrays
    it returns plus the largest shard's images (read one at a time), plus 1 MiB (the labels,
    splits and masks: under 0.2 MiB here; NumPy's reading buffer 0.25 MiB). Concatenating
    every shard and then splitting held the images 3 times. The arrays are the shards'
    samples in order, split as a concatenation would split them."""
    rng = np.random.default_rng(0)
    shards = [tmp_path / f"a-{k}.npz" for k in range(8)]
    parts = [_augment_shard(p, rng, int(rng.integers(400, 600))) for p in shards]
    tracemalloc.start()
    try:
        data, _ = stages.load_dataset(shards)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held = sum(a.nbytes for a in data.values())
    largest = max(p["images"].nbytes for p in parts)
    assert peak <= held + largest + 2**20, f"peak {peak / held:.2f} times the arrays returned"
    images = np.concatenate([p["images"] for p in parts])
    cells = np.concatenate([p["cells"] for p in parts]).astype(np.int32)
    split = np.concatenate([p["split"] for p in parts])
    assert list(data) == ["x_train", "y_train", "x_test", "y_test"]
    for name in ("train", "test"):
        assert np.array_equal(data[f"x_{name}"], images[split == name][..., None])
        assert data[f"y_{name}"].dtype == np.int32
        assert np.array_equal(data[f"y_{name}"], cells[split == name] - 1)


def test_a_shard_of_other_images_is_named(tmp_path):
    rng = np.random.default_rng(0)
    _augment_shard(tmp_path / "a-0.npz", rng, 20)
    _augment_shard(tmp_path / "a-1.npz", rng, 20, size=32)
    with pytest.raises(DataError) as err:
        stages.load_dataset([tmp_path / "a-0.npz", tmp_path / "a-1.npz"])
    assert str(err.value) == (
        f"{tmp_path / 'a-1.npz'}: images of uint8 (32, 32); {tmp_path / 'a-0.npz'} holds "
        "uint8 (64, 64); expected the same in every shard"
    )

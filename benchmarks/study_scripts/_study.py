"""What benchmarks/bench_studies.py changes in every study script: where its data comes from
and how long it trains. Not part of any study.

The scripts of this folder call :func:`setting` where the original hard-coded a number (epochs,
iterations, steps per epoch, a switch) and :func:`load_data` / :func:`read_data_sets` where the
original downloaded its dataset. Run by hand with no ``STUDY_*`` variables set, each script
keeps its published settings; it still needs ``STUDY_ARRAYS`` (or, for the cats-vs-dogs
tutorial, its image folders), since the real datasets are not downloaded here.

Environment:
    STUDY_ARRAYS: a prepared-arrays file (``embryo_bench.data.arrays``: uncompressed ``.npz``
        with x_train, y_train, x_test, y_test; samples uint8 (N, H, W, C) or int32 (N, T),
        labels int32 (N,)).
    STUDY_SETTINGS: JSON object of settings that replace the scripts' own (e.g.
        ``{"epochs": 3}``).
"""

from __future__ import annotations

import json
import os
import resource
import time

import numpy as np

#: (wall s, process CPU s) at the start of each epoch of the Deep MNIST tutorial's loop, and
#: once more at the first batch after its last timed epoch (read by the benchmark).
EPOCH_MARKS: list[tuple[float, float]] = []


def setting(name: str, default):
    """The benchmark's value for the script's setting ``name`` (``STUDY_SETTINGS``), else the
    script's own ``default``."""
    return json.loads(os.environ.get("STUDY_SETTINGS", "{}")).get(name, default)


def _arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    with np.load(os.environ["STUDY_ARRAYS"], allow_pickle=False) as npz:
        return tuple(npz[k] for k in ("x_train", "y_train", "x_test", "y_test"))


def load_data(dataset: str):
    """The benchmark's arrays in the form ``keras.datasets.<dataset>.load_data()`` returned:
    ``((x_train, y_train), (x_test, y_test))``.

    mnist: images uint8 (N, 28, 28), labels (N,); cifar10: images uint8 (N, 32, 32, 3),
    labels (N, 1); imdb: a list of token-id lists (the benchmark's are all T long, already cut
    and padded; the original's had any length), labels (N,).
    """
    x_train, y_train, x_test, y_test = _arrays()
    if dataset == "mnist":
        x_train, x_test = x_train[..., 0], x_test[..., 0]
    elif dataset == "cifar10":
        y_train, y_test = y_train[:, None], y_test[:, None]
    elif dataset == "imdb":
        x_train, x_test = [s.tolist() for s in x_train], [s.tolist() for s in x_test]
    else:
        raise ValueError(f"no load_data for {dataset!r}")
    return (x_train, y_train), (x_test, y_test)


def text_sequences():
    """The text scripts' cut corpus from the benchmark's arrays: (sentences, next_chars,
    chars): each sentence a sequence of character ids (int32 (T,)), the id that follows it,
    and the characters (ids 0..vocabulary-1, for ``len(chars)``; the vocabulary the arrays'
    ``info`` records, else the largest id + 1)."""
    x_train, y_train, _, _ = _arrays()
    with np.load(os.environ["STUDY_ARRAYS"], allow_pickle=False) as npz:
        vocabulary = json.loads(str(npz["info"])).get("vocabulary") or 0
    vocabulary = vocabulary or int(max(x_train.max(initial=0), y_train.max(initial=0))) + 1
    return list(x_train), list(y_train), list(range(vocabulary))


class DataSet:
    """The training or test split as TensorFlow 1's ``input_data.DataSet`` held it:
    ``images`` float32 (N, 784) in [0, 1], ``labels`` one-hot float32 (N, 10), and
    :meth:`next_batch`, which starts each epoch on a new permutation (as the original, whose
    batches never straddle an epoch when the batch divides N; the benchmark's does).

    A timed split records (wall, CPU) in :data:`EPOCH_MARKS` when each epoch's first batch is
    asked for: the tutorial's steps run synchronously, so that is when the previous epoch's
    training ended.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, timed: bool = False, seed=0):
        self.images = images.reshape(len(images), -1).astype(np.float32) / 255.0
        self.labels = np.eye(10, dtype=np.float32)[labels]
        self.timed = timed
        self._rng = np.random.default_rng(seed)
        self._order = np.arange(len(labels))
        self._next = len(labels)  # the first call starts epoch 1

    def next_batch(self, batch_size: int):
        """The next ``batch_size`` images and labels (float32 (B, 784), (B, 10))."""
        if self._next + batch_size > len(self._order):
            if self.timed:
                usage = resource.getrusage(resource.RUSAGE_SELF)
                EPOCH_MARKS.append((time.perf_counter(), usage.ru_utime + usage.ru_stime))
            self._order = self._rng.permutation(len(self._order))
            self._next = 0
        idx = self._order[self._next : self._next + batch_size]
        self._next += batch_size
        return self.images[idx], self.labels[idx]


class _Splits:
    def __init__(self, train: DataSet, test: DataSet):
        self.train, self.test = train, test


def read_data_sets(one_hot: bool = True) -> _Splits:
    """The benchmark's MNIST arrays as ``input_data.read_data_sets(dir, one_hot=True)``
    returned them (``.train`` timed, ``.test``); one-hot labels only."""
    if not one_hot:
        raise ValueError("the Deep MNIST tutorial reads one-hot labels")
    x_train, y_train, x_test, y_test = _arrays()
    return _Splits(DataSet(x_train, y_train, timed=True), DataSet(x_test, y_test))

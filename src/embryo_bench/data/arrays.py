"""The prepared-arrays file every workload trains from, and synthetic data of any shape.

A prepared-arrays file is an uncompressed ``.npz`` (``np.savez``, read back with
``allow_pickle=False``) holding ``x_train``, ``y_train``, ``x_test``, ``y_test`` and ``info``:
samples as stored (images uint8 (N, H, W, C), sequences int32 (N, T)), labels int32 (N,),
and a JSON description (the dataset, whether it is SYNTHETIC, the inputs' sha256, counts).
It is written atomically (:func:`embryo_bench.io.save_arrays`), so a failed preparation
leaves no file that looks complete.

Synthetic arrays (:func:`synthetic_arrays`) have a workload's shape, dtype and class count,
are the same for the same seed, and carry a class-dependent signal so that accuracy can move;
their ``info`` says ``"synthetic": true``, so every figure and table made from them can say
SYNTHETIC (accuracy is meaningless there, speed is valid).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataError
from ..io import check_format, load_arrays, save_arrays
from ..vocabulary.spec import RunSpec
from .npzcheck import check_npz

#: The arrays of a prepared-arrays file, in the order :func:`read_arrays` returns them.
ARRAY_KEYS = ("x_train", "y_train", "x_test", "y_test")
#: The key of the JSON description.
INFO_KEY = "info"
#: The dtypes a sample may have: images uint8, sequences int32 (token or character ids).
SAMPLE_DTYPES = ("uint8", "int32")
#: The dtype of the labels.
LABEL_DTYPE = np.dtype("int32")
#: Version of the prepared-arrays file's layout (``info["format"]``).
ARRAYS_FORMAT = 1
#: Samples generated at a time by :func:`synthetic_arrays` (bounds its temporary memory).
_CHUNK = 1024
#: Share of a synthetic sequence's positions that carry its class's marker tokens.
_MARKER_SHARE = 0.25
#: Marker tokens per class in synthetic sequences.
_MARKERS = 8


def write_arrays(
    path: str | os.PathLike,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    info: dict,
) -> dict:
    """Write a prepared-arrays file atomically (nothing at ``path`` until it is complete).

    Args:
        path: the ``.npz`` file.
        x_train, x_test: samples, uint8 or int32, shape (N, *sample_shape) with the same
            sample shape.
        y_train, y_test: int32 labels, shape (N,).
        info: JSON-serialisable description; ``format``, the counts, ``shape`` and ``dtype``
            are filled in (the ``synthetic`` flag defaults to False).

    Returns:
        the info as written.

    Raises:
        DataError: arrays that :func:`read_arrays` would refuse (checked before writing).
        StorageError: no space left (:func:`embryo_bench.io.atomic_path`).
    """
    arrays = dict(zip(ARRAY_KEYS, (x_train, y_train, x_test, y_test), strict=True))
    _check_arrays(path, arrays)
    info = {
        "format": ARRAYS_FORMAT,
        "synthetic": False,
        **info,
        "train": int(len(x_train)),
        "test": int(len(x_test)),
        "shape": list(x_train.shape[1:]),
        "dtype": str(x_train.dtype),
    }
    save_arrays(path, **arrays, **{INFO_KEY: np.array(json.dumps(info, sort_keys=True))})
    return info


def _check_arrays(
    path: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
    classes: int | None = None,
) -> None:
    """Raise DataError naming ``path`` unless the four arrays are a consistent dataset."""
    x_train, y_train, x_test, y_test = (arrays[k] for k in ARRAY_KEYS)
    for key in ("x_train", "x_test"):
        x = arrays[key]
        if x.ndim < 2 or str(x.dtype) not in SAMPLE_DTYPES:
            raise DataError(
                f"{path}: {key} is {x.dtype} with shape {x.shape}; expected uint8 or int32 "
                "samples of shape (N, *sample_shape)"
            )
    if x_test.dtype != x_train.dtype or x_test.shape[1:] != x_train.shape[1:]:
        raise DataError(
            f"{path}: x_test is {x_test.dtype} {x_test.shape[1:]} per sample; expected the same "
            f"as x_train ({x_train.dtype} {x_train.shape[1:]})"
        )
    if shape is not None and tuple(x_train.shape[1:]) != tuple(shape):
        raise DataError(
            f"{path}: samples of shape {tuple(x_train.shape[1:])}; expected {tuple(shape)}"
        )
    if dtype is not None and str(x_train.dtype) != dtype:
        raise DataError(f"{path}: samples of dtype {x_train.dtype}; expected {dtype}")
    for xk, yk in (("x_train", "y_train"), ("x_test", "y_test")):
        y = arrays[yk]
        if y.dtype != LABEL_DTYPE or y.ndim != 1:
            raise DataError(
                f"{path}: {yk} is {y.dtype} with shape {y.shape}; expected int32 labels (N,)"
            )
        if len(y) != len(arrays[xk]):
            raise DataError(
                f"{path}: {len(y)} labels in {yk} for {len(arrays[xk])} samples in {xk}; "
                "expected one label per sample"
            )
        if len(y) and (y.min() < 0 or (classes is not None and y.max() >= classes)):
            bound = f"0..{classes - 1}" if classes is not None else "0 or more"
            raise DataError(
                f"{path}: {yk} holds labels {int(y.min())}..{int(y.max())}; expected {bound}"
            )


def read_arrays(
    path: str | os.PathLike,
    *,
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
    classes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read a prepared-arrays file (into memory, once) and check it.

    Args:
        path: the ``.npz`` file :func:`write_arrays` wrote.
        shape, dtype, classes: when given, what the samples' shape and dtype must be and the
            bound on the labels (a workload's input).

    Returns:
        ``(x_train, y_train, x_test, y_test)``: samples (N, *shape) uint8 or int32, labels
        (N,) int32.

    Raises:
        DataError: naming ``path``: missing or unreadable, an array missing, a dtype or length
            that is not as expected, labels out of range, a newer format.
    """
    arrays = load_arrays(path, required=(*ARRAY_KEYS, INFO_KEY))
    _info(path, arrays[INFO_KEY])
    _check_arrays(path, arrays, shape, dtype, classes)
    return tuple(arrays[k] for k in ARRAY_KEYS)


def _info(path: str | os.PathLike, value: np.ndarray) -> dict:
    if value.shape != () or value.dtype.kind != "U":
        raise DataError(f"{path}: {INFO_KEY} is {value.dtype} {value.shape}; expected JSON text")
    try:
        info = json.loads(str(value))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: {INFO_KEY} is not valid JSON ({exc})") from None
    if not isinstance(info, dict):
        raise DataError(f"{path}: {INFO_KEY} is not a JSON object")
    check_format(info, ARRAYS_FORMAT, str(path))
    return info


def read_info(path: str | os.PathLike) -> dict:
    """The description stored in a prepared-arrays file (without reading its arrays).

    Returns:
        the dict :func:`write_arrays` returned: ``format``, ``synthetic``, ``dataset``,
        ``train``, ``test``, ``shape``, ``dtype``, ...

    Raises:
        DataError: the file is missing or unreadable, or has no valid ``info``.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            if INFO_KEY not in npz.files:
                raise DataError(f"{path}: no {INFO_KEY}; has {sorted(npz.files)}")
            value = npz[INFO_KEY]
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: not a readable .npz array file ({exc})") from exc
    return _info(path, value)


def _synthetic_images(
    rng: np.random.Generator, templates: np.ndarray, y: np.ndarray, shape: tuple[int, ...]
) -> np.ndarray:
    x = np.empty((len(y), *shape), dtype=np.uint8)
    for start in range(0, len(y), _CHUNK):
        part = slice(start, start + _CHUNK)
        noise = rng.integers(0, 256, size=x[part].shape, dtype=np.uint8)
        x[part] = noise // 2 + templates[y[part]] // 2
    return x


def _synthetic_sequences(
    rng: np.random.Generator, markers: np.ndarray, y: np.ndarray, length: int, vocabulary: int
) -> np.ndarray:
    x = rng.integers(1, vocabulary, size=(len(y), length), dtype=np.int32)
    marked = rng.random(size=x.shape) < _MARKER_SHARE
    pick = rng.integers(0, markers.shape[1], size=x.shape)
    x[marked] = markers[np.broadcast_to(y[:, None], x.shape)[marked], pick[marked]]
    return x


def synthetic_arrays(
    shape: tuple[int, ...],
    dtype: str,
    classes: int,
    n_train: int,
    n_test: int,
    seed: int,
    *,
    vocabulary: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic training and test sets of a workload's shape, dtype and class count.

    Images are uint8 noise averaged with one fixed random pattern per class; sequences are
    random token ids in ``1..vocabulary-1`` with a quarter of the positions drawn from 8
    marker tokens of the sample's class. Labels are balanced (as equal counts as ``n``
    allows) in a random order. The same arguments give the same arrays; the test set does not
    depend on ``n_train`` (separate random streams of ``seed``). Memory: the arrays, plus one
    chunk of 1,024 samples while images are made.

    Args:
        shape: one sample, e.g. (64, 64, 3) for images or (400,) for sequences.
        dtype: "uint8" (images) or "int32" (token ids).
        classes: number of classes (>= 2).
        n_train, n_test: samples in each set (>= 0).
        seed: the random seed.
        vocabulary: int32 sequences only: token ids are < ``vocabulary`` (>= 2).

    Returns:
        ``(x_train, y_train, x_test, y_test)``: samples (n, *shape) of ``dtype``, labels (n,)
        int32 in ``0..classes-1``.

    Raises:
        ConfigError: a dtype other than uint8/int32, fewer than 2 classes, a negative count,
            or int32 sequences without a vocabulary of at least 2.
    """
    shape = tuple(int(s) for s in shape)
    if dtype not in SAMPLE_DTYPES:
        raise ConfigError(f"synthetic data: dtype {dtype!r}; expected one of {SAMPLE_DTYPES}")
    if classes < 2 or n_train < 0 or n_test < 0 or not shape or min(shape) < 1:
        raise ConfigError(
            f"synthetic data: {classes} classes, {n_train} training and {n_test} test samples "
            f"of shape {shape}; expected at least 2 classes, counts >= 0 and a non-empty shape"
        )
    if dtype == "int32" and vocabulary < 2:
        raise ConfigError(
            f"synthetic data: int32 sequences with vocabulary {vocabulary}; expected a "
            "vocabulary of at least 2 token ids"
        )
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    if dtype == "uint8":
        signal = streams[0].integers(0, 256, size=(classes, *shape), dtype=np.uint8)
    else:
        signal = streams[0].integers(1, vocabulary, size=(classes, _MARKERS), dtype=np.int32)
    out = []
    for rng, n in zip(streams[1:], (n_train, n_test), strict=True):
        y = rng.permutation(np.arange(n) % classes).astype(LABEL_DTYPE)
        if dtype == "uint8":
            x = _synthetic_images(rng, signal, y, shape)
        else:
            x = _synthetic_sequences(rng, signal, y, int(np.prod(shape)), vocabulary)
            x = x.reshape(n, *shape)
        out += [x, y]
    return tuple(out)


def write_synthetic(
    path: str | os.PathLike,
    shape: tuple[int, ...],
    dtype: str,
    classes: int,
    n_train: int,
    n_test: int,
    seed: int,
    *,
    vocabulary: int = 0,
    dataset: str = "",
) -> dict:
    """Write :func:`synthetic_arrays` as a prepared-arrays file marked SYNTHETIC.

    Args:
        path: the ``.npz`` file.
        dataset: the dataset whose shape it imitates (recorded in the info).
        others: as :func:`synthetic_arrays`.

    Returns:
        the info written: ``synthetic`` True, ``dataset``, ``seed``, ``classes``,
        ``vocabulary``, counts, shape, dtype.

    Raises:
        ConfigError: as :func:`synthetic_arrays`. StorageError: no space left.
    """
    arrays = synthetic_arrays(shape, dtype, classes, n_train, n_test, seed, vocabulary=vocabulary)
    info = {
        "synthetic": True,
        "dataset": dataset,
        "seed": seed,
        "classes": classes,
        "vocabulary": vocabulary,
    }
    return write_arrays(Path(path), *arrays, info)


def load_run_arrays(spec: RunSpec, arrays: str | os.PathLike) -> dict:
    """A run's data of input kind arrays: its workload's arrays, checked against the spec's
    input shape, dtype and classes; in the ``files`` input mode without the training samples
    (the trainer reads them from the image files).

    Returns:
        ``x_train``, ``y_train``, ``x_test``, ``y_test`` (as :func:`read_arrays`; ``x_train``
        empty, of the samples' shape, in files mode), and ``vocabulary``: token ids are below
        it (int; the spec's, else the arrays' own where the data decides it, as
        imdb-fasttext's bigrams do; 0 for images).

    Raises:
        DataError: the arrays are missing, damaged (an array declaring more than the file
            holds is refused before it is read: :func:`embryo_bench.data.npzcheck.check_npz`)
            or not the workload's shape, or token ids at or above the vocabulary (or none
            recorded where the spec leaves it to the data).
    """
    w = spec.workload
    # Headers first: a damaged one would have numpy allocate what it declares.
    check_npz(arrays)
    x_train, y_train, x_test, y_test = read_arrays(arrays)
    for name, x in (("x_train", x_train), ("x_test", x_test)):
        if x.shape[1:] != w.input_shape or x.dtype != np.dtype(w.input_dtype):
            raise DataError(
                f"{arrays}: {name} holds {x.dtype} samples of shape {x.shape[1:]}; workload "
                f"{w.name} expects {w.input_dtype} samples of shape {w.input_shape}"
            )
    for name, y in (("y_train", y_train), ("y_test", y_test)):
        if len(y) and (int(y.min()) < 0 or int(y.max()) >= w.classes):
            raise DataError(
                f"{arrays}: {name} holds labels {int(y.min())}..{int(y.max())}; workload "
                f"{w.name} has {w.classes} classes (labels 0..{w.classes - 1})"
            )
    vocabulary = 0
    if w.input_dtype == "int32":
        vocabulary = w.vocabulary or int(read_info(arrays).get("vocabulary") or 0)
        if not vocabulary:
            raise DataError(
                f"{arrays}: no vocabulary recorded; workload {w.name}'s embedding is sized by "
                "its data's (expected the arrays of its workload_data rule)"
            )
        top = max((int(x.max()) for x in (x_train, x_test) if x.size), default=0)
        if top >= vocabulary:
            raise DataError(
                f"{arrays}: token id {top}; workload {w.name}'s vocabulary is {vocabulary} "
                f"(ids 0..{vocabulary - 1})"
            )
    if w.input_mode == "files":
        # The training images come from files: not held in memory as well (an empty array
        # of their own: a slice ``x_train[:0]`` would keep the whole array alive); the test
        # set is scored from memory.
        x_train = np.empty((0, *x_train.shape[1:]), x_train.dtype)
    return {
        "x_train": x_train,
        "y_train": y_train,
        "x_test": x_test,
        "y_test": y_test,
        "vocabulary": vocabulary,
    }

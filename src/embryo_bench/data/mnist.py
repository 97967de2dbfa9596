"""MNIST in its two published forms: Keras's ``mnist.npz`` (as ``keras.datasets.mnist``
loads it, for minimaxir's scripts) and the idx files TensorFlow's MNIST tutorial reads
(``train-images-idx3-ubyte.gz`` ..., for Wu et al.'s network).

Both give the same 60,000 training and 10,000 test images: uint8 (N, 28, 28, 1) with a
channel axis (a view, no copy) and int32 labels 0..9.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..io import load_arrays
from .npzcheck import check_npz

#: Image side in pixels.
SIDE = 28
#: Classes (digits): every label is below it.
CLASSES = 10
#: The idx magic numbers: 0x0000 0803 (unsigned bytes, 3 dimensions: images) and
#: 0x0000 0801 (unsigned bytes, 1 dimension: labels).
IDX_IMAGES, IDX_LABELS = 0x0803, 0x0801
#: The keys of Keras's mnist.npz.
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")


def _limited(a: np.ndarray, limit: int) -> np.ndarray:
    """The first ``limit`` samples (all when 0), as their own array when cut (so the rest is
    freed)."""
    return a[:limit].copy() if 0 < limit < len(a) else a


def _check_labels(path: str | os.PathLike, key: str, y: np.ndarray) -> None:
    """Refuse a label outside 0..9: the arrays are written as 10 classes, and a label beyond
    them was read as a sample of no class (a training run's loss undefined for it)."""
    if y.dtype.kind not in "iu":
        raise DataError(f"{path}: {key} holds {y.dtype} labels; expected integers 0..{CLASSES - 1}")
    bad = np.flatnonzero((y < 0) | (y >= CLASSES))
    if len(bad):
        at = int(bad[0])
        raise DataError(
            f"{path}: {key} holds label {int(y[at])} (at {at}); expected 0..{CLASSES - 1}, one "
            "of the digits' classes"
        )


def _check_images(path: str | os.PathLike, key: str, x: np.ndarray, y: np.ndarray) -> None:
    if x.dtype != np.uint8 or x.shape[1:] != (SIDE, SIDE):
        raise DataError(
            f"{path}: {key} is {x.dtype} with shape {x.shape}; expected uint8 images "
            f"(N, {SIDE}, {SIDE})"
        )
    if len(y) != len(x) or y.ndim != 1:
        raise DataError(
            f"{path}: {len(y)} labels of shape {y.shape} for {len(x)} images in {key}; "
            "expected one label per image"
        )
    _check_labels(path, key.replace("x_", "y_"), y)


def load_npz(
    path: str | os.PathLike, *, limit_train: int = 0, limit_test: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read Keras's ``mnist.npz`` (plain arrays: read with ``allow_pickle=False``).

    Args:
        path: the file.
        limit_train, limit_test: keep only the first N samples (0: all).

    Returns:
        ``(x_train, y_train, x_test, y_test)``: uint8 (N, 28, 28, 1), int32 (N,).

    Raises:
        DataError: naming ``path``: not a readable npz (truncated, not a zip), a key missing,
            an array that declares more data than the file holds (before it is read:
            :func:`.npzcheck.check_npz`), arrays of another shape or dtype, a label count
            that differs from the images', a label outside 0..9.
    """
    check_npz(path)
    arrays = load_arrays(path, required=NPZ_KEYS)
    out = []
    for split, limit in (("train", limit_train), ("test", limit_test)):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        _check_images(path, f"x_{split}", x, y)
        out += [_limited(x, limit)[..., None], _limited(y, limit).astype(np.int32)]
    return tuple(out)


def read_idx(path: str | os.PathLike, magic: int) -> np.ndarray:
    """Read one idx file (gzip-compressed when its name ends in ``.gz``) of unsigned bytes.

    The format (LeCun's MNIST page): a big-endian int32 magic number (0x0803 images, 0x0801
    labels: the last byte is the number of dimensions), one big-endian int32 per dimension,
    then the bytes, row by row.

    Args:
        path: the file.
        magic: the magic number expected (:data:`IDX_IMAGES` or :data:`IDX_LABELS`).

    Returns:
        uint8 array of the dimensions the header gives (read-only view of the bytes read).

    Raises:
        DataError: naming ``path``: a truncated or corrupt gzip stream, another magic number,
            or a data size that is not the product of the dimensions.
    """
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read()
        else:
            data = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except (EOFError, OSError, zlib.error) as exc:
        raise DataError(f"{path}: not a complete gzip file, truncated or corrupt ({exc})") from exc
    ndim = magic & 0xFF
    header = 4 * (1 + ndim)
    found = int.from_bytes(data[:4], "big") if len(data) >= 4 else None
    if found != magic:
        shown = f"0x{found:08x}" if found is not None else f"{len(data)} bytes only"
        raise DataError(
            f"{path}: idx magic number {shown}; expected 0x{magic:08x} (unsigned bytes, "
            f"{ndim} dimension{'s' if ndim > 1 else ''})"
        )
    if len(data) < header:
        raise DataError(f"{path}: {len(data)} bytes; expected an idx header of {header} bytes")
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    # Python's integers: a 64-bit product of sizes up to 2^32 each wraps (2^22 x 2^22 x 2^20
    # read as 0, matching an empty file).
    expected = math.prod(dims)
    if len(data) - header != expected:
        raise DataError(
            f"{path}: {len(data) - header:,} data bytes after the header; expected "
            f"{' x '.join(map(str, dims))} = {expected:,} (truncated or padded?)"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def load_idx(
    images: str | os.PathLike, labels: str | os.PathLike, *, limit: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Read one split from its idx image and label files.

    Returns:
        ``(x, y)``: uint8 (N, 28, 28, 1), int32 (N,).

    Raises:
        DataError: as :func:`read_idx`; images that are not 28 x 28, a label count that
            differs from the image count (naming both files), or a label outside 0..9.
    """
    x = read_idx(images, IDX_IMAGES)
    y = read_idx(labels, IDX_LABELS)
    if x.shape[1:] != (SIDE, SIDE):
        raise DataError(f"{images}: images of {x.shape[1:]} pixels; expected {SIDE} x {SIDE}")
    if len(y) != len(x):
        raise DataError(
            f"{labels}: {len(y)} labels for the {len(x)} images of {images}; expected one "
            "label per image"
        )
    _check_labels(labels, "the file", y)
    return _limited(x, limit)[..., None], _limited(y, limit).astype(np.int32)

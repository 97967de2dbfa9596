"""Preparing a dataset of the registry (:mod:`.registry`) into the prepared-arrays file the
trainer reads (:mod:`.arrays`), from the files :func:`.fetch.fetch` got: one loader module per
format (:mod:`.mnist`, :mod:`.cifar10`, :mod:`.imdb`, :mod:`.textcorpus`,
:mod:`.imagefolder`), the arrays written atomically. ``get``, ``Dataset`` and ``DatasetFile``
are the registry's (imported here for the callers of :func:`prepare`). No Keras here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataError
from ..io import sha256_file, sha256_tree
from . import cifar10, imagefolder, imdb, mnist, textcorpus
from .arrays import write_arrays, write_synthetic
from .classnames import check_class_names
from .formats import FOLDER, FORMATS
from .registry import Dataset, DatasetFile, check_loadable, get, sample_shape_problem

__all__ = ["Dataset", "DatasetFile", "get", "prepare", "prepare_synthetic"]


def _crop(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The central (h, w) of (N, H, W, C) images, as TensorFlow's CIFAR-10 tutorial crops its
    evaluation images (``resize_image_with_crop_or_pad``)."""
    top, left = (x.shape[1] - shape[0]) // 2, (x.shape[2] - shape[1]) // 2
    return np.ascontiguousarray(x[:, top : top + shape[0], left : left + shape[1]])


def _sample_shape(ds: Dataset, shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """The shape to prepare, checked against what the dataset's loader can give
    (:func:`.registry.sample_shape_problem`)."""
    if shape is None:
        return ds.shape
    shape = tuple(int(s) for s in shape)
    expected = sample_shape_problem(ds, shape)
    if expected:
        raise ConfigError(f"dataset {ds.name!r}: sample shape {shape}; expected {expected}")
    return shape


def _mnist_npz(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    return mnist.load_npz(files["mnist.npz"], **limits), None


def _mnist_idx(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    arrays = (
        *mnist.load_idx(
            files["train-images-idx3-ubyte.gz"],
            files["train-labels-idx1-ubyte.gz"],
            limit=limits["limit_train"],
        ),
        *mnist.load_idx(
            files["t10k-images-idx3-ubyte.gz"],
            files["t10k-labels-idx1-ubyte.gz"],
            limit=limits["limit_test"],
        ),
    )
    return arrays, None


def _cifar10_binary(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    *arrays, names = cifar10.load_binary(files["cifar-10-binary.tar.gz"], **limits)
    return arrays, names


def _imdb_npz(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    return imdb.load_npz(files["imdb.npz"], maxlen=shape[0], num_words=vocabulary, **limits), None


def _text_chars(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    (path,) = (files[f.name] for f in ds.files)
    *arrays, names = textcorpus.load_chars(
        path, length=shape[0], step=ds.step, classes=ds.classes, limit_train=limits["limit_train"]
    )
    return arrays, names


def _image_folder(ds: Dataset, files: dict[str, Path], shape, vocabulary, limits) -> tuple:
    train = ds.split_folder(files[FOLDER], "train")
    x_train, y_train, names = imagefolder.read_image_folder(
        train, shape, classes=ds.classes, limit=limits["limit_train"]
    )
    # Its class folders' names become folder names again (workload-files).
    check_class_names(names, str(train), classes=ds.classes)
    test = ds.split_folder(files[FOLDER], "test")
    x_test, y_test, test_names = imagefolder.read_image_folder(
        test, shape, classes=ds.classes, limit=limits["limit_test"]
    )
    if test_names != names:
        raise DataError(f"{test}: class folders {test_names}; expected the train split's {names}")
    return (x_train, y_train, x_test, y_test), names


#: Each format's loader (:data:`.formats.FORMATS` names the same formats: a test holds the two
#: to one set): ``loader(ds, files, shape, vocabulary, limits)`` gives the four arrays
#: (x_train, y_train, x_test, y_test: samples of ``shape`` in the dataset's dtype, int32
#: labels) and the class names where the files give them, else None. ``files`` are the paths
#: by file name (an image folder's under :data:`.formats.FOLDER`), ``limits`` the
#: ``limit_train`` and ``limit_test`` sample counts (0: all).
LOADERS = {
    "mnist-npz": _mnist_npz,
    "mnist-idx": _mnist_idx,
    "cifar10-binary": _cifar10_binary,
    "imdb-npz": _imdb_npz,
    "text-chars": _text_chars,
    "image-folder": _image_folder,
}


def _load(
    ds: Dataset,
    files: dict[str, Path],
    shape: tuple[int, ...],
    vocabulary: int,
    limit_train: int,
    limit_test: int,
) -> tuple[tuple[np.ndarray, ...], list[str] | None]:
    """The four arrays of ``ds`` from its files (its format's loader, :data:`LOADERS`), images
    centrally cropped to ``shape`` where the format gives them at the dataset's size, and the
    class names where the files give them."""
    limits = {"limit_train": limit_train, "limit_test": limit_test}
    arrays, names = LOADERS[ds.format](ds, files, shape, vocabulary, limits)
    arrays = tuple(arrays)
    if ds.kind == "images" and not FORMATS[ds.format].resizes and shape != ds.shape:
        arrays = (_crop(arrays[0], shape), arrays[1], _crop(arrays[2], shape), arrays[3])
    return arrays, names


def prepare(
    name: str,
    files: dict[str, Path],
    out: str | os.PathLike,
    *,
    limit_train: int = 0,
    limit_test: int = 0,
    shape: tuple[int, ...] | None = None,
    vocabulary: int = 0,
    ngram_range: int = 1,
) -> dict:
    """Parse a dataset's files into a prepared-arrays file (:mod:`.arrays`), atomically.

    The files' checksums are :func:`.fetch.fetch`'s business; here each format's structure is
    checked (a damaged or truncated file gets one line naming it), and on any error nothing
    is written at ``out`` (a file already there is left as it was). Memory: the arrays once
    plus what the format needs beside them (cifar10: 184 MB of arrays and one 30.7 MB
    member with its decoded copy; imdb: the file's Python lists of one split).

    Args:
        name: a registry name (not "embryo").
        files: the paths by file name, as :func:`.fetch.fetch` returns them.
        out: the ``.npz`` to write.
        limit_train, limit_test: keep only the first N samples of each split (0: all).
        shape: one sample, if not the dataset's: images from a folder are resized to it,
            mnist/cifar10 images centrally cropped to it, sequences padded/cut to (T,).
        vocabulary: imdb: word ids from this up become the out-of-vocabulary id (0: the
            dataset's 20,000).
        ngram_range: imdb: above 1, each review's n-grams of 2..``ngram_range`` ids appended
            as new ids, as minimaxir's imdb_fasttext.py did (:func:`.imdb.load_npz_ngrams`);
            the info's ``vocabulary`` is then the ids' bound (20,001 + the training set's
            distinct n-grams).

    Returns:
        the info written: ``dataset``, ``synthetic`` (False), ``inputs`` (each file's path,
        bytes, sha256; an image folder's ``sha256_tree``), ``classes``, ``class_names`` (where
        the files name them: cifar10's, the class folders, the corpus's characters),
        ``vocabulary``, ``train``, ``test``, ``shape``, ``dtype``.

    Raises:
        ConfigError: an unknown name, "embryo", a file missing from ``files``, a shape the
            loader cannot give, n-grams asked of a dataset that is not IMDb's.
        DataError: a damaged input (naming it and what was expected), files that hold no
            training sample, or class names that cannot be folder names
            (:func:`.classnames.check_class_names`: CIFAR-10's ``batches.meta.txt``, an image
            folder's class folders).
        StorageError: no space for ``out``.
    """
    ds = get(name)
    check_loadable(ds)
    shape = _sample_shape(ds, shape)
    vocabulary = vocabulary or ds.vocabulary
    if ngram_range > 1 and ds.format != "imdb-npz":
        raise ConfigError(
            f"dataset {name!r}: ngram_range {ngram_range}; n-grams are made of IMDb's word ids "
            "only (format imdb-npz)"
        )
    needed = [FOLDER] if FORMATS[ds.format].folder else [f.name for f in ds.files]
    missing = [key for key in needed if key not in files]
    if missing:
        raise ConfigError(
            f"dataset {name!r}: no path given for {', '.join(missing)}; expected "
            f"{', '.join(needed)}"
        )
    inputs = {}
    for key in needed:
        path = Path(files[key])
        if key == FOLDER:
            inputs[key] = {"path": str(path), "sha256_tree": sha256_tree(path)}
        else:
            if not path.is_file():
                raise DataError(f"{path}: file not found; expected {key} of dataset {name}")
            inputs[key] = {
                "path": str(path),
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
            }
    if ngram_range > 1:
        # n-grams change the vocabulary, which the other loaders do not give back: read here.
        arrays, vocabulary = imdb.load_npz_ngrams(
            files["imdb.npz"],
            maxlen=shape[0],
            num_words=vocabulary,
            ngram_range=ngram_range,
            limit_train=limit_train,
            limit_test=limit_test,
        )
        names = None
    else:
        arrays, names = _load(
            ds, {k: Path(v) for k, v in files.items()}, shape, vocabulary, limit_train, limit_test
        )
    if not len(arrays[1]):
        # An empty training set would be written as if complete, and every run refused.
        read = ", ".join(str(v["path"]) for v in inputs.values())
        raise DataError(
            f"{read}: no training sample in dataset {name}'s files; expected at least one"
        )
    info = {
        "dataset": name,
        "synthetic": False,
        "inputs": inputs,
        "classes": ds.classes,
        "class_names": names,
        "vocabulary": vocabulary if ds.kind == "sequences" else 0,
        "limit_train": limit_train,
        "limit_test": limit_test,
        **({"ngram_range": ngram_range} if ngram_range > 1 else {}),
    }
    return write_arrays(out, *arrays, info)


def prepare_synthetic(
    name: str,
    out: str | os.PathLike,
    *,
    n_train: int,
    n_test: int,
    seed: int,
    shape: tuple[int, ...] | None = None,
    vocabulary: int = 0,
) -> dict:
    """Write SYNTHETIC arrays of dataset ``name``'s sample shape (or ``shape``), dtype,
    classes and vocabulary (or ``vocabulary``: token ids below it, for a workload whose real
    data has more, such as imdb-fasttext's bigrams) (:func:`embryo_bench.data.arrays.
    write_synthetic`).

    Returns:
        the info written (``synthetic`` True).

    Raises:
        ConfigError: an unknown name, or counts/shape :func:`.arrays.synthetic_arrays` refuses.
        StorageError: no space for ``out``.
    """
    ds = get(name)
    return write_synthetic(
        out,
        tuple(shape) if shape is not None else ds.shape,
        ds.dtype,
        ds.classes,
        n_train,
        n_test,
        seed,
        vocabulary=vocabulary or ds.vocabulary,
        dataset=name,
    )

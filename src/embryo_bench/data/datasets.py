"""The registry of the workloads' datasets (``datasets.yaml``), fetching their files, and
preparing them into the prepared-arrays file the trainer reads (:mod:`.arrays`).

Each dataset names where its files are published (URL, sha256 and size where a source gives
them, null where none does), what one prepared sample is (kind, shape, dtype, classes), and
the loader that parses its files (``format``: :data:`LOADERS`). :func:`fetch` gets the files
through :func:`embryo_bench.download.download` (retries, resume from ``.part``, sha256,
atomic rename) or checks a copy fetched elsewhere (``offline``: a folder holding the files
by name, read in place); :func:`prepare` parses them (one module per format: :mod:`.mnist`,
:mod:`.cifar10`, :mod:`.imdb`, :mod:`.textcorpus`, :mod:`.imagefolder`) and writes the arrays
atomically. ``embryo`` (the paper's database) is a known name with no loader: the paper's own
pipeline prepares it. No Keras here: the plan reads this registry in every parse.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..download import download
from ..errors import ConfigError, DataError, DownloadError
from ..io import sha256_file, sha256_tree
from . import cifar10, imagefolder, imdb, mnist, textcorpus
from .arrays import SAMPLE_DTYPES, write_arrays, write_synthetic

#: The registry file (ships as package data).
REGISTRY = Path(__file__).with_name("datasets.yaml")
#: The loaders ``format`` may name (null: not prepared here).
LOADERS = ("mnist-npz", "mnist-idx", "cifar10-binary", "imdb-npz", "text-chars", "image-folder")
#: The key of an image folder in :func:`prepare`'s ``files`` (it has no files of its own).
FOLDER = "folder"
#: File name endings that :func:`embryo_bench.download.download` checks as zip/tar archives.
_ARCHIVES = (".zip", ".npz", ".tar", ".tar.gz", ".tgz")

_COUNT = {"type": ["integer", "null"], "minimum": 0}
#: What datasets.yaml must hold.
DATASETS_SCHEMA: dict = {
    "type": "object",
    "required": ["datasets"],
    "additionalProperties": False,
    "properties": {
        "datasets": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z0-9][a-z0-9-]*$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["source", "kind", "format", "shape", "dtype", "classes", "files"],
                "properties": {
                    "source": {"type": "string", "minLength": 1},
                    "kind": {"enum": ["images", "sequences"]},
                    "format": {"enum": [*LOADERS, None]},
                    "shape": {
                        "type": "array",
                        "items": {"type": "integer", "minimum": 1},
                        "minItems": 1,
                        "maxItems": 3,
                    },
                    "dtype": {"enum": list(SAMPLE_DTYPES)},
                    "classes": {"type": "integer", "minimum": 2},
                    "vocabulary": {"type": "integer", "minimum": 2},
                    "step": {"type": "integer", "minimum": 1},
                    "splits": {
                        "type": "object",
                        "required": ["train", "test"],
                        "additionalProperties": False,
                        "properties": {
                            "train": {"type": "string", "minLength": 1},
                            "test": {"type": "string", "minLength": 1},
                        },
                    },
                    "train": _COUNT,
                    "test": _COUNT,
                    "files": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["name", "url", "sha256", "bytes"],
                            "properties": {
                                "name": {"type": "string", "pattern": "^[A-Za-z0-9][\\w.-]*$"},
                                "url": {"type": "string", "pattern": "^https?://"},
                                "sha256": {
                                    "type": ["string", "null"],
                                    "pattern": "^[0-9a-f]{64}$",
                                },
                                "bytes": {"type": ["integer", "null"], "minimum": 1},
                            },
                        },
                    },
                },
            },
        }
    },
}


@dataclass(frozen=True)
class DatasetFile:
    """One published file of a dataset.

    Attributes:
        name: its file name (in the download folder, or in an offline copy's folder).
        url: where it is published.
        sha256: hex digest to check, or None where no source publishes one.
        bytes: its size, or None where no source gives it.
    """

    name: str
    url: str
    sha256: str | None
    bytes: int | None


@dataclass(frozen=True)
class Dataset:
    """A dataset of the registry.

    Attributes:
        name: registry name ("mnist", "cifar10", ...).
        source: where its files, checksums and layout come from.
        kind: "images" or "sequences".
        format: the loader (:data:`LOADERS`), or None when not prepared here ("embryo").
        files: its published files; () for an image folder (a local copy by path only).
        shape: one prepared sample by default: (H, W, C) images, (T,) sequences.
        dtype: "uint8" (images) or "int32" (token or character ids).
        classes: number of classes (2 for the binary workloads).
        vocabulary: sequences: token ids are below it; 0 for images.
        step: text corpora: characters between two sequences' starts; 0 otherwise.
        splits: image folders: the train and test split folders' names; () otherwise.
        train, test: samples in the real set where a source gives them, else None.
    """

    name: str
    source: str
    kind: str
    format: str | None
    files: tuple[DatasetFile, ...]
    shape: tuple[int, ...]
    dtype: str
    classes: int
    vocabulary: int = 0
    step: int = 0
    splits: tuple[tuple[str, str], ...] = ()
    train: int | None = None
    test: int | None = None

    def split_folder(self, root: str | os.PathLike, split: str) -> Path:
        """The folder of ``split`` ("train" or "test") in an image folder copy at ``root``."""
        return Path(root) / dict(self.splits)[split]


def _dataset(name: str, entry: dict) -> Dataset:
    return Dataset(
        name=name,
        source=" ".join(entry["source"].split()),
        kind=entry["kind"],
        format=entry["format"],
        files=tuple(DatasetFile(**f) for f in entry["files"]),
        shape=tuple(entry["shape"]),
        dtype=entry["dtype"],
        classes=entry["classes"],
        vocabulary=entry.get("vocabulary", 0),
        step=entry.get("step", 0),
        splits=tuple(entry.get("splits", {}).items()),
        train=entry.get("train"),
        test=entry.get("test"),
    )


def load_registry(path: str | os.PathLike = REGISTRY) -> dict[str, Dataset]:
    """Read and validate a registry file.

    Returns:
        the datasets by name.

    Raises:
        ConfigError: naming the file and the entry: unreadable YAML, a field missing or of
            the wrong type (:data:`DATASETS_SCHEMA`), or an entry that contradicts itself
            (sequences without a vocabulary, an image folder without splits or with files).
    """
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the dataset registry ({exc})") from None
    error = best_match(Draft202012Validator(DATASETS_SCHEMA).iter_errors(data))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{path}: {where}: {error.message}")
    datasets = {}
    for name, entry in data["datasets"].items():
        ds = _dataset(name, entry)
        wrong = None
        if ds.kind == "sequences" and (ds.dtype != "int32" or not ds.vocabulary):
            wrong = "sequences need dtype int32 and a vocabulary"
        elif ds.kind == "images" and (ds.dtype != "uint8" or len(ds.shape) != 3):
            wrong = "images need dtype uint8 and a shape [H, W, C]"
        elif (ds.format == "image-folder") != bool(ds.splits) or (ds.splits and ds.files):
            wrong = "an image folder (and only one) needs splits, and has no files"
        elif ds.format == "text-chars" and not ds.step:
            wrong = "a text corpus needs a step"
        elif ds.format not in (None, "image-folder") and not ds.files:
            wrong = f"format {ds.format} needs its files"
        if wrong:
            raise ConfigError(f"{path}: datasets.{name}: {wrong}")
        datasets[name] = ds
    return datasets


@functools.cache
def registry() -> dict[str, Dataset]:
    """The shipped registry (:data:`REGISTRY`), read once.

    Raises:
        ConfigError: as :func:`load_registry`.
    """
    return load_registry(REGISTRY)


def get(name: str) -> Dataset:
    """The registry's dataset ``name``.

    Raises:
        ConfigError: ``dataset 'x': not in the registry; known: ...``.
    """
    known = registry()
    if name not in known:
        raise ConfigError(
            f"dataset {name!r}: not in the registry ({REGISTRY.name}); known: "
            f"{', '.join(sorted(known))}"
        )
    return known[name]


def _loadable(ds: Dataset) -> None:
    if ds.format is None:
        raise ConfigError(
            f"dataset {ds.name!r}: prepared by the paper's own pipeline (download, crop, "
            "equalise, rotate), not by the dataset registry"
        )


def _settings(ds: Dataset, f: DatasetFile) -> dict[str, str]:
    """What a failed download of ``f`` names (:func:`embryo_bench.download.download`)."""
    return {
        "url": f"the url of {f.name} (dataset {ds.name}) in {REGISTRY}",
        "sha256": f"dataset {ds.name} in {REGISTRY.name}",
        "offline": f"download {f.name} elsewhere and give the folder that holds it as "
        f"dataset {ds.name}'s local copy",
    }


def check_file(ds: Dataset, f: DatasetFile, path: str | os.PathLike) -> str:
    """Check a copy of ``f`` (its size and sha256, where known).

    Returns:
        its sha256.

    Raises:
        DataError: naming ``path``: missing, or another size or sha256 than the registry's.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: not found; expected {f.name} of dataset {ds.name} ({f.url})")
    size = path.stat().st_size
    if f.bytes is not None and size != f.bytes:
        raise DataError(
            f"{path}: {size:,} bytes; expected {f.bytes:,} ({f.name} of dataset {ds.name}: "
            "truncated or another file?)"
        )
    digest = sha256_file(path)
    if f.sha256 is not None and digest != f.sha256:
        raise DataError(
            f"{path}: sha256 {digest}; expected {f.sha256} ({f.name} of dataset {ds.name})"
        )
    return digest


def fetch(
    dataset: str | Dataset,
    folder: str | os.PathLike,
    *,
    offline: str | os.PathLike | None = None,
    progress: bool = True,
    retries: int = 5,
    backoff: float = 1.0,
) -> dict[str, Path]:
    """Get a dataset's files: downloaded into ``folder``, or a copy fetched elsewhere.

    A file already in ``folder`` that passes :func:`check_file` is kept, not fetched again.

    Args:
        dataset: a registry name, or a :class:`Dataset` (e.g. one with other URLs).
        folder: where downloads go (created).
        offline: a folder that already holds the files by name (read in place, checked), or
            an image folder dataset's copy (holding its split folders).
        progress, retries, backoff: as :func:`embryo_bench.download.download`.

    Returns:
        the paths by file name, as :func:`prepare` takes them (``{"folder": path}`` for an
        image folder).

    Raises:
        ConfigError: an unknown name, "embryo", or an image folder without ``offline``.
        DataError: an offline copy missing, of another size or sha256; an image folder copy
            without its split folders.
        DownloadError: as :func:`embryo_bench.download.download`, or a download of another
            size than the registry's (removed).
    """
    ds = get(dataset) if isinstance(dataset, str) else dataset
    _loadable(ds)
    if ds.format == "image-folder":
        if offline is None:
            raise ConfigError(
                f"dataset {ds.name!r}: no public host (it needs a login); give a local copy by "
                f"path: a folder holding {' and '.join(dict(ds.splits).values())}, each with "
                "one folder of images per class"
            )
        for split in ("train", "test"):
            if not ds.split_folder(offline, split).is_dir():
                raise DataError(
                    f"{ds.split_folder(offline, split)}: not a folder; expected dataset "
                    f"{ds.name}'s {split} split (<class>/*.jpg) in its local copy {offline}"
                )
        return {FOLDER: Path(offline)}
    paths: dict[str, Path] = {}
    for f in ds.files:
        if offline is not None:
            check_file(ds, f, Path(offline) / f.name)
            paths[f.name] = Path(offline) / f.name
            continue
        dest = Path(folder) / f.name
        if dest.is_file():
            try:
                check_file(ds, f, dest)
                paths[f.name] = dest
                continue
            except DataError:
                pass  # fetched again below; download() replaces it only when complete
        info = download(
            f.url,
            dest,
            sha256=f.sha256,
            retries=retries,
            backoff=backoff,
            progress=progress,
            archive=f.name.endswith(_ARCHIVES),
            settings=_settings(ds, f),
        )
        if f.bytes is not None and info["bytes"] != f.bytes:
            dest.unlink()
            raise DownloadError(
                f"{f.url}: {info['bytes']:,} bytes received for {f.name}; expected {f.bytes:,} "
                f"(dataset {ds.name} in {REGISTRY.name}); nothing was kept"
            )
        paths[f.name] = dest
    return paths


def _crop(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The central (h, w) of (N, H, W, C) images, as TensorFlow's CIFAR-10 tutorial crops its
    evaluation images (``resize_image_with_crop_or_pad``)."""
    top, left = (x.shape[1] - shape[0]) // 2, (x.shape[2] - shape[1]) // 2
    return np.ascontiguousarray(x[:, top : top + shape[0], left : left + shape[1]])


def _sample_shape(ds: Dataset, shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """The shape to prepare, checked against what the dataset's loader can give."""
    if shape is None:
        return ds.shape
    shape = tuple(int(s) for s in shape)
    if ds.kind == "sequences":
        ok = len(shape) == 1 and shape[0] >= 1
        expected = "(T,): tokens per sequence"
    elif ds.format == "image-folder":
        ok = len(shape) == 3 and min(shape) >= 1 and shape[2] in imagefolder.MODES
        expected = "(H, W, 1 or 3): images are resized"
    else:
        ok = (
            len(shape) == 3
            and 1 <= shape[0] <= ds.shape[0]
            and 1 <= shape[1] <= ds.shape[1]
            and shape[2] == ds.shape[2]
        )
        expected = f"{ds.shape} or a central crop of it"
    if not ok:
        raise ConfigError(f"dataset {ds.name!r}: sample shape {shape}; expected {expected}")
    return shape


def _load(
    ds: Dataset,
    files: dict[str, Path],
    shape: tuple[int, ...],
    vocabulary: int,
    limit_train: int,
    limit_test: int,
) -> tuple[tuple[np.ndarray, ...], list[str] | None]:
    """The four arrays of ``ds`` from its files, and the class names where the files give
    them."""
    limits = {"limit_train": limit_train, "limit_test": limit_test}
    names = None
    if ds.format == "mnist-npz":
        arrays = mnist.load_npz(files["mnist.npz"], **limits)
    elif ds.format == "mnist-idx":
        arrays = (
            *mnist.load_idx(
                files["train-images-idx3-ubyte.gz"],
                files["train-labels-idx1-ubyte.gz"],
                limit=limit_train,
            ),
            *mnist.load_idx(
                files["t10k-images-idx3-ubyte.gz"],
                files["t10k-labels-idx1-ubyte.gz"],
                limit=limit_test,
            ),
        )
    elif ds.format == "cifar10-binary":
        *arrays, names = cifar10.load_binary(files["cifar-10-binary.tar.gz"], **limits)
    elif ds.format == "imdb-npz":
        arrays = imdb.load_npz(files["imdb.npz"], maxlen=shape[0], num_words=vocabulary, **limits)
    elif ds.format == "text-chars":
        (path,) = (files[f.name] for f in ds.files)
        *arrays, names = textcorpus.load_chars(
            path, length=shape[0], step=ds.step, classes=ds.classes, limit_train=limit_train
        )
    else:  # image-folder
        x_train, y_train, names = imagefolder.read_image_folder(
            ds.split_folder(files[FOLDER], "train"), shape, classes=ds.classes, limit=limit_train
        )
        test = ds.split_folder(files[FOLDER], "test")
        x_test, y_test, test_names = imagefolder.read_image_folder(
            test, shape, classes=ds.classes, limit=limit_test
        )
        if test_names != names:
            raise DataError(
                f"{test}: class folders {test_names}; expected the train split's {names}"
            )
        arrays = (x_train, y_train, x_test, y_test)
    arrays = tuple(arrays)
    if ds.kind == "images" and ds.format != "image-folder" and shape != ds.shape:
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
) -> dict:
    """Parse a dataset's files into a prepared-arrays file (:mod:`.arrays`), atomically.

    The files' checksums are :func:`fetch`'s business; here each format's structure is
    checked (a damaged or truncated file gets one line naming it), and on any error nothing
    is written at ``out`` (a file already there is left as it was). Memory: the arrays once
    plus what the format needs beside them (cifar10: 184 MB of arrays and one 30.7 MB
    member with its decoded copy; imdb: the file's Python lists of one split).

    Args:
        name: a registry name (not "embryo").
        files: the paths by file name, as :func:`fetch` returns them.
        out: the ``.npz`` to write.
        limit_train, limit_test: keep only the first N samples of each split (0: all).
        shape: one sample, if not the dataset's: images from a folder are resized to it,
            mnist/cifar10 images centrally cropped to it, sequences padded/cut to (T,).
        vocabulary: imdb: word ids from this up become the out-of-vocabulary id (0: the
            dataset's 20,000).

    Returns:
        the info written: ``dataset``, ``synthetic`` (False), ``inputs`` (each file's path,
        bytes, sha256; an image folder's ``sha256_tree``), ``classes``, ``class_names`` (where
        the files name them: cifar10's, the class folders, the corpus's characters),
        ``vocabulary``, ``train``, ``test``, ``shape``, ``dtype``.

    Raises:
        ConfigError: an unknown name, "embryo", a file missing from ``files``, a shape the
            loader cannot give.
        DataError: a damaged input (naming it and what was expected).
        StorageError: no space for ``out``.
    """
    ds = get(name)
    _loadable(ds)
    shape = _sample_shape(ds, shape)
    vocabulary = vocabulary or ds.vocabulary
    needed = [FOLDER] if ds.format == "image-folder" else [f.name for f in ds.files]
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
    arrays, names = _load(
        ds, {k: Path(v) for k, v in files.items()}, shape, vocabulary, limit_train, limit_test
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
) -> dict:
    """Write SYNTHETIC arrays of dataset ``name``'s sample shape (or ``shape``), dtype,
    classes and vocabulary (:func:`embryo_bench.data.arrays.write_synthetic`).

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
        vocabulary=ds.vocabulary,
        dataset=name,
    )

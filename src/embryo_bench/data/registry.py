"""The registry of the workloads' datasets (``datasets.yaml``, package data): where each
dataset's files are published (URL, sha256 and size where a source gives them, null where
none does), what one prepared sample is (kind, shape, dtype, classes), and the loader that
parses its files (``format``).

Kept apart from the loaders and the downloads so that what only names or checks a dataset
(the plan, in every Snakemake parse) imports neither, and a code hash that follows the
imports does not rerun a download when a loader changes. No Keras here.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..errors import ConfigError, DataError
from ..io import sha256_file
from ..vocabulary.config import read_config_file
from .arrays import SAMPLE_DTYPES
from .formats import FOLDER_CHANNELS, FORMATS

#: The registry file (ships as package data).
REGISTRY = Path(__file__).with_name("datasets.yaml")

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
                    "format": {"enum": [*FORMATS, None]},
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
        format: its format (:data:`.formats.FORMATS`), or None when not prepared here ("embryo").
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
    # The configuration reader: a syntax error named by line and column, a key given twice
    # refused (yaml.safe_load kept the last of two entries of one dataset).
    data = read_config_file(path)
    error = best_match(Draft202012Validator(DATASETS_SCHEMA).iter_errors(data))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{path}: {where}: {error.message}")
    datasets = {}
    for name, entry in data["datasets"].items():
        ds = _dataset(name, entry)
        wrong = None
        fmt = FORMATS.get(ds.format)  # None: prepared by the paper's own pipeline
        folder = fmt is not None and fmt.folder
        if ds.kind == "sequences" and (ds.dtype != "int32" or not ds.vocabulary):
            wrong = "sequences need dtype int32 and a vocabulary"
        elif ds.kind == "images" and (ds.dtype != "uint8" or len(ds.shape) != 3):
            wrong = "images need dtype uint8 and a shape [H, W, C]"
        elif folder != bool(ds.splits) or (ds.splits and ds.files):
            wrong = "an image folder (and only one) needs splits, and has no files"
        elif fmt is not None and fmt.needs_step and not ds.step:
            wrong = "a text corpus needs a step"
        elif fmt is not None and not folder and not ds.files:
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


def sample_shape_problem(ds: Dataset, shape: tuple[int, ...]) -> str | None:
    """What ``ds``'s loader can give instead of samples of ``shape`` ("(T,): tokens per
    sequence", "... or a central crop of it"), or None where it can give them: a sequence of
    any length (padded or cut), an image folder's images at any size of 1 or 3 channels
    (resized), another format's images at the dataset's size or a central crop of it. The
    plan asks it of real data before any job; the data job as it prepares the arrays."""
    if ds.kind == "sequences":
        ok = len(shape) == 1 and shape[0] >= 1
        expected = "(T,): tokens per sequence"
    elif ds.format in FORMATS and FORMATS[ds.format].resizes:
        ok = len(shape) == 3 and min(shape) >= 1 and shape[2] in FOLDER_CHANNELS
        expected = "(H, W, 1 or 3): images are resized"
    else:
        ok = (
            len(shape) == 3
            and 1 <= shape[0] <= ds.shape[0]
            and 1 <= shape[1] <= ds.shape[1]
            and shape[2] == ds.shape[2]
        )
        expected = f"{ds.shape} or a central crop of it"
    return None if ok else expected


def check_loadable(ds: Dataset) -> None:
    """Raise unless ``ds`` has a loader here.

    Raises:
        ConfigError: "embryo", prepared by the paper's own pipeline.
    """
    if ds.format is None:
        raise ConfigError(
            f"dataset {ds.name!r}: prepared by the paper's own pipeline (download, crop, "
            "equalise, rotate), not by the dataset registry"
        )


def check_file(
    ds: Dataset,
    f: DatasetFile,
    path: str | os.PathLike,
    *,
    sha256: str | None = None,
    hashed: bool = True,
    accept: str = "",
) -> str | None:
    """Check a copy of ``f`` (a download, or a file of an offline copy) against the
    registry: its size and sha256 where the registry gives them, or, for a copy that was
    accepted by its own digest, that digest only.

    Args:
        ds, f: the dataset and its file.
        path: the copy.
        sha256: the hex digest this copy must have instead of the registry's sha256 and size
            (a copy deliberately different from the published file); None: the registry's.
        hashed: read the file for its sha256 (seconds for 170 MB); False checks its size
            only (when the plan is made).
        accept: the setting a different copy can be accepted by (e.g. ``workload
            cifar10-cnn``), named in a mismatch's message with how; "" names none.

    Returns:
        its sha256 (hex), or None when not ``hashed``.

    Raises:
        DataError: one line naming ``path``: not a file, another size than the registry's
            (unless ``sha256`` is given), or another sha256 than ``sha256`` or the registry's.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: not found; expected {f.name} of dataset {ds.name} ({f.url})")

    def how(digest: str | None) -> str:
        if not accept:
            return ""
        return (
            f"; to use this copy as it is, set {accept}'s sha256: "
            f"{{{f.name}: {digest or '<its sha256, as sha256sum prints it>'}}}"
        )

    size = path.stat().st_size
    if sha256 is None and f.bytes is not None and size != f.bytes:
        raise DataError(
            f"{path}: {size:,} bytes; expected {f.bytes:,} ({f.name} of dataset {ds.name} in "
            f"{REGISTRY.name}: truncated or another file?){how(None)}"
        )
    if not hashed:
        return None
    digest = sha256_file(path)
    expected = sha256.lower() if sha256 is not None else f.sha256
    if expected is not None and digest != expected:
        given = f"as {accept} accepts it" if sha256 is not None else f"in {REGISTRY.name}"
        raise DataError(
            f"{path}: sha256 {digest}; expected {expected} ({f.name} of dataset {ds.name} "
            f"{given}){how(digest) if sha256 is None else ''}"
        )
    return digest

"""Shard-level stage steps: read a stage's input, apply one preprocessing step, write a packed
``.npz`` (uint8 images plus per-sample metadata). Each Snakemake stage rule calls one of these.

Every shard file holds:
    images: uint8 (N, H, W) -- N frames (crop, invert) or N frames x R rotations (augment)
    cells:  int8 (N,)       -- label, number of cells 1-4
    split:  str (N,)        -- "train" | "test"
    embryo: str (N,)        -- "E07", or "" where the source has no embryo ids
    frame:  str (N,)        -- frame id within the source
    settings: str ()        -- JSON {"stage": "crop" | "invert" | "augment", "preprocessing":
                               the settings that made it, cumulative over the stages}
augment shards add ``angle`` (float32 (N,), degrees). The ``settings`` record travels with
the data: training takes its :class:`embryo_bench.vocabulary.spec.Preprocessing` from the shards it
trains on, not from the configuration.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError, DataError
from ..io import load_arrays, save_arrays
from ..vocabulary.spec import Preprocessing, RunSpec
from . import preprocess

if TYPE_CHECKING:
    import pandas as pd

META = ("cells", "split", "embryo", "frame")
STAGES = ("crop", "invert", "augment")


def _record(stage: str, preprocessing: dict) -> np.ndarray:
    return np.array(json.dumps({"stage": stage, "preprocessing": preprocessing}, sort_keys=True))


def shard_settings(path: str | Path, data: dict | None = None) -> dict:
    """The ``settings`` record of a stage shard: {"stage": ..., "preprocessing": {...}}.

    Args:
        path: the shard (read lazily: only its settings array, unless ``data`` is given).
        data: the shard's arrays, when already loaded.

    Raises:
        DataError: missing or unreadable shard, or no settings record (a shard made by an
            older embryo-bench: rerun its stage).
    """
    if data is None:
        try:
            with np.load(path, allow_pickle=False) as npz:
                data = {"settings": npz["settings"]} if "settings" in npz.files else {}
        except FileNotFoundError as exc:
            raise DataError(f"{path}: file not found") from exc
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable .npz array file ({exc})") from exc
    if "settings" not in data:
        raise DataError(
            f"{path}: no settings record (made by an older embryo-bench?); rerun its stage"
        )
    try:
        record = json.loads(str(data["settings"]))
        assert record["stage"] in STAGES and isinstance(record["preprocessing"], dict)
    except (ValueError, KeyError, AssertionError) as exc:
        raise DataError(f"{path}: garbled settings record {str(data['settings'])!r}") from exc
    return record


def _input_settings(path: str | Path, data: dict, stage: str) -> dict:
    record = shard_settings(path, data)
    if record["stage"] != stage:
        raise DataError(f"{path}: a {record['stage']} shard; expected the {stage} stage's")
    return record["preprocessing"]


def _selection_columns(path: str | Path, shard: int | None = None) -> dict[str, np.ndarray]:
    """The columns of ``selected.csv`` (optionally one shard's rows): ``cells`` and ``shard``
    int64, the others str. Read with the csv module: a stage job need not import pandas.

    Raises:
        DataError: missing file or columns, a non-integer label or shard, or labels outside
            1-4.
    """
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            rows = [row for row in reader if row]  # blank lines skipped, as pandas does
    except FileNotFoundError as exc:
        raise DataError(f"{path}: selection file not found") from exc
    need = {"embryo", "frame", "path", "cells", "split", "shard"}
    if not need <= set(header):
        raise DataError(f"{path}: columns {sorted(header)}; expected {sorted(need)}")
    for row in rows:
        if len(row) != len(header):
            raise DataError(f"{path}: row {row[:3]} has {len(row)} fields; expected {len(header)}")
    ints = {}
    for name in ("cells", "shard"):
        i = header.index(name)
        try:
            ints[name] = np.array([int(row[i]) for row in rows], dtype=np.int64)
        except ValueError as exc:
            raise DataError(f"{path}: column {name!r} holds a non-integer ({exc})") from exc
    cells = ints["cells"]
    if ((cells < 1) | (cells > 4)).any():
        bad = np.unique(cells[(cells < 1) | (cells > 4)]).tolist()
        raise DataError(f"{path}: labels {bad} outside 1-4 cells")
    keep = np.ones(len(rows), bool) if shard is None else ints["shard"] == shard
    rows = [row for row, k in zip(rows, keep, strict=True) if k]
    return {
        name: ints[name][keep] if name in ints else np.array([row[i] for row in rows], dtype=str)
        for i, name in enumerate(header)
    }


def read_selection(path: str | Path, shard: int | None = None) -> pd.DataFrame:
    """Read ``selected.csv`` (optionally one shard's rows) as a DataFrame: ``cells`` and
    ``shard`` int64, the other columns str.

    Raises:
        DataError: missing file or columns, a non-integer label or shard, or labels outside
            1-4.
    """
    import pandas as pd

    return pd.DataFrame(_selection_columns(path, shard))


def crop_shard(
    selection: str | Path, shard: int, frame_size: int, fraction: float, out: str | Path
) -> int:
    """Decode one shard's frames and centre-crop them; write ``out``.

    Args:
        selection: ``selected.csv`` from the select stage.
        shard: shard number.
        frame_size: expected frame side in px (480 in the database).
        fraction: crop side / frame side (paper: 2/3).
        out: destination ``.npz``: uint8 images (N, S, S), S = round(frame_size * fraction),
            plus the metadata arrays (module docstring).

    Returns the number of frames N.

    Raises:
        DataError: the shard is empty, or a frame is missing, corrupt, truncated, of the
            wrong size or not 8-bit gray (the message names it).
    """
    rows = _selection_columns(selection, shard)
    if not len(rows["path"]):
        raise DataError(f"{selection}: shard {shard} has no rows")
    images = np.stack(
        [
            preprocess.centre_crop(preprocess.read_frame(p, frame_size), fraction)
            for p in rows["path"]
        ]
    )
    save_arrays(
        out,
        images=images,
        cells=rows["cells"].astype(np.int8),
        split=rows["split"],
        embryo=rows["embryo"],
        frame=rows["frame"],
        settings=_record("crop", {"frame_size": frame_size, "crop_fraction": fraction}),
    )
    return len(images)


def invert_shard(cropped: str | Path, centre: int, out: str | Path) -> int:
    """Histogram-equalise and shadow-invert every image of a cropped shard; write ``out``.

    Args:
        cropped: a crop-stage shard (uint8 images (N, S, S) + metadata).
        centre: grey level mapped to 0 (paper: 128).
        out: destination ``.npz``: uint8 images (N, S, S) in [0, max(centre, 255 - centre)]
            with the same metadata.

    Returns the number of images N.

    Raises:
        DataError: ``cropped`` missing, unreadable, lacking an array, or not a crop shard.
    """
    data = load_arrays(cropped, required=("images", *META))
    settings = {**_input_settings(cropped, data, "crop"), "invert_centre": centre}
    images = np.stack([preprocess.equalize_invert(img, centre) for img in data["images"]])
    save_arrays(
        out, images=images, settings=_record("invert", settings), **{k: data[k] for k in META}
    )
    return len(images)


def augment_shard(
    inverted: str | Path,
    rotation_step: float,
    image_size: int,
    out: str | Path,
    threads: int | None = None,
) -> int:
    """Rotate every inverted image by each angle and downsize
    (:func:`embryo_bench.data.preprocess.rotate_resize_many`); write ``out``.

    Args:
        inverted: an invert-stage shard (uint8 images (N, S, S) + metadata).
        rotation_step: degrees between rotations (paper: 18 -> R = 20 rotations).
        image_size: output side in px (paper: 64).
        out: destination ``.npz``: uint8 images (N*R, image_size, image_size), float32
            ``angle`` (N*R,) in degrees, and the metadata repeated R times. Sample order is
            frame-major: rows ``i*R .. i*R+R-1`` are frame i's R rotations in angle order.
        threads: worker threads; None: :func:`embryo_bench.data.preprocess.default_threads` (the
            job's ``threads`` under Snakemake). The output does not depend on it.

    Returns the number of samples N*R.

    Raises:
        DataError: ``inverted`` missing, unreadable, lacking an array, or not an invert shard.
        ConfigError: rotation_step outside (0, 360].
    """
    data = load_arrays(inverted, required=("images", *META))
    settings = {
        **_input_settings(inverted, data, "invert"),
        "rotation_step": rotation_step,
        "image_size": image_size,
    }
    angles = preprocess.rotation_angles(rotation_step)
    threads = preprocess.default_threads() if threads is None else threads
    images = preprocess.rotate_resize_many(data["images"], angles, image_size, threads)
    reps = len(angles)
    save_arrays(
        out,
        images=images,
        angle=np.tile(angles, len(data["images"])).astype(np.float32),
        settings=_record("augment", settings),
        **{k: np.repeat(data[k], reps) for k in META},
    )
    return len(images)


def load_dataset(
    shards: list[str | Path], expected: Preprocessing | None = None
) -> tuple[dict[str, np.ndarray], Preprocessing]:
    """Concatenate augmented shards into train and test arrays for the model, with the
    preprocessing settings that made them (their ``settings`` records).

    Memory: the images are held once (the arrays returned) plus one shard's images while
    they are read: the labels and splits are read first, the arrays made at their final
    size, and each shard's images copied into them and let go in turn (a
    concatenation of every shard, then split, held them three times).

    Args:
        shards: augment-stage ``.npz`` shards.
        expected: the settings the run asks for (its spec); None: accept the shards'.

    Returns:
        (data, preprocessing): data has ``x_train`` uint8 (N, S, S, 1), ``y_train`` int32
        (N,) class index (cells - 1), ``x_test``, ``y_test`` likewise; the samples in the
        shards' order.

    Raises:
        DataError: a shard is missing, malformed or not from the augment stage; shards made
            with different settings; settings other than ``expected`` (naming the setting
            and both values); an empty split; a shard whose images are not one per label,
            or not of the first shard's size and dtype.
    """
    heads = [
        load_arrays(p, required=("images", "cells", "split"), keys=("cells", "split", "settings"))
        for p in shards
    ]
    records = [_input_settings(p, d, "augment") for p, d in zip(shards, heads, strict=True)]
    pp = Preprocessing.from_dict(records[0], str(shards[0]))
    for path, rec in zip(shards[1:], records[1:], strict=True):
        if Preprocessing.from_dict(rec, str(path)) != pp:
            raise DataError(
                f"{path}: made with preprocessing {rec}, {shards[0]} with {records[0]}; "
                "rerun the stages so every shard has the same settings"
            )
    if expected is not None and pp != expected:
        diff = {
            k: (v, expected.to_dict()[k])
            for k, v in pp.to_dict().items()
            if v != expected.to_dict()[k]
        }
        raise DataError(
            f"{shards[0]}: the shards were made with "
            + ", ".join(f"{k}={a} but the run asks for {k}={b}" for k, (a, b) in diff.items())
            + "; rerun the stages (snakemake reruns them when the config changes)"
        )
    splits = ("train", "test")
    masks = [{name: head["split"] == name for name in splits} for head in heads]
    counts = {name: sum(int(m[name].sum()) for m in masks) for name in splits}
    for name in splits:
        if not counts[name]:
            raise DataError(f"no {name} samples in {len(shards)} augmented shards")
    x: dict[str, np.ndarray] = {}
    filled = dict.fromkeys(splits, 0)
    for path, mask in zip(shards, masks, strict=True):
        images = load_arrays(path, keys=("images",))["images"]
        if len(images) != len(mask["train"]):
            raise DataError(
                f"{path}: {len(images)} images for {len(mask['train'])} labels; expected one "
                "label per image"
            )
        if not x:
            x = {n: np.empty((counts[n], *images.shape[1:]), images.dtype) for n in splits}
        elif images.shape[1:] != x["train"].shape[1:] or images.dtype != x["train"].dtype:
            raise DataError(
                f"{path}: images of {images.dtype} {images.shape[1:]}; {shards[0]} holds "
                f"{x['train'].dtype} {x['train'].shape[1:]}; expected the same in every shard"
            )
        for name in splits:
            k = filled[name] + int(mask[name].sum())
            # Into place, no temporary (mode "raise" would copy ``out`` first; the indices
            # are in range).
            rows = np.flatnonzero(mask[name])
            np.take(images, rows, axis=0, out=x[name][filled[name] : k], mode="clip")
            filled[name] = k
        del images  # before the next shard's are read
    out = {}
    for name in splits:
        cells = np.concatenate([h["cells"][m[name]] for h, m in zip(heads, masks, strict=True)])
        out[f"x_{name}"] = x[name][..., None]
        out[f"y_{name}"] = cells.astype(np.int32) - 1
    return out, pp


# --- what a run of input kind shards (the paper's) trains on ---------------------------------

#: The shards' classes: frames of 1, 2, 3 and 4 cells (a label is the cell count - 1).
CLASSES = 4


def run_sample(pp: Preprocessing) -> tuple[tuple[int, ...], str, int, int]:
    """One sample of the shards as a run trains on it: (shape, dtype, classes, vocabulary):
    a uint8 (S, S, 1) frame at ``pp``'s image size, :data:`CLASSES` classes, no vocabulary."""
    return (pp.image_size, pp.image_size, 1), "uint8", CLASSES, 0


def run_settings(pp: Preprocessing) -> dict:
    """What a run of the shards records beside its model (``settings.json``, read back by
    ``embryo-bench evaluate``): the preprocessing they were made with and each class's cell
    count."""
    return {"preprocessing": pp.to_dict(), "classes": {str(k): k + 1 for k in range(CLASSES)}}


def load_run_shards(
    spec: RunSpec, shards: list[str] | tuple[str, ...]
) -> tuple[dict, Preprocessing]:
    """A run's data of input kind shards (the paper's): the shards, checked against the
    preprocessing settings its spec names (:func:`load_dataset`), less the original
    variant's holdout, and the settings they were made with.

    Returns:
        (data, preprocessing): as :func:`load_dataset`.

    Raises:
        DataError: as :func:`load_dataset`.
        ConfigError: a holdout of every training image.
    """
    data, pp = load_dataset(list(shards), spec.preprocessing)
    if spec.holdout:
        # The original script's validation slice: the first images, never trained on.
        if spec.holdout >= len(data["y_train"]):
            raise ConfigError(
                f"train.original.holdout {spec.holdout}: the data has only "
                f"{len(data['y_train'])} training images"
            )
        data = {**data, "x_train": data["x_train"][spec.holdout :]}
        data["y_train"] = data["y_train"][spec.holdout :]
    return data, pp

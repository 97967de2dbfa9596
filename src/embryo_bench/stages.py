"""Shard-level stage steps: read a stage's input, apply one preprocessing step, write a packed
``.npz`` (uint8 images plus per-sample metadata). Each Snakemake stage rule calls one of these.

Every shard file holds:
    images: uint8 (N, H, W) -- N frames (crop, invert) or N frames x R rotations (augment)
    cells:  int8 (N,)       -- label, number of cells 1-4
    split:  str (N,)        -- "train" | "test"
    embryo: str (N,)        -- "E07", or "" where the source has no embryo ids
    frame:  str (N,)        -- frame id within the source
augment shards add ``angle`` (float32 (N,), degrees).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import preprocess
from .errors import DataError
from .io import load_arrays, save_arrays

META = ("cells", "split", "embryo", "frame")


def read_selection(path: str | Path, shard: int | None = None) -> pd.DataFrame:
    """Read ``selected.csv`` (optionally one shard's rows).

    Raises:
        DataError: missing file or columns, or labels outside 1-4.
    """
    try:
        df = pd.read_csv(
            path,
            dtype={"embryo": str, "frame": str, "path": str, "split": str},
            keep_default_na=False,
        )
    except FileNotFoundError as exc:
        raise DataError(f"{path}: selection file not found") from exc
    need = {"embryo", "frame", "path", "cells", "split", "shard"}
    if not need <= set(df.columns):
        raise DataError(f"{path}: columns {sorted(df.columns)}; expected {sorted(need)}")
    if not df["cells"].between(1, 4).all():
        bad = df.loc[~df["cells"].between(1, 4), "cells"].unique()
        raise DataError(f"{path}: labels {bad.tolist()} outside 1-4 cells")
    return df[df["shard"] == shard] if shard is not None else df


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
    rows = read_selection(selection, shard)
    if rows.empty:
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
        cells=rows["cells"].to_numpy(np.int8),
        split=rows["split"].to_numpy(str),
        embryo=rows["embryo"].to_numpy(str),
        frame=rows["frame"].to_numpy(str),
    )
    return len(rows)


def invert_shard(cropped: str | Path, centre: int, out: str | Path) -> int:
    """Histogram-equalise and shadow-invert every image of a cropped shard; write ``out``.

    Args:
        cropped: a crop-stage shard (uint8 images (N, S, S) + metadata).
        centre: grey level mapped to 0 (paper: 128).
        out: destination ``.npz``: uint8 images (N, S, S) in [0, max(centre, 255 - centre)]
            with the same metadata.

    Returns the number of images N.

    Raises:
        DataError: ``cropped`` missing, unreadable or lacking an array.
    """
    data = load_arrays(cropped, required=("images", *META))
    images = np.stack([preprocess.equalize_invert(img, centre) for img in data["images"]])
    save_arrays(out, images=images, **{k: data[k] for k in META})
    return len(images)


def augment_shard(
    inverted: str | Path, rotation_step: float, image_size: int, out: str | Path
) -> int:
    """Rotate every inverted image by each angle and downsize; write ``out``.

    Args:
        inverted: an invert-stage shard (uint8 images (N, S, S) + metadata).
        rotation_step: degrees between rotations (paper: 18 -> R = 20 rotations).
        image_size: output side in px (paper: 64).
        out: destination ``.npz``: uint8 images (N*R, image_size, image_size), float32
            ``angle`` (N*R,) in degrees, and the metadata repeated R times. Sample order is
            frame-major: rows ``i*R .. i*R+R-1`` are frame i's R rotations in angle order.

    Returns the number of samples N*R.

    Raises:
        DataError: ``inverted`` missing, unreadable or lacking an array.
        ConfigError: rotation_step outside (0, 360].
    """
    data = load_arrays(inverted, required=("images", *META))
    angles = preprocess.rotation_angles(rotation_step)
    images = np.concatenate(
        [preprocess.rotate_resize(img, angles, image_size) for img in data["images"]]
    )
    reps = len(angles)
    save_arrays(
        out,
        images=images,
        angle=np.tile(angles, len(data["images"])).astype(np.float32),
        **{k: np.repeat(data[k], reps) for k in META},
    )
    return len(images)


def load_dataset(shards: list[str | Path]) -> dict[str, np.ndarray]:
    """Concatenate augmented shards into train and test arrays for the model.

    Returns:
        dict with ``x_train`` uint8 (N, S, S, 1), ``y_train`` int32 (N,) class index
        (cells - 1), ``x_test``, ``y_test`` likewise.

    Raises:
        DataError: a shard is missing or malformed, or a split is empty.
    """
    parts = [load_arrays(p, required=("images", "cells", "split")) for p in shards]
    images = np.concatenate([p["images"] for p in parts])
    cells = np.concatenate([p["cells"] for p in parts]).astype(np.int32)
    split = np.concatenate([p["split"] for p in parts])
    out = {}
    for name in ("train", "test"):
        mask = split == name
        if not mask.any():
            raise DataError(f"no {name} samples in {len(shards)} augmented shards")
        out[f"x_{name}"] = images[mask][..., None]
        out[f"y_{name}"] = cells[mask] - 1
    return out

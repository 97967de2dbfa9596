"""Score a trained model on an image folder with the preprocessing it was trained with.

The preprocessing settings are read from the run's ``settings.json`` (written beside
``model.keras`` by :func:`embryo_bench.training.train.run_training`), never re-typed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import preprocess
from ..data.sources import (
    EMBRYO_RE,
    MANIFEST_COLUMNS,
    find_db_root,
    index_class_folders,
    visible_entries,
)
from ..errors import DataError
from ..vocabulary.layout import SETTINGS
from ..vocabulary.spec import Preprocessing


def _found(images: Path, subdirs: list[Path]) -> str:
    """What DIR holds, for an error: its folders and the .png files at its top level."""
    pngs = [p for p in visible_entries(images) if p.suffix.lower() == ".png" and p.is_file()]
    names = [p.name for p in subdirs]
    parts = [f"{len(pngs)} .png files at the top level"] if pngs else []
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        parts.append(f"folders {shown} without class folders 0-3 of .png images")
    return " and ".join(parts) or "nothing"


def _index(images: Path, frame_size: int) -> pd.DataFrame:
    """Manifest of DIR: its class folders ``<class>/*.png``, or those of every split folder
    ``<split>/<class>/*.png`` under it (any split names).

    Args:
        images: DIR. frame_size: the frames' expected side (px).

    Returns:
        the manifest (:data:`embryo_bench.data.sources.MANIFEST_COLUMNS`), at least one row.

    Raises:
        DataError: DIR missing or empty, a Mouse Embryo Tracking Database folder (E00/...;
            evaluate reads class folders), no class folder with a .png image, a class folder
            outside 0-3 (the model predicts 1-4 cells), or what
            :func:`embryo_bench.data.sources.index_class_folders` refuses.
    """
    if not images.is_dir():
        raise DataError(f"{images}: image folder not found")
    subdirs = [p for p in visible_entries(images) if p.is_dir()]
    try:  # E<NN>/ folders here or one folder down: the database's layout, not class folders
        db = find_db_root(images)
    except DataError:
        db = None
    if db is not None:
        embryo = next(p for p in visible_entries(db) if EMBRYO_RE.match(p.name) and p.is_dir())
        raise DataError(
            f"{images}: a Mouse Embryo Tracking Database folder ({embryo.relative_to(images)}/"
            "...); evaluate reads class folders <class>/*.png or <split>/<class>/*.png (the "
            "workflow's index, select and crop stages read the database layout)"
        )
    if not subdirs:
        raise DataError(
            f"{images}: no class or split folders (found {_found(images, subdirs)}); expected "
            "<class>/*.png or <split>/<class>/*.png"
        )
    if all(p.name.isdigit() for p in subdirs):
        rows = index_class_folders(images, images.name, frame_size)
    else:
        rows = [r for split in subdirs for r in index_class_folders(split, split.name, frame_size)]
    manifest = pd.DataFrame(rows, columns=MANIFEST_COLUMNS)
    if manifest.empty:
        raise DataError(
            f"{images}: no class folders (0-3) with .png images (found "
            f"{_found(images, subdirs)}); expected <class>/*.png or <split>/<class>/*.png"
        )
    bad = sorted(set(manifest["cells"]) - {1, 2, 3, 4})
    if bad:
        raise DataError(
            f"{images}: class folders {[c - 1 for c in bad]}; the model predicts "
            "classes 0-3 (1-4 cells)"
        )
    return manifest


def check_model_archive(model_path: Path) -> None:
    """Check ``model_path`` is a Keras 3 model archive (a zip with config.json and
    model.weights.h5), before anything beside it is read.

    Raises:
        DataError: the file is missing, not a zip file, or a zip without those members.
    """
    import zipfile

    if not model_path.is_file():
        raise DataError(f"{model_path}: model file not found")
    if not zipfile.is_zipfile(model_path):
        raise DataError(
            f"{model_path}: not a Keras model archive (not a zip file); expected the "
            "model.keras a training run wrote"
        )
    with zipfile.ZipFile(model_path) as zf:
        names = set(zf.namelist())
    if not {"config.json", "model.weights.h5"} <= names:
        raise DataError(
            f"{model_path}: a zip without config.json and model.weights.h5, not a Keras 3 "
            "model archive; expected the model.keras a training run wrote"
        )


def load_checked_model(model_path: Path, image_size: int):
    """Load a ``model.keras`` and check it is the paper CNN for ``image_size`` px inputs,
    before any image is read.

    Args:
        model_path: the file. image_size: the input side its settings.json gives (px).

    Returns:
        the Keras model, uncompiled (scoring only predicts).

    Raises:
        DataError: not a zip file, a zip that is not a Keras 3 model archive (no config.json
            and weights), a model Keras cannot rebuild, or inputs/outputs other than
            (None, image_size, image_size, 1) -> (None, 4).
    """
    check_model_archive(model_path)
    import keras

    try:
        # Uncompiled: scoring only predicts, and the optimizer a run trained with may be
        # one Keras knows only once its module is imported (workloads.fused_adam).
        model = keras.models.load_model(model_path, compile=False)
    except Exception as exc:  # Keras raises many types for a damaged archive
        raise DataError(
            f"{model_path}: Keras cannot load this model ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    shapes = (tuple(model.input_shape), tuple(model.output_shape))
    if shapes != ((None, image_size, image_size, 1), (None, 4)):
        raise DataError(
            f"{model_path}: model maps {shapes[0]} to {shapes[1]}; expected "
            f"(None, {image_size}, {image_size}, 1) to (None, 4) (the paper CNN, settings.json)"
        )
    return model


def evaluate(
    model_path: str | os.PathLike,
    images: str | os.PathLike,
    all_rotations: bool = False,
    batch_size: int = 480,
) -> dict:
    """Score ``model_path`` on every image under ``images``.

    Args:
        model_path: a ``model.keras`` written by the train stage; ``settings.json`` must lie
            beside it.
        images: a folder of class folders ``<class>/*.png`` or of split folders
            ``<split>/<class>/*.png`` (every split is scored, whatever its name); class k
            holds k + 1 cells, k in 0-3.
        all_rotations: score every training rotation of each image (the paper's rotated test
            set, n = images x rotations) instead of the unrotated image only.
        batch_size: prediction batch size.

    Returns:
        dict with ``accuracy`` (fraction), ``n`` (scored samples), ``confusion`` (4x4 list,
        rows = true cells 1-4, columns = predicted), ``model`` and ``images``.

    Raises:
        DataError: missing model or settings (or settings without the preprocessing keys),
            a file that is not the paper CNN's Keras archive (:func:`load_checked_model`,
            checked before any image is read), class folders outside 0-3, or images that
            are not 8-bit gray PNGs of the frame size the model was trained on.
    """
    model_path, images = Path(model_path), Path(images)
    check_model_archive(model_path)  # a wrong file is named before its missing settings
    pp = Preprocessing.from_settings_file(model_path.parent / SETTINGS)
    model = load_checked_model(model_path, pp.image_size)
    manifest = _index(images, pp.frame_size)
    angles = preprocess.rotation_angles(pp.rotation_step) if all_rotations else np.zeros(1)
    x = np.concatenate(
        [
            preprocess.preprocess_frame(
                preprocess.read_frame(p, pp.frame_size),
                pp.crop_fraction,
                pp.invert_centre,
                angles,
                pp.image_size,
            )
            for p in manifest["path"]
        ]
    )[..., None]
    y = np.repeat(manifest["cells"].to_numpy() - 1, len(angles))
    pred = np.argmax(model.predict(x, batch_size=batch_size, verbose=0), axis=1)
    confusion = np.zeros((4, 4), dtype=int)
    np.add.at(confusion, (y, pred), 1)
    return {
        "accuracy": float((pred == y).mean()),
        "n": int(len(y)),
        "confusion": confusion.tolist(),
        "rotations": int(len(angles)),
        "model": str(model_path),
        "images": str(images),
    }

"""Image folders laid out ``<split>/<class>/*.jpg|png`` (Keras's ``flow_from_directory``
layout, the cats-vs-dogs tutorial's ``training_set``/``test_set``): listing them, decoding
them into uint8 arrays for memory mode, and writing arrays out as such a folder (synthetic
images on disk for files mode).

A class is a sub-folder; classes are numbered in the sorted order of their names, as
``flow_from_directory`` numbers them. Images are decoded with Pillow, converted to grey (1
channel) or RGB (3), and resized to the workload's (H, W) with nearest-neighbour sampling, the
default of Keras's ``load_img(target_size=...)`` that the studies' generators used.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import DataError
from ..io import entry_problem, folder_entries, shown_path, staged_folder

#: File name endings read as images (compared in lower case).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
#: Pillow's mode for a channel count.
MODES = {1: "L", 3: "RGB"}
#: File formats :func:`write_image_folder` writes, with their file name ending.
FORMATS = {"jpeg": ".jpg", "png": ".png"}
#: JPEG quality of written images (Pillow's default is 75).
JPEG_QUALITY = 95


def _usable(entry: os.DirEntry) -> bool:
    """Not hidden; raises DataError for an entry that cannot be used (a dangling link...)."""
    if entry.name.startswith("."):
        return False
    problem = entry_problem(entry.path)
    if problem:
        raise DataError(f"{shown_path(entry.path)}: {problem}")
    return True


def list_image_folder(folder: str | os.PathLike) -> tuple[list[Path], np.ndarray, list[str]]:
    """The images of one split folder and their classes.

    Args:
        folder: ``<split>``, holding one sub-folder of images per class. Hidden entries and
            files that are not .jpg/.jpeg/.png are skipped (as ``flow_from_directory`` does).

    Returns:
        ``(paths, labels, class_names)``: image paths sorted by class then name, int32 labels
        (N,) (the class's index), the sorted class folder names.

    Raises:
        DataError: naming the folder or entry: not a folder, no class folders, no images at
            all, or an entry that cannot be read (see :func:`embryo_bench.io.entry_problem`).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(
            f"{shown_path(folder)}: not a folder; expected a split folder of class folders "
            "(<class>/*.jpg)"
        )
    classes = [e for e in folder_entries(folder) if _usable(e) and e.is_dir()]
    if not classes:
        raise DataError(
            f"{shown_path(folder)}: no class folders; expected one folder of images per class "
            "(<class>/*.jpg)"
        )
    paths: list[Path] = []
    labels: list[int] = []
    for label, entry in enumerate(classes):
        for image in folder_entries(entry.path):
            if image.name.lower().endswith(IMAGE_SUFFIXES) and _usable(image):
                paths.append(Path(image.path))
                labels.append(label)
    if not paths:
        raise DataError(
            f"{shown_path(folder)}: no images in its class folders "
            f"({', '.join(e.name for e in classes)}); expected files ending in "
            f"{', '.join(IMAGE_SUFFIXES)}"
        )
    return paths, np.asarray(labels, dtype=np.int32), [e.name for e in classes]


def decode_image(path: str | os.PathLike, shape: tuple[int, int, int]) -> np.ndarray:
    """Decode one image file to uint8 (H, W, C), converted and resized as the module says.

    Raises:
        DataError: naming the file: missing, not an image, truncated or corrupt, or a
            channel count other than 1 or 3 asked for.
    """
    height, width, channels = shape
    if channels not in MODES:
        raise DataError(f"{path}: {channels} channels asked for; expected 1 or 3")
    try:
        with Image.open(path) as img:
            img.load()
            img = img.convert(MODES[channels])
            if img.size != (width, height):
                img = img.resize((width, height), Image.Resampling.NEAREST)
            array = np.asarray(img, dtype=np.uint8)
    except FileNotFoundError as exc:
        raise DataError(f"{shown_path(path)}: file not found") from exc
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise DataError(
            f"{shown_path(path)}: not a readable image, truncated or corrupt ({exc})"
        ) from None
    return array.reshape(height, width, channels)


def read_image_folder(
    folder: str | os.PathLike,
    shape: tuple[int, int, int],
    *,
    classes: int = 0,
    limit: int = 0,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Decode a split folder into arrays (memory mode).

    Args:
        folder: the split folder (:func:`list_image_folder`).
        shape: (H, W, C) of one decoded image.
        classes: when > 0, the number of class folders there must be.
        limit: keep the first N images in listing order (0: all).

    Returns:
        ``(x, y, class_names)``: uint8 (N, H, W, C), int32 (N,), the class names. Memory: the
        array, allocated once, and one image at a time.

    Raises:
        DataError: as :func:`list_image_folder` and :func:`decode_image`, or another number of
            class folders than ``classes``.
    """
    paths, labels, names = list_image_folder(folder)
    if classes and len(names) != classes:
        raise DataError(
            f"{shown_path(folder)}: {len(names)} class folders ({', '.join(names)}); expected "
            f"{classes}"
        )
    if limit > 0:
        paths, labels = paths[:limit], labels[:limit]
    x = np.empty((len(paths), *shape), dtype=np.uint8)
    for i, path in enumerate(paths):
        x[i] = decode_image(path, shape)
    return x, labels, names


def write_image_folder(
    x: np.ndarray,
    y: np.ndarray,
    folder: str | os.PathLike,
    class_names: list[str],
    fmt: str = "jpeg",
) -> list[Path]:
    """Write images as a split folder ``<folder>/<class>/<index>.jpg|png`` (files mode).

    Files appear in ``folder`` only when all are written (:func:`embryo_bench.io.staged_folder`).
    PNG keeps the pixels exactly; JPEG (quality 95) is lossy. The class names are joined to
    ``folder`` as given: write through :func:`embryo_bench.data.classnames.write_class_folders`,
    which checks first that each is one folder name of its own, in sorted order.

    Args:
        x: uint8 images (N, H, W, C), C = 1 or 3.
        y: int32 labels (N,), indices into ``class_names``.
        folder: the split folder to write.
        class_names: a folder name per class; every class gets its folder, even if empty.
        fmt: "jpeg" or "png".

    Returns:
        the written paths, in the order of ``x``.

    Raises:
        ValueError: another format, channel count or dtype, or a label without a class name.
        OSError: the folder cannot be written.
    """
    if fmt not in FORMATS:
        raise ValueError(f"image format {fmt!r}; expected one of {sorted(FORMATS)}")
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[3] not in MODES:
        raise ValueError(f"images {x.dtype} {x.shape}; expected uint8 (N, H, W, 1 or 3)")
    if len(y) != len(x) or (len(y) and not 0 <= y.min() <= y.max() < len(class_names)):
        raise ValueError(f"{len(y)} labels for {len(x)} images of {len(class_names)} classes")
    folder = Path(folder)
    names = [f"{i:06d}{FORMATS[fmt]}" for i in range(len(x))]
    with staged_folder(folder) as staging:
        for name in class_names:
            (staging / name).mkdir(parents=True, exist_ok=True)
        for image, label, name in zip(x, y, names, strict=True):
            pil = Image.fromarray(image[..., 0] if image.shape[2] == 1 else image)
            options = {"quality": JPEG_QUALITY} if fmt == "jpeg" else {}
            pil.save(staging / class_names[label] / name, format=fmt.upper(), **options)
    for name in class_names:  # staged_folder moves files only: the empty class folders
        (folder / name).mkdir(parents=True, exist_ok=True)
    return [folder / class_names[label] / name for label, name in zip(y, names, strict=True)]

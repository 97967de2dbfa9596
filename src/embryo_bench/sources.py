"""Index a data source into a manifest of labelled frames.

Two on-disk layouts are understood:

* the Mouse Embryo Tracking Database layout (Cicconet et al. 2014): ``E<NN>/Frame<NNN>.png``
  (480x480 8-bit grayscale) plus one ``E<NN>/_trajectories.txt`` per embryo, tab-separated, one
  line per frame, groups of three integers (row, column, radius) per tracked cell, radius 0
  meaning "no cell in this slot". A frame's label is its number of groups with radius > 0.
  Frames are numbered consecutively and the k-th line labels the k-th frame; any other shape
  of the data is an error.
* an image folder ``<root>/<split>/<class>/*.png`` (class k = k + 1 cells), the layout of the
  28 px subset in ``../shared/data/embryo-cells-28px``.

The manifest is a :class:`pandas.DataFrame` with columns ``embryo`` (str, "" when unknown),
``frame`` (str), ``path`` (str, absolute), ``cells`` (int) and ``split`` ("train" | "test").
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from .errors import DataError

EMBRYO_RE = re.compile(r"^E(\d{2,})$")
FRAME_RE = re.compile(r"^Frame(\d+)\.png$", re.IGNORECASE)
TRAJECTORIES = "_trajectories.txt"
MANIFEST_COLUMNS = ["embryo", "frame", "path", "cells", "split"]


def parse_trajectories(path: str | Path) -> np.ndarray:
    """Parse one ``_trajectories.txt`` file into the number of cells per frame.

    Args:
        path: the file; each non-empty line is tab-separated integers, a multiple of three
            (row, column, radius per tracked cell slot).

    Returns:
        int64 array of shape (n_lines,): the number of slots with radius > 0 on each line.

    Raises:
        DataError: missing file, or a line that is not a non-empty multiple of three
            non-negative integers (the message names the file, the line and what was expected).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError as exc:
        raise DataError(
            f"{path}: trajectories file not found (every embryo folder needs one)"
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a text file ({exc})") from exc
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataError(f"{path}: empty; expected one line per frame of (row, column, radius)")
    counts = np.empty(len(lines), dtype=np.int64)
    for i, line in enumerate(lines, start=1):
        fields = line.rstrip("\r").split("\t")
        while fields and fields[-1].strip() == "":  # tolerate trailing tabs only
            fields.pop()
        if not fields or len(fields) % 3:
            raise DataError(
                f"{path}, line {i}: {len(fields)} tab-separated fields; expected a non-empty "
                "multiple of 3 (row, column, radius per cell)"
            )
        try:
            values = [int(f) for f in fields]
        except ValueError as exc:
            raise DataError(f"{path}, line {i}: expected integers, got {line!r}") from exc
        if min(values) < 0:
            raise DataError(f"{path}, line {i}: negative value; expected integers >= 0")
        radii = values[2::3]
        counts[i - 1] = sum(r > 0 for r in radii)
    return counts


def check_frame_header(path: str | Path, frame_size: int) -> None:
    """Check that a PNG is a ``frame_size`` x ``frame_size`` 8-bit grayscale image.

    Reads only the header; decoding errors surface when the pixels are read
    (:func:`embryo_bench.preprocess.read_frame`).

    Raises:
        DataError: unreadable file, wrong size, or mode other than ``L`` (8-bit gray).
    """
    try:
        with Image.open(path) as im:
            size, mode = im.size, im.mode
    except (UnidentifiedImageError, OSError) as exc:
        raise DataError(f"{path}: not a readable PNG image ({exc})") from exc
    if size != (frame_size, frame_size):
        raise DataError(
            f"{path}: frame is {size[0]}x{size[1]} px; expected {frame_size}x{frame_size} "
            "(setting frame_size)"
        )
    if mode != "L":
        raise DataError(f"{path}: image mode {mode!r}; expected 8-bit grayscale ('L')")


def find_db_root(directory: str | Path) -> Path:
    """Return the folder under ``directory`` that holds the ``E<NN>`` embryo folders.

    The archive may hold them at its top level or under one wrapping folder.

    Raises:
        DataError: no ``E<NN>`` folders found at either level.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a directory")
    candidates = [directory] + sorted(p for p in directory.iterdir() if p.is_dir())
    for cand in candidates:
        if any(EMBRYO_RE.match(p.name) and p.is_dir() for p in cand.iterdir()):
            return cand
    raise DataError(
        f"{directory}: no embryo folders E<NN>/ (with Frame<NNN>.png and {TRAJECTORIES}) found "
        "at the top level or one level down; expected the Mouse Embryo Tracking Database layout"
    )


def test_split(embryo_number: int, test_mod: int, test_remainder: int) -> str:
    """Paper split: an embryo is in the test set when its number mod ``test_mod`` equals
    ``test_remainder`` (paper: mod 5 == 0, about 20 % of embryos)."""
    return "test" if embryo_number % test_mod == test_remainder else "train"


def index_db(
    directory: str | Path, frame_size: int, test_mod: int = 5, test_remainder: int = 0
) -> tuple[pd.DataFrame, dict]:
    """Index a database-layout tree into a manifest of labelled frames.

    Args:
        directory: the extracted database (or a folder one level above it).
        frame_size: expected frame width and height in px (480 for the real database).
        test_mod, test_remainder: the embryo-number split rule (:func:`test_split`).

    Returns:
        (manifest, stats): manifest as in the module docstring, one row per labelled frame;
        stats counts embryos and frames.

    Raises:
        DataError: no embryo folders, an embryo without frames or with a gap in its frame
            numbers, a missing or garbled trajectories file, a line count other than the
            frame count, or a frame of the wrong size or mode.
    """
    root = find_db_root(directory)
    rows = []
    stats = {"root": str(root), "embryos": 0, "frames": 0}
    for emb_dir in sorted(p for p in root.iterdir() if p.is_dir() and EMBRYO_RE.match(p.name)):
        number = int(EMBRYO_RE.match(emb_dir.name).group(1))
        frames = sorted(
            (p for p in emb_dir.iterdir() if FRAME_RE.match(p.name)),
            key=lambda p: int(FRAME_RE.match(p.name).group(1)),
        )
        if not frames:
            raise DataError(f"{emb_dir}: no Frame<NNN>.png files; expected the embryo's frames")
        numbers = [int(FRAME_RE.match(p.name).group(1)) for p in frames]
        gaps = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
        if gaps:
            raise DataError(
                f"{emb_dir}: frame number {gaps[0]} is missing between {frames[0].name} and "
                f"{frames[-1].name}; expected consecutive Frame<NNN>.png (line k labels frame k)"
            )
        counts = parse_trajectories(emb_dir / TRAJECTORIES)
        if len(counts) != len(frames):
            raise DataError(
                f"{emb_dir / TRAJECTORIES}: {len(counts)} lines for {len(frames)} frames "
                f"({frames[0].name}..{frames[-1].name}); expected exactly one line per frame"
            )
        split = test_split(number, test_mod, test_remainder)
        for frame_path, cells in zip(frames, counts, strict=True):
            check_frame_header(frame_path, frame_size)
            rows.append(
                (emb_dir.name, frame_path.stem, str(frame_path.resolve()), int(cells), split)
            )
        stats["embryos"] += 1
        stats["frames"] += len(frames)
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS), stats


def _split_name(folder: Path) -> str:
    name = folder.name.lower()
    if name in ("train", "training"):
        return "train"
    if name in ("test", "testing", "val", "validation"):
        return "test"
    raise DataError(
        f"{folder}: split folder name not understood; expected Train/ or Test/ (any case)"
    )


def index_class_folders(directory: str | Path, split: str, frame_size: int) -> list[tuple]:
    """Manifest rows for ``directory/<class>/*.png`` (class k holds k + 1 cells).

    Returns:
        list of (embryo "", frame "<dir>/<class>/<stem>", absolute path, cells, split)
        tuples in :data:`MANIFEST_COLUMNS` order, sorted by class then file name.

    Raises:
        DataError: a class folder that is not an integer, an empty class folder, or a frame
            of the wrong size or mode.
    """
    directory = Path(directory)
    rows = []
    for class_dir in sorted(p for p in directory.iterdir() if p.is_dir()):
        if not re.fullmatch(r"\d+", class_dir.name):
            raise DataError(f"{class_dir}: class folder must be an integer (k = k+1 cells)")
        cells = int(class_dir.name) + 1
        pngs = sorted(class_dir.glob("*.png"))
        if not pngs:
            raise DataError(f"{class_dir}: no .png images in class folder")
        for p in pngs:
            check_frame_header(p, frame_size)
            rows.append(
                ("", f"{directory.name}/{class_dir.name}/{p.stem}", str(p.resolve()), cells, split)
            )
    return rows


def index_imagefolder(directory: str | Path, frame_size: int) -> tuple[pd.DataFrame, dict]:
    """Index an image folder ``<root>/<split>/<class>/*.png`` (class k holds k + 1 cells).

    Returns:
        (manifest, stats) as in :func:`index_db`; ``embryo`` is "" (unknown in this layout)
        and the split comes from the folder name.

    Raises:
        DataError: no split folders, a split folder not named train/test (any case; also
            training, testing, val, validation), a class folder that is not an integer, an
            empty class folder, or a frame of the wrong size or mode.
    """
    root = Path(directory)
    if not root.is_dir():
        raise DataError(f"{root}: image folder not found (setting source)")
    rows = []
    split_dirs = sorted(p for p in root.iterdir() if p.is_dir())
    if not split_dirs:
        raise DataError(f"{root}: no split folders; expected <root>/<split>/<class>/*.png")
    for split_dir in split_dirs:
        rows += index_class_folders(split_dir, _split_name(split_dir), frame_size)
    manifest = pd.DataFrame(rows, columns=MANIFEST_COLUMNS)
    if manifest.empty:
        raise DataError(f"{root}: no images found under <split>/<class>/")
    return manifest, {"root": str(root.resolve()), "frames": len(manifest)}


def index_source(
    layout: str,
    root: str | Path,
    frame_size: int,
    *,
    test_mod: int = 5,
    test_remainder: int = 0,
    dataset: str,
    label: str,
    synthetic: bool = False,
    download_info: str | Path | None = None,
    checksum_of: str | Path | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Index a source and describe it for provenance (the ``index`` stage).

    Args:
        layout: "db" (:func:`index_db`) or "imagefolder" (:func:`index_imagefolder`).
        root: the folder to index.
        frame_size, test_mod, test_remainder: as :func:`index_db`.
        dataset: the config's ``dataset.kind``; label: how figures name the data.
        synthetic: generated frames (their identity is "synthetic", not a checksum).
        download_info: the download record whose sha256 identifies the data.
        checksum_of: the archive or folder whose sha256 identifies the data (default
            ``root``): a file's sha256, or :func:`embryo_bench.io.sha256_tree` of a folder.

    Returns:
        (manifest, source): source holds dataset, label, synthetic, root, the index's counts
        and sha256 ("synthetic" for generated data) with, when computed here, sha256_of.

    Raises:
        DataError: as the index functions, or an unreadable download record.
    """
    from .io import read_json, sha256_file, sha256_tree

    if layout == "imagefolder":
        manifest, stats = index_imagefolder(root, frame_size)
    else:
        manifest, stats = index_db(root, frame_size, test_mod, test_remainder)
    source = {
        "dataset": dataset,
        "label": label,
        "synthetic": synthetic,
        "root": str(Path(root).resolve()),
        **stats,
    }
    if synthetic:
        source["sha256"] = "synthetic"
    elif download_info:
        source["sha256"] = read_json(download_info)["sha256"]
    else:
        ident = Path(checksum_of or root)
        source["sha256"] = sha256_file(ident) if ident.is_file() else sha256_tree(ident)
        source["sha256_of"] = str(ident)
    return manifest, source

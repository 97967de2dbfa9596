"""Index a data source into a manifest of labelled frames.

Two on-disk layouts are understood:

* the Mouse Embryo Tracking Database layout (Cicconet et al. 2014): ``E<NN>/Frame<NNN>.png``
  (480x480 8-bit grayscale) plus one ``E<NN>/_trajectories.txt`` per embryo: one line per
  frame from the first, groups of three integers (row, column, radius) per cell slot (21
  columns = 7 lineage slots in the real files), radius 0 meaning "no cell in this slot". A
  frame's label is its number of slots with radius > 0. Frames are numbered consecutively and
  the k-th line labels the k-th frame; frames past the last line, surplus last lines and frames
  after the 7-slot lineage stops counting every cell follow
  :class:`embryo_bench.data.trajectories.TrajectoryRules`.
* an image folder ``<root>/<split>/<class>/*.png`` (class k = k + 1 cells), the layout of the
  28 px subset in ``../shared/data/embryo-cells-28px``.

The manifest is a :class:`pandas.DataFrame` with columns ``embryo`` (str, "" when unknown),
``frame`` (str), ``path`` (str, absolute), ``cells`` (int) and ``split`` ("train" | "test").
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
from PIL import Image, UnidentifiedImageError

from ..errors import DataError
from ..io import entry_problem, folder_entries, read_json, sha256_file, sha256_tree, shown_path
from .frames import check_image
from .trajectories import TrajectoryRules, label_frames

EMBRYO_RE = re.compile(r"^E(\d{2,})$")
FRAME_RE = re.compile(r"^Frame(\d+)\.png$", re.IGNORECASE)
TRAJECTORIES = "_trajectories.txt"
MANIFEST_COLUMNS = ["embryo", "frame", "path", "cells", "split"]


"""Exactly one line per frame, every non-zero slot counted as a cell."""


def check_frame_header(path: str | Path, frame_size: int) -> None:
    """Check that a file is a PNG image of ``frame_size`` x ``frame_size`` px, 8-bit gray.

    Reads only the header; decoding errors surface when the pixels are read
    (:func:`embryo_bench.data.preprocess.read_frame`). The format is the one the file's bytes
    say, not its extension: a JPEG renamed ``.png`` is refused.

    Args:
        path: the image file. frame_size: expected width and height (px).

    Raises:
        DataError: unreadable file (a link to a missing file, a link that loops, permission
            denied, or not an image), an image in another format than PNG, wrong size, or
            mode other than ``L`` (8-bit gray).
    """
    try:
        with Image.open(path) as im:
            check_image(path, im, frame_size)  # the header only: no pixels decoded
    except (UnidentifiedImageError, OSError) as exc:
        problem = entry_problem(path)
        if problem:
            raise DataError(f"{path}: {problem}") from exc
        raise DataError(f"{path}: not a readable PNG image ({exc})") from exc


def _listing(directory: Path) -> list[Path]:
    """The entries of ``directory`` sorted by name (DataError naming a folder that cannot be
    read, :func:`embryo_bench.io.folder_entries`)."""
    return [Path(e.path) for e in folder_entries(directory)]


def find_db_root(directory: str | Path) -> Path:
    """Return the folder under ``directory`` that holds the ``E<NN>`` embryo folders.

    The archive may hold them at its top level or under one wrapping folder.

    Raises:
        DataError: no ``E<NN>`` folders found at either level, or a folder that cannot be
            read.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a directory")
    candidates = [directory] + [p for p in _listing(directory) if p.is_dir()]
    for cand in candidates:
        if any(EMBRYO_RE.match(p.name) and p.is_dir() for p in _listing(cand)):
            return cand
    raise DataError(
        f"{directory}: no embryo folders E<NN>/ (with Frame<NNN>.png and {TRAJECTORIES}) found "
        "at the top level or one level down; expected the Mouse Embryo Tracking Database layout"
    )


def test_split(embryo_number: int, test_mod: int, test_remainder: int) -> str:
    """Paper split: an embryo is in the test set when its number mod ``test_mod`` equals
    ``test_remainder`` (paper: mod 5 == 0, about 20 % of embryos)."""
    return "test" if embryo_number % test_mod == test_remainder else "train"


def check_split(
    manifest: pd.DataFrame,
    root: str | Path,
    layout: str,
    test_mod: int,
    test_remainder: int,
    classes: tuple[int, ...],
) -> None:
    """Refuse an index whose split leaves no test or no training frame, or a class with
    frames in one split only (the index stage checks it before writing).

    Args:
        manifest: the index's manifest (:data:`MANIFEST_COLUMNS`).
        root: the indexed folder (named in the message).
        layout: "db" (split by embryo number) or "imagefolder" (split by folder).
        test_mod, test_remainder: the split rule (:func:`test_split`), "db" only.
        classes: the cell counts that are trained on (classes absent from the whole manifest
            are left to the select stage, which names them).

    Raises:
        DataError: naming the split rule (or the split folders) and what is missing.
    """
    if layout == "db":
        embryos = sorted(manifest["embryo"].unique())
        rule = (
            f"split.test_mod {test_mod}, split.test_remainder {test_remainder} (test: embryo "
            f"number mod {test_mod} == {test_remainder})"
        )
        shown = ", ".join(embryos[:8]) + (", ..." if len(embryos) > 8 else "")
        where = f"{root}: {rule}, embryos {shown}"
    else:
        where = f"{root} (split by its folders <split>/<class>/)"
    names = {"test": "test", "train": "training"}
    for split, name in names.items():
        if not (manifest["split"] == split).any():
            fix = "change split" if layout == "db" else f"add a {split.title()}/ folder"
            raise DataError(f"{where}: no {name} {'embryo' if layout == 'db' else 'frame'}: {fix}")
    counts = manifest[manifest["cells"].isin(classes)].groupby(["split", "cells"]).size()
    present = {c for (_, c) in counts.index}
    for split, name in names.items():
        missing = [c for c in classes if c in present and (split, c) not in counts.index]
        if missing:
            raise DataError(
                f"{where}: no {name} frame with {missing[0]} cells (the other split has "
                f"them): the model would be {'scored' if split == 'test' else 'trained'} "
                "without that class; change split"
            )


def index_db(
    directory: str | Path,
    frame_size: int,
    test_mod: int = 5,
    test_remainder: int = 0,
    rules: TrajectoryRules | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Index a database-layout tree into a manifest of labelled frames.

    Args:
        directory: the extracted database (or a folder one level above it).
        frame_size: expected frame width and height in px (480 for the real database).
        test_mod, test_remainder: the embryo-number split rule (:func:`test_split`).
        rules: how lines pair with frames (default
        :class:`embryo_bench.data.trajectories.TrajectoryRules`, the config's
            defaults).

    Returns:
        (manifest, stats): manifest as in the module docstring, one row per labelled frame
        kept; stats counts embryos, frames (all PNGs), labelled frames and, over all embryos,
        ``frames_unlabelled``, ``lines_ignored`` and ``frames_lineage_ended``, with
        ``per_embryo`` holding the embryos where any of those is non-zero.

    Raises:
        DataError: no embryo folders, an embryo without frames or with a gap in its frame
            numbers, a missing or garbled trajectories file, a line count the rules do not
            allow, a frame that is not a PNG (whatever its extension) or of the wrong size
            or mode, or a folder that cannot be read.
    """
    rules = rules or TrajectoryRules()
    root = find_db_root(directory)
    rows = []
    skipped = ("frames_unlabelled", "lines_ignored", "frames_lineage_ended")
    stats = {"root": str(root), "embryos": 0, "frames": 0, "frames_labelled": 0}
    stats.update(dict.fromkeys(skipped, 0), per_embryo={}, rules=dataclasses.asdict(rules))
    for emb_dir in [p for p in _listing(root) if p.is_dir() and EMBRYO_RE.match(p.name)]:
        number = int(EMBRYO_RE.match(emb_dir.name).group(1))
        frames = sorted(
            (p for p in _listing(emb_dir) if FRAME_RE.match(p.name)),
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
        pairs, counts = label_frames(emb_dir / TRAJECTORIES, frames, rules)
        split = test_split(number, test_mod, test_remainder)
        for frame_path in frames:
            check_frame_header(frame_path, frame_size)
        for frame_path, cells in pairs:
            rows.append((emb_dir.name, frame_path.stem, str(frame_path.resolve()), cells, split))
        stats["embryos"] += 1
        stats["frames"] += len(frames)
        stats["frames_labelled"] += len(pairs)
        for key in skipped:
            stats[key] += counts[key]
        if any(counts[key] for key in skipped):
            stats["per_embryo"][emb_dir.name] = counts
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS), stats


VALIDATION_NAMES = ("val", "validation")


def _split_name(folder: Path) -> str:
    """The split of a split folder: train/training -> "train"; test/testing and the
    validation folders val/validation -> "test" (any case; the model never trains on a
    validation folder, :func:`skipped_lines` says so in the index log).

    Raises:
        DataError: another name.
    """
    name = folder.name.lower()
    if name in ("train", "training"):
        return "train"
    if name in ("test", "testing", *VALIDATION_NAMES):
        return "test"
    raise DataError(
        f"{folder}: split folder name not understood; expected Train/ or Test/ (any case)"
    )


def visible_entries(directory: Path, ignored: list[str] | None = None) -> list[Path]:
    """The entries of ``directory`` whose names do not start with "." (hidden entries such as
    ``.ipynb_checkpoints`` or ``.DS_Store`` are never data), sorted by name.

    Args:
        directory: a folder.
        ignored: if given, the hidden entries' paths are appended to it.

    Raises:
        DataError: naming the path: ``directory`` cannot be read (permission denied), or a
            visible entry is a symbolic link that loops, a link to a missing file, or has a
            name that is not UTF-8 (its bytes shown as ``\\xNN``)
            (:func:`embryo_bench.io.entry_problem`).
    """
    out = []
    for entry in folder_entries(directory):
        p = Path(entry.path)
        if p.name.startswith("."):
            if ignored is not None:
                ignored.append(str(p))
            continue
        problem = entry_problem(entry.path)
        if problem:
            raise DataError(f"{shown_path(entry.path)}: {problem}")
        out.append(p)
    return out


def index_class_folders(
    directory: str | Path, split: str, frame_size: int, ignored: list[str] | None = None
) -> list[tuple]:
    """Manifest rows for ``directory/<class>/*.png`` (class k holds k + 1 cells; the
    extension in any case; hidden entries skipped).

    Args:
        directory: the split folder. split: its split name. frame_size: expected px.
        ignored: if given, every entry passed over (hidden entries, files that are not
            ``.png``) is appended to it, for the caller to count and warn about.

    Returns:
        list of (embryo "", frame "<dir>/<class>/<stem>", absolute path, cells, split)
        tuples in :data:`MANIFEST_COLUMNS` order, sorted by class then file name.

    Raises:
        DataError: a class folder that is not an integer, a class folder without a .png
            image, a .png that is not a PNG image (a JPEG renamed, ...) or of the wrong size
            or mode, or an entry :func:`visible_entries` refuses (a folder that cannot be
            read, a link that loops or points to a missing file, a name that is not UTF-8).
    """
    directory = Path(directory)
    ignored = [] if ignored is None else ignored
    rows = []
    for class_dir in visible_entries(directory, ignored):
        if not class_dir.is_dir():
            ignored.append(str(class_dir))
            continue
        if not re.fullmatch(r"\d+", class_dir.name):
            raise DataError(f"{class_dir}: class folder must be an integer (k = k+1 cells)")
        cells = int(class_dir.name) + 1
        pngs = []
        for p in visible_entries(class_dir, ignored):
            if p.is_file() and p.suffix.lower() == ".png":
                pngs.append(p)
            else:
                ignored.append(str(p))
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
        and the split comes from the folder name: stats' ``split_folders`` maps each split
        folder's name to its split (a validation folder, Val/ or Validation/, joins the test
        split: the model never trains on it).

    Raises:
        DataError: no split folders, a split folder not named train/test (any case; also
            training, testing, val, validation), a class folder that is not an integer, an
            empty class folder, a .png that is not a PNG image or of the wrong size or mode,
            or an entry :func:`visible_entries` refuses (a folder that cannot be read, a link
            that loops or points to a missing file, a name that is not UTF-8). Hidden entries
            and files other than .png (any case) are passed over and counted in the stats'
            ``entries_ignored`` (with up to 10 ``entries_ignored_examples``).
    """
    root = Path(directory)
    if not root.is_dir():
        raise DataError(f"{root}: image folder not found (setting source)")
    rows, ignored = [], []
    split_dirs = [p for p in visible_entries(root, ignored) if p.is_dir()]
    ignored += [str(p) for p in visible_entries(root) if not p.is_dir()]
    if not split_dirs:
        raise DataError(f"{root}: no split folders; expected <root>/<split>/<class>/*.png")
    split_folders = {p.name: _split_name(p) for p in split_dirs}
    for split_dir in split_dirs:
        rows += index_class_folders(split_dir, split_folders[split_dir.name], frame_size, ignored)
    manifest = pd.DataFrame(rows, columns=MANIFEST_COLUMNS)
    if manifest.empty:
        raise DataError(f"{root}: no images found under <split>/<class>/")
    stats = {"root": str(root.resolve()), "frames": len(manifest), "frames_labelled": len(rows)}
    stats["entries_ignored"] = len(ignored)
    stats["entries_ignored_examples"] = ignored[:10]
    stats["split_folders"] = split_folders
    return manifest, stats


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
    rules: TrajectoryRules | None = None,
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
        rules: trajectory rules of the database layout
        (:class:`embryo_bench.data.trajectories.TrajectoryRules`).

    Returns:
        (manifest, source): source holds dataset, label, synthetic, root, the index's counts
        and sha256 ("synthetic" for generated data) with, when computed here, sha256_of.

    Raises:
        DataError: as the index functions, or an unreadable download record.
    """
    if layout == "imagefolder":
        manifest, stats = index_imagefolder(root, frame_size)
    else:
        manifest, stats = index_db(root, frame_size, test_mod, test_remainder, rules)
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


def skipped_lines(source: dict) -> list[str]:
    """Log lines for what indexing left out of a source or put where a reader might not
    expect it (none when nothing).

    Args:
        source: the ``source.json`` dict of :func:`index_source`.

    Returns:
        one line per kind of left-out frame or line, with its count and embryos; one per
        kind of passed-over entry of an image folder; one per validation folder (Val/), which
        is scored as test.
    """
    what = {
        "frames_unlabelled": "frames after their embryo's last trajectory line (unlabelled)",
        "lines_ignored": "trajectory lines after their embryo's last frame (ignored)",
        "frames_lineage_ended": (
            "frames from the line where a grand-daughter slot ends (5+ cells; left out)"
        ),
    }
    per_embryo = source.get("per_embryo", {})
    out = []
    if source.get("entries_ignored"):
        out.append(
            f"{source['entries_ignored']} entries that are not class folders or .png images "
            f"passed over (hidden entries, other files), e.g. "
            f"{', '.join(source['entries_ignored_examples'][:3])}"
        )
    for folder, split in source.get("split_folders", {}).items():
        if folder.lower() in VALIDATION_NAMES:
            out.append(
                f"split folder {folder} is scored as {split} (validation folders join the "
                "test split; the model never trains on them)"
            )
    for key, text in what.items():
        if source.get(key):
            embryos = [e for e, c in per_embryo.items() if c[key]]
            out.append(
                f"{source[key]} {text}, in {len(embryos)} embryos ({', '.join(embryos[:10])}"
                f"{', ...' if len(embryos) > 10 else ''}); rule: dataset.trajectories"
            )
    return out

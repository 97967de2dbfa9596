"""Select frames with 1-4 cells, balance the classes, and assign shards (paper section 3).

The paper keeps every 3-cell frame (the rarest class, 766 frames) and draws the same number at
random from each other class: 766 x 4 = 3,064 frames. The train/test split is by embryo and is
already in the manifest (:func:`embryo_bench.data.sources.test_split`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DataError
from ..published import paper
from .sources import MANIFEST_COLUMNS

CLASSES = (1, 2, 3, 4)


def select_frames(manifest_path: str, seed: int, shards: int) -> tuple[pd.DataFrame, dict]:
    """The ``select`` stage: read a manifest, keep 1-4 cell frames balanced to the rarest
    class (:func:`balance`), assign shards (:func:`assign_shards`).

    Returns:
        (selected rows with a ``shard`` column, :func:`summary` counts).

    Raises:
        DataError: the manifest is missing, a class is empty, fewer frames than shards, or a
            split has no frame after selection.
    """
    try:
        manifest = pd.read_csv(
            manifest_path, dtype={"embryo": str, "frame": str}, keep_default_na=False
        )
    except FileNotFoundError as exc:
        raise DataError(f"{manifest_path}: manifest not found") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{manifest_path}: not a readable manifest CSV ({exc})") from exc
    check_manifest(manifest, manifest_path)
    if shards < 1:
        raise DataError(f"select.shards is {shards}; expected at least 1")
    selected = assign_shards(balance(manifest, seed), shards)
    counts = summary(selected, manifest)
    for split in ("train", "test"):
        if split not in counts:
            raise DataError(f"{manifest_path}: no {split} frames after selection")
    return selected, counts


def check_manifest(manifest: pd.DataFrame, path: str) -> None:
    """Check a manifest read from ``path`` has :data:`embryo_bench.data.sources.MANIFEST_COLUMNS`
    and an integer cell count on every row.

    Raises:
        DataError: a column is missing (naming it), or a row's ``cells`` is not an integer
            (naming the line of the file and the value).
    """
    missing = [c for c in MANIFEST_COLUMNS if c not in manifest.columns]
    if missing:
        raise DataError(
            f"{path}: manifest lacks column(s) {missing}; expected {MANIFEST_COLUMNS} "
            "(written by the index stage)"
        )
    cells = pd.to_numeric(manifest["cells"], errors="coerce")
    bad = cells.isna() | ~np.isfinite(cells) | (cells != cells.round())
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(
            f"{path}, line {row + 2}: cells '{manifest['cells'].iloc[row]}' is not a whole "
            f"number of cells ({int(bad.sum())} such rows)"
        )
    manifest["cells"] = cells.astype(int)


def balance(manifest: pd.DataFrame, seed: int, classes: tuple[int, ...] = CLASSES) -> pd.DataFrame:
    """Keep frames whose cell count is in ``classes`` and balance them to the rarest class.

    Args:
        manifest: frames with at least a ``cells`` column (see :mod:`embryo_bench.data.sources`).
        seed: seed of the numpy generator that draws frames from the larger classes.
        classes: cell counts to keep (paper: 1-4).

    Returns:
        the selected rows, sorted by (embryo, frame), index reset; every class has exactly
        ``min(count per class)`` rows, the rarest class all of its frames.

    Raises:
        DataError: a class has no frames (the message names it and the counts seen).
    """
    kept = manifest[manifest["cells"].isin(classes)]
    counts = kept["cells"].value_counts().reindex(classes, fill_value=0)
    empty = [c for c in classes if counts[c] == 0]
    if empty:
        raise DataError(
            f"no frames with {empty} cells after selection (frames per class: "
            f"{counts.to_dict()}); every class in {list(classes)} needs at least one frame"
        )
    n = int(counts.min())
    rng = np.random.default_rng(seed)
    parts = []
    for c in classes:
        rows = kept[kept["cells"] == c]
        if len(rows) > n:
            rows = rows.iloc[np.sort(rng.choice(len(rows), size=n, replace=False))]
        parts.append(rows)
    return pd.concat(parts).sort_values(["embryo", "frame"]).reset_index(drop=True)


def assign_shards(selected: pd.DataFrame, shards: int) -> pd.DataFrame:
    """Add a ``shard`` column (0..shards-1), round-robin over the rows, so per-shard stage
    jobs are the same size and run in parallel.

    Args:
        selected: the selected frames (any columns), in their final order.
        shards: number of shards (the ``select.shards`` setting).

    Returns:
        a copy of ``selected`` with an int ``shard`` column.

    Raises:
        DataError: fewer rows than shards (a shard would be empty).
    """
    if len(selected) < shards:
        raise DataError(f"{len(selected)} selected frames but shards={shards}; lower 'shards'")
    out = selected.copy()
    out["shard"] = np.arange(len(out)) % shards
    return out


def summary(selected: pd.DataFrame, manifest: pd.DataFrame | None = None) -> dict:
    """Counts of the selection, beside the paper's (section 3).

    Args:
        selected: the selected frames (``split`` and ``cells`` columns; ``embryo`` if known).
        manifest: every labelled frame of the source (``cells``), for the source counts.

    Returns:
        dict: total (selected frames), train and test ({cells: frames}), test_embryos;
        with ``manifest`` also source ({labelled_frames, per_class: {cells: frames}} over
        every cell count the labels give), balanced_per_class (frames of each class kept =
        the rarest 1-4 cell class's count), dropped_frames ({cells: frames} of the labelled
        frames whose cell count is outside 1-4, which the paper's classes leave out) and
        paper (the paper's labelled, rarest-class and balanced frame counts, for comparison).
    """
    table = selected.groupby(["split", "cells"]).size()
    out: dict = {"total": int(len(selected))}
    for (split, cells), n in table.items():
        out.setdefault(split, {})[int(cells)] = int(n)
    if "embryo" in selected and (selected["embryo"] != "").any():
        out["test_embryos"] = sorted(selected.loc[selected["split"] == "test", "embryo"].unique())
    if manifest is not None:
        per_class = manifest["cells"].value_counts().sort_index()
        out["source"] = {
            "labelled_frames": int(len(manifest)),
            "per_class": {int(c): int(n) for c, n in per_class.items()},
        }
        out["balanced_per_class"] = int(selected["cells"].value_counts().min())
        out["dropped_frames"] = {
            int(c): int(n) for c, n in per_class.items() if int(c) not in CLASSES
        }
        out["paper"] = {
            "labelled_frames": paper.LABELLED_FRAMES,
            "balanced_per_class": paper.RAREST_CLASS_FRAMES,
            "balanced_frames": paper.BALANCED_FRAMES,
        }
    return out


def counts_lines(counts: dict) -> list[str]:
    """The :func:`summary` counts beside the paper's, one line each, for the select log."""
    lines = []
    if "source" in counts:
        src, pap = counts["source"], counts["paper"]
        lines.append(
            f"labelled frames in the source: {src['labelled_frames']:,} "
            f"(paper: {pap['labelled_frames']:,}); per class {src['per_class']}"
        )
        lines.append(
            f"balanced: {counts['balanced_per_class']:,} per class, {counts['total']:,} frames "
            f"(paper: {pap['balanced_per_class']:,} per class, {pap['balanced_frames']:,})"
        )
    for split in ("train", "test"):
        per = counts.get(split, {})
        lines.append(f"{split}: {sum(per.values()):,} frames, per class {per}")
    return lines

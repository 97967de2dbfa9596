"""The Mouse Embryo Tracking Database's trajectory files (Cicconet et al. 2014), read into
frame labels: one ``E<NN>/_trajectories.txt`` per embryo, one line per frame from the first,
groups of three integers (row, column, radius) per cell slot (21 columns = 7 lineage slots in
the real files), radius 0 meaning "no cell in this slot" (:func:`read_trajectories`,
:func:`parse_trajectories`). A frame's label is its number of slots with radius > 0
(:func:`cell_counts`); the k-th line labels the k-th frame, and frames past the last line,
surplus last lines and frames after the 7-slot lineage stops counting every cell
(:func:`lineage_end`) follow :class:`TrajectoryRules` (:func:`label_frames`).
:mod:`embryo_bench.data.sources` indexes the database with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataError


@dataclass(frozen=True)
class TrajectoryRules:
    """How trajectory lines pair with frames (config ``dataset.trajectories``).

    The real database's folders hold more ``Frame<NNN>.png`` files than trajectory lines
    (frames run on "up to the 10th frame after the appearance of the 8th cell"; the lineage
    slots do not), and some readers of the real files drop a last line. These rules make that
    explicit instead of failing on the first embryo.

    Attributes:
        unlabelled_frames: "skip" (frames after the last line are unlabelled: counted and
            left out) or "error".
        extra_lines: trajectory lines beyond the last frame that are ignored (counted); more
            is an error.
        lineage_ended: "skip" or "keep" frames from the first line on which a grand-daughter
            slot (slots 4-7 of a 7-slot, 21-column file) that was tracked earlier is empty
            again. Such a cell has divided and its daughters have no slot, so the frame holds
            5 or more cells while only the remaining slots are non-zero (a 5-cell frame would
            read as 3). "keep" counts non-zero slots as third-party readers do.
    """

    unlabelled_frames: str = "skip"
    extra_lines: int = 1
    lineage_ended: str = "skip"

    def __post_init__(self):
        if self.unlabelled_frames not in ("skip", "error"):
            raise ConfigError(
                f"dataset.trajectories.unlabelled_frames: {self.unlabelled_frames!r}; "
                "expected skip or error"
            )
        if self.lineage_ended not in ("skip", "keep"):
            raise ConfigError(
                f"dataset.trajectories.lineage_ended: {self.lineage_ended!r}; expected skip or keep"
            )
        if self.extra_lines < 0:
            raise ConfigError(
                f"dataset.trajectories.extra_lines: {self.extra_lines}; expected an integer >= 0"
            )


STRICT = TrajectoryRules(unlabelled_frames="error", extra_lines=0, lineage_ended="keep")


def read_trajectories(path: str | Path) -> np.ndarray:
    """Read one ``_trajectories.txt`` file as the real database writes it.

    Lines are integers separated by tabs (or, on lines without a tab, by any whitespace);
    trailing separators and a trailing ``\\r`` are ignored, as are empty lines at the end of
    the file. Every line has the same number of fields, a multiple of three: (row, column,
    radius) per cell slot (the real files: 21 = 7 slots in lineage order: the zygote, its two
    daughters, the four grand-daughters; radius 0 = no cell in the slot).

    Args:
        path: the file.

    Returns:
        int64 array of shape (n_lines, n_slots, 3): (row, column, radius) per line and slot.

    Raises:
        DataError: missing file, not text, empty, an empty line or empty field inside the file,
            a field count that is not a non-empty multiple of 3 or differs from the first
            line's, a non-integer or negative value (the message names the file and line).
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
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise DataError(f"{path}: empty; expected one line per frame of (row, column, radius)")
    rows, width = [], None
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataError(f"{path}, line {i}: empty line; expected (row, column, radius) groups")
        fields = [f.strip() for f in line.split("\t")] if "\t" in line else line.split()
        if "" in fields:
            raise DataError(
                f"{path}, line {i}: empty field between two tabs; expected one integer per field"
            )
        if len(fields) % 3:
            raise DataError(
                f"{path}, line {i}: {len(fields)} fields; expected a non-empty multiple of 3 "
                "(row, column, radius per cell slot; the database has 21)"
            )
        if width is None:
            width = len(fields)
        elif len(fields) != width:
            raise DataError(
                f"{path}, line {i}: {len(fields)} fields; expected {width} like line 1 "
                "(every line has the same cell slots)"
            )
        try:
            values = [int(f) for f in fields]
        except ValueError as exc:
            raise DataError(f"{path}, line {i}: expected integers, got {line!r}") from exc
        if min(values) < 0:
            raise DataError(f"{path}, line {i}: negative value; expected integers >= 0")
        rows.append(values)
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), width // 3, 3)


def cell_counts(slots: np.ndarray) -> np.ndarray:
    """Number of cells per line: slots with radius > 0.

    Args:
        slots: int array (n_lines, n_slots, 3) from :func:`read_trajectories`.

    Returns:
        int64 array (n_lines,).
    """
    return (slots[:, :, 2] > 0).sum(axis=1).astype(np.int64)


LINEAGE_SLOTS = 7


GRAND_DAUGHTERS = slice(3, 7)


def lineage_end(slots: np.ndarray) -> int | None:
    """First line (0-based) from which the 7-slot lineage no longer counts every cell.

    In a 7-slot file (zygote, 2 daughters, 4 grand-daughters), a grand-daughter slot that was
    non-zero on an earlier line and is zero now has divided; its daughters have no slot, so
    from that line on the frame holds more cells than its non-zero slots. Files with another
    number of slots have no known lineage order: None.

    Args:
        slots: int array (n_lines, n_slots, 3) from :func:`read_trajectories`.

    Returns:
        the line index, or None when every line's count is complete.
    """
    if slots.shape[1] != LINEAGE_SLOTS:
        return None
    alive = slots[:, GRAND_DAUGHTERS, 2] > 0
    seen = np.logical_or.accumulate(alive, axis=0)
    ended = (seen[:-1] & ~alive[1:]).any(axis=1)
    hits = np.flatnonzero(ended)
    return int(hits[0]) + 1 if hits.size else None


def parse_trajectories(path: str | Path) -> np.ndarray:
    """Parse one ``_trajectories.txt`` file into the number of cells per line.

    Args:
        path: the file (format: :func:`read_trajectories`).

    Returns:
        int64 array of shape (n_lines,): the number of slots with radius > 0 on each line.

    Raises:
        DataError: as :func:`read_trajectories`.
    """
    return cell_counts(read_trajectories(path))


def label_frames(
    trajectories: Path, frames: list[Path], rules: TrajectoryRules
) -> tuple[list[tuple[Path, int]], dict]:
    """Pair an embryo's frames with its trajectory lines under ``rules``.

    Line k labels the k-th frame in frame-number order. Frames after the last line are
    unlabelled; lines after the last frame are ignored up to ``rules.extra_lines``; frames from
    :func:`lineage_end` on are left out when ``rules.lineage_ended`` is "skip".

    Args:
        trajectories: the embryo's ``_trajectories.txt``.
        frames: its frames, sorted by number, consecutive.
        rules: :class:`TrajectoryRules`.

    Returns:
        (pairs, counts): (frame, cells) for each labelled frame kept, and counts of
        ``lines``, ``frames_unlabelled``, ``lines_ignored`` and ``frames_lineage_ended``.

    Raises:
        DataError: as :func:`read_trajectories`; more frames than lines under
            ``unlabelled_frames: error``; more extra lines than ``extra_lines`` allows.
    """
    slots = read_trajectories(trajectories)
    n_lines, n_frames = len(slots), len(frames)
    span = f"{frames[0].name}..{frames[-1].name}"
    if n_frames > n_lines and rules.unlabelled_frames == "error":
        raise DataError(
            f"{trajectories}: {n_lines} lines for {n_frames} frames ({span}); expected one line "
            "per frame (dataset.trajectories.unlabelled_frames: error; 'skip' leaves the "
            f"{n_frames - n_lines} frames after the last line out)"
        )
    if n_lines - n_frames > rules.extra_lines:
        raise DataError(
            f"{trajectories}: {n_lines} lines for {n_frames} frames ({span}); expected at most "
            f"{rules.extra_lines} line(s) more than frames (dataset.trajectories.extra_lines)"
        )
    labelled = min(n_lines, n_frames)
    counts = cell_counts(slots[:labelled])
    end = lineage_end(slots[:labelled]) if rules.lineage_ended == "skip" else None
    kept = labelled if end is None else end
    pairs = list(zip(frames[:kept], (int(c) for c in counts[:kept]), strict=True))
    return pairs, {
        "lines": n_lines,
        "frames_unlabelled": n_frames - labelled,
        "lines_ignored": n_lines - labelled,
        "frames_lineage_ended": labelled - kept,
    }

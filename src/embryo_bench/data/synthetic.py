"""Synthetic frames in the Mouse Embryo Tracking Database layout.

Used by the tests and the offline demo; every output made from it is labelled "synthetic".
Each embryo ``E<NN>`` gets ``frames_per_embryo`` frames ``Frame<NNN>.png`` (``frame_size`` px
square, 8-bit gray) and a ``_trajectories.txt`` laid out as the real database's: 21 columns per
line, 7 (row, column, radius) slots in lineage order (zygote; its two daughters; the four
grand-daughters), radius 0 for an empty slot. Variants of the real files' format can be written
(space separators, trailing separators, frames after the last line, lines after the last frame).
A frame shows a centred embryo (zona pellucida ring) holding 1-4 cells, lit from the top so that
each cell has a bright upper rim and a dark shadow below, parts of neighbouring embryos cut by
the frame's edges, and Gaussian noise. The cell count rises 1 -> 2 -> 3 -> 4 over an embryo's
frames, with the 3-cell stage short, as in the real database where 3-cell frames are rarest.

By default every embryo has ``frames_per_embryo`` frames split by :data:`STAGE_FRACTIONS`.
``total_frames`` (labelled frames over all embryos, spread unevenly over them as in the real
database) and ``three_cell_frames`` (the rare class's count over all embryos) make exact
totals instead, e.g. the paper's (:mod:`embryo_bench.published.paper`, config/paper-synthetic.yaml;
:func:`allocate_frames`).

:func:`write_db` (the ``synthesize`` command) checks the settings and the free space first
(:func:`check_free_space`: :data:`PNG_BYTES_PER_PX` per pixel at least), writes into a
staging folder and turns a full disk into one error that keeps nothing.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from ..errors import ConfigError, StorageError
from ..io import staged_folder
from ..vocabulary.units import px, size_text

# Fraction of an embryo's frames spent with 1, 2, 3 and 4 cells.
STAGE_FRACTIONS = (0.30, 0.35, 0.10, 0.25)
SLOTS = 7
# Lineage slots (0-based) holding the cells of each stage: the zygote; its two daughters; the
# second daughter and the first daughter's two daughters; the four grand-daughters.
LINEAGE = {1: (0,), 2: (1, 2), 3: (2, 3, 4), 4: (3, 4, 5, 6)}
SEPARATORS = {"tab": "\t", "spaces": "  "}
#: With ``total_frames``, embryo n's share of the frames is proportional to a weight drawn
#: uniformly from 1 +- FRAMES_SPREAD (per mille, from its own random stream): frame counts
#: differ between embryos as in the real database (whose per-embryo counts were not available
#: here: the spread is an assumption, not a measurement).
FRAMES_SPREAD = 0.25
#: Random stream (SeedSequence spawn key) of the per-embryo frame counts, apart from the
#: embryos' own streams ``default_rng([seed, n])``.
ALLOCATION_STREAM = 1
#: Fewest frames an embryo gets with ``total_frames`` or ``three_cell_frames``: one each of 1,
#: 2 and 4 cells, and one more (a 3-cell frame where its share allows).
MIN_FRAMES = 4
#: How far from its radius a ring is drawn, in ring widths (its Gaussian profile is below
#: exp(-64) of its peak beyond: nothing a float32 frame can hold).
RING_REACH = 8
#: OpenCV's PNG options for frames: zlib's Huffman-only strategy (:func:`encode_png`).
PNG_PARAMS = [cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY]

#: Bytes a synthetic frame's PNG takes per pixel, at least: measured 0.654-0.671 bytes per
#: px at 240-960 px (more below: 0.70 at 96 px, 0.77 at 48 px; the Gaussian noise does not
#: compress), OpenCV's Huffman-only PNGs, 2026-11-25.
PNG_BYTES_PER_PX = 0.64
#: Bytes the generator holds per pixel while it draws one frame, at least: measured peak
#: 14.1-14.4 bytes per px at 240-960 px, more below (26.7 at 96 px, 30.8 at 48 px)
#: (tracemalloc, 2026-11-25: the float32 frame, its float64 noise, the uint8 result; each
#: shape's distances only over its own box). One frame at a time per process.
DRAW_BYTES_PER_PX = 14


def _cell_layout(cells: int, rng: np.random.Generator) -> np.ndarray:
    """Cell centres (unit-less offsets from the embryo centre, in embryo radii) and radii."""
    angle0 = rng.uniform(0, 2 * np.pi)
    if cells == 1:
        return np.array([[0.0, 0.0, 0.62]])
    dist = {2: 0.36, 3: 0.42, 4: 0.44}[cells]
    radius = {2: 0.38, 3: 0.33, 4: 0.30}[cells]
    out = []
    for k in range(cells):
        a = angle0 + 2 * np.pi * k / cells
        out.append([dist * np.sin(a), dist * np.cos(a), radius * rng.uniform(0.9, 1.1)])
    return np.array(out)


def render_frame(
    size: int, cells: int, rng: np.random.Generator, layout: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Render one synthetic frame.

    Args:
        size: frame width and height in px.
        cells: number of cells, 1-4.
        rng: random generator (jitter, neighbours, noise).
        layout: optional (cells, 3) array of (dy, dx, r) in embryo radii from
            :func:`_cell_layout`; drawn fresh when None.

    Returns:
        (image, slots): uint8 array (size, size) and int64 array (7, 3) of
        (row, column, radius) in px per lineage slot (:data:`LINEAGE`), zeros for empty slots.
    """
    # Each shape is drawn only over the pixels it can change (its bounding box; a ring's
    # Gaussian profile up to RING_REACH widths from its radius): beyond that a ring adds less
    # than 1e-26 grey levels, which the float32 frame cannot hold, so the frame is the one the
    # whole-frame sums give, bit for bit (tests/test_synthetic.py compares them), 2-3x sooner.
    ys = np.arange(size, dtype=np.float32)[:, None]
    xs = np.arange(size, dtype=np.float32)[None, :]
    img = np.repeat(110.0 + 25.0 * (1.0 - ys / size), size, axis=1)  # light from the top
    cy, cx = size / 2 + rng.normal(0, size * 0.01, 2)
    big_r = size * 0.30

    def box(y0, x0, reach):
        """The frame's rows and columns within ``reach`` px of (y0, x0), as slices."""
        rows = slice(max(0, math.floor(y0 - reach)), max(0, min(size, math.ceil(y0 + reach) + 1)))
        cols = slice(max(0, math.floor(x0 - reach)), max(0, min(size, math.ceil(x0 + reach) + 1)))
        return rows, cols

    def add_ring(y0, x0, r, width, value, above=None):
        """A ring of radius r (px) and Gaussian profile; only the rows above row ``above``
        when given."""
        rows, cols = box(y0, x0, r + RING_REACH * width)
        yy, xx = ys[rows], xs[:, cols]
        ring = value * np.exp(-(((np.hypot(yy - y0, xx - x0) - r) / width) ** 2))
        img[rows, cols] += ring if above is None else ring * (yy < above)

    def add_disc(y0, x0, r, value):
        rows, cols = box(y0, x0, r + 1)
        img[rows, cols] += value * (np.hypot(ys[rows] - y0, xs[:, cols] - x0) < r)

    # Neighbouring embryos, cut by the frame edges.
    for _ in range(rng.integers(1, 4)):
        side = rng.integers(0, 4)
        along = rng.uniform(0.1, 0.9) * size
        off = -big_r * rng.uniform(0.2, 0.7)
        ny, nx = [(off, along), (size - off, along), (along, off), (along, size - off)][side]
        add_ring(ny, nx, big_r, size * 0.015, 35.0)
    # Zona pellucida of the centred embryo.
    add_ring(cy, cx, big_r, size * 0.012, 40.0)
    if layout is None:
        layout = _cell_layout(cells, rng)
    slots = np.zeros((SLOTS, 3), dtype=np.int64)
    for k, (dy, dx, r) in enumerate(layout):
        y0, x0, rr = cy + dy * big_r, cx + dx * big_r, r * big_r
        # Shadow below the cell, bright rim above: directional light from the top.
        add_disc(y0 + 0.12 * rr, x0, rr, -30.0)
        add_disc(y0 - 0.06 * rr, x0, rr * 0.97, 18.0)
        add_ring(y0 - 0.05 * rr, x0, rr, size * 0.01, 25.0, above=y0)
        slots[LINEAGE[len(layout)][k]] = (round(y0), round(x0), max(1, round(rr)))
    img += rng.normal(0.0, 6.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8), slots


def stage_counts(frames: int) -> list[int]:
    """Cell count of each of an embryo's ``frames`` frames (1 -> 4, 3-cell stage short)."""
    bounds = np.cumsum(STAGE_FRACTIONS) * frames
    return [int(np.searchsorted(bounds, i, side="right")) + 1 for i in range(frames)]


def apportion(total: int, weights) -> np.ndarray:
    """Split ``total`` into integer parts proportional to integer ``weights`` (largest
    remainder; exact integer arithmetic, ties to the earlier part).

    Args:
        total: the count to split, >= 0.
        weights: sequence of non-negative ints, not all zero.

    Returns:
        int64 array of len(weights) parts summing to ``total``; a part never exceeds the ceiling
        of its exact quota.

    Raises:
        ValueError: a negative total or weight, or every weight zero.
    """
    w = np.asarray(weights, dtype=np.int64)
    if total < 0 or (w < 0).any() or w.sum() == 0:
        raise ValueError(f"apportion: total {total}, weights {w.tolist()}")
    base, rest = np.divmod(total * w, w.sum())
    base[np.argsort(-rest, kind="stable")[: total - int(base.sum())]] += 1
    return base


def allocate_frames(
    embryos: int,
    frames_per_embryo: int = 40,
    seed: int = 0,
    *,
    total_frames: int | None = None,
    three_cell_frames: int | None = None,
) -> np.ndarray:
    """Labelled frames per embryo and cell count.

    Without ``total_frames`` and ``three_cell_frames``, every embryo's frames are split by
    :data:`STAGE_FRACTIONS` (:func:`stage_counts`). Otherwise the totals are exact:

    * frames per embryo: ``frames_per_embryo`` each, or with ``total_frames``, MIN_FRAMES each
      plus the rest of ``total_frames`` spread in proportion to per-embryo weights drawn from
      1 +- :data:`FRAMES_SPREAD` (seeded: ``seed``, stream :data:`ALLOCATION_STREAM`);
    * 3-cell frames (``three_cell_frames``, default round(STAGE_FRACTIONS[2] x total)) spread
      in proportion to each embryo's frames less 3;
    * each embryo's other frames: one of 1, 2 and 4 cells each, the rest split 30 : 35 : 25
      (:data:`STAGE_FRACTIONS`).

    Args:
        embryos: embryo count, >= 1.
        frames_per_embryo: frames of each embryo when ``total_frames`` is None.
        seed: the generator's seed.
        total_frames: labelled frames over all embryos, or None.
        three_cell_frames: 3-cell frames over all embryos, or None.

    Returns:
        int64 array (embryos, 4): frames of 1, 2, 3 and 4 cells per embryo; with either count
        set its column 2 sums to the 3-cell count and the whole to the total.

    Raises:
        ConfigError: embryos < 1; without the counts, frames_per_embryo < 9 (a cell count would
            not appear); with them, fewer than MIN_FRAMES frames per embryo, or a 3-cell count
            < 1 or above the frames left after one each of 1, 2 and 4 cells per embryo.
    """
    if embryos < 1:
        raise ConfigError(f"synthetic: embryos {embryos}; need >= 1 embryo")
    if total_frames is None and three_cell_frames is None:
        counts = stage_counts(frames_per_embryo)
        if set(counts) != {1, 2, 3, 4}:
            raise ConfigError(
                f"synthetic: {embryos} embryos x {frames_per_embryo} frames; need "
                "frames_per_embryo >= 9 so that every cell count 1-4 appears"
            )
        return np.tile(np.bincount(counts, minlength=5)[1:], (embryos, 1))
    total = embryos * frames_per_embryo if total_frames is None else total_frames
    if total < MIN_FRAMES * embryos:
        raise ConfigError(
            f"synthetic: {total} labelled frames over {embryos} embryos; need >= {MIN_FRAMES} "
            "per embryo (one each of 1, 2 and 4 cells, and a 3-cell one): raise total_frames "
            "or frames_per_embryo, or lower embryos"
        )
    if total_frames is None:
        frames = np.full(embryos, frames_per_embryo, dtype=np.int64)
    else:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(ALLOCATION_STREAM,)))
        spread = round(1000 * FRAMES_SPREAD)
        weights = rng.integers(1000 - spread, 1000 + spread + 1, embryos)
        frames = MIN_FRAMES + apportion(total - MIN_FRAMES * embryos, weights)
    rare = round(STAGE_FRACTIONS[2] * total) if three_cell_frames is None else three_cell_frames
    if not 1 <= rare <= total - 3 * embryos:
        raise ConfigError(
            f"synthetic: three_cell_frames {rare} of {total} labelled frames over {embryos} "
            f"embryos; need 1 to {total - 3 * embryos} (each embryo keeps one frame each of "
            "1, 2 and 4 cells)"
        )
    three = apportion(rare, frames - 3)
    others = [int(round(100 * STAGE_FRACTIONS[c])) for c in (0, 1, 3)]
    out = np.zeros((embryos, 4), dtype=np.int64)
    for n in range(embryos):
        out[n, [0, 1, 3]] = 1 + apportion(int(frames[n] - three[n] - 3), others)
        out[n, 2] = three[n]
    return out


def embryo_folder(n: int) -> str:
    """The folder name of embryo ``n`` (0-based), as in the database: ``E00``, ``E01``, ..."""
    return f"E{n:02d}"


def encode_png(image: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG file of ``image`` (uint8, (h, w)): OpenCV's encoder with zlib's
    Huffman-only strategy, 6x sooner than Pillow's default and as small on noisy frames
    (a 480 px frame: 1.6 against 10.3 ms of CPU, 152 against 151 KB, on our 2-core VM, an
    Intel Xeon on 2026-11-25); the pixels
    read back are the same.

    Raises:
        ValueError: ``image`` is not a 2-D uint8 array.
    """
    if image.dtype != np.uint8 or image.ndim != 2:
        raise ValueError(f"encode_png: need a 2-D uint8 array, got {image.dtype} {image.shape}")
    ok, buf = cv2.imencode(".png", image, PNG_PARAMS)
    if not ok:  # OpenCV returns False rather than raising
        raise ValueError(f"encode_png: OpenCV could not encode a {image.shape} image")
    return buf.tobytes()


def check_settings(
    embryos: int,
    frames_per_embryo: int = 40,
    seed: int = 0,
    *,
    separator: str = "tab",
    unlabelled_frames: int = 0,
    extra_lines: int = 0,
    total_frames: int | None = None,
    three_cell_frames: int | None = None,
    jobs: int = 1,
) -> np.ndarray:
    """Check the generator's settings (:func:`generate_db`'s arguments) without writing
    anything: the plan makes the same check before any job.

    Returns:
        the allocation, :func:`allocate_frames`: int64 (embryos, 4) labelled frames of 1, 2,
        3 and 4 cells per embryo.

    Raises:
        ConfigError: counts :func:`allocate_frames` refuses, an unknown separator, a negative
            count, both unlabelled_frames and extra_lines set, or jobs < 1.
    """
    alloc = allocate_frames(
        embryos,
        frames_per_embryo,
        seed,
        total_frames=total_frames,
        three_cell_frames=three_cell_frames,
    )
    if separator not in SEPARATORS or min(unlabelled_frames, extra_lines) < 0 or jobs < 1:
        raise ConfigError(
            f"synthetic: separator {separator!r}, unlabelled_frames {unlabelled_frames}, "
            f"extra_lines {extra_lines}, jobs {jobs}; expected one of {sorted(SEPARATORS)}, "
            "counts >= 0 and jobs >= 1"
        )
    if unlabelled_frames and extra_lines:
        raise ConfigError(
            "synthetic: unlabelled_frames and extra_lines both set; a line after the last "
            "labelled frame would label the next frame (set one of them)"
        )
    return alloc


def _write_embryo(
    emb: Path,
    rng_key: list[int],
    counts: list[int],
    frame_size: int,
    sep: str,
    end: str,
    unlabelled_frames: int,
    extra_lines: int,
) -> None:
    """Write one embryo folder: a frame per entry of ``counts`` (cell counts, in order) and
    ``unlabelled_frames`` more of 4 cells, and its trajectory file (one line per labelled
    frame, then ``extra_lines`` copies of the last)."""
    rng = np.random.default_rng(rng_key)
    emb.mkdir(parents=True, exist_ok=True)
    lines = []
    layout_cells, layout = 0, None
    for i, cells in enumerate(counts + [4] * unlabelled_frames):
        if cells != layout_cells:
            layout_cells, layout = cells, _cell_layout(cells, rng)
        jitter = layout.copy()
        jitter[:, :2] += rng.normal(0, 0.02, (cells, 2))
        img, slots = render_frame(frame_size, cells, rng, jitter)
        (emb / f"Frame{i:03d}.png").write_bytes(encode_png(img))
        if i < len(counts):
            lines.append(sep.join(str(v) for v in slots.ravel()) + end)
    lines += lines[-1:] * extra_lines
    (emb / "_trajectories.txt").write_text("\n".join(lines) + "\n")


def generate_db(
    out_dir: str | Path,
    embryos: int = 10,
    frames_per_embryo: int = 40,
    frame_size: int = 480,
    seed: int = 0,
    *,
    separator: str = "tab",
    trailing_separator: bool = False,
    unlabelled_frames: int = 0,
    extra_lines: int = 0,
    total_frames: int | None = None,
    three_cell_frames: int | None = None,
    jobs: int = 1,
) -> dict:
    """Write a synthetic database tree ``out_dir/E<NN>/{Frame<NNN>.png,_trajectories.txt}``.

    Args:
        out_dir: destination folder (created).
        embryos: number of embryos E00, E01, ...
        frames_per_embryo: frames per embryo, >= 9 so that every cell count (1-4) appears
            (>= MIN_FRAMES with three_cell_frames; unused with total_frames).
        frame_size: frame width and height in px (480 in the real database).
        seed: base seed; embryo n uses ``default_rng([seed, n])``.
        separator: "tab" or "spaces" between a line's fields.
        trailing_separator: end every line with a separator.
        unlabelled_frames: frames (4 cells) written after each embryo's last line.
        extra_lines: lines (copies of the last) written after each embryo's last frame.
        total_frames: labelled frames over all embryos, spread unevenly over them; None:
            ``frames_per_embryo`` each (:func:`allocate_frames`).
        three_cell_frames: 3-cell frames over all embryos; None: STAGE_FRACTIONS' share.
        jobs: processes writing embryos at once (the tree is the same for any value).

    Returns:
        dict with the settings and the number of labelled frames per cell count
        (``frames_per_class``, {1: int, ..., 4: int}); with total_frames or three_cell_frames
        also those and ``frames_by_embryo`` (labelled frames of E00, E01, ...).

    Raises:
        ConfigError: as :func:`check_settings`.
    """
    alloc = check_settings(
        embryos,
        frames_per_embryo,
        seed,
        separator=separator,
        unlabelled_frames=unlabelled_frames,
        extra_lines=extra_lines,
        total_frames=total_frames,
        three_cell_frames=three_cell_frames,
        jobs=jobs,
    )
    sep = SEPARATORS[separator]
    end = sep if trailing_separator else ""
    out = Path(out_dir)
    tasks = [
        (
            out / embryo_folder(n),
            [seed, n],
            [c for c in range(1, 5) for _ in range(alloc[n, c - 1])],
            frame_size,
            sep,
            end,
            unlabelled_frames,
            extra_lines,
        )
        for n in range(embryos)
    ]
    if jobs == 1:
        for task in tasks:
            _write_embryo(*task)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, embryos)) as pool:
            list(pool.map(_write_embryo, *zip(*tasks, strict=True)))
    info = {
        "synthetic": True,
        "embryos": embryos,
        "frames_per_embryo": frames_per_embryo,
        "frame_size": frame_size,
        "seed": seed,
        "separator": separator,
        "trailing_separator": trailing_separator,
        "unlabelled_frames": unlabelled_frames,
        "extra_lines": extra_lines,
        "frames_per_class": {c: int(alloc[:, c - 1].sum()) for c in range(1, 5)},
    }
    if total_frames is not None or three_cell_frames is not None:
        info.update(
            total_frames=total_frames,
            three_cell_frames=three_cell_frames,
            frames_by_embryo=alloc.sum(axis=1).tolist(),
        )
    return info


def zip_tree(src_dir: str | Path, archive: str | Path, prefix: str = "") -> Path:
    """Pack every file under ``src_dir`` into a stored (uncompressed) zip at ``archive``,
    entries relative to ``src_dir`` and under ``prefix/`` if given. Returns ``archive``.

    Raises:
        OSError: unreadable source or unwritable archive.
    """
    src = Path(src_dir)
    archive = Path(archive)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                zf.write(
                    p, str(Path(prefix) / p.relative_to(src)) if prefix else str(p.relative_to(src))
                )
    return archive


# --- disk: checked before writing, a full disk one error ----------------------------------


def frames_written(allocation: np.ndarray, unlabelled_frames: int) -> int:
    """PNG frames the generator writes: the labelled ones of ``allocation`` (int (embryos,
    4), :func:`allocate_frames`) and ``unlabelled_frames`` more per embryo."""
    return int(allocation.sum()) + len(allocation) * unlabelled_frames


def db_bytes(frames: int, frame_size: int) -> int:
    """The least bytes ``frames`` synthetic PNG frames of ``frame_size`` px take
    (:data:`PNG_BYTES_PER_PX`); an estimate, a lower bound."""
    return int(frames * PNG_BYTES_PER_PX * frame_size * frame_size)


def existing_folder(path: str | os.PathLike) -> Path:
    """``path`` or its nearest existing parent (the folder whose file system it will be
    on)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_free_space(
    out: str | os.PathLike, frames: int, frame_size: int, fix: str, freed: int = 0
) -> None:
    """Refuse to write a synthetic database that cannot fit where it goes.

    Args:
        out: the database's folder (need not exist yet).
        frames: PNG frames it will hold; frame_size: their side (px).
        fix: what to change, ending the message (settings or options).
        freed: bytes that will be freed first (an old copy the workflow removes).

    Raises:
        StorageError: the estimate (:func:`db_bytes`) exceeds the free space of
            ``out``'s file system, naming both.
    """
    where = existing_folder(out)
    free = shutil.disk_usage(where).free + freed
    need = db_bytes(frames, frame_size)
    if need > free:
        raise StorageError(
            f"{out}: the synthetic database would take at least {size_text(need)} ({frames:,} "
            f"frames of {px(frame_size)} at {PNG_BYTES_PER_PX} bytes per px or more as PNG: an "
            f"estimate, a lower bound), and {size_text(free)} is free on the device of "
            f"{where}: {fix}"
        )


#: What to change when a synthetic database does not fit, in ``embryo-bench synthesize``'s
#: options and the configuration's settings.
SYNTHESIZE_FIX = (
    "free space, lower --total-frames / --frame-size (dataset.synthetic.total_frames, "
    "dataset.frame_size), or write --out elsewhere (outdir)"
)


def write_db(
    out: str | os.PathLike,
    embryos: int,
    frames_per_embryo: int,
    frame_size: int,
    seed: int,
    **options,
) -> dict:
    """:func:`generate_db` (the same arguments; ``options`` are its keyword-only ones) that
    checks the settings and the free space first (:func:`check_free_space`) and writes into a
    staging folder beside ``out``, moved into place only when every embryo is written: a full
    disk while writing is one error, and leaves no database that looks complete (the
    ``synthesize`` command).

    Returns:
        generate_db's info dict.

    Raises:
        ConfigError: settings :func:`check_settings` refuses.
        StorageError: too little free space for the estimate, or the device filled up
            (ENOSPC, EDQUOT) while writing; nothing of the database is kept.
    """
    checked = {k: v for k, v in options.items() if k != "trailing_separator"}
    alloc = check_settings(embryos, frames_per_embryo, seed, **checked)
    frames = frames_written(alloc, options.get("unlabelled_frames", 0))
    check_free_space(out, frames, frame_size, SYNTHESIZE_FIX)
    try:
        with staged_folder(out) as staging:
            return generate_db(staging, embryos, frames_per_embryo, frame_size, seed, **options)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = existing_folder(out)
        raise StorageError(
            f"{out}: the device filled up while writing {frames:,} synthetic frames of "
            f"{px(frame_size)} ({exc.strerror}; at least {size_text(db_bytes(frames, frame_size))} "
            f"needed, an estimate; {size_text(shutil.disk_usage(where).free)} free on the "
            f"device of {where} with nothing of it kept): {SYNTHESIZE_FIX}"
        ) from None

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
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from .errors import ConfigError

# Fraction of an embryo's frames spent with 1, 2, 3 and 4 cells.
STAGE_FRACTIONS = (0.30, 0.35, 0.10, 0.25)
SLOTS = 7
# Lineage slots (0-based) holding the cells of each stage: the zygote; its two daughters; the
# second daughter and the first daughter's two daughters; the four grand-daughters.
LINEAGE = {1: (0,), 2: (1, 2), 3: (2, 3, 4), 4: (3, 4, 5, 6)}
SEPARATORS = {"tab": "\t", "spaces": "  "}


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
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    img = 110.0 + 25.0 * (1.0 - yy / size)  # light from the top
    cy, cx = size / 2 + rng.normal(0, size * 0.01, 2)
    big_r = size * 0.30

    def ring(y0, x0, r, width, value):
        d = np.hypot(yy - y0, xx - x0)
        return value * np.exp(-(((d - r) / width) ** 2))

    # Neighbouring embryos, cut by the frame edges.
    for _ in range(rng.integers(1, 4)):
        side = rng.integers(0, 4)
        along = rng.uniform(0.1, 0.9) * size
        off = -big_r * rng.uniform(0.2, 0.7)
        ny, nx = [(off, along), (size - off, along), (along, off), (along, size - off)][side]
        img += ring(ny, nx, big_r, size * 0.015, 35.0)
    # Zona pellucida of the centred embryo.
    img += ring(cy, cx, big_r, size * 0.012, 40.0)
    if layout is None:
        layout = _cell_layout(cells, rng)
    slots = np.zeros((SLOTS, 3), dtype=np.int64)
    for k, (dy, dx, r) in enumerate(layout):
        y0, x0, rr = cy + dy * big_r, cx + dx * big_r, r * big_r
        # Shadow below the cell, bright rim above: directional light from the top.
        img -= 30.0 * (np.hypot(yy - (y0 + 0.12 * rr), xx - x0) < rr)
        img += 18.0 * (np.hypot(yy - (y0 - 0.06 * rr), xx - x0) < rr * 0.97)
        img += ring(y0 - 0.05 * rr, x0, rr, size * 0.01, 25.0) * (yy < y0)
        slots[LINEAGE[len(layout)][k]] = (round(y0), round(x0), max(1, round(rr)))
    img += rng.normal(0.0, 6.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8), slots


def stage_counts(frames: int) -> list[int]:
    """Cell count of each of an embryo's ``frames`` frames (1 -> 4, 3-cell stage short)."""
    bounds = np.cumsum(STAGE_FRACTIONS) * frames
    return [int(np.searchsorted(bounds, i, side="right")) + 1 for i in range(frames)]


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
) -> dict:
    """Write a synthetic database tree ``out_dir/E<NN>/{Frame<NNN>.png,_trajectories.txt}``.

    Args:
        out_dir: destination folder (created).
        embryos: number of embryos E00, E01, ...
        frames_per_embryo: frames per embryo, >= 9 so that every cell count (1-4) appears.
        frame_size: frame width and height in px (480 in the real database).
        seed: base seed; embryo n uses ``default_rng([seed, n])``.
        separator: "tab" or "spaces" between a line's fields.
        trailing_separator: end every line with a separator.
        unlabelled_frames: frames (4 cells) written after each embryo's last line.
        extra_lines: lines (copies of the last) written after each embryo's last frame.

    Returns:
        dict with the settings and the number of labelled frames per cell count.

    Raises:
        ConfigError: frames_per_embryo too small for every cell count to appear, embryos < 1,
            an unknown separator, a negative count, or both unlabelled_frames and
            extra_lines set.
    """
    counts = stage_counts(frames_per_embryo)
    if embryos < 1 or set(counts) != {1, 2, 3, 4}:
        raise ConfigError(
            f"synthetic: {embryos} embryos x {frames_per_embryo} frames; need >= 1 embryo and "
            "frames_per_embryo >= 9 so that every cell count 1-4 appears"
        )
    if separator not in SEPARATORS or min(unlabelled_frames, extra_lines) < 0:
        raise ConfigError(
            f"synthetic: separator {separator!r}, unlabelled_frames {unlabelled_frames}, "
            f"extra_lines {extra_lines}; expected one of {sorted(SEPARATORS)} and counts >= 0"
        )
    if unlabelled_frames and extra_lines:
        raise ConfigError(
            "synthetic: unlabelled_frames and extra_lines both set; a line after the last "
            "labelled frame would label the next frame (set one of them)"
        )
    sep = SEPARATORS[separator]
    end = sep if trailing_separator else ""
    out = Path(out_dir)
    per_class = {c: 0 for c in range(1, 5)}
    for n in range(embryos):
        rng = np.random.default_rng([seed, n])
        emb = out / f"E{n:02d}"
        emb.mkdir(parents=True, exist_ok=True)
        lines = []
        layout_cells, layout = 0, None
        for i, cells in enumerate(counts + [4] * unlabelled_frames):
            if cells != layout_cells:
                layout_cells, layout = cells, _cell_layout(cells, rng)
            jitter = layout.copy()
            jitter[:, :2] += rng.normal(0, 0.02, (cells, 2))
            img, slots = render_frame(frame_size, cells, rng, jitter)
            Image.fromarray(img, mode="L").save(emb / f"Frame{i:03d}.png")
            if i < len(counts):
                lines.append(sep.join(str(v) for v in slots.ravel()) + end)
                per_class[cells] += 1
        lines += lines[-1:] * extra_lines
        (emb / "_trajectories.txt").write_text("\n".join(lines) + "\n")
    return {
        "synthetic": True,
        "embryos": embryos,
        "frames_per_embryo": frames_per_embryo,
        "frame_size": frame_size,
        "seed": seed,
        "separator": separator,
        "trailing_separator": trailing_separator,
        "unlabelled_frames": unlabelled_frames,
        "extra_lines": extra_lines,
        "frames_per_class": per_class,
    }


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

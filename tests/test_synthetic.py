"""The synthetic database at exact counts: the paper's 34,133 labelled frames with
766 of 3 cells over 100 embryos, in developmental order, indexed back to the same counts;
the old per-embryo behaviour and the synthesize rule's flags unchanged without the new keys;
config/paper-synthetic.yaml is the paper configuration at the paper's size."""

from __future__ import annotations

import filecmp
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from embryo_bench.data.frames import check_image
from embryo_bench.data.sources import index_db
from embryo_bench.data.synthetic import (
    _cell_layout,
    allocate_frames,
    apportion,
    encode_png,
    generate_db,
    render_frame,
    stage_counts,
)
from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan
from embryo_bench.published import paper
from embryo_bench.vocabulary.config import read_config_file

REPO = Path(__file__).resolve().parents[1]
PAPER_SYNTHETIC = REPO / "config" / "paper-synthetic.yaml"
EMBRYOS = 100  # E00-E99, the database's embryos


def _in_order(cells) -> bool:
    """1 -> 2 -> (3) -> 4 cells: never fewer than before, from 1 to 4."""
    cells = list(cells)
    return cells[0] == 1 and cells[-1] == 4 and bool((np.diff(cells) >= 0).all())


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_papers_counts_are_allocated_exactly(seed):
    alloc = allocate_frames(
        EMBRYOS,
        seed=seed,
        total_frames=paper.LABELLED_FRAMES,
        three_cell_frames=paper.RAREST_CLASS_FRAMES,
    )
    assert alloc.shape == (EMBRYOS, 4)
    assert alloc.sum() == paper.LABELLED_FRAMES
    assert alloc[:, 2].sum() == paper.RAREST_CLASS_FRAMES
    # Every embryo goes through 1, 2 and 4 cells (766 3-cell frames over 100 embryos: 3 too).
    assert (alloc >= 1).all()
    # Frames per embryo differ between embryos, within the spread, and the rare class is rare
    # in every one of them.
    per_embryo = alloc.sum(axis=1)
    assert len(set(per_embryo.tolist())) > 10
    mean = paper.LABELLED_FRAMES / EMBRYOS
    assert 0.7 * mean < per_embryo.min() and per_embryo.max() < 1.3 * mean
    assert (alloc[:, 2] < alloc[:, [0, 1, 3]].min(axis=1)).all()
    # The balanced selection the paper describes is possible: the rarest class is 3 cells.
    assert alloc.sum(axis=0).argmin() == 2


def test_the_allocation_is_seeded():
    kw = {"total_frames": 5000, "three_cell_frames": 120}
    a, b = allocate_frames(20, seed=3, **kw), allocate_frames(20, seed=3, **kw)
    assert (a == b).all()
    assert (a.sum(axis=1) != allocate_frames(20, seed=4, **kw).sum(axis=1)).any()


@pytest.fixture(scope="module")
def paper_tree(tmp_path_factory):
    """The paper's counts written as 16 px frames (about 10 s), with their generation info."""
    root = tmp_path_factory.mktemp("paper-synthetic")
    info = generate_db(
        root,
        embryos=EMBRYOS,
        frame_size=16,
        total_frames=paper.LABELLED_FRAMES,
        three_cell_frames=paper.RAREST_CLASS_FRAMES,
    )
    return root, info


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
def test_the_paper_sized_tree_indexes_to_the_papers_counts(paper_tree):
    root, info = paper_tree
    assert sorted(p.name for p in root.iterdir()) == [f"E{n:02d}" for n in range(EMBRYOS)]
    manifest, stats = index_db(root, 16)
    assert stats["frames"] == stats["frames_labelled"] == len(manifest) == paper.LABELLED_FRAMES
    assert stats["frames_unlabelled"] == stats["lines_ignored"] == 0
    assert stats["frames_lineage_ended"] == 0
    per_class = manifest["cells"].value_counts().sort_index()
    assert per_class.to_dict() == info["frames_per_class"]
    assert per_class[3] == paper.RAREST_CLASS_FRAMES == per_class.min()
    assert sum(info["frames_per_class"].values()) == paper.LABELLED_FRAMES
    per_embryo = manifest.groupby("embryo").size()
    assert per_embryo.tolist() == info["frames_by_embryo"]
    for embryo, rows in manifest.groupby("embryo"):
        frames = rows["frame"].str.extract(r"(\d+)")[0].astype(int)
        assert _in_order(rows["cells"].to_numpy()[np.argsort(frames.to_numpy())]), embryo
    # The paper's split: embryos whose number mod 5 == 0 are the test set (E00, E05, ...).
    test = manifest[manifest["split"] == "test"]
    assert sorted(test["embryo"].unique()) == [f"E{n:02d}" for n in range(0, EMBRYOS, 5)]
    assert 0 < (test["cells"] == 3).sum() < paper.RAREST_CLASS_FRAMES


def test_processes_write_the_same_tree(tmp_path):
    kw = {"embryos": 6, "frame_size": 16, "seed": 5, "total_frames": 90, "three_cell_frames": 7}
    one = generate_db(tmp_path / "one", **kw)
    two = generate_db(tmp_path / "two", jobs=2, **kw)
    assert one == two
    cmp = filecmp.dircmp(tmp_path / "one", tmp_path / "two")
    assert sorted(cmp.common_dirs) == [f"E{n:02d}" for n in range(6)]
    for sub in cmp.subdirs.values():
        assert not sub.left_only and not sub.right_only
        assert filecmp.cmpfiles(sub.left, sub.right, sub.common_files, shallow=False)[0] == sorted(
            sub.common_files
        )


def test_one_count_alone():
    # total_frames alone: 10 % of the frames have 3 cells (STAGE_FRACTIONS).
    alloc = allocate_frames(10, total_frames=1000)
    assert alloc.sum() == 1000 and alloc[:, 2].sum() == 100
    # three_cell_frames alone: every embryo keeps frames_per_embryo frames.
    alloc = allocate_frames(10, frames_per_embryo=30, three_cell_frames=13)
    assert alloc.sum(axis=1).tolist() == [30] * 10 and alloc[:, 2].sum() == 13
    # Fewer 3-cell frames than embryos: some embryos go 2 -> 4 cells, still in order.
    alloc = allocate_frames(10, total_frames=200, three_cell_frames=4)
    assert alloc[:, 2].sum() == 4 and (alloc[:, 2] == 0).sum() == 6


def test_without_the_new_keys_every_embryo_is_as_before():
    alloc = allocate_frames(5, frames_per_embryo=12)
    expected = np.bincount(stage_counts(12), minlength=5)[1:]
    assert (alloc == expected).all() and expected.tolist() == [4, 4, 1, 3]


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"embryos": 10, "total_frames": 39}, "need >= 4 per embryo"),
        ({"embryos": 10, "total_frames": 100, "three_cell_frames": 71}, "need 1 to 70"),
        ({"embryos": 0, "total_frames": 100}, "need >= 1 embryo"),
        ({"embryos": 3, "frames_per_embryo": 8}, "frames_per_embryo >= 9"),
    ],
)
def test_impossible_counts_are_refused_naming_the_setting(kw, words):
    with pytest.raises(ConfigError, match=words):
        allocate_frames(**kw)


def test_apportion_is_exact():
    parts = apportion(766, [300, 340, 401, 255])
    # quotas 177.31, 200.96, 237.01, 150.72: floors 764, the two largest remainders get one
    assert parts.sum() == 766 and parts.tolist() == [177, 201, 237, 151]
    assert apportion(0, [1, 2]).tolist() == [0, 0]
    assert apportion(3, [1, 1, 1, 1]).tolist() == [1, 1, 1, 0]  # ties: the earlier part
    with pytest.raises(ValueError):
        apportion(5, [0, 0])


def _plan(config: dict) -> Plan:
    return Plan.from_config(config, hardware_check="none")


def test_synthesize_flags_name_the_counts_only_when_set():
    config = read_config_file(REPO / "config" / "offline.yaml")
    before = ["--separator", "tab", "--unlabelled-frames", "0", "--extra-lines", "0"]
    assert _plan(config).synthetic_flags() == before
    config["dataset"]["synthetic"].update(total_frames=500, three_cell_frames=20)
    assert _plan(config).synthetic_flags() == before + [
        "--total-frames",
        "500",
        "--three-cell-frames",
        "20",
    ]


def test_paper_synthetic_config_is_the_paper_config_at_the_papers_size():
    ours = yaml.safe_load(PAPER_SYNTHETIC.read_text())
    theirs = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key in set(theirs) - {"outdir", "dataset", "containers"}:
        assert ours[key] == theirs[key], key
    assert set(ours) == set(theirs)
    assert ours["outdir"] == "results/paper-synthetic"
    ds = ours["dataset"]
    assert ds["kind"] == "synthetic" and "SYNTHETIC" in ds["label"]
    assert ds["frame_size"] == theirs["dataset"]["frame_size"] == 480
    assert ds["synthetic"]["embryos"] == EMBRYOS
    assert ds["synthetic"]["total_frames"] == paper.LABELLED_FRAMES
    assert ds["synthetic"]["three_cell_frames"] == paper.RAREST_CLASS_FRAMES
    offline = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    assert ours["containers"] == offline["containers"]
    plan = _plan(read_config_file(PAPER_SYNTHETIC))
    assert plan.synthetic_flags()[-4:] == [
        "--total-frames",
        str(paper.LABELLED_FRAMES),
        "--three-cell-frames",
        str(paper.RAREST_CLASS_FRAMES),
    ]


def _whole_frame_render(size: int, cells: int, rng: np.random.Generator, layout) -> np.ndarray:
    """The frame as the generator drew it before its drawing was bounded (every shape summed
    over the whole frame): the reference the bounded drawing must equal, bit for bit."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    img = 110.0 + 25.0 * (1.0 - yy / size)
    cy, cx = size / 2 + rng.normal(0, size * 0.01, 2)
    big_r = size * 0.30

    def ring(y0, x0, r, width, value):
        return value * np.exp(-(((np.hypot(yy - y0, xx - x0) - r) / width) ** 2))

    for _ in range(rng.integers(1, 4)):
        side = rng.integers(0, 4)
        along = rng.uniform(0.1, 0.9) * size
        off = -big_r * rng.uniform(0.2, 0.7)
        ny, nx = [(off, along), (size - off, along), (along, off), (along, size - off)][side]
        img += ring(ny, nx, big_r, size * 0.015, 35.0)
    img += ring(cy, cx, big_r, size * 0.012, 40.0)
    for dy, dx, r in layout:
        y0, x0, rr = cy + dy * big_r, cx + dx * big_r, r * big_r
        img -= 30.0 * (np.hypot(yy - (y0 + 0.12 * rr), xx - x0) < rr)
        img += 18.0 * (np.hypot(yy - (y0 - 0.06 * rr), xx - x0) < rr * 0.97)
        img += ring(y0 - 0.05 * rr, x0, rr, size * 0.01, 25.0) * (yy < y0)
    img += rng.normal(0.0, 6.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("size", [9, 28, 48, 97, 480])
def test_frames_drawn_over_bounded_regions_equal_the_whole_frame_sums(size):
    # Shapes near and across the frame's edges included (neighbours, jittered centres).
    for seed in range(4 if size == 480 else 25):
        for cells in (1, 2, 3, 4):
            layout = _cell_layout(cells, np.random.default_rng([seed, 99]))
            got, _ = render_frame(size, cells, np.random.default_rng([seed, cells]), layout)
            want = _whole_frame_render(size, cells, np.random.default_rng([seed, cells]), layout)
            assert np.array_equal(got, want), (size, seed, cells)


def test_frames_are_8_bit_gray_pngs_with_the_pixels_drawn(tmp_path):
    img, _ = render_frame(96, 3, np.random.default_rng(5))
    path = tmp_path / "Frame000.png"
    path.write_bytes(encode_png(img))
    with Image.open(path) as im:
        check_image(path, im, 96)
        assert np.array_equal(np.asarray(im), img)
    with pytest.raises(ValueError, match="2-D uint8"):
        encode_png(img.astype(np.float32))

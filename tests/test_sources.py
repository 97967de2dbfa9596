"""Indexing the database layout and image folders; trajectory files as the database writes them."""

import numpy as np
import pytest
from PIL import Image

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.sources import (
    STRICT,
    TrajectoryRules,
    cell_counts,
    index_db,
    index_imagefolder,
    lineage_end,
    parse_trajectories,
    read_trajectories,
    skipped_lines,
)
from embryo_bench.synthetic import generate_db, stage_counts


def test_parse_trajectories_counts_radius_above_zero(tmp_path):
    f = tmp_path / "_trajectories.txt"
    f.write_text("10\t20\t5\t0\t0\t0\n10\t20\t5\t30\t40\t6\t\n1\t2\t3\t4\t5\t0\n\n")
    np.testing.assert_array_equal(parse_trajectories(f), [1, 2, 1])


@pytest.mark.parametrize(
    "text",
    [
        "1\t2\t3\t0\t0\t0\n4\t5\t6\t7\t8\t9\n",  # tabs
        "1\t2\t3\t0\t0\t0\t\n4\t5\t6\t7\t8\t9\t\n",  # trailing tab
        "1 2 3 0 0 0\n4  5 6 7 8   9\n",  # spaces, runs of them
        "1 2 3 0 0 0 \r\n4 5 6 7 8 9\t\r\n\n\n",  # CRLF, trailing blanks, blank last lines
        "1\t 2\t3 \t0\t0\t0\n4\t5\t6\t7\t8\t9\n",  # padding inside tab fields
    ],
)
def test_parse_trajectories_accepts_the_separators_real_files_use(tmp_path, text):
    f = tmp_path / "_trajectories.txt"
    f.write_text(text)
    np.testing.assert_array_equal(parse_trajectories(f), [1, 2])
    np.testing.assert_array_equal(read_trajectories(f)[1], [[4, 5, 6], [7, 8, 9]])


@pytest.mark.parametrize(
    "text, message",
    [
        ("1\t2\t3\n1\t2\n", r"line 2: 2 fields; expected a non-empty multiple of 3"),
        ("1\t2\t3\n1\t2\t3\t4\t5\t6\n", r"line 2: 6 fields; expected 3 like line 1"),
        ("1\t2\tx\n", r"line 1: expected integers"),
        ("1\t2\t3.5\n", r"line 1: expected integers"),
        ("1\t2\t-3\n", r"line 1: negative value"),
        ("1\t\t2\t3\n", r"line 1: empty field between two tabs"),
        ("1\t2\t3\n\n1\t2\t3\n", r"line 2: empty line"),
        ("", r"empty; expected one line per frame"),
    ],
)
def test_parse_trajectories_garbled(tmp_path, text, message):
    f = tmp_path / "_trajectories.txt"
    f.write_text(text)
    with pytest.raises(DataError, match=message) as err:
        parse_trajectories(f)
    assert str(f) in str(err.value)


def _lineage_line(alive: list[int]) -> str:
    """A 21-column line with the given 0-based lineage slots occupied."""
    return "\t".join("100\t200\t30" if k in alive else "0\t0\t0" for k in range(7))


def test_lineage_end_finds_the_first_divided_grand_daughter(tmp_path):
    stages = [[0], [0], [1, 2], [2, 3, 4], [3, 4, 5, 6], [3, 4, 5, 6], [4, 5, 6], [5, 6], []]
    f = tmp_path / "_trajectories.txt"
    f.write_text("\n".join(_lineage_line(a) for a in stages) + "\n")
    slots = read_trajectories(f)
    assert slots.shape == (9, 7, 3)
    # Non-zero slots fall 4 -> 3 -> 2 -> 0 as grand-daughters divide (5, 6, 8 cells).
    np.testing.assert_array_equal(cell_counts(slots), [1, 1, 2, 3, 4, 4, 3, 2, 0])
    assert lineage_end(slots) == 6
    assert lineage_end(slots[:6]) is None
    assert lineage_end(slots[:, :4]) is None  # not the 7-slot layout: no lineage order known


def _db(tmp_path, **variant):
    root = tmp_path / "db"
    info = generate_db(root, embryos=5, frames_per_embryo=12, frame_size=32, seed=3, **variant)
    return root, info


def test_generator_writes_the_real_files_layout(tmp_path):
    root, info = _db(tmp_path)
    lines = (root / "E00" / "_trajectories.txt").read_text().splitlines()
    assert len(lines) == 12 and all(len(line.split("\t")) == 21 for line in lines)
    slots = read_trajectories(root / "E00" / "_trajectories.txt")
    occupied = [tuple(np.flatnonzero(s[:, 2])) for s in slots]
    assert occupied[0] == (0,) and occupied[-1] == (3, 4, 5, 6)
    assert {len(o) for o in occupied} == {1, 2, 3, 4} and lineage_end(slots) is None
    assert sum(info["frames_per_class"].values()) == 5 * 12


@pytest.mark.parametrize(
    "variant",
    [
        {"separator": "spaces"},
        {"trailing_separator": True},
        {"separator": "spaces", "trailing_separator": True},
        {"unlabelled_frames": 3},
        {"extra_lines": 1},
        {"unlabelled_frames": 2, "separator": "spaces", "trailing_separator": True},
    ],
)
def test_index_db_reads_every_format_variant_with_the_same_labels(tmp_path, variant):
    root, _ = _db(tmp_path, **variant)
    manifest, stats = index_db(root, 32)
    plain, _ = index_db(_db(tmp_path / "plain")[0], 32)
    assert manifest[["embryo", "frame", "cells"]].equals(plain[["embryo", "frame", "cells"]])
    assert stats["frames"] == 5 * (12 + variant.get("unlabelled_frames", 0))
    assert stats["frames_labelled"] == len(manifest) == 60
    assert stats["frames_unlabelled"] == 5 * variant.get("unlabelled_frames", 0)
    assert stats["lines_ignored"] == 5 * variant.get("extra_lines", 0)
    assert stats["frames_lineage_ended"] == 0
    touched = bool(variant.get("unlabelled_frames") or variant.get("extra_lines"))
    assert sorted(stats["per_embryo"]) == (["E00", "E01", "E02", "E03", "E04"] if touched else [])


def test_index_db_rules_are_configurable(tmp_path):
    root, _ = _db(tmp_path, unlabelled_frames=2, extra_lines=0)
    with pytest.raises(
        DataError,
        match=r"E00/_trajectories.txt: 12 lines for 14 frames.*"
        r"unlabelled_frames: error",
    ):
        index_db(root, 32, rules=TrajectoryRules(unlabelled_frames="error"))
    root2, _ = _db(tmp_path / "b", extra_lines=2)
    with pytest.raises(DataError, match=r"14 lines for 12 frames.*at most 1 line.*extra_lines"):
        index_db(root2, 32)
    manifest, stats = index_db(root2, 32, rules=TrajectoryRules(extra_lines=2))
    assert len(manifest) == 60 and stats["lines_ignored"] == 10
    with pytest.raises(DataError, match=r"13 lines for 12 frames.*at most 0"):
        index_db(_db(tmp_path / "c", extra_lines=1)[0], 32, rules=STRICT)
    with pytest.raises(ConfigError, match=r"dataset.trajectories.lineage_ended: 'drop'"):
        TrajectoryRules(lineage_ended="drop")
    with pytest.raises(ConfigError, match=r"unlabelled_frames and extra_lines both set"):
        _db(tmp_path / "d", unlabelled_frames=1, extra_lines=1)


def test_index_db_leaves_out_frames_after_the_lineage_ends(tmp_path):
    root, _ = _db(tmp_path)
    traj = root / "E02" / "_trajectories.txt"
    lines = traj.read_text().splitlines()
    # Frames 9..11 are 4-cell frames; from frame 10 one grand-daughter has divided (5 cells).
    lines[10] = lines[11] = _lineage_line([3, 4, 5])
    traj.write_text("\n".join(lines) + "\n")
    manifest, stats = index_db(root, 32)
    e2 = manifest[manifest["embryo"] == "E02"]
    assert e2["frame"].tolist() == [f"Frame{k:03d}" for k in range(10)]
    assert stats["frames_lineage_ended"] == 2 and stats["per_embryo"]["E02"]["lines"] == 12
    kept, _ = index_db(root, 32, rules=TrajectoryRules(lineage_ended="keep"))
    assert kept.loc[kept["embryo"] == "E02", "cells"].tolist()[-2:] == [3, 3]
    assert any(
        "2 frames from the line where a grand-daughter" in line
        for line in skipped_lines({**stats, "per_embryo": stats["per_embryo"]})
    )


def test_index_db_labels_and_split(small_db):
    manifest, stats = index_db(small_db, 48, test_mod=5, test_remainder=0)
    assert stats["embryos"] == 10 and len(manifest) == 120
    assert set(manifest["cells"]) == {1, 2, 3, 4}
    test_embryos = set(manifest.loc[manifest["split"] == "test", "embryo"])
    assert test_embryos == {"E00", "E05"}
    # Labels equal the generator's cell counts (line k labels Frame k).
    e3 = manifest[manifest["embryo"] == "E03"]
    assert e3["frame"].tolist() == [f"Frame{k:03d}" for k in range(12)]
    assert e3["cells"].tolist() == stage_counts(12) == [1, 1, 1, 1, 2, 2, 2, 2, 3, 4, 4, 4]


def test_index_db_missing_trajectories(db_copy):
    (db_copy / "E04" / "_trajectories.txt").unlink()
    with pytest.raises(DataError, match=r"E04/_trajectories.txt: trajectories file not found"):
        index_db(db_copy, 48)


def test_index_db_line_count_beyond_the_rules_fails(db_copy):
    traj = db_copy / "E02" / "_trajectories.txt"
    lines = traj.read_text().splitlines()
    traj.write_text("\n".join(lines + lines[-1:] * 2) + "\n")
    with pytest.raises(DataError, match=r"E02/_trajectories.txt: 14 lines for 12 frames"):
        index_db(db_copy, 48)
    traj.write_text("\n".join(lines[:6]) + "\n")  # truncated file: 6 frames unlabelled
    with pytest.raises(DataError, match=r"E02/_trajectories.txt: 6 lines for 12 frames"):
        index_db(db_copy, 48, rules=STRICT)
    manifest, stats = index_db(db_copy, 48)
    assert (manifest["embryo"] == "E02").sum() == 6 and stats["frames_unlabelled"] == 6


def test_index_db_gap_in_frame_numbers(db_copy):
    (db_copy / "E07" / "Frame005.png").unlink()
    with pytest.raises(DataError, match=r"E07: frame number 5 is missing"):
        index_db(db_copy, 48)


def test_index_db_wrong_frame_size(db_copy):
    bad = db_copy / "E01" / "Frame003.png"
    Image.fromarray(np.zeros((40, 48), np.uint8)).save(bad)
    with pytest.raises(DataError, match=r"Frame003.png: frame is 48x40 px; expected 48x48"):
        index_db(db_copy, 48)


def test_index_db_not_a_database(tmp_path):
    (tmp_path / "stuff").mkdir()
    with pytest.raises(DataError, match=r"no embryo folders E<NN>/"):
        index_db(tmp_path, 48)


def test_index_imagefolder_real_subset(cells28):
    manifest, _ = index_imagefolder(cells28, 28)
    assert len(manifest) == 2400
    counts = manifest.groupby(["split", "cells"]).size()
    assert counts["train"].tolist() == [500] * 4 and counts["test"].tolist() == [100] * 4


def test_index_imagefolder_bad_class_folder(tmp_path):
    (tmp_path / "Train" / "one").mkdir(parents=True)
    with pytest.raises(DataError, match=r"Train/one: class folder must be an integer"):
        index_imagefolder(tmp_path, 28)


def test_imagefolder_skips_hidden_entries_and_matches_png_in_any_case(tmp_path):
    """A hidden folder (.ipynb_checkpoints) is passed over, .PNG counts as .png, and what is
    passed over is counted; a class folder outside 1-4 cells is kept for select to count."""
    from embryo_bench.evaluate import _index

    img = Image.fromarray(np.full((28, 28), 90, np.uint8))
    for split, cls, name in [("Train", "0", "a.png"), ("Train", "1", "b.PNG"),
                             ("Train", "4", "c.png"), ("Test", "0", "d.Png")]:  # fmt: skip
        (tmp_path / split / cls).mkdir(parents=True, exist_ok=True)
        img.save(tmp_path / split / cls / name)
    (tmp_path / "Train" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "Train" / "0" / ".DS_Store").write_bytes(b"x")
    (tmp_path / "Train" / "0" / "notes.txt").write_text("x")
    (tmp_path / ".hidden").mkdir()
    manifest, stats = index_imagefolder(tmp_path, 28)
    assert sorted(manifest["cells"]) == [1, 1, 2, 5]
    assert stats["entries_ignored"] == 4
    assert any(e.endswith("notes.txt") for e in stats["entries_ignored_examples"])
    assert "4 entries that are not class folders or .png images" in skipped_lines(stats)[0]
    # evaluate's loader reads the same folders, hidden ones passed over (it crashed before).
    (tmp_path / "Test" / ".ipynb_checkpoints").mkdir()
    assert len(_index(tmp_path / "Test", 28)) == 1

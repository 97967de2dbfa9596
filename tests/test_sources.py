"""Indexing the database layout and image folders; strict trajectory parsing."""

import numpy as np
import pytest
from PIL import Image

from embryo_bench.errors import DataError
from embryo_bench.sources import index_db, index_imagefolder, parse_trajectories
from embryo_bench.synthetic import stage_counts


def test_parse_trajectories_counts_radius_above_zero(tmp_path):
    f = tmp_path / "_trajectories.txt"
    f.write_text("10\t20\t5\t0\t0\t0\n10\t20\t5\t30\t40\t6\t\n1\t2\t3\t4\t5\t6\t7\t8\t0\n\n")
    np.testing.assert_array_equal(parse_trajectories(f), [1, 2, 2])


@pytest.mark.parametrize(
    "text, message",
    [
        ("1\t2\t3\n1\t2\n", r"line 2: 2 tab-separated fields; expected a non-empty multiple of 3"),
        ("1\t2\tx\n", r"line 1: expected integers"),
        ("1\t2\t-3\n", r"line 1: negative value"),
        ("", r"empty; expected one line per frame"),
    ],
)
def test_parse_trajectories_garbled(tmp_path, text, message):
    f = tmp_path / "_trajectories.txt"
    f.write_text(text)
    with pytest.raises(DataError, match=message) as err:
        parse_trajectories(f)
    assert str(f) in str(err.value)


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


def test_index_db_line_count_must_match_frames(db_copy):
    traj = db_copy / "E02" / "_trajectories.txt"
    lines = traj.read_text().splitlines()
    traj.write_text("\n".join(lines + ["1\t1\t1"]) + "\n")
    with pytest.raises(DataError, match=r"E02/_trajectories.txt: 13 lines for 12 frames"):
        index_db(db_copy, 48)
    traj.write_text("\n".join(lines[:6]) + "\n")  # truncated file
    with pytest.raises(DataError, match=r"E02/_trajectories.txt: 6 lines for 12 frames"):
        index_db(db_copy, 48)


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

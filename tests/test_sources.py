"""Indexing the database layout and image folders; trajectory files as the database writes them."""

import errno
import json
import logging
import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from embryo_bench.cli import main
from embryo_bench.data.sources import index_db, index_imagefolder, skipped_lines
from embryo_bench.data.synthetic import generate_db, stage_counts
from embryo_bench.data.trajectories import (
    STRICT,
    TrajectoryRules,
    cell_counts,
    lineage_end,
    parse_trajectories,
    read_trajectories,
)
from embryo_bench.errors import ConfigError, DataError
from embryo_bench.io import tree_stamp


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
    from embryo_bench.training.evaluate import _index

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


# --- damaged image folders are named --------------------------------------------------------


def _images(root, splits=("Train", "Test"), frame=None):
    """root/<split>/<0-3>/a.png, 28 px gray PNGs."""
    for split in splits:
        for cls in "0123":
            (root / split / cls).mkdir(parents=True)
            Image.fromarray(np.full((28, 28), 90, np.uint8)).save(root / split / cls / "a.png")
    return root


def _index_cli(root, out, layout="imagefolder", frame_size=28) -> list[str]:
    return ["index", "--layout", layout, "--root", str(root), "--frame-size", str(frame_size),
            "--dataset", "imagefolder", "--label", "S", "--out", str(out / "manifest.csv"),
            "--source-info", str(out / "source.json")]  # fmt: skip


def _refused(argv, capsys, out) -> str:
    """Run the CLI; expect exit 2, one last ``embryo-bench: error:`` line, no traceback and
    no manifest; return that line."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("embryo-bench: error: "), err
    assert not (out / "manifest.csv").exists() and not (out / "source.json").exists()
    return last


def _jpeg_named_png(path, size=28):
    Image.fromarray(np.full((size, size), 90, np.uint8)).save(path, "JPEG")


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (os.symlink("l2.png", d / "l1.png"), os.symlink("l1.png", d / "l2.png")),
            r"Train/1/l1\.png: a symbolic link that loops \(-> l2\.png\)",
        ),
        (
            lambda d: os.symlink("gone.png", d / "b.png"),
            r"Train/1/b\.png: a link to a missing file \(-> gone\.png\); expected the file",
        ),
        (
            lambda d: Path(os.fsdecode(os.fsencode(d) + b"/caf\xe9.png")).write_bytes(
                (d / "a.png").read_bytes()
            ),
            r"Train/1/caf\\xe9\.png: a file name that is not UTF-8",
        ),
        (
            lambda d: _jpeg_named_png(d / "frame.png"),
            r"Train/1/frame\.png: a JPEG image named \.png; expected PNG",
        ),
    ],
    ids=["file link loop", "dangling link", "name not UTF-8", "JPEG named .png"],
)
def test_index_names_a_damaged_entry_of_an_image_folder(tmp_path, capsys, damage, message):
    """Before: links that loop or dangle were passed over as 'other files' (the image left out
    of the data set with a warning), a name not UTF-8 crashed with UnicodeEncodeError naming
    no file, and a JPEG renamed .png was trained on."""
    root = _images(tmp_path / "images")
    damage(root / "Train" / "1")
    out = tmp_path / "out"
    out.mkdir()
    assert re.search(message, _refused(_index_cli(root, out), capsys, out))


def test_index_refuses_a_jpeg_named_like_a_database_frame(tmp_path, capsys):
    root, _ = _db(tmp_path)
    _jpeg_named_png(root / "E03" / "Frame004.png", size=32)
    (tmp_path / "out").mkdir()
    last = _refused(_index_cli(root, tmp_path / "out", "db", 32), capsys, tmp_path / "out")
    assert last.endswith("E03/Frame004.png: a JPEG image named .png; expected PNG (convert it to "
                         "PNG, or remove it)")  # fmt: skip


def test_a_class_folder_the_index_cannot_list_is_named(tmp_path, capsys, monkeypatch):
    """Before: PermissionError traceback. (Simulated: the tests run as root; the real denial
    is in the next test.)"""
    root = _images(tmp_path / "images")
    locked = str(root / "Test" / "2")

    def denying(listing):
        def deny(path="."):
            if os.fspath(path) == locked:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            return listing(path)

        return deny

    monkeypatch.setattr(os, "scandir", denying(os.scandir))
    monkeypatch.setattr(os, "listdir", denying(os.listdir))
    (tmp_path / "out").mkdir()
    last = _refused(_index_cli(root, tmp_path / "out"), capsys, tmp_path / "out")
    assert last.endswith(
        "Test/2: a folder that cannot be read (permission denied); expected a readable folder "
        "(check its permissions)"
    )


def _without_root_rights(folder, fn):
    """``fn()`` run in ``folder`` by a user without root's rights (a forked child that drops to
    uid/gid 65534 when the tests run as root); returns its result or exception as text."""
    if os.geteuid() != 0:
        os.chdir(folder)
        try:
            return f"ok {fn()}"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.chdir(folder)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                text = f"ok {fn()}"
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
            os.write(write, text.encode("utf-8", "backslashreplace"))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        text = fh.read().decode()
    os.waitpid(pid, 0)
    return text


def test_an_unreadable_class_folder_is_named_at_plan_time_and_by_index(tmp_path):
    """A real permission denial. Before: the stamp passed over the folder (os.walk skips what
    it cannot list) and the index job crashed with a PermissionError traceback."""
    root = _images(tmp_path / "images")
    for d in [tmp_path, *root.rglob("*")]:
        if d.is_dir():
            d.chmod(0o755)
    (root / "Train" / "3").chmod(0o000)
    try:
        stamp = _without_root_rights(root, lambda: tree_stamp("."))
        index = _without_root_rights(root, lambda: len(index_imagefolder(".", 28)[0]))
    finally:
        (root / "Train" / "3").chmod(0o755)
    denied = "Train/3: a folder that cannot be read (permission denied); expected a readable"
    assert stamp.startswith(f"DataError: ./{denied}"), stamp
    assert index.startswith(f"DataError: {denied}"), index


def test_a_validation_folder_is_said_to_be_scored_as_test(tmp_path, caplog):
    """Train/Val/Test: Val joins the test split (before: said only in a docstring)."""
    root = _images(tmp_path / "images", splits=("Train", "Val", "Test"))
    manifest, stats = index_imagefolder(root, 28)
    assert stats["split_folders"] == {"Test": "test", "Train": "train", "Val": "test"}
    assert manifest.groupby("split").size().to_dict() == {"test": 8, "train": 4}
    (tmp_path / "out").mkdir()
    with caplog.at_level(logging.INFO):
        assert main(_index_cli(root, tmp_path / "out")) == 0
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [
        "split folder Val is scored as test (validation folders join the test split; the "
        "model never trains on them)"
    ]
    assert json.loads((tmp_path / "out" / "source.json").read_text())["split_folders"]["Val"] == (
        "test"
    )
    _, plain = index_imagefolder(_images(tmp_path / "plain"), 28)
    assert plain["split_folders"] == {"Test": "test", "Train": "train"}
    assert skipped_lines(plain) == []

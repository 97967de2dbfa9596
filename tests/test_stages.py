"""The data carries its settings: every stage shard records the preprocessing that made it;
training takes its settings from the shards and refuses shards that disagree with each other
or with the run's spec."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from embryo_bench.data import preprocess, stages
from embryo_bench.data.select import assign_shards
from embryo_bench.data.sources import index_db
from embryo_bench.errors import DataError
from embryo_bench.vocabulary.spec import Preprocessing

PP = Preprocessing(frame_size=48, crop_fraction=0.5, invert_centre=128, rotation_step=90.0,
                   image_size=16)  # fmt: skip


def _chain(small_db, work: Path, pp: Preprocessing = PP, name: str = "a") -> Path:
    manifest, _ = index_db(small_db, 48)
    sel = work / "selected.csv"
    assign_shards(manifest, 1).to_csv(sel, index=False)
    stages.crop_shard(sel, 0, pp.frame_size, pp.crop_fraction, work / f"c-{name}.npz")
    stages.invert_shard(work / f"c-{name}.npz", pp.invert_centre, work / f"i-{name}.npz")
    stages.augment_shard(
        work / f"i-{name}.npz", pp.rotation_step, pp.image_size, work / f"{name}.npz"
    )
    return work / f"{name}.npz"


def test_each_stage_records_what_made_it(small_db, tmp_path):
    shard = _chain(small_db, tmp_path)
    assert stages.shard_settings(tmp_path / "c-a.npz") == {
        "stage": "crop",
        "preprocessing": {"frame_size": 48, "crop_fraction": 0.5},
    }
    assert stages.shard_settings(tmp_path / "i-a.npz")["preprocessing"]["invert_centre"] == 128
    record = stages.shard_settings(shard)
    assert record["stage"] == "augment"
    assert Preprocessing.from_dict(record["preprocessing"]) == PP


def test_training_takes_the_settings_from_the_shards(small_db, tmp_path):
    shard = _chain(small_db, tmp_path)
    data, pp = stages.load_dataset([shard])
    assert pp == PP and data["x_train"].shape[1:] == (16, 16, 1)
    assert stages.load_dataset([shard], PP)[1] == PP


def test_shards_other_than_the_spec_asks_for_are_refused(small_db, tmp_path):
    shard = _chain(small_db, tmp_path)
    wanted = Preprocessing(
        frame_size=48, crop_fraction=0.5, invert_centre=128, rotation_step=18.0, image_size=16
    )
    with pytest.raises(DataError) as err:
        stages.load_dataset([shard], wanted)
    assert "rotation_step=90.0 but the run asks for rotation_step=18.0" in str(err.value)
    assert str(shard) in str(err.value)


def test_shards_that_disagree_are_refused(small_db, tmp_path):
    a = _chain(small_db, tmp_path, PP, "a")
    b = _chain(
        small_db,
        tmp_path,
        Preprocessing(
            frame_size=48, crop_fraction=0.5, invert_centre=100, rotation_step=90.0, image_size=16
        ),
        "b",
    )
    with pytest.raises(DataError, match=r"b\.npz: made with preprocessing .*invert_centre"):
        stages.load_dataset([a, b])


def test_a_shard_without_a_record_or_from_another_stage_is_refused(small_db, tmp_path):
    shard = _chain(small_db, tmp_path)
    with pytest.raises(DataError, match=r"c-a\.npz: a crop shard; expected the augment"):
        stages.load_dataset([tmp_path / "c-a.npz"])
    with pytest.raises(DataError, match=r"a\.npz: a augment shard; expected the crop"):
        stages.invert_shard(shard, 128, tmp_path / "x.npz")
    old = dict(np.load(shard))
    del old["settings"]
    np.savez(tmp_path / "old.npz", **old)
    with pytest.raises(DataError, match=r"old\.npz: no settings record .* rerun its stage"):
        stages.load_dataset([tmp_path / "old.npz"])
    assert not (tmp_path / "x.npz").exists()


def test_settings_file_is_read_back_strictly(tmp_path):
    (tmp_path / "settings.json").write_text('{"preprocessing": {"frame_size": 96}}')
    with pytest.raises(DataError, match=r"settings\.json: preprocessing settings lack"):
        Preprocessing.from_settings_file(tmp_path / "settings.json")
    with pytest.raises(DataError, match="file not found"):
        Preprocessing.from_settings_file(tmp_path / "none.json")


def test_augment_does_not_depend_on_threads_and_is_the_per_frame_chain(small_db, tmp_path):
    shard = _chain(small_db, tmp_path)
    one = dict(np.load(shard))
    stages.augment_shard(tmp_path / "i-a.npz", PP.rotation_step, PP.image_size,
                         tmp_path / "t3.npz", threads=3)  # fmt: skip
    three = dict(np.load(tmp_path / "t3.npz"))
    assert one.keys() == three.keys()
    for key in one:
        np.testing.assert_array_equal(one[key], three[key])
    inverted = np.load(tmp_path / "i-a.npz")["images"]
    angles = preprocess.rotation_angles(PP.rotation_step)
    reference = [preprocess.rotate_resize(img, angles, PP.image_size) for img in inverted]
    np.testing.assert_array_equal(one["images"], np.concatenate(reference))


_JOBS = """
import sys
from embryo_bench import cli

work = sys.argv[1]
assert cli.main(["crop", "--selection", f"{work}/selected.csv", "--shard", "0",
                 "--frame-size", "48", "--fraction", "0.5", "--out", f"{work}/c.npz"]) == 0
assert cli.main(["invert", "--input", f"{work}/c.npz", "--centre", "128",
                 "--out", f"{work}/i.npz"]) == 0
assert cli.main(["augment", "--input", f"{work}/i.npz", "--rotation-step", "90",
                 "--image-size", "16", "--out", f"{work}/a.npz"]) == 0
heavy = {"pandas", "matplotlib", "tensorflow", "keras", "docker", "scipy"}
print(sorted(heavy & {m.split(".")[0] for m in sys.modules}))
"""


def test_stage_jobs_import_no_heavy_modules(small_db, tmp_path):
    """A stage job is one interpreter per shard: pandas, matplotlib, TensorFlow, Keras,
    Docker and SciPy stay out of it (start-up and imports were a third of the
    preprocessing's CPU time)."""
    manifest, _ = index_db(small_db, 48)
    assign_shards(manifest, 1).to_csv(tmp_path / "selected.csv", index=False)
    src = str(Path(preprocess.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _JOBS, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    n = len(np.load(tmp_path / "c.npz")["cells"])
    assert n > 0 and len(np.load(tmp_path / "a.npz")["images"]) == 4 * n


def test_the_selection_is_read_and_checked(tmp_path):
    sel = tmp_path / "selected.csv"
    sel.write_text("embryo,frame,path,cells,split,shard\nE01,F1,/a.png,2,train,0\n"
                   "E02,007,/b.png,4,test,1\n")  # fmt: skip
    df = stages.read_selection(sel)
    assert df["cells"].tolist() == [2, 4] and df["cells"].dtype == np.int64
    assert df["frame"].tolist() == ["F1", "007"]  # ids stay strings
    assert stages.read_selection(sel, 1)["path"].tolist() == ["/b.png"]
    with pytest.raises(DataError, match="selection file not found"):
        stages.read_selection(tmp_path / "none.csv")
    sel.write_text("embryo,frame,path,cells,split\nE01,F1,/a.png,2,train\n")
    with pytest.raises(DataError, match=r"columns .*; expected .*'shard'"):
        stages.read_selection(sel)
    sel.write_text("embryo,frame,path,cells,split,shard\nE01,F1,/a.png,5,train,0\n")
    with pytest.raises(DataError, match=r"labels \[5\] outside 1-4"):
        stages.read_selection(sel)
    sel.write_text("embryo,frame,path,cells,split,shard\nE01,F1,/a.png,2,train\n")
    with pytest.raises(DataError, match=r"row \['E01', 'F1', '/a.png'\] has 5 fields; expected 6"):
        stages.read_selection(sel)
    sel.write_text("embryo,frame,path,cells,split,shard\nE01,F1,/a.png,two,train,0\n")
    with pytest.raises(DataError, match="'cells' holds a non-integer"):
        stages.read_selection(sel)

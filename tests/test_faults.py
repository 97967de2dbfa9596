"""Bad input, one table: each case damages one input of a stage, runs that stage's
command and expects exit status 2, one ``embryo-bench: error:`` line naming the file or
setting and what was expected, no traceback, and no output left that looks complete.

The workflow-level faults (killed trainers and runners, SIGINT, full disk, downloads over a
real HTTP server, Docker) are in test_workflow.py, test_docker.py, test_download.py and
test_lifeline.py; this table holds the cheap, command-level ones so their count is measured
in every CI run."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from embryo_bench.cli import main
from embryo_bench.data.synthetic import generate_db
from embryo_bench.vocabulary.layout import RUN_FILES
from embryo_bench.vocabulary.spec import Preprocessing

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import run_spec_dict  # noqa: E402

FRAME = 48


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A small synthetic database and every stage's output for it, all valid."""
    root = tmp_path_factory.mktemp("good")
    generate_db(root / "db", embryos=10, frames_per_embryo=12, frame_size=FRAME, seed=1)
    steps = [
        ["index", "--layout", "db", "--root", root / "db", "--frame-size", FRAME,
         "--dataset", "synthetic", "--label", "SYNTHETIC", "--out", root / "manifest.csv",
         "--source-info", root / "source.json"],
        ["select", "--manifest", root / "manifest.csv", "--seed", 0, "--shards", 2,
         "--out", root / "selection.csv", "--summary", root / "summary.json"],
        ["crop", "--selection", root / "selection.csv", "--shard", 0, "--frame-size", FRAME,
         "--fraction", 0.6666666667, "--out", root / "crop.npz"],
        ["invert", "--input", root / "crop.npz", "--centre", 128, "--out", root / "invert.npz"],
        ["augment", "--input", root / "invert.npz", "--rotation-step", 18, "--image-size", 64,
         "--out", root / "augment.npz"],
    ]  # fmt: skip
    for argv in steps:
        assert main([str(a) for a in argv]) == 0, argv
    return root


def _copy_db(good: Path, d: Path) -> Path:
    return Path(shutil.copytree(good / "db", d / "db"))


def _index(root, d: Path, layout: str = "db") -> list:
    return ["index", "--layout", layout, "--root", root, "--frame-size", FRAME, "--dataset",
            "synthetic", "--label", "S", "--out", d / "manifest.csv", "--source-info",
            d / "source.json"]  # fmt: skip


def _select(manifest, d: Path, shards: int = 2) -> list:
    return ["select", "--manifest", manifest, "--seed", 0, "--shards", shards, "--out",
            d / "selection.csv", "--summary", d / "summary.json"]  # fmt: skip


def _crop(selection, d: Path, shard: int = 0) -> list:
    return ["crop", "--selection", selection, "--shard", shard, "--frame-size", FRAME,
            "--fraction", 0.6666666667, "--out", d / "crop.npz"]  # fmt: skip


def _png(size: int, mode: str = "L", fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, (size, size)).save(buf, fmt)
    return buf.getvalue()


def _selection_with_frame(good: Path, d: Path, data: Callable[[bytes], bytes]) -> Path:
    """The good selection with its first frame replaced by ``data(original bytes)``."""
    lines = (good / "selection.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    at = header.index("path")
    frame = d / "frame.png"
    frame.write_bytes(data(Path(row[at]).read_bytes()))
    row[at] = str(frame)
    out = d / "selection.csv"
    out.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    return out


def _manifest_edit(good: Path, d: Path, edit: Callable[[list[list[str]]], None]) -> Path:
    rows = [line.split(",") for line in (good / "manifest.csv").read_text().splitlines()]
    edit(rows)
    out = d / "bad-manifest.csv"
    out.write_text("\n".join(",".join(r) for r in rows) + "\n")
    return out


def _set_cells(rows, value):
    rows[1][rows[0].index("cells")] = value


def _drop_cells(rows):
    at = rows[0].index("cells")
    for r in rows:
        del r[at]


def _evil_tar(d: Path) -> Path:
    path = d / "evil.tar"
    with tarfile.open(path, "w") as tf:
        info = tarfile.TarInfo("../evil.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    return path


def _cut_zip(d: Path) -> Path:
    whole = d / "whole.zip"
    with zipfile.ZipFile(whole, "w") as z:
        z.writestr("E00/_trajectories.txt", "1 1 1\n" * 20000)
    cut = d / "cut.zip"
    cut.write_bytes(whole.read_bytes()[:3000])
    return cut


def _write(d: Path, name: str, data: bytes | str) -> Path:
    path = d / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@dataclass
class Fault:
    """A case: ``argv(good, d)`` makes the bad input in ``d`` and returns the command line;
    the error must contain every string of ``says`` ({d} and {good} filled in) and none of
    ``outputs`` (relative to ``d``) may exist afterwards."""

    argv: Callable[[Path, Path], list]
    says: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    #: run as a command of its own (a training sets the backend's thread pools, which a
    #: process can do once: another test's TensorFlow in this worker would refuse it)
    isolated: bool = False


def _missing_trajectories(good, d):
    db = _copy_db(good, d)
    (db / "E03" / "_trajectories.txt").unlink()
    return _index(db, d)


def _garbled_trajectories(good, d):
    db = _copy_db(good, d)
    (db / "E03" / "_trajectories.txt").write_text("1\t2\tx\n")
    return _index(db, d)


def _no_embryos(good, d):
    (d / "empty").mkdir()
    return _index(d / "empty", d)


def _imagefolder_without_split(good, d):
    (d / "classes" / "1").mkdir(parents=True)
    return _index(d / "classes", d, layout="imagefolder")


def _offline_with_epochs(epochs: int) -> str:
    import yaml

    config = yaml.safe_load((Path(__file__).parents[1] / "config/offline.yaml").read_text())
    config["train"]["epochs"] = epochs
    return yaml.safe_dump(config)


def _offline_cost_base(target: str) -> str:
    import yaml

    config = yaml.safe_load((Path(__file__).parents[1] / "config/offline.yaml").read_text())
    config.setdefault("cost", {})["base_target"] = target
    return yaml.safe_dump(config)


def _train(good: Path, d: Path, **changes) -> list:
    """``train`` on the good augment shard with a host run.json, ``changes`` applied."""
    pp = Preprocessing(
        frame_size=FRAME,
        crop_fraction=0.6666666667,
        invert_centre=128,
        rotation_step=18.0,
        image_size=64,
    )
    spec = run_spec_dict({"name": "host-1cpu", "runner": "host", "cpus": 1}, pp, **changes)
    path = _write(d, "run.json", json.dumps(spec))
    return [
        "train",
        "--spec",
        path,
        "--shards",
        good / "augment.npz",
        "--source-info",
        good / "source.json",
        "--out-dir",
        d / "run",
    ]


TRAIN_OUT = tuple(f"run/{f}" for f in RUN_FILES) + ("run/progress.csv",)
MANIFEST_OUT = ("selection.csv", "summary.json")
INDEX_OUT = ("manifest.csv", "source.json")
FAULTS = {
    "index: root missing": Fault(
        lambda g, d: _index(d / "nothere", d), ("nothere: not a directory",), INDEX_OUT
    ),
    "index: an embryo without trajectories": Fault(
        _missing_trajectories, ("E03/_trajectories.txt: trajectories file not found",), INDEX_OUT
    ),
    "index: a non-number in trajectories": Fault(
        _garbled_trajectories, ("E03/_trajectories.txt, line 1: expected integers",), INDEX_OUT
    ),
    "index: no embryo folders": Fault(
        _no_embryos, ("empty: no embryo folders", "Mouse Embryo Tracking Database layout"),
        INDEX_OUT,
    ),
    "index: class folders without a split": Fault(
        _imagefolder_without_split, ("classes/1: split folder name not understood",), INDEX_OUT
    ),
    "select: manifest missing": Fault(
        lambda g, d: _select(d / "none.csv", d), ("none.csv: manifest not found",), MANIFEST_OUT
    ),
    "select: cells not a number": Fault(
        lambda g, d: _select(_manifest_edit(g, d, lambda r: _set_cells(r, "x")), d),
        ("bad-manifest.csv, line 2: cells 'x' is not a whole number",),
        MANIFEST_OUT,
    ),
    "select: cells infinite": Fault(
        lambda g, d: _select(_manifest_edit(g, d, lambda r: _set_cells(r, "inf")), d),
        ("bad-manifest.csv, line 2: cells 'inf' is not a whole number",),
        MANIFEST_OUT,
    ),
    "select: cells column missing": Fault(
        lambda g, d: _select(_manifest_edit(g, d, _drop_cells), d),
        ("bad-manifest.csv: manifest lacks column(s) ['cells']",),
        MANIFEST_OUT,
    ),
    "select: shards 0": Fault(
        lambda g, d: _select(g / "manifest.csv", d, shards=0),
        ("select.shards is 0; expected at least 1",),
        MANIFEST_OUT,
    ),
    "crop: selection missing": Fault(
        lambda g, d: _crop(d / "none.csv", d), ("none.csv: selection file not found",),
        ("crop.npz",),
    ),
    "crop: not a PNG": Fault(
        lambda g, d: _crop(_selection_with_frame(g, d, lambda b: b"not a png"), d),
        ("frame.png: corrupt or truncated PNG",), ("crop.npz",),
    ),
    "crop: truncated PNG": Fault(
        lambda g, d: _crop(_selection_with_frame(g, d, lambda b: b[:200]), d),
        ("frame.png: corrupt or truncated PNG",), ("crop.npz",),
    ),
    "crop: frame of another size": Fault(
        lambda g, d: _crop(_selection_with_frame(g, d, lambda b: _png(64)), d),
        ("frame.png: frame is 64x64 px; expected 48x48 (setting frame_size)",), ("crop.npz",),
    ),
    "crop: a JPEG named .png (replaced after indexing)": Fault(
        lambda g, d: _crop(_selection_with_frame(g, d, lambda b: _png(FRAME, fmt="JPEG")), d),
        ("frame.png: a JPEG image named .png; expected PNG",), ("crop.npz",),
    ),
    "crop: colour frame": Fault(
        lambda g, d: _crop(_selection_with_frame(g, d, lambda b: _png(FRAME, "RGB")), d),
        ("frame.png: image mode 'RGB'; expected 8-bit grayscale",), ("crop.npz",),
    ),
    "crop: shard beyond the selection's": Fault(
        lambda g, d: _crop(g / "selection.csv", d, shard=7), ("shard 7 has no rows",),
        ("crop.npz",),
    ),
    "invert: input missing": Fault(
        lambda g, d: ["invert", "--input", d / "none.npz", "--centre", 128, "--out",
                      d / "out.npz"],
        ("none.npz: file not found",), ("out.npz",),
    ),
    "invert: a shard of another stage": Fault(
        lambda g, d: ["invert", "--input", g / "augment.npz", "--centre", 128, "--out",
                      d / "out.npz"],
        ("augment.npz: a augment shard; expected the crop stage's",), ("out.npz",),
    ),
    "invert: truncated shard": Fault(
        lambda g, d: ["invert", "--input",
                      _write(d, "cut.npz", (g / "crop.npz").read_bytes()[:500]),
                      "--centre", 128, "--out", d / "out.npz"],
        ("cut.npz: not a readable .npz array file",), ("out.npz",),
    ),
    "invert: text file as shard": Fault(
        lambda g, d: ["invert", "--input", _write(d, "text.npz", "hello"), "--centre", 128,
                      "--out", d / "out.npz"],
        ("text.npz: not a readable .npz array file",), ("out.npz",),
    ),
    "augment: a crop shard (invert skipped)": Fault(
        lambda g, d: ["augment", "--input", g / "crop.npz", "--rotation-step", 18,
                      "--image-size", 64, "--out", d / "out.npz"],
        ("crop.npz: a crop shard; expected the invert stage's",), ("out.npz",),
    ),
    "augment: rotation step 0": Fault(
        lambda g, d: ["augment", "--input", g / "invert.npz", "--rotation-step", 0,
                      "--image-size", 64, "--out", d / "out.npz"],
        ("rotation_step 0.0: expected degrees in (0, 360]",), ("out.npz",),
    ),
    "extract: archive missing": Fault(
        lambda g, d: ["extract", "--archive", d / "none.zip", "--out", d / "db"],
        ("none.zip: archive not found",), ("db",),
    ),
    "extract: a web page saved as the archive": Fault(
        lambda g, d: ["extract", "--archive", _write(d, "page.zip", "<html>404</html>"),
                      "--out", d / "db"],
        ("page.zip: not a zip or tar archive",), ("db",),
    ),
    "extract: truncated zip": Fault(
        lambda g, d: ["extract", "--archive", _cut_zip(d), "--out", d / "db"],
        ("cut.zip: not a zip or tar archive",), ("db",),
    ),
    "extract: a tar member escaping the folder": Fault(
        lambda g, d: ["extract", "--archive", _evil_tar(d), "--out", d / "db"],
        ("evil.tar: unsafe member path '../evil.txt'",), ("db", "evil.txt"),
    ),
    "evaluate: model missing": Fault(
        lambda g, d: ["evaluate", "--model", d / "none.keras", "--images", g / "db"],
        ("none.keras: model file not found",),
    ),
    "evaluate: a text file as the model": Fault(
        lambda g, d: ["evaluate", "--model", _write(d, "model.keras", "text"), "--images",
                      g / "db"],
        ("model.keras: not a Keras model archive (not a zip file)",),
    ),
    "spec: not JSON": Fault(
        lambda g, d: ["spec", "--json", "{not json", "--out", d / "run.json"],
        ("--json (the run spec): not valid JSON",), ("run.json",),
    ),
    "spec: unknown field": Fault(
        lambda g, d: ["spec", "--json", json.dumps({"target": "x", "bogus": 1}), "--out",
                      d / "run.json"],
        ("--json (the run spec): unknown keys ['bogus']",), ("run.json",),
    ),
    "daemon: not JSON": Fault(
        lambda g, d: ["daemon", "--json", "{not json", "--out", d / "daemon.json"],
        ("--json (the daemon): not valid JSON",), ("daemon.json",),
    ),
    "daemon: wrong keys": Fault(
        lambda g, d: ["daemon", "--json", json.dumps({"address": "tcp://10.0.0.7:2376"}),
                      "--out", d / "daemon.json"],
        ("--json (the daemon): expected the keys ['accept_unauthenticated', 'address', ",
         "got ['address']"), ("daemon.json",),
    ),
    "train: a batch larger than the training set": Fault(
        lambda g, d: _train(g, d, batch_size=5000),
        ("run host-1cpu repeat 1: train.batch_size 5000 > the 260 training images",
         "use a batch size up to 260"),
        TRAIN_OUT, isolated=True,
    ),
    "train: epochs 0 in run.json": Fault(
        lambda g, d: _train(g, d, epochs=0),
        ("run.json: epochs 0: expected an integer >= 1",), TRAIN_OUT,
    ),
    "check-config: YAML syntax": Fault(
        lambda g, d: ["check-config",
                      _write(d, "bad.yaml", "train:\n  epochs: 3\n   batch_size: 4\n")],
        ("bad.yaml, line 3, column 14: mapping values are not allowed here",),
    ),
    "check-config: impossible value": Fault(
        lambda g, d: ["check-config", _write(d, "bad.yaml", _offline_with_epochs(0))],
        ("bad.yaml", "train.epochs"),
    ),
    "check-config: unknown cost base target": Fault(
        lambda g, d: ["check-config", _write(d, "bad.yaml", _offline_cost_base("no-such"))],
        ("bad.yaml", "no-such"),
    ),
    "check-config: a required section missing": Fault(
        lambda g, d: ["check-config", _write(d, "bad.yaml", "outdir: x\n")],
        ("bad.yaml: config: 'targets' is a required property",),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(FAULTS), ids=list(FAULTS))
def test_bad_input_is_named_and_leaves_nothing(good, tmp_path, capsys, case):
    fault = FAULTS[case]
    argv = fault.argv(good, tmp_path)
    if fault.isolated:
        cmd = [sys.executable, "-m", "embryo_bench.cli", *map(str, argv)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rc, err = proc.returncode, proc.stderr
    else:
        rc, err = _cli(argv, capsys)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    assert rc == 2, f"exit {rc}; stderr:\n{err[-2000:]}"
    assert last.startswith("embryo-bench: error: "), err[-2000:]
    assert "Traceback" not in err
    for text in fault.says:
        assert text in last, f"{text!r} not in {last!r}"
    left = [o for o in fault.outputs if (tmp_path / o).exists()]
    assert not left, f"left behind: {left}"

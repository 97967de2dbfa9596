"""The paper at its own scale, end to end: config/paper-synthetic.yaml (SYNTHETIC
frames in the database's layout: 100 embryos, 34,133 labelled frames, 766 with 3 cells), its
full preprocessing (16 shards, 61,280 images of 64 px) and one epoch of the paper's 2-core
laptop target in a container with its 8 GiB limit, then the figures. Counts are checked
against the paper's, the trainer's peak memory against the container's limit.

Two forms (on a slow CI machine generating 34,133 frames of 480 px took
most of 43 minutes). The counts, the images, the model and the training are the same in both;
only the frames' side differs:

* **full**: 480 px frames, as the database's. Run when the code of the stages that make and
  preprocess the frames (:data:`STAGES`), or config/paper-synthetic.yaml, differs from
  :data:`RECORD`, the last full-size run that passed, or when EMBRYO_BENCH_PAPER_SCALE=full.
  A passing full-size run rewrites :data:`RECORD`: commit it with the change it verified.
* **counts**: :data:`COUNTS_FRAME_SIZE` px frames (crop 80 px, then the paper's 64), 1/16 of
  the pixels to generate and crop: every other run.

It needs the Docker daemon and runs only when EMBRYO_BENCH_REQUIRE names "paper-scale"
(.ci/run's step after the suite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import docker
import numpy as np
import pytest
import yaml

from embryo_bench.published import paper
from embryo_bench.recording.hardware import size_mib
from embryo_bench.workloads.paper import PAPER_PARAMETERS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from conftest import require_or_skip  # noqa: E402
from verified_records import Verified  # noqa: E402
from workflow_helpers import snakemake_command  # noqa: E402

TARGET = "laptop-2cpu"
PAPER_CONFIG = REPO / "config/paper-synthetic.yaml"
#: The commands whose code decides the frames and their preprocessing at 480 px.
STAGES = ("synthesize", "index", "select", "crop", "invert", "augment")
#: The last full-size run that passed: the code hashes of STAGES and the config's sha256 it ran.
RECORD = Path(__file__).with_name("paper-scale-verified.json")
#: The frames' side in the counts form: the paper's 2/3 crop gives 80 px, resized to 64.
COUNTS_FRAME_SIZE = 120
#: The short form the README gives: the paper config's settings, one epoch, one repeat, the
#: one target a 2-core machine can run (the others are skipped there anyway).
SHORT = {
    "train": {"epochs": 1, "repeats": 1},
    "cost": {"base_target": ""},
}


#: What a full-size run verifies: the stages' code and the paper's configuration.
VERIFIED = Verified(
    RECORD,
    commands=STAGES,
    files=(str(PAPER_CONFIG.relative_to(REPO)),),
    setting=("EMBRYO_BENCH_PAPER_SCALE", "full"),
)


def full_size_reason() -> str | None:
    """Why this run generates 480 px frames (None: the counts form will do)."""
    return VERIFIED.reason()


@pytest.fixture(scope="module")
def paper_run(request, tmp_path_factory):
    required = os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split()
    if "paper-scale" not in required:
        pytest.skip("the paper's size takes minutes: set EMBRYO_BENCH_REQUIRE=paper-scale")
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure to reach the daemon
        require_or_skip("docker", f"no Docker daemon answers ({exc})")
    why_full = full_size_reason()
    work = tmp_path_factory.mktemp("paper-scale")
    config = yaml.safe_load(PAPER_CONFIG.read_text())
    targets = [t for t in config["targets"] if t["name"] == TARGET]
    short = {**SHORT, "outdir": str(work / "out"), "targets": targets}
    if why_full is None:
        size = COUNTS_FRAME_SIZE
        short["dataset"] = {
            **config["dataset"],
            "frame_size": size,
            "label": f"SYNTHETIC frames at the paper's counts ({size} px, not 480)",
        }
    else:
        size = config["dataset"]["frame_size"]
    print(f"paper-scale: {size} px frames ({why_full or 'the stages are as verified'})")
    (work / "short.yaml").write_text(yaml.safe_dump(short))
    paper_config = str(REPO / "config/paper-synthetic.yaml")
    # The last --configfile wins: both files, the short form's merged over the paper's.
    cmd = snakemake_command(
        Path(paper_config), "--configfile", paper_config, str(work / "short.yaml")
    )
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    (work / "snakemake.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    print(f"paper-scale run: {size} px frames, {seconds:.0f} s", file=sys.stderr)
    failed_before = request.session.testsfailed
    yield work / "out", targets[0], short.get("dataset", config["dataset"])["label"]
    if why_full is not None and request.session.testsfailed == failed_before:
        VERIFIED.write(seconds, frame_size=size)
        print(f"paper-scale: full size passed; {RECORD} written (commit it)", file=sys.stderr)


@pytest.mark.slow
def test_the_paper_counts_at_the_papers_size(paper_run):
    out, _, _ = paper_run
    source = json.loads((out / "manifest/source.json").read_text())
    assert source["frames_labelled"] == paper.LABELLED_FRAMES
    summary = json.loads((out / "select/summary.json").read_text())
    assert summary["source"]["per_class"]["3"] == paper.RAREST_CLASS_FRAMES
    assert summary["balanced_per_class"] == paper.RAREST_CLASS_FRAMES
    assert summary["total"] == paper.BALANCED_FRAMES
    train = sum(summary["train"].values())
    test = sum(summary["test"].values())
    assert train + test == paper.BALANCED_FRAMES
    samples = 0
    for shard in sorted((out / "augment").glob("shard-*.npz")):
        with np.load(shard) as z:
            samples += len(z["images"])
    assert samples == paper.SAMPLES  # 3,064 frames x 20 rotations
    metrics = json.loads((out / f"train/{TARGET}/repeat-1/metrics.json").read_text())
    rotations = paper.SAMPLES // paper.BALANCED_FRAMES
    assert (metrics["n_train"], metrics["n_test"]) == (train * rotations, test * rotations)
    assert metrics["n_train"] + metrics["n_test"] == paper.SAMPLES
    assert metrics["parameter_count"] == PAPER_PARAMETERS
    assert metrics["epochs"] == 1 and metrics["batch_size"] == paper.BATCH_SIZE


@pytest.mark.slow
def test_the_trainer_stays_inside_its_containers_memory_limit(paper_run):
    out, target, _ = paper_run
    metrics = json.loads((out / f"train/{TARGET}/repeat-1/metrics.json").read_text())
    peak = metrics["telemetry"]["memory_mib_peak"]
    assert isinstance(peak, (int, float)) and 0 < peak < size_mib(target["memory"]), peak
    assert metrics["container"]["mem_limit"] == target["memory"]  # set on the container


@pytest.mark.slow
def test_the_figures_say_synthetic_at_the_papers_size(paper_run):
    out, _, label = paper_run
    summary = (out / "figures/summary_table.md").read_text()
    assert label in summary and "SYNTHETIC" in summary

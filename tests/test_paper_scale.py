"""The paper at its own scale, end to end (issue 26): config/paper-synthetic.yaml (SYNTHETIC
frames in the database's layout: 100 embryos of 480 px, 34,133 labelled, 766 with 3 cells),
its full preprocessing (16 shards) and one epoch of the paper's 2-core laptop target in a
container with its 8 GiB limit, then the figures. Counts are checked against the paper's,
the trainer's peak memory against the container's limit.

It takes about 10 minutes on 2 cores (10 min 3 s on 2026-11-25) and ~5 GiB of disk, so it
runs only when EMBRYO_BENCH_REQUIRE names "paper-scale" (.ci/run's step after the suite), and
it needs the Docker daemon."""

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

from embryo_bench import paper
from embryo_bench.hardware import size_mib
from embryo_bench.model import PAPER_PARAMETERS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from conftest import require_or_skip  # noqa: E402
from workflow_helpers import snakemake_command  # noqa: E402

TARGET = "laptop-2cpu"
#: The short form the README gives: the paper config's settings, one epoch, one repeat, the
#: one target a 2-core machine can run (the others are skipped there anyway).
SHORT = {
    "train": {"epochs": 1, "repeats": 1},
    "cost": {"base_target": ""},
}


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory):
    required = os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split()
    if "paper-scale" not in required:
        pytest.skip("the paper's size takes ~10 min: set EMBRYO_BENCH_REQUIRE=paper-scale")
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure to reach the daemon
        require_or_skip("docker", f"no Docker daemon answers ({exc})")
    work = tmp_path_factory.mktemp("paper-scale")
    config = yaml.safe_load((REPO / "config/paper-synthetic.yaml").read_text())
    targets = [t for t in config["targets"] if t["name"] == TARGET]
    short = {**SHORT, "outdir": str(work / "out"), "targets": targets}
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
    print(f"paper-scale run: {seconds:.0f} s", file=sys.stderr)
    return work / "out", targets[0]


@pytest.mark.slow
def test_the_paper_counts_at_the_papers_size(paper_run):
    out, _ = paper_run
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
    out, target = paper_run
    metrics = json.loads((out / f"train/{TARGET}/repeat-1/metrics.json").read_text())
    peak = metrics["telemetry"]["memory_mib_peak"]
    assert isinstance(peak, (int, float)) and 0 < peak < size_mib(target["memory"]), peak
    assert metrics["container"]["mem_limit"] == target["memory"]  # set on the container


@pytest.mark.slow
def test_the_figures_say_synthetic_at_the_papers_size(paper_run):
    out, _ = paper_run
    summary = (out / "figures/summary_table.md").read_text()
    assert "SYNTHETIC frames at the paper's size" in summary

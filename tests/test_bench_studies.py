"""benchmarks/bench_studies.py: its order of runs, its summary, the studies'
scripts it names, and a tiny end-to-end run of one workload's two sides."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import load_benchmark  # noqa: E402

from embryo_bench.workloads import catalog  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_studies.py"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_studies")


def test_every_study_is_a_catalog_workload_with_its_script(bench):
    """Each entry names a catalog workload and a script in study_scripts/ whose docstring
    starts with where it comes from and says what differs."""
    known = catalog.catalog()
    for name, study in bench.STUDIES.items():
        assert name in known, name
        assert study.input in ("memory", "files")
        path = bench.SCRIPTS / study.script
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and "What differs from the" in doc, study.script


def test_rounds_alternate_sides_and_keep_workloads_together(bench):
    order = bench.schedule(["a", "b"], 3)
    assert order == [
        (0, "a", "ours"),
        (0, "a", "script"),
        (0, "b", "ours"),
        (0, "b", "script"),
        (1, "a", "script"),
        (1, "a", "ours"),
        (1, "b", "script"),
        (1, "b", "ours"),
        (2, "a", "ours"),
        (2, "a", "script"),
        (2, "b", "ours"),
        (2, "b", "script"),
    ]


def test_samples_are_whole_batches(bench):
    assert bench.samples("tf-mnist-deep", 1.0, 50) == (4000, 500)
    assert bench.samples("mnist-cnn", 0.01, 128) == (256, 128)  # two batches, one test batch
    assert bench.samples("lstm-text-generation", 0.5, 128)[1] == 0  # no test split


def test_deep_mnist_runs_one_more_iteration_than_its_epochs(bench):
    args = bench.parse_args(["--worker", "--workload", "tf-mnist-deep", "--train", "400"])
    args.epochs = 3
    assert bench.script_settings(args) == {"iterations": 3 * 8 + 1}
    args.workload, args.files = "catsdogs-cnn", "/data"
    settings = bench.script_settings(args)
    assert settings["epochs"] == 3 and settings["steps_per_epoch"] is None
    assert settings["training_set"] == "/data/train"


def test_summary_pairs_rounds(bench):
    def run(side, r, ips, cpu):
        return {
            "workload": "mnist-mlp",
            "side": side,
            "round": r,
            "train": 256,
            "status": "ok",
            "steady_images_per_s": ips,
            "steady_images_per_cpu_s": cpu,
            "peak_rss_mib": 800.0 + r,
            "first_epoch_seconds": 1.0,
            "cpu_per_wall": 0.9,
        }

    runs = [
        run("ours", 0, 90.0, 100.0),
        run("script", 0, 100.0, 100.0),
        run("script", 1, 50.0, 100.0),  # the machine slowed down in round 2
        run("ours", 1, 45.0, 100.0),
        run("ours", 2, 99.0, 100.0),
        run("script", 2, 100.0, 100.0),
        {"workload": "mnist-cnn", "side": "ours", "round": 0, "train": 256, "status": "ok"},
        {
            "workload": "mnist-cnn",
            "side": "script",
            "round": 0,
            "train": 256,
            "status": "failed (rc 1): ValueError: boom",
        },
    ]
    rows = {r["workload"]: r for r in bench.summarise(["mnist-mlp", "mnist-cnn"], runs)}
    mlp = rows["mnist-mlp"]
    assert mlp["ratio"]["pairs"] == 3
    assert mlp["ratio"]["median"] == pytest.approx(0.9)  # the ratios 0.9, 0.9, 0.99
    assert mlp["ratio"]["low"] == pytest.approx(0.9)
    assert mlp["ratio"]["high"] == pytest.approx(0.99)
    assert mlp["ratio"]["rounds"] == pytest.approx([0.9, 0.9, 0.99])
    assert mlp["ratio"]["verdict"] == "undecided"  # the interval spans 0.97
    assert mlp["ratio_cpu"]["median"] == 1.0 and mlp["ratio_cpu"]["verdict"] == "meets 0.97x"
    assert mlp["ours_images_per_s"] == 90.0 and mlp["script_images_per_s"] == 100.0
    assert mlp["ours_peak_rss_mib"] == 802.0
    cnn = rows["mnist-cnn"]
    assert cnn["ratio"] is None and cnn["script_status"].endswith("ValueError: boom")
    text = bench.table(list(rows.values()))
    assert "0.900 [0.900-" in text and "script: failed (rc 1): ValueError: boom" in text


def test_pooled_records_keep_their_pairs_apart(bench):
    one = {"runs": [{"round": 0}, {"round": 1}], "memory": [{"workload": "a"}]}
    two = {"runs": [{"round": 0}], "memory": []}
    both = bench.pooled([one, two])
    assert [r["round"] for r in both["runs"]] == [0, 1, 2]
    assert both["memory"] == [{"workload": "a"}]


@pytest.mark.parametrize(
    ("low", "high", "pairs", "expected"),
    [
        (0.97, 1.2, 3, "meets 0.97x"),
        (0.80, 0.969, 3, "below 0.97x"),
        (0.95, 1.01, 5, "undecided"),
        (1.1, 1.1, 1, "one pair: no interval"),
    ],
)
def test_verdict_against_the_issues_bar(bench, low, high, pairs, expected):
    assert bench.verdict((low + high) / 2, low, high, pairs) == expected


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_tiny_run_prints_its_table(bench, tmp_path):
    """One workload, one round, one timed epoch after one excluded, two batches of data: both
    sides train and give finite speeds, and the table is printed."""
    out = tmp_path / "studies.json"
    cmd = [sys.executable, str(SCRIPT), "--workloads", "mnist-mlp", "--rounds", "1"]
    cmd += ["--epochs", "1", "--scale", "0.01", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("host: ")
    lines = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("workload "))
    assert lines[head + 2].startswith("mnist-mlp ") and "one pair: no interval" in lines[head + 2]
    record = json.loads(out.read_text())
    assert record["samples"]["mnist-mlp"] == [256, 128] and record["complete"] is True
    assert sorted(r["side"] for r in record["runs"]) == ["ours", "script"]
    for r in record["runs"]:
        assert r["status"] == "ok", r
        assert len(r["epoch_seconds"]) == len(r["epoch_cpu_seconds"]) == 2
        assert math.isfinite(r["steady_images_per_s"]) and r["steady_images_per_s"] > 0
    ours = next(r for r in record["runs"] if r["side"] == "ours")
    assert ours["parameters"] == catalog.get("mnist-mlp").parameters
    assert ours["clock_seconds"][1] == pytest.approx(ours["epoch_seconds"][1], rel=0.1, abs=0.05)

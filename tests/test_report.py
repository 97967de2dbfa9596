"""The reproduction report: repeats and their seeds, sweeps, backends, cost arithmetic, energy
("not measured" without RAPL or NVML), the paper-vs-ours table, and `snakemake --report` on
the full offline config."""

from __future__ import annotations

import json
import socket
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import TINY_PARAMETERS, offline_config, snakemake

from embryo_bench.errors import ConfigError
from embryo_bench.planning.bases import cost_base
from embryo_bench.planning.targets import (
    expand_sweeps,
    run_seed,
    sweep_point_name,
    target_from_entry,
)
from embryo_bench.published import paper
from embryo_bench.recording.telemetry import COLUMNS, ProcessSampler, RaplMeter
from embryo_bench.recording.telemetry import summarise as summarise_telemetry
from embryo_bench.reporting import summary
from embryo_bench.reporting.runs import Run

# --- runs: repeats, seeds, sweeps, backends ------------------------------------------------


def test_repeat_seeds():
    assert [run_seed(7, k) for k in (1, 2, 3)] == [7, 8, 9]
    with pytest.raises(ValueError, match="start at 1"):
        run_seed(0, 0)


def test_sweep_points_are_derived_targets():
    base = target_from_entry(
        {"name": "t", "runner": "host", "cpus": 2, "paper_system": "2-core laptop"}
    )
    targets = {"t": base}
    entry = {"target": "t", "batch_size": [64, 128], "threads": [1, 2], "repeats": 1}
    points = expand_sweeps([entry], targets)
    assert list(points) == [sweep_point_name("t", b, n) for b in (64, 128) for n in (1, 2)]
    p = points["t.bs128-t1"]
    assert (p.batch_size, p.threads, p.cpus, p.repeats) == (128, 1, 2, 1)
    assert p.sweep == {"base": "t", "batch_size": 128, "threads": 1}
    assert p.paper_system == ""  # a sweep point does not stand for the paper's system
    only_threads = expand_sweeps([{"target": "t", "threads": [1], "repeats": 2}], targets)
    assert list(only_threads) == ["t.bs480-t1"] and only_threads["t.bs480-t1"].repeats == 2


def test_sweep_of_unknown_target_is_rejected():
    with pytest.raises(ConfigError, match=r"sweeps\[0\].target 'nope': no such target runs here"):
        expand_sweeps([{"target": "nope", "threads": [1]}], {})


def test_docker_targets_need_tensorflow():
    assert target_from_entry({"name": "h", "runner": "host", "cpus": 1, "backend": "jax"})
    with pytest.raises(ConfigError, match="backend jax with runner docker"):
        target_from_entry({"name": "d", "runner": "docker", "cpus": 1, "backend": "jax"})


# --- energy and utilisation ------------------------------------------------------------------


def _zone(root: Path, name: str, energy: int, max_range: int = 10**9) -> Path:
    z = root / name
    z.mkdir(parents=True)
    (z / "energy_uj").write_text(f"{energy}\n")
    (z / "max_energy_range_uj").write_text(f"{max_range}\n")
    return z


def test_rapl_sums_packages_and_handles_wraparound(tmp_path):
    p0 = _zone(tmp_path, "intel-rapl:0", 5_000_000)
    p1 = _zone(tmp_path, "intel-rapl:1", 999_000_000, max_range=1_000_000_000)
    _zone(tmp_path, "intel-rapl:0:0", 0)  # a sub-zone (core) of package 0: not added again
    meter = RaplMeter(str(tmp_path))
    meter.start()
    (p0 / "energy_uj").write_text("8000000\n")  # +3 J
    (p1 / "energy_uj").write_text("1000000\n")  # wrapped: +2 J
    assert meter.stop() == pytest.approx(5.0)


def test_rapl_absent_is_not_measured(tmp_path):
    meter = RaplMeter(str(tmp_path / "none"))
    meter.start()
    result = meter.stop()
    assert isinstance(result, str) and result.startswith("not measured (no RAPL")


def test_energy_not_measured_without_rapl_or_nvml():
    df = pd.DataFrame([{"time_s": 1.0, "cpu_percent": 90.0, "memory_mib": 500.0}], columns=COLUMNS)
    why = "not measured (no RAPL: /sys/class/powercap/intel-rapl:* absent)"
    cpu = summarise_telemetry(df, 1000, gpus_expected=0, cpu_energy_j=why)
    assert cpu["cpu_energy_j"] == why and cpu["cpu_images_per_joule"] == why
    assert cpu["energy_j"] == "not measured (no GPU assigned)"
    gpu = summarise_telemetry(df, 1000, gpus_expected=1, cpu_energy_j=50.0)
    assert gpu["energy_j"].startswith("not measured (no NVML readings")
    assert gpu["cpu_energy_j"] == 50.0 and gpu["cpu_images_per_joule"] == pytest.approx(20.0)


def test_process_sampler_samples_this_process():
    sampler = ProcessSampler(cpus=1.0, gpu_indices=[], cores=[0], interval=0.1)
    sampler.start()
    wall0, cpu0 = time.monotonic(), time.process_time()
    # Busy until this process has used 0.6 s of CPU (on a shared machine that takes longer
    # than 0.6 s of wall time); the sampler must see about the share it really got.
    while time.process_time() - cpu0 < 0.6 and time.monotonic() - wall0 < 60:
        sum(range(10_000))
    share = 100 * (time.process_time() - cpu0) / (time.monotonic() - wall0)
    sampler.stop()
    frame = sampler.frame()
    assert len(frame) >= 3 and list(frame.columns) == COLUMNS
    assert 0.5 * share < frame["cpu_percent"].mean() < 1.5 * share + 10, (share, frame)
    assert frame["memory_mib"].gt(10).all()
    assert frame["gpu_index"].isna().all()


# --- tables: cost, repeats, paper vs ours ----------------------------------------------------


def _run(target, repeat, seconds, accuracy, memory_peak=960.0, batch=480):
    history = pd.DataFrame({"epoch": [1, 2], "epoch_seconds": [seconds * 0.6, seconds * 0.4]})
    metrics = {
        "target": target, "repeat": repeat, "seed": repeat - 1, "runner": "host",
        "cpus": CPUS[target], "gpus": 0,
        "backend": "tensorflow", "threads": 1, "batch_size": batch, "n_train": 1000,
        "n_test": 250, "epochs": 2, "training_seconds": seconds,
        "first_epoch_seconds": seconds * 0.6, "steady_epoch_seconds": seconds * 0.4,
        "mean_images_per_s": 1000 / (seconds * 0.4), "final_test_accuracy": accuracy,
        "best_test_accuracy": accuracy, "accuracy_target": 0.85,
        "time_to_accuracy_seconds": None, "parameter_count": 16_834_436,
        "telemetry": {"memory_mib_peak": memory_peak, "cpu_energy_j": "not measured (x)"},
        "provenance": {"cpu_model": "test cpu", "keras_backend": "tensorflow"},
    }  # fmt: skip
    return Run(f"train/{target}/repeat-{repeat}", metrics, history)


CPUS = {"cheap": 1, "fast": 4, "owned": 2}
TARGETS = {
    "cheap": {"hourly_usd": 1.5, "price_source": "x", "paper_system": "2-core laptop"},
    "fast": {"hourly_usd": 6.0},
    "owned": {},
}


def _tables():
    runs = [
        _run("cheap", 1, 7200.0, 0.80),
        _run("cheap", 2, 3600.0, 0.84),
        _run("cheap", 3, 5400.0, 0.82),
        _run("fast", 1, 1800.0, 0.83),
        _run("owned", 1, 900.0, 0.81),
    ]
    table = summary.run_table(runs, TARGETS, "hand-made")
    return table, summary.target_summary(table)


def test_cost_arithmetic_on_a_hand_made_history():
    table, summ = _tables()
    assert summary.cost_usd(7200.0, 1.5) == pytest.approx(3.0)  # 2 h x $1.5/h
    assert summary.cost_usd(100.0, None) is None
    assert table["cost_usd"].tolist()[:4] == pytest.approx([3.0, 1.5, 2.25, 3.0])
    assert pd.isna(table["cost_usd"].iloc[4])  # no price: no cost
    norm = summary.normalised_cost(summ, "cheap").set_index("target")
    # cheap: median 5400 s, $2.25; fast: 1800 s, $3.00 -> a third of the time, 4/3 the cost.
    assert norm.loc["cheap", "time_relative"] == pytest.approx(1.0)
    assert norm.loc["fast", "time_relative"] == pytest.approx(1 / 3)
    assert norm.loc["fast", "cost_relative"] == pytest.approx(3.0 / 2.25)
    assert "owned" not in norm.index
    with pytest.raises(ConfigError, match="'owned' has no hourly_usd"):
        summary.normalised_cost(summ, "owned")
    with pytest.raises(ConfigError, match="'gone': no such target ran"):
        summary.normalised_cost(summ, "gone")


def test_cost_policy_normalises_or_says_why_not():
    _, summ = _tables()
    norm, why = summary.cost_summary(summ, "cheap")
    assert why == "" and norm.set_index("target").loc["cheap", "cost_relative"] == 1.0
    skipped = "cost not normalised: base target cheap does not run here (skipped)"
    assert summary.cost_summary(summ, "", skipped) == (None, skipped)
    assert summary.cost_summary(summ, "") == (
        None,
        "set cost.base_target in the config to normalise",
    )
    unpriced = summ.assign(hourly_usd=np.nan)
    assert summary.cost_summary(unpriced, "")[1] == "no hourly_usd in the config: cost not computed"


def test_cost_base_checks():
    targets = [{"name": "a", "hourly_usd": 1.0}, {"name": "b"}]
    assert cost_base({}, targets, ["a"]) == ("", "")
    assert cost_base({"base_target": "a"}, targets, ["a", "b"]) == ("a", "")
    assert cost_base({"base_target": "a"}, targets, ["b"]) == (
        "",
        "cost not normalised: base target a does not run here (skipped)",
    )
    with pytest.raises(ConfigError, match="'b' has no hourly_usd"):
        cost_base({"base_target": "b"}, targets, ["b"])
    with pytest.raises(ConfigError, match="'c': no such target"):
        cost_base({"base_target": "c"}, targets, ["a"])


def test_target_summary_median_and_range_over_repeats():
    table, summ = _tables()
    assert table[["target", "repeat", "seed"]].values.tolist()[:3] == [
        ["cheap", 1, 0], ["cheap", 2, 1], ["cheap", 3, 2]
    ]  # fmt: skip
    cheap = summ.set_index("target").loc["cheap"]
    assert cheap["repeats"] == 3
    assert (cheap["training_s_min"], cheap["training_s_median"], cheap["training_s_max"]) == (
        3600.0, 5400.0, 7200.0
    )  # fmt: skip
    assert cheap["final_test_accuracy_median"] == pytest.approx(0.82)
    assert np.isnan(cheap["time_to_accuracy_s_median"]) and cheap["tta_reached"] == 0
    assert np.isnan(cheap["cpu_energy_j_median"])  # "not measured" stays unmeasured


def test_paper_comparison_values():
    table, summ = _tables()
    comp = summary.paper_comparison(summ, table, TARGETS).set_index("quantity")
    laptop = comp.loc["training time, 2-core laptop"]
    paper_ms = 309 * 60_000 / (49_024 * 20)
    assert laptop["paper"] == f"309 min ({paper_ms:.2f} ms/image-epoch)"
    assert laptop["ratio"] == pytest.approx((5400 * 1000 / 2000) / paper_ms)
    assert laptop["target"] == "cheap"
    desktop = comp.loc["training time, 4-core desktop"]
    assert desktop["paper"].startswith("134 min") and desktop["ours"] == "no matching target ran"
    assert pd.isna(desktop["ratio"])
    acc = comp.loc["test accuracy after ~20 epochs"]
    assert acc["paper"] == "~0.85" and acc["ratio"] == pytest.approx(0.82 / 0.85)
    params = comp.loc["parameters"]
    assert params["paper"] == "16,832,432 (as printed)"
    assert params["ours"] == "16,834,436 (counted by Keras)"
    mem = comp.loc["memory per image"]
    assert mem["paper"] == "~83 MB (estimate)"
    assert mem["ratio"] == pytest.approx(960 * 1.048576 / 480 / paper.MEMORY_MB_PER_IMAGE)

    assert comp.index[0] == "training time, 2-core laptop"  # no counts given: no count rows


def test_paper_comparison_puts_the_data_counts_first():
    table, summ = _tables()
    counts = {
        "total": 80,
        "train": {1: 16, 2: 16, 3: 16, 4: 16},
        "test": {1: 4, 2: 4, 3: 4, 4: 4},
        "source": {"labelled_frames": 240, "per_class": {1: 100, 2: 70, 3: 20, 4: 50}},
        "balanced_per_class": 20,
    }
    comp = summary.paper_comparison(summ, table, TARGETS, counts)
    assert list(comp["quantity"][:4]) == [
        "labelled frames",
        "frames per class after balancing",
        "balanced frames",
        "samples after rotation (train / test)",
    ]
    rows = comp.set_index("quantity")
    assert rows.loc["labelled frames", "ratio"] == pytest.approx(240 / 34_133)
    assert rows.loc["labelled frames", "note"] == "ours per cell count: 1: 100, 2: 70, 3: 20, 4: 50"
    assert rows.loc["balanced frames", "note"] == "train 64 / test 16 frames"
    samples = rows.loc["samples after rotation (train / test)"]
    assert samples["paper"] == "49,024 / 12,256 (as printed; 61,280 in all)"
    assert samples["ours"] == "1,000 / 250 (1,250 in all)"  # the hand-made runs' n_train/n_test
    assert "neither is a multiple of its 20 rotations" in samples["note"]


# --- the report on the offline config --------------------------------------------------------


@pytest.fixture(scope="module")
def report_run(tmp_path_factory):
    """The full offline config (its JAX target and sweep; host targets), tiny
    (workflow_helpers.TINY: the figures and tables are the point, not the model), host-1cpu
    repeated twice, then `snakemake --report`."""
    work = tmp_path_factory.mktemp("report")
    config = offline_config(work / "out", full=True, tiny=True)
    config["targets"][0]["repeats"] = 2
    config["targets"] = [t for t in config["targets"] if t["name"] != "host-2cpu"]
    # Two sweep points (the offline config's four differ only in what they cost here), each
    # batch within TINY's 112 training images.
    config["sweeps"] = [{"target": "host-1cpu", "batch_size": [28, 56]}]
    snakemake(work, config)
    snakemake(work, config, "--report", str(work / "report.zip"))
    return work, config, work / "out"


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_report_holds_every_figure_and_table(report_run):
    work, config, out = report_run
    with zipfile.ZipFile(work / "report.zip") as z:
        names = {Path(n).name for n in z.namelist()}
        html = z.read("report/report.html").decode()
    figures = [
        "comparison",
        "fig1_preprocessing",
        "fig4_test_accuracy",
        "fig5_6_training_time",
        "epoch_times",
        "throughput",
        "cost",
        "backends",
        "sweeps",
        "paper_vs_ours",
    ]
    tables = ["results_table", "summary_table", "cost_table", "paper_comparison", "provenance"]
    tables.append("comparison_table")
    assert {f"{n}.png" for n in figures} <= names
    assert {f"{n}.csv" for n in tables} <= names and "config.yaml" in names
    runs = [("host-1cpu", 1), ("host-1cpu", 2), ("host-1cpu-jax", 1)] + [
        (f"host-1cpu.bs{b}-t1", 1) for b in (28, 56)
    ]
    assert {f"{t}-repeat-{k}.png" for t, k in runs} <= names  # utilisation, one per run
    for caption in ("Paper vs reproduction", "MLPerf", "min-max", "relative to the base"):
        assert caption in html
    # The headline's caption (workflow/report/comparison.rst): ratios within a round.
    for caption in ("in the same round", "95 % t interval"):
        assert caption in html
    # The answer leads, numbered from 1 over the categories this report has (one workload:
    # no workload view, no study), with the cost beside the speed.
    categories = json.loads(html.split("var categories = ", 1)[1].split(";\n", 1)[0])
    assert sorted(categories) == [
        "1. The answer: each target's speed and cost relative to the base",
        "2. The paper's figures, reproduced",
        "3. Throughput, efficiency and epoch times (beyond the paper)",
        "4. Tables",
        "5. Utilisation of each run",
        "6. Configuration",
    ]
    answer = [Path(p).name for ps in categories[sorted(categories)[0]].values() for p in ps]
    assert {"comparison.png", "comparison_table.csv", "cost.png", "cost_table.csv"} == set(answer)


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_report_tables_rows_and_values(report_run):
    _, config, out = report_run
    fig = out / "figures"
    results = pd.read_csv(fig / "results_table.csv", keep_default_na=False)
    assert sorted(
        zip(results["target"], results["repeat"], results["seed"], strict=True)
    ) == sorted(
        [("host-1cpu", 1, 0), ("host-1cpu", 2, 1), ("host-1cpu-jax", 1, 0)]
        + [(f"host-1cpu.bs{b}-t1", 1, 0) for b in (28, 56)]
    )
    assert set(results["data"]) == {"SYNTHETIC frames (generated, not real embryos)"}
    assert "SYNTHETIC" in (fig / "summary_table.md").read_text()
    by = results.set_index(["target", "repeat"])
    assert by.loc[("host-1cpu-jax", 1), "backend"] == "jax"
    assert by.loc[("host-1cpu.bs28-t1", 1), "batch_size"] == 28
    assert by.loc[("host-1cpu.bs28-t1", 1), "threads"] == 1
    assert by.loc[("host-1cpu.bs28-t1", 1), "sweep"] == "host-1cpu"
    # cost = training time x the config's price, per run
    price = config["targets"][0]["hourly_usd"]
    for _, r in results.iterrows():
        assert float(r["cost_usd"]) == pytest.approx(float(r["training_s"]) / 3600 * price)
    # energy: RAPL and NVML are absent on CI machines; a reading would be a float
    rapl = Path("/sys/class/powercap").glob("intel-rapl:*")
    if not any(rapl):
        assert all(str(v).startswith("not measured (no RAPL") for v in results["cpu_energy_j"])
    assert set(results["gpu_energy_j"]) == {"no GPU"}
    summ = pd.read_csv(fig / "summary_table.csv", keep_default_na=False).set_index("target")
    assert summ.loc["host-1cpu", "repeats"] == 2
    host = results[results["target"] == "host-1cpu"]["training_s"].astype(float)
    assert summ.loc["host-1cpu", "training_s_median"] == pytest.approx(host.median())
    assert summ.loc["host-1cpu", "training_s_min"] == pytest.approx(host.min())
    comp = pd.read_csv(fig / "paper_comparison.csv", keep_default_na=False).set_index("quantity")
    assert comp.loc["parameters", "ours"] == f"{TINY_PARAMETERS:,} (counted by Keras)"
    assert comp.loc["training time, 2-core laptop", "target"] == "host-1cpu"
    assert comp.loc["training time, 4-core desktop", "ours"] == "no matching target ran"
    cost = pd.read_csv(fig / "cost_table.csv").set_index("target")
    assert cost.loc["host-1cpu", "cost_relative"] == pytest.approx(1.0)
    assert cost.loc["host-1cpu", "price_source"].startswith("example only")
    prov = pd.read_csv(fig / "provenance.csv", keep_default_na=False)
    assert set(prov["dataset_sha256"]) == {"synthetic"} and prov["git_commit"].str.len().min() > 6
    assert set(prov["host"]) == {socket.gethostname()}  # host runs: this host
    assert json.loads((out / "train/host-1cpu/repeat-2/metrics.json").read_text())["seed"] == 1


def test_a_sweep_point_named_like_a_target_says_which_clash():
    """Once unclear: a target named like a sweep point was reported as "point ... is
    given twice", without saying that it clashes with a configured target."""
    base = target_from_entry({"name": "t", "runner": "host", "cpus": 1})
    clash = target_from_entry({"name": "t.bs64-t1", "runner": "host", "cpus": 1})
    with pytest.raises(ConfigError, match=r"point t.bs64-t1 has the name of a target in targets:"):
        expand_sweeps([{"target": "t", "batch_size": [64], "repeats": 1}], {"t": base,
                      "t.bs64-t1": clash})  # fmt: skip
    twice = [{"target": "t", "batch_size": [64], "repeats": 1}] * 2
    with pytest.raises(ConfigError, match=r"sweeps\[1\]: point t.bs64-t1 is given twice"):
        expand_sweeps(twice, {"t": base})

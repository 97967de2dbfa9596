"""benchmarks/bench_scale.py: its counts per fraction, the configuration it lays
over the paper-synthetic one, its fits and tables on made-up numbers, and its measuring of a
process tree (peak memory, CPU) on a tiny command; the workflow runs themselves are not run
here."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import yaml

from embryo_bench.published import paper

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import load_benchmark  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_scale")


@pytest.fixture(scope="module")
def config():
    return yaml.safe_load((REPO / "config" / "paper-synthetic.yaml").read_text())


def test_counts_per_fraction(bench):
    full = (paper.LABELLED_FRAMES, paper.RAREST_CLASS_FRAMES)
    assert bench.scaled_counts(*full, 1.0) == full
    assert bench.scaled_counts(*full, 0.125) == (4267, 96)
    assert bench.scaled_counts(*full, 0.0001) == (3, 1)  # never no 3-cell frame at all
    with pytest.raises(ValueError):
        bench.scaled_counts(*full, 0.0)


def test_overlay_scales_the_data_and_keeps_one_target(bench, config):
    over = bench.overlay(config, 0.5, "runs/scale-0.5", "laptop-2cpu", 1)
    assert over["dataset"]["synthetic"] == {"total_frames": 17066, "three_cell_frames": 383}
    assert over["train"] == {"epochs": 1, "repeats": 1}
    laptop = next(t for t in config["targets"] if t["name"] == "laptop-2cpu")
    assert over["targets"] == [laptop] and over["cost"] == {"base_target": ""}
    host = bench.overlay(config, 1, "o", "laptop-2cpu", 2, "host", embryos=20, frame_size=96)
    assert host["targets"] == [{"name": "laptop-2cpu", "runner": "host", "cpus": 2}]
    assert host["dataset"]["synthetic"]["embryos"] == 20 and host["dataset"]["frame_size"] == 96
    for target in ("gpu-1", "no-such-target"):
        with pytest.raises(SystemExit, match="expected a CPU target"):
            bench.overlay(config, 1, "o", target, 1)


def test_fit_slopes_and_exponents(bench):
    x = [1.0, 2.0, 4.0, 8.0]
    linear = bench.fit(x, [3 * v for v in x])
    assert linear["slope"] == pytest.approx(3) and linear["intercept"] == pytest.approx(0, abs=1e-9)
    assert linear["exponent"] == pytest.approx(1) and linear["marginal_ratio"] == pytest.approx(1)
    assert not linear["superlinear"]
    # A fixed cost lowers the exponent of a linear cost; it never looks superlinear.
    assert bench.fit(x, [10 + v for v in x])["exponent"] < 1
    square = bench.fit(x, [v * v for v in x])
    assert square["exponent"] == pytest.approx(2) and square["superlinear"]
    assert square["marginal_ratio"] == pytest.approx(12 / 3)
    assert bench.fit(x, [1.0, 0.0, 2.0, 3.0])["exponent"] is None  # no logarithm of 0
    assert bench.fit([1.0, 2.0], [1.0, 2.0])["marginal_ratio"] is None
    with pytest.raises(ValueError, match="two distinct sizes"):
        bench.fit([2.0, 2.0], [1.0, 3.0])


def _row(stage, frames, **values):
    return {"stage": stage, "labelled_frames": frames, **values}


def test_fits_and_report_on_made_up_numbers(bench):
    rows = [
        _row("crop", 1000, net_wall_s=2.0, net_cpu_s=3.0, peak_job_rss_mib=100.0, disk_mib=5.0),
        _row("crop", 4000, net_wall_s=8.0, net_cpu_s=12.0, peak_job_rss_mib=100.0, disk_mib=20.0),
        _row("index", 1000, net_wall_s=1.0, net_cpu_s=1.0, peak_job_rss_mib=50.0, disk_mib=1.0),
        _row("index", 4000, net_wall_s=16.0, net_cpu_s=1.0, peak_job_rss_mib=None, disk_mib=4.0),
        _row("figures", 1000, net_wall_s=5.0, net_cpu_s=5.0, peak_job_rss_mib=1.0, disk_mib=1.0),
    ]
    training = [
        {"train_images": 2000, "first_epoch_seconds": 20.0, "trainer_peak_mib": 900.0},
        {"train_images": 8000, "first_epoch_seconds": 50.0, "trainer_peak_mib": None},
    ]
    fitted = {(f["stage"], f["quantity"]): f for f in bench.fits(rows, training)}
    crop = fitted["crop", "net_wall_s"]
    assert crop["slope"] == pytest.approx(2.0) and crop["per"] == "s per 1,000 frames"
    assert crop["exponent"] == pytest.approx(1.0) and not crop["superlinear"]
    assert fitted["index", "net_wall_s"]["exponent"] == pytest.approx(2.0)
    assert fitted["index", "net_wall_s"]["superlinear"]
    assert ("index", "peak_job_rss_mib") not in fitted  # measured at one size only
    assert not any(stage == "figures" for stage, _ in fitted)
    epoch = fitted["train", "first_epoch_seconds"]
    assert epoch["slope"] == pytest.approx(5.0) and epoch["per"] == "s per 1,000 images"
    assert ("train", "trainer_peak_mib") not in fitted
    text = bench.report(rows, training, list(fitted.values()), "# made up")
    assert (
        text.startswith("# made up") and "Growing faster than linearly: index net_wall_s." in text
    )
    assert "| crop | net_wall_s | 2.00 | s per 1,000 frames |" in text
    assert "| 1,000 | - | crop |" in text  # selected frames not given: "-"
    quiet = bench.report(rows[:2], [], bench.fits(rows[:2], []), "#")
    assert "Nothing grows faster than linearly" in quiet


def test_measured_run_sees_a_jobs_peak_memory_and_cpu(bench, tmp_path):
    # A stand-in job: an argument of its command line is embryo_bench.cli, as a workflow job's
    # (python3 -m embryo_bench.cli ...) is; it holds 80 MiB for a while and burns CPU. It
    # prints a job line as Snakemake's log does.
    code = (
        "import time; b = bytearray(80 << 20); b[::4096] = b'x' * len(b[::4096]); "
        "t = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
        "time.sleep(0.4); print('rule crop:'); print('localrule all:')"
    )
    job = [sys.executable, "-c", code, "embryo_bench.cli"]
    m = bench.measured_run(job, tmp_path, tmp_path / "log", 0.05)
    assert m["returncode"] == 0 and m["job_processes"] == 0  # the command itself is no job
    assert m["jobs"] == 1  # from its log: rule crop, not the rule all
    # Run by a shell that the command starts, as Snakemake runs jobs: the shell names the
    # module inside one argument and is not counted.
    shell = ["/bin/sh", "-c", '"$0" -c "$1" embryo_bench.cli; true', sys.executable, code]
    starter = [sys.executable, "-c", f"import subprocess; subprocess.run({shell!r}, check=True)"]
    m = bench.measured_run(starter, tmp_path, tmp_path / "log", 0.05)
    assert m["returncode"] == 0 and m["job_processes"] == 1
    assert 80 <= m["peak_job_rss_mib"] < 200 and m["peak_jobs_rss_sum_mib"] >= 80
    assert m["cpu_s"] >= 0.45 and m["wall_s"] >= 0.9
    # A process first seen before it becomes the job (a shell that waits, then execs the
    # job in its place: a busy machine's fork-to-exec gap, drawn out) is counted once it is.
    late = ["/bin/sh", "-c", 'sleep 0.5; exec "$0" -c "$1" embryo_bench.cli', sys.executable, code]
    starter = [sys.executable, "-c", f"import subprocess; subprocess.run({late!r}, check=True)"]
    m = bench.measured_run(starter, tmp_path, tmp_path / "log", 0.05)
    assert m["returncode"] == 0 and m["job_processes"] == 1


def test_disk_and_figure(bench, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"\1" * (1 << 20))
    assert 1.0 <= bench.disk_mib([tmp_path / "d", tmp_path / "missing"]) < 1.1
    rows = [
        _row("crop", n, net_wall_s=n / 500, net_cpu_s=n / 400, peak_job_rss_mib=90.0, disk_mib=1.0)
        for n in (1000, 2000)
    ]
    training = [{"train_images": 20 * n, "first_epoch_seconds": n / 100} for n in (1000, 2000)]
    bench.figure(rows, training, bench.fits(rows, training), tmp_path / "scale", "SYNTHETIC")
    assert (tmp_path / "scale.png").stat().st_size > 10_000
    assert (tmp_path / "scale.pdf").exists() and not math.isnan(rows[0]["net_wall_s"])

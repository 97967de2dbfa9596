"""Stopping, killing and disturbing a training for real: a killed rerun, SIGKILL and SIGINT of
snakemake, a full disk at model.save, a CPU hog on the run's core. Split from
tests/test_workflow.py so that the two pytest-xdist workers share the workflow tests."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import yaml
from conftest import copy_run
from workflow_helpers import (
    job_counts,
    local_config,
    snakemake,
    snakemake_command,
    synthetic_db,
    train_command,
    write_spec,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)"),
]


def _ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie not yet reaped)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _trainer_pid(snakemake_proc: subprocess.Popen) -> int | None:
    """The pid of the `embryo_bench.cli train` process under ``snakemake_proc``, if any."""
    try:
        children = psutil.Process(snakemake_proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    for child in children:
        try:
            if "embryo_bench.cli" in child.cmdline() and "train" in child.cmdline():
                return child.pid
        except psutil.NoSuchProcess:
            continue
    return None


RUN = "out/train/host-1cpu/repeat-1"  # the run the tiny config's host-1cpu target makes


def _training(cfg: Path, cwd: Path, epochs_done: int = 0, **popen):
    """Start snakemake on ``cfg`` in ``cwd`` (``popen`` passed on) and wait until its host
    trainer has written progress.csv with ``epochs_done`` epochs; returns (the snakemake
    Popen, the trainer's pid). Fails, with snakemake's output, if that does not happen
    within 600 s."""
    proc = subprocess.Popen(
        snakemake_command(cfg), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen
    )
    progress = cwd / RUN / "progress.csv"
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if progress.exists() and len(progress.read_text().splitlines()) >= 1 + epochs_done:
            trainer = _trainer_pid(proc)
            if trainer is not None:
                return proc, trainer
        time.sleep(0.05)
    proc.kill()
    out = proc.communicate()[0].decode()
    raise AssertionError(f"no trainer with {epochs_done} epochs done:\n{out[-3000:]}")


def test_a_killed_rerun_is_demanded_again_and_no_table_mixes_settings(tiny_run, tmp_path):
    # A run that completed, then a rerun under a new setting whose trainer
    # is SIGKILLed mid-run (as an OOM kill would). The next invocation must demand the run
    # and the figures again, and until then the recorded configuration must still be the one
    # the tables were made from (a rule of its own wrote the new settings beside old tables).
    work, config, _ = tiny_run
    work, config = copy_run(work, tmp_path / "work"), copy.deepcopy(config)  # a finished run
    assert "Nothing to be done" in snakemake(work, config, "-n").stdout
    figures = work / "out/figures"
    table = (figures / "results_table.csv").read_bytes()

    config["train"]["epochs"] = 400
    cfg = work / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    proc, killed = _training(cfg, work, epochs_done=1)
    os.kill(killed, signal.SIGKILL)
    out = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode != 0, out[-3000:]

    jobs = job_counts(snakemake(work, config, "-n").stdout)
    assert jobs.get("train", 0) >= 1 and jobs.get("figures") == 1, jobs
    recorded = yaml.safe_load((figures / "config.yaml").read_text())
    assert recorded["train"]["epochs"] == 1
    assert (figures / "results_table.csv").read_bytes() == table


def test_the_host_trainer_ends_with_a_killed_snakemake(tmp_path):
    # After SIGKILL of snakemake the host trainer trained on as an orphan
    # and wrote its outputs. Now it ends at once and writes no metrics.json.
    config = local_config(tmp_path, synthetic_db(tmp_path))
    config["train"]["epochs"] = 400
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    proc, trainer = _training(cfg, tmp_path)
    run_dir = tmp_path / RUN
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    deadline = time.monotonic() + 10
    while not _ended(trainer) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = not _ended(trainer)
    if alive:
        os.kill(trainer, signal.SIGKILL)
    assert not alive, "the trainer outlived snakemake by 10 s"
    # (the kernel's SIGKILL ends it before it can say so in its log)
    assert not (run_dir / "metrics.json").exists()
    assert not (run_dir / "history.csv").exists()


def test_sigint_to_snakemake_alone_stops_the_training_promptly(tmp_path):
    # `kill -INT <snakemake>` made Snakemake wait for every epoch, then
    # report failure and mark the finished outputs incomplete. The workflow forwards it to
    # the running jobs, as a terminal's Ctrl-C reaches them: the run stops at once, no output.
    config = local_config(tmp_path, synthetic_db(tmp_path))
    config["train"]["epochs"] = 400
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    proc, trainer = _training(
        cfg,
        tmp_path,
        start_new_session=True,  # the signal goes to snakemake alone, not to a group
        # As from a terminal: SIGINT not ignored. Under a script's background job (e.g.
        # `.ci/run &`) it arrives ignored, and the workflow then leaves SIGINT alone.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    run_dir = tmp_path / RUN
    os.kill(proc.pid, signal.SIGINT)
    try:
        out = proc.communicate(timeout=60)[0].decode()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("snakemake still ran 60 s after SIGINT") from None
    assert proc.returncode != 0
    assert _ended(trainer)
    assert not (run_dir / "metrics.json").exists(), out[-3000:]


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
def test_a_full_disk_at_model_save_is_named_and_leaves_no_outputs(tiny_run, small_device):
    # A full disk during model.save ended in a raw OSError traceback.
    _, config, out = tiny_run
    target = next(t for t in config["targets"] if t["name"] == "host-1cpu")
    spec_file = small_device / "run.json"
    write_spec(spec_file, config, target, epochs=1)
    run_dir = small_device / "run"
    proc = subprocess.run(
        train_command(spec_file, out, run_dir), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"embryo-bench: error: {run_dir}/model.keras: not enough space" in proc.stderr
    assert "MiB needed" in proc.stderr and "Traceback" not in proc.stderr
    left = sorted(p.name for p in run_dir.iterdir())
    assert not {"model.keras", "history.csv", "metrics.json", "settings.json"} & set(left)
    assert not [n for n in left if n.startswith(".model.keras")]


def _train_host(config, out, run_dir, spec_file):
    proc = subprocess.run(train_command(spec_file, out, run_dir), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((run_dir / "metrics.json").read_text()), proc.stderr


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.alone
def test_a_cpu_hog_on_the_runs_core_flags_it_interfered_and_it_still_counts(tiny_run, tmp_path):
    """The interference flag end to end: the same 1-cpu run, without and then with a busy
    process pinned to its core; the second is flagged interfered, naming the other
    processes' share of its core, and that share is well above the first run's. The first
    need not be quiet: whatever else the machine runs beside the test (CI's other jobs, a
    build, a browser) is measured too, and its flag follows its own measurement (its probes
    may drift as well: this machine's speed moves by more than 10 % in seconds on its own);
    both count in the target's statistics. Both carry the probes, efficiency and three
    timings."""

    from embryo_bench.recording.hardware import run_cores
    from embryo_bench.reporting.runs import load_runs
    from embryo_bench.reporting.stability import assess, thresholds
    from embryo_bench.reporting.summary import run_table, target_summary

    _, config, out = tiny_run
    target = {"name": "host-1cpu", "runner": "host", "cpus": 1}
    write_spec(tmp_path / "run.json", config, target, epochs=5)  # seconds of 1 Hz samples
    quiet, log = _train_host(config, out, tmp_path / "quiet", tmp_path / "run.json")
    core = run_cores(1)[0]
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, [{core}])\nwhile True: pass"]
    )
    try:
        noisy, _ = _train_host(config, out, tmp_path / "noisy", tmp_path / "run.json")
    finally:
        hog.kill()
        hog.wait()
    limits = thresholds()
    calm, busy = assess(quiet, limits), assess(noisy, limits)
    assert "interfered" in busy["flags"]
    assert any(r.startswith("other processes used") for r in busy["reasons"]), busy
    share = noisy["telemetry"]["interference"]["other_cpu_share_mean"]
    calm_share = quiet["telemetry"]["interference"]["other_cpu_share_mean"]
    assert 0.2 < share <= 1.0  # the hog got a large part of the one core
    # The hog, not the machine's other work, made the difference (a busy machine raises both).
    assert share > calm_share + 0.15, (calm_share, share)
    calm_by_share = calm_share > limits["other_cpu_share"]
    assert any(r.startswith("other processes used") for r in calm["reasons"]) == calm_by_share
    calm_interfered = "interfered" in calm["flags"]
    for run in ("quiet", "noisy"):  # a run folder holds its run.json, as in the workflow
        shutil.copy(tmp_path / "run.json", tmp_path / run / "run.json")
    table = run_table(load_runs([tmp_path / "quiet", tmp_path / "noisy"]), {}, "tiny", limits)
    assert ["interfered" in f for f in table["flags"]] == [calm_interfered, True]
    (summ,) = target_summary(table).to_dict("records")
    assert (summ["repeats"], summ["interfered_runs"]) == (2, 1 + calm_interfered)
    rates = [m["mean_images_per_s"] for m in (quiet, noisy)]
    assert summ["images_per_s_median"] == pytest.approx(np.median(rates))  # both counted
    for m in (quiet, noisy):
        assert m["calibration"]["before"]["gflops"] > 0 and m["calibration"]["after"]["gflops"] > 0
        assert 0 < m["flops"]["efficiency"] < 1.5
        assert m["flops"]["training_flops_per_image"] == 27_205_632  # 3 x forward at 16 px
        assert m["wall_seconds"] >= m["training_seconds"] > 0 and m["eval_seconds_total"] > 0
        # Keras's "auto" leaves XLA off for TensorFlow on a CPU-only machine.
        assert m["provenance"]["compute"]["jit_compile"] is False
    # One progress line per epoch in the log; progress.csv is gone once history.csv is there.
    assert len(re.findall(r"epoch \d+/\d+: .* images/s, ETA", log)) == quiet["epochs"]
    assert not (tmp_path / "quiet/progress.csv").exists()
    assert os.path.getsize(tmp_path / "quiet/history.csv") > 0

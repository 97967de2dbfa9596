"""Baselines and calibrate checked before use: a ``stability.baseline``
that is missing, garbled, of a newer format or another layout, with too few probes, taken
on another machine or with settings no target has is one line at plan time (check-config and
the workflow say the same); at figures time a baseline judges only the runs it fits; and
``embryo-bench calibrate`` checks its arguments before it probes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from workflow_helpers import offline_config, snakemake_command

from embryo_bench.cli import main
from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan
from embryo_bench.recording.baseline import load_baseline
from embryo_bench.recording.calibrate import (
    BASELINE_PROBES,
    PROBE_METHOD,
    drift_limit,
    machine_baseline,
)
from embryo_bench.recording.hardware import this_machine
from embryo_bench.recording.provenance import collect
from embryo_bench.reporting.runs import run_machine
from embryo_bench.reporting.stability import assess, thresholds
from embryo_bench.training.backend import backend_name, framework_versions
from embryo_bench.training.noise import check_calibration
from embryo_bench.vocabulary.layout import BASELINE_FORMAT

SETTINGS = {"threads": 1, "cpus": 1, "cores": [0], "backend": "tensorflow"}


def _baseline(probes: int = 40, seconds: float = 2.0, **changes) -> dict:
    """A machine baseline as `embryo-bench calibrate` writes it, taken on this machine with
    one thread on one cpu (the offline config's host-1cpu), made without probing."""
    rng = np.random.default_rng(0)
    probed = [{"gflops": float(g), "seconds": seconds} for g in rng.normal(60, 2, probes)]
    return {
        "format": BASELINE_FORMAT,
        **machine_baseline(probed),
        "settings": SETTINGS,
        "method": PROBE_METHOD,
        "machine": this_machine(),
        "taken_unix_s": 1_700_000_000.0,
        **changes,
    }


def _config(tmp_path: Path, baseline: str, two_cpus: bool = False) -> Path:
    """The tiny offline config (host-1cpu; with ``two_cpus`` also host-2cpu) naming
    ``baseline``, written as a file."""
    config = offline_config(tmp_path / "out", tiny=True)
    if two_cpus:
        config["targets"].append({**config["targets"][0], "name": "host-2cpu", "cpus": 2})
    config["stability"] = {"baseline": baseline}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _check_config(path: Path, capsys) -> tuple[int, list[str], list[str]]:
    code = main(["check-config", str(path)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def _write(tmp_path: Path, content) -> str:
    path = tmp_path / "machine.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


HOW = "take one on the machine that runs the targets with `embryo-bench calibrate --out"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "file not found; " + HOW),
        ('{"probes": 40, "changes": [', "not valid JSON (Expecting value: line 1 column 28"),
        ([1, 2], "a JSON list, not a machine baseline; " + HOW),
        ({"probes": 40}, "not a machine baseline ('probe_seconds' is a required property); "),
        (
            _baseline(changes=[{"lag_s": "2 s", "pairs": 39, "p99": 0.1}]),
            "not a machine baseline ('2 s' is not of type 'number' at changes/0/lag_s); ",
        ),
        (
            _baseline(format=BASELINE_FORMAT + 1),
            f"format {BASELINE_FORMAT + 1} is newer than this embryo-bench reads "
            f"({BASELINE_FORMAT}); read it with the newer embryo-bench that wrote it",
        ),
        (
            _baseline(probes=8),
            "its 8 probes give no lag with 10 probe pairs, so no drift limit at all; take at "
            "least 11 (`embryo-bench calibrate --probes 100 --out",
        ),
        (
            {**_baseline(), "probes": 5},  # a hand edit: its lags claim more pairs than that
            "its 5 probes give no lag with 10 probe pairs, so no drift limit at all; take at "
            "least 11",
        ),
        (_baseline(changes=[]), "it lists no lag (changes: []), so no drift limit; " + HOW),
        (
            _baseline(changes=[{"lag_s": 2.0, "pairs": 39, "p99": float("nan")}]),
            "changes/0/p99: nan: expected a finite number, not NaN or infinity; " + HOW,
        ),
        (_baseline(method="float64 512x512 matmul"), "probes of another method (float64 512"),
        (
            _baseline(machine={**this_machine(), "hostname": "elsewhere"}),
            f"taken on another machine than this one (host elsewhere, not "
            f"{this_machine()['hostname']}), whose probe noise is not this machine's",
        ),
        (
            _baseline(machine={**this_machine(), "cpu_flags": ["made_up_flag"]}),
            "taken on another machine than this one (CPU flags made_up_flag only in the baseline's",
        ),
        (
            _baseline(settings={**SETTINGS, "threads": 2, "cpus": 2}),
            "fits no running target, so it would judge no run (host-1cpu: taken with "
            "tensorflow, 2 threads on 2 cpus, the target with tensorflow, 1 thread on 1 cpu); "
            "take one with a target's --backend, --threads and --cpus, or set "
            "stability.baseline: ''",
        ),
        (
            _baseline(settings={**SETTINGS, "backend": "jax"}),
            "fits no running target, so it would judge no run (host-1cpu: taken with jax, 1 "
            "thread on 1 cpu, the target with tensorflow, 1 thread on 1 cpu); take one",
        ),
    ],
    ids=[
        "missing",
        "garbled",
        "a list",
        "another layout",
        "a lag not a number",
        "newer format",
        "too few probes",
        "fewer probes than its lags",
        "no lag",
        "a NaN limit",
        "another method",
        "another host",
        "other CPU flags",
        "other threads and cpus",
        "another backend",
    ],  # fmt: skip
)
def test_a_baseline_that_cannot_be_used_is_one_line_in_check_config(
    tmp_path, capsys, content, expected
):
    baseline = _write(tmp_path, content) if content is not None else str(tmp_path / "none.json")
    config = _config(tmp_path, baseline)
    code, out, err = _check_config(config, capsys)
    assert (code, out) == (2, []) and len(err) == 1, err
    assert err[0].startswith(f"embryo-bench: error: {config}: stability.baseline {baseline}: ")
    assert expected in err[0]


def test_a_baseline_that_fits_says_which_runs_it_judges(tmp_path, capsys):
    baseline = _write(tmp_path, _baseline(probes=40, seconds=2.0))
    config = _config(tmp_path, baseline, two_cpus=True)
    code, out, err = _check_config(config, capsys)
    assert (code, err) == (0, [])
    assert out == [
        f"{config}: stability.baseline {baseline}: judges runs of 1-4 s and 5-120 s (its lags "
        "2, 10, 30, 60 s: a run by the lag nearest its length, within 2 x of it); other runs' "
        "drift by stability.probe_change",
        f"{config}: stability.baseline {baseline}: not for target host-2cpu (taken with "
        "tensorflow, 1 thread on 1 cpu, the target with tensorflow, 2 threads on 2 cpus); its "
        "drift is judged by stability.probe_change",
        f"{config}: valid (2 targets, 1 workloads, outdir {tmp_path / 'out'})",
    ]
    # A baseline of format 0 (written before versions, flags and cores were recorded).
    old = _baseline(machine={k: this_machine()[k] for k in ("hostname", "cpu_model")})
    del old["format"]
    assert load_baseline(_write(tmp_path, old))["machine"]["cpu_model"] == this_machine()[
        "cpu_model"]  # fmt: skip
    # Where the targets run on a cluster's nodes, this machine is not compared.
    config = yaml.safe_load(_config(tmp_path, _write(tmp_path, _baseline(machine={
        **this_machine(), "hostname": "node-7"}))).read_text())  # fmt: skip
    plan = Plan.from_config({**config, "hardware_check": "slurm"}, probe=lambda t: None)
    assert plan.baseline["machine"]["hostname"] == "node-7"
    # Nor in a job a cluster runs on a node (the plan was checked where Snakemake started).
    plan = Plan.from_config(config, hardware_check="none", on_this_machine=False)
    assert plan.baseline["machine"]["hostname"] == "node-7"


def test_a_baseline_for_targets_on_a_remote_daemon_alone_says_so(tmp_path, capsys):
    """Before, every misfit was blamed on settings: "taken with tensorflow, 1 thread on 1 cpu
    on this machine, as no running target runs (remote-1cpu: tensorflow, 1 thread on 1 cpu
    on ssh://bench@gpu-box); take it with a target's --backend, --threads and --cpus", the
    same settings."""
    baseline = _write(tmp_path, _baseline())
    config = yaml.safe_load(_config(tmp_path, baseline).read_text())
    config["targets"] = [{"name": "remote-1cpu", "runner": "docker", "cpus": 1,
                          "docker_host": "ssh://bench@gpu-box"}]  # fmt: skip
    config["hardware_check"] = "none"
    config.pop("cost", None)  # its base target is not among these
    path = tmp_path / "remote.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = _check_config(path, capsys)
    assert (code, out) == (2, []) and err == [
        f"embryo-bench: error: {path}: stability.baseline {baseline}: fits no running target, "
        "so it would judge no run (remote-1cpu: runs on the daemon at ssh://bench@gpu-box, "
        "another machine); a baseline judges no run on a remote daemon; set "
        "stability.baseline: ''"]  # fmt: skip


def test_the_workflow_refuses_a_missing_baseline_before_any_job(tmp_path):
    # Before: check-config said valid and the workflow ran, keeping the old figures (the
    # figures job, whose input was missing, was left out of the run without a word).
    config = _config(tmp_path, str(tmp_path / "none.json"))
    proc = subprocess.run(
        snakemake_command(config, "-n"), cwd=tmp_path, capture_output=True, text=True
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in said.splitlines() if "stability.baseline" in line]
    missing = tmp_path / "none.json"
    assert lines == [f"stability.baseline {missing}: file not found; {HOW} {missing}`"], said
    # Snakemake names where its WorkflowError was raised (common.smk), and nothing deeper.
    assert "Traceback" not in said and "src/embryo_bench/" not in said, said[-3000:]
    assert not (tmp_path / "out").exists()


# --- at figures time: the baseline judges only the runs it fits ----------------------------


def _run(change: float, seconds: float, **changes) -> dict:
    """A run's metrics.json as the drift flag reads it: one thread on one cpu on this
    machine (the baselines' settings), probes ``change`` apart, ``seconds`` long."""
    return {
        "backend": "tensorflow", "threads": 1, "cpus": 1, "gpus": 0, "diverged": None,
        "provenance": this_machine(),
        "flops": {"probe_change": change},
        "calibration": {"before": {"gflops": 60.0}, "after": {"gflops": 60.0 * (1 - change)}},
        "wall_clock": {"started_unix_s": 100.0, "ended_unix_s": 100.0 + seconds},
        **changes,
    }  # fmt: skip


def test_a_runs_provenance_records_the_machine_as_a_baseline_does():
    """The figures compare a baseline's machine with a run's (run_machine of its
    provenance): both are hardware.this_machine's keys and values."""
    prov = collect(0, {}, backend_name(), framework_versions())
    assert run_machine({"provenance": prov}) == this_machine()


def test_with_a_baseline_a_run_drifts_only_beyond_the_machines_own_noise():
    rng = np.random.default_rng(0)
    probes = [{"gflops": g, "seconds": 2.0} for g in 60.0 * np.exp(rng.normal(0, 0.09, 200))]
    noisy_machine = _baseline(changes=machine_baseline(probes)["changes"])
    limits = thresholds()
    run = _run(0.15, 50.0)  # over the 10 % default, inside this machine's noise at 50 s
    assert assess(run, limits)["flags"] == ["drifted"]
    limit, lag = drift_limit(noisy_machine, 50.0)
    assert limit > 0.15 and lag == pytest.approx(60.0, abs=2.1)
    assert "drifted" not in assess(run, limits, noisy_machine)["flags"]
    far = assess(_run(limit + 0.05, 50.0), limits, noisy_machine)
    assert far["flags"] == ["drifted"]
    assert "this machine's quiet probes 60 s apart differ by up to that" in far["reasons"][0]


def test_a_baseline_judges_only_the_runs_it_fits():
    base = _baseline(changes=[{"lag_s": 60.0, "pairs": 30, "p99": 0.30, "median": 0.1}])
    limits = thresholds()
    # A 50 s run on this machine with the baseline's settings: its 60 s lag judges it.
    fits = assess(_run(0.2, 50.0), limits, base)
    assert fits["flags"] == [] and not [u for u in fits["unchecked"] if "baseline" in u]
    drifted = assess(_run(0.4, 50.0), limits, base)
    assert "this machine's quiet probes 60 s apart" in drifted["reasons"][0]
    # Each misfit: judged by probe_change (10 %), and said so.
    for run, why in [
        (_run(0.2, 500.0), "its lag nearest the run's 500 s is 60 s, not within 2 x"),
        (_run(0.2, 20.0), "its lag nearest the run's 20 s is 60 s, not within 2 x"),
        (
            _run(0.2, 50.0, threads=2, cpus=2),
            "taken with tensorflow, 1 thread on 1 cpu, the run with tensorflow, 2 threads "
            "on 2 cpus",
        ),
        (
            _run(0.2, 50.0, gpus=1),
            "taken with tensorflow, 1 thread on 1 cpu, the run with tensorflow, 1 thread on "
            "1 cpu, 1 GPU",
        ),
        (
            _run(0.2, 50.0, container={"daemon": {"name": "gpu-box"}}),
            f"taken on another machine: host {this_machine()['hostname']}, not gpu-box",
        ),
        (_run(0.2, 50.0, wall_clock={}), "the run's length is not recorded"),
    ]:
        verdict = assess(run, limits, base)
        assert verdict["flags"] == ["drifted"], (why, verdict)
        assert verdict["reasons"][0].endswith(
            f"limit 10%; the machine baseline does not fit this run: {why})"
        ), verdict["reasons"]
        assert f"machine baseline ({why})" in verdict["unchecked"]


# --- embryo-bench calibrate checks its arguments before probing --------------------------


def _calibrate(*args: str, cwd: Path):
    cmd = [sys.executable, "-m", "embryo_bench.cli", "calibrate", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--backend", "nope"], "--backend 'nope': expected one of tensorflow, jax, torch"),
        (["--backend", "torch"], "--backend torch: not installed here (no Python package"),
        (["--cpus", "4096"], "--cpus 4096: this process may use"),
        (
            ["--threads", "2", "--cpus", "1"],
            "--threads 2 --cpus 1: more threads than cpus would share cores (a run's threads "
            "are at most its cpus)",
        ),
        (["--threads", "0"], "--threads 0 --cpus 1: both must be >= 1"),
        (
            ["--probes", "10"],
            "--probes 10: a baseline gives the change between probes a lag "
            "apart only from 10 pairs that far apart, so it needs at least 11 probes "
            f"(default {BASELINE_PROBES})",
        ),
        (["--seconds", "0"], "--seconds 0.0: a probe's length must be > 0 s"),
        (["--out", "missing/m.json"], "--out missing/m.json: folder missing does not exist"),
        (["--out", "."], "--out .: a folder; give a file name"),
        (["--out", "/proc/m.json"], "--out /proc/m.json: cannot write in /proc ("),
    ],
    ids=[
        "backend",
        "not installed",
        "cpus",
        "threads > cpus",
        "threads 0",
        "probes",
        "seconds",
        "no folder",
        "a folder",
        "unwritable",
    ],  # fmt: skip
)
def test_calibrate_refuses_bad_arguments_before_probing(tmp_path, args, expected):
    if args[:2] == ["--backend", "torch"] and importlib.util.find_spec("torch") is not None:
        # Installed here (CI installs it): the same check, with torch hidden from it.
        def hidden(name, *rest):
            return None if name == "torch" else find_spec(name, *rest)

        find_spec = importlib.util.find_spec
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(importlib.util, "find_spec", hidden)
            with pytest.raises(ConfigError) as err:
                check_calibration(12, 0.05, 1, 1, "torch", tmp_path / "m.json")
        assert str(err.value).startswith(f"calibrate: {expected}"), err.value
        assert list(tmp_path.iterdir()) == []
        return
    out = [] if "--out" in args else ["--out", "m.json"]
    proc = _calibrate(*args, *out, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"embryo-bench: error: calibrate: {expected}"), line
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_baseline_calibrate_writes_is_used_here(tmp_path, capsys):
    out = tmp_path / "machine.json"
    proc = _calibrate("--probes", "12", "--seconds", "0.05", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("12 probes of 0.") and "written" in proc.stdout
    written = json.loads(out.read_text())
    assert written["format"] == BASELINE_FORMAT and written["machine"] == this_machine()
    assert written["settings"]["backend"] == "tensorflow" and written["method"] == PROBE_METHOD
    assert (written["settings"]["threads"], len(written["settings"]["cores"])) == (1, 1)
    assert written["probes"] == len(written["gflops"]) == 12
    assert written["changes"][0]["pairs"] >= 10
    code, lines, err = _check_config(_config(tmp_path, str(out)), capsys)
    assert (code, err) == (0, []) and lines[-1].endswith("valid (1 targets, 1 workloads, outdir "
                                                         f"{tmp_path / 'out'})")  # fmt: skip

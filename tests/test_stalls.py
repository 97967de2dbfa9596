"""A frozen trainer is a stall: a host run's sampler is a thread of the
trainer, so ``kill -STOP`` freezes it too and the frozen time is a gap between its telemetry
samples, which counts as stalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pandas as pd
import pytest
from workflow_helpers import train_command, write_spec

from embryo_bench.recording.telemetry import COLUMNS, interference
from embryo_bench.reporting.stability import assess, thresholds


def _telemetry(times, cpu) -> pd.DataFrame:
    return pd.DataFrame({"time_s": times, "cpu_percent": cpu}, columns=COLUMNS)


def test_a_gap_between_samples_is_stalled_time():
    # A 1 Hz sampler frozen for about 6 s: samples at 1..5 s, then 11.2 s (the sample after
    # the gap is busy: the trainer worked before it froze and works again).
    times = [1.0, 2.0, 3.0, 4.0, 5.0, 11.2, 12.2, 13.2]
    seen = interference(_telemetry(times, [95.0] * 8), cores=1)
    assert (seen["gaps"], seen["interval_s"]) == (1, 1.0)
    assert seen["longest_gap_s"] == pytest.approx(6.2)
    assert seen["longest_stall_s"] == pytest.approx(5.2)  # the gap less one interval
    assert seen["longest_stall_frozen_s"] == pytest.approx(5.2) and seen["gaps_stall"]
    assert seen["stall_samples"] == 0  # no sample was idle
    # Idle samples next to the gap add to it: one stretch of stalled time.
    idle = interference(_telemetry(times, [95, 95, 95, 95, 2, 95, 1, 95]), cores=1)
    assert idle["longest_stall_s"] == pytest.approx(1.0 + 5.2 + 1.0)
    assert idle["longest_stall_frozen_s"] == pytest.approx(5.2)
    # Sampled from outside (a container), a gap is the daemon's stream running late.
    outside = interference(_telemetry(times, [95.0] * 8), cores=1, gaps_stall=False)
    assert outside["longest_stall_s"] == 0.0 and outside["gaps"] == 1
    assert (outside["gaps_stall"], outside["longest_stall_frozen_s"]) == (False, 0.0)
    # Steady samples: no gap, no stall (a sample 1.4 intervals late is not a gap).
    steady = interference(_telemetry([1.0, 2.0, 3.4, 4.4, 5.4], [95.0] * 5), cores=1)
    assert (steady["gaps"], steady["longest_stall_s"]) == (0, 0.0)


def test_a_frozen_run_is_flagged_interfered_with_the_frozen_time():
    seen = interference(_telemetry([1.0, 2.0, 3.0, 9.2, 10.2], [95.0] * 5), cores=1)
    metrics = {"diverged": None, "telemetry": {"interference": seen}}
    verdict = assess(metrics, thresholds())
    assert verdict["flags"] == ["interfered"]
    assert verdict["reasons"] == [
        "stalled 5 s frozen (telemetry samples, due every 1.0 s, came 5.2 s late); limit 3 s"
    ]


def _stalled(times, cpu, gaps_stall=True) -> list[str]:
    seen = interference(_telemetry(times, cpu), cores=1, gaps_stall=gaps_stall)
    verdict = assess({"diverged": None, "telemetry": {"interference": seen}}, thresholds())
    return [r for r in verdict["reasons"] if r.startswith("stalled")]


def test_a_stall_is_called_frozen_only_where_gaps_counted_and_made_it():
    """Before, a long gap anywhere in a run's samples made its stall "frozen or idle (no
    telemetry sample for 6.2 s, ...)": in a container run, whose gaps are the daemon's
    stream and never count, and in a host run whose longest stall was idle samples elsewhere."""
    gap = [1.0, 2.0, 3.0, 4.0, 5.0, 11.2, 12.2, 13.2]  # a 6.2 s gap after 5.0
    assert _stalled(gap, [95, 95, 2, 2, 2, 95, 95, 95], gaps_stall=False) == [
        "stalled 3 s idle (CPU and GPUs under 5 %); limit 3 s"]  # fmt: skip
    apart = [1.0, 2.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]  # a 3 s gap, then 4 idle
    assert _stalled(apart, [95, 95, 95, 95, 2, 2, 2, 2, 95, 95]) == [
        "stalled 4 s idle (CPU and GPUs under 5 %); limit 3 s"]  # fmt: skip
    assert _stalled(gap, [95, 95, 95, 95, 2, 95, 1, 95]) == [
        "stalled 7 s frozen and idle (telemetry samples, due every 1.0 s, came 5.2 s late; "
        "2.0 s with CPU and GPUs under 5 %); limit 3 s"]  # fmt: skip


RUN = {"name": "host-1cpu", "runner": "host", "cpus": 1}


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_a_host_training_stopped_for_5_s_is_flagged_stalled(tiny_run, tmp_path):
    """A host training of TINY settings (250 epochs of two steps: about 15 s), stopped with
    SIGSTOP for 5 s after its 20th epoch: its telemetry has a gap of over 5 s, its longest
    stall is at least 4 s (the gap less one sampling interval), and the verdict says it
    stalled."""
    _, config, out = tiny_run
    write_spec(tmp_path / "run.json", config, RUN, epochs=250)
    run = tmp_path / "run"
    proc = subprocess.Popen(
        train_command(tmp_path / "run.json", out, run), stderr=subprocess.PIPE, text=True
    )
    progress, deadline = run / "progress.csv", time.monotonic() + 300
    while not (progress.exists() and len(progress.read_text().splitlines()) > 20):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(5)
    os.kill(proc.pid, signal.SIGCONT)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 0, err[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    seen = metrics["telemetry"]["interference"]
    telemetry = pd.read_csv(run / "telemetry.csv")
    assert telemetry["time_s"].diff().max() == pytest.approx(seen["longest_gap_s"])
    assert seen["gaps"] >= 1 and seen["longest_gap_s"] > 5.0
    assert seen["longest_stall_s"] >= 4.0
    verdict = assess(metrics, thresholds())
    assert "interfered" in verdict["flags"]
    (stalled,) = [r for r in verdict["reasons"] if r.startswith("stalled")]
    assert "frozen" in stalled and "telemetry samples, due every" in stalled, verdict

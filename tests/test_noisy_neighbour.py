"""benchmarks/noisy_neighbour.py, the real A/As' stand-in for another tenant: it keeps the
CPUs it is given busy in bursts and stops when told; bad CPU lists are one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workflow_helpers import load_benchmark

neighbour = load_benchmark("noisy_neighbour")
SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "noisy_neighbour.py"


@pytest.mark.parametrize("text", ["", "a", "0,-1", "1.5"])
def test_a_bad_cpu_list_is_refused(text):
    with pytest.raises(ValueError, match="--cpus: expected CPU numbers like 0 or 0,1"):
        neighbour.parse_cpus(text)


def test_it_spins_for_the_time_asked():
    started = time.monotonic()
    assert neighbour.spin(0.05) > 0
    assert time.monotonic() - started >= 0.05


def test_it_runs_until_sigterm_and_then_exits_0():
    # One of the CPUs this test may use (not CPU 0 by name: a benchmark may be timing there).
    cpu = str(min(os.sched_getaffinity(0)))
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--cpus", cpu, "--seed", "1"])
    try:
        time.sleep(2.0)  # the first burst (0.2-1.5 s) starts at once
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_a_cpu_it_cannot_have_is_one_line():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpus", "4096"], capture_output=True, text=True
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("noisy_neighbour: error: ")

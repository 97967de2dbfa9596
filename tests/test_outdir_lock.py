"""One outdir, one workflow at a time. Two checkouts writing one absolute
outdir both ran, their trainings two at a time, overwriting each other's run folders
(Snakemake's own lock is per working directory). The second is now refused, naming the first;
a dry run only says so; the lock goes with the process that held it, however it ends."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import copy_run
from workflow_helpers import copy_repo, offline_config, snakemake, snakemake_command

from embryo_bench.cli import main
from embryo_bench.errors import OutdirInUse
from embryo_bench.runners.outdir_lock import LOCK_FILE, claim, hold, in_use, release

HOLD = """
import sys, time
from embryo_bench.runners.outdir_lock import hold
hold(sys.argv[1], sys.argv[2], wait_s=float(sys.argv[3]))
print("held", flush=True)
time.sleep(float(sys.argv[4]))
"""


def _holder(outdir: Path, checkout: str, seconds: float = 600, wait_s: float = 0):
    """A process holding ``outdir`` for ``seconds`` (started, and holding, on return)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(outdir), checkout, str(wait_s),
                             str(seconds)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline() == "held\n"
    return proc


def _refusal(outdir: Path, checkout: str, pid: int) -> str:
    """The start of the line that refuses a workflow (the time follows)."""
    return (f"outdir {outdir} is in use by the workflow of {checkout} (pid {pid} on host "
            f"{socket.gethostname()}, since ")  # fmt: skip


def test_a_held_outdir_is_refused_naming_its_holder_and_free_when_it_dies(tmp_path, monkeypatch):
    out = tmp_path / "results" / "x"
    first = _holder(out, "/src/first-checkout")
    try:
        with pytest.raises(OutdirInUse) as refused:
            hold(out, "/src/second-checkout", wait_s=0.2)
        said = str(refused.value)
        assert said.startswith(_refusal(out, "/src/first-checkout", first.pid))
        assert said.endswith("); wait for it or use another outdir")
        assert in_use(out) == said.removesuffix("; wait for it or use another outdir")
        # A relative outdir is named absolute.
        monkeypatch.chdir(tmp_path)
        with pytest.raises(OutdirInUse, match=f"^outdir {out} is in use"):
            hold("results/x", "/src/second-checkout", wait_s=0)
    finally:
        first.kill()  # SIGKILL: nothing of the holder runs again
        first.wait()
    assert in_use(out) is None
    try:
        assert hold(out, "/src/x/../second-checkout").checkout == "/src/second-checkout"
        assert '"checkout": "/src/second-checkout"' in (out / LOCK_FILE).read_text()
    finally:
        release(out)


def test_a_dry_run_looks_without_taking_or_writing(tmp_path):
    out = tmp_path / "out"
    assert claim(out, "/src/a", dry_run=True) is None
    assert not out.exists()  # nothing made for a look
    first = _holder(out, "/src/first")
    try:
        note = claim(out, "/src/a", dry_run=True)
        assert note.startswith(_refusal(out, "/src/first", first.pid))
        assert note.endswith(": a run now would be refused (this dry run only looks)")
    finally:
        first.kill()
        first.wait()
    # A look holds the lock for an instant: a workflow starting then waits it out.
    fd = os.open(out / LOCK_FILE, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    second = subprocess.Popen([sys.executable, "-c", HOLD, str(out), "/src/b", "5", "0"],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(0.5)
    os.close(fd)
    assert second.stdout.readline() == "held\n" and second.wait(timeout=30) == 0


def test_check_config_takes_no_lock(tmp_path, capsys):
    config = offline_config(tmp_path / "out")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    first = _holder(tmp_path / "out", "/src/first")
    try:
        assert main(["check-config", str(tmp_path / "c.yaml")]) == 0
    finally:
        first.kill()
        first.wait()


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_a_second_checkout_is_refused_while_the_first_runs_and_runs_once_it_is_gone(tmp_path):
    """Two copies of the repository, one absolute outdir: while the first trains (a real
    workflow), the second is refused with one line naming it; its dry run, lint and unlock
    still work. SIGKILLed, the first leaves no lock: the second runs, and leaves none either."""
    out = tmp_path / "shared-results"
    config = offline_config(out, tiny=True)
    config["train"]["epochs"] = 400  # the first runs until it is killed
    a, b = copy_repo(tmp_path / "checkout-a"), copy_repo(tmp_path / "checkout-b")
    work_a, work_b = tmp_path / "work-a", tmp_path / "work-b"
    for work in (work_a, work_b):
        work.mkdir()
        (work / "config.yaml").write_text(yaml.safe_dump(config))
    first = subprocess.Popen(snakemake_command(work_a / "config.yaml", repo=a), cwd=work_a,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while in_use(out) is None:  # the first takes the outdir as it starts its jobs
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        refusal = _refusal(out, str(a), first.pid)
        assert in_use(out).startswith(refusal)
        second = snakemake(work_b, config, repo=b, check=False)
        assert first.poll() is None, "the first workflow ended before the second tried"
        said = second.stdout + second.stderr
        assert second.returncode != 0
        (line,) = [s for s in said.splitlines() if s.startswith("outdir ")]
        assert line.startswith(refusal) and line.endswith("; wait for it or use another outdir")
        assert "Traceback" not in said and "embryo_bench/" not in said
        assert "Building DAG" not in said  # refused before anything else
        assert not list(out.glob("train/*/repeat-*/metrics.json"))
        dry = snakemake(work_b, config, "-n", repo=b)
        assert refusal in dry.stdout + dry.stderr
        assert "this dry run only looks" in dry.stdout + dry.stderr
        for args in (["--lint"], ["--unlock"]):
            snakemake(work_b, config, *args, repo=b)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert in_use(out) is None
    snakemake(work_b, config, "--until", "index", repo=b)
    assert in_use(out) is None
    assert f'"checkout": "{b}"' in (out / LOCK_FILE).read_text()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_job_run_by_its_own_snakemake_takes_no_lock(tiny_run, tmp_path):
    """A cluster job runs the Snakefile again on its node (--mode remote): the workflow that
    submitted it holds the outdir, so the job's own Snakemake must not ask for it."""
    work, config, _ = tiny_run
    work = copy_run(work, tmp_path / "work")
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    first = _holder(work / "out", "/src/the-submitting-workflow")
    try:
        job = ["--mode", "remote", "--target-jobs", "select:", "--allowed-rules", "select",
               "--force", "--nolock"]  # fmt: skip
        proc = subprocess.run(snakemake_command(work / "config.yaml", *job), cwd=work,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Finished jobid: 0 (Rule: select)" in proc.stdout + proc.stderr
        assert in_use(work / "out").startswith(
            _refusal(work / "out", "/src/the-submitting-workflow", first.pid)
        )
    finally:
        first.kill()
        first.wait()

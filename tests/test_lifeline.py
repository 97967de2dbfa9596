"""A process tied to its parent (embryo_bench.runners.lifeline) ends when the parent is SIGKILLed
and
writes nothing after, by the kernel's parent-death signal and by the
watchdog thread alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from embryo_bench.runners import lifeline

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from embryo_bench.runners import lifeline
    if sys.argv[2] == "watchdog-only":
        lifeline._set_pdeathsig = lambda: False
    lifeline.tie_to_parent()
    print(os.getpid(), flush=True)
    time.sleep(15)
    lifeline.check_parent()
    open(sys.argv[1], "w").write("outputs written")
    """
)
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]],
                             stdout=subprocess.PIPE, text=True)
    print(child.stdout.readline().strip(), flush=True)
    time.sleep(60)
    """
)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _orphan(cmd: list[str]) -> int:
    """Start ``cmd`` (a parent that starts a child and prints its pid), SIGKILL the parent
    once the child runs, and return the child's pid."""
    parent = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert not _gone(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    return child


def _ends_within(pid: int, seconds: float = 30) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end (only as long as it lives); True if it did.
    Both lifeline mechanisms act within a second on a quiet machine; 30 s leaves room for a
    busy one."""
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _gone(pid)


@pytest.mark.parametrize("mode", ["pdeathsig", "watchdog-only"])
def test_a_tied_process_ends_with_its_parent_and_writes_nothing(tmp_path, mode):
    marker = tmp_path / "outputs"
    child = _orphan([sys.executable, "-c", PARENT, CHILD, str(marker), mode])
    assert _ends_within(child), f"the child (pid {child}) outlived its parent by 30 s ({mode})"
    assert not marker.exists()


def test_an_untied_process_outlives_its_parent(tmp_path):
    # The control: without tie_to_parent the child goes on (what the host trainer did).
    untied = CHILD.replace("lifeline.tie_to_parent()", "pass")
    child = _orphan([sys.executable, "-c", PARENT, untied, str(tmp_path / "outputs"), "x"])
    time.sleep(2)
    try:
        assert not _gone(child)
    finally:
        os.kill(child, signal.SIGKILL)


def test_the_stdin_lifeline_ends_the_process_when_stdin_closes(tmp_path):
    # Inside a container the runner's attached stdin is the lifeline.
    marker = tmp_path / "outputs"
    code = (
        "import sys, time\n"
        "from embryo_bench.runners import lifeline\n"
        "lifeline.watch_stdin()\n"
        "print('watching', flush=True)\n"
        "time.sleep(120)\n"
        f"open({str(marker)!r}, 'w').write('outputs written')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "watching"
    proc.stdin.write("heartbeat bytes are read and ignored\n")
    proc.stdin.flush()
    time.sleep(0.5)
    assert proc.poll() is None  # data on stdin is not its end
    proc.stdin.close()
    proc.wait(timeout=60)  # the lifeline, long before the 120 s sleep ends
    assert proc.returncode == lifeline.EXIT_CODE
    assert "lifeline (stdin) closed" in proc.stderr.read()
    assert not marker.exists()


def test_a_process_watching_its_stdin_still_exits_normally():
    # A daemon thread blocked in sys.stdin.buffer.read made the interpreter abort at exit
    # ("could not acquire lock for <stdin>", status 139) after a finished training.
    # stdin is held open until the process has exited, so the reader is still blocked at exit.
    code = "from embryo_bench.runners import lifeline\nlifeline.watch_stdin()\nprint('done')\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        rc = proc.wait(timeout=60)
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.stdin.close()
    assert (rc, out.strip()) == (0, "done"), err[-2000:]


SHELL_CHILD = CHILD.replace("lifeline.tie_to_parent()", "lifeline.tie_to_workflow()").replace(
    "time.sleep(15)", "time.sleep(6)"
)
#: Snakemake's part: start the job (a command line), pass on the pid it prints, wait.
WORKFLOW = PARENT.replace('[sys.executable, "-c", sys.argv[1], *sys.argv[2:]]', "sys.argv[1:]")


@pytest.mark.parametrize(
    ("tie", "command"),
    [("$PPID", '"$@"'), ("$PPID", '"$@"; exit $?'), ("1", '"$@"; exit $?')],
    ids=["exec-by-bash", "under-the-shell", "control-old-prefix"],
)
def test_a_job_under_a_shell_ends_with_the_workflow_and_writes_nothing(tmp_path, tie, command):
    """A crop, augment or figures job, not tied to anything, finished as an orphan
    of a SIGKILLed Snakemake and wrote its outputs. With the workflow's pid in the shell
    prefix ($PPID, as common.smk writes it) it ends at once, whether bash execs the command
    (its parent is then Snakemake) or stays as its parent (a shell that outlives Snakemake).
    The control, the old prefix ("1": tie to the parent) under a shell that stays, goes on
    and writes."""
    marker = tmp_path / "outputs"
    prefix = f"set -euo pipefail; export {lifeline.TIE_ENV}={tie}; "
    job = ["bash", "-c", prefix + command, "bash", sys.executable, "-c", SHELL_CHILD, str(marker)]
    child = _orphan([sys.executable, "-c", WORKFLOW, *job, "x"])
    assert _ends_within(child), f"the job (pid {child}) outlived the workflow by 30 s"
    assert marker.exists() == (tie == "1")

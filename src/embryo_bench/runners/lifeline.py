"""Tie a run's process to the process that started it (Snakemake, or the docker runner).

A host trainer whose Snakemake was SIGKILLed used to be re-parented to PID 1, train to the end
and write every output with nobody left to check them; after ``--unlock`` and a rerun two
trainers shared one run folder. :func:`tie_to_parent` makes the kernel
SIGKILL this process when its parent dies (Linux ``PR_SET_PDEATHSIG``) and, where that is not
available or the parent died before it was set, a watchdog thread ends the process as soon as
:func:`os.getppid` changes. :func:`check_parent` is called before outputs are written.
Inside a docker runner's container the parent is not visible: :func:`watch_stdin` ends the
trainer when the runner's attached stdin closes. Every other workflow job
(crop, augment, figures, ...) runs under the job's shell, which outlives a SIGKILLed
Snakemake; :func:`tie_to_workflow` ties it to the Snakemake process itself, whose pid the
workflow's shell prefix passes in :data:`TIE_ENV` (an orphaned figures or augment job
finished and wrote its outputs).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

from ..errors import Interrupted

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_INTERVAL_S = 0.5
#: The exit status when the parent or the runner is gone (EX_TEMPFAIL; not 137, which the
#: docker runner reads as an out-of-memory kill).
EXIT_CODE = 75
#: Set by the workflow's shell prefix to the pid of the Snakemake process that runs the job
#: (the job shell's ``$PPID``; "1" in older checkouts: the parent): every job ties itself to it.
TIE_ENV = "EMBRYO_BENCH_TIE_TO_PARENT"
#: Set (to "stdin") in a docker run's container: the trainer runs :func:`watch_stdin`.
LIFELINE_ENV = "EMBRYO_BENCH_LIFELINE"

_parent: int | None = None
_watched: tuple[int, float | None] | None = None  # an ancestor (pid, start time) to outlive


def _set_pdeathsig() -> bool:
    """Ask the kernel to SIGKILL this process when its parent thread exits; True if set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _gone(parent: int) -> None:
    print(
        f"embryo-bench: the parent process (pid {parent}) went away; stopping at once, "
        "writing nothing more",
        file=sys.stderr,
        flush=True,
    )
    os._exit(EXIT_CODE)


def _start_time(pid: int) -> float | None:
    """The process's start time (psutil), None when there is no such process."""
    # Late: the training image does not install psutil, and the trainer inside a container
    # imports this module (it never watches an ancestor there).
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _ancestor_gone() -> bool:
    """The ancestor :func:`tie_to_workflow` watches has exited (or its pid is another
    process's now)."""
    return _watched is not None and _start_time(_watched[0]) != _watched[1]


def _watch(parent: int) -> None:
    event = threading.Event()
    while not event.wait(WATCH_INTERVAL_S):
        if os.getppid() != parent:
            _gone(parent)
        if _ancestor_gone():
            _gone(_watched[0])


def tie_to_parent() -> int:
    """End this process, without writing anything more, when its parent process goes away.

    Sets ``PR_SET_PDEATHSIG`` = SIGKILL (Linux) and starts a daemon watchdog thread that
    checks :func:`os.getppid` (and the ancestor :func:`tie_to_workflow` names) every 0.5 s and
    exits with status :data:`EXIT_CODE` when it changes. Calling it again does nothing.

    Returns:
        the parent's pid (int) at the time of the call.
    """
    global _parent
    if _parent is not None:
        return _parent
    parent = os.getppid()
    _set_pdeathsig()
    _parent = parent
    if parent > 1 or _watched is not None:  # PID 1's child: no parent to watch
        threading.Thread(target=_watch, args=(parent,), name="lifeline", daemon=True).start()
    return parent


def tie_to_workflow() -> int | None:
    """In a workflow job (:data:`TIE_ENV` set): end this process, writing nothing more, when
    the Snakemake process that runs the job goes away, whether it is this process's parent
    (``exec`` in the rule, as the train rule does) or the parent of the job's shell (which
    itself outlives Snakemake).

    Returns:
        the pid watched, or None outside a workflow job (:data:`TIE_ENV` unset: a command
        typed by hand, or ``nohup``'d, must survive its shell).

    Raises:
        ValueError: :data:`TIE_ENV` holds something other than a pid.
    """
    global _watched
    value = os.environ.get(TIE_ENV, "")
    if not value:
        return None
    pid = int(value)
    if pid not in (1, os.getppid()):  # "1": older checkouts' value, meaning the parent
        _watched = (pid, _start_time(pid))
        if _watched[1] is None:  # the workflow is gone already
            _gone(pid)
    parent = tie_to_parent()
    return parent if pid == 1 else pid


def check_parent() -> None:
    """Raise if :func:`tie_to_parent` was called and the parent has gone since.

    Raises:
        Interrupted: the parent process went away (nothing must be written after that).
    """
    if _parent is not None and _parent > 1 and os.getppid() != _parent:
        raise Interrupted(f"the parent process (pid {_parent}) went away")
    if _ancestor_gone():
        raise Interrupted(f"the workflow process (pid {_watched[0]}) went away")


def _read_to_eof(fd: int) -> None:
    # os.read on the descriptor, not sys.stdin.buffer: a daemon thread blocked in a buffered
    # reader holds its lock, and the interpreter aborts at exit ("could not acquire lock").
    while os.read(fd, 65536):
        pass
    print(
        "embryo-bench: the runner's lifeline (stdin) closed: the docker runner went away; "
        "stopping at once",
        file=sys.stderr,
        flush=True,
    )
    os._exit(EXIT_CODE)


def watch_stdin(fd: int = 0) -> threading.Thread:
    """End this process (status :data:`EXIT_CODE`) when the file descriptor ``fd`` (default
    0, stdin) reaches end of file: the docker runner holds the container's stdin open and it closes
    when the runner dies, however it dies. Only for processes whose stdin is such a lifeline
    (never /dev/null, which is at its end at once).

    Returns:
        the daemon thread reading the descriptor.
    """
    thread = threading.Thread(target=_read_to_eof, args=(fd,), name="stdin-lifeline")
    thread.daemon = True
    thread.start()
    return thread


def _interrupt_jobs(signum, frame) -> None:
    import psutil
    from snakemake.shell import shell

    # shell._processes: Snakemake's running local jobs (jobid -> Popen); private, so read
    # defensively. Each job's shell and everything under it gets the signal.
    for proc in list(getattr(shell, "_processes", {}).values()):
        if proc.poll() is not None:  # finished: its pid may belong to another process now
            continue
        try:
            top = psutil.Process(proc.pid)
            for p in [top, *top.children(recursive=True)]:
                p.send_signal(signal.SIGINT)
        except psutil.Error:
            continue
    raise KeyboardInterrupt


def forward_sigint_to_jobs() -> bool:
    """In the Snakemake process: make SIGINT sent to it alone (``kill -INT <pid>``) stop the
    running local jobs as a terminal's Ctrl-C does, instead of Snakemake waiting for every
    epoch and then marking the finished outputs incomplete. The jobs'
    processes get SIGINT, then Snakemake its usual KeyboardInterrupt: it reports the jobs
    failed and removes their outputs. Cluster jobs are cancelled by their executor as before.

    Returns:
        True if the handler was installed (only in the main thread, and not where SIGINT
        is ignored, as for a background job of a shell script).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # e.g. `snakemake ... &` in a script
        return False
    try:
        signal.signal(signal.SIGINT, _interrupt_jobs)
    except ValueError:
        return False
    return True

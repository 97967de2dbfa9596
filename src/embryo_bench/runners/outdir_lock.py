"""One outdir, one workflow at a time.

Snakemake's own lock (``.snakemake/locks``) is per working directory, so two checkouts writing
one absolute outdir both ran: their trainings ran two at a time and overwrote each other's run
folders. A workflow that runs jobs now holds an exclusive :func:`fcntl.flock` on
``<outdir>/.embryo-bench.lock`` (:data:`LOCK_FILE`) for the rest of its process's life, and
writes into that file who holds it (host, pid, checkout, start time); a second workflow is
refused with one line naming them. The kernel releases the lock when the process ends, however
it ends, so a killed workflow leaves no stale lock, and the file is never removed (a workflow
waiting on a removed file would lock another one). The descriptor is not inherited by the
jobs' processes (close-on-exec).

A dry run takes nothing and writes nothing: it looks (a shared lock for an instant, which a
starting workflow waits out, :data:`BRIEF_WAIT_S`) and says when another workflow holds the
outdir.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError, OutdirInUse

#: The lock file, in the outdir.
LOCK_FILE = ".embryo-bench.lock"
#: Seconds a starting workflow waits for a lock held only for an instant (a dry run's look).
BRIEF_WAIT_S = 2.0
_POLL_S = 0.05

#: Outdirs (absolute paths) whose lock this process holds, and the descriptors holding them.
_held: dict[str, int] = {}


@dataclass(frozen=True)
class Holder:
    """Who holds an outdir: the host, the pid of its Snakemake process, its checkout (the
    workflow's base folder) and when it took the outdir (Unix time, s)."""

    host: str
    pid: int
    checkout: str
    since_unix: float

    def describe(self) -> str:
        """E.g. ``the workflow of /src/embryo-bench (pid 1234 on host h, since 2026-11-25
        12:03:04)``, in local time."""
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since_unix))
        return (
            f"the workflow of {self.checkout} (pid {self.pid} on host {self.host}, since {since})"
        )


def lock_path(outdir: str | os.PathLike) -> Path:
    """The lock file of ``outdir`` (absolute)."""
    return Path(os.path.abspath(outdir)) / LOCK_FILE


def _holder(fd: int) -> Holder | None:
    """The holder written in an open lock file; None when it cannot be read (being written)."""
    try:
        return Holder(**json.loads(os.pread(fd, 1 << 16, 0)))
    except (OSError, ValueError, TypeError):
        return None


def _in_use(outdir: str | os.PathLike, holder: Holder | None) -> str:
    who = holder.describe() if holder else f"another workflow (not yet named in {LOCK_FILE})"
    return f"outdir {os.path.abspath(outdir)} is in use by {who}"


def hold(outdir: str | os.PathLike, checkout: str, wait_s: float = BRIEF_WAIT_S) -> Holder:
    """Hold ``outdir`` for the rest of this process's life: an exclusive lock on its
    :data:`LOCK_FILE` (the outdir is made if missing), with this process named in it. Waits up
    to ``wait_s`` seconds for a lock held for an instant (a dry run looking); holding it
    already does nothing more.

    Args:
        outdir: the workflow's output folder (relative to the working directory or absolute).
        checkout: the folder of the workflow holding it (Snakemake's ``workflow.basedir``).

    Returns:
        the :class:`Holder` written.

    Raises:
        OutdirInUse: another process holds it; names that workflow's checkout, pid, host and
            start time.
        ConfigError: the outdir or its lock file cannot be made or opened, or its file system
            has no locks; names the file.
    """
    path = lock_path(outdir)
    if str(path.parent) in _held:
        return _holder(_held[str(path.parent)])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot make the outdir's lock file ({exc.strerror})") from None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(_POLL_S)
                continue
            holder = _holder(fd)
            os.close(fd)
            raise OutdirInUse(
                f"{_in_use(outdir, holder)}; wait for it or use another outdir"
            ) from None
        except OSError as exc:  # e.g. ENOLCK: a network file system without locks
            os.close(fd)
            raise ConfigError(
                f"{path}: cannot lock the outdir ({exc.strerror}); its file system must "
                "support locks (flock)"
            ) from None
    me = Holder(socket.gethostname(), os.getpid(), os.path.abspath(checkout), time.time())
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(asdict(me)).encode(), 0)
    _held[str(path.parent)] = fd
    return me


def release(outdir: str | os.PathLike) -> None:
    """Let go of ``outdir`` if this process holds it (a workflow never does: it holds its
    outdir to its end; for tests and other long-lived callers of :func:`hold`)."""
    fd = _held.pop(str(lock_path(outdir).parent), None)
    if fd is not None:
        os.close(fd)


def in_use(outdir: str | os.PathLike) -> str | None:
    """Whether another process holds ``outdir``: a line naming the workflow that does, or None
    when none does (or it cannot be told: no lock file, or one this process cannot read).
    Takes a shared lock for an instant and writes nothing."""
    if str(lock_path(outdir).parent) in _held:
        return None
    try:
        fd = os.open(lock_path(outdir), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return _in_use(outdir, _holder(fd))
        return None
    finally:
        os.close(fd)  # releases the shared lock
    return None


def claim(outdir: str | os.PathLike, checkout: str, dry_run: bool) -> str | None:
    """What a workflow does as Snakemake starts to execute: :func:`hold` the outdir, or, in a
    dry run, only say (returned, to log as a warning) when another workflow holds it.

    Raises:
        OutdirInUse, ConfigError: as :func:`hold` (not in a dry run).
    """
    if not dry_run:
        hold(outdir, checkout)
        return None
    busy = in_use(outdir)
    return f"{busy}: a run now would be refused (this dry run only looks)" if busy else None

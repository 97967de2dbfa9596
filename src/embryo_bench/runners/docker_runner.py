"""The ``docker`` runner: train inside a container started through the Docker SDK.

The container gets the run's limits (``nano_cpus``, ``mem_limit`` without extra swap, GPUs as
a ``DeviceRequest``) and only what training needs (:data:`ISOLATION`: no network, no
capabilities, no privilege gain, a pids limit); ``run.json`` and the dataset
go in with ``put_archive``, read-only (owned by root, mode 0444, in a 0555 folder: the image's
user cannot change them), and results come out with ``get_archive`` (no bind mounts, so a
remote ``docker_host`` works like the local daemon); its log streams into the rule's log, and
it is sampled every second from outside (:mod:`embryo_bench.recording.telemetry`). Inside, the same
trainer as the host runner runs (``embryo-bench train --spec ... --in-container``). The
container is removed in every case: success, failure, SIGINT/SIGTERM/SIGHUP, or the parent
(Snakemake) going away. A runner that is itself SIGKILLed cannot remove it, so the container
does not outlive it either: the runner holds the container's stdin open (an attach socket) and
the trainer inside exits when it closes (:func:`embryo_bench.runners.lifeline.watch_stdin`); the
exited container is removed by the next runner of the same run folder (:func:`remove_stale`),
before it creates its own.

The outline, shared with the host runner: check, :func:`container` (create, put inputs,
signals, cleanup), :func:`start`, :class:`embryo_bench.recording.telemetry.Measurement` around
:func:`wait`, then :func:`collect` and :func:`embryo_bench.recording.record.finish_run`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import DockerError, Interrupted
from ..io import atomic_path, read_json
from ..recording.hardware import local_node, run_cores, why_not
from ..recording.provenance import SLURM_ENV, git_commit
from ..recording.record import finish_run
from ..recording.telemetry import ContainerSampler, Measurement
from ..vocabulary.layout import METRICS, PROGRESS, RUN_SPEC, TELEMETRY
from ..vocabulary.spec import RunSpec
from ..vocabulary.training_input import TrainingInput
from .docker_api import Daemon, channel, daemon_identity, docker_client, is_loopback
from .lifeline import LIFELINE_ENV

LABEL = "org.embryo-bench.run"
#: The run a container trains: this host's name and the run folder's absolute path.
RUN_DIR_LABEL = "org.embryo-bench.run-dir"
WORK = "/work"
#: Files of the container's output folder the runner writes itself (from its own samples).
WRITTEN_OUTSIDE = (METRICS, TELEMETRY)
#: Processes and threads a training container may have (Docker's ``pids_limit``; Linux
#: counts threads): a ceiling against runaway forks, far above what a training uses. Measured
#: (the container's pids cgroup ``pids.current`` read from the host every 20 ms while
#: :func:`run` trained tests/workflow_helpers.TINY for 3 epochs in embryo-bench/cpu:0.1.0):
#: at most 15 tasks at 1 cpu and 21 at 2 cpus, on the 2-core Xeon VM, 2026-11-25. Bigger
#: machines (more threads) were not measured.
PIDS_LIMIT = 4096
#: What a training container may do besides training: no network (the
#: data goes in and the results come out through the API), every capability dropped, no
#: privilege gained through setuid files, at most :data:`PIDS_LIMIT` processes and threads.
#: The root file system stays writable: the daemon refuses ``put_archive`` into a read-only
#: one, and the copy of ``/work/out`` is read through the container's own layer; the inputs
#: are read-only instead (:func:`_tar_inputs`).
ISOLATION = {
    "network_mode": "none",
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "pids_limit": PIDS_LIMIT,
}
#: Owner (root) and modes of the inputs inside the container: readable, not writable.
INPUT_UID, INPUT_DIR_MODE, INPUT_FILE_MODE = 0, 0o555, 0o444


def _raise_interrupted(signum, frame):
    # Once: a second signal (Ctrl-C reaches the runner from the terminal and from Snakemake)
    # must not break off the container's removal. container() restores the handlers.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def _tar_inputs(files: dict[str, Path], fh) -> None:
    """Write a tar of ``files`` (name in the archive -> host path) under ``in/`` to ``fh``,
    read-only inside the container: owned by root (:data:`INPUT_UID`), files
    :data:`INPUT_FILE_MODE`, the folder :data:`INPUT_DIR_MODE`. The trainer runs as the
    image's user (uid 1000) without capabilities, so it can read them and not change, add or
    remove any."""
    with tarfile.open(fileobj=fh, mode="w") as tar:
        d = tarfile.TarInfo("in")
        d.type, d.mode, d.uid, d.gid = tarfile.DIRTYPE, INPUT_DIR_MODE, INPUT_UID, INPUT_UID
        tar.addfile(d)
        for name, path in files.items():
            path = Path(path)
            # A folder (a workload's image files) goes in whole, in the same modes.
            entries = [(name, path)]
            if path.is_dir():
                entries += [
                    (f"{name}/{p.relative_to(path).as_posix()}", p) for p in sorted(path.rglob("*"))
                ]
            for arcname, item in entries:
                info = tar.gettarinfo(str(item), arcname=f"in/{arcname}")
                info.uid = info.gid = INPUT_UID
                info.uname = info.gname = ""
                if item.is_dir():
                    info.mode = INPUT_DIR_MODE
                    tar.addfile(info)
                    continue
                info.mode = INPUT_FILE_MODE
                with open(item, "rb") as src:
                    tar.addfile(info, src)


def daemon_is_here(address: str) -> bool:
    """Whether the Docker daemon at ``address`` runs on this machine (so this process can
    sample the machine around its containers): the default socket, a ``unix://`` socket or
    TCP on a loopback address (:func:`embryo_bench.runners.docker_api.is_loopback`, the rule that
    lets
    plain TCP through)."""
    if not address or address.startswith(("unix://", "npipe://")):
        return True
    url = urlsplit(address)
    return url.scheme == "tcp" and is_loopback(url.hostname)


def check_image(client, spec: RunSpec, image: dict) -> None:
    """Check that the image the record names is on the daemon that runs ``spec``.

    Raises:
        DockerError: it is not (e.g. a cluster node with its own daemon while the image was
            built on the submitting host); the message names the image, the daemon and the
            host the record says it was built on.
    """
    import docker.errors

    ref = image.get("image_id") or image["tag"]
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        address = spec.docker_host or os.environ.get("DOCKER_HOST") or "local socket"
        raise DockerError(
            f"target {spec.target}: image {image['tag']} ({ref}) is not on the Docker "
            f"daemon at {address} on {socket.gethostname()}; it was built on "
            f"{image.get('built_on', 'another host')}. Run docker targets where that daemon "
            "is reachable (one node, or the target's docker_host), or rebuild the image there"
        ) from None


def run_key(out_dir: str | Path) -> str:
    """The :data:`RUN_DIR_LABEL` value of the run writing to ``out_dir``: host:abs-path."""
    return f"{socket.gethostname()}:{Path(out_dir).resolve()}"


def container_kwargs(
    spec: RunSpec, image: dict, command: list[str], run_id: str, key: str = ""
) -> dict:
    """Arguments of ``client.containers.create`` for a docker run: image, command, project
    labels (``key``: :func:`run_key`), stdin held open as the runner's lifeline,
    ``nano_cpus`` (cpus x 1e9), ``mem_limit`` = ``memswap_limit`` (no extra swap),
    ``shm_size``, :data:`ISOLATION` (no network, capabilities, privilege gain; a pids
    limit), environment (backend, git commit, image, the Slurm job's variables) and, for GPU
    runs, a ``DeviceRequest`` for GPUs 0..gpus-1 (the same indices NVML samples)."""
    from docker.types import DeviceRequest

    c = spec.container
    kwargs = {
        "image": image.get("image_id") or image["tag"],  # exactly the image built
        "command": command,
        "labels": {LABEL: run_id, "org.embryo-bench.target": spec.target, RUN_DIR_LABEL: key},
        # stdin open and closed when the first attached client goes (StdinOnce)
        "stdin_open": True,
        "nano_cpus": int(float(spec.cpus) * 1e9),
        "mem_limit": c.memory,
        "memswap_limit": c.memory,
        "shm_size": c.shm_size,
        **ISOLATION,
        "environment": {
            "KERAS_BACKEND": spec.backend,
            LIFELINE_ENV: "stdin",
            "EMBRYO_BENCH_GIT_COMMIT": git_commit(),
            "EMBRYO_BENCH_IMAGE": f"{image['tag']} {image.get('image_id', '')}".strip(),
            # A Slurm job's identity, so the run's provenance names the job it ran in.
            **{v: os.environ[v] for v in SLURM_ENV if v in os.environ},
        },
        "working_dir": WORK,
    }
    if spec.gpus:
        kwargs["device_requests"] = [
            DeviceRequest(device_ids=[str(i) for i in range(spec.gpus)], capabilities=[["gpu"]])
        ]
    return kwargs


def _remove(box, log, attempts: int = 5) -> bool:
    """Force-remove the container ``box``, retrying while the daemon is busy with it (409,
    e.g. removal already in progress); True once it is gone, False (named in ``log``) if it
    could not be removed."""
    import docker.errors

    for attempt in range(attempts):
        try:
            box.remove(force=True)
            return True
        except docker.errors.NotFound:
            return True
        except Exception as exc:
            if attempt == attempts - 1:
                print(f"container {box.short_id}: could not be removed: {exc}", file=log)
                return False
            time.sleep(1)
    return False


@contextlib.contextmanager
def container(client, kwargs: dict, inputs: dict[str, Path], log):
    """A created container with ``inputs`` (name -> host path) put into ``/work/in`` and its
    stdin attached (the trainer's lifeline); signals SIGINT/SIGTERM/SIGHUP raise
    :class:`Interrupted` meanwhile. On exit the container is removed (force) and the signal
    handlers restored, whatever happened."""
    previous = {
        s: signal.signal(s, _raise_interrupted)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    created = lifeline = None
    try:
        created = client.containers.create(**kwargs)
        with tempfile.TemporaryFile() as fh:
            _tar_inputs(inputs, fh)
            fh.seek(0)
            created.put_archive(WORK, fh)
        # The trainer's lifeline: closed by the kernel when this process dies, however.
        lifeline = created.attach_socket(params={"stdin": 1, "stream": 1})
        yield created
    finally:
        # Nothing may break off the cleanup (Interrupted is a BaseException); container()'s
        # caller gets the handlers back below.
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        # Removed before its lifeline is closed: closing it first ends the trainer, and a
        # container exiting while it is force-removed can be left behind ("removal in
        # progress").
        if created is not None:
            _remove(created, log)
        if lifeline is not None:
            with contextlib.suppress(Exception):
                lifeline.close()
        for s, h in previous.items():
            signal.signal(s, h)


def isolation(attrs: dict) -> dict:
    """What a created container may do, recorded in ``metrics.json``
    (``container.isolation``). From the daemon (``HostConfig`` of ``attrs``, the container's
    inspect): ``network_mode``, ``cap_drop``, ``security_opt``, ``pids_limit`` and
    ``read_only_rootfs``. Not from the daemon: ``inputs``, how :func:`_tar_inputs` puts the
    inputs in (owner and file mode: this runner's constants); the container's view of them is
    checked by tests/test_docker.py's probe, not at run time."""
    host = attrs.get("HostConfig") or {}
    return {
        "network_mode": host.get("NetworkMode", ""),
        "cap_drop": host.get("CapDrop") or [],
        "security_opt": host.get("SecurityOpt") or [],
        "pids_limit": host.get("PidsLimit") or 0,
        "read_only_rootfs": bool(host.get("ReadonlyRootfs")),
        "inputs": f"read-only (uid {INPUT_UID}, {INPUT_FILE_MODE:o})",
    }


def start(box, log) -> deque[str]:
    """Start the container and stream its log into ``log``; returns the log's last 30
    lines, kept up to date."""
    tail: deque[str] = deque(maxlen=30)
    box.start()

    def pump():
        for chunk in box.logs(stream=True, follow=True):
            text = chunk.decode(errors="replace")
            log.write(text)
            log.flush()
            tail.extend(text.rstrip("\n").splitlines())

    threading.Thread(target=pump, daemon=True).start()
    return tail


def copy_progress(box, out_dir: Path) -> bool:
    """Copy the trainer's ``progress.csv`` (the epochs measured so far) out of the running
    container into ``out_dir``, atomically; False when there is none yet."""
    import docker.errors

    try:
        stream, _ = box.get_archive(f"{WORK}/out/{PROGRESS}")
        with tempfile.TemporaryFile() as buf:
            for chunk in stream:
                buf.write(chunk)
            buf.seek(0)
            with tarfile.open(fileobj=buf) as tar:
                data = tar.extractfile(PROGRESS).read()
    except (docker.errors.NotFound, docker.errors.APIError, KeyError, tarfile.TarError):
        return False
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / PROGRESS, suffix=".csv") as tmp:
        tmp.write_bytes(data)
    return True


def wait(
    box,
    spec: RunSpec,
    tail: deque[str],
    parent: int,
    stop_after_s: float | None = None,
    progress_to: Path | None = None,
) -> None:
    """Wait for the started container to exit, checking every second that ``parent`` (the
    runner's parent process when it started) is still there, and copying the trainer's
    progress out (:func:`copy_progress`) into ``progress_to`` every 5 s.

    Raises:
        Interrupted: the parent process (Snakemake) went away, or ``stop_after_s`` (tests).
        DockerError: the container was killed for memory (naming ``mem_limit``) or exited
            non-zero (with its last log lines, ``tail``).
    """
    waited = 0.0
    while True:
        try:
            result = box.wait(timeout=1)
            break
        except Exception:  # read timeout: still running
            waited += 1
        if progress_to is not None and waited % 5 == 0:
            copy_progress(box, progress_to)
        if os.getppid() != parent:
            raise Interrupted("the parent process went away")
        if stop_after_s is not None and waited >= stop_after_s:
            raise Interrupted(f"stop_after_s={stop_after_s}")
    box.reload()
    state = box.attrs["State"]
    code = result.get("StatusCode", state.get("ExitCode"))
    if state.get("OOMKilled") or code == 137:
        raise DockerError(
            f"target {spec.target}: container killed for memory (OOMKilled, exit "
            f"{code}) with mem_limit {spec.container.memory}; raise the target's memory"
        )
    if code != 0:
        raise DockerError(
            f"target {spec.target}: training in the container exited "
            f"{code}; last log lines:\n" + "\n".join(tail)
        )


def collect(box, out_dir: Path) -> dict:
    """Copy /work/out of the container into ``out_dir`` (each file atomically), except
    :data:`WRITTEN_OUTSIDE`; return the trainer's metrics."""
    stream, _ = box.get_archive(f"{WORK}/out")
    with tempfile.TemporaryFile() as buf, tempfile.TemporaryDirectory() as tmp:
        for chunk in stream:
            buf.write(chunk)
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            tar.extractall(tmp, filter="data")
        src = Path(tmp) / "out"
        metrics = read_json(src / METRICS)
        out_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(src.iterdir()):
            if f.name in WRITTEN_OUTSIDE:
                continue
            with atomic_path(out_dir / f.name, suffix=f.suffix) as tmpf:
                tmpf.write_bytes(f.read_bytes())
    return metrics


def run(
    spec: RunSpec,
    *,
    spec_file: str | Path,
    image: dict,
    inputs: TrainingInput,
    source_info: str | Path,
    out_dir: str | Path,
    log=None,
    stop_after_s: float | None = None,
    daemon: Daemon | None = None,
) -> dict:
    """Train one run in a container of ``image`` with the run's limits.

    Args:
        spec: the run (``spec.runner`` is "docker"); spec_file: its ``run.json``, shipped in.
        daemon: how ``spec.docker_host`` is reached (TLS files: the workflow's daemon
            record); default: the address alone (with the Docker environment's TLS,
            :func:`embryo_bench.runners.docker_api.resolve_daemon`), or the environment's daemon.
        image: the image record written by the image build (``tag``, ``image_id``).
        inputs: what the run trains on, on this host (its shards, or its arrays and image
            folder, shipped in whole:
            :class:`embryo_bench.vocabulary.training_input.TrainingInput`).
        source_info: the index stage's ``source.json``, or a workload's data info.
        out_dir: run folder on this host; receives history.csv, windows.csv, model.keras,
            settings.json (from the container), telemetry.csv and metrics.json (written
            here).
        log: text stream for the container's log (default stderr).
        stop_after_s: for tests, stop the container after this many seconds.

    Returns:
        the run's metrics (as in metrics.json), with ``telemetry`` and ``container`` (image,
        limits, ``docker_host``, ``channel``, ``isolation``: :func:`isolation`, ``daemon``).

    Raises:
        ConfigError: the daemon's address or TLS files are refused.
        DockerError: daemon unreachable (naming the address), hardware or image missing,
            container killed for memory (naming mem_limit), or training failed (with its
            last log lines). No output is left in ``out_dir`` in these cases.
        Interrupted: SIGINT/SIGTERM/SIGHUP or the parent process went away (the container
            is removed first).
    """
    log = log or sys.stderr
    parent = os.getppid()
    client = docker_client(daemon or spec.docker_host or None)
    info = client.info()
    why = why_not(spec, local_node(), info)
    if why:
        raise DockerError(f"target {spec.target}: {why}")
    check_image(client, spec, image)
    # The run's data shipped in under names of its own, and named so to the trainer there.
    shipped = inputs.by_name()
    data = inputs.under(f"{WORK}/in").options()
    command = [
        "python",
        "-m",
        "embryo_bench.cli",
        "train",
        "--spec",
        f"{WORK}/in/{RUN_SPEC}",
        *data,
        "--source-info",
        f"{WORK}/in/source.json",
        "--out-dir",
        f"{WORK}/out",
        "--in-container",
    ]
    shipped |= {RUN_SPEC: Path(spec_file), "source.json": Path(source_info)}
    key = run_key(out_dir)
    remove_stale(client, key, log)
    kwargs = container_kwargs(spec, image, command, uuid.uuid4().hex[:12], key)
    with container(client, kwargs, shipped, log) as box:
        tail = start(box, log)
        here = daemon_is_here(spec.docker_host or os.environ.get("DOCKER_HOST", ""))
        cores = run_cores(spec.cpus) if here else None
        sampler = ContainerSampler(box, float(spec.cpus), list(range(spec.gpus)), cores)
        with Measurement(sampler) as measurement:
            wait(box, spec, tail, parent, stop_after_s, progress_to=Path(out_dir))
        metrics = collect(box, Path(out_dir))
    (Path(out_dir) / PROGRESS).unlink(missing_ok=True)  # history.csv now holds every epoch
    return finish_run(
        out_dir,
        metrics,
        measurement,
        container={
            "image": image["tag"],
            "image_id": image.get("image_id"),
            "nano_cpus": kwargs["nano_cpus"],
            "mem_limit": kwargs["mem_limit"],
            "gpus": spec.gpus,
            "docker_host": spec.docker_host or os.environ.get("DOCKER_HOST", "local"),
            "channel": channel(client),
            "isolation": isolation(box.attrs),
            # The machine it ran on, as its daemon says (a remote docker_host is another).
            "daemon": daemon_identity(info),
        },
    )


def remove_stale(client, key: str, log) -> list[str]:
    """Remove every container of the run ``key`` (:func:`run_key`) left by an earlier runner
    that was killed before it could remove it; returns their short ids (each named in
    ``log``)."""
    removed = []
    label = f"{RUN_DIR_LABEL}={key}"
    for box in client.containers.list(all=True, filters={"label": label}, ignore_removed=True):
        status = box.status
        if _remove(box, log):
            removed.append(box.short_id)
            print(
                f"removed container {box.short_id} ({status}) of this run folder, left by a "
                "runner that was killed",
                file=log,
                flush=True,
            )
    return removed


def containers_with_label(client=None) -> list:
    """Every container (running or not) carrying the project label."""
    client = client or docker_client()
    return client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)

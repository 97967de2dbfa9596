"""The ``docker`` runner: train inside a container started through the Docker SDK.

The container gets the target's limits (``nano_cpus``, ``mem_limit`` without extra swap,
GPUs as a ``DeviceRequest``), the dataset goes in with ``put_archive`` and results come out
with ``get_archive`` (no bind mounts, so a remote ``docker_host`` works like the local
daemon), its log streams into the rule's log, and it is sampled every second from outside
(:mod:`embryo_bench.telemetry`). The container is removed in every case: success, failure,
SIGINT/SIGTERM/SIGHUP, or the parent (Snakemake) going away.
"""

from __future__ import annotations

import os
import signal
import socket
import tarfile
import tempfile
import threading
import uuid
from collections import deque
from pathlib import Path

from .containers import docker_client
from .errors import DockerError, Interrupted
from .hardware import DEFAULT_CONTAINER_MEMORY
from .io import atomic_path, read_json, write_json
from .provenance import SLURM_ENV, git_commit
from .telemetry import ContainerSampler, RaplMeter
from .telemetry import summarise as summarise_telemetry

LABEL = "org.embryo-bench.run"
WORK = "/work"


def _raise_interrupted(signum, frame):
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def _tar_inputs(files: dict[str, Path], fh) -> None:
    """Write a tar of ``files`` (name in the archive -> host path) owned by uid 1000 (the
    image's non-root user) to ``fh``."""
    with tarfile.open(fileobj=fh, mode="w") as tar:
        d = tarfile.TarInfo("in")
        d.type, d.mode, d.uid, d.gid = tarfile.DIRTYPE, 0o755, 1000, 1000
        tar.addfile(d)
        for name, path in files.items():
            info = tar.gettarinfo(str(path), arcname=f"in/{name}")
            info.uid = info.gid = 1000
            info.uname = info.gname = ""
            with open(path, "rb") as src:
                tar.addfile(info, src)


def check_hardware(client, target: dict) -> str | None:
    """Why the daemon cannot give ``target`` its cpus/GPUs, or None if it can."""
    info = client.info()
    if target["cpus"] > info.get("NCPU", 0):
        return f"asks for {target['cpus']} cpus, the Docker daemon has {info.get('NCPU')}"
    if target.get("gpus", 0) > 0:
        runtimes = info.get("Runtimes", {})
        if "nvidia" not in runtimes and not _host_gpu_count():
            return (
                f"asks for {target['gpus']} GPUs; the daemon has no nvidia runtime and "
                "no NVIDIA GPU is visible"
            )
        if _host_gpu_count() < target["gpus"]:
            return f"asks for {target['gpus']} GPUs, {_host_gpu_count()} visible"
    return None


def check_image(client, target: dict, image: dict) -> None:
    """Check that the image the record names is on the daemon that runs ``target``.

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
        address = target.get("docker_host") or os.environ.get("DOCKER_HOST") or "local socket"
        raise DockerError(
            f"target {target['name']}: image {image['tag']} ({ref}) is not on the Docker "
            f"daemon at {address} on {socket.gethostname()}; it was built on "
            f"{image.get('built_on', 'another host')}. Run docker targets where that daemon "
            "is reachable (one node, or the target's docker_host), or rebuild the image there"
        ) from None


def container_kwargs(target: dict, image: dict, command: list[str], run_id: str) -> dict:
    """Arguments of ``client.containers.create`` for ``target``: image, command, project
    labels, ``nano_cpus`` (cpus x 1e9), ``mem_limit`` = ``memswap_limit`` (no extra swap),
    ``shm_size``, environment (backend, git commit, image, the Slurm job's variables) and,
    for GPU targets, a ``DeviceRequest`` for GPUs 0..gpus-1 (the same indices NVML
    samples)."""
    from docker.types import DeviceRequest

    gpus = int(target.get("gpus", 0))
    memory = target.get("memory", DEFAULT_CONTAINER_MEMORY)
    kwargs = {
        "image": image.get("image_id") or image["tag"],  # exactly the image built
        "command": command,
        "labels": {LABEL: run_id, "org.embryo-bench.target": target["name"]},
        "nano_cpus": int(float(target["cpus"]) * 1e9),
        "mem_limit": memory,
        "memswap_limit": memory,
        "shm_size": target.get("shm_size", "1g"),
        "environment": {
            "KERAS_BACKEND": target.get("backend", "tensorflow"),
            "EMBRYO_BENCH_GIT_COMMIT": git_commit(),
            "EMBRYO_BENCH_IMAGE": f"{image['tag']} {image.get('image_id', '')}".strip(),
            # A Slurm job's identity, so the run's provenance names the job it ran in.
            **{v: os.environ[v] for v in SLURM_ENV if v in os.environ},
        },
        "working_dir": WORK,
    }
    if gpus:
        kwargs["device_requests"] = [
            DeviceRequest(device_ids=[str(i) for i in range(gpus)], capabilities=[["gpu"]])
        ]
    return kwargs


def _host_gpu_count() -> int:
    from .provenance import gpu_names

    return len(gpu_names())


def run(
    *,
    target: dict,
    image: dict,
    shards: list[str],
    source_info: str,
    out_dir: str | Path,
    train_args: list[str],
    log=None,
    stop_after_s: float | None = None,
) -> dict:
    """Train one run in a container of ``image`` with ``target``'s limits.

    Args:
        target: the hardware target (name, cpus, memory, gpus, docker_host, backend, ...).
        image: the image record written by the image build (``tag``, ``image_id``).
        shards: augmented ``.npz`` shards on this host.
        source_info: the index stage's ``source.json``.
        out_dir: run folder on this host; receives history.csv, metrics.json, model.keras,
            settings.json (from the container) and telemetry.csv.
        train_args: ``embryo-bench train`` options other than shards, out-dir and
            source-info (epochs, batch size, seed, ...), passed to the container's command.
        log: text stream for the container's log (default stderr).
        stop_after_s: for tests, stop the container after this many seconds.

    Returns:
        the run's metrics (as in metrics.json), with ``telemetry`` and ``container`` added.

    Raises:
        DockerError: daemon unreachable (naming the address), hardware missing, container
            killed for memory (naming mem_limit), or training failed (with its last log
            lines). No output is left in ``out_dir`` in these cases.
        Interrupted: SIGINT/SIGTERM/SIGHUP or the parent process went away (the container
            is removed first).
    """
    import sys

    log = log or sys.stderr
    client = docker_client(target.get("docker_host"))
    why = check_hardware(client, target)
    if why:
        raise DockerError(f"target {target['name']}: {why}")
    check_image(client, target, image)
    run_id = uuid.uuid4().hex[:12]
    names = {f"shard-{i}.npz": Path(p) for i, p in enumerate(shards)}
    names["source.json"] = Path(source_info)
    command = [
        "python",
        "-m",
        "embryo_bench.cli",
        "train",
        "--runner",
        "host",
        "--shards",
        *[f"{WORK}/in/{n}" for n in names if n.endswith(".npz")],
        "--out-dir",
        f"{WORK}/out",
        "--source-info",
        f"{WORK}/in/source.json",
        "--runner-name",
        "docker",
        *train_args,
    ]
    gpus = int(target.get("gpus", 0))
    kwargs = container_kwargs(target, image, command, run_id)
    previous = {
        s: signal.signal(s, _raise_interrupted)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    parent = os.getppid()
    container = None
    sampler = None
    tail: deque[str] = deque(maxlen=30)
    try:
        container = client.containers.create(**kwargs)
        with tempfile.TemporaryFile() as fh:
            _tar_inputs(names, fh)
            fh.seek(0)
            container.put_archive(WORK, fh)
        rapl = RaplMeter()  # read on the host: the container may not see powercap
        rapl.start()
        container.start()
        sampler = ContainerSampler(container, float(target["cpus"]), list(range(gpus)))
        sampler.start()

        def pump():
            for chunk in container.logs(stream=True, follow=True):
                text = chunk.decode(errors="replace")
                log.write(text)
                log.flush()
                tail.extend(text.rstrip("\n").splitlines())

        threading.Thread(target=pump, daemon=True).start()
        waited = 0.0
        while True:
            try:
                result = container.wait(timeout=1)
                break
            except Exception:  # read timeout: still running
                waited += 1
            if os.getppid() != parent:
                raise Interrupted("the parent process went away")
            if stop_after_s is not None and waited >= stop_after_s:
                raise Interrupted(f"stop_after_s={stop_after_s}")
        sampler.stop()
        cpu_energy = rapl.stop()
        container.reload()
        state = container.attrs["State"]
        code = result.get("StatusCode", state.get("ExitCode"))
        if state.get("OOMKilled") or code == 137:
            raise DockerError(
                f"target {target['name']}: container killed for memory (OOMKilled, exit "
                f"{code}) with mem_limit {kwargs['mem_limit']}; raise the target's memory"
            )
        if code != 0:
            raise DockerError(
                f"target {target['name']}: training in the container exited "
                f"{code}; last log lines:\n" + "\n".join(tail)
            )
        metrics = _copy_out(container, Path(out_dir))
    finally:
        if sampler is not None:
            sampler.stop()
        if container is not None:
            try:
                container.remove(force=True)
            except Exception as exc:  # already gone
                print(f"container {container.short_id}: remove: {exc}", file=log)
        for s, h in previous.items():
            signal.signal(s, h)
    frame = sampler.frame()
    out = Path(out_dir)
    with atomic_path(out / "telemetry.csv") as tmp:
        frame.to_csv(tmp, index=False)
    metrics["runner"] = "docker"
    metrics["telemetry"] = summarise_telemetry(
        frame, metrics["n_train"] * metrics["epochs"], gpus, cpu_energy
    )
    metrics["container"] = {
        "image": image["tag"],
        "image_id": image.get("image_id"),
        "nano_cpus": kwargs["nano_cpus"],
        "mem_limit": kwargs["mem_limit"],
        "gpus": gpus,
        "docker_host": target.get("docker_host") or os.environ.get("DOCKER_HOST", "local"),
    }
    write_json(out / "metrics.json", metrics)
    return metrics


def _copy_out(container, out_dir: Path) -> dict:
    """Copy /work/out of the container into ``out_dir`` (each file atomically); return the
    metrics it holds."""
    stream, _ = container.get_archive(f"{WORK}/out")
    with tempfile.TemporaryFile() as buf, tempfile.TemporaryDirectory() as tmp:
        for chunk in stream:
            buf.write(chunk)
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            tar.extractall(tmp, filter="data")
        src = Path(tmp) / "out"
        metrics = read_json(src / "metrics.json")
        out_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(src.iterdir()):
            if f.name in ("metrics.json", "telemetry.csv"):
                continue  # written by run(), from the samples taken outside the container
            with atomic_path(out_dir / f.name, suffix=f.suffix) as tmpf:
                tmpf.write_bytes(f.read_bytes())
    return metrics


def containers_with_label(client=None) -> list:
    """Every container (running or not) carrying the project label."""
    client = client or docker_client()
    return client.containers.list(all=True, filters={"label": LABEL})

"""The hardware targets a configuration names, resolved.

Each ``targets:`` entry becomes a :class:`Target` with every default applied (those that
depend on other settings, such as ``threads`` = ``cpus``, in :func:`resolve_target` and
nowhere else); :func:`resolve_targets` keeps those that can run where the jobs run (the
hardware policy, ``on_missing_hardware``), and :func:`expand_sweeps` derives the points of
``sweeps:``. A target gives each of its runs (target x repeat) its
:class:`embryo_bench.vocabulary.spec.RunSpec` (:meth:`Target.spec`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConfigError
from ..published import paper
from ..recording import hardware
from ..runners import docker_api
from ..vocabulary.config import apply_defaults, load_schema
from ..vocabulary.spec import Container, Preprocessing, RunSpec

#: Backends whose packages the project's container images install.
IMAGE_BACKENDS = ("tensorflow",)


@dataclass(frozen=True)
class Target:
    """A hardware target (an entry of ``targets:``, or a sweep point derived from one) with
    every default resolved. Field meanings: ``config/README.md``; sizes are Docker sizes
    ("4g"), prices USD per hour."""

    name: str
    runner: str
    cpus: int
    threads: int
    gpus: int
    memory: str
    backend: str
    strategy: str
    batch_size: int
    repeats: int
    image: str
    shm_size: str
    docker_host: str
    gpu_model: str
    runtime_min: int
    hourly_usd: float | None
    price_source: str
    paper_system: str
    description: str
    precision: str = "float32"
    sweep: dict | None = None
    #: How a docker target's daemon is reached (:func:`target_daemon`); None for host targets.
    daemon: docker_api.Daemon | None = None

    @property
    def memory_mib(self) -> int:
        """``memory`` in MiB (rounded up)."""
        return hardware.size_mib(self.memory)

    @property
    def replicas(self) -> int:
        """Devices of a mirrored strategy: the GPUs, else the cpus as logical devices."""
        return self.gpus or self.cpus

    def spec(self, repeat: int, train: dict, preprocessing: Preprocessing) -> RunSpec:
        """The run spec of repeat ``repeat`` of this target under the config's ``train``
        section.

        Raises:
            ValueError: repeat < 1.
        """
        container = (
            Container(
                image=self.image,
                memory=self.memory,
                shm_size=self.shm_size,
                docker_host=self.docker_host,
            )
            if self.runner == "docker"
            else None
        )
        return RunSpec(
            target=self.name,
            repeat=repeat,
            runner=self.runner,
            cpus=self.cpus,
            threads=self.threads,
            gpus=self.gpus,
            backend=self.backend,
            strategy=self.strategy,
            replicas=self.replicas,
            epochs=train["epochs"],
            batch_size=self.batch_size,
            learning_rate=train["learning_rate"],
            dropout=train["dropout"],
            seed=run_seed(train["seed"], repeat),
            accuracy_target=train["accuracy_target"],
            probe_seconds=train["probe_seconds"],
            preprocessing=preprocessing,
            container=container,
            sweep=self.sweep,
            precision=self.precision,
            **variant_settings(train),
            **dispatch_settings(train),
        )

    def report_fields(self) -> dict:
        """What the figures need of a target beyond its runs: price, its source, the paper's
        system it stands for, description, sweep point."""
        keys = ("hourly_usd", "price_source", "paper_system", "description", "sweep")
        return {k: getattr(self, k) for k in keys}


def variant_settings(train: dict) -> dict:
    """The run-spec fields of ``train.variant``: variant, epoch_steps, holdout, test_subset
    (zeros for the Keras variant; ``train.original``'s for the original one)."""
    if train["variant"] == "keras":
        return {"variant": "keras", "epoch_steps": 0, "holdout": 0, "test_subset": 0}
    return {"variant": "original", **train["original"]}


def dispatch_settings(train: dict) -> dict:
    """The run-spec field of ``train.steps_per_execution`` where the ``train`` section has
    it (a configuration's, its schema default filled in); none otherwise (the run spec's
    default, the trainer's choice)."""
    return {k: train[k] for k in ("steps_per_execution",) if k in train}


def memory_defaults(schema: dict) -> dict[str, str]:
    """Runner -> the memory of a training job whose target sets none (a docker target's
    container limit, what a cluster reserves for a host-runner job): the schema's
    ``x-default-by-runner`` of ``targets[].memory``."""
    return schema["properties"]["targets"]["items"]["properties"]["memory"]["x-default-by-runner"]


def resolve_target(
    entry: dict, train: dict, schema: dict | None = None, on_this_machine: bool = True
) -> Target:
    """A :class:`Target` from one ``targets:`` entry whose schema defaults are already filled
    in (:func:`load_config`), applying the defaults that depend on other settings: threads =
    cpus, memory by runner (:func:`memory_defaults` of ``schema``, default: the checkout's),
    batch size and repeats from ``train``; ``on_this_machine``: as :func:`target_daemon`'s.

    Raises:
        ConfigError: a daemon that cannot be reached safely (:func:`target_daemon`), more
            threads than cpus (they would share the pinned cores), a docker target on a
            backend its image does not install, strategy mirrored on a backend other than
            TensorFlow, or GPUs in a docker target of the cpu image.
    """
    t = Target(
        name=entry["name"],
        runner=entry["runner"],
        cpus=entry["cpus"],
        threads=entry.get("threads", entry["cpus"]),
        gpus=entry["gpus"],
        memory=entry.get("memory") or memory_defaults(schema or load_schema())[entry["runner"]],
        backend=entry["backend"],
        strategy=entry["strategy"],
        batch_size=train["batch_size"],
        repeats=entry.get("repeats", train["repeats"]),
        image=entry["image"],
        shm_size=entry["shm_size"],
        docker_host=entry.get("docker_host", ""),
        gpu_model=entry.get("gpu_model", ""),
        runtime_min=entry["runtime_min"],
        hourly_usd=entry.get("hourly_usd"),
        price_source=entry["price_source"],
        paper_system=entry.get("paper_system", ""),
        description=entry["description"],
        precision=entry["precision"],
        daemon=target_daemon(entry, on_this_machine),
    )
    if t.threads > t.cpus:
        raise ConfigError(
            f"target {t.name}: threads {t.threads} > cpus {t.cpus}: the run is pinned to "
            f"{t.cpus} core(s), so its threads (and its calibration probe's) would share "
            f"them; set cpus: {t.threads} or threads <= {t.cpus}"
        )
    if t.runner == "docker" and t.backend not in IMAGE_BACKENDS:
        raise ConfigError(
            f"target {t.name}: backend {t.backend} with runner docker: the images "
            f"install {', '.join(IMAGE_BACKENDS)} only; use runner: host in an "
            f"environment with {t.backend} installed"
        )
    # Settings no run of the target could train with: the trainer refuses each when the run
    # starts (training.backend), after the plan passed them and the data was made.
    if t.strategy == "mirrored" and t.backend != "tensorflow":
        raise ConfigError(
            f"target {t.name}: strategy mirrored with backend {t.backend}: MirroredStrategy "
            "is TensorFlow's (tf.distribute); use backend: tensorflow, or strategy: none"
        )
    if t.runner == "docker" and t.gpus and t.image != "gpu":
        raise ConfigError(
            f"target {t.name}: gpus {t.gpus} with image {t.image}, whose TensorFlow is a CPU "
            "build; use image: gpu"
        )
    return t


def target_daemon(entry: dict, on_this_machine: bool = True) -> docker_api.Daemon | None:
    """How a docker target's daemon is reached: its ``docker_host``, ``docker_tls`` (else
    the Docker environment's TLS variables) and ``accept_unauthenticated_daemon``, resolved
    and checked by :func:`embryo_bench.runners.docker_api.resolve_daemon`; None for a
    host target. The TLS files are checked only ``on_this_machine`` (where Snakemake plans
    the jobs): a plan made again in a cluster job on a node does not need them (a preprocessing
    job), and the docker runner checks them where it uses the daemon.

    Raises:
        ConfigError: as :func:`embryo_bench.runners.docker_api.resolve_daemon`, prefixed with the
            target's name: a malformed address, plain TCP to another machine without TLS or
            ``accept_unauthenticated_daemon``, a TLS file missing, unreadable or not matching.
    """
    if entry["runner"] != "docker":
        return None
    try:
        return docker_api.resolve_daemon(
            entry.get("docker_host", ""),
            entry.get(docker_api.TLS_SETTING),
            entry.get(docker_api.UNAUTHENTICATED_SETTING, False),
            check_files=on_this_machine,
        )
    except ConfigError as exc:
        raise ConfigError(f"target {entry['name']}: {exc}") from None


def target_from_entry(entry: dict, train: dict | None = None, schema: dict | None = None):
    """:func:`resolve_target` for a bare ``targets:`` entry: the schema's target defaults are
    filled in first; ``train`` defaults to the paper's batch size and the schema's repeats
    (for tests and tools).

    Raises:
        ConfigError: the entry does not match the schema, or as :func:`resolve_target`.
    """
    schema = schema or load_schema()
    item = schema["properties"]["targets"]["items"]
    train = train or {
        "batch_size": paper.BATCH_SIZE,
        "repeats": schema["properties"]["train"]["properties"]["repeats"]["default"],
    }
    return resolve_target(apply_defaults(entry, item), train, schema)


def run_seed(base_seed: int, repeat: int) -> int:
    """Seed of repeat ``repeat`` (1-based): ``base_seed + repeat - 1``.

    Raises:
        ValueError: repeat < 1.
    """
    if repeat < 1:
        raise ValueError(f"repeat numbers start at 1, got {repeat}")
    return base_seed + repeat - 1


def sweep_point_name(base: str, batch_size: int, threads: int, precision: str = "") -> str:
    """Name of a sweep point's derived target, e.g. ``host-1cpu.bs64-t2``, or with a precision
    (a sweep that lists precisions) ``host-1cpu.bs64-t2-mixed_bfloat16``."""
    return f"{base}.bs{batch_size}-t{threads}" + (f"-{precision}" if precision else "")


def expand_sweeps(sweeps: list[dict], targets: dict[str, Target]) -> dict[str, Target]:
    """The derived targets of every ``sweeps:`` entry (batch size, threads and precision).

    Each entry (schema defaults filled in) names a ``target`` and lists ``batch_size``,
    ``threads`` and/or ``precision`` values (each defaulting to the target's own); every
    combination becomes a target named by :func:`sweep_point_name`: a copy of the base target
    (pinned to its cpus) with that batch size, thread count and precision, the entry's
    ``repeats``, no ``paper_system``, and ``sweep`` = {base, batch_size, threads} (with
    ``precision`` where the entry lists precisions: the points of sweeps without it keep
    their names and cached runs).

    Raises:
        ConfigError: an entry names a target that is not (or no longer, after the hardware
            check) among ``targets``, asks for more threads than the target's cpus, makes a
            point with the name of a target, or two entries produce the same point.
    """
    points: dict[str, Target] = {}
    for i, entry in enumerate(sweeps):
        base = entry["target"]
        if base not in targets:
            raise ConfigError(
                f"sweeps[{i}].target {base!r}: no such target runs here "
                f"(running: {', '.join(sorted(targets)) or 'none'})"
            )
        t = targets[base]
        swept = "precision" in entry
        for b, n, p in itertools.product(
            entry.get("batch_size", [t.batch_size]),
            entry.get("threads", [t.threads]),
            entry.get("precision", [t.precision]),
        ):
            name = sweep_point_name(base, b, n, p if swept else "")
            if n > t.cpus:
                raise ConfigError(
                    f"sweeps[{i}]: threads {n} on target {base}, which has cpus {t.cpus}: "
                    f"the point's threads would share {t.cpus} pinned core(s); list threads "
                    f"up to {t.cpus}, or sweep a target with more cpus"
                )
            if name in targets:
                raise ConfigError(
                    f"sweeps[{i}]: point {name} has the name of a target in targets:; rename "
                    f"that target (<target>.bs<batch_size>-t<threads> names a sweep point)"
                )
            if name in points:
                raise ConfigError(f"sweeps[{i}]: point {name} is given twice")
            points[name] = dataclasses.replace(
                t,
                name=name,
                batch_size=int(b),
                threads=int(n),
                precision=p,
                repeats=int(entry["repeats"]),
                paper_system="",
                sweep={"base": base, "batch_size": int(b), "threads": int(n)}
                | ({"precision": p} if swept else {}),
            )
    return points


#: Why a target cannot run where the jobs run, or None if it can (see :mod:`hardware`).
Probe = Callable[[Target], "str | None"]


def default_probe(mode: str) -> Probe | None:
    """The hardware check of ``hardware_check`` mode: "local" (this host and the targets'
    Docker daemons), "slurm" (the cluster's nodes from sinfo) or "none" (None: no check).

    Raises:
        ConfigError: the Slurm cluster cannot be asked for its nodes.
    """
    if mode == "none":
        return None
    if mode == "slurm":
        try:
            return hardware.SlurmProbe(hardware.slurm_nodes())
        except hardware.ClusterError as exc:
            raise ConfigError(f"hardware_check: slurm: {exc}") from exc
    return hardware.LocalProbe(daemon_info=docker_api.daemon_info)


def resolve_targets(
    config: dict, schema: dict, probe: Probe | None, on_this_machine: bool = True
) -> tuple[dict[str, Target], dict[str, str]]:
    """The targets of a validated configuration that can run where the jobs run, and those
    left out: each ``targets:`` entry resolved (:func:`resolve_target`), asked of ``probe``
    (None: every target runs), and kept, skipped or refused by ``on_missing_hardware``.

    Returns:
        (name -> target that runs, in the configuration's order; name -> why it cannot run
        here, for ``on_missing_hardware: skip``).

    Raises:
        ConfigError: as :func:`resolve_target`; a target that cannot run here with
            ``on_missing_hardware: fail``; no target able to run.
    """
    targets, skipped = {}, {}
    for entry in config["targets"]:
        t = resolve_target(entry, config["train"], schema, on_this_machine)
        why = probe(t) if probe else None
        if why is None:
            targets[t.name] = t
        elif config["on_missing_hardware"] == "skip":
            skipped[t.name] = why
        else:
            raise ConfigError(
                f"target {t.name}: {why}; set on_missing_hardware: skip to leave it out"
            )
    if not targets:
        raise ConfigError(
            "no target can run on this host: " + "; ".join(f"{n}: {w}" for n, w in skipped.items())
        )
    return targets, skipped

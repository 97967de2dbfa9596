"""Everything decided about a configuration before any job runs.

:meth:`Plan.from_config` validates the configuration against ``config/schema.yaml`` and fills
in the schema's defaults (once, here), resolves each hardware target into a :class:`Target`
(the defaults that depend on other settings, such as ``threads`` = ``cpus``, are applied in
:func:`resolve_target` and nowhere else), checks which targets can run where the jobs will run
(the hardware policy, ``on_missing_hardware``), expands ``sweeps:`` into derived targets, and
gives each run (target x repeat) its :class:`embryo_bench.vocabulary.spec.RunSpec`. The Snakemake
workflow is a thin adapter over a :class:`Plan`; tests use it without Snakemake.

A *run* is one training of the model: a target and a repeat number 1..N. Each run is its own
cached job writing ``train/<target>/repeat-<k>/``; repeat k trains with seed
``train.seed + k - 1`` (MLPerf-style repeated runs, reported as median and min-max).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..data import registry
from ..errors import ConfigError, DataError
from ..io import tree_stamp
from ..published import paper, studies
from ..recording import hardware
from ..recording.baseline import SETTING, load_baseline, machine_differences, settings_differences
from ..recording.calibrate import LAG_REACH, judged_lengths
from ..reporting.merge import check_folders, check_own_runs, unfinished_runs
from ..runners import docker_api
from ..vocabulary import layout
from ..vocabulary.config import Source, apply_defaults, load_config, load_schema
from ..vocabulary.figspec import FiguresSpec, check_written_spec
from ..vocabulary.layout import PAPER_WORKLOAD
from ..vocabulary.round_check import check_path, read_check
from ..vocabulary.spec import INPUT_SHARDS, Container, Preprocessing, RunSpec
from . import bounds
from .rounds import Decision, decide
from .workloads import Workload, check_offline_copy, resolve_workloads

#: Backends whose packages the project's container images install.
IMAGE_BACKENDS = ("tensorflow",)
#: How figures name each kind of data on their face, unless ``dataset.label`` says.
DATASET_LABELS = {
    "synthetic": "SYNTHETIC frames (generated, not real embryos)",
    "imagefolder": "real images from {path}",
    "local": "Mouse Embryo Tracking Database (local copy)",
    "mouse-embryo-tracking-db": "Mouse Embryo Tracking Database (Cicconet et al. 2014)",
}


# --- configuration -------------------------------------------------------------------------


def dataset_label(dataset: dict) -> str:
    """How figures and tables name the data on their face: ``dataset.label``, else one per
    kind (:data:`DATASET_LABELS`)."""
    if dataset.get("label"):
        return dataset["label"]
    return DATASET_LABELS[dataset["kind"]].format(path=dataset.get("path", ""))


# --- targets -------------------------------------------------------------------------------


def daemon_key(docker_host: str) -> str:
    """A file-name-safe key of a Docker daemon address, e.g. ``tcp://127.0.0.1:23750`` ->
    ``tcp-127.0.0.1-23750``, ``ssh://bench@gpu-box`` -> ``ssh-bench-gpu-box``."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", docker_host).strip("-")


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
            Container(self.image, self.memory, self.shm_size, self.docker_host)
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


def cost_base(cost: dict, targets: list[dict], running: list[str]) -> tuple[str, str]:
    """The target that time and cost are normalised to (``cost.base_target``), and a note
    when it cannot be used here.

    Args:
        cost: the config's ``cost`` section.
        targets: the config's targets, as written (before the hardware check).
        running: names of the main targets that run here.

    Returns:
        (base target name or "", note): the note is non-empty when the base target exists
        but was skipped on this host, in which case cost is not normalised.

    Raises:
        ConfigError: the base target is not among the targets, or has no ``hourly_usd``.
    """
    base = (cost or {}).get("base_target", "")
    if not base:
        return "", ""
    configured = {t["name"]: t for t in targets}
    if base not in configured:
        raise ConfigError(
            f"cost.base_target {base!r}: no such target (targets: {', '.join(configured)})"
        )
    if configured[base].get("hourly_usd") is None:
        raise ConfigError(f"cost.base_target {base!r} has no hourly_usd")
    if base not in running:
        return "", f"cost not normalised: base target {base} does not run here (skipped)"
    return base, ""


def compare_base(
    compare: dict, cost_base_name: str, targets: dict[str, Target], configured: list[str]
) -> tuple[str, str]:
    """The target every other is compared with round by round (``compare.base``), and a note
    when the configured one cannot be used here.

    Args:
        compare: the config's ``compare`` section.
        cost_base_name: the cost base that runs here ("" if none).
        targets: the targets that run, main targets first (config order), then sweep points.
        configured: every target name the config gives (before the hardware check), and the
            sweep points' names.

    Returns:
        (base, note): ``compare.base`` if it runs; else the cost base if it runs; else the
        first target; the note is non-empty when ``compare.base`` was skipped here. That
        the base has the most repeats of each workload is :meth:`Plan.check_base_repeats`'.

    Raises:
        ConfigError: ``compare.base`` names no target.
    """
    wanted, note = compare.get("base", ""), ""
    if wanted and wanted not in configured:
        raise ConfigError(
            f"compare.base {wanted!r}: no such target (targets: {', '.join(configured)})"
        )
    if wanted and wanted not in targets:
        note = f"compare.base {wanted} does not run here (skipped); comparing with "
        wanted = ""
    base = wanted or cost_base_name or next(iter(targets))
    if note:
        note += base
    return base, note


#: The orders of the targets within a round (``compare.order``; :func:`round_order`).
ROUND_ORDERS = ("alternate", "shuffle", "balanced")


def williams_rows(n: int) -> list[list[int]]:
    """A Williams design for ``n`` treatments (Williams 1949, "Experimental designs balanced
    for the estimation of residual effects of treatments"): rows of a Latin square, each a
    permutation of range(n), such that over all rows every index stands in every position
    equally often and directly follows every other index equally often. n rows for an even
    n; 2n for an odd n (the square and its mirror image); the first n rows are a Latin
    square. Relabelled so that the first row is range(n) (round 1 runs in configuration
    order, as under ``alternate``; a relabelling keeps both balances).

    Raises:
        ValueError: n < 1.
    """
    if n < 1:
        raise ValueError(f"a Williams design needs at least one treatment, got {n}")
    first, low, high = [0], 1, n - 1
    while low <= high:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        if low != high:
            first.append(high)
        low, high = low + 1, high - 1
    label = {old: new for new, old in enumerate(first)}
    rows = [[label[(i + r) % n] for i in first] for r in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 and n > 1 else rows


def round_order(
    targets: dict[str, Target], order: str = "alternate", seed: int = 0, rounds: int = 0
):
    """Every run as (target, repeat) in the order rounds run them (interleaved, so a drift
    of the machine's speed lands on every target alike): round k holds
    repeat k of every target with at least k repeats; a round beyond every target's repeats
    (``compare.until`` adds them) holds every target.

    Args:
        targets: main targets (config order), then sweep points.
        order: "alternate": config order in odd rounds, reversed in even ones (ABC CBA ABC:
            a steady drift of the machine's speed lands on every target alike);
            "shuffle": a new order each round, :class:`random.Random` seeded with
            ``seed`` and the round; "balanced": the rows of a Williams Latin square
            (:func:`williams_rows`) in turn, so over a cycle of n rounds (2n for an odd n)
            every target runs in every position equally often and after every other
            target equally often (for two targets it is "alternate").
        rounds: how many rounds (0: the most repeats of any target). Round k's runs and
            their order do not depend on it, so more rounds only add runs at the end.

    Returns:
        list of (target, repeat), round 1 first.

    Raises:
        ValueError: an unknown order.
    """
    if order not in ROUND_ORDERS:
        raise ValueError(f"round order must be one of {', '.join(ROUND_ORDERS)}, got {order!r}")
    most = max(t.repeats for t in targets.values())
    runs = []
    for k in range(1, (rounds or most) + 1):
        names = [n for n, t in targets.items() if t.repeats >= k or k > most]
        if order == "shuffle":
            random.Random(f"{seed}/{k}").shuffle(names)
        elif order == "balanced":
            rows = williams_rows(len(names))
            names = [names[i] for i in rows[(k - 1) % len(rows)]]
        elif k % 2 == 0:
            names.reverse()
        runs += [(n, k) for n in names]
    return runs


# --- the plan ------------------------------------------------------------------------------

#: Why a target cannot run where the jobs run, or None if it can (see :mod:`hardware`).
Probe = Callable[[Target], "str | None"]


def check_study(name: str, sources: list[Source] = ()) -> None:
    """``study:`` names a study (a folder of ``src/embryo_bench/studies/``) whose numbers file
    and claims module exist; "" (no study) passes. With ``sources`` (the files the
    configuration was merged from, in order), the files that name a study name the same one:
    a study's short form (``config/<study>-short.yaml``) names the study it shortens, so
    layered over another study's configuration it is refused here, where it would otherwise
    run its own workloads under the other study's name, beside the other study's numbers
    and claims. A later file may still clear it (``study: ""``: no study).

    Raises:
        ConfigError: one line naming the setting and the known names, the missing file, or
            the two files that name different studies.
        DataError: the registry itself is unreadable (naming it), or the study's numbers
            file is not the one it records (its sha256:
            :func:`embryo_bench.published.studies.check_numbers_file`).
    """
    named = [(origin, str(data["study"])) for origin, data in sources if data.get("study")]
    for origin, theirs in named[1:]:
        first, ours = named[0]
        if theirs != ours:
            raise ConfigError(
                f"study: {theirs!r} ({origin}) layered over {ours!r} ({first}): files "
                "layered as one configuration name one study; a study's short form goes "
                f"over its own study's configuration (config/{theirs}.yaml)"
            )
    if not name:
        return
    known = studies.studies()
    if name not in known:
        raise ConfigError(
            f"study: {name!r} is not a study of src/embryo_bench/studies/; expected one of "
            f'{", ".join(sorted(known))} (or "" for none)'
        )
    study = known[name]
    for what, path in (("numbers file", study.path), ("claims module", study.claims_path)):
        if not path.is_file():
            raise ConfigError(f"study: {name}: its {what} {path} does not exist")
    studies.check_numbers_file(study)


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


@dataclass
class Plan:
    """What a configuration asks for, resolved.

    Attributes:
        config: the validated configuration with every default.
        targets: every target that runs, main targets (config order) then sweep points.
        skipped: target name -> why it cannot run here (``on_missing_hardware: skip``).
        cost_base, cost_note: as :func:`cost_base`.
        compare_base, compare_note: as :func:`compare_base`.
        on_this_machine: as :meth:`from_config`'s.
    """

    config: dict
    targets: dict[str, Target]
    skipped: dict[str, str]
    cost_base: str
    cost_note: str
    compare_base: str = ""
    compare_note: str = ""
    on_this_machine: bool = True
    #: Every workload, by name, in the configuration's order (:mod:`.workloads`).
    workloads: dict[str, Workload] = field(default_factory=dict)

    @classmethod
    def from_config(
        cls,
        config: dict,
        *,
        probe: Probe | None = None,
        hardware_check: str | None = None,
        schema: dict | None = None,
        on_this_machine: bool = True,
        sources: list[Source] = (),
    ) -> Plan:
        """Resolve a configuration.

        Args:
            config: as loaded from YAML (defaults are filled in here).
            probe: the hardware check to use (tests); default: the one ``hardware_check``
                (argument, else the config's) names, :func:`default_probe`.
            hardware_check: "local", "slurm" or "none"; overrides the config's (a job that
                a cluster runs on a node passes "none": its allocation holds what it asked
                for).
            schema: the schema (default: :func:`load_schema`).
            on_this_machine: this process runs where Snakemake plans the jobs (False in a
                job a cluster runs on a node: the plan was checked where Snakemake started,
                this node is not the machine a ``stability.baseline`` is compared with, and
                it need not hold a ``docker_host``'s TLS files: :func:`target_daemon`).
            sources: the configuration files it was merged from (:func:`load_config`): a
                refused setting is named with the file that set it.

        Raises:
            ConfigError: an invalid configuration, a ``study:`` that is unknown or that
                two of ``sources`` name differently (:func:`check_study`: a study's short
                form over another study's configuration), a target that cannot run here with
                ``on_missing_hardware: fail``, no target able to run, a sweep of a target
                that does not run, an unknown or unpriced cost base, a ``merge:`` folder that
                is missing or holds no finished run, two ``docker_host`` values with the
                same file key, a ``stability.baseline`` that cannot be used
                (:attr:`baseline`), a file the figures job would fail on
                (:meth:`check_figures_inputs`, only ``on_this_machine``), a comparison
                base with fewer repeats of a workload than another target
                (:meth:`check_base_repeats`), ``compare.max_rounds`` below the first rounds
                (:meth:`check_rounds`), or a
                damaged round check (:meth:`check_round_checks`, only ``on_this_machine``).
            DataError: only ``on_this_machine``: a workload's offline copy (``path:``)
                without one of its dataset's files, or with a file of another size than the
                registry's and not accepted by its sha256
                (:func:`embryo_bench.planning.workloads.check_offline_copy`).
        """
        schema = schema or load_schema()
        config = load_config(config, schema, sources)
        check_study(config.get("study", ""), sources)
        if probe is None:
            probe = default_probe(hardware_check or config["hardware_check"])
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
                "no target can run on this host: "
                + "; ".join(f"{n}: {w}" for n, w in skipped.items())
            )
        main = list(targets)
        targets.update(expand_sweeps(config["sweeps"], targets))
        base, note = cost_base(config["cost"], config["targets"], main)
        compared, compare_note = compare_base(
            config["compare"], base, targets, [e["name"] for e in config["targets"]] + list(targets)
        )
        plan = cls(
            config,
            targets,
            skipped,
            base,
            note,
            compared,
            compare_note,
            on_this_machine,
            resolve_workloads(config),
        )
        plan.check_base_repeats()
        plan.check_rounds()
        # The checks that a property makes, made now: before any job, and by check-config.
        plan.merged_run_dirs  # noqa: B018
        plan.remote_daemons  # noqa: B018
        bounds.check_plan(plan)  # sizes, memory, disk, generator, split
        plan.baseline  # noqa: B018
        if on_this_machine:  # a cluster job's parse: the workflow that submitted it checked
            plan.check_figures_inputs()
            plan.check_round_checks()
            for workload in plan.workloads.values():  # sizes only: reading them takes seconds
                check_offline_copy(workload)
        return plan

    def workload_targets(self, workload: str) -> dict[str, Target]:
        """The targets a workload's runs train on: every target for a workload trained by
        the ``train`` section (the paper's), the main targets (not the sweep points, which
        vary that section's batch size and threads) for one with a recipe of its own
        (:attr:`embryo_bench.planning.workloads.Workload.own_recipe`); each with the repeats
        it runs of that workload: its own (a ``targets:`` entry's ``repeats``, a sweep
        point's), else the workload's (:attr:`embryo_bench.planning.workloads.Workload.
        repeats`: its entry's, its catalog entry's, ``train.repeats``)."""
        w = self.workloads.get(workload)
        if w is None or not w.own_recipe:
            targets = self.targets
        else:
            targets = {n: t for n, t in self.targets.items() if not t.sweep}
        if w is None or w.repeats is None:
            return targets
        own = {e["name"] for e in self.config["targets"] if "repeats" in e}
        return {
            n: t if t.sweep or n in own else dataclasses.replace(t, repeats=w.repeats)
            for n, t in targets.items()
        }

    def check_base_repeats(self) -> None:
        """Every workload's comparison base (:attr:`compare_base`, where it trains the
        workload) runs at least as many repeats of it as any other target: round k
        compares each target's repeat k with the base's.

        Raises:
            ConfigError: naming the base, its repeats (of the workload, where it is not the
                paper's) and the targets that run more.
        """
        for workload in self.workloads:
            targets = self.workload_targets(workload)
            base = targets.get(self.compare_base)
            if base is None:
                continue
            more = [n for n, t in targets.items() if t.repeats > base.repeats]
            if more:
                # The repeats of a workload with a recipe of its own are its own; the
                # train section's are the targets'.
                own = self.workloads[workload].own_recipe
                of = f" of workload {workload}" if own else ""
                raise ConfigError(
                    f"compare.base {base.name}: {base.repeats} repeats{of}, but "
                    f"{', '.join(more)} run more; each round needs the base target, so give "
                    "it the most repeats"
                )

    def _round_targets(self) -> dict[tuple[str, str], Target]:
        """(workload, target name) -> target, for every run's workload and target."""
        return {(w, n): t for w in self.workloads for n, t in self.workload_targets(w).items()}

    @property
    def first_rounds(self) -> int:
        """The rounds that always run: the most repeats of any target in any workload (the
        base's)."""
        return max(t.repeats for t in self._round_targets().values())

    def check_rounds(self) -> None:
        """``compare.max_rounds`` leaves room for the rounds that run first
        (:attr:`first_rounds`) when ``compare.until`` is set.

        Raises:
            ConfigError: naming both settings and the target with the most repeats.
        """
        first = self.first_rounds
        if self.until and self.max_rounds < first:
            most = next(n for (_, n), t in self._round_targets().items() if t.repeats == first)
            raise ConfigError(
                f"compare.max_rounds {self.max_rounds}: fewer than the {first} rounds that run "
                f"first (the repeats of target {most}); compare.until adds rounds after "
                f"those, so set max_rounds >= {first}"
            )

    @property
    def until(self) -> float:
        """``compare.until``: the half-width wanted of every ratio interval (a fraction);
        0.0 when rounds are not added."""
        return float(self.config["compare"]["until"])

    @property
    def max_rounds(self) -> int:
        """The most rounds that may run: ``compare.max_rounds`` with ``compare.until``, else
        :attr:`first_rounds`."""
        return self.config["compare"]["max_rounds"] if self.until else self.first_rounds

    @functools.cached_property
    def planned_runs(self) -> list[tuple[str, str, int]]:
        """Every run that may run, as (workload, target, repeat), in the order the rounds
        run them (:func:`round_order`, ``compare.order``), up to
        :attr:`max_rounds` rounds: round k holds repeat k of every workload on every
        target that runs at least k repeats of it (:meth:`workload_targets`: a workload
        with fewer repeats has no run in the rounds after its last), so a drift of the
        machine's speed lands on every workload alike; the rounds ``compare.until`` adds
        (after the most repeats) are shared by every workload and target alike."""
        c = self.config["compare"]
        order = round_order(self._round_targets(), c["order"], c["seed"], self.max_rounds)
        return [(w, n, k) for (w, n), k in order]

    def round_runs(self, rounds: int | None = None) -> list[tuple[str, str, int]]:
        """The runs of rounds 1..``rounds`` (default: :attr:`first_rounds`) as (workload,
        target, repeat), in the planned order (:attr:`planned_runs`).

        Raises:
            ValueError: ``rounds`` is more than :attr:`max_rounds`.
        """
        rounds = rounds or self.first_rounds
        if rounds > self.max_rounds:
            raise ValueError(f"{rounds} rounds: this plan has at most {self.max_rounds}")
        return [r for r in self.planned_runs if r[2] <= rounds]

    @functools.cached_property
    def all_runs(self) -> list[tuple[str, str, int]]:
        """Every run of the rounds that always run (:attr:`first_rounds`: without
        ``compare.until``, every run) as (workload, target, repeat), in the planned order
        (:attr:`planned_runs`)."""
        return self.round_runs()

    def workload_runs(self, workload: str, rounds: int | None = None) -> list[tuple[str, int]]:
        """A workload's runs of rounds 1..``rounds`` (default: :attr:`first_rounds`) as
        (target, repeat), in the planned order."""
        return [(t, k) for w, t, k in self.round_runs(rounds) if w == workload]

    @property
    def runs(self) -> list[tuple[str, int]]:
        """Every run of the paper's workload as (target, repeat), in the order the rounds
        run them (:attr:`all_runs`); none when the configuration leaves that workload out."""
        return self.workload_runs(PAPER_WORKLOAD)

    def previous_run(
        self, target: str, repeat: int, workload: str = PAPER_WORKLOAD
    ) -> tuple[str, int, str] | None:
        """The run that runs just before this one in :attr:`planned_runs`, as (target,
        repeat, workload) (None for the first): the workflow makes each run wait for it, so
        the rounds run in the planned order.

        Raises:
            KeyError: no such run.
        """
        runs = self.planned_runs
        try:
            i = runs.index((workload, target, repeat))
        except ValueError:
            raise KeyError(f"no run {target} repeat {repeat} of {workload} in this plan") from None
        if not i:
            return None
        w, t, k = runs[i - 1]
        return t, k, w

    # --- rounds until the answer is sure (compare.until) -----------------------------------

    def comparison_base(self, workload: str = PAPER_WORKLOAD) -> str:
        """The target a workload's runs are compared with: :attr:`compare_base` where it
        trains that workload, else the target of the workload's first run (as the figures
        take it)."""
        if self.compare_base in self.workload_targets(workload):
            return self.compare_base
        return self.workload_runs(workload)[0][0]

    def round_run_dirs(self, rounds: int) -> list[str]:
        """Every run folder of every workload in rounds 1..``rounds``, in the planned order
        (what the check after round ``rounds`` reads)."""
        return [f"{self.outdir}/{layout.run_dir(t, k, w)}" for w, t, k in self.round_runs(rounds)]

    def round_check_params(self, round_: int) -> dict:
        """What the check after round ``round_`` measures (the ``round_check`` rule's
        params; :func:`embryo_bench.reporting.rounds.check_round`): per workload its base
        and its run folders of rounds 1..``round_``, and ``compare.min_difference``."""
        return {
            "round": round_,
            "min_difference": float(self.config["compare"]["min_difference"]),
            "workloads": {
                w: {"base": self.comparison_base(w), "runs": self.workload_run_dirs(w, round_)}
                for w in self.workloads
            },
        }

    def check_round_checks(self) -> None:
        """The round checks already on disk (``compare.until``), checked before any job: the
        workflow reads them when it plans the jobs, and makes one again only when its runs
        or settings change, so a damaged one would fail every plan.

        Raises:
            ConfigError: as :func:`embryo_bench.vocabulary.round_check.read_check` (naming the file,
                and that deleting it has the round measured again).
        """
        if not self.until:
            return
        for k in range(self.first_rounds, self.max_rounds + 1):
            path = Path(self.outdir) / check_path(k)
            if path.is_file():
                try:
                    read_check(path, k)
                except DataError as exc:
                    raise ConfigError(str(exc)) from None

    def round_finished(self, round_: int) -> bool:
        """Every run of round ``round_`` has all its files on disk (a round finished before
        ``compare.until`` or ``compare.max_rounds`` was changed: it is kept, not dropped)."""
        runs = [(w, t) for w, t, k in self.planned_runs if k == round_]
        return bool(runs) and all(
            (Path(self.outdir) / layout.run_dir(t, round_, w) / f).is_file()
            for w, t in runs
            for f in (*layout.RUN_FILES, layout.RUN_SPEC)
        )

    def rounds_wanted(
        self,
        read_check: Callable[[int], dict],
        finished: Callable[[int], bool] | None = None,
    ) -> tuple[int, Decision | None]:
        """How many rounds run: :attr:`first_rounds` without ``compare.until``; with it,
        one more after each round whose check asks for one
        (:func:`embryo_bench.planning.rounds.decide`), up to :attr:`max_rounds`, and every
        round already finished after those (:meth:`round_finished`: a goal loosened later
        keeps what was measured).

        Args:
            read_check: round k -> the check after round k (the workflow reads the
                ``round_check`` checkpoint's output: asking for one that is not made yet
                makes Snakemake make it, and the runs before it, then ask again).
            finished: round k -> it is on disk (default: :meth:`round_finished`).

        Returns:
            (rounds, the decision after the last of them; None without ``compare.until``).
        """
        if not self.until:
            return self.first_rounds, None
        finished = finished or self.round_finished
        k = self.first_rounds
        while True:
            decision = decide(read_check(k), k, self.until, self.max_rounds)
            if k >= self.max_rounds or not (decision.more or finished(k + 1)):
                return k, decision
            k += 1

    @property
    def preprocessing(self) -> Preprocessing:
        """The preprocessing settings the configuration asks for."""
        return Preprocessing.from_config(self.config)

    def spec(self, target: str, repeat: int, workload: str = PAPER_WORKLOAD) -> RunSpec:
        """The run spec of one run: the paper's workload's from ``train:`` and the target;
        another's with its recipe (batch size, epochs, learning rate) and its
        :class:`embryo_bench.vocabulary.spec.WorkloadSpec`, on the same target (cores, threads,
        backend, runner), with Keras's defaults (no ``train.variant``); each with its
        workload's accuracy target (:attr:`embryo_bench.planning.workloads.Workload.
        accuracy_target`: its entry's, its catalog entry's, ``train.accuracy_target``).

        Raises:
            KeyError: no such target or workload runs. ValueError: repeat < 1.
        """
        w = self.workloads[workload]
        train = self.config["train"]
        if w.accuracy_target is not None:
            train = {**train, "accuracy_target": w.accuracy_target}
        base = self.targets[target].spec(repeat, train, self.preprocessing)
        if not w.own_recipe:  # trained by the train section, on the shards' preprocessing
            return base
        return dataclasses.replace(
            base,
            epochs=w.epochs,
            batch_size=w.batch_size,
            learning_rate=w.learning_rate,
            preprocessing=None,
            workload=w.spec,
            **variant_settings({"variant": "keras"}),
        )

    def data_params(self, workload: str) -> dict:
        """How a workload's arrays are made (the ``workload_data`` rule's params).

        Raises:
            KeyError: no such workload, or the paper's (whose data is the shards).
        """
        data = self.workloads[workload].data
        if data is None:
            raise KeyError(f"workload {workload}: its data is the paper's shards")
        # The dataset's registry entry too (files, checksums, format, shape): an edit to
        # datasets.yaml remakes the arrays of the workloads that use that dataset.
        return {**data.to_dict(), "registry": dataclasses.asdict(registry.get(data.dataset))}

    def dataset_files(self, workload: str) -> list[str]:
        """The files a workload's arrays are made from: none for synthetic data, the files
        of its ``path`` (an offline copy), or the downloads under ``data/datasets/``."""
        data = self.workloads[workload].data
        if data is None or data.synthetic:
            return []
        files = [f.name for f in registry.get(data.dataset).files]
        if data.path:
            return [os.path.join(data.path, f) for f in files]
        return [f"{self.outdir}/{layout.dataset_dir(data.dataset)}/{f}" for f in files]

    def dataset_file(self, dataset: str, name: str) -> registry.DatasetFile:
        """A downloadable file of a dataset (the ``dataset_file`` rule's URL and checksum).

        Raises:
            KeyError: the dataset has no such file.
        """
        for f in registry.get(dataset).files:
            if f.name == name:
                return f
        raise KeyError(f"dataset {dataset} has no file {name}")

    @property
    def dataset_label(self) -> str:
        """How figures name the data (:func:`dataset_label`)."""
        return dataset_label(self.config["dataset"])

    def image_tag(self, image: str) -> str:
        """The tag of a project image, e.g. ``embryo-bench/cpu:0.1.0``."""
        c = self.config["containers"]
        return f"{c['tag_prefix']}/{image}:{c['tag_version'] or __version__}"

    # --- where the data comes from (rules download, extract, synthesize, index) -----------

    @property
    def outdir(self) -> str:
        """The configuration's output folder."""
        return self.config["outdir"]

    @property
    def db_dir(self) -> str:
        """Where an archive (downloaded or local) is extracted."""
        return f"{self.outdir}/{layout.DB_DIR}"

    @property
    def download_path(self) -> str:
        """Where the database archive is downloaded to (named after the URL)."""
        return f"{self.outdir}/data/{Path(self.config['dataset'].get('url', '')).name or 'db.zip'}"

    @property
    def archive(self) -> str:
        """The archive to extract: a local archive's path, else the download's."""
        ds = self.config["dataset"]
        return ds["path"] if ds["kind"] == "local" else self.download_path

    @property
    def reads_in_place(self) -> bool:
        """The source is read where it is (an image folder, a local database folder), not
        produced by the workflow."""
        ds = self.config["dataset"]
        return ds["kind"] == "imagefolder" or (ds["kind"] == "local" and Path(ds["path"]).is_dir())

    def index_inputs(self) -> dict[str, str]:
        """Files indexing waits for: the generated or extracted database (and the download
        record); nothing for a source read in place."""
        kind = self.config["dataset"]["kind"]
        if kind == "synthetic":
            return {"db": f"{self.outdir}/{layout.SYNTHETIC_DB}"}
        if self.reads_in_place:
            return {}
        if kind == "local":
            return {"db": self.db_dir}
        return {"db": self.db_dir, "info": f"{self.outdir}/{layout.DOWNLOAD_RECORD}"}

    def index_flags(self) -> list[str]:
        """Extra ``embryo-bench index`` options: the synthetic marker, the download record
        (its sha256 identifies the data), or the local archive whose sha256 does."""
        inputs = self.index_inputs()
        if self.config["dataset"]["kind"] == "synthetic":
            return ["--synthetic"]
        if "info" in inputs:
            return ["--download-info", inputs["info"]]
        if "db" in inputs:
            return ["--checksum-of", self.config["dataset"]["path"]]
        return []

    def synthetic_flags(self) -> list[str]:
        """``embryo-bench synthesize`` options for the trajectory-format variants set in
        ``dataset.synthetic`` and its exact counts (``total_frames``, ``three_cell_frames``:
        named only when set, so configurations without them keep their flags)."""
        syn = self.config["dataset"]["synthetic"]
        flags = ["--separator", syn["separator"]]
        if syn["trailing_separator"]:
            flags.append("--trailing-separator")
        flags += [
            "--unlabelled-frames",
            str(syn["unlabelled_frames"]),
            "--extra-lines",
            str(syn["extra_lines"]),
        ]
        for key in ("total_frames", "three_cell_frames"):
            if key in syn:
                flags += [f"--{key.replace('_', '-')}", str(syn[key])]
        return flags

    def source_stamp(self) -> str:
        """Identity of a source read in place (names, sizes and times of its files), so that
        changed images rerun indexing; "" for sources the workflow produces."""
        return tree_stamp(self.config["dataset"]["path"]) if self.reads_in_place else ""

    # --- images and runs ---------------------------------------------------------------------

    def image_inputs(self, image: str) -> dict[str, str]:
        """Records an image build waits for: the base image (when built here) and the
        wheelhouse (when installing from it)."""
        c, out = self.config["containers"], {}
        if c["build_base"]:
            out["base"] = f"{self.outdir}/{layout.BASE_IMAGE_RECORD}"
        if c["pip_source"] == "wheelhouse":
            out["wheelhouse"] = f"{self.outdir}/{layout.wheelhouse_record(image)}"
        return out

    @functools.cached_property
    def merged_run_dirs(self) -> list[str]:
        """The finished runs of the result folders under ``merge:`` (their run folders),
        checked (:func:`embryo_bench.reporting.merge.check_folders`).

        Raises:
            ConfigError: as :func:`embryo_bench.reporting.merge.check_folders`.
        """
        return check_folders(self.config["merge"], self.outdir, self.preprocessing.to_dict())

    def check_figures_inputs(self) -> None:
        """What the figures job will read that no job of this plan writes, checked before
        any job (``merge:`` folders: :attr:`merged_run_dirs`): the runs of
        this plan already on disk (:func:`embryo_bench.reporting.merge.check_own_runs`) and a
        ``figures-spec.json`` already written
        (:func:`embryo_bench.vocabulary.figspec.check_written_spec`). A figures job that fails costs
        the figures it would have replaced; these fail the plan instead.

        Raises:
            ConfigError: naming the file (and, for a run, the folder to delete to retrain it).
        """
        for w in self.workloads:
            check_own_runs(self.workload_run_dirs(w, self.max_rounds))
            check_written_spec(f"{self.outdir}/{layout.workload_dir(w)}{layout.FIGURES_SPEC}")

    @property
    def merge_notes(self) -> list[str]:
        """One line per run of a ``merge:`` folder that started but never finished (no
        metrics.json): it is left out of the figures, and said so."""
        return [
            f"merge: {d} left out: it has no {layout.METRICS} (a run that never finished, "
            "or is still training)"
            for outdir in self.config["merge"]
            for d in unfinished_runs(outdir)
        ]

    def image_record(self, target: str) -> list[str]:
        """The image record a docker target's runs need ([] for host targets): the build's
        record, or for a target with a ``docker_host`` the record of that image on that
        daemon (``images/<image>@<daemon_key>.json``, written by the rule that sends it)."""
        t = self.targets[target]
        if t.runner != "docker":
            return []
        if t.docker_host:
            return [f"{self.outdir}/{layout.image_record(t.image, daemon_key(t.docker_host))}"]
        return [f"{self.outdir}/{layout.image_record(t.image)}"]

    def daemon_record(self, target: str) -> list[str]:
        """The daemon record a docker target with a ``docker_host`` needs (how its daemon is
        reached: :class:`embryo_bench.runners.docker_api.Daemon`, written by the rule ``daemon``);
        [] for other targets."""
        t = self.targets[target]
        if t.runner != "docker" or not t.docker_host:
            return []
        return [f"{self.outdir}/{layout.daemon_record(daemon_key(t.docker_host))}"]

    @property
    def remote_daemons(self) -> dict[str, docker_api.Daemon]:
        """:func:`daemon_key` -> how the daemon of every ``docker_host`` a running target
        names is reached (:class:`embryo_bench.runners.docker_api.Daemon`).

        Raises:
            ConfigError: two addresses have the same key, or targets on one daemon reach it
                differently (``docker_tls``, ``accept_unauthenticated_daemon``).
        """
        out: dict[str, docker_api.Daemon] = {}
        names: dict[str, str] = {}
        for t in self.targets.values():
            if t.runner == "docker" and t.docker_host:
                key = daemon_key(t.docker_host)
                seen = out.setdefault(key, t.daemon)
                first = names.setdefault(key, t.name)
                if seen.address != t.docker_host:
                    raise ConfigError(
                        f"targets: docker_host {t.docker_host} and {seen.address} have the "
                        f"same file key {key}; write one of them differently"
                    )
                if seen != t.daemon:
                    raise ConfigError(
                        f"targets {first} and {t.name}: one docker_host {t.docker_host} reached "
                        f"two ways ({docker_api.TLS_SETTING}, "
                        f"{docker_api.UNAUTHENTICATED_SETTING}); give them the same settings"
                    )
        return out

    # --- the machine baseline (stability.baseline) ----------------------------------------

    @functools.cached_property
    def baseline(self) -> dict | None:
        """The machine baseline ``stability.baseline`` names, read and checked before any
        job (and by ``check-config``); None when the setting is empty.

        Checked here: the file (:func:`embryo_bench.recording.baseline.load_baseline`: missing,
        not JSON, a newer format, another layout or probe method, too few probes for any
        lag); with ``hardware_check: local`` (the targets run on this machine) and
        :attr:`on_this_machine`, that it was taken on this machine (host, CPU, its flags and
        cores); and that it fits at least one running target (:meth:`baseline_misfits`).
        The run's length cannot be known yet: the figures judge each run by the baseline's
        lag nearest its length only when that lag is within
        :data:`embryo_bench.recording.calibrate.LAG_REACH` of it, and by
        ``probe_change`` otherwise, saying so (:func:`embryo_bench.reporting.stability.assess`).

        Raises:
            ConfigError: one line naming ``stability.baseline``, the file, and what was
                expected and found.
        """
        path = self.config["stability"]["baseline"]
        if not path:
            return None
        base = load_baseline(path)
        if self.on_this_machine and self.config["hardware_check"] == "local":
            other = machine_differences(base["machine"], hardware.this_machine())
            if other:
                raise ConfigError(
                    f"{SETTING} {path}: taken on another machine than this one ("
                    + "; ".join(other)
                    + "), whose probe noise is not this machine's; take one here with "
                    f"`embryo-bench calibrate --out {path}`, or set {SETTING}: ''"
                )
        misfits = self.baseline_misfits(base)
        if len(misfits) == len(self.targets):
            remote = all(t.runner == "docker" and t.docker_host for t in self.targets.values())
            raise ConfigError(
                f"{SETTING} {path}: fits no running target, so it would judge no run ("
                + "; ".join(f"{n}: {why}" for n, why in misfits.items())
                + "); "
                + (
                    "a baseline judges no run on a remote daemon; set"
                    if remote
                    else "take one with a target's --backend, --threads and --cpus, or set"
                )
                + f" {SETTING}: ''"
            )
        return base

    def baseline_misfits(self, baseline: dict) -> dict[str, str]:
        """Running target -> why ``baseline`` cannot judge its runs (they are judged by
        ``probe_change``): other settings (backend, threads, cpus, GPUs,
        :func:`embryo_bench.recording.baseline.settings_differences`) or another machine (a docker
        target on a remote daemon)."""
        out = {}
        for name, t in self.targets.items():
            why = settings_differences(baseline, t.backend, t.threads, t.cpus, t.gpus, "the target")
            if why is None and t.runner == "docker" and t.docker_host:
                why = f"runs on the daemon at {t.docker_host}, another machine"
            if why:
                out[name] = why
        return out

    @property
    def baseline_notes(self) -> list[str]:
        """One line for each running target ``stability.baseline`` does not judge, and one
        on the run lengths it judges; [] without a baseline."""
        base = self.baseline
        if base is None:
            return []
        path = self.config["stability"]["baseline"]
        lags = [row["lag_s"] for row in base["changes"]]
        lengths = " and ".join(f"{low:.3g}-{high:.3g} s" for low, high in judged_lengths(base))
        notes = [
            f"{SETTING} {path}: judges runs of {lengths} (its lags "
            f"{', '.join(f'{x:.3g}' for x in lags)} s: a run by the lag nearest its length, "
            f"within {LAG_REACH:g} x of it); other runs' drift by stability.probe_change"
        ]
        for name, why in self.baseline_misfits(base).items():
            notes.append(
                f"{SETTING} {path}: not for target {name} ({why}); its drift is judged by "
                "stability.probe_change"
            )
        return notes

    def report_targets(self) -> dict[str, dict]:
        """Target name -> :meth:`Target.report_fields`, for the figures."""
        return {n: t.report_fields() for n, t in self.targets.items()}

    @property
    def run_dirs(self) -> list[str]:
        """Every run's folder of the paper's workload, in the planned order (:attr:`runs`)."""
        return self.workload_run_dirs(PAPER_WORKLOAD)

    def workload_run_dirs(self, workload: str, rounds: int | None = None) -> list[str]:
        """Every run's folder of a workload, rounds 1..``rounds`` (default:
        :attr:`first_rounds`), in the planned order."""
        return [
            f"{self.outdir}/{layout.run_dir(t, k, workload)}"
            for t, k in self.workload_runs(workload, rounds)
        ]

    def figures_spec(
        self, workload: str = PAPER_WORKLOAD, rounds: int | None = None
    ) -> FiguresSpec:
        """What a workload's figures job is given (its ``figures-spec.json``): its runs of
        rounds 1..``rounds`` (default: :attr:`first_rounds`; :meth:`rounds_wanted`). Other
        machines' folders (``merge:``: their runs on shards, checked against this
        configuration's preprocessing, :attr:`merged_run_dirs`) are merged into the figures
        of the workloads of input kind shards (the paper's) only."""
        w = self.workloads.get(workload)
        merges = w is not None and w.input_kind == INPUT_SHARDS
        targets = self.workload_targets(workload)
        return FiguresSpec(
            runs=self.workload_run_dirs(workload, rounds),
            merge=list(self.config["merge"]) if merges else [],
            targets={n: t.report_fields() for n, t in targets.items()},
            cost_base=self.cost_base,
            cost_note=self.cost_note,
            # A sweep point compared against runs only in the paper's workload.
            compare_base=self.compare_base if self.compare_base in targets else "",
            min_difference=float(self.config["compare"]["min_difference"]),
            stability=dict(self.config["stability"]),
            config=self.workload_config(workload),
        )

    def study_workloads(self) -> list[dict]:
        """Every workload as the study tables read it
        (:class:`embryo_bench.reporting.study.StudyWorkload`): name, catalog (the catalog
        workload it trains: "paper" for the paper's, "" for a model of the user's own), input,
        data ("synthetic" or "real"), spec (its ``figures-spec.json``) and info (its data's
        record, by its input kind: the index stage's ``manifest/source.json`` for the shards,
        its ``data/info.json`` for a workload's arrays)."""
        out = []
        for name, w in self.workloads.items():
            folder = f"{self.outdir}/{layout.workload_dir(name)}"
            if w.input_kind == INPUT_SHARDS:  # the stages' data, from the dataset section
                synthetic = self.config["dataset"]["kind"] == "synthetic"
                mode, info = "memory", f"{self.outdir}/manifest/source.json"
            else:
                synthetic = w.spec.synthetic
                mode, info = w.spec.input_mode, f"{folder}{layout.WORKLOAD_DATA_INFO}"
            out.append(
                {
                    "name": name,
                    "catalog": w.catalog,
                    "input": mode,
                    "data": "synthetic" if synthetic else "real",
                    "spec": f"{folder}{layout.FIGURES_SPEC}",
                    "info": info,
                }
            )
        return out

    def workload_config(self, workload: str = PAPER_WORKLOAD) -> dict:
        """The effective configuration as a workload's figures record it: its own entry of
        ``workloads:`` only (none for a workload trained by the ``train`` section, the
        paper's, whose settings are the sections above), so adding or editing another
        workload reruns none of its figures."""
        # study: changes the study's tables only, not a workload's figures.
        others = {k: v for k, v in self.config.items() if k not in ("workloads", "study")}
        w = self.workloads.get(workload)
        if w is None or not w.own_recipe:
            return others
        return {**others, "workloads": [e for e in self.config["workloads"]
                                         if e["name"] == workload]}  # fmt: skip

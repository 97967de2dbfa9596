"""Train one run of any workload and record timing, accuracy and provenance: the paper CNN
on its augmented shards, or a workload's model on its prepared arrays (from memory, or in its
``files`` input mode from its image files).

A run is described by two things: its :class:`embryo_bench.vocabulary.spec.RunSpec`
(``run.json``: every setting, resolved by the plan) and what it trains on, one
:class:`embryo_bench.vocabulary.training_input.TrainingInput` of the kind its spec names
(:attr:`RunSpec.input_kind`: ``shards`` for the paper's, ``arrays`` for every other). The
kinds differ only in how the data is loaded, which model is built and what is recorded of
them (:class:`InputKind`, :data:`KINDS`: the paper's shards by :mod:`embryo_bench.data.stages`
and its CNN by :mod:`embryo_bench.workloads.paper`; a workload's arrays by
:mod:`embryo_bench.data.arrays` and its model by its builder,
:mod:`embryo_bench.workloads.build`); everything else is one path for every workload.

Training uses only the Keras 3 API (any backend). One ``fit`` call per run, with the test
set scored after every epoch as Keras validation; a callback times each epoch's training
and scoring apart (:func:`embryo_bench.training.epochs.fit_epochs`), so three timings are reported
side by side (:func:`embryo_bench.training.history.summarise`): training only, training plus
evaluation (the paper's clock), and time to accuracy with evaluation (MLPerf). A run has three
steps: :func:`setup` (threads, seed, provenance, data, model), :func:`train_epochs` (between two
calibration probes, :mod:`embryo_bench.recording.calibrate`; a files input through
:class:`embryo_bench.training.inputs.TimedFeed`), :func:`write_outputs`;
:func:`run_training` does all three. Outputs (all written atomically):

* ``history.csv``: :data:`embryo_bench.training.epochs.HISTORY_COLUMNS` (``progress.csv`` holds the
  same rows while the run trains, one appended per epoch; it is removed when the run finishes);
* ``metrics.json``: totals, first-epoch vs steady-state times, time to accuracy, telemetry
  summary (CPU %, memory, GPU, energy), provenance
  (:func:`embryo_bench.recording.record.finish_run`);
* ``telemetry.csv``: one sample a second of the training process
  (:mod:`embryo_bench.recording.telemetry`);
* ``windows.csv``: throughput about :data:`embryo_bench.training.epochs.WINDOWS_PER_EPOCH` times an
  epoch (:data:`embryo_bench.training.epochs.WINDOW_COLUMNS`), the run's own probe of the machine's
  speed;
* ``model.keras`` and ``settings.json`` (what ``embryo-bench evaluate`` needs: for a run on
  shards the preprocessing they were made with and the classes, for a run on arrays its
  workload).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import stages
from ..data.arrays import load_run_arrays
from ..data.imagefolder import list_image_folder
from ..errors import ConfigError, DataError
from ..io import atomic_path, write_json
from ..recording import provenance
from ..recording.calibrate import PROBE_METHOD, efficiency, matmul_probe, training_flops_per_image
from ..recording.hardware import gpu_identity
from ..recording.record import finish_run
from ..recording.telemetry import Measurement, NvmlGpus, ProcessSampler
from ..runners.lifeline import check_parent
from ..vocabulary.layout import HISTORY, MODEL, PROGRESS, SETTINGS, WINDOWS
from ..vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS, Preprocessing, RunSpec
from ..vocabulary.training_input import TrainingInput
from .backend import (
    backend_devices,
    backend_name,
    compute_settings,
    device_memory_peak_mib,
    distribution_scope,
    framework_versions,
    limit_threads,
    seed_everything,
    select_backend,
    select_gpus,
    set_precision,
)
from .epochs import (
    HISTORY_COLUMNS,
    WINDOW_COLUMNS,
    fit_epochs,
    progress_line,
    steps_per_execution_for,
)
from .history import input_wait_summary, summarise, window_summary
from .inputs import ArrayImages, Augment, ImageFiles, TimedFeed

log = logging.getLogger(__name__)


@dataclass
class Session:
    """A run ready to train (:func:`setup`).

    Attributes:
        spec: the run's settings. model: the compiled Keras model.
        data: x_train, y_train, x_test, y_test (see :func:`embryo_bench.data.stages.load_dataset`).
        preprocessing: the settings the shards were made with (input kind shards); None
            for a run on arrays.
        provenance: :func:`embryo_bench.recording.provenance.collect`, taken before training.
        cores: the cores the process is pinned to. replicas_in_sync: devices training.
        backend: the Keras backend loaded. setup_seconds: wall time of the setup (s).
        windows: the throughput windows measured so far
        (:data:`embryo_bench.training.epochs.WINDOW_COLUMNS`).
        gpu_indices: NVML's indices of the GPUs the run was given (:func:`select_gpus`).
        devices: what trains: ``gpus``, NVML's identity of each GPU given
            (:func:`embryo_bench.recording.hardware.gpu_identity`), and ``backend``, the
            framework's own view (:func:`embryo_bench.training.backend.backend_devices`).
    """

    spec: RunSpec
    model: object
    data: dict
    preprocessing: Preprocessing | None
    provenance: dict
    cores: list[int]
    replicas_in_sync: int
    backend: str
    setup_seconds: float
    windows: list[dict] = field(default_factory=list)
    gpu_indices: list[int] = field(default_factory=list)
    devices: dict = field(default_factory=dict)
    #: A workload's image files, for its ``files`` input mode (None: memory).
    files: Path | None = None

    @property
    def n_train(self) -> int:
        """Training images (after the variant's holdout)."""
        return len(self.data["y_train"])

    @property
    def images_per_epoch(self) -> int:
        """Images trained per epoch: every training image, or the variant's epoch_steps
        batches."""
        s = self.spec
        return s.epoch_steps * s.batch_size if s.epoch_steps else self.n_train


@dataclass(frozen=True)
class InputKind:
    """How a run of one input kind (:data:`embryo_bench.vocabulary.spec.INPUT_KINDS`) gets
    its data and its model, and what it records of them: the only place the trainer tells
    the kinds apart (:data:`KINDS`); each kind's functions live with its data
    (:mod:`embryo_bench.data.stages` for the shards, :mod:`embryo_bench.data.arrays`) and its
    models (:mod:`embryo_bench.workloads.paper`, :mod:`embryo_bench.workloads.build`).

    Attributes:
        load: (spec, input) -> (data: ``x_train``, ``y_train``, ``x_test``, ``y_test``;
            the preprocessing settings the data was made with, or None).
        model: (spec, preprocessing, steps per execution, vocabulary) -> the compiled Keras
            model (Keras is imported by then; ``vocabulary``: the data's token-id bound, 0
            for images).
        settings: (spec, preprocessing) -> what ``settings.json`` records beside the model.
        classes: spec -> the number of classes its labels count.
        data: spec -> how messages name its data. setting: spec -> the configuration's
            prefix of its batch size (``train.``, ``workloads: <name>'s ``).
    """

    load: Callable[[RunSpec, TrainingInput], tuple[dict, Preprocessing | None]]
    model: Callable[[RunSpec, Preprocessing | None, int, int], object]
    settings: Callable[[RunSpec, Preprocessing | None], dict]
    classes: Callable[[RunSpec], int]
    data: Callable[[RunSpec], str]
    setting: Callable[[RunSpec], str]


def _shards_model(spec: RunSpec, pp: Preprocessing, per_call: int, vocabulary: int):
    # The paper CNN's module imports Keras: only now, after the backend is chosen.
    from ..workloads.paper import build_for_run

    return build_for_run(spec, pp.image_size, steps_per_execution=per_call)


def _arrays_model(spec: RunSpec, pp: None, per_call: int, vocabulary: int):
    # The builders' module imports Keras: only now, after the backend is chosen.
    from ..workloads.build import build_for_spec

    return build_for_spec(
        spec.workload, spec.learning_rate, steps_per_execution=per_call, vocabulary=vocabulary
    )


#: Each input kind's :class:`InputKind`.
KINDS = {
    INPUT_SHARDS: InputKind(
        load=lambda spec, inputs: stages.load_run_shards(spec, inputs.paths),
        model=_shards_model,
        settings=lambda spec, pp: stages.run_settings(pp),
        classes=lambda spec: stages.CLASSES,
        data=lambda spec: "the shards",
        setting=lambda spec: "train.",
    ),
    INPUT_ARRAYS: InputKind(
        load=lambda spec, inputs: (load_run_arrays(spec, inputs.arrays), None),
        model=_arrays_model,
        settings=lambda spec, pp: {"workload": spec.workload.model_dump()},
        classes=lambda spec: spec.workload.classes,
        data=lambda spec: f"workload {spec.workload.name}'s arrays",
        setting=lambda spec: f"workloads: {spec.workload.name}'s ",
    ),
}


def setup(spec: RunSpec, inputs: TrainingInput, dataset: dict) -> Session:
    """Prepare a run: choose the backend, give it the run's GPUs and no others
    (:func:`embryo_bench.training.backend.select_gpus`; none to a CPU run), pin to
    ``spec.cpus`` cores with ``spec.threads`` threads, record provenance and the devices
    (NVML's identity of each GPU, the framework's view), seed everything, load the data of
    the run's input kind (:data:`KINDS`: the shards, checked against ``spec.preprocessing``,
    or a workload's arrays), build and compile the model under the run's precision (a Keras
    dtype policy) in the distribution strategy's scope.

    Args:
        spec: the run.
        inputs: what it trains on (:class:`embryo_bench.vocabulary.training_input.TrainingInput`, of
            the kind its spec names).
        dataset: the index stage's source description, or a workload's data info
            (provenance).

    Raises:
        DataError: a shard is missing or malformed, made with other settings than the
            spec's, or a split is empty; a workload's arrays missing, damaged or not its shape.
        ConfigError: ``inputs`` of another kind than the spec's, another backend is already
            loaded, a strategy the backend or the devices cannot give, GPUs the backend does
            not see, a batch size larger than the training set, a workload's builder that
            cannot be imported.
    """
    t_setup = time.perf_counter()
    if inputs.kind != spec.input_kind:
        raise ConfigError(
            f"run {spec.target}: trains on {spec.input_kind}, given {inputs.kind} to train on"
        )
    kind = KINDS[inputs.kind]
    select_backend(spec.backend)
    run = f"run {spec.target} repeat {spec.repeat}"
    gpu_indices = select_gpus(spec.gpus, spec.backend, run)
    cores = limit_threads(spec.threads, spec.cpus)
    # Provenance before training: the commit and environment the run started from.
    prov = provenance.collect(spec.seed, dataset, backend_name(), framework_versions())
    # Keras (and so the model modules) only now: the backend is chosen above, and Keras
    # reads KERAS_BACKEND once, at its first import.
    import keras

    devices = {"gpus": gpu_identity(gpu_indices), "backend": backend_devices(spec.gpus, run)}
    set_precision(spec.precision)
    scope, replicas_in_sync = distribution_scope(spec.strategy, spec.replicas)
    seed_everything(spec.seed)
    data, pp = kind.load(spec, inputs)
    _check_batch(spec, len(data["y_train"]))
    with scope:
        model = run_model(spec, pp, len(data["y_train"]), data.get("vocabulary", 0))
    session = Session(
        spec=spec,
        model=model,
        data=data,
        preprocessing=pp,
        provenance=prov,
        cores=cores,
        replicas_in_sync=replicas_in_sync,
        backend=keras.backend.backend(),
        setup_seconds=time.perf_counter() - t_setup,
        gpu_indices=gpu_indices,
        devices=devices,
        files=Path(inputs.files) if inputs.files else None,
    )
    w = spec.workload
    log.info(
        "target %s, workload %s%s: %d train / %d test samples, %d parameters, %d threads, "
        "backend %s on %s, %s, variant %s, %s input",
        spec.target,
        spec.workload_name,
        " (SYNTHETIC data)" if w and w.synthetic else "",
        session.n_train,
        len(data["y_test"]),
        model.count_params(),
        spec.threads,
        session.backend,
        ", ".join(devices["backend"]["devices"]),
        spec.precision,
        spec.variant,
        spec.input_mode,
    )
    return session


def run_model(spec: RunSpec, pp: Preprocessing | None, n_train: int, vocabulary: int = 0):
    """The run's compiled model, by its input kind (:data:`KINDS`): the paper CNN at the
    shards' image size, or a workload's by its builder with its recipe
    (:mod:`embryo_bench.workloads.build`; Keras is imported by now), running
    :func:`embryo_bench.training.epochs.steps_per_execution_for`'s steps per execution (``n_train``:
    the training samples, whose batches make an epoch). ``vocabulary``: the data's
    token-id bound where the workload's spec leaves it to the data (imdb-fasttext's bigrams:
    :func:`embryo_bench.data.arrays.load_run_arrays`); 0: the spec's.

    Raises:
        ConfigError: a builder that cannot be imported or refuses the shape.
    """
    import keras

    per_call = steps_per_execution_for(
        spec.epoch_steps or -(-n_train // spec.batch_size),
        spec.epoch_steps,
        spec.steps_per_execution,
        keras.backend.backend(),
    )
    return KINDS[spec.input_kind].model(spec, pp, per_call, vocabulary)


def _check_batch(spec: RunSpec, n: int) -> None:
    """Refuse a batch larger than the ``n`` training samples (such a run trained
    one short batch per epoch while every table said the batch size asked for), and an
    empty training set (whose advice would have been a batch size up to 0).

    Raises:
        ConfigError: naming the setting.
    """
    if spec.batch_size <= n:
        return
    kind = KINDS[spec.input_kind]
    setting = f"sweeps: point {spec.target}'s " if spec.sweep else kind.setting(spec)
    if not n:
        data = kind.data(spec)
        raise ConfigError(
            f"run {spec.target} repeat {spec.repeat}: {data} hold no training sample; "
            f"expected at least one batch, {spec.batch_size:,} ({setting}batch_size)"
        )
    raise ConfigError(
        f"run {spec.target} repeat {spec.repeat}: {setting}batch_size {spec.batch_size} > "
        f"the {n:,} training images: every step would train all of them, not a batch of "
        f"{spec.batch_size}; use a batch size up to {n:,}"
    )


def input_feed(session: Session) -> TimedFeed | None:
    """The training batches of a workload read through a :class:`TimedFeed` (which times how
    long the steps wait), by ``workers`` threads, ``epoch_steps`` batches an epoch where the
    run has fixed-step epochs: for the ``files`` input mode its ``train/`` image files
    (``embryo-bench workload-files``) decoded, and augmented as its study's generator did;
    for memory input with augmentation (``augment: true``) its arrays augmented per batch,
    as Keras 2's ``ImageDataGenerator.flow`` did (002's cifar10_cnn.py). None for memory
    input without augmentation (the in-memory pipeline).

    Raises:
        DataError: the folder is missing, or holds other labels than the arrays.
    """
    spec, w = session.spec, session.spec.workload
    augment = Augment(**w.augmentation) if w is not None and w.augmentation else None
    if session.spec.input_mode != "files":
        if augment is None:
            return None
        source = ArrayImages(session.data["x_train"], session.data["y_train"], augment)
    else:
        if session.files is None:
            raise DataError(f"run {spec.target}: workload {w.name} reads files: no folder")
        paths, labels, _ = list_image_folder(session.files / "train")
        if len(labels) != len(session.data["y_train"]):
            raise DataError(
                f"{session.files / 'train'}: {len(labels)} images; the workload's arrays hold "
                f"{len(session.data['y_train'])} training samples"
            )
        source = ImageFiles([str(p) for p in paths], labels, w.input_shape, augment)
    return TimedFeed(
        source, spec.batch_size, seed=spec.seed, workers=w.workers, epoch_steps=spec.epoch_steps
    )


def train_epochs(session: Session, out_dir: str | Path | None = None) -> pd.DataFrame:
    """Train ``spec.epochs`` epochs (:func:`embryo_bench.training.epochs.fit_epochs`), logging one
    line per epoch and, with ``out_dir``, appending each epoch to its ``progress.csv`` as soon as it
    ends (so a run stopped at epoch 19 of 20 still shows what it measured; that file is not an
    output of the rule, so nothing looks complete). A GPU run reads its GPUs' energy counters
    around each epoch's training (NVML, :class:`embryo_bench.recording.telemetry.NvmlGpus`).

    Returns:
        the history (:data:`embryo_bench.training.epochs.HISTORY_COLUMNS`, one row per epoch;
        seconds, images/s).
    """
    spec, data = session.spec, session.data
    progress = Path(out_dir) / PROGRESS if out_dir is not None else None
    if progress is not None:
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.unlink(missing_ok=True)
    rows: list[dict] = []
    counter = NvmlGpus(session.gpu_indices)
    energy = counter.energy_j if counter.available else None

    def on_epoch(row: dict) -> None:
        rows.append(row)
        walls = [r["wall_seconds"] for r in rows]
        per_epoch = sum(walls[1:]) / (len(walls) - 1) if len(walls) > 1 else walls[0]
        log.info(progress_line(row, spec.epochs, per_epoch * (spec.epochs - row["epoch"])))
        if progress is not None:
            pd.DataFrame([row], columns=HISTORY_COLUMNS).to_csv(
                progress, mode="a", header=not progress.exists(), index=False
            )

    try:
        fit_epochs(
            session.model,
            (data["x_train"], data["y_train"]),
            (data["x_test"], data["y_test"]),
            batch_size=spec.batch_size,
            epochs=spec.epochs,
            seed=spec.seed,
            on_epoch=on_epoch,
            epoch_steps=spec.epoch_steps,
            test_subset=spec.test_subset,
            windows=session.windows,
            feed=input_feed(session),
            energy=energy,
        )
    finally:
        counter.close()
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def saved_model_bytes(model) -> int:
    """The bytes of ``model``'s variables and its optimizer's (Adam: two moments per weight),
    the bulk of its ``.keras`` file (16,834,436 parameters: 202,013,232 of 202,055,726 B)."""
    variables = [*model.weights, *getattr(model.optimizer, "variables", [])]
    return int(sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables))


def write_outputs(
    session: Session,
    history: pd.DataFrame,
    out_dir: str | Path,
    calibration: tuple[dict | None, dict | None] = (None, None),
) -> dict:
    """Write ``history.csv``, ``model.keras`` and ``settings.json``; return the run's metrics
    (without telemetry, which :func:`embryo_bench.recording.record.finish_run` adds and writes).

    Args:
        calibration: the :func:`embryo_bench.recording.calibrate.matmul_probe` results just before
        and
            just after training (None: not probed).

    Returns:
        dict: target, repeat, seed, backend (as loaded), runner, cpus, gpus, n_train,
        images_per_epoch, variant (with epoch_steps, holdout, test_subset), n_test,
        batch_size, parameter_count, setup_seconds,
        :func:`embryo_bench.training.history.summarise`'s times (s) and throughput (images/s),
        throughput_windows (:func:`embryo_bench.training.history.window_summary`), jit_compile,
        steps_per_execution (the training steps Keras ran per call,
        :func:`embryo_bench.training.epochs.steps_per_execution_for`), calibration (the probes:
        before, after, in GFLOP/s), flops (training FLOPs per image and the run's achieved GFLOP/s
        and efficiency, :func:`embryo_bench.recording.calibrate.efficiency`), label counts, threads,
        precision (the Keras dtype policy), device_memory_peak_mib (the most the framework
        held on its GPUs, MiB; None on the CPU: :func:`embryo_bench.training.backend.
        device_memory_peak_mib`), cpu_affinity, strategy, replicas_in_sync, provenance (with
        ``compute``, the settings that choose kernels, and ``devices``, what trained:
        :attr:`Session.devices`).

    Raises:
        StorageError: no space for ``model.keras`` (checked against
            :func:`saved_model_bytes` first); nothing is written then.
    """
    spec, data, out = session.spec, session.data, Path(out_dir)
    # The model first: by far the largest file, so a full disk stops the run before any
    # other output is written.
    with atomic_path(
        out / MODEL, suffix=".keras", needed_bytes=saved_model_bytes(session.model)
    ) as tmp:
        session.model.save(tmp)
    with atomic_path(out / HISTORY) as tmp:
        history.to_csv(tmp, index=False)
    windows = pd.DataFrame(session.windows, columns=WINDOW_COLUMNS)
    with atomic_path(out / WINDOWS) as tmp:
        windows.to_csv(tmp, index=False)
    kind = KINDS[spec.input_kind]
    settings = kind.settings(spec, session.preprocessing)
    write_json(out / SETTINGS, {**settings, "backend": session.backend})
    summary = summarise(history, session.images_per_epoch, spec.accuracy_target)
    classes = kind.classes(spec)
    flops = training_flops_per_image(session.model)
    before, after = calibration
    return {
        "target": spec.target,
        "repeat": spec.repeat,
        "workload": spec.workload_name,
        "input_mode": spec.input_mode,
        "input_wait": input_wait_summary(history),
        "seed": spec.seed,
        "backend": session.backend,
        "runner": spec.runner,
        "cpus": spec.cpus,
        "gpus": spec.gpus,
        "n_train": session.n_train,
        "images_per_epoch": session.images_per_epoch,
        "variant": spec.variant,
        "epoch_steps": spec.epoch_steps,
        "holdout": spec.holdout,
        "test_subset": spec.test_subset,
        "n_test": int(len(data["y_test"])),
        "batch_size": spec.batch_size,
        "parameter_count": int(session.model.count_params()),
        "setup_seconds": session.setup_seconds,
        **summary,
        "throughput_windows": window_summary(windows),
        "jit_compile": bool(getattr(session.model, "jit_compile", False)),
        "steps_per_execution": int(getattr(session.model, "steps_per_execution", 1)),
        "calibration": {"before": before, "after": after, "method": PROBE_METHOD},
        "flops": {
            "training_flops_per_image": flops["training_flops"],
            "forward_flops_per_image": flops["forward_flops"],
            **efficiency(flops["training_flops"], summary["mean_images_per_s"], before, after),
        },
        "label_counts_train": np.bincount(data["y_train"], minlength=classes).tolist(),
        "label_counts_test": np.bincount(data["y_test"], minlength=classes).tolist(),
        "threads": spec.threads,
        "precision": spec.precision,
        "device_memory_peak_mib": device_memory_peak_mib(),
        "cpu_affinity": session.cores,
        "strategy": spec.strategy,
        "replicas_in_sync": session.replicas_in_sync,
        "provenance": {
            **session.provenance,
            "compute": compute_settings(session.model),
            "devices": session.devices,
        },
    }


def run_training(
    spec: RunSpec,
    inputs: TrainingInput,
    dataset: dict,
    out_dir: str | Path,
    *,
    measure: bool = True,
) -> dict:
    """Train one run and write its outputs (:func:`setup`, :func:`train_epochs`,
    :func:`write_outputs`, :func:`embryo_bench.recording.record.finish_run`).

    Args:
        spec: the run's settings (``run.json``).
        inputs: what it trains on, of the kind its spec names
            (:class:`embryo_bench.vocabulary.training_input.TrainingInput`: the augmented shards, or
            a workload's arrays and, in its ``files`` input mode, its image folder).
        dataset: the index stage's source description, or a workload's data info
            (provenance).
        out_dir: the run folder.
        measure: sample this process (telemetry.csv, RAPL energy); off inside a container,
            where the docker runner samples the container from outside and finishes the
            metrics itself.

    Returns:
        the metrics written to ``metrics.json`` (times in s, throughput in images/s), with
        wall_clock: started_unix_s and ended_unix_s (s since 1970) of the timed part (the
        probes and the training).

    Raises:
        DataError, ConfigError: as :func:`setup`.
        Interrupted: the process was tied to its parent (:mod:`embryo_bench.runners.lifeline`) and
            the parent went away before the outputs were written.
    """
    session = setup(spec, inputs, dataset)
    measurement = (
        Measurement(ProcessSampler(float(spec.cpus), session.gpu_indices, session.cores))
        if measure
        else contextlib.nullcontext()
    )
    with measurement:
        started = time.time()
        before = matmul_probe(spec.probe_seconds)
        history = train_epochs(session, out_dir)
        after = matmul_probe(spec.probe_seconds)
        ended = time.time()
    check_parent()  # nothing is written for a parent that is gone
    metrics = write_outputs(session, history, out_dir, calibration=(before, after))
    if metrics["diverged"]:
        log.warning(
            "run %s repeat %d diverged: %s (flagged diverged; no time to accuracy)",
            spec.target,
            spec.repeat,
            metrics["diverged"],
        )
    # When the timed part ran, on the wall clock: the evidence that rounds ran in their
    # planned order and that no two timed runs overlapped.
    metrics["wall_clock"] = {"started_unix_s": started, "ended_unix_s": ended}
    metrics = finish_run(out_dir, metrics, measurement if measure else None)
    (Path(out_dir) / PROGRESS).unlink(missing_ok=True)  # history.csv now holds every epoch
    return metrics

"""The largest batch that fits, and throughput against batch size (``embryo-bench
batch-limit``: what Lambda's and tf_cnn_benchmarks' users expect).

A *trial* trains a run's model (the paper CNN, or a workload's, built as the trainer builds it:
:func:`embryo_bench.training.train.setup`'s steps without its data) at one batch size B on
SYNTHETIC inputs of the run's shape, dtype and classes (:func:`embryo_bench.data.arrays.
synthetic_arrays`: only speed and memory are measured, the accuracy means nothing) for
``epochs`` short epochs of ``steps`` steps each, the first left out of the throughput
(tracing and compilation). Each trial runs in a fresh process (:func:`run_trial`): an
out-of-memory error can leave a framework unusable, and each trial's peak memory is then its
own. A trial fits, runs out of memory (the framework's error recognised:
:data:`OUT_OF_MEMORY`), or fails otherwise (an error, reported as such and never counted as
"does not fit").

The *search* (:func:`search`) doubles B from a start until a trial does not fit or a cap is
reached, then bisects between the last batch that fitted and the first that did not, down to
a resolution (a fraction of the batch, at least :data:`ALIGN` images; the midpoints are
multiples of :data:`ALIGN` where they can be); a time budget stops it and says so.

Memory the trials may use:

* GPU: JAX preallocates 75 % of the device and, with preallocation off, still caps its
  allocator at that fraction (JAX's documentation, "GPU memory allocation"); trials run with
  :data:`TRIAL_ENV` (preallocation off, the fraction 1.0 unless the caller set one), so the
  limit found is the device's. A training run (``embryo-bench train``) keeps JAX's defaults,
  and may have less of the device than a trial had. PyTorch's and TensorFlow's allocators
  grow to what the device has.
* CPU: "device memory" is the host's. ``memory_limit_mib`` bounds a trial with
  ``RLIMIT_DATA`` (:func:`limit_memory`), which counts the process's writable private
  mappings (heap, anonymous mmaps, thread stacks: Linux >= 4.7), i.e. writable address
  space, at least the resident memory: a batch that fits under the limit fits in that much
  RAM. Found on this project's x86-64 Linux machine (jax 0.10, torch 2.13, tensorflow 2.21;
  the paper CNN at 64 px and mnist-mlp; 2 cores): ``RLIMIT_AS`` is unusable for this: it
  counts every address-space reservation, and XLA (JAX, TensorFlow) reserves address space
  for its thread pools at start: JAX aborted at start (``std::bad_alloc``) under 2 GiB of
  address space, TensorFlow under 3 GiB, and PyTorch could not train the paper CNN's batch
  8 under 2 GiB, all of them processes that stay under 1.2 GiB resident. Under
  ``RLIMIT_DATA`` JAX and PyTorch train the paper CNN's small batches at 1.5 GiB and
  TensorFlow at 3 GiB, and a batch too large fails in Python: JAX's ``RESOURCE_EXHAUSTED:
  Out of memory allocating N bytes``, PyTorch's ``DefaultCPUAllocator: can't allocate
  memory``, TensorFlow's ``ResourceExhaustedError`` (mnist-mlp at batch 262,144 under
  2.5 GiB); TensorFlow's CPU allocator can abort the process instead (``std::bad_alloc``,
  SIGABRT: the paper CNN at batch 2,048 under 3 GiB), which is recognised from its stderr.
  Without a limit a trial on the CPU can use all the host's memory (the kernel's OOM
  killer's SIGKILL is then taken for running out).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.arrays import synthetic_arrays
from ..data.stages import run_sample
from ..errors import ConfigError
from ..io import atomic_path, read_json, write_json
from ..recording.hardware import gpu_identity, memory_mib, this_machine
from ..vocabulary.spec import INPUT_SHARDS, RunSpec

# The trainer's own model builder, private to train.py: imported as it is, because any edit
# to train.py (a rename included) changes the train command's code hash and reruns every
# cached training.
from .backend import (
    backend_devices,
    device_memory_peak_mib,
    distribution_scope,
    limit_threads,
    seed_everything,
    select_backend,
    select_gpus,
    set_precision,
)
from .epochs import fit_epochs
from .train import run_model

#: Midpoints of the bisection are multiples of this many images where the interval allows
#: (GPU kernels favour multiples of 8), and the search never resolves finer than this.
ALIGN = 8
#: The default cap on the batch size (images), lowered to what the host's memory can hold
#: of a trial's synthetic data (:func:`resolve_most`).
MOST = 2**20
#: Outcomes of a trial.
FITS, OUT_OF_MEMORY_OUTCOME, ERROR, TIMED_OUT = "fits", "out of memory", "error", "timed out"
#: Why a search stopped (:attr:`Search.stop`).
STOP_OOM, STOP_CAP, STOP_BUDGET, STOP_ERROR = "out_of_memory", "cap", "budget", "error"

#: Each framework's out-of-memory error, as (framework, where the memory ran out, pattern),
#: matched against a trial's exception (type and message, chained causes included) or, for a
#: trial killed by a signal, its stderr. "device" patterns name the GPU's allocator; the
#: framework-neutral ones (JAX's, on a CPU trial) are the host's.
OUT_OF_MEMORY: tuple[tuple[str, str, re.Pattern], ...] = (
    # JAX: XlaRuntimeError / JaxRuntimeError "RESOURCE_EXHAUSTED: Out of memory allocating
    # N bytes" (jaxlib 0.10 on the CPU under RLIMIT_DATA: the same, or "INTERNAL: Error
    # dispatching computation: Out of memory allocating N bytes")
    ("jax", "either", re.compile(r"RESOURCE_EXHAUSTED|Out of memory allocating")),
    ("torch", "device", re.compile(r"OutOfMemoryError|CUDA out of memory")),
    # torch's CPU allocator: "DefaultCPUAllocator: can't allocate memory: you tried to
    # allocate N bytes. Error code 12 (Cannot allocate memory)"
    ("torch", "host", re.compile(r"can't allocate memory")),
    ("tensorflow", "either", re.compile(r"ResourceExhaustedError|OOM when allocating")),
    ("python", "host", re.compile(r"\bMemoryError\b")),
    # a C++ allocation failure ending the process (TensorFlow's CPU allocator)
    ("c++", "host", re.compile(r"std::bad_alloc")),
    ("os", "host", re.compile(r"Cannot allocate memory|ENOMEM")),
)

#: A line that names a CPU device or allocator (TensorFlow's "device:CPU:0", "mklcpu").
CPU_NAMED = re.compile(r"CPU|cpu")
#: Terminal colour codes, left out of the error lines recorded.
ANSI_CODES = re.compile(r"\x1b\[[0-9;]*m")
#: The environment of every trial: JAX allocates GPU memory as needed, up to the whole device
#: (with preallocation off its allocator would still stop at 75 %; the deprecated name of
#: the fraction, which older and newer jaxlib both read, is set only where the caller set
#: neither name: jaxlib refuses both at once).
TRIAL_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_MEM_FRACTION": "1.0"}
#: What a trial's inputs are, on every output.
SYNTHETIC_NOTE = (
    "SYNTHETIC inputs (random samples of the run's shape, dtype and classes): only speed and "
    "memory are measured; accuracy is meaningless"
)

#: Columns of ``batch_limit.csv``, one row per trial in the order run: batch_size (images),
#: outcome (:data:`FITS`, "out of memory", "error", "timed out"), fits, memory (where an
#: out-of-memory trial ran out: "device" or "host"), images_per_s (steady: the training
#: images of epochs 2.. over their training seconds), first_epoch_seconds (s, compilation
#: included), device_memory_peak_mib (the framework's peak on its GPUs, MiB; empty on the
#: CPU), rss_peak_mib (the trial process's peak resident memory, MiB), steps_per_execution,
#: seconds (the trial process's wall time, s), error (the framework's out-of-memory line, or
#: the error).
TRIAL_COLUMNS = [
    "batch_size",
    "outcome",
    "fits",
    "memory",
    "images_per_s",
    "first_epoch_seconds",
    "device_memory_peak_mib",
    "rss_peak_mib",
    "steps_per_execution",
    "seconds",
    "error",
]


@dataclass(frozen=True)
class Trial:
    """One trial's result (a row of :data:`TRIAL_COLUMNS`; units there)."""

    batch_size: int
    outcome: str
    memory: str | None = None
    images_per_s: float | None = None
    first_epoch_seconds: float | None = None
    device_memory_peak_mib: float | None = None
    rss_peak_mib: float | None = None
    steps_per_execution: int | None = None
    seconds: float = 0.0
    error: str | None = None
    #: What the trial process reported beyond the row (devices, backend, parameters).
    details: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def fits(self) -> bool:
        """The trial trained every step at its batch size."""
        return self.outcome == FITS

    def row(self) -> dict:
        """The trial as a row of :data:`TRIAL_COLUMNS`."""
        values = dataclasses.asdict(self) | {"fits": self.fits}
        return {c: values[c] for c in TRIAL_COLUMNS}


@dataclass(frozen=True)
class Search:
    """A search's result (:func:`search`).

    Attributes:
        trials: every trial, in the order run.
        largest: the largest batch size that fitted (images), None if none did.
        stop: why the search stopped: :data:`STOP_OOM` (bisected down to the resolution),
            :data:`STOP_CAP` (the cap fitted), :data:`STOP_BUDGET` (the time budget),
            :data:`STOP_ERROR` (a trial failed otherwise than by memory).
        stopped_at: the batch size of that event (the smallest that did not fit, the cap,
            the trial that failed; None where the budget ran out between trials).
        text: the reason in words.
    """

    trials: list[Trial]
    largest: int | None
    stop: str
    stopped_at: int | None
    text: str


def midpoint(lo: int, hi: int, align: int = ALIGN) -> int | None:
    """A batch size strictly between ``lo`` and ``hi``: their midpoint rounded down to a
    multiple of ``align``, else up, else the plain midpoint; None when none lies between."""
    mid = (lo + hi) // 2
    down = mid - mid % align
    for candidate in (down, down + align, mid):
        if lo < candidate < hi:
            return candidate
    return None


def resolved(lo: int, hi: int, resolution: float, align: int = ALIGN) -> bool:
    """Whether a search that fitted ``lo`` and not ``hi`` is done: the gap is at most
    ``resolution`` x ``lo`` or ``align`` images, whichever is larger."""
    return hi - lo <= max(resolution * lo, align)


def search(
    trial: Callable[[int, float | None], Trial],
    start: int,
    most: int,
    *,
    resolution: float = 0.05,
    align: int = ALIGN,
    budget: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_trial: Callable[[Trial], None] | None = None,
) -> Search:
    """Find the largest batch size that fits: double from ``start`` until a trial does not
    fit or ``most`` is reached (halve instead while ``start`` itself does not fit), then
    bisect between the last fit and the first failure until :func:`resolved`.

    Args:
        trial: runs one trial: (batch size, seconds left of the budget or None) -> Trial.
        start: the first batch size (images, >= 1). most: the cap (images, >= start).
        resolution: stop when the gap is at most this fraction of the fitting batch (or
            ``align`` images).
        budget: seconds (wall clock, ``clock``) the search may take; None: no limit. A trial
            is not started once it is spent, and a trial running is given the time left.
        on_trial: called with each trial as it ends (logging).

    Returns:
        the :class:`Search`.

    Raises:
        ValueError: start < 1, most < start, resolution < 0 or align < 1.
    """
    if start < 1 or most < start or resolution < 0 or align < 1:
        raise ValueError(f"start {start}, most {most}, resolution {resolution}, align {align}")
    began = clock()
    trials: list[Trial] = []
    lo: int | None = None  # the largest batch that fitted
    hi: int | None = None  # the smallest batch that did not

    def run(batch: int) -> Trial | None:
        left = None if budget is None else budget - (clock() - began)
        if left is not None and left <= 0:
            return None
        result = trial(batch, left)
        trials.append(result)
        if on_trial is not None:
            on_trial(result)
        return result

    def spent(at: int | None) -> Search:
        best = f"; the largest that fitted: {lo}" if lo else "; no batch fitted"
        text = f"the time budget ({budget:g} s) was spent after {len(trials)} trial(s){best}"
        return Search(trials, lo, STOP_BUDGET, at, text)

    def stopped(result: Trial) -> Search | None:
        if result.outcome == TIMED_OUT:
            return spent(result.batch_size)
        if result.outcome == ERROR:
            text = f"the trial at batch {result.batch_size} failed (not by memory): {result.error}"
            return Search(trials, lo, STOP_ERROR, result.batch_size, text)
        return None

    batch = start
    while lo is None or hi is None:
        result = run(batch)
        if result is None:
            return spent(None)
        if (end := stopped(result)) is not None:
            return end
        if result.fits:
            lo = batch
            if hi is None and batch >= most:
                text = f"the cap: batch {most} (--most) fitted; the limit is higher"
                return Search(trials, lo, STOP_CAP, most, text)
            batch = min(2 * batch, most)
        else:
            hi = batch
            if batch == 1:
                where = f"{result.memory} " if result.memory else ""
                text = f"out of {where}memory at batch 1: no batch fits"
                return Search(trials, None, STOP_OOM, 1, text)
            batch = max(1, batch // 2)
    while not resolved(lo, hi, resolution, align) and (batch := midpoint(lo, hi, align)):
        result = run(batch)
        if result is None:
            return spent(None)
        if (end := stopped(result)) is not None:
            return end
        if result.fits:
            lo = batch
        else:
            hi = batch
    failed = next(t for t in reversed(trials) if t.batch_size == hi)
    where = f"{failed.memory} " if failed.memory else ""
    text = (
        f"out of {where}memory at batch {hi}; the largest that fitted: {lo} "
        f"(resolution {max(resolution * lo, align):g} images)"
    )
    return Search(trials, lo, STOP_OOM, hi, text)


# --- what a trial trains on ----------------------------------------------------------------


def sample_of(spec: RunSpec) -> tuple[tuple[int, ...], str, int, int]:
    """One sample of the run's inputs: (shape, dtype, classes, vocabulary). The paper's: a
    uint8 (S, S, 1) frame at its preprocessing's image size, 4 classes; a workload's: its
    input shape and dtype, classes and vocabulary (token ids; 0 for images)."""
    if spec.input_kind == INPUT_SHARDS:
        return run_sample(spec.preprocessing)
    w = spec.workload
    return tuple(w.input_shape), w.input_dtype, w.classes, w.vocabulary


def data_mib(spec: RunSpec, batch_size: int, steps: int) -> float:
    """MiB of a trial's synthetic data at ``batch_size``: ``steps`` batches of samples
    (:func:`sample_of`) and int32 labels."""
    shape, dtype, _, _ = sample_of(spec)
    per_sample = math.prod(shape) * np.dtype(dtype).itemsize + 4
    return batch_size * steps * per_sample / 2**20


def resolve_most(
    spec: RunSpec, start: int, most: int | None, steps: int, memory_limit_mib: int | None
) -> int:
    """The cap on the batch size: ``most``, or by default :data:`MOST` lowered to the largest
    batch whose synthetic data (:func:`data_mib`) fits in the memory a trial may use (the
    ``memory_limit_mib``, else the host's).

    Raises:
        ConfigError: ``start`` above the cap; a ``most`` whose data would not fit in that
            memory (naming --most or --start and the largest that would); ``steps`` so many
            that not one sample's data fits (naming --steps).
    """
    room = memory_limit_mib or memory_mib()
    if memory_limit_mib:
        what = f"the --memory-limit of {room:,} MiB"
    else:
        what = f"this machine's {room:,} MiB of memory" if room else "this machine's memory"
    per_image = data_mib(spec, 1, steps)
    fitting = int(room / per_image) if room else None  # None: the host's memory is unknown
    if fitting == 0:
        # Not one sample over the steps fits: the cap fell back to MOST, and every trial ran
        # out of memory, reported as the model's.
        raise ConfigError(
            f"--steps {steps}: one sample's synthetic data over {steps:,} steps "
            f"({per_image:,.0f} MiB) would not fit in {what}; use fewer --steps"
        )
    if most is None:
        most = min(MOST, fitting or MOST)
        if start > most:
            raise ConfigError(
                f"--start {start}: the synthetic data of a trial at that batch "
                f"({data_mib(spec, start, steps):,.0f} MiB: {steps} steps of {start} samples) "
                f"would not fit in {what}; use --start {most} or less"
            )
        return most
    if most < start:
        raise ConfigError(f"--most {most}: below --start {start}; expected --most >= --start")
    if fitting is not None and most > fitting:
        raise ConfigError(
            f"--most {most}: the synthetic data of a trial at that batch "
            f"({data_mib(spec, most, steps):,.0f} MiB: {steps} steps of {most} samples) would "
            f"not fit in {what}; use --most {fitting} or less (or fewer --steps)"
        )
    return most


def check_backend(spec: RunSpec, where: str) -> None:
    """Refuse a run whose backend is not installed here, or a workload of token ids with no
    vocabulary to draw them from, before anything runs.

    Raises:
        ConfigError: naming ``where`` (the run.json) and the setting.
    """
    if find_spec(spec.backend) is None:
        raise ConfigError(
            f"{where}: backend {spec.backend}: not installed in this Python "
            f"({sys.executable}); install it or choose another backend"
        )
    _, dtype, _, vocabulary = sample_of(spec)
    if dtype == "int32" and vocabulary < 2:
        raise ConfigError(
            f"{where}: workload {spec.workload.name}: token ids with vocabulary {vocabulary}; "
            "synthetic inputs need the vocabulary (>= 2) the run's data would give"
        )


# --- one trial, in this process (the trial process) ----------------------------------------


def limit_memory(mib: int) -> None:
    """Bound this process's writable private address space to ``mib`` MiB (``RLIMIT_DATA``,
    soft and hard; see the module docstring for why not ``RLIMIT_AS``)."""
    limit = int(mib) * 2**20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (MiB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def train_trial(
    spec: RunSpec, batch_size: int, steps: int, epochs: int, report: dict | None = None
) -> dict:
    """Train ``spec``'s model at ``batch_size`` on synthetic inputs in this process, set up as
    the trainer sets up a run (backend, GPUs, threads and cores, devices, precision,
    strategy, seed, the model by the trainer's builder), for ``epochs`` epochs of ``steps``
    steps, nothing scored. Call once per process, before Keras is imported.

    Args:
        report: filled as the trial goes (``devices`` as soon as the backend says), so a
            trial that fails later still tells what it ran on.

    Returns:
        dict: images_per_s (epochs 2..: their training images over their training seconds),
        first_epoch_seconds (s), device_memory_peak_mib (MiB, None on the CPU),
        rss_peak_mib (MiB), steps_per_execution, parameters, backend, devices.

    Raises:
        whatever the framework raises: its out-of-memory error among them.
    """
    report = {} if report is None else report
    # One pass over the synthetic batches an epoch, as the Keras variant feeds a run (the
    # original variant's fixed-step epochs, holdout and test subset concern its data only).
    spec = dataclasses.replace(spec, batch_size=batch_size, epoch_steps=0, holdout=0, test_subset=0)
    run = f"batch-limit trial at batch {batch_size}"
    select_backend(spec.backend)
    gpu_indices = select_gpus(spec.gpus, spec.backend, run)
    limit_threads(spec.threads, spec.cpus)
    import keras

    report["devices"] = {
        "gpus": gpu_identity(gpu_indices),
        "backend": backend_devices(spec.gpus, run),
    }
    set_precision(spec.precision)
    scope, _ = distribution_scope(spec.strategy, spec.replicas)
    seed_everything(spec.seed)
    shape, dtype, classes, vocabulary = sample_of(spec)
    x, y, _, _ = synthetic_arrays(
        shape, dtype, classes, batch_size * steps, 0, spec.seed, vocabulary=vocabulary
    )
    with scope:
        model = run_model(spec, spec.preprocessing, len(y))
    report["parameters"] = int(model.count_params())
    rows = fit_epochs(
        model, (x, y), (x[:0], y[:0]), batch_size=batch_size, epochs=epochs, seed=spec.seed
    )
    steady = sum(r["epoch_seconds"] for r in rows[1:])
    return report | {
        "images_per_s": batch_size * steps * (len(rows) - 1) / steady,
        "first_epoch_seconds": rows[0]["epoch_seconds"],
        "device_memory_peak_mib": device_memory_peak_mib(),
        "rss_peak_mib": peak_rss_mib(),
        "steps_per_execution": int(getattr(model, "steps_per_execution", 1) or 1),
        "backend": keras.backend.backend(),
    }


def exception_text(exc: BaseException) -> str:
    """``exc`` and the exceptions it was raised from or during, as "module.Type: message"
    lines (Keras wraps a layer's error in its own message)."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        kind = type(exc)
        parts.append(f"{kind.__module__}.{kind.__qualname__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


def trial_main(argv: list[str]) -> int:
    """The trial process: read the request (JSON: spec, batch_size, steps, epochs,
    memory_limit_mib), train (:func:`train_trial`) and write the result (JSON: ok, the
    measurements, or error: :func:`exception_text`). Exit status 0 when the result was
    written, whatever the trial's outcome."""
    request_path, result_path = argv
    request = read_json(request_path)
    if request.get("memory_limit_mib"):
        limit_memory(request["memory_limit_mib"])
    report: dict = {}
    try:
        spec = RunSpec.from_dict(request["spec"], request_path)
        result = train_trial(
            spec, request["batch_size"], request["steps"], request["epochs"], report
        )
        out = {"ok": True, **result}
    except BaseException as exc:  # every failure, MemoryError included, is the result
        traceback.print_exc()
        out = {"ok": False, "error": exception_text(exc), **report}
    Path(result_path).write_text(json.dumps(out, default=str))
    return 0


# --- one trial, in a fresh process ---------------------------------------------------------


def out_of_memory(text: str, on_gpu: bool) -> tuple[str, str] | None:
    """The out-of-memory error in ``text`` (:data:`OUT_OF_MEMORY`): (the line that says so,
    "device" or "host"), or None. A framework's error that does not say whose memory is the
    device's on a GPU trial (unless its line names a CPU device or allocator) and the host's
    on a CPU one."""
    text = ANSI_CODES.sub("", text)  # PyTorch's allocator error is in bold
    for _, where, pattern in OUT_OF_MEMORY:
        for line in text.splitlines():
            if pattern.search(line):
                if where == "either":
                    where = "device" if on_gpu and not CPU_NAMED.search(line) else "host"
                return line.strip()[:400], where
    return None


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` ("" if none), at most 400 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""


def trial_environment(cache_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment variables a trial gets on top of this process's: :data:`TRIAL_ENV`
    (the fraction left to the caller where it set either of its names) and, with
    ``cache_dir``, JAX's persistent compilation cache there (unless the caller set one).

    The cache is the search's own: the trials compile the same model, and JAX on the CPU
    took about 11 s (2 shared cores) to compile mnist-mlp's weight initialisers in every
    trial; from the cache, 1.6 s. Only start-up is shortened: each batch size's training step
    is a new program, compiled in the first epoch, which the throughput leaves out.
    """
    env = dict(TRIAL_ENV)
    if os.environ.get("XLA_CLIENT_MEM_FRACTION") or os.environ.get(
        "XLA_PYTHON_CLIENT_MEM_FRACTION"
    ):
        del env["XLA_PYTHON_CLIENT_MEM_FRACTION"]
    if cache_dir is not None and not os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
    return env


def run_trial(
    spec: RunSpec,
    batch_size: int,
    *,
    steps: int,
    epochs: int,
    memory_limit_mib: int | None = None,
    timeout: float | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Trial:
    """One trial in a fresh Python process (``python -m embryo_bench.training.batch_limit``:
    :func:`trial_main`), with :func:`trial_environment` and, where given, its memory bounded
    (:func:`limit_memory`). Its peak RSS is the kernel's account of the process
    (``wait4``), so a process killed still has one.

    Args:
        timeout: seconds the trial may take (the search's budget left); past it the process
            is killed and the trial is "timed out".
        cache_dir: JAX's compilation cache, shared by a search's trials
            (:func:`trial_environment`).

    Returns:
        the :class:`Trial`: fits, out of memory (its line and where: the framework's error
        in the result; for a process killed by a signal, its stderr's ``std::bad_alloc``
        or a SIGKILL that was not ours, the kernel's OOM killer), else error.
    """
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **trial_environment(cache_dir)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    on_gpu = spec.gpus > 0
    with tempfile.TemporaryDirectory(prefix="batch-limit-trial-") as work:
        request, result, stderr_path = (Path(work) / n for n in ("in.json", "out.json", "err"))
        request.write_text(
            json.dumps(
                {
                    "spec": spec.to_dict(),
                    "batch_size": batch_size,
                    "steps": steps,
                    "epochs": epochs,
                    "memory_limit_mib": memory_limit_mib,
                }
            )
        )
        started = time.monotonic()
        killed = False
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(request), str(result)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
            )
            try:
                while True:
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    if timeout is not None and time.monotonic() - started > timeout:
                        proc.kill()
                        killed = True
                    time.sleep(0.05)
            except BaseException:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        rss = usage.ru_maxrss / 1024
        stderr = stderr_path.read_text(errors="replace")
        try:
            out = json.loads(result.read_text())
        except (OSError, ValueError):  # no result, or one cut short: the process's end says
            out = None
    common = {"batch_size": batch_size, "seconds": seconds, "rss_peak_mib": rss}
    if killed:
        return Trial(outcome=TIMED_OUT, error=f"killed after {timeout:.0f} s", **common)
    if out is not None and out.get("ok"):
        return Trial(
            outcome=FITS,
            images_per_s=out["images_per_s"],
            first_epoch_seconds=out["first_epoch_seconds"],
            device_memory_peak_mib=out["device_memory_peak_mib"],
            steps_per_execution=out["steps_per_execution"],
            details=out,
            **common,
        )
    details = out or {}
    if out is None and proc.returncode == -signal.SIGKILL:
        # Not killed by us (the budget): the kernel's OOM killer sends SIGKILL.
        line = "killed by SIGKILL (taken for the kernel's OOM killer)"
        return Trial(outcome=OUT_OF_MEMORY_OUTCOME, memory="host", error=line, **common)
    if out is not None:
        text = out["error"]
    elif proc.returncode < 0:
        text = f"{stderr}\nthe process ended by {signal.Signals(-proc.returncode).name}"
    else:
        text = f"{stderr}\nthe process exited with status {proc.returncode} and no result"
    found = out_of_memory(text, on_gpu)
    if found is not None:
        line, where = found
        return Trial(
            outcome=OUT_OF_MEMORY_OUTCOME, memory=where, error=line, details=details, **common
        )
    error = last_line(text) if out is None else _error_line(text)
    return Trial(outcome=ERROR, error=error, details=details, **common)


def _error_line(text: str) -> str:
    """The first line of an exception's text (:func:`exception_text`), at most 400
    characters."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:400]


# --- the whole search and its files --------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """A search's settings (``embryo-bench batch-limit``'s options, resolved).

    Attributes:
        start: the first batch size (images). most: the cap (images).
        resolution: the fraction of the batch the search resolves to (at least :data:`ALIGN`
            images). budget: seconds the search may take (None: no limit).
        memory_limit_mib: each trial's ``RLIMIT_DATA`` (MiB; None: none).
        steps: steps an epoch. epochs: epochs a trial (the first left out).
    """

    start: int
    most: int
    resolution: float = 0.05
    budget: float | None = None
    memory_limit_mib: int | None = None
    steps: int = 10
    epochs: int = 3


def check_settings(
    spec: RunSpec,
    where: str,
    *,
    start: int | None,
    most: int | None,
    resolution: float,
    budget: float | None,
    memory_limit_mib: int | None,
    steps: int,
    epochs: int,
) -> Settings:
    """Check a search's settings against the run and the machine, before anything runs
    (the start defaults to the run's batch size).

    Raises:
        ConfigError: one line naming the option: a start, steps or cap below 1, fewer than 2
            epochs, a resolution outside (0, 1], a budget <= 0, a memory limit below 256 MiB,
            the cap (:func:`resolve_most`); the backend (:func:`check_backend`).
    """
    check_backend(spec, where)
    start = spec.batch_size if start is None else start
    for name, value, low in (("--start", start, 1), ("--steps", steps, 1), ("--epochs", epochs, 2)):
        if value < low:
            raise ConfigError(f"{name} {value}: expected at least {low}")
    if most is not None and most < 1:
        raise ConfigError(f"--most {most}: expected a batch size of at least 1 image")
    if not 0 < resolution <= 1:
        raise ConfigError(f"--resolution {resolution}: expected a fraction in (0, 1]")
    if budget is not None and not budget > 0:  # NaN too: every comparison with it is false
        raise ConfigError(f"--budget {budget}: expected seconds > 0")
    if memory_limit_mib is not None and memory_limit_mib < 256:
        raise ConfigError(
            f"--memory-limit {memory_limit_mib} MiB: too little for a framework to start; "
            "expected at least 256m"
        )
    most = resolve_most(spec, start, most, steps, memory_limit_mib)
    return Settings(start, most, resolution, budget, memory_limit_mib, steps, epochs)


def notes(spec: RunSpec) -> list[str]:
    """What a reader of the result must know beyond its numbers: the synthetic inputs, and
    where a trial differs from the run it stands for."""
    out = [SYNTHETIC_NOTE]
    if spec.backend == "jax" and spec.gpus:
        out.append(
            "JAX trials ran with GPU preallocation off and the memory fraction "
            f"{trial_environment().get('XLA_PYTHON_CLIENT_MEM_FRACTION', 'the caller set')}: "
            "the device's limit; a training with JAX's defaults may have less of the device"
        )
    if spec.input_mode == "files":
        out.append("the run reads image files; the trials fed synthetic arrays from memory")
    if spec.runner == "docker":
        out.append("the run.json's docker runner was not used: trials ran on this host")
    return out


def find_batch_limit(spec: RunSpec, settings: Settings, log=None) -> dict:
    """Search for ``spec``'s largest batch (:func:`search` over :func:`run_trial`).

    Returns:
        dict (``batch_limit.json``'s content): largest_batch_size (images, None if none fit),
        stopped ({reason, batch_size, text}), trials (:data:`TRIAL_COLUMNS` rows), settings,
        run (target, workload, backend, runner, cpus, threads, gpus, precision, strategy,
        input shape and dtype, classes, parameters), devices (NVML's identity of each GPU
        and the framework's view, from the first trial that got so far), machine
        (:func:`embryo_bench.recording.hardware.this_machine`), trial_environment,
        memory_limit (how trials were bounded), data (:data:`SYNTHETIC_NOTE`), notes
        (:func:`notes`: where the trials differ from the run), seconds (the search's wall
        time, s). Every trial runs on this machine, whatever the run's runner.
    """
    began = time.monotonic()

    def trial(batch: int, left: float | None, cache: str) -> Trial:
        return run_trial(
            spec,
            batch,
            steps=settings.steps,
            epochs=settings.epochs,
            memory_limit_mib=settings.memory_limit_mib,
            timeout=left,
            cache_dir=cache,
        )

    def on_trial(t: Trial) -> None:
        if log is None:
            return
        if t.fits:
            device = t.device_memory_peak_mib
            peak = "" if device is None else f", device peak {device:,.0f} MiB"
            log.info(
                "batch %d: fits, %.1f images/s%s, RSS peak %.0f MiB (%.1f s)",
                t.batch_size, t.images_per_s, peak, t.rss_peak_mib, t.seconds,
            )  # fmt: skip
        else:
            log.info("batch %d: %s: %s (%.1f s)", t.batch_size, t.outcome, t.error, t.seconds)

    with tempfile.TemporaryDirectory(prefix="batch-limit-cache-") as cache:
        result = search(
            lambda batch, left: trial(batch, left, cache),
            settings.start,
            settings.most,
            resolution=settings.resolution,
            budget=settings.budget,
            on_trial=on_trial,
        )
    details = [t.details for t in result.trials]
    devices = next((d["devices"] for d in details if d.get("devices")), None)
    parameters = next((d["parameters"] for d in details if d.get("parameters")), None)
    shape, dtype, classes, vocabulary = sample_of(spec)
    return {
        "format": 1,
        "largest_batch_size": result.largest,
        "stopped": {"reason": result.stop, "batch_size": result.stopped_at, "text": result.text},
        "data": SYNTHETIC_NOTE,
        "run": {
            "target": spec.target,
            "workload": spec.workload_name,
            "backend": spec.backend,
            "runner": spec.runner,
            "cpus": spec.cpus,
            "threads": spec.threads,
            "gpus": spec.gpus,
            "precision": spec.precision,
            "strategy": spec.strategy,
            "variant": spec.variant,
            "batch_size": spec.batch_size,
            "input_shape": list(shape),
            "input_dtype": dtype,
            "classes": classes,
            "vocabulary": vocabulary,
            "parameters": parameters,
        },
        "settings": dataclasses.asdict(settings) | {"align": ALIGN},
        "memory_limit": (
            {
                "mib": settings.memory_limit_mib,
                "rlimit": "RLIMIT_DATA",
                "bounds": "each trial process's writable private address space (heap, "
                "anonymous mappings, thread stacks): at least its resident memory",
            }
            if settings.memory_limit_mib
            else None
        ),
        "trial_environment": trial_environment("(a folder of the search's own, removed after it)"),
        "notes": notes(spec),
        "devices": devices,
        "machine": this_machine(),
        "seconds": time.monotonic() - began,
        "trials": [t.row() for t in result.trials],
    }


#: The files ``embryo-bench batch-limit`` writes into its folder.
CSV_NAME, JSON_NAME, PNG_NAME = "batch_limit.csv", "batch_limit.json", "batch_limit.png"


def trials_frame(result: dict) -> pd.DataFrame:
    """The trials of a :func:`find_batch_limit` result, one row each (:data:`TRIAL_COLUMNS`)."""
    frame = pd.DataFrame(result["trials"], columns=TRIAL_COLUMNS)
    # whole numbers stay whole where a trial that did not fit left the column empty
    return frame.astype({"batch_size": int, "steps_per_execution": "Int64"})


def write_trials(result: dict, path: str | os.PathLike) -> None:
    """Write the trials as CSV (:data:`TRIAL_COLUMNS`), atomically."""
    with atomic_path(path) as tmp:
        trials_frame(result).to_csv(tmp, index=False)


def write_result(result: dict, path: str | os.PathLike) -> None:
    """Write the result as JSON, atomically (the command writes it last: a folder holding it
    holds the others)."""
    write_json(path, result)


if __name__ == "__main__":
    sys.exit(trial_main(sys.argv[1:]))

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
:data:`embryo_bench.training.batch_trial.OUT_OF_MEMORY`), or fails otherwise (an error, reported as
such and never counted as "does not fit").

The *search* (:func:`search`) doubles B from a start until a trial does not fit or a cap is
reached, then bisects between the last batch that fitted and the first that did not, down to
a resolution (a fraction of the batch, at least :data:`ALIGN` images; the midpoints are
multiples of :data:`ALIGN` where they can be); a time budget stops it and says so.

The memory a trial may use (a GPU's whole device; on the CPU, ``--memory-limit`` as
``RLIMIT_DATA``) is :mod:`embryo_bench.training.batch_trial`'s, which runs a trial; what a trial
trains on and the cap it sets, :mod:`embryo_bench.training.batch_data`'s.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import ConfigError
from ..io import atomic_path, write_json
from ..recording.hardware import this_machine
from ..vocabulary.spec import RunSpec
from .batch_data import check_backend, resolve_most, sample_of
from .batch_trial import (
    error_line,
    last_line,
    out_of_memory,
    trial_environment,
    trial_main,
)

#: Midpoints of the bisection are multiples of this many images where the interval allows
#: (GPU kernels favour multiples of 8), and the search never resolves finer than this.
ALIGN = 8
#: Outcomes of a trial.
FITS, OUT_OF_MEMORY_OUTCOME, ERROR, TIMED_OUT = "fits", "out of memory", "error", "timed out"
#: Why a search stopped (:attr:`Search.stop`).
STOP_OOM, STOP_CAP, STOP_BUDGET, STOP_ERROR = "out_of_memory", "cap", "budget", "error"


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


# --- one trial, in a fresh process ---------------------------------------------------------


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
    """One trial in a fresh Python process (``python -m embryo_bench.training.batch_trial``:
    :func:`embryo_bench.training.batch_trial.trial_main`), with
    :func:`embryo_bench.training.batch_trial.trial_environment` and, where given, its memory bounded
    (:func:`embryo_bench.training.batch_trial.limit_memory`). Its peak RSS is the kernel's account
    of the process (``wait4``), so a process killed still has one.

    Args:
        timeout: seconds the trial may take (the search's budget left); past it the process
            is killed and the trial is "timed out".
        cache_dir: JAX's compilation cache, shared by a search's trials
            (:func:`embryo_bench.training.batch_trial.trial_environment`).

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
                [sys.executable, "-m", trial_main.__module__, str(request), str(result)],
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
    error = last_line(text) if out is None else error_line(text)
    return Trial(outcome=ERROR, error=error, details=details, **common)


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
            the cap (:func:`embryo_bench.training.batch_data.resolve_most`); the backend
            (:func:`embryo_bench.training.batch_data.check_backend`).
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

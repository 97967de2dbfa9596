"""Benchmark: embryo-bench's trainer against the studies' own scripts, not a test.

For each catalog workload whose study published a script, two entries train on the SAME
synthetic arrays (:func:`embryo_bench.data.arrays.write_synthetic`, the workload's shape,
dtype, classes and vocabulary), on the same cores and threads:

* ``ours``: the code a run executes: a :class:`embryo_bench.vocabulary.spec.RunSpec` with the
  workload's :class:`~embryo_bench.vocabulary.spec.WorkloadSpec` (resolved by
  :func:`embryo_bench.planning.workloads.resolve_workload`, as a configuration's
  ``workloads:`` entry with ``data: synthetic``), read back through ``run.json``'s checks,
  then :func:`embryo_bench.training.train.setup` (threads, arrays, model, recipe) and
  :func:`~embryo_bench.training.train.train_epochs` (:func:`~embryo_bench.training.train.
  fit_epochs`' one ``fit`` and epoch clock); files mode reads the images written by
  :func:`embryo_bench.data.imagefolder.write_image_folder` (``embryo-bench workload-files``).
* ``script``: the study's own script, ``benchmarks/study_scripts/<name>.py``, ported to
  Keras 3 (TensorFlow 2 for the Deep MNIST tutorial) only as far as that needs (each says
  every change at its top), run as ``__main__`` in the worker process; ``_study.py`` gives it
  the arrays in its dataset's own form and the benchmark's epochs.

======================  ===============================  =================================
workload                script                           compared as
======================  ===============================  =================================
mnist-mlp               minimaxir v2 mnist_mlp.py        memory input
mnist-cnn               minimaxir v2 mnist_cnn.py        memory input
cifar10-cnn             minimaxir v2 cifar10_cnn.py      memory input; the script's
                                                         ``data_augmentation = False`` path
imdb-fasttext           minimaxir v2 imdb_fasttext.py    ``ngram_range = 1`` (no bigram ids:
                                                         the arrays embryo-bench trains on)
imdb-bilstm             minimaxir v2 imdb_bidirectional  memory input
                        _lstm.py
lstm-text-generation    minimaxir v2 lstm_text_          memory input (the script one-hot
                        generation.py                    codes X itself, as published)
text-generator          minimaxir text_generator_        memory input
                        keras.py
tf-mnist-deep           TensorFlow mnist_deep.py         memory input; the tutorial's
                        (tf.compat.v1 graph + session)   TensorFlow 1 ops, batch 50
catsdogs-cnn            the cats-vs-dogs tutorial        files input, augmented (shear,
                                                         zoom, flip) per batch
======================  ===============================  =================================

Not here: ``paper`` (benchmarks/bench_peers.py compares it with the authors' formulation),
``tf-cifar10`` (its tutorial's script, cifar10_train.py, was left out of this comparison),
``catsdogs-deeper`` and ``catsdogs-128`` (study 004 describes them in words only), and
``datamadness-cnn`` (study 001 published no code; 58 M parameters).

Clock: each run trains ``1 + epochs`` epochs, one pass over its training samples each
(the training count is rounded down to a multiple of the workload's batch, so both sides
train the same full batches). The first epoch is excluded (tracing, first allocations); the
steady-state samples/s is ``epochs * samples`` over the training seconds of epochs 2...
Ours: the trainer's own clock (fit_epochs: from an epoch's start to the start of its test
scoring, after waiting for the last step). Scripts: the same bounds, read by a callback the
worker adds to the script's ``fit`` call (:func:`epoch_clock`); the Deep MNIST tutorial's
loop has no ``fit``: its ``next_batch`` marks when each epoch's first batch is asked for
(its steps run synchronously, so that is when the previous epoch ended). The process CPU
seconds over the same intervals give samples per CPU second as well (at 1 thread: the speed
had the core been the run's alone).

Fairness: each (workload, entry, round) runs in a fresh subprocess; within a round the
workloads run one after another, each as ours-script or script-ours, alternating over the
rounds (ABBA...); every process is pinned to the same first ``--threads`` cores with
OMP/MKL/OpenBLAS and TensorFlow's intra-op and inter-op pools at ``--threads``
(benchmarks/bench_peers.py's :func:`pin`, then ``limit_threads`` for ours and
``tf.config.threading`` for the scripts, which set none themselves). The ratio ours/script
is paired within each round (:func:`embryo_bench.reporting.compare.paired_ratios`; over the
rounds its median and 95 % bootstrap interval, :func:`~embryo_bench.reporting.compare.
median_interval`), and judged against the bar of 0.97 set for it (:func:`verdict`).

Memory (``--memory-mib``): a run holds its training set at most once, plus one batch per
input worker. Measured by two more runs of ours per workload, in fresh processes, whose
training sets differ by about ``--memory-mib`` MiB (files mode: its images differ by that
much decoded, at most :data:`FILES_PROBE_MIB`): ``copies`` = (peak RSS of the large run -
peak RSS of the small one) / (their training arrays' bytes difference), i.e. how many times
the extra data is held at the peak; the bound is the small run's peak + the data's
difference + one batch per worker (memory input: one, the pipeline's prefetch). The memory
runs train 2 epochs of 2 steps (``RunSpec.epoch_steps``: the same setup and pipeline,
without training through the data); files mode cannot (it reads one pass an epoch) and
trains 2 epochs over its images.

Usage:
    python benchmarks/bench_studies.py [--workloads mnist-mlp,...] [--threads 1]
        [--rounds 3] [--epochs 2] [--scale 1.0] [--memory-mib 128] [--json studies.json]
    python benchmarks/bench_studies.py --report run1.json [run2.json ...]   # tables again,
        the records' rounds pooled (--json is written after every run: a run cut off keeps
        what it measured)

Prints the host, the settings, one line per run as it ends, then the table: workload,
input, samples, ours and script samples/s (median over rounds), ratio ours/script with its
95 % interval and verdict, the same per CPU second, peak RSS of each side, CPU per wall
second (lowest; under ~0.95 another process took turns on the cores); and, with the memory
runs, a second table: data, peaks, bound, copies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
SCRIPTS = BENCHMARKS / "study_scripts"
sys.path.insert(0, str(BENCHMARKS))
import bench_peers as peers  # noqa: E402  (its pinning, clocks and interleaving)

RESULT = "BENCH_STUDIES_RESULT "
#: The memory runs' extra data in files mode (MiB, decoded): read through in full each
#: epoch, so kept small (64x64x3 images: 2,048); a copy of it would still show.
FILES_PROBE_MIB = 24
#: The bar set for this comparison: embryo-bench's trainer at least this fraction of the
#: script's speed.
TARGET = 0.97
SIDES = ("ours", "script")


class Study(NamedTuple):
    """A catalog workload and its study's script.

    Attributes:
        script: the file in ``benchmarks/study_scripts/``.
        source: where the script comes from (for the table).
        train, test: training and test samples at ``--scale 1`` (this machine at 1 thread:
            a few seconds an epoch).
        input: embryo-bench's input mode for the comparison, "memory" or "files".
        settings: the script's settings the benchmark replaces (besides its epochs).

    (A named tuple: the benchmark is loaded as a script, outside ``sys.modules``, where a
    dataclass cannot be made.)
    """

    script: str
    source: str
    train: int
    test: int
    input: str = "memory"
    settings: dict | None = None


STUDIES = {
    "mnist-mlp": Study("mnist_mlp.py", "minimaxir v2 mnist_mlp.py", 16384, 512),
    "mnist-cnn": Study("mnist_cnn.py", "minimaxir v2 mnist_cnn.py", 3072, 256),
    "cifar10-cnn": Study(
        "cifar10_cnn.py",
        "minimaxir v2 cifar10_cnn.py",
        3072,
        256,
        settings={"data_augmentation": False},
    ),
    "imdb-fasttext": Study(
        "imdb_fasttext.py",
        "minimaxir v2 imdb_fasttext.py",
        16384,
        512,
        settings={"ngram_range": 1},
    ),
    "imdb-bilstm": Study(
        "imdb_bidirectional_lstm.py", "minimaxir v2 imdb_bidirectional_lstm.py", 1536, 128
    ),
    "lstm-text-generation": Study(
        "lstm_text_generation.py", "minimaxir v2 lstm_text_generation.py", 8192, 0
    ),
    "text-generator": Study(
        "text_generator_keras.py", "minimaxir text_generator_keras.py", 4096, 0
    ),
    "tf-mnist-deep": Study("mnist_deep.py", "TensorFlow mnist_deep.py (tf.compat.v1)", 4000, 500),
    "catsdogs-cnn": Study(
        "catsdogs_tutorial.py",
        "cats-vs-dogs tutorial (Keras 3 image_dataset_from_directory)",
        2048,
        128,
        input="files",
        settings={"steps_per_epoch": None, "validation_steps": None},
    ),
}


# --- what both sides train on ------------------------------------------------------------


def workload(name: str, input_mode: str, seed: int, train: int = 1, test: int = 1):
    """The workload as a configuration's ``workloads:`` entry ``{name, data: synthetic,
    input, train_samples, test_samples}`` resolves it (the schema's defaults filled in, e.g.
    ``workers``): an :class:`embryo_bench.planning.workloads.Workload`. The counts matter
    only to its data settings, not to its spec."""
    from embryo_bench.planning.workloads import resolve_workload
    from embryo_bench.vocabulary.config import apply_defaults, load_schema

    entry = {
        "name": name,
        "data": "synthetic",
        "input": input_mode,
        "train_samples": train,
        "test_samples": test,
    }
    schema = load_schema()["properties"]
    # The configuration's train section with its defaults: its seed seeds the synthetic
    # arrays; its accuracy target and repeats are the workload's defaults.
    train_section = apply_defaults({"seed": seed}, schema["train"])
    return resolve_workload(apply_defaults(entry, schema["workloads"]["items"]), 0, train_section)


def samples(name: str, scale: float, batch: int) -> tuple[int, int]:
    """(training, test) samples of ``name`` at ``scale``: the training count rounded down to
    a multiple of ``batch`` (at least two batches), the test count at least one batch
    unless the workload has no test split."""
    study = STUDIES[name]
    train = max(2, int(study.train * scale) // batch) * batch
    test = max(batch, int(study.test * scale)) if study.test else 0
    return train, test


def prepare(name: str, folder: Path, train: int, test: int, seed: int) -> dict:
    """Write the workload's synthetic arrays (and, for files input, its image folders:
    ``train/`` as ``embryo-bench workload-files`` writes it, ``test/`` for the script's
    validation) under ``folder``. Returns arrays, files (or None), bytes (the training
    arrays' bytes, samples and labels) and batch_bytes (one training batch)."""
    import numpy as np

    from embryo_bench.data.arrays import read_arrays, write_synthetic
    from embryo_bench.data.imagefolder import write_image_folder

    w = workload(name, STUDIES[name].input, seed, train, max(test, 1))
    folder.mkdir(parents=True, exist_ok=True)
    arrays = folder / "arrays.npz"
    shape, dtype = w.spec.input_shape, w.spec.input_dtype
    write_synthetic(
        arrays,
        shape,
        dtype,
        w.spec.classes,
        train,
        test,
        seed,
        vocabulary=w.spec.vocabulary,
        dataset=w.spec.dataset,
    )
    files = None
    if w.spec.input_mode == "files":
        x_train, y_train, x_test, y_test = read_arrays(arrays)
        names = [f"class-{k}" for k in range(w.spec.classes)]
        files = folder / "files"
        write_image_folder(x_train, y_train, files / "train", names)
        write_image_folder(x_test, y_test, files / "test", names)
    per_sample = int(np.prod(shape)) * np.dtype(dtype).itemsize + 4  # + the int32 label
    return {
        "arrays": str(arrays),
        "files": str(files) if files else None,
        "bytes": train * per_sample,
        "batch_bytes": w.batch_size * per_sample,
        "batch_size": w.batch_size,
        "workers": w.spec.workers if w.spec.input_mode == "files" else 1,
    }


# --- worker side (one run in a fresh process) ----------------------------------------------


def epoch_clock(keras):
    """A Keras callback timing each epoch's training as fit_epochs does: from the epoch's
    start to the start of its test scoring (or its end, with no scoring), after waiting for
    the last step (the optimizer's step counter read back). ``wall`` and ``cpu``: seconds of
    each epoch (s; CPU: the whole process, all threads)."""

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.wall: list[float] = []
            self.cpu: list[float] = []
            self.running = False

        def on_epoch_begin(self, epoch, logs=None):
            self.t0, self.c0, self.running = time.perf_counter(), peers.cpu_seconds(), True

        def _stop(self):
            if self.running:
                keras.ops.convert_to_numpy(self.model.optimizer.iterations)
                self.wall.append(time.perf_counter() - self.t0)
                self.cpu.append(peers.cpu_seconds() - self.c0)
                self.running = False

        def on_test_begin(self, logs=None):
            self._stop()

        def on_epoch_end(self, epoch, logs=None):
            self._stop()

    return Clock()


def _add_callback(fit, clock):
    """``fit`` with ``clock`` added after the caller's callbacks."""

    def timed_fit(*a, callbacks=None, **k):
        return fit(*a, callbacks=[*(callbacks or []), clock], **k)

    return timed_fit


def run_ours(args) -> dict:
    """Train the workload as a run does (see the module); epoch_seconds from the trainer's
    own history, epoch_cpu_seconds and clock_seconds (the worker's clock, the same bounds)
    from :func:`epoch_clock`."""
    from embryo_bench.data.arrays import read_info
    from embryo_bench.training.train import setup, train_epochs
    from embryo_bench.vocabulary.spec import RunSpec
    from embryo_bench.vocabulary.training_input import TrainingInput

    w = workload(args.workload, args.input, args.seed)
    spec = RunSpec(
        target="bench-studies",
        repeat=1,
        runner="host",
        cpus=args.threads,
        threads=args.threads,
        gpus=0,
        backend="tensorflow",
        strategy="none",
        replicas=1,
        epochs=args.epochs,
        batch_size=w.batch_size,
        learning_rate=w.learning_rate,
        dropout=0.5,
        seed=args.seed,
        accuracy_target=0.5,
        probe_seconds=0.0,
        preprocessing=None,
        epoch_steps=args.epoch_steps,
        workload=w.spec,
    )
    spec = RunSpec.from_dict(json.loads(spec.to_json()), "bench run.json")  # as a run reads it
    inputs = TrainingInput.for_run(spec, "bench run.json", arrays=args.arrays, files=args.files)
    session = setup(spec, inputs, read_info(args.arrays))
    import keras

    clock = epoch_clock(keras)
    session.model.fit = _add_callback(session.model.fit, clock)
    history = train_epochs(session)
    return {
        "epoch_seconds": [float(s) for s in history["epoch_seconds"]],
        "epoch_cpu_seconds": clock.cpu,
        "clock_seconds": clock.wall,
        "samples_per_epoch": int(session.images_per_epoch),
        "parameters": int(session.model.count_params()),
        "versions": {"keras": keras.__version__},
    }


def script_settings(args) -> dict:
    """The settings the benchmark gives a study script (``_study.setting``)."""
    study = STUDIES[args.workload]
    out = {**(study.settings or {}), "epochs": args.epochs}
    if study.script == "mnist_deep.py":  # iterations, not epochs; one more marks the end
        out = {"iterations": args.epochs * (args.train // 50) + 1}
    if args.files:
        out |= {"training_set": f"{args.files}/train", "test_set": f"{args.files}/test"}
    return out


def run_script(args) -> dict:
    """Run the study's script as ``__main__`` in this (pinned) process, in a temporary
    working folder (its logger writes ``logs/``); its epochs timed by :func:`epoch_clock`
    added to its ``fit`` call (the Deep MNIST tutorial: its ``next_batch`` marks)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    os.environ["STUDY_ARRAYS"] = str(Path(args.arrays).resolve())
    os.environ["STUDY_SETTINGS"] = json.dumps(script_settings(args))
    sys.path.insert(0, str(SCRIPTS))
    import _study
    import keras

    clock = epoch_clock(keras)
    keras.Model.fit = _add_callback(keras.Model.fit, clock)
    script = SCRIPTS / STUDIES[args.workload].script
    with tempfile.TemporaryDirectory(prefix="bench-studies-") as work:
        here = os.getcwd()
        os.chdir(work)
        try:
            with contextlib.redirect_stdout(sys.stderr):  # its prints; ours is the result
                runpy.run_path(str(script), run_name="__main__")
        finally:
            os.chdir(here)
    if _study.EPOCH_MARKS:
        marks = _study.EPOCH_MARKS
        wall = [b[0] - a[0] for a, b in zip(marks, marks[1:], strict=False)]
        cpu = [b[1] - a[1] for a, b in zip(marks, marks[1:], strict=False)]
    else:
        wall, cpu = clock.wall, clock.cpu
    return {
        "epoch_seconds": wall,
        "epoch_cpu_seconds": cpu,
        "samples_per_epoch": args.train,
        "versions": {"keras": keras.__version__, "tensorflow": tf.__version__},
    }


def run_side(args) -> dict:
    """One run (pinned first) and its measurements: status, epoch_seconds and
    epoch_cpu_seconds (each epoch's training, wall and process CPU s), first_epoch_seconds,
    steady_images_per_s (samples/s over epochs 2..), steady_images_per_cpu_s,
    peak_rss_mib (MiB), cpu_per_wall (CPU s per wall s per thread over the whole process:
    well under 1 when something else shared its cores), cores."""
    wall0, cpu0 = time.perf_counter(), peers.cpu_seconds()
    cores = peers.pin(args.threads)
    out = run_ours(args) if args.side == "ours" else run_script(args)
    steady, steady_cpu = out["epoch_seconds"][1:], out["epoch_cpu_seconds"][1:]
    if len(out["epoch_seconds"]) != args.epochs or not steady:
        raise RuntimeError(f"{len(out['epoch_seconds'])} epochs timed; expected {args.epochs}")
    n = len(steady) * out["samples_per_epoch"]
    return {
        "status": "ok",
        **out,
        "first_epoch_seconds": out["epoch_seconds"][0],
        "steady_images_per_s": n / sum(steady),
        "steady_images_per_cpu_s": n / sum(steady_cpu),
        "peak_rss_mib": peers.peak_rss_mib(),
        "cpu_per_wall": (peers.cpu_seconds() - cpu0) / (time.perf_counter() - wall0) / args.threads,
        "cores": cores,
    }


def worker(args) -> None:
    """Print one run's result as one line (:data:`RESULT` + JSON)."""
    print(RESULT + json.dumps(run_side(args)), flush=True)


# --- parent side ---------------------------------------------------------------------------


def spawn(args, name: str, side: str, data: dict, epochs: int, train: int, **extra) -> dict:
    """One run in a fresh interpreter; its result, or a status "failed ..." record."""
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env.update({v: str(args.threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    env["KERAS_BACKEND"] = "tensorflow"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--side", side]
    cmd += ["--workload", name, "--input", STUDIES[name].input, "--arrays", data["arrays"]]
    cmd += ["--threads", str(args.threads), "--epochs-total", str(epochs)]
    cmd += ["--train", str(train), "--seed", str(args.seed)]
    cmd += ["--epoch-steps", str(extra.get("epoch_steps", 0))]
    if data["files"]:
        cmd += ["--files", data["files"]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"failed: timed out after {args.timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    lines = [s for s in (proc.stderr + proc.stdout).splitlines() if s.strip()]
    return {"status": f"failed (rc {proc.returncode}): {lines[-1] if lines else ''}"}


def schedule(names: list[str], rounds: int) -> list[tuple[int, str, str]]:
    """(round, workload, side) in the order they run: round by round, each workload's two
    sides back to back, ours first in even rounds and the script first in odd ones
    (bench_peers' :func:`interleaved`: AB BA AB ...)."""
    order = peers.interleaved(list(SIDES), rounds)
    return [
        (r, name, side) for r in range(rounds) for name in names for rr, side in order if rr == r
    ]


def verdict(median: float, low: float, high: float, pairs: int) -> str:
    """A ratio ours/script against :data:`TARGET` (0.97): "meets 0.97x" (the
    interval at or above it), "below 0.97x" (the interval under it), "undecided" (the
    interval spans it), or "one pair: no interval"."""
    if pairs < 2:
        return "one pair: no interval"
    if low >= TARGET:
        return f"meets {TARGET}x"
    if high < TARGET:
        return f"below {TARGET}x"
    return "undecided"


def summarise(names: list[str], runs: list[dict]) -> list[dict]:
    """One row per workload: for each side its rounds, median samples/s and per CPU s,
    largest peak RSS (MiB), lowest CPU per wall; the ratio ours/script paired by round
    (:func:`embryo_bench.reporting.compare.paired_ratios`: median and 95 % bootstrap
    interval, :func:`~embryo_bench.reporting.compare.median_interval`; :func:`verdict`), for
    samples/s (``ratio``) and per CPU second (``ratio_cpu``), with the rounds' ratios."""
    import pandas as pd

    from embryo_bench.reporting.compare import median_interval, paired_ratios

    rows = []
    for name in names:
        mine = [r for r in runs if r["workload"] == name]
        ok = [r for r in mine if peers.valid(r)]
        row: dict = {"workload": name, "input": STUDIES[name].input}
        row["samples"] = mine[0].get("train") if mine else None
        for side in SIDES:
            got = [r for r in ok if r["side"] == side]
            failed = [r for r in mine if r["side"] == side and not peers.valid(r)]
            row[f"{side}_rounds"] = len(got)
            row[f"{side}_status"] = failed[-1]["status"] if failed else "ok"
            if got:
                row[f"{side}_images_per_s"] = statistics.median(
                    r["steady_images_per_s"] for r in got
                )
                row[f"{side}_images_per_cpu_s"] = statistics.median(
                    r["steady_images_per_cpu_s"] for r in got
                )
                row[f"{side}_peak_rss_mib"] = max(r["peak_rss_mib"] for r in got)
                row[f"{side}_cpu_per_wall"] = min(r["cpu_per_wall"] for r in got)
        frame = pd.DataFrame(
            [
                {
                    "target": r["side"],
                    "round": r["round"],
                    "wall": r["steady_images_per_s"],
                    "cpu": r["steady_images_per_cpu_s"],
                }
                for r in ok
            ],
            columns=["target", "round", "wall", "cpu"],
        )
        for measure, key in (("wall", "ratio"), ("cpu", "ratio_cpu")):
            row[key] = None
            if not (frame["target"] == "script").any():
                continue
            pairs = paired_ratios(frame, "script", measure)
            if pairs.empty:
                continue
            median, low, high = median_interval(pairs["ratio"])
            row[key] = {
                "pairs": len(pairs),
                "median": median,
                "low": low,
                "high": high,
                "verdict": verdict(median, low, high, len(pairs)),
                "rounds": [float(x) for x in pairs["ratio"]],
            }
        rows.append(row)
    return rows


def _ratio(cell: dict | None) -> str:
    if not cell:
        return "-"
    return f"{cell['median']:.3f} [{cell['low']:.3f}-{cell['high']:.3f}]"


def table(rows: list[dict]) -> str:
    """The summary rows as a fixed-width text table."""
    head = (
        f"{'workload':<21} {'input':<6} {'samples':>7} {'ours/s':>8} {'script/s':>8} "
        f"{'ours/script [95 %]':>22} {'verdict':<22} {'per CPU-s [95 %]':>22} "
        f"{'RSS ours':>8} {'RSS scr':>8} {'CPU/wall':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:

        def num(key, fmt="8.1f", r=r):
            value = r.get(key)
            return format(value, fmt) if isinstance(value, (int, float)) else f"{'-':>8}"

        judged = (r.get("ratio") or {}).get("verdict", "")
        status = [f"{s}: {r[f'{s}_status']}" for s in SIDES if r[f"{s}_status"] != "ok"]
        cpu_wall = min(
            (r[f"{s}_cpu_per_wall"] for s in SIDES if f"{s}_cpu_per_wall" in r),
            default=math.nan,
        )
        lines.append(
            f"{r['workload']:<21} {r['input']:<6} {r['samples'] or 0:>7} "
            f"{num('ours_images_per_s')} {num('script_images_per_s')} "
            f"{_ratio(r.get('ratio')):>22} {judged:<22} {_ratio(r.get('ratio_cpu')):>22} "
            f"{num('ours_peak_rss_mib', '5.0f')} MiB{num('script_peak_rss_mib', '5.0f')} MiB"
            f"{cpu_wall:8.2f}" + (f"  [{'; '.join(status)}]" if status else "")
        )
    return "\n".join(lines)


def memory_probe(args, name: str, root: Path) -> dict:
    """Two runs of ours whose training sets differ by about ``--memory-mib`` MiB (see the
    module): the held copies of the extra data at the peak, and the bound."""
    w = workload(name, STUDIES[name].input, args.seed)
    batch = w.batch_size
    data_small, data_big = {}, {}
    files = STUDIES[name].input == "files"
    test = batch if STUDIES[name].test else 0
    one = prepare(name, root / "probe-size", 2 * batch, test, args.seed)
    per_sample = one["bytes"] / (2 * batch)
    shutil.rmtree(root / "probe-size")
    mib = min(args.memory_mib, FILES_PROBE_MIB) if files else args.memory_mib
    small = max(2, int(mib * 2**20 / per_sample / 16) // batch) * batch
    big = small + max(1, int(mib * 2**20 / per_sample) // batch) * batch
    out = {"workload": name, "input": STUDIES[name].input}
    for label, n, data in (("small", small, data_small), ("big", big, data_big)):
        folder = root / f"probe-{label}"
        data.update(prepare(name, folder, n, test, args.seed))
        epochs, steps = (1, 0) if files else (2, 2)
        run = spawn(args, name, "ours", data, epochs + (1 if files else 0), n, epoch_steps=steps)
        shutil.rmtree(folder)
        out[label] = {"train": n, "bytes": data["bytes"], "status": run["status"]}
        out[label]["peak_rss_mib"] = run.get("peak_rss_mib")
        print(f"  memory {name} {label} ({n} samples): {run['status']}", flush=True)
    if out["small"]["status"] == "ok" and out["big"]["status"] == "ok":
        extra = (out["big"]["bytes"] - out["small"]["bytes"]) / 2**20
        grew = out["big"]["peak_rss_mib"] - out["small"]["peak_rss_mib"]
        held = data_big["workers"] * data_big["batch_bytes"] / 2**20
        out |= {
            "extra_data_mib": extra,
            "copies": grew / extra,
            "bound_mib": out["small"]["peak_rss_mib"] + extra + held,
            "batches_mib": held,
        }
        out["within_bound"] = out["big"]["peak_rss_mib"] <= out["bound_mib"]
    return out


def memory_table(probes: list[dict]) -> str:
    """The memory runs as a fixed-width text table."""
    head = (
        f"{'workload':<21} {'input':<6} {'samples':>15} {'extra data':>10} {'peak small':>10} "
        f"{'peak large':>10} {'bound':>8} {'copies':>6}  verdict"
    )
    lines = [head, "-" * len(head)]
    for p in probes:
        if "copies" not in p:
            why = "; ".join(f"{k}: {p[k]['status']}" for k in ("small", "big"))
            lines.append(f"{p['workload']:<21} {p['input']:<6} {why}")
            continue
        judged = "within" if p["within_bound"] else "ABOVE the bound"
        lines.append(
            f"{p['workload']:<21} {p['input']:<6} "
            f"{p['small']['train']:>7}/{p['big']['train']:<7} {p['extra_data_mib']:6.0f} MiB "
            f"{p['small']['peak_rss_mib']:6.0f} MiB {p['big']['peak_rss_mib']:6.0f} MiB "
            f"{p['bound_mib']:4.0f} MiB {p['copies']:6.2f}  {judged}"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default=",".join(STUDIES), help="comma-separated")
    p.add_argument("--threads", type=int, default=1, help="cores and threads per run")
    p.add_argument("--rounds", type=int, default=3, help="rounds (each side once a round)")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (after 1 excluded)")
    p.add_argument("--scale", type=float, default=1.0, help="x each workload's sample counts")
    p.add_argument("--memory-mib", type=float, default=0.0, help="memory runs' data (MiB); 0: none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=1800, help="per run (s)")
    p.add_argument("--workdir", help="where the data is written (default: a temporary folder)")
    p.add_argument("--json", help="write the settings, every run and the summary here")
    p.add_argument(
        "--report",
        nargs="+",
        metavar="JSON",
        help="print the tables of --json records again, their rounds pooled (no runs)",
    )
    worker_args = (
        ("--side", str, "ours"),
        ("--workload", str, ""),
        ("--input", str, "memory"),
        ("--arrays", str, ""),
        ("--files", str, None),
        ("--train", int, 0),
        ("--epochs-total", int, 0),
        ("--epoch-steps", int, 0),
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for flag, kind, default in worker_args:
        p.add_argument(flag, type=kind, default=default, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.epochs = args.epochs_total
        return args
    if min(args.threads, args.rounds, args.epochs) < 1 or args.scale <= 0:
        p.error("--threads, --rounds and --epochs must be >= 1 and --scale > 0")
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STUDIES))
    if unknown:
        p.error(f"unknown workloads {unknown}; known: {', '.join(STUDIES)}")
    args.names = names
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    sys.path.insert(0, str(REPO / "src"))
    if args.report:
        report(pooled([json.loads(Path(path).read_text()) for path in args.report]))
        return 0
    from embryo_bench.recording.hardware import cpu_flags, cpu_model

    cores = sorted(os.sched_getaffinity(0))[: args.threads]
    print(f"host: {cpu_model()} ({', '.join(cpu_flags())}); {os.cpu_count()} CPUs")
    print(
        f"threads {args.threads} on cores {cores}; 1 + {args.epochs} epochs per run (the first "
        f"excluded); {args.rounds} rounds, ours/script alternating; synthetic data, seed "
        f"{args.seed}; load average {os.getloadavg()[0]:.2f} at the start",
        flush=True,
    )
    with contextlib.ExitStack() as stack:
        root = Path(args.workdir) if args.workdir else None
        if root is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="studies-")))
        data, counts = {}, {}
        for name in args.names:
            batch = workload(name, STUDIES[name].input, args.seed).batch_size
            counts[name] = samples(name, args.scale, batch)
            data[name] = prepare(name, root / name, *counts[name], args.seed)
        record = {
            "settings": {
                k: v
                for k, v in vars(args).items()
                if k in ("workloads", "threads", "rounds", "epochs", "scale", "memory_mib", "seed")
            },
            "host": {"cpu_model": cpu_model(), "cpu_flags": cpu_flags(), "cores": cores},
            "samples": counts,
            "runs": [],
            "memory": [],
            "complete": False,
        }
        runs = record["runs"]
        for r, name, side in schedule(args.names, args.rounds):
            t0 = time.perf_counter()
            run = spawn(args, name, side, data[name], 1 + args.epochs, counts[name][0])
            run.update(workload=name, side=side, round=r, train=counts[name][0])
            run["wall_seconds"] = time.perf_counter() - t0
            runs.append(run)
            if args.json:  # a benchmark cut off still leaves what it measured (--report)
                Path(args.json).write_text(json.dumps(record, indent=1))
            speed = (
                f"{run['steady_images_per_s']:.1f} samples/s" if peers.valid(run) else run["status"]
            )
            print(
                f"  round {r + 1} {name} {side}: {speed} ({run['wall_seconds']:.0f} s)",
                flush=True,
            )
        if args.memory_mib:
            record["memory"] = [memory_probe(args, n, root) for n in args.names]
    record["complete"] = True
    record["summary"] = report(record)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0


def pooled(records: list[dict]) -> dict:
    """Several records as one: their runs, each record's rounds numbered after the previous
    records' (a pair stays within its round), and their memory runs."""
    runs, memory, offset = [], [], 0
    for record in records:
        runs += [{**r, "round": r["round"] + offset} for r in record["runs"]]
        offset += 1 + max((r["round"] for r in record["runs"]), default=-1)
        memory += record.get("memory") or []
    return {"runs": runs, "memory": memory}


def report(record: dict) -> list[dict]:
    """Print the tables of a benchmark's record (its runs and memory runs; the summary is
    made again from the runs) and return the summary rows."""
    names = list(dict.fromkeys(r["workload"] for r in record["runs"]))
    rows = summarise(names, record["runs"])
    print()
    print(
        "ours/s, script/s: steady-state samples/s (epochs 2.., training only), median over "
        "rounds; ours/script: paired by round, median [95 % bootstrap interval]; verdict: "
        f"the interval against {TARGET}; per CPU-s: the same ratio of samples per "
        "process CPU second; RSS: largest peak over rounds; CPU/wall: lowest of either side\n"
    )
    print(table(rows))
    if record.get("memory"):
        print(
            "\nmemory (ours): two runs whose training sets differ by the extra data; copies = "
            "growth of the peak RSS / extra data; bound = small run's peak + extra data + one "
            "batch per input worker\n"
        )
        print(memory_table(record["memory"]))
    return rows


if __name__ == "__main__":
    sys.exit(main())

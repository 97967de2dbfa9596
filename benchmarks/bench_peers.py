"""Benchmark: our training path against its peers on the paper CNN (issue 14), not a test.

Every entry trains the same network, the paper CNN (conv 5x5x32 same + ReLU -> maxpool 2 ->
conv 5x5x64 same + ReLU -> maxpool 2 -> dense 1024 + ReLU -> dropout 0.5 -> dense 4 logits;
64x64x1 uint8 input rescaled by 1/255; 16,834,436 parameters; Adam, learning rate 1e-4;
sparse softmax cross-entropy on the logits), on the same in-memory data, with the same batch
(480) and the same number of steps:

* ``embryo-bench``: our host runner's training path, Keras 3 on TensorFlow through
  :func:`embryo_bench.training.backend.limit_threads`,
  :func:`embryo_bench.workloads.paper.build_model` /
  :func:`~embryo_bench.workloads.paper.compile_model` and
  :func:`embryo_bench.training.train.fit_epochs` (the
  code a run executes: the ``tf.data`` feed of :func:`embryo_bench.training.backend.input_pipeline`,
  Keras validation after each epoch, the epoch clock);
* ``embryo-bench-xla``: the same with ``jit_compile=True`` (XLA); Keras leaves it off on a
  machine with only CPUs ("auto"), so the ``embryo-bench`` entry, like a run, does not use it;
* ``tf-original``: the authors' formulation (compscied/tensorflow EmbryoConvolutionLearning.py,
  after TensorFlow's "Deep MNIST for Experts"): raw ``tf.nn.conv2d`` / ``tf.nn.max_pool2d`` /
  ``tf.matmul`` ops on variables initialised with truncated-normal sd 0.1 weights and 0.1
  biases, ``tf.compat.v1.train.AdamOptimizer(1e-4)``, one ``tf.function`` train step fed
  numpy batches gathered from the in-memory arrays (the script's ``next_batch``);
* ``torch``: a plain PyTorch loop (``nn.Sequential``, ``torch.optim.Adam``), numpy batches
  gathered the same way;
* ``keras-jax`` and ``keras-torch``: the ``embryo-bench`` code on Keras's JAX and PyTorch
  backends (``KERAS_BACKEND`` set before Keras is imported), fed as our code feeds them
  (numpy arrays to ``fit``).

Data: ``steps * batch`` training images and ``batch`` test images, uint8 64x64x1 drawn from
``numpy.random.default_rng(seed)`` in 0..128 (the range of the augmented frames, |p - 128|),
with labels in 0..3: synthetic, since only the speed is measured.

Clock: each entry trains ``1 + epochs`` epochs of ``steps`` steps (one reshuffled pass over the
training images per epoch). The first epoch is excluded (tracing, XLA compilation, first
allocations); an entry's steady-state images/s is ``epochs * steps * batch`` divided by the
training seconds of epochs 2 to ``1 + epochs``. The Keras entries' clock is
:func:`embryo_bench.training.train.fit_epochs`' (each epoch's test scoring excluded, the last step
waited for); the raw loops read the loss back at the end of each epoch.

Fairness: each (entry, repeat) runs in a fresh subprocess, in interleaved order (ABCD DCBA
ABCD ...), pinned (``os.sched_setaffinity``) to the same first ``--threads`` cores, with
OMP/MKL/OpenBLAS threads set to ``--threads`` and each framework's intra-op and inter-op
pools set to ``--threads`` (TensorFlow ``tf.config.threading``, PyTorch
``torch.set_num_threads`` / ``set_num_interop_threads``; the Keras entries through
``limit_threads``, exactly as a run). An entry whose framework is missing in its interpreter
is reported as "not installed"; one that fails is reported with its last error line.

Reference: the machine's single-precision matrix-product speed, measured by numpy float32
1024x1024 products (2 n^3 FLOPs each; numpy's own BLAS) on the same cores and threads in a
subprocess, before and after all entries; an entry's efficiency is the model's training
FLOPs per image (:func:`embryo_bench.recording.calibrate.training_flops_per_image`, 0.435 GFLOP)
times
its images/s, divided by the mean of the two probes.

Usage:
    python benchmarks/bench_peers.py [--threads 1] [--steps 4] [--epochs 2] [--repeats 3]
        [--batch 480] [--entries embryo-bench,tf-original,torch,keras-jax,keras-torch]
        [--torch-python /path/to/python] [--json peers.json]

``--torch-python``: the interpreter for the ``torch`` and ``keras-torch`` entries; default: this
interpreter. E.g. a virtual environment holding only a CPU build of PyTorch (``pip install
--no-deps`` of the wheel, then its pure-Python requirements), with a ``.pth`` file whose line
``import site; site.addsitedir("<this environment's site-packages>")`` lets it import Keras
and this project, so this environment itself is left as it was.

Prints the host CPU, the thread count and one table row per entry: median and min-max
images/s over the repeats and the ratio to the best entry's median; the same per process CPU
second (robust to other processes taking turns on the pinned cores) and its ratio; peak RSS
(MiB, the largest over repeats); achieved GFLOP/s and efficiency; the excluded first epoch
(s); CPU per wall second (below ~0.95: the cores were shared).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRIES = ("embryo-bench", "embryo-bench-xla", "tf-original", "torch", "keras-jax", "keras-torch")
#: Modules each entry needs in its interpreter.
NEEDS = {
    "embryo-bench": ("tensorflow", "keras"),
    "embryo-bench-xla": ("tensorflow", "keras"),
    "tf-original": ("tensorflow",),
    "torch": ("torch",),
    "keras-jax": ("jax", "keras"),
    "keras-torch": ("torch", "keras"),
}
#: Keras backend of the entries that run our Keras code.
KERAS_BACKENDS = {
    "embryo-bench": "tensorflow",
    "embryo-bench-xla": "tensorflow",
    "keras-jax": "jax",
    "keras-torch": "torch",
}
TORCH_ENTRIES = ("torch", "keras-torch")
RESULT = "BENCH_PEERS_RESULT "
PARAMETERS = 16_834_436
IMAGE = 64
CLASSES = 4
SGEMM_N = 1024


# --- worker side (one entry in a fresh process) --------------------------------------------


def pin(threads: int) -> list[int]:
    """Pin this process to its first ``threads`` allowed cores and size the BLAS/OpenMP pools
    (before any framework is imported). Returns the cores."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    cores = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, cores)
    return cores


def missing_module(entry: str) -> str | None:
    """The first module ``entry`` needs that this interpreter cannot import, or None."""
    import importlib.util

    for name in NEEDS[entry]:
        if importlib.util.find_spec(name) is None:
            return name
    return None


def make_data(steps: int, batch: int, seed: int):
    """(x_train, y_train, x_test, y_test): ``steps * batch`` training and ``batch`` test
    images, uint8 (N, 64, 64, 1) in 0..128, labels int32 in 0..3, from ``seed``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = steps * batch + batch
    x = rng.integers(0, 129, (n, IMAGE, IMAGE, 1), dtype=np.uint8)
    y = rng.integers(0, CLASSES, n).astype(np.int32)
    return x[batch:], y[batch:], x[:batch], y[:batch]


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU time of this process so far, all its threads, user and system (s)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_keras(entry: str, data, args) -> dict:
    """Our training path on ``entry``'s Keras backend: limit_threads, build_model /
    compile_model, fit_epochs. Returns epoch_seconds (all epochs, s) and the model facts."""
    os.environ["KERAS_BACKEND"] = KERAS_BACKENDS[entry]
    from embryo_bench.training.backend import compute_settings, limit_threads

    limit_threads(args.threads)
    import keras

    from embryo_bench.recording.calibrate import training_flops_per_image
    from embryo_bench.training.train import fit_epochs, seed_everything
    from embryo_bench.workloads.paper import build_model, compile_model

    seed_everything(args.seed)
    model = compile_model(build_model(IMAGE))
    if entry == "embryo-bench-xla":
        model.jit_compile = True
    cpu: list[float] = []

    class CpuClock(keras.callbacks.Callback):
        """The process's CPU seconds over each epoch's training: between the epoch's start
        and its scoring's start, the bounds of fit_epochs' own clock (which runs first and
        waits there for the last step)."""

        def on_epoch_begin(self, epoch, logs=None):
            self.begin = cpu_seconds()

        def on_test_begin(self, logs=None):
            cpu.append(cpu_seconds() - self.begin)

    fit = model.fit  # fit_epochs' one fit call, with the CPU clock added after its own
    model.fit = lambda *a, callbacks=(), **k: fit(*a, callbacks=[*callbacks, CpuClock()], **k)
    x, y, xt, yt = data
    rows = fit_epochs(
        model, (x, y), (xt, yt), batch_size=args.batch, epochs=1 + args.epochs, seed=args.seed
    )
    return {
        "epoch_seconds": [r["epoch_seconds"] for r in rows],
        "epoch_cpu_seconds": cpu,
        "final_loss": rows[-1]["train_loss"],
        "parameters": int(model.count_params()),
        "training_flops_per_image": training_flops_per_image(model)["training_flops"],
        "versions": {"keras": keras.__version__, KERAS_BACKENDS[entry]: _version(entry)},
        "settings": compute_settings(model),
        "jit_compile": bool(model.jit_compile),
    }


def _version(entry: str) -> str:
    import importlib.metadata as md

    return md.version(KERAS_BACKENDS[entry])


def _batches(n: int, batch: int, steps: int, rng):
    """Index arrays of one epoch: a new permutation, ``steps`` batches of ``batch``."""
    order = rng.permutation(n)
    return [order[i * batch : (i + 1) * batch] for i in range(steps)]


def _timed_epochs(train_step, read_loss, n: int, args) -> dict:
    """The raw loops' clock: ``1 + args.epochs`` epochs of ``args.steps`` calls of
    ``train_step(idx)`` (idx: int array (batch,) into the ``n`` training images, a new
    permutation each epoch); each epoch ends by reading its last loss back with
    ``read_loss`` (float), which waits for the step. Returns epoch_seconds and
    epoch_cpu_seconds (wall and process CPU s of each epoch) and final_loss."""
    import numpy as np

    rng = np.random.default_rng(args.seed)
    seconds, cpu, loss = [], [], None
    for _ in range(1 + args.epochs):
        t0, c0 = time.perf_counter(), cpu_seconds()
        for idx in _batches(n, args.batch, args.steps, rng):
            loss = train_step(idx)
        loss = read_loss(loss)
        seconds.append(time.perf_counter() - t0)
        cpu.append(cpu_seconds() - c0)
    return {"epoch_seconds": seconds, "epoch_cpu_seconds": cpu, "final_loss": loss}


def run_tf_original(data, args) -> dict:
    """The authors' formulation as raw TensorFlow ops in one ``tf.function`` train step."""
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.random.set_seed(args.seed)

    def weight(shape):
        return tf.Variable(tf.random.truncated_normal(shape, stddev=0.1))

    def bias(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    flat = (IMAGE // 4) * (IMAGE // 4) * 64
    params = [
        weight([5, 5, 1, 32]),
        bias([32]),
        weight([5, 5, 32, 64]),
        bias([64]),
        weight([flat, 1024]),
        bias([1024]),
        weight([1024, CLASSES]),
        bias([CLASSES]),
    ]
    w1, b1, w2, b2, w3, b3, w4, b4 = params
    optimizer = tf.compat.v1.train.AdamOptimizer(1e-4)

    def pool(h):
        return tf.nn.max_pool2d(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            h = tf.cast(images, tf.float32) / 255.0
            h = pool(tf.nn.relu(tf.nn.conv2d(h, w1, [1, 1, 1, 1], "SAME") + b1))
            h = pool(tf.nn.relu(tf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME") + b2))
            h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, flat]), w3) + b3)
            logits = tf.matmul(tf.nn.dropout(h, rate=0.5), w4) + b4
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params, strict=True))
        return loss

    x, y, _, _ = data
    return {
        **_timed_epochs(lambda idx: train_step(x[idx], y[idx]), float, len(y), args),
        "parameters": int(sum(int(np.prod(p.shape)) for p in params)),
        "versions": {"tensorflow": tf.__version__},
    }


def run_torch(data, args) -> dict:
    """A plain PyTorch training loop (``nn.Sequential``, ``torch.optim.Adam``)."""
    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear((IMAGE // 4) ** 2 * 64, 1024),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(1024, CLASSES),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    x, y, _, _ = data

    def train_step(idx):
        # NHWC with one channel is NCHW with one channel: a reshape, no copy.
        images = torch.from_numpy(x[idx]).reshape(-1, 1, IMAGE, IMAGE).float().div_(255.0)
        labels = torch.from_numpy(y[idx]).long()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    return {
        **_timed_epochs(train_step, lambda loss: float(loss.item()), len(y), args),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "versions": {"torch": torch.__version__},
    }


def run_entry(entry: str, args) -> dict:
    """Train ``entry`` in this process (pinned first) and return its measurements: status,
    epoch_seconds and epoch_cpu_seconds (wall and process CPU s of each epoch's training, the
    first epoch included), first_epoch_seconds (s), steady_images_per_s (images/s over epochs
    2..), steady_images_per_cpu_s (the same images per process CPU second, all threads:
    unlike the wall clock, not slowed by other processes taking turns on the pinned cores;
    at 1 thread it equals images/s when the core was the entry's alone), final_loss,
    parameters, peak_rss_mib
    (MiB), cpu_per_wall (the process's CPU seconds per wall second per thread over the whole
    run, imports included: well under 1 when something else shared its cores), cores,
    threads, versions."""
    missing = missing_module(entry)
    if missing is not None:
        return {"entry": entry, "status": "not installed", "missing": missing}
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    cores = pin(args.threads)
    data = make_data(args.steps, args.batch, args.seed)
    if entry in KERAS_BACKENDS:
        out = run_keras(entry, data, args)
    elif entry == "tf-original":
        out = run_tf_original(data, args)
    else:
        out = run_torch(data, args)
    steady, steady_cpu = out["epoch_seconds"][1:], out["epoch_cpu_seconds"][1:]
    images = len(steady) * args.steps * args.batch
    return {
        "entry": entry,
        "status": "ok",
        **out,
        "first_epoch_seconds": out["epoch_seconds"][0],
        "steady_images_per_s": images / sum(steady),
        "steady_images_per_cpu_s": images / sum(steady_cpu),
        "peak_rss_mib": peak_rss_mib(),
        "cpu_per_wall": (cpu_seconds() - cpu0) / (time.perf_counter() - wall0) / args.threads,
        "cores": cores,
        "threads": args.threads,
        "python": sys.executable,
    }


def run_sgemm(args) -> dict:
    """numpy float32 ``SGEMM_N``-square products on the pinned cores for ``--sgemm-seconds``
    (after one untimed product): gflops (GFLOP/s, 2 n^3 FLOPs a product), products,
    seconds (s), blas (numpy's BLAS library)."""
    cores = pin(args.threads)
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=np.float32)
    b = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=np.float32)
    a @ b
    products, t0 = 0, time.perf_counter()
    while True:
        a @ b
        products += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= args.sgemm_seconds:
            break
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        blas = "unknown"
    return {
        "gflops": 2.0 * SGEMM_N**3 * products / elapsed / 1e9,
        "products": products,
        "seconds": elapsed,
        "matrix": SGEMM_N,
        "blas": blas,
        "cores": cores,
    }


def run_flops() -> dict:
    """Training FLOPs per image of the paper CNN
    (:func:`embryo_bench.recording.calibrate.training_flops_per_image`) and its parameter count."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    from embryo_bench.recording.calibrate import training_flops_per_image
    from embryo_bench.workloads.paper import build_model

    model = build_model(IMAGE)
    return {
        "training_flops_per_image": training_flops_per_image(model)["training_flops"],
        "parameters": int(model.count_params()),
    }


def worker(args) -> None:
    """Run one job (an entry, ``sgemm`` or ``flops``) and print its result as one line."""
    if args.worker == "sgemm":
        out = run_sgemm(args)
    elif args.worker == "flops":
        pin(args.threads)
        out = run_flops()
    else:
        out = run_entry(args.worker, args)
    print(RESULT + json.dumps(out), flush=True)


# --- parent side ---------------------------------------------------------------------------


def interleaved(entries: list[str], repeats: int) -> list[tuple[int, str]]:
    """(repeat, entry) in the order they run: forward, backward, forward... (ABCD DCBA ...)."""
    out = []
    for r in range(repeats):
        for entry in entries if r % 2 == 0 else entries[::-1]:
            out.append((r, entry))
    return out


def interpreter(entry: str, torch_python: str | None) -> str:
    """The Python that runs ``entry``."""
    return torch_python if torch_python and entry in TORCH_ENTRIES else sys.executable


def spawn(job: str, args, python: str | None = None) -> dict:
    """Run ``job`` (an entry, ``sgemm`` or ``flops``) in a fresh interpreter; its result, or
    a status "failed: ..." / "not installed (...)" record when it gives none."""
    python = python or sys.executable
    if not os.path.exists(python):
        return {"entry": job, "status": f"not installed (no interpreter {python})"}
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env.update({v: str(args.threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    cmd = [python, str(Path(__file__).resolve()), "--worker", job]
    cmd += ["--threads", str(args.threads), "--steps", str(args.steps)]
    cmd += ["--epochs", str(args.epochs), "--batch", str(args.batch), "--seed", str(args.seed)]
    cmd += ["--sgemm-seconds", str(args.sgemm_seconds)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"entry": job, "status": f"failed: timed out after {args.timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    lines = [s for s in (proc.stderr + proc.stdout).splitlines() if s.strip()]
    return {"entry": job, "status": f"failed (rc {proc.returncode}): {lines[-1] if lines else ''}"}


def valid(run: dict) -> bool:
    """An ok run whose speed and memory are positive and finite."""
    return run.get("status") == "ok" and all(
        isinstance(run.get(k), (int, float)) and math.isfinite(run[k]) and run[k] > 0
        for k in ("steady_images_per_s", "peak_rss_mib", "first_epoch_seconds")
    )


def summarise(
    entries: list[str], runs: list[dict], flops_per_image: float, sgemm_gflops: float | None
) -> list[dict]:
    """One row per entry: status, repeats, images_per_s (median), min, max (images/s),
    ratio (median / the best entry's median), images_per_cpu_s (median, images per process
    CPU second) and ratio_cpu (of the best), peak_rss_mib (largest over repeats, MiB),
    first_epoch_s (median, s), cpu_per_wall (the lowest over repeats: under ~0.95, another
    process took some of the cores), achieved_gflops (GFLOP/s), efficiency (of the sgemm
    probe, a fraction), parameters, versions."""
    rows = []
    for entry in entries:
        mine = [r for r in runs if r.get("entry") == entry]
        ok = [r for r in mine if valid(r)]
        if not ok:
            status = mine[-1]["status"] if mine else "not run"
            if status == "not installed" and mine[-1].get("missing"):
                status = f"not installed ({mine[-1]['missing']})"
            rows.append({"entry": entry, "status": status, "repeats": 0})
            continue
        ips = [r["steady_images_per_s"] for r in ok]
        median = statistics.median(ips)
        per_cpu = statistics.median(r.get("steady_images_per_cpu_s", math.nan) for r in ok)
        achieved = flops_per_image * median / 1e9
        rows.append(
            {
                "entry": entry,
                "status": "ok" if len(ok) == len(mine) else f"ok ({len(mine) - len(ok)} failed)",
                "repeats": len(ok),
                "images_per_s": median,
                "min": min(ips),
                "max": max(ips),
                "images_per_cpu_s": per_cpu,
                "peak_rss_mib": max(r["peak_rss_mib"] for r in ok),
                "first_epoch_s": statistics.median(r["first_epoch_seconds"] for r in ok),
                "cpu_per_wall": min(r.get("cpu_per_wall", math.nan) for r in ok),
                "achieved_gflops": achieved,
                "efficiency": achieved / sgemm_gflops if sgemm_gflops else None,
                "parameters": ok[0]["parameters"],
                "versions": ok[0].get("versions", {}),
            }
        )
    done = [r for r in rows if "images_per_s" in r]
    best = max((r["images_per_s"] for r in done), default=None)
    best_cpu = max((r["images_per_cpu_s"] for r in done), default=None)
    for r in done:
        r["ratio"] = r["images_per_s"] / best
        r["ratio_cpu"] = r["images_per_cpu_s"] / best_cpu
    return rows


def table(rows: list[dict]) -> str:
    """The summary rows as a fixed-width text table."""
    head = (
        f"{'entry':<13} {'images/s':>9} {'min-max':>15} {'x best':>7} {'img/CPU-s':>9} "
        f"{'x best':>7} {'peak RSS':>9} "
        f"{'GFLOP/s':>8} {'eff.':>6} {'1st ep s':>8} {'CPU/wall':>8}  versions / status"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if "images_per_s" not in r:
            lines.append(
                f"{r['entry']:<13} {'-':>9} {'-':>15} {'-':>7} {'-':>9} {'-':>7} {'-':>9} {'-':>8} "
                f"{'-':>6} {'-':>8} {'-':>8}  {r['status']}"
            )
            continue
        eff = f"{100 * r['efficiency']:5.1f}%" if r["efficiency"] is not None else "-"
        versions = " ".join(f"{k} {v}" for k, v in r["versions"].items())
        status = "" if r["status"] == "ok" else f" [{r['status']}]"
        lines.append(
            f"{r['entry']:<13} {r['images_per_s']:9.2f} "
            f"{r['min']:7.2f}-{r['max']:<7.2f} {r['ratio']:7.3f} {r['images_per_cpu_s']:9.2f} "
            f"{r['ratio_cpu']:7.3f} {r['peak_rss_mib']:5.0f} MiB "
            f"{r['achieved_gflops']:8.2f} {eff:>6} {r['first_epoch_s']:8.1f} "
            f"{r['cpu_per_wall']:8.2f}  {versions}{status}"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1, help="cores and threads per entry")
    p.add_argument("--steps", type=int, default=4, help="training steps per epoch")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (after 1 excluded)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each entry, interleaved")
    p.add_argument("--batch", type=int, default=480, help="images per step (paper: 480)")
    p.add_argument("--entries", default=",".join(ENTRIES), help="comma-separated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sgemm-seconds", type=float, default=3.0, help="each sgemm probe (s)")
    p.add_argument("--torch-python", help="interpreter for the torch and keras-torch entries")
    p.add_argument("--timeout", type=int, default=3600, help="per entry run (s)")
    p.add_argument("--json", help="write the settings, every run and the summary here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if min(args.threads, args.steps, args.epochs, args.repeats, args.batch) < 1:
        p.error("--threads, --steps, --epochs, --repeats and --batch must be >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    entries = [e.strip() for e in args.entries.split(",") if e.strip()]
    unknown = sorted(set(entries) - set(ENTRIES))
    if unknown:
        raise SystemExit(f"unknown entries {unknown}; known: {', '.join(ENTRIES)}")
    sys.path.insert(0, str(REPO / "src"))
    from embryo_bench.recording.hardware import cpu_flags, cpu_model

    cores = sorted(os.sched_getaffinity(0))[: args.threads]
    print(f"host: {cpu_model()} ({', '.join(cpu_flags())}); {os.cpu_count()} CPUs")
    print(
        f"threads {args.threads} on cores {cores}; batch {args.batch}; {args.steps} steps/epoch; "
        f"1 + {args.epochs} epochs per run (the first excluded); {args.repeats} repeats, "
        f"interleaved; data: seeded numpy rng {args.seed}",
        flush=True,
    )
    before = spawn("sgemm", args)
    runs, skip = [], set()
    for r, entry in interleaved(entries, args.repeats):
        if entry in skip:
            continue
        t0 = time.perf_counter()
        run = spawn(entry, args, interpreter(entry, args.torch_python))
        run.update(repeat=r, wall_seconds=time.perf_counter() - t0)
        runs.append(run)
        if run["status"].startswith("not installed"):
            skip.add(entry)
        speed = f"{run['steady_images_per_s']:.2f} images/s" if valid(run) else run["status"]
        print(f"  repeat {r + 1} {entry}: {speed} ({run['wall_seconds']:.0f} s)", flush=True)
    after = spawn("sgemm", args)
    # The model's FLOPs as a Keras entry counted them, else from a process of its own.
    counted = [r for r in runs if valid(r) and "training_flops_per_image" in r]
    flops = (
        {k: counted[0][k] for k in ("training_flops_per_image", "parameters")}
        if counted
        else spawn("flops", args)
    )
    probes = [p["gflops"] for p in (before, after) if "gflops" in p]
    sgemm = statistics.mean(probes) if probes else None
    flops_per_image = flops.get("training_flops_per_image", 0)
    rows = summarise(entries, runs, flops_per_image, sgemm)
    print()
    if probes:
        print(
            f"sgemm (numpy float32 {SGEMM_N}^3 matmul, {before.get('blas')}, same cores and "
            f"threads): {before.get('gflops', float('nan')):.1f} GFLOP/s before, "
            f"{after.get('gflops', float('nan')):.1f} after; efficiency = "
            f"{flops_per_image / 1e9:.3f} GFLOP/image x images/s / their mean"
        )
    else:
        print(f"sgemm probe failed: {before.get('status')}")
    print(
        "images/s: steady state (epochs 2.., training only), median and min-max over repeats; "
        "x best: median / best median; img/CPU-s: the same images per process CPU second "
        "(median; at 1 thread, images/s had the core been the entry's alone); peak RSS: "
        "largest over repeats; 1st ep s: the excluded first epoch (median, s); CPU/wall: CPU s "
        "per wall s per thread over the whole run, lowest repeat\n"
    )
    print(table(rows))
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k != "worker"}
        record = {
            "settings": settings,
            "host": {"cpu_model": cpu_model(), "cpu_flags": cpu_flags(), "cores": cores},
            "flops": flops,
            "sgemm": {"before": before, "after": after, "mean_gflops": sgemm},
            "runs": runs,
            "summary": rows,
        }
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

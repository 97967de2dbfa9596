"""Benchmark: our training path against its peers on the paper CNN, not a test.

Every entry trains the same network, the paper CNN (conv 5x5x32 same + ReLU -> maxpool 2 ->
conv 5x5x64 same + ReLU -> maxpool 2 -> dense 1024 + ReLU -> dropout 0.5 -> dense 4 logits;
64x64x1 uint8 input rescaled by 1/255; 16,834,436 parameters; Adam, learning rate 1e-4;
sparse softmax cross-entropy on the logits), on the same in-memory data, with the same batch
(480) and the same number of steps, on the CPU or on one GPU (``--device``):

* ``embryo-bench``: our host runner's training path, Keras 3 on TensorFlow through
  :func:`embryo_bench.training.backend.limit_threads`,
  :func:`embryo_bench.workloads.paper.build_model` /
  :func:`~embryo_bench.workloads.paper.compile_model` and
  :func:`embryo_bench.training.epochs.fit_epochs` (the
  code a run executes: the ``tf.data`` feed of :func:`embryo_bench.training.backend.input_pipeline`,
  Keras validation after each epoch, the epoch clock);
* ``embryo-bench-xla``: the same with ``jit_compile=True`` (XLA); Keras leaves it off on a
  machine with only CPUs ("auto"), so the ``embryo-bench`` entry, like a run, does not use it;
* ``tf-original``: the authors' formulation (compscied/tensorflow EmbryoConvolutionLearning.py,
  after TensorFlow's "Deep MNIST for Experts"): raw ``tf.nn.conv2d`` / ``tf.nn.max_pool2d`` /
  ``tf.matmul`` ops on variables initialised with truncated-normal sd 0.1 weights and 0.1
  biases, ``tf.compat.v1.train.AdamOptimizer(1e-4)``, one ``tf.function`` train step fed
  numpy batches gathered from the in-memory arrays (the script's ``next_batch``);
* ``torch``: a plain PyTorch loop (``nn.Sequential`` with PyTorch's default initialisation,
  ``torch.optim.Adam``, eager: no ``torch.compile``), numpy batches gathered the same way;
* ``jax``: a plain JAX loop: the network written with ``jax.lax`` (NHWC convolutions,
  HWIO kernels), initialised as Keras's defaults are (Glorot-uniform weights, zero biases),
  ``optax.adam(1e-4)`` (epsilon 1e-8, as PyTorch's Adam and the authors' TensorFlow 1
  script), one ``jax.jit`` train step (parameters, optimiser state and dropout key donated,
  as Keras's JAX trainer donates its state) fed the numpy batches gathered the same way. On
  the CPU it runs with the XLA flags that ``limit_threads`` gives Keras on JAX
  (:func:`embryo_bench.training.backend.jax_xla_flags`), so it differs from ``keras-jax``
  only by Keras;
* ``keras-jax`` and ``keras-torch``: the ``embryo-bench`` code on Keras's JAX and PyTorch
  backends (``KERAS_BACKEND`` set before Keras is imported), fed as our code feeds them
  (numpy arrays to ``fit``).

An entry imports only its own framework: asking for ``jax``, ``torch``, ``keras-jax`` and
``keras-torch`` never imports TensorFlow (a machine without it runs them), nor does the
FLOPs count (it uses the first Keras backend installed of JAX, PyTorch, TensorFlow).

Data: ``steps * batch`` training images and ``batch`` test images, uint8 64x64x1 drawn from
``numpy.random.default_rng(seed)`` in 0..128 (the range of the augmented frames, |p - 128|),
with labels in 0..3: synthetic, since only the speed is measured.

Device (``--device``, default ``cpu``):

* ``cpu``: every framework is kept off any GPU (``CUDA_VISIBLE_DEVICES=""`` and
  ``JAX_PLATFORMS=cpu`` in each entry's process), so a GPU machine's CPU numbers are its
  CPU's.
* ``gpu``: each entry on the framework's first GPU: ``torch`` moves the model to ``cuda``
  and, each step, gathers the batch with numpy as on the CPU, pins it (PyTorch's caching
  host allocator) and copies the uint8 images with ``non_blocking=True`` (as a trainer with
  ``DataLoader(pin_memory=True)`` does), rescaling on the GPU; it sets
  ``torch.backends.cudnn.benchmark = True`` (the usual choice for fixed shapes; the
  autotuning falls in the excluded first epoch). ``jax`` and ``keras-jax`` use JAX's default
  device, the numpy batch passed to the jitted step (JAX copies it per step). ``keras-torch``
  uses Keras's torch device (``cuda``: Keras copies each numpy batch from pageable memory,
  which waits for the copy). The TensorFlow entries use TensorFlow's placement (the GPU when
  it sees one). An entry whose framework sees no GPU reports why ("no GPU visible to
  torch") instead of running on the CPU; one whose weights end up elsewhere than asked
  fails ("failed: weights on cpu, not the gpu asked for"). float32 is each framework's own
  float32 on a GPU: JAX (XLA's default precision) and TensorFlow (TF32 execution, on by
  default) let tensor cores run float32 convolutions and matrix products in TF32, as
  PyTorch does its cuDNN convolutions (``torch.backends.cudnn.allow_tf32``) but not its
  matrix products (``torch.backends.cuda.matmul.allow_tf32`` False); each run records
  these settings (``math``).

Precision (``--precision``, default ``float32``): ``mixed_bfloat16`` computes in bfloat16
with float32 weights and a float32 loss: the Keras entries through
``keras.config.set_dtype_policy("mixed_bfloat16")`` before the model is built; ``torch``
through ``torch.autocast(device_type, dtype=torch.bfloat16)`` around the forward pass and the
loss (autocast keeps the cross-entropy in float32); ``jax`` and ``tf-original`` by casting
the float32 parameters and the rescaled images to bfloat16 inside the differentiated function,
the logits back to float32 before the loss (gradients flow through the casts to the float32
parameters, which Adam updates in float32).

Clock: each entry trains ``1 + epochs`` epochs of ``steps`` steps (one reshuffled pass over the
training images per epoch). The first epoch is excluded (tracing, XLA compilation, cuDNN
autotuning, first allocations); an entry's steady-state images/s is ``epochs * steps * batch``
divided by the training seconds of epochs 2 to ``1 + epochs``. The Keras entries' clock is
:func:`embryo_bench.training.epochs.fit_epochs`' (each epoch's test scoring excluded, the last step
waited for); the raw loops read the loss back to the host at the end of each epoch, which waits
for every step queued by an asynchronous backend (JAX, CUDA).

Fairness: each (entry, repeat) runs in a fresh subprocess, in interleaved order (ABCD DCBA
ABCD ...), pinned (``os.sched_setaffinity``) to the same first ``--threads`` cores, with
OMP/MKL/OpenBLAS threads set to ``--threads`` and each framework's intra-op and inter-op
pools set to ``--threads`` (TensorFlow ``tf.config.threading``, PyTorch
``torch.set_num_threads`` / ``set_num_interop_threads``, JAX on the CPU the XLA flags above;
the Keras entries through ``limit_threads``, exactly as a run); on a GPU these bound the host side
(dispatch, the numpy gather, copies). An entry whose framework (or a module it imports) is
missing in its interpreter is reported as "not installed (module)"; one that fails is
reported with its last error line.

Reference: on the CPU, the machine's single-precision matrix-product speed, measured by numpy
float32 1024x1024 products (2 n^3 FLOPs each; numpy's own BLAS) on the same cores and threads
in a subprocess, before and after all entries. On a GPU, the GPU's: 8192x8192 products on it
through PyTorch (JAX where PyTorch sees no GPU), timed to completion, in float32 (no TF32),
in TF32 and in bfloat16, before and after all entries; the reference is the TF32 speed for
``--precision float32`` (the tensor-core float32 that the convolutions, 77 % of the FLOPs,
run in) and the bfloat16 speed for ``mixed_bfloat16``. The GPU probe also records the device
name and, where NVML answers (``pynvml``, from nvidia-ml-py), the driver version, memory,
maximum SM clock and power limit. An entry's efficiency is the model's training FLOPs per
image (:func:`embryo_bench.recording.calibrate.training_flops_per_image`, 0.435 GFLOP) times
its images/s, divided by the mean of the two probes.

Usage:
    python benchmarks/bench_peers.py [--device cpu|gpu] [--precision float32|mixed_bfloat16]
        [--threads 1] [--steps 4] [--epochs 2] [--repeats 3] [--batch 480]
        [--entries embryo-bench,embryo-bench-xla,tf-original,torch,jax,keras-jax,keras-torch]
        [--torch-python /path/to/python] [--json peers.json]

``--torch-python``: the interpreter for the ``torch`` and ``keras-torch`` entries; default: this
interpreter. E.g. a virtual environment holding only a CPU build of PyTorch (``pip install
--no-deps`` of the wheel, then its pure-Python requirements), with a ``.pth`` file whose line
``import site; site.addsitedir("<this environment's site-packages>")`` lets it import Keras
and this project, so this environment itself is left as it was.

Prints the host CPU (and GPU), the thread count, the device and precision, and one table row
per entry: median and min-max images/s over the repeats and the ratio to the best entry's
median; the same per process CPU second (robust to other processes taking turns on the pinned
cores) and its ratio; peak RSS (MiB, the largest over repeats) and, on a GPU, the peak GPU
memory the framework allocated (MiB); achieved GFLOP/s and efficiency; the excluded first
epoch (s); CPU per wall second (on the CPU, below ~0.95: the cores were shared; on a GPU the
host mostly waits, so it says little). ``--json`` writes the settings, the device facts, the
probes, every run and the summary (``complete`` true); after each run it holds the runs so
far (``complete`` false), should the whole be cut short.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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
ENTRIES = (
    "embryo-bench",
    "embryo-bench-xla",
    "tf-original",
    "torch",
    "jax",
    "keras-jax",
    "keras-torch",
)
#: Modules each entry needs in its interpreter.
NEEDS = {
    "embryo-bench": ("tensorflow", "keras"),
    "embryo-bench-xla": ("tensorflow", "keras"),
    "tf-original": ("tensorflow",),
    "torch": ("torch",),
    "jax": ("jax", "optax"),
    "keras-jax": ("jax", "keras"),
    "keras-torch": ("torch", "keras"),
}
#: The framework that runs each entry's computation (the one asked whether it sees a GPU).
FRAMEWORK = {
    "embryo-bench": "tensorflow",
    "embryo-bench-xla": "tensorflow",
    "tf-original": "tensorflow",
    "torch": "torch",
    "jax": "jax",
    "keras-jax": "jax",
    "keras-torch": "torch",
}
#: Keras backend of the entries that run our Keras code.
KERAS_BACKENDS = {
    "embryo-bench": "tensorflow",
    "embryo-bench-xla": "tensorflow",
    "keras-jax": "jax",
    "keras-torch": "torch",
}
TORCH_ENTRIES = ("torch", "keras-torch")
DEVICES = ("cpu", "gpu")
PRECISIONS = ("float32", "mixed_bfloat16")
RESULT = "BENCH_PEERS_RESULT "
PARAMETERS = 16_834_436
IMAGE = 64
CLASSES = 4
SGEMM_N = 1024
#: Side of the GPU probe's square matrices: 2 * 8192^3 = 1.1 TFLOP per product, long enough
#: (milliseconds) on a data-centre GPU for the launch cost not to count.
GPU_MATMUL_N = 8192
#: The GPU probe's speed that an entry's efficiency is taken against, per --precision: the
#: tensor-core format the frameworks' float32 convolutions run in by default, or bfloat16.
GPU_REFERENCE = {"float32": "tf32", "mixed_bfloat16": "bfloat16"}


class NoDevice(Exception):
    """The framework sees no device of the kind asked for (the message says which)."""


# --- worker side (one entry in a fresh process) --------------------------------------------


def pin(threads: int) -> list[int]:
    """Pin this process to its first ``threads`` allowed cores and size the BLAS/OpenMP pools
    (before any framework is imported). Returns the cores."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    cores = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, cores)
    return cores


def installed(name: str) -> bool:
    """Whether this interpreter can import the top-level module ``name`` (without importing
    it)."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


def missing_module(entry: str) -> str | None:
    """The first module ``entry`` needs that this interpreter cannot import, or None."""
    for name in NEEDS[entry]:
        if not installed(name):
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


def require_gpu(framework: str) -> None:
    """Check that ``framework`` (tensorflow, jax or torch) sees a GPU; call after its thread
    and XLA settings are made (asking JAX starts its backends).

    Raises:
        NoDevice: it sees none ("no GPU visible to jax (its devices: cpu)").
    """
    if framework == "torch":
        import torch

        if not torch.cuda.is_available():
            raise NoDevice("no GPU visible to torch")
    elif framework == "jax":
        import jax

        try:
            platforms = sorted({d.platform for d in jax.devices()})
        except RuntimeError as exc:  # JAX_PLATFORMS names a platform it cannot start
            raise NoDevice(f"no GPU visible to jax ({str(exc).splitlines()[0]})") from None
        if "gpu" not in platforms:
            raise NoDevice(f"no GPU visible to jax (its devices: {', '.join(platforms)})")
    else:
        import tensorflow as tf

        if not tf.config.list_physical_devices("GPU"):
            raise NoDevice("no GPU visible to tensorflow")


def placement(value) -> dict:
    """Where a framework's array lives: kind ("gpu" or "cpu") and name (the GPU's, as its
    framework gives it). ``value``: a jax Array, a torch tensor or a TensorFlow variable."""
    devices = getattr(value, "devices", None)
    if callable(devices):  # a jax Array
        device = next(iter(devices()))
        kind = "gpu" if device.platform in ("gpu", "cuda", "rocm") else device.platform
        return {"kind": kind, "name": str(getattr(device, "device_kind", device))}
    device = getattr(value, "device", None)
    if hasattr(device, "type"):  # a torch tensor
        if device.type == "cuda":
            import torch

            return {"kind": "gpu", "name": torch.cuda.get_device_name(device)}
        return {"kind": device.type, "name": str(device)}
    text = str(device)  # TensorFlow: "/job:localhost/replica:0/task:0/device:GPU:0"
    if "GPU:" in text.upper():
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        details = tf.config.experimental.get_device_details(gpus[0]) if gpus else {}
        return {"kind": "gpu", "name": details.get("device_name", text)}
    return {"kind": "cpu", "name": text}


def math_settings(framework: str) -> dict:
    """The settings of ``framework`` (loaded) that choose its float32 arithmetic and kernels
    on a GPU, for the record: PyTorch's TF32 switches, cuDNN autotuning and float32 matmul
    precision; JAX's default matmul precision (None: XLA's default, TF32 on tensor-core
    GPUs); TensorFlow's TF32 switch."""
    if framework == "torch":
        import torch

        return {
            "torch_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "torch_cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "torch_cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "torch_float32_matmul_precision": torch.get_float32_matmul_precision(),
            # PyTorch 2.9 and later: the same switches as "ieee" / "tf32" (None before)
            "torch_matmul_fp32_precision": getattr(
                torch.backends.cuda.matmul, "fp32_precision", None
            ),
            "torch_cudnn_conv_fp32_precision": getattr(
                getattr(torch.backends.cudnn, "conv", None), "fp32_precision", None
            ),
            "torch_cuda": torch.version.cuda,
        }
    if framework == "jax":
        import jax

        return {"jax_default_matmul_precision": jax.config.jax_default_matmul_precision}
    import tensorflow as tf

    return {"tf_tensor_float_32": bool(tf.config.experimental.tensor_float_32_execution_enabled())}


def gpu_peak_mib(framework: str) -> float | None:
    """The most GPU memory ``framework`` had allocated in this process (MiB; its allocator's
    count, not the pool it reserved), or None off a GPU or where it does not say."""
    try:
        if framework == "torch":
            import torch

            if not torch.cuda.is_initialized():
                return None
            return torch.cuda.max_memory_allocated() / 2**20
        if framework == "jax":
            import jax

            device = jax.devices()[0]
            stats = device.memory_stats() if device.platform == "gpu" else None
            peak = (stats or {}).get("peak_bytes_in_use")
            return None if peak is None else peak / 2**20
        import tensorflow as tf

        if not tf.config.list_logical_devices("GPU"):
            return None
        return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    except Exception:  # a record, not a result: an allocator that does not say is None
        return None


def run_keras(entry: str, data, args) -> dict:
    """Our training path on ``entry``'s Keras backend: limit_threads, the dtype policy of
    ``args.precision``, build_model / compile_model, fit_epochs. Returns epoch_seconds (all
    epochs, s) and the model facts.

    Raises:
        NoDevice: ``args.device`` is gpu and the backend sees none.
    """
    os.environ["KERAS_BACKEND"] = KERAS_BACKENDS[entry]
    from embryo_bench.training.backend import compute_settings, limit_threads

    limit_threads(args.threads)
    if args.device == "gpu":
        require_gpu(FRAMEWORK[entry])
    import keras

    from embryo_bench.recording.calibrate import training_flops_per_image
    from embryo_bench.training.backend import seed_everything
    from embryo_bench.training.epochs import fit_epochs
    from embryo_bench.workloads.paper import build_model, compile_model

    seed_everything(args.seed)
    keras.config.set_dtype_policy(args.precision)
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
        "dtype_policy": model.dtype_policy.name,
        "placement": placement(model.weights[0].value),
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
    ``read_loss`` (float), which waits for the step (and, on an asynchronous backend, for
    every step queued before it). Returns epoch_seconds and epoch_cpu_seconds (wall and
    process CPU s of each epoch) and final_loss."""
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
    """The authors' formulation as raw TensorFlow ops in one ``tf.function`` train step, on
    TensorFlow's placement (its GPU where it sees one); in bfloat16 with float32 variables
    for ``mixed_bfloat16``.

    Raises:
        NoDevice: ``args.device`` is gpu and TensorFlow sees none.
    """
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    if args.device == "gpu":
        require_gpu("tensorflow")
    tf.random.set_seed(args.seed)
    compute = tf.bfloat16 if args.precision == "mixed_bfloat16" else tf.float32

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
    optimizer = tf.compat.v1.train.AdamOptimizer(1e-4)

    def pool(h):
        return tf.nn.max_pool2d(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            # The casts are inside the tape, so the gradients reach the float32 variables.
            w1, b1, w2, b2, w3, b3, w4, b4 = (tf.cast(p, compute) for p in params)
            h = tf.cast(tf.cast(images, tf.float32) / 255.0, compute)
            h = pool(tf.nn.relu(tf.nn.conv2d(h, w1, [1, 1, 1, 1], "SAME") + b1))
            h = pool(tf.nn.relu(tf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME") + b2))
            h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, flat]), w3) + b3)
            logits = tf.cast(tf.matmul(tf.nn.dropout(h, rate=0.5), w4) + b4, tf.float32)
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
        "placement": placement(params[0]),
    }


def run_torch(data, args) -> dict:
    """A plain PyTorch training loop (``nn.Sequential``, ``torch.optim.Adam``), eager, on
    ``cuda`` for ``args.device`` gpu (cuDNN autotuning on; each numpy batch pinned and
    copied without blocking), under ``torch.autocast`` in bfloat16 for ``mixed_bfloat16``.

    Raises:
        NoDevice: ``args.device`` is gpu and PyTorch sees no GPU.
    """
    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    if args.device == "gpu":
        require_gpu("torch")
        # Fixed shapes: autotuning picks each convolution's fastest cuDNN algorithm once,
        # within the excluded first epoch, as a tuned PyTorch loop would.
        torch.backends.cudnn.benchmark = True
    device = torch.device("cuda" if args.device == "gpu" else "cpu")
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
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    mixed = args.precision == "mixed_bfloat16"
    x, y, _, _ = data
    gpu = device.type == "cuda"

    def to_device(array):
        """A numpy batch on the device: on a GPU through pinned memory (PyTorch's caching
        host allocator reuses the pinned blocks) with a copy that does not wait for the
        GPU, as DataLoader(pin_memory=True) and .to(non_blocking=True) do."""
        tensor = torch.from_numpy(array)
        return tensor.pin_memory().to(device, non_blocking=True) if gpu else tensor

    def train_step(idx):
        # NHWC with one channel is NCHW with one channel: a reshape, no copy. The uint8
        # images cross to the device (a quarter of float32's bytes) and are rescaled there.
        images = to_device(x[idx]).reshape(-1, 1, IMAGE, IMAGE).float().div_(255.0)
        labels = to_device(y[idx]).long()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=mixed):
            loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    return {
        **_timed_epochs(train_step, lambda loss: float(loss.item()), len(y), args),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "versions": {"torch": torch.__version__},
        "placement": placement(next(model.parameters())),
    }


def glorot_uniform(key, shape, fan_in: int, fan_out: int):
    """Keras's default kernel initialiser: uniform in +-sqrt(6 / (fan_in + fan_out)),
    float32."""
    import jax

    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return jax.random.uniform(key, shape, minval=-limit, maxval=limit)


def jax_paper_cnn(key) -> dict:
    """The paper CNN's parameters for :func:`jax_forward`: HWIO convolution kernels and
    (inputs, outputs) dense kernels, Glorot-uniform as Keras's defaults (a convolution's
    fans are kh * kw * channels in and out), zero biases; float32."""
    import jax
    import jax.numpy as jnp

    flat = (IMAGE // 4) ** 2 * 64
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {
        "w1": glorot_uniform(k1, (5, 5, 1, 32), 25 * 1, 25 * 32),
        "b1": jnp.zeros(32),
        "w2": glorot_uniform(k2, (5, 5, 32, 64), 25 * 32, 25 * 64),
        "b2": jnp.zeros(64),
        "w3": glorot_uniform(k3, (flat, 1024), flat, 1024),
        "b3": jnp.zeros(1024),
        "w4": glorot_uniform(k4, (1024, CLASSES), 1024, CLASSES),
        "b4": jnp.zeros(CLASSES),
    }


def jax_forward(params: dict, images, key, dtype):
    """Logits (float32 (B, 4)) of uint8 images (B, 64, 64, 1), computed in ``dtype`` (the
    parameters and the rescaled images cast to it), with dropout 0.5 drawn from ``key``
    (kept units scaled by 2, as Keras's Dropout)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    p = jax.tree.map(lambda a: a.astype(dtype), params)

    def conv(h, w, b):
        dims = ("NHWC", "HWIO", "NHWC")
        return jax.nn.relu(
            lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=dims) + b
        )

    def pool(h):
        # A Python scalar start value: with it JAX recognises a max pool (reduce_window_max),
        # which it can differentiate; an array start value gives a generic, undifferentiable
        # reduction.
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    h = (images.astype(jnp.float32) / 255.0).astype(dtype)
    h = pool(conv(h, p["w1"], p["b1"]))
    h = pool(conv(h, p["w2"], p["b2"]))
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"])
    keep = jax.random.bernoulli(key, 0.5, h.shape)
    h = jnp.where(keep, h * 2, jnp.zeros((), dtype))
    return (h @ p["w4"] + p["b4"]).astype(jnp.float32)


def run_jax(data, args) -> dict:
    """A plain JAX training loop: :func:`jax_paper_cnn` / :func:`jax_forward`, optax's Adam,
    one jitted step with its state donated, on JAX's default device (its GPU for
    ``args.device`` gpu; the caller keeps it on the CPU otherwise), the forward pass in
    bfloat16 for ``mixed_bfloat16``.

    Raises:
        NoDevice: ``args.device`` is gpu and JAX sees no GPU.
    """
    from embryo_bench.training.backend import jax_xla_flags

    # The XLA:CPU flags Keras on JAX gets from limit_threads (one thread where asked; XLA's
    # own convolutions): set before JAX starts its backends, which read them once. Not on a
    # GPU: there they would change nothing the step runs, and a jaxlib that lacks one aborts.
    flags = os.environ.get("XLA_FLAGS", "")
    if args.device == "cpu":
        os.environ["XLA_FLAGS"] = " ".join([flags, *jax_xla_flags(args.threads, flags)]).strip()
    import jax
    import jax.numpy as jnp
    import optax

    if args.device == "gpu":
        require_gpu("jax")
    dtype = jnp.bfloat16 if args.precision == "mixed_bfloat16" else jnp.float32
    init_key, dropout_key = jax.random.split(jax.random.key(args.seed))
    params = jax_paper_cnn(init_key)
    optimizer = optax.adam(1e-4)

    def loss_fn(params, images, labels, key):
        logits = jax_forward(params, images, key, dtype)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    # The state is donated: XLA updates the parameters and Adam's moments in place instead
    # of holding two copies, as Keras's JAX trainer does with its own state.
    @functools.partial(jax.jit, donate_argnums=(0, 1, 2))
    def train_step(params, opt_state, key, images, labels):
        key, step_key = jax.random.split(key)
        loss, grads = jax.value_and_grad(loss_fn)(params, images, labels, step_key)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, key, loss

    state = {"params": params, "opt": optimizer.init(params), "key": dropout_key}
    x, y, _, _ = data

    def step(idx):
        # The numpy batch goes to the jitted step as it is: JAX copies it to the device.
        state["params"], state["opt"], state["key"], loss = train_step(
            state["params"], state["opt"], state["key"], x[idx], y[idx]
        )
        return loss

    import importlib.metadata as md

    out = _timed_epochs(step, float, len(y), args)
    return {
        **out,
        "parameters": int(sum(a.size for a in jax.tree.leaves(state["params"]))),
        "versions": {
            "jax": jax.__version__,
            "jaxlib": md.version("jaxlib"),
            "optax": optax.__version__,
        },
        "settings": {"xla_flags": os.environ.get("XLA_FLAGS", "")},
        "placement": placement(state["params"]["w1"]),
    }


def run_entry(entry: str, args) -> dict:
    """Train ``entry`` in this process (pinned first) and return its measurements: status,
    epoch_seconds and epoch_cpu_seconds (wall and process CPU s of each epoch's training, the
    first epoch included), first_epoch_seconds (s), steady_images_per_s (images/s over epochs
    2..), steady_images_per_cpu_s (the same images per process CPU second, all threads:
    unlike the wall clock, not slowed by other processes taking turns on the pinned cores;
    at 1 thread it equals images/s when the core was the entry's alone), final_loss,
    parameters, peak_rss_mib
    (MiB), peak_gpu_mib (MiB the framework allocated on the GPU at most; None off a GPU),
    placement (kind and name of the device holding the weights), math (the framework's
    float32 arithmetic settings), device and precision (as asked), cpu_per_wall (the
    process's CPU seconds per wall second per thread over the whole
    run, imports included: well under 1 when something else shared its cores), cores,
    threads, versions.

    Without a result the record's status says why: "not installed" (with ``missing``, the
    module, the entry's framework or one its code imports), "no GPU visible to <framework>"
    (``--device gpu``), or "failed: weights on <kind>, not the <device> asked for"."""
    missing = missing_module(entry)
    if missing is not None:
        return {"entry": entry, "status": "not installed", "missing": missing}
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    cores = pin(args.threads)
    data = make_data(args.steps, args.batch, args.seed)
    try:
        if entry in KERAS_BACKENDS:
            out = run_keras(entry, data, args)
        elif entry == "tf-original":
            out = run_tf_original(data, args)
        elif entry == "jax":
            out = run_jax(data, args)
        else:
            out = run_torch(data, args)
    except NoDevice as exc:
        return {"entry": entry, "status": str(exc), "device": args.device}
    except ModuleNotFoundError as exc:  # a module the entry's code imports, not its framework
        return {"entry": entry, "status": "not installed", "missing": exc.name or str(exc)}
    where = out["placement"]["kind"]
    if where != args.device:
        return {
            "entry": entry,
            "status": f"failed: weights on {where}, not the {args.device} asked for",
            "placement": out["placement"],
        }
    steady, steady_cpu = out["epoch_seconds"][1:], out["epoch_cpu_seconds"][1:]
    images = len(steady) * args.steps * args.batch
    framework = FRAMEWORK[entry]
    return {
        "entry": entry,
        "status": "ok",
        **out,
        "device": args.device,
        "precision": args.precision,
        "math": math_settings(framework),
        "first_epoch_seconds": out["epoch_seconds"][0],
        "steady_images_per_s": images / sum(steady),
        "steady_images_per_cpu_s": images / sum(steady_cpu),
        "peak_rss_mib": peak_rss_mib(),
        "peak_gpu_mib": gpu_peak_mib(framework) if args.device == "gpu" else None,
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


def nvml_facts() -> dict:
    """The first GPU as NVML (``pynvml``, from nvidia-ml-py) gives it: driver_version,
    nvml_name, memory_mib (total, MiB), max_sm_clock_mhz, power_limit_w (W); or
    {"nvml": "unavailable: <why>"}. A fact NVML does not give is left out."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no module, no driver: the record says so
        return {"nvml": f"unavailable: {type(exc).__name__}: {exc}"}

    def text(value) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    out: dict = {}
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        queries = {
            "driver_version": lambda: text(pynvml.nvmlSystemGetDriverVersion()),
            "nvml_name": lambda: text(pynvml.nvmlDeviceGetName(handle)),
            "memory_mib": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).total / 2**20,
            "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(
                handle, pynvml.NVML_CLOCK_SM
            ),
            "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
        }
        for key, query in queries.items():
            # NVML_ERROR_NOT_SUPPORTED and the like: that fact is left out
            with contextlib.suppress(Exception):
                out[key] = query()
    except Exception as exc:
        out["nvml"] = f"unavailable: {type(exc).__name__}: {exc}"
    finally:
        pynvml.nvmlShutdown()
    return out


def _rate(product, synchronize, seconds: float, n: int) -> float:
    """GFLOP/s of ``product()`` (one n x n x n matrix product queued on a GPU; 2 n^3 FLOPs):
    two untimed products, one timed alone to size the run, then as many as fill ``seconds``
    queued back to back and timed to completion (``synchronize()`` waits for the GPU)."""
    for _ in range(2):
        product()
    synchronize()
    t0 = time.perf_counter()
    product()
    synchronize()
    count = max(1, int(seconds / max(time.perf_counter() - t0, 1e-9)))
    t0 = time.perf_counter()
    for _ in range(count):
        product()
    synchronize()
    return 2.0 * n**3 * count / (time.perf_counter() - t0) / 1e9


def _torch_matmuls(seconds: float, n: int) -> dict:
    """float32 (no TF32), TF32 and bfloat16 matrix-product speeds on PyTorch's first GPU
    (GFLOP/s), ``seconds`` each; TF32 switched back off after."""
    import torch

    out = {"framework": f"torch {torch.__version__}", "cuda": torch.version.cuda}
    out["device_name"] = torch.cuda.get_device_name(0)
    kinds = {"float32": (torch.float32, False), "tf32": (torch.float32, True)}
    kinds["bfloat16"] = (torch.bfloat16, False)
    before = torch.backends.cuda.matmul.allow_tf32
    generator = torch.Generator(device="cuda").manual_seed(0)
    for name, (dtype, tf32) in kinds.items():
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype, generator=generator)
        b = torch.randn(n, n, device="cuda", dtype=dtype, generator=generator)
        c = torch.empty_like(a)
        product = functools.partial(torch.matmul, a, b, out=c)
        out[f"{name}_gflops"] = _rate(product, torch.cuda.synchronize, seconds, n)
        del a, b, c
    torch.backends.cuda.matmul.allow_tf32 = before
    return out


def _jax_matmuls(seconds: float, n: int) -> dict:
    """float32 (precision HIGHEST), XLA's default float32 (TF32 on tensor-core GPUs: the
    ``tf32`` figure) and bfloat16 matrix-product speeds on JAX's first GPU (GFLOP/s),
    ``seconds`` each."""
    import jax
    import jax.numpy as jnp

    device = jax.devices()[0]
    out = {"framework": f"jax {jax.__version__}", "device_name": device.device_kind}
    kinds = {"float32": (jnp.float32, jax.lax.Precision.HIGHEST)}
    kinds["tf32"] = (jnp.float32, jax.lax.Precision.DEFAULT)
    kinds["bfloat16"] = (jnp.bfloat16, jax.lax.Precision.DEFAULT)
    for name, (dtype, precision) in kinds.items():
        ka, kb = jax.random.split(jax.random.key(0))
        a = jax.random.normal(ka, (n, n), dtype)
        b = jax.random.normal(kb, (n, n), dtype)
        matmul = jax.jit(functools.partial(jnp.matmul, precision=precision))
        last = []

        def product(matmul=matmul, a=a, b=b, last=last):
            last[:] = [matmul(a, b)]

        out[f"{name}_gflops"] = _rate(
            product, lambda last=last: last[0].block_until_ready(), seconds, n
        )
    return out


def run_gpu_matmul(args) -> dict:
    """The GPU probe: ``GPU_MATMUL_N``-square matrix products on the first GPU through PyTorch
    (through JAX where PyTorch is missing or sees no GPU), in float32 (no TF32), TF32 and
    bfloat16, ``--sgemm-seconds`` in all; gflops is the one ``--precision`` is judged against
    (:data:`GPU_REFERENCE`). Returns gflops, float32_gflops, tf32_gflops, bfloat16_gflops
    (GFLOP/s, 2 n^3 FLOPs a product), reference (which), matrix, framework, device_name,
    the :func:`nvml_facts`, cores; or, with no GPU to either, status "no GPU visible to torch
    or jax" (and the NVML facts)."""
    cores = pin(args.threads)
    seconds = args.sgemm_seconds / 3
    out = {"matrix": GPU_MATMUL_N, "cores": cores, **nvml_facts()}
    speeds = None
    if installed("torch"):
        import torch

        if torch.cuda.is_available():
            speeds = _torch_matmuls(seconds, GPU_MATMUL_N)
    if speeds is None and installed("jax"):
        import jax

        try:
            on_gpu = jax.devices()[0].platform == "gpu"
        except RuntimeError:  # JAX_PLATFORMS names a platform it cannot start
            on_gpu = False
        if on_gpu:
            speeds = _jax_matmuls(seconds, GPU_MATMUL_N)
    if speeds is None:
        return {**out, "status": "no GPU visible to torch or jax"}
    reference = GPU_REFERENCE[args.precision]
    return {**out, **speeds, "reference": reference, "gflops": speeds[f"{reference}_gflops"]}


def flops_backend() -> str | None:
    """The Keras backend to count the model's FLOPs on: the first installed of JAX, PyTorch
    and TensorFlow (the count reads layer shapes, the same on any), or None."""
    for backend in ("jax", "torch", "tensorflow"):
        if installed(backend):
            return backend
    return None


def run_flops() -> dict:
    """Training FLOPs per image of the paper CNN
    (:func:`embryo_bench.recording.calibrate.training_flops_per_image`) and its parameter count,
    on the Keras backend in ``KERAS_BACKEND`` (:func:`flops_backend`)."""
    from embryo_bench.recording.calibrate import training_flops_per_image
    from embryo_bench.workloads.paper import build_model

    model = build_model(IMAGE)
    return {
        "training_flops_per_image": training_flops_per_image(model)["training_flops"],
        "parameters": int(model.count_params()),
        "keras_backend": os.environ.get("KERAS_BACKEND"),
    }


def worker(args) -> None:
    """Run one job (an entry, ``sgemm``, ``gpu-matmul`` or ``flops``) and print its result as
    one line."""
    if args.worker == "sgemm":
        out = run_sgemm(args)
    elif args.worker == "gpu-matmul":
        out = run_gpu_matmul(args)
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


def job_env(job: str, args, base: dict | None = None) -> dict:
    """The environment of ``job``'s process: ``base`` (default ``os.environ``) less
    ``KERAS_BACKEND`` (each Keras entry sets its own), BLAS/OpenMP threads ``--threads``,
    this checkout's ``src`` first on ``PYTHONPATH``, TensorFlow's C++ log at warnings; every
    GPU hidden (``CUDA_VISIBLE_DEVICES=""``, ``JAX_PLATFORMS=cpu``) for ``--device cpu``
    and for the FLOPs count, which needs none; for ``flops`` the Keras backend of
    :func:`flops_backend`."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != "KERAS_BACKEND"}
    env.update({v: str(args.threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    if args.device == "cpu" or job == "flops":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    if job == "flops":
        env["KERAS_BACKEND"] = flops_backend() or "tensorflow"
    return env


def spawn(job: str, args, python: str | None = None) -> dict:
    """Run ``job`` (an entry, ``sgemm``, ``gpu-matmul`` or ``flops``) in a fresh interpreter
    (:func:`job_env`); its result, or a status "failed: ..." / "not installed (...)" record
    when it gives none."""
    python = python or sys.executable
    if not os.path.exists(python):
        return {"entry": job, "status": f"not installed (no interpreter {python})"}
    cmd = [python, str(Path(__file__).resolve()), "--worker", job]
    cmd += ["--threads", str(args.threads), "--steps", str(args.steps)]
    cmd += ["--epochs", str(args.epochs), "--batch", str(args.batch), "--seed", str(args.seed)]
    cmd += ["--sgemm-seconds", str(args.sgemm_seconds)]
    cmd += ["--device", args.device, "--precision", args.precision]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=job_env(job, args), timeout=args.timeout
        )
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


def final(status: str) -> bool:
    """Whether a run's status means the entry's other repeats would say the same (its
    framework missing, or no GPU to it): they are not run."""
    return status.startswith(("not installed", "no GPU visible"))


def summarise(
    entries: list[str], runs: list[dict], flops_per_image: float, sgemm_gflops: float | None
) -> list[dict]:
    """One row per entry: status, repeats, images_per_s (median), min, max (images/s),
    ratio (median / the best entry's median), images_per_cpu_s (median, images per process
    CPU second) and ratio_cpu (of the best), peak_rss_mib (largest over repeats, MiB),
    peak_gpu_mib (largest over repeats, MiB; None off a GPU), first_epoch_s (median, s),
    cpu_per_wall (the lowest over repeats: under ~0.95 on the CPU, another process took some
    of the cores), achieved_gflops (GFLOP/s), efficiency (of the probe, a fraction),
    parameters, versions, placement (the device the weights were on, first repeat)."""
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
        gpu_peaks = [r["peak_gpu_mib"] for r in ok if r.get("peak_gpu_mib") is not None]
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
                "peak_gpu_mib": max(gpu_peaks) if gpu_peaks else None,
                "first_epoch_s": statistics.median(r["first_epoch_seconds"] for r in ok),
                "cpu_per_wall": min(r.get("cpu_per_wall", math.nan) for r in ok),
                "achieved_gflops": achieved,
                "efficiency": achieved / sgemm_gflops if sgemm_gflops else None,
                "parameters": ok[0]["parameters"],
                "versions": ok[0].get("versions", {}),
                "placement": ok[0].get("placement"),
            }
        )
    done = [r for r in rows if "images_per_s" in r]
    best = max((r["images_per_s"] for r in done), default=None)
    best_cpu = max((r["images_per_cpu_s"] for r in done), default=None)
    for r in done:
        r["ratio"] = r["images_per_s"] / best
        r["ratio_cpu"] = r["images_per_cpu_s"] / best_cpu
    return rows


def table(rows: list[dict], title: str = "") -> str:
    """The summary rows as a fixed-width text table, under ``title`` (e.g. the device and
    precision) when given; a peak GPU memory column (MiB) where any row has one."""
    gpu = any(r.get("peak_gpu_mib") is not None for r in rows)
    head = (
        f"{'entry':<16} {'images/s':>9} {'min-max':>15} {'x best':>7} {'img/CPU-s':>9} "
        f"{'x best':>7} {'peak RSS':>9} "
        + (f"{'peak GPU':>9} " if gpu else "")
        + f"{'GFLOP/s':>8} {'eff.':>6} {'1st ep s':>8} {'CPU/wall':>8}  versions / status"
    )
    lines = ([title] if title else []) + [head, "-" * len(head)]
    for r in rows:
        if "images_per_s" not in r:
            lines.append(
                f"{r['entry']:<16} {'-':>9} {'-':>15} {'-':>7} {'-':>9} {'-':>7} {'-':>9} "
                + (f"{'-':>9} " if gpu else "")
                + f"{'-':>8} {'-':>6} {'-':>8} {'-':>8}  {r['status']}"
            )
            continue
        eff = f"{100 * r['efficiency']:5.1f}%" if r["efficiency"] is not None else "-"
        versions = " ".join(f"{k} {v}" for k, v in r["versions"].items())
        status = "" if r["status"] == "ok" else f" [{r['status']}]"
        peak_gpu = ""
        if gpu:
            peak = r.get("peak_gpu_mib")
            peak_gpu = f"{peak:5.0f} MiB " if peak is not None else f"{'-':>9} "
        lines.append(
            f"{r['entry']:<16} {r['images_per_s']:9.2f} "
            f"{r['min']:7.2f}-{r['max']:<7.2f} {r['ratio']:7.3f} {r['images_per_cpu_s']:9.2f} "
            f"{r['ratio_cpu']:7.3f} {r['peak_rss_mib']:5.0f} MiB {peak_gpu}"
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
    p.add_argument("--device", choices=DEVICES, default="cpu", help="train on the CPU or a GPU")
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="mixed_bfloat16: bfloat16 compute, float32 weights and loss",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--sgemm-seconds", type=float, default=3.0, help="each probe (s; on a GPU, its 3 kinds)"
    )
    p.add_argument("--torch-python", help="interpreter for the torch and keras-torch entries")
    p.add_argument("--timeout", type=int, default=3600, help="per entry run (s)")
    p.add_argument("--json", help="write the settings, every run and the summary here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if min(args.threads, args.steps, args.epochs, args.repeats, args.batch) < 1:
        p.error("--threads, --steps, --epochs, --repeats and --batch must be >= 1")
    return args


def probe_line(args, before: dict, after: dict, flops_per_image: float) -> str:
    """The reference probes as printed: what was measured, before and after, and how the
    efficiency follows from them."""
    efficiency = f"efficiency = {flops_per_image / 1e9:.3f} GFLOP/image x images/s / their mean"
    if args.device == "cpu":
        return (
            f"sgemm (numpy float32 {SGEMM_N}^3 matmul, {before.get('blas')}, same cores and "
            f"threads): {before.get('gflops', float('nan')):.1f} GFLOP/s before, "
            f"{after.get('gflops', float('nan')):.1f} after; {efficiency}"
        )
    kinds = ", ".join(
        f"{kind} {before.get(f'{kind}_gflops', float('nan')) / 1e3:.1f} / "
        f"{after.get(f'{kind}_gflops', float('nan')) / 1e3:.1f}"
        for kind in ("float32", "tf32", "bfloat16")
    )
    return (
        f"GPU matmul ({GPU_MATMUL_N}^3 on {before.get('device_name')} through "
        f"{before.get('framework')}; TFLOP/s before / after): {kinds}; reference "
        f"{before.get('reference')} (--precision {args.precision}); {efficiency}"
    )


def write_json(path: str, record: dict) -> None:
    """Write ``record`` to ``path`` as indented JSON, whole or not at all (a temporary file
    renamed over it), so a run cut short leaves the last complete write."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)


def main(argv=None) -> int:
    """Run the benchmark as the module docstring says (``argv``: its command line; default
    ``sys.argv``); with ``--worker``, one job of it. Returns 0.

    Raises:
        SystemExit: an unknown entry, or arguments argparse rejects.
    """
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
        f"device {args.device}, precision {args.precision}; threads {args.threads} on cores "
        f"{cores}; batch {args.batch}; {args.steps} steps/epoch; 1 + {args.epochs} epochs per "
        f"run (the first excluded); {args.repeats} repeats, interleaved; data: seeded numpy rng "
        f"{args.seed}",
        flush=True,
    )
    settings = {k: v for k, v in vars(args).items() if k != "worker"}
    probe = "sgemm" if args.device == "cpu" else "gpu-matmul"
    before = spawn(probe, args)
    if args.device == "gpu":
        print(
            f"GPU: {before.get('device_name') or before.get('nvml_name') or before.get('status')}"
            f"; driver {before.get('driver_version', '?')}",
            flush=True,
        )
    runs, skip = [], set()
    for r, entry in interleaved(entries, args.repeats):
        if entry in skip:
            continue
        t0 = time.perf_counter()
        run = spawn(entry, args, interpreter(entry, args.torch_python))
        run.update(repeat=r, wall_seconds=time.perf_counter() - t0)
        runs.append(run)
        if final(run["status"]):
            skip.add(entry)
        speed = f"{run['steady_images_per_s']:.2f} images/s" if valid(run) else run["status"]
        print(f"  repeat {r + 1} {entry}: {speed} ({run['wall_seconds']:.0f} s)", flush=True)
        if args.json:  # the runs so far, should the whole be cut short (a lent GPU's time)
            partial = {"complete": False, "settings": settings, "sgemm": {"before": before}}
            write_json(args.json, {**partial, "runs": runs})
    after = spawn(probe, args)
    # The model's FLOPs as a Keras entry counted them, else from a process of its own.
    counted = [r for r in runs if valid(r) and "training_flops_per_image" in r]
    flops = (
        {k: counted[0][k] for k in ("training_flops_per_image", "parameters")}
        if counted
        else spawn("flops", args)
    )
    probes = [p["gflops"] for p in (before, after) if "gflops" in p]
    reference = statistics.mean(probes) if probes else None
    flops_per_image = flops.get("training_flops_per_image", 0)
    rows = summarise(entries, runs, flops_per_image, reference)
    print()
    if probes:
        print(probe_line(args, before, after, flops_per_image))
    else:
        print(f"{probe} probe failed: {before.get('status')}")
    print(
        "images/s: steady state (epochs 2.., training only), median and min-max over repeats; "
        "x best: median / best median; img/CPU-s: the same images per process CPU second "
        "(median; at 1 thread, images/s had the core been the entry's alone); peak RSS: "
        "largest over repeats"
        + ("; peak GPU: the framework's largest GPU allocation" if args.device == "gpu" else "")
        + "; 1st ep s: the excluded first epoch (median, s); CPU/wall: CPU s per wall s per "
        "thread over the whole run, lowest repeat"
        + (" (on a GPU the host mostly waits)" if args.device == "gpu" else "")
        + "\n"
    )
    device_name = (
        cpu_model()
        if args.device == "cpu"
        else before.get("device_name") or before.get("nvml_name") or before.get("status")
    )
    print(table(rows, f"device {args.device} ({device_name}), precision {args.precision}"))
    if args.json:
        device = {"kind": args.device, "name": device_name}
        if args.device == "gpu":
            device.update(
                {k: v for k, v in before.items() if not k.endswith("_gflops") and k != "cores"}
            )
        record = {
            "complete": True,
            "settings": settings,
            "host": {"cpu_model": cpu_model(), "cpu_flags": cpu_flags(), "cores": cores},
            "device": device,
            "flops": flops,
            "sgemm": {"probe": probe, "before": before, "after": after, "mean_gflops": reference},
            "runs": runs,
            "summary": rows,
        }
        write_json(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())

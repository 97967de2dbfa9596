"""Backend-specific runtime setup kept out of the model and training code.

Keras 3 runs the same model on TensorFlow, JAX or PyTorch (``KERAS_BACKEND``); the size of
each framework's thread pools (:func:`limit_threads`, before the first Keras operation) and
the way batches are fed to ``fit`` (:func:`input_pipeline`) are set through the framework
itself, here and nowhere else.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..recording.hardware import nvml_index_of, run_cores


def backend_name() -> str:
    """The Keras backend that ``import keras`` will use, found without importing it:
    ``KERAS_BACKEND``, else the ``backend`` of ``$KERAS_HOME/keras.json`` (default
    ``~/.keras``), else tensorflow."""
    if "KERAS_BACKEND" in os.environ:
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME", os.path.join(os.path.expanduser("~"), ".keras"))
    try:
        with open(os.path.join(home, "keras.json")) as fh:
            return json.load(fh).get("backend", "tensorflow")
    except (OSError, ValueError):
        return "tensorflow"


def limit_threads(threads: int, cores: int | None = None) -> list[int]:
    """Confine training to ``cores`` CPU cores (default ``threads``) and size the backend's
    thread pools to ``threads`` (a threads sweep varies them apart).

    The process is pinned to the first ``cores`` cores it may use (scheduler affinity, as
    a cpuset would), and the backend's intra-op and inter-op pools are set to ``threads``
    (TensorFlow: ``tf.config.threading``; PyTorch: ``torch.set_num_threads``; JAX has no
    flag for N threads, so for N = 1 its multi-threaded Eigen is switched off and otherwise
    the affinity alone bounds it). A CPU quota does not hide the host's cores from a
    framework; without this a 1-CPU target would oversubscribe and its timings would be
    false. On JAX the XLA:CPU settings of :func:`jax_xla_flags` are added to ``XLA_FLAGS``
    as well. Call before the backend runs its first operation.

    Returns:
        the cores the process is now pinned to.

    Raises:
        ValueError: threads < 1 or cores < 1.
    """
    cores_wanted = threads if cores is None else cores
    if threads < 1 or cores_wanted < 1:
        raise ValueError(f"threads and cores must be >= 1, got {threads} and {cores_wanted}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    pinned = run_cores(cores_wanted)
    if len(pinned) < len(os.sched_getaffinity(0)):
        os.sched_setaffinity(0, pinned)
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    elif backend == "jax":
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = " ".join([flags, *jax_xla_flags(threads, flags)]).strip()
    elif backend == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)
    return pinned


def select_gpus(gpus: int, backend: str, target: str = "run") -> list[int]:
    """Give the run exactly its ``gpus`` GPUs, and none to a CPU run, before the backend is
    imported: ``CUDA_VISIBLE_DEVICES`` names the first ``gpus`` of the GPUs this process may
    use (those the variable already names, as Slurm or a container sets it; else GPUs
    0..gpus-1), in PCI bus order (``CUDA_DEVICE_ORDER=PCI_BUS_ID``, NVML's order, so the
    telemetry samples the GPUs that train); with ``gpus`` 0 it is empty, and JAX is held
    to its CPU platform (``JAX_PLATFORMS=cpu``): JAX and PyTorch otherwise take a GPU
    whenever one is there, and a CPU target's numbers would be a GPU's.

    Args:
        gpus: the target's GPUs (0: a CPU run). backend: the Keras backend.
        target: the run's name, for the message.

    Returns:
        the NVML indices of the GPUs given (for telemetry and the run's device record).

    Raises:
        ConfigError: fewer GPUs may be used than ``gpus`` (CUDA_VISIBLE_DEVICES names fewer).
    """
    order = os.environ.get("CUDA_VISIBLE_DEVICES")
    allowed = [d.strip() for d in order.split(",") if d.strip()] if order else None
    if allowed is not None and len(allowed) < gpus:
        raise ConfigError(
            f"{target}: gpus {gpus}, but CUDA_VISIBLE_DEVICES={order!r} lets this process use "
            f"{len(allowed)}; ask for at most {len(allowed)} or run where {gpus} are given"
        )
    given = (allowed or [str(i) for i in range(gpus)])[:gpus]
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(given)
    if gpus == 0 and backend == "jax":
        os.environ["JAX_PLATFORMS"] = "cpu"
    indices = []
    for d in given:
        index = int(d) if d.isdigit() else nvml_index_of(d)
        if index is not None:
            indices.append(index)
    return indices


def backend_devices(gpus: int, target: str = "run") -> dict:
    """The devices Keras's backend trains on, as the framework reports them, checked against
    the run's ``gpus``: platform ("gpu" or "cpu"), devices (the framework's names, e.g.
    "NVIDIA H100 80GB HBM3"), and on a GPU the framework's CUDA version, compute capability
    and memory (MiB) where it says. Call after Keras is imported, after :func:`select_gpus`.

    Raises:
        ConfigError: a GPU run whose backend sees fewer GPUs than ``gpus`` (a CPU-only build
            of the framework, JAX_PLATFORMS=cpu, no driver), naming the backend and what it
            sees.
    """
    backend = backend_name()
    info: dict = {"backend": backend}
    if backend == "jax":
        import jax

        found = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
        info["devices"] = [getattr(d, "device_kind", str(d)) for d in (found or jax.devices())]
        if found:
            info["cuda"] = _jax_cuda_version()
    elif backend == "torch":
        import torch

        found = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        info["devices"] = [torch.cuda.get_device_name(i) for i in found] or ["cpu"]
        if found:
            info["cuda"] = torch.version.cuda
            info["compute_capability"] = [
                "{}.{}".format(*torch.cuda.get_device_capability(i)) for i in found
            ]
            info["memory_total_mib"] = [
                torch.cuda.get_device_properties(i).total_memory / 2**20 for i in found
            ]
    else:
        import tensorflow as tf

        found = tf.config.list_physical_devices("GPU")
        names = []
        for d in found:
            details = tf.config.experimental.get_device_details(d)
            names.append(details.get("device_name", d.name))
        info["devices"] = names or ["cpu"]
        if found:
            info["cuda"] = dict(tf.sysconfig.get_build_info()).get("cuda_version")
    info["platform"] = "gpu" if found else "cpu"
    if len(found) < gpus:
        raise ConfigError(
            f"{target}: gpus {gpus}, but Keras on {backend} sees {len(found)} GPU(s) "
            f"({', '.join(info['devices'])}): install the framework's CUDA build (jax[cuda], "
            f"torch with CUDA, tensorflow[and-cuda]) where a driver runs, and leave "
            f"JAX_PLATFORMS and CUDA_VISIBLE_DEVICES unset"
        )
    return info


def _jax_cuda_version() -> str | None:
    """The CUDA version JAX's GPU plugin was built for, where it says (None otherwise)."""
    import importlib.metadata as md

    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith(("jax-cuda", "jax_cuda")) and "plugin" in name:
            return name.split("cuda", 1)[1].split("-", 1)[0] or None
    return None


def set_precision(precision: str) -> None:
    """Build every model of this process under the Keras dtype policy ``precision``
    (float32, mixed_bfloat16 or mixed_float16: :data:`embryo_bench.vocabulary.spec.PRECISIONS`),
    set every time, so a policy set before in the same process does not carry over. Call
    after Keras is imported and before the model is built.

    Raises:
        ConfigError: a policy Keras does not know.
    """
    import keras

    try:
        keras.config.set_dtype_policy(precision)
    except ValueError as exc:
        raise ConfigError(f"precision {precision!r}: Keras refuses it ({exc})") from None


def device_memory_peak_mib() -> float | None:
    """The most memory the backend held on its GPUs during the process (MiB, summed over its
    GPUs), from the framework's own allocator: JAX ``peak_bytes_in_use``, PyTorch
    ``max_memory_allocated``, TensorFlow ``get_memory_info()["peak"]``. None on the CPU (the
    process's own peak is telemetry's memory_mib_peak) or where the framework does not say.
    (NVML's memory used is no measure of it: JAX reserves 75 % of a GPU at its start.)"""
    backend = backend_name()
    try:
        if backend == "jax":
            import jax

            stats = [d.memory_stats() for d in jax.devices() if d.platform != "cpu"]
            peaks = [s["peak_bytes_in_use"] for s in stats if s and "peak_bytes_in_use" in s]
        elif backend == "torch":
            import torch

            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
            peaks = [torch.cuda.max_memory_allocated(i) for i in range(n)]
        else:
            import tensorflow as tf

            n = len(tf.config.list_logical_devices("GPU"))
            peaks = [tf.config.experimental.get_memory_info(f"GPU:{i}")["peak"] for i in range(n)]
    except (RuntimeError, ValueError, KeyError):
        return None
    return sum(peaks) / 2**20 if peaks else None


#: XLA:CPU's YNNPACK offload of convolutions, off. jaxlib 0.10's XLA hands every
#: convolution to YNNPACK. The filter gradient of the paper CNN's second convolution (a window
#: the size of the image, the batch contracted) ran there at 2-5 GFLOP/s on one core, 6-8x
#: slower than its forward pass, while XLA's own (Eigen) convolution runs it at about the
#: forward pass's speed: without it Keras on JAX trained 2.25x faster at 1 thread and batch
#: 480 (2 interleaved pairs, 24-26 -> 56 images/s; benchmarks/bench_peers.py).
XLA_YNN_CONVOLUTION_OFF = "--xla_cpu_experimental_ynn_fusion_type=-individual_convolution"
#: XLA:CPU's memory-minimising schedule for 1 thread. The default schedule orders
#: a step's operations so that independent ones can run at once, which keeps more of them
#: alive together; one thread cannot run them at once. For the paper CNN's train step at
#: batch 480 it cut XLA's temporary buffer from 2,656 to 1,800 MiB and the run's peak RSS
#: from 3,843 to 2,954 MiB, at the same speed (2 interleaved pairs).
XLA_MEMORY_SCHEDULE = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
#: The first jaxlib these flags were verified on; an XLA flag unknown to a jaxlib aborts the
#: process ("Unknown flag in XLA_FLAGS"), so older ones get neither.
JAXLIB_VERIFIED = (0, 10)


def jax_xla_flags(threads: int, flags: str = "") -> list[str]:
    """XLA flags for training on JAX's CPU backend with ``threads`` threads, less any that
    ``flags`` (the ``XLA_FLAGS`` already set) set themselves.

    * ``--xla_cpu_multi_thread_eigen=false`` for 1 thread (XLA's Eigen kernels single
      threaded; for more, the affinity bounds them);
    * on jaxlib >= :data:`JAXLIB_VERIFIED`: :data:`XLA_YNN_CONVOLUTION_OFF`, and for 1 thread
      :data:`XLA_MEMORY_SCHEDULE`.
    """
    import importlib.metadata as md

    try:
        jaxlib = tuple(int(p) for p in md.version("jaxlib").split(".")[:2])
    except (md.PackageNotFoundError, ValueError):
        jaxlib = (0, 0)
    wanted = []
    if threads == 1:
        wanted.append("--xla_cpu_multi_thread_eigen=false")
    if jaxlib >= JAXLIB_VERIFIED:
        wanted.append(XLA_YNN_CONVOLUTION_OFF)
        if threads == 1:
            wanted.append(XLA_MEMORY_SCHEDULE)
    return [f for f in wanted if f.split("=", 1)[0] not in flags]


@dataclass(frozen=True)
class Feed:
    """Batches for Keras ``fit``/``evaluate`` (:func:`input_pipeline`).

    Attributes:
        data: a ``tf.data.Dataset`` of (images, labels) batches, or the arrays ``(x, y)``.
        batch_size: images per batch for arrays; None for a dataset (it is batched).
    """

    data: object
    batch_size: int | None

    def fit_kwargs(self) -> dict:
        """Keyword arguments of ``fit`` for these batches (a dataset shuffles itself, so
        ``fit``'s own shuffle is off for it; arrays are shuffled by ``fit``)."""
        if isinstance(self.data, tuple):
            return {"x": self.data[0], "y": self.data[1], "batch_size": self.batch_size}
        return {"x": self.data, "shuffle": False}

    def validation_kwargs(self) -> dict:
        """Keyword arguments of ``fit`` that score these batches after each epoch."""
        return {"validation_data": self.data, "validation_batch_size": self.batch_size}


def input_pipeline(
    x: np.ndarray,
    y: np.ndarray,
    batch_size: int,
    *,
    shuffle: bool,
    seed: int = 0,
    endless: bool = False,
    take: int = 0,
) -> Feed:
    """Feed in-memory images and labels to Keras in batches, reshuffled every epoch when
    ``shuffle``.

    Args:
        x: images, uint8 (N, S, S, 1). y: labels, int32 (N,).
        batch_size: images per batch (the last batch may be smaller).
        shuffle: a new order every epoch (training); the stored order otherwise (scoring).
        seed: the shuffle's seed (the run's seed).
        endless: reshuffled passes one after another, each pass's leftover (N mod
            batch_size) dropped, for ``fit(steps_per_epoch=...)`` (the original script's
            feeding); TensorFlow only.
        take: the first ``take`` images of each (shuffled) pass only: a new random subset
            every time the batches are read (the original script's test batch); TensorFlow
            only. 0: all.

    TensorFlow: a ``tf.data`` pipeline built once per run (indices in a new random order every
    pass, :func:`_shuffled_passes`, batched, then
    each batch's images and labels gathered from ``x`` and ``y`` by NumPy,
    :func:`_gather_from`) with tf.data autotuning switched off.
    With autotuning on (as in the pipeline Keras builds itself from numpy arrays) every
    iterator starts a model-optimisation thread that sleeps in doubling timed waits
    (10 ms, 20 ms, ... 10.24 s, 20.48 s ...); when an iterator is destroyed at the end of an
    epoch or of an evaluation, the destructor can wait out that sleep, which showed as
    10-20 s at 0 % CPU per epoch in our runs. Nothing here needs autotuning:
    the batches are gathered from memory. JAX and PyTorch: the arrays themselves (Keras
    feeds numpy arrays to those backends without tf.data, slicing a batch at a time).

    Memory: ``x`` and ``y`` are held once, by the caller, plus the batches
    in flight (the one being gathered, one prefetched) and, when shuffling, one pass's order
    of the N indices (:func:`_shuffled_passes`: int32, 4-8 bytes a sample with its
    slices). The images are not copied into a tensor: with TensorFlow 2.21, ``tf.constant``
    of 256 MiB of images grew the RSS by 520 MiB for as long as it lived, and starting an
    iterator over a pipeline that captured it by 267 MiB more for a moment (a run's peak held
    the data about 3.2 times more than the arrays); and the order is not a
    ``Dataset.shuffle`` buffer of the N indices, which held about 300 bytes a sample (one
    tensor per index: more than a 164-byte text sample itself) and took 11 s to fill for 2
    million samples (a NumPy permutation: 2.6 s, 41 MiB).

    Returns:
        a :class:`Feed`.
    """
    if backend_name() != "tensorflow":
        if endless or take:
            raise ConfigError(f"endless or subset batches need TensorFlow, not {backend_name()}")
        return Feed((x, y), batch_size)
    import tensorflow as tf

    if shuffle:
        order = _shuffled_passes(len(y), batch_size, seed, endless=endless, take=take)
    else:
        order = tf.data.Dataset.range(len(y))
        if take:
            order = order.take(take)
        order = order.batch(batch_size, drop_remainder=endless)
        if endless:
            order = order.repeat()
    batches = order.map(_gather_from(x, y)).prefetch(1)
    options = tf.data.Options()
    options.autotune.enabled = False
    return Feed(batches.with_options(options), None)


def _shuffled_passes(n: int, batch_size: int, seed: int, *, endless: bool, take: int):
    """Batches of sample indices (int32 (B,); int64 from 2**31 samples), each pass over the N
    samples in a new random order: a NumPy permutation of range(n)
    (:meth:`numpy.random.Generator.permutation`, seeded with ``seed`` and a number drawn per
    pass from ``tf.data.Dataset.random(seed, rerandomize_each_iteration=True)``, so the same
    seed gives the same passes, and each epoch's iterator a new one), sliced into batches.
    One pass when not ``endless`` (Keras makes an iterator per epoch), else passes one after
    another, each pass's leftover (N mod B) dropped; ``take``: each pass's first ``take``
    indices only (0: all)."""
    import tensorflow as tf

    size = min(take, n) if take else n
    # int32 indices where they fit: 4 bytes a sample (the same order as int64's: the shuffle
    # does not depend on the dtype)
    dtype = np.int32 if n < 2**31 else np.int64

    def permutation(draw: np.int64) -> np.ndarray:
        rng = np.random.default_rng([seed, int(draw) & (2**63 - 1)])
        return rng.permutation(np.arange(n, dtype=dtype))[:size]

    def batches(draw):
        order = tf.numpy_function(permutation, [draw], tf.as_dtype(dtype), stateful=False)
        order.set_shape([size])
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size, drop_remainder=endless)

    draws = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    passes = (draws if endless else draws.take(1)).flat_map(batches)
    # flat_map hides how many batches a pass holds; Keras, not knowing, takes the end of an
    # epoch for data running out (a warning, and a step's time outside every window).
    steps = tf.data.INFINITE_CARDINALITY if endless else -(-size // batch_size)
    return passes.apply(tf.data.experimental.assert_cardinality(steps))


def _gather_from(x: np.ndarray, y: np.ndarray):
    """The map function of :func:`input_pipeline`'s TensorFlow pipeline: a batch of indices
    (int64 (B,)) to the samples and labels at them, ``(x[i], y[i])``, gathered by NumPy in
    tf.data's thread (``tf.numpy_function``) from the arrays themselves, with their static
    shapes (B known when the batches drop their remainder)."""
    import tensorflow as tf

    def gather(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x[i], y[i]

    def batch(i):
        images, labels = tf.numpy_function(
            gather, [i], (tf.as_dtype(x.dtype), tf.as_dtype(y.dtype)), stateful=False
        )
        images.set_shape(i.shape.concatenate(x.shape[1:]))
        labels.set_shape(i.shape)
        return images, labels

    return batch


def distribution_scope(strategy: str, replicas: int):
    """The context to build and compile the model in, and the number of replicas.

    ``none``: one device, no distribution (the paper's setting: a second GPU does not help by
    itself). ``mirrored``: ``tf.distribute.MirroredStrategy`` over ``replicas`` GPUs, or, on a
    host without GPUs, over ``replicas`` logical CPU devices (to test the path on CPUs); the
    global batch is split across replicas. Call before TensorFlow runs its first operation.

    Returns:
        (context manager, replicas in sync).

    Raises:
        ConfigError: mirrored on a backend other than TensorFlow, or more GPUs asked for
            than visible.
    """
    import contextlib

    if strategy == "none":
        return contextlib.nullcontext(), 1
    if backend_name() != "tensorflow":
        raise ConfigError(
            f"strategy {strategy}: needs KERAS_BACKEND=tensorflow, not {backend_name()}"
        )
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        if replicas > len(gpus):
            raise ConfigError(f"strategy mirrored over {replicas} GPUs; {len(gpus)} visible")
        devices = [f"/gpu:{i}" for i in range(replicas)]
    else:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
        )
        devices = [f"/cpu:{i}" for i in range(replicas)]
    mirrored = tf.distribute.MirroredStrategy(devices)
    return mirrored.scope(), mirrored.num_replicas_in_sync


def compute_settings(model=None) -> dict:
    """The settings that change which kernels run, for provenance: ``jit_compile`` of a
    compiled Keras ``model`` (Keras 3 compiles train steps with XLA by default where the
    backend supports it) and its ``steps_per_execution`` (training steps per call into the
    backend: TensorFlow runs them in one graph loop), ``XLA_FLAGS``,
    ``TF_ENABLE_ONEDNN_OPTS`` ("default": TensorFlow's own default, oneDNN on for x86 Linux
    builds), and TensorFlow's build info (CUDA/cuDNN versions when a CUDA build) when
    TensorFlow is loaded."""
    import sys

    out = {
        "jit_compile": None if model is None else getattr(model, "jit_compile", None),
        "steps_per_execution": (
            None if model is None else getattr(model, "steps_per_execution", None)
        ),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
    }
    if "tensorflow" in sys.modules:
        info = dict(sys.modules["tensorflow"].sysconfig.get_build_info())
        keys = ("is_cuda_build", "is_rocm_build", "cuda_version", "cudnn_version")
        out["tensorflow_build"] = {k: info[k] for k in keys if k in info}
    return out


def framework_versions() -> dict[str, str]:
    """Versions of Keras and of whichever backends are importable."""
    import importlib.metadata as md

    out = {}
    for dist in ("keras", "tensorflow", "tensorflow-cpu", "jax", "torch", "numpy"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def select_backend(backend: str) -> None:
    """Make ``import keras`` load ``backend`` (``KERAS_BACKEND``); call before Keras is
    imported.

    Raises:
        ConfigError: Keras is already loaded on another backend in this process.
    """
    if "keras" in sys.modules:
        loaded = sys.modules["keras"].backend.backend()
        if loaded != backend:
            raise ConfigError(f"run asks for Keras backend {backend}; {loaded} is loaded")
        return
    os.environ["KERAS_BACKEND"] = backend


def seed_everything(seed: int) -> None:
    """``keras.utils.set_random_seed(seed)`` (Python's, NumPy's, Keras's and the backend's
    random generators) without importing TensorFlow into a run on another backend.

    Keras seeds TensorFlow whenever it is installed, importing it (+460 MiB RSS and
    TensorFlow's start-up in every JAX or PyTorch run, whose numbers then are not that
    framework's alone). On a backend other than TensorFlow, TensorFlow is hidden from that one
    call (``sys.modules`` entry None: Keras finds it not installed, and remembers that for the
    process); runs on those backends feed Keras numpy arrays, not ``tf.data``. Call after
    :func:`select_backend`.
    """
    import keras

    if keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return
    sys.modules["tensorflow"] = None  # type: ignore[assignment]
    try:
        keras.utils.set_random_seed(seed)
    finally:
        del sys.modules["tensorflow"]

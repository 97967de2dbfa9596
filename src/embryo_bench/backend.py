"""Backend-specific runtime setup kept out of the model and training code.

Keras 3 runs the same model on TensorFlow, JAX or PyTorch (``KERAS_BACKEND``); only the size
of each framework's thread pools has to be set through the framework itself. Call
:func:`limit_threads` before the first Keras operation.
"""

from __future__ import annotations

import contextlib
import json
import os

from .errors import ConfigError


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
    false. Call before the backend runs its first operation.

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
    pinned = sorted(os.sched_getaffinity(0))
    if len(pinned) > cores_wanted:
        pinned = pinned[:cores_wanted]
        os.sched_setaffinity(0, pinned)
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    elif backend == "jax" and threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    elif backend == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)
    return pinned


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


def framework_versions() -> dict[str, str]:
    """Versions of Keras and of whichever backends are importable."""
    import importlib.metadata as md

    out = {}
    for dist in ("keras", "tensorflow", "tensorflow-cpu", "jax", "torch", "numpy"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out

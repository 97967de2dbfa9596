"""Backend-specific runtime setup kept out of the model and training code.

Keras 3 runs the same model on TensorFlow, JAX or PyTorch (``KERAS_BACKEND``); only the size
of each framework's thread pools has to be set through the framework itself. Call
:func:`limit_threads` before the first Keras operation.
"""

from __future__ import annotations

import contextlib
import os


def backend_name() -> str:
    """The Keras backend in effect (``KERAS_BACKEND``, default tensorflow)."""
    return os.environ.get("KERAS_BACKEND", "tensorflow")


def limit_threads(threads: int) -> None:
    """Size the backend's intra-op and inter-op thread pools to ``threads`` CPU threads.

    A CPU quota (cgroup, container) does not hide the host's cores from a framework, so
    without this a 1-CPU target would oversubscribe and its timings would be false.

    Raises:
        ValueError: threads < 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    elif backend == "jax":
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
            f"intra_op_parallelism_threads={threads}"
        ).strip()
    elif backend == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)


def framework_versions() -> dict[str, str]:
    """Versions of Keras and of whichever backends are importable."""
    import importlib.metadata as md

    out = {}
    for dist in ("keras", "tensorflow", "tensorflow-cpu", "jax", "torch", "numpy"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out

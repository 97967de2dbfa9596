"""One trial of ``embryo-bench batch-limit`` (:mod:`embryo_bench.training.batch_limit`): a
run's model trained at one batch size on SYNTHETIC inputs (:func:`train_trial`), in a fresh
Python process (:func:`embryo_bench.training.batch_limit.run_trial` runs this module,
:func:`trial_main`): an out-of-memory error can leave a framework unusable, and each trial's
peak memory is then its own. A trial fits, runs out of memory (the framework's error
recognised: :data:`OUT_OF_MEMORY`), or fails otherwise (an error, reported as such and never
counted as "does not fit").

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

import json
import os
import re
import resource
import sys
import traceback
from pathlib import Path

from ..data.arrays import synthetic_arrays
from ..io import read_json
from ..recording.hardware import gpu_identity
from ..vocabulary.spec import RunSpec
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
from .batch_data import sample_of
from .epochs import fit_epochs

# The trainer's own model builder, private to train.py: imported as it is, because any edit
# to train.py (a rename included) changes the train command's code hash and reruns every
# cached training.
from .train import run_model

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
    spec = spec.replace(batch_size=batch_size, epoch_steps=0, holdout=0, test_subset=0)
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


def error_line(text: str) -> str:
    """The first line of an exception's text (:func:`exception_text`), at most 400
    characters."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:400]


if __name__ == "__main__":
    sys.exit(trial_main(sys.argv[1:]))

"""What a trial of ``embryo-bench batch-limit`` (:mod:`embryo_bench.training.batch_limit`)
trains on: SYNTHETIC samples of the run's shape, dtype and classes (:func:`sample_of`), the
memory they take at a batch size (:func:`data_mib`), the cap on the batch size that memory
sets (:func:`resolve_most`), and the run's backend and vocabulary checked before any trial
(:func:`check_backend`).
"""

from __future__ import annotations

import math
import sys
from importlib.util import find_spec

import numpy as np

from ..data.stages import run_sample
from ..errors import ConfigError
from ..recording.hardware import memory_mib
from ..vocabulary.spec import INPUT_SHARDS, RunSpec


def sample_of(spec: RunSpec) -> tuple[tuple[int, ...], str, int, int]:
    """One sample of the run's inputs: (shape, dtype, classes, vocabulary). The paper's: a
    uint8 (S, S, 1) frame at its preprocessing's image size, 4 classes; a workload's: its
    input shape and dtype, classes and vocabulary (token ids; 0 for images)."""
    if spec.input_kind == INPUT_SHARDS:
        return run_sample(spec.preprocessing)
    w = spec.workload
    return tuple(w.input_shape), w.input_dtype, w.classes, w.vocabulary


#: The default cap on the batch size (images), lowered to what the host's memory can hold
#: of a trial's synthetic data (:func:`resolve_most`).
MOST = 2**20


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

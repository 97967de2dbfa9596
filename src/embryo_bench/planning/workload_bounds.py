"""Sizes and resources of every workload other than the paper's, bounded before any job
(:func:`check_workloads`, called by :func:`embryo_bench.planning.bounds.check_plan`): a batch
larger than its training set (an empty one included) where the count is known, its data
job's and each of its trainers' memory (its arrays: samples x sample bytes) against the
limits they run under (:mod:`embryo_bench.planning.memory`), and the disk its downloads,
arrays file and image files (files input) take on the outdir's file system. Every size is an
estimate and a lower bound, as :mod:`embryo_bench.planning.bounds` says.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import registry
from ..data.formats import FORMATS
from ..data.synthetic import existing_folder
from ..errors import ConfigError
from ..vocabulary import layout
from ..vocabulary.spec import INPUT_ARRAYS
from ..vocabulary.units import MIB, size_text
from .memory import TRAINER_BASE_MIB, Need, check_need, machine_text, memory_limits

#: Bytes of one label in a prepared-arrays file (int32).
LABEL_BYTES = 4
#: Bytes per sample the synthetic generator holds beside the arrays while it draws the
#: labels (:func:`embryo_bench.data.arrays.synthetic_arrays`: ``np.arange(n) % classes``,
#: int64, and its permutation).
SYNTHETIC_LABEL_BYTES = 16
#: The smallest JPEG file the files input mode writes (quality 95,
#: :func:`embryo_bench.data.imagefolder.write_image_folder`), by channels: a 1x1 px image,
#: its headers and tables alone; measured with Pillow 13.0, 2026-11-27. A lower bound of any
#: image's file.
JPEG_MIN_BYTES = {1: 333, 3: 631}


@dataclass(frozen=True)
class WorkloadSize:
    """What the plan knows of a workload's arrays before any job.

    Attributes:
        key: the entry's settings, for messages (``workloads[i]``); name: its name.
        n_train, n_test: samples of each split: exact for synthetic data and for downloads
            whose every file's sha256 is published (the registry's counts, cut to
            ``train_samples``/``test_samples``; a corpus of characters only at its own
            sequence length or shorter, as longer sequences are fewer); else (an offline
            copy by ``path``, an image folder) one batch of training samples and no test
            sample, the least the trainer accepts.
        counted: the counts are known (not one batch standing in for them).
        sample_bytes: one sample as stored (its shape's product times its dtype's size).
        what: the samples in words, for messages.
    """

    key: str
    name: str
    n_train: int
    n_test: int
    counted: bool
    sample_bytes: int
    what: str

    @property
    def setting(self) -> str:
        """The entry, for messages: ``workloads[i] (name)``."""
        return f"{self.key} ({self.name})"

    @property
    def arrays_bytes(self) -> int:
        """The arrays (samples and int32 labels of both splits): the prepared-arrays file's
        size, and what every job that reads it holds."""
        return (self.n_train + self.n_test) * (self.sample_bytes + LABEL_BYTES)


def _shape_text(shape: tuple[int, ...], dtype: str) -> str:
    return f"{'x'.join(f'{n:,}' for n in shape)} {dtype}"


def workload_size(index: int, workload) -> WorkloadSize:
    """A workload's arrays as the plan knows them (:class:`WorkloadSize`).

    Args:
        index: its position in ``workloads:``. workload: a
            :class:`embryo_bench.planning.workloads.Workload` other than the paper's.
    """
    data = workload.data
    ds = registry.get(data.dataset)
    key = f"workloads[{index}]"
    sample = math.prod(data.input_shape) * np.dtype(data.input_dtype).itemsize
    shape = _shape_text(data.input_shape, data.input_dtype)
    if data.synthetic:
        n_train = data.train_samples or ds.train or 0
        n_test = data.test_samples or ds.test or 0
        how = "SYNTHETIC "
    elif (
        not data.path
        and ds.train is not None
        and ds.files
        and all(f.sha256 for f in ds.files)
        # A corpus cut into sequences every `step` characters holds the registry's counts
        # only at its sequence length or shorter.
        and (
            ds.format not in FORMATS
            or not FORMATS[ds.format].needs_step
            or data.input_shape[0] <= ds.shape[0]
        )
    ):
        n_train = min(data.train_samples or ds.train, ds.train)
        n_test = min(data.test_samples or ds.test or 0, ds.test or 0)
        how = f"{ds.name} "
    else:
        batch = workload.batch_size
        return WorkloadSize(
            key,
            workload.name,
            batch,
            0,
            False,
            sample,
            f"{batch:,} training samples of {shape}, {sample:,} bytes each (one batch: the "
            "count is unknown before the data job)",
        )
    return WorkloadSize(
        key,
        workload.name,
        n_train,
        n_test,
        True,
        sample,
        f"{n_train:,} training and {n_test:,} test {how}samples of {shape}, "
        f"{sample:,} bytes each, with int32 labels",
    )


def workload_needs(size: WorkloadSize, workload, targets: dict) -> list[tuple[Need, object]]:
    """The memory a workload's jobs hold at least, each with the target it runs for (None:
    a job of this machine): its data job (the arrays; synthetic data also draws one image
    pattern per class and int64 labels), and each target's trainer (TensorFlow's own
    :data:`TRAINER_BASE_MIB`, then the arrays, read whole before training; the model is not
    counted: a model of the user's own is unknown before it is built).

    Args:
        size: :func:`workload_size`'s. workload: the workload. targets: the targets it
            trains on (name -> :class:`embryo_bench.planning.targets.Target`).
    """
    data, arrays = workload.data, size.arrays_bytes
    key = size.key
    fix = f"lower {key}.train_samples, {key}.test_samples or {key}.input_shape"
    job, detail = arrays, size.what
    if data.synthetic:
        patterns = data.classes * size.sample_bytes if data.input_dtype == "uint8" else 0
        job += patterns + SYNTHETIC_LABEL_BYTES * max(size.n_train, size.n_test)
        detail += (
            f", {data.classes} class patterns ({size_text(patterns)}) and the generator's "
            f"int64 labels, {SYNTHETIC_LABEL_BYTES} bytes a sample"
        )
    needs = [(Need(f"{size.setting}: its data job", job, detail, fix), None)]
    for t in targets.values():
        need = Need(
            f"target {t.name}: its trainer of {size.setting}",
            TRAINER_BASE_MIB * MIB + arrays,
            f"TensorFlow's own {TRAINER_BASE_MIB} MiB (measured), then the arrays, "
            f"{size_text(arrays)}: {size.what}",
            f"{fix}, or raise the memory",
        )
        needs.append((need, t))
    return needs


def workload_disk(size: WorkloadSize, workload, out: Path) -> tuple[int, str]:
    """Bytes a workload's jobs write at least under ``out`` (the outdir), and what, leaving
    out what is there already: its dataset's downloads (their published sizes), its arrays
    file (:attr:`WorkloadSize.arrays_bytes`) and, for files input, its training images
    (:data:`JPEG_MIN_BYTES` each)."""
    data, spec = workload.data, workload.spec
    wdir = out / layout.workload_dir(workload.name)
    total, parts = 0, []
    if not data.synthetic and not data.path:
        for f in registry.get(data.dataset).files:
            if f.bytes and not (out / layout.dataset_dir(data.dataset) / f.name).exists():
                total += f.bytes
                parts.append(f"its download {f.name}, {size_text(f.bytes)}")
    if not (wdir / layout.WORKLOAD_ARRAYS).exists():
        total += size.arrays_bytes
        parts.append(f"its arrays file, {size_text(size.arrays_bytes)} ({size.what})")
    if spec.input_mode == "files" and not (wdir / layout.WORKLOAD_FILES).exists():
        channels = data.input_shape[-1]
        files = size.n_train * JPEG_MIN_BYTES.get(channels, JPEG_MIN_BYTES[1])
        total += files
        parts.append(
            f"its {size.n_train:,} training images as JPEG files, {size_text(files)} (the "
            f"smallest a JPEG file is, {JPEG_MIN_BYTES.get(channels, JPEG_MIN_BYTES[1])} bytes)"
        )
    return total, "; ".join(parts)


def check_workloads(plan, where: str, machine_mib: int | None) -> None:
    """Bound every workload other than the paper's before any job (:func:`check_plan`): a
    batch larger than its training set (where the count is known: an empty one included);
    its data job's and each trainer's memory (:func:`workload_needs`) against this
    machine's (``where`` "local") and the targets' limits (:func:`memory_limits`); the disk
    its jobs write (:func:`workload_disk`), the workloads' together, against the free space
    of the outdir's file system.

    Args:
        plan: the :class:`embryo_bench.planning.plan.Plan` (its workloads and their targets).
        where: the configuration's ``hardware_check``. machine_mib: this machine's memory
            (MiB) where it bounds the jobs, else None.

    Raises:
        ConfigError: one line naming the workload's entry (``workloads[i] (name)``), the
            size, what it holds and the settings to change.
    """
    machine = machine_text(machine_mib) if machine_mib else ""
    out = Path(plan.config["outdir"])
    written, free, device = 0, None, None
    for index, (name, workload) in enumerate(plan.workloads.items()):
        if workload.input_kind != INPUT_ARRAYS:  # the stages' data: bounded above
            continue
        targets = plan.workload_targets(name)
        size = workload_size(index, workload)
        if size.counted and size.n_train < workload.batch_size:
            key = size.key
            if size.n_train:
                why, fix = "every step would train all of them", f"raise {key}.train_samples"
            else:
                why, fix = "there is nothing to train", f"set {key}.train_samples"
            raise ConfigError(
                f"{size.setting}: batch_size {workload.batch_size:,} > its {size.n_train:,} "
                f"training samples ({size.what}): {why}; {fix} or lower {key}.batch_size"
            )
        for need, target in workload_needs(size, workload, targets):
            if target is None:
                if machine:
                    check_need(need, machine_mib, machine)
                continue
            for limit_mib, text in memory_limits(target, where, machine_mib):
                check_need(need, limit_mib, text)
        bytes_, what = workload_disk(size, workload, out)
        if not bytes_:
            continue
        if free is None:
            device = existing_folder(out)
            free = shutil.disk_usage(device).free
        written += bytes_
        if written > free:
            key, before = size.key, written - bytes_
            others = f"; with the workloads before it, {size_text(written)}" if before else ""
            raise ConfigError(
                f"{size.setting}: its data would take at least {size_text(bytes_)} on disk "
                f"({what}; an estimate, a lower bound{others}), and {size_text(free)} is free "
                f"on the device of {device}: lower {key}.train_samples, {key}.test_samples or "
                f"{key}.input_shape, free space, or point outdir elsewhere"
            )

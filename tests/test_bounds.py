"""Sizes and resources bounded before work starts: each case is refused
at plan time (Plan.from_config, which the workflow calls) and by `embryo-bench check-config`
in one line naming the setting; the estimates behind the memory and disk bounds are lower
bounds of what the code really holds and writes; a full disk while generating is one line
and keeps nothing; indexing refuses a split without test embryos before writing."""

from __future__ import annotations

import copy
import shutil
import tracemalloc
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import yaml
from workflow_helpers import REPO, TINY_PARAMETERS, layered_base, offline_config, snakemake

from embryo_bench import cli
from embryo_bench.data import stages, synthetic
from embryo_bench.data.select import select_frames
from embryo_bench.data.sources import index_source
from embryo_bench.errors import ConfigError
from embryo_bench.planning import bounds, memory, workload_bounds
from embryo_bench.planning.plan import Plan
from embryo_bench.recording import hardware
from embryo_bench.vocabulary.config import load_config, read_config_files

GIB_MIB = 1024
#: The machine the cases are planned for: 24 GiB, so that they do not depend on the machine
#: the suite runs on.
MACHINE_MIB = 24 * GIB_MIB


@pytest.fixture
def machine(monkeypatch):
    """This machine has :data:`MACHINE_MIB` of memory and 1 TiB free on every disk."""
    monkeypatch.setattr(hardware, "memory_mib", lambda: MACHINE_MIB)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 0, 2**40))


def _offline(tmp_path: Path, docker: bool = True) -> dict:
    return offline_config(tmp_path / "out", docker=docker, full=True)


def _paper(tmp_path: Path) -> dict:
    config = yaml.safe_load((REPO / "config/paper-synthetic.yaml").read_text())
    config["outdir"] = str(tmp_path / "out")
    return config


def _set(config: dict, **paths) -> dict:
    """A copy of ``config`` with ``section__key=value`` settings changed."""
    config = copy.deepcopy(config)
    for path, value in paths.items():
        node, keys = config, path.split("__")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return config


def _synthetic(tmp_path: Path, **settings) -> dict:
    """The offline configuration with ``dataset.synthetic`` settings changed."""
    config = _offline(tmp_path)
    config["dataset"]["synthetic"].update(settings)
    return config


def _target(config: dict, name: str, **changes) -> dict:
    config = copy.deepcopy(config)
    next(t for t in config["targets"] if t["name"] == name).update(changes)
    return config


#: case -> (the configuration, from the tmp folder; the line's text). Each fails on the
#: unchanged code (check-config said "valid" for all but remainder_ge_mod).
CASES = {
    "frame_size_100000": (
        lambda d: _set(_offline(d), dataset__frame_size=100_000),
        "the synthesize job would hold at least 130.4 GiB (drawing one frame of "
        "100,000x100,000 px, 14 bytes per px at least; an estimate, a lower bound); this "
        "machine has 24.0 GiB: lower dataset.frame_size",
    ),
    "augment_of_one_shard_1024_px": (
        lambda d: _set(_paper(d), preprocess__image_size=1024, select__shards=1),
        "the augment job of shard 0 would hold at least 60.1 GiB (3,064 frames of 320x320 px "
        "and their 61,280 rotations of 1,024x1,024 px; an estimate, a lower bound); this "
        "machine has 24.0 GiB: raise select.shards",
    ),
    "trainer_1024_px": (
        lambda d: _set(_paper(d), preprocess__image_size=1024),
        "target laptop-2cpu: its trainer would hold at least 184.1 GiB (TensorFlow's own 300 "
        "MiB (measured), then the greater of loading the 61,280 images of 1,024x1,024 px",
    ),
    "memory_0g": (
        lambda d: _target(_offline(d), "docker-1cpu", memory="0g"),
        "target docker-1cpu: memory 0g: Docker reads 0 as no limit at all",
    ),
    "memory_5m": (
        lambda d: _target(_offline(d), "docker-1cpu", memory="5m"),
        "target docker-1cpu: memory 5m: below Docker's minimum memory limit (6 MiB)",
    ),
    "memory_200m": (
        lambda d: _target(_offline(d), "docker-1cpu", memory="200m"),
        "target docker-1cpu: its trainer would hold at least 800 MiB",
    ),
    "host_memory_a_cluster_reserves": (
        lambda d: _target(_set(_offline(d), hardware_check="slurm"), "host-1cpu", memory="200m"),
        "target host-1cpu: its trainer would hold at least 800 MiB",
    ),
    "three_cell_frames_over_total": (
        lambda d: _set(
            _offline(d),
            dataset__synthetic__total_frames=100,
            dataset__synthetic__three_cell_frames=200,
        ),
        "dataset.synthetic: three_cell_frames 200 of 100 labelled frames over 10 embryos; "
        "need 1 to 70",
    ),
    "fewer_than_4_frames_per_embryo": (
        lambda d: _set(_offline(d), dataset__synthetic__total_frames=39),
        "dataset.synthetic: 39 labelled frames over 10 embryos; need >= 4 per embryo",
    ),
    "three_cell_frames_not_spreadable": (
        lambda d: _set(
            _offline(d),
            dataset__synthetic__total_frames=100,
            dataset__synthetic__three_cell_frames=71,
        ),
        "dataset.synthetic: three_cell_frames 71 of 100 labelled frames over 10 embryos",
    ),
    "unlabelled_frames_and_extra_lines": (
        lambda d: _set(
            _offline(d), dataset__synthetic__unlabelled_frames=2, dataset__synthetic__extra_lines=1
        ),
        "dataset.synthetic: unlabelled_frames and extra_lines both set",
    ),
    "unlabelled_frames_under_the_error_rule": (
        lambda d: _set(
            _offline(d),
            dataset__synthetic__unlabelled_frames=2,
            dataset__trajectories__unlabelled_frames="error",
        ),
        "dataset.synthetic.unlabelled_frames 2 with dataset.trajectories.unlabelled_frames: "
        "error: indexing would refuse every embryo",
    ),
    "extra_lines_over_the_rule": (
        lambda d: _set(_offline(d), dataset__synthetic__extra_lines=3),
        "dataset.synthetic.extra_lines 3 > dataset.trajectories.extra_lines 1",
    ),
    "remainder_not_below_mod": (
        lambda d: _set(_offline(d), split__test_remainder=5),
        "split.test_remainder (5) must be below split.test_mod (5)",
    ),
    "no_test_embryo": (
        lambda d: _set(
            _offline(d), dataset__synthetic__embryos=5, split__test_mod=7, split__test_remainder=6
        ),
        "split.test_mod 7, split.test_remainder 6: no test embryo among the 5 synthetic "
        "embryos E00..E04",
    ),
    "no_3_cell_frame_in_training": (
        lambda d: _set(_offline(d), dataset__synthetic__three_cell_frames=1),
        "split.test_mod 5, split.test_remainder 0: the training embryos of the synthetic data "
        "hold no frame with 3 cells",
    ),
    "more_shards_than_frames": (
        lambda d: _set(_offline(d), select__shards=64),
        "select.shards 64 > the 40 frames the selection will hold",
    ),
    "batch_over_the_training_images": (
        lambda d: _set(_offline(d), preprocess__rotation_step=90),
        "target host-1cpu: batch size 480 > the at most 152 training images",
    ),
}


def _workload(tmp_path: Path, memory: str | None = None, **entry) -> dict:
    """The offline configuration training one workload other than the paper's (with
    ``memory`` as docker-1cpu's limit)."""
    config = _set(_offline(tmp_path), workloads=[entry])
    return _target(config, "docker-1cpu", memory=memory) if memory else config


#: Workloads: each passed check-config and the dry run, then ended in a
#: MemoryError traceback (10^12 samples: 7.28 TiB for the labels alone; 100,000 px: 93 GiB
#: of class patterns), or (the batch) in the trainer's error after the data job.
CASES |= {
    "workload_train_samples_10^12": (
        lambda d: _workload(d, name="mnist-mlp", data="synthetic", train_samples=10**12),
        "workloads[0] (mnist-mlp): its data job would hold at least 748,783.4 GiB "
        "(1,000,000,000,000 training and 10,000 test SYNTHETIC samples of 28x28x1 uint8, 784 "
        "bytes each, with int32 labels, 10 class patterns (8 KiB) and the generator's int64 "
        "labels, 16 bytes a sample; an estimate, a lower bound); this machine has 24.0 GiB: "
        "lower workloads[0].train_samples, workloads[0].test_samples or "
        "workloads[0].input_shape",
    ),
    "workload_input_shape_100000_px": (
        lambda d: _workload(
            d, name="mnist-mlp", data="synthetic", input_shape=[100_000, 100_000, 1]
        ),
        "workloads[0] (mnist-mlp): its data job would hold at least 652,018.9 GiB (60,000 "
        "training and 10,000 test SYNTHETIC samples of 100,000x100,000x1 uint8, "
        "10,000,000,000 bytes each, with int32 labels, 10 class patterns (93.1 GiB)",
    ),
    "workload_input_shape_of_real_data_from_a_copy": (
        lambda d: _workload(
            d, name="catsdogs-cnn", path=str(_splits(d)), input_shape=[100_000, 100_000, 3]
        ),
        "workloads[0] (catsdogs-cnn): its data job would hold at least 894.1 GiB (32 training "
        "samples of 100,000x100,000x3 uint8, 30,000,000,000 bytes each (one batch: the count "
        "is unknown before the data job)",
    ),
    "workload_trainer_over_a_docker_limit": (
        lambda d: _workload(d, "1g", name="mnist-mlp", data="synthetic", train_samples=1_000_000),
        "target docker-1cpu: its trainer of workloads[0] (mnist-mlp) would hold at least 1.0 "
        "GiB (TensorFlow's own 300 MiB (measured), then the arrays, 759 MiB: 1,000,000 "
        "training and 10,000 test SYNTHETIC samples of 28x28x1 uint8, 784 bytes each, with "
        "int32 labels; an estimate, a lower bound); its memory limit is 1g: lower "
        "workloads[0].train_samples",
    ),
    "workload_batch_over_its_samples": (
        lambda d: _workload(
            d,
            name="mnist-mlp",
            data="synthetic",
            train_samples=16,
            test_samples=8,
            batch_size=32,
        ),  # fmt: skip
        "workloads[0] (mnist-mlp): batch_size 32 > its 16 training samples (16 training and "
        "8 test SYNTHETIC samples of 28x28x1 uint8, 784 bytes each, with int32 labels): "
        "every step would train all of them; raise workloads[0].train_samples or lower "
        "workloads[0].batch_size",
    ),
}


def _splits(tmp_path: Path) -> Path:
    """An image folder copy with its two (empty) split folders."""
    for split in ("training_set", "test_set"):
        (tmp_path / "catsdogs" / split).mkdir(parents=True, exist_ok=True)
    return tmp_path / "catsdogs"


def _no_probe(target):
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_is_refused_at_plan_time_naming_the_setting(case, tmp_path, machine):
    config = CASES[case][0](tmp_path)
    with pytest.raises(ConfigError) as err:
        Plan.from_config(config, probe=_no_probe)
    assert CASES[case][1] in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_is_one_line_of_check_config(case, tmp_path, machine, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(CASES[case][0](tmp_path)))
    assert cli.main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"embryo-bench: error: {path}: ") and err.count("\n") == 1, err
    assert CASES[case][1] in err


def test_snakemake_refuses_before_any_job(tmp_path):
    """The workflow's plan: one WorkflowError line, no stack frame of the package, no job.
    (Without the two-core target and its sweep: a test worker is pinned to one core, where
    that target is skipped and its sweep refused first.)"""
    config = _target(offline_config(tmp_path / "out", docker=True), "docker-1cpu", memory="0g")
    proc = snakemake(tmp_path, config, "-n", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "target docker-1cpu: memory 0g: Docker reads 0 as no limit at all" in out
    assert "embryo_bench/" not in out and "Traceback" not in out
    assert not (tmp_path / "out").exists()


def test_what_fits_is_not_refused(tmp_path, monkeypatch):
    """Every shipped configuration, on a machine of 8 GiB with room on its disk; and a docker
    limit just above the trainer's estimate passes where just below is refused."""
    monkeypatch.setattr(hardware, "memory_mib", lambda: 8 * GIB_MIB)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 0, 2**40))
    for path in sorted((REPO / "config").glob("*.yaml")):
        if path.name == "schema.yaml":
            continue
        # A study's short form and the GPU measurement's parts are layered on another file.
        base = layered_base(path)
        config, _ = read_config_files([base, path] if base else [path])
        Plan.from_config(config, probe=_no_probe)
    config = _offline(tmp_path)
    plan = Plan.from_config(config, probe=_no_probe)
    t = plan.targets["docker-1cpu"]
    need = bounds.trainer_need(t, plan.config, bounds.plan_data(plan.config))
    mib = int(need.bytes // 2**20)
    Plan.from_config(_target(config, "docker-1cpu", memory=f"{mib + 1}m"), probe=_no_probe)
    with pytest.raises(ConfigError, match="its trainer would hold at least"):
        Plan.from_config(_target(config, "docker-1cpu", memory=f"{mib}m"), probe=_no_probe)


def test_without_a_count_only_one_frame_and_one_batch_are_bounded(tmp_path, machine):
    """A local copy: the frame count is unknown before indexing, so a shard is bounded by
    one frame and the trainer by one batch (and the model): frame_size 20,000 (one frame and
    its crop, 0.5 GiB) passes, an image_size of 1024 (a 64 GiB model) does not."""
    config = _set(_offline(tmp_path), dataset={"kind": "local", "path": "db", "frame_size": 480})
    Plan.from_config(_set(config, dataset__frame_size=20_000), probe=_no_probe)
    with pytest.raises(ConfigError, match=r"80 images of 1,024x1,024 px \(one batch\)"):
        Plan.from_config(
            _set(config, preprocess__image_size=1024, train__batch_size=80), probe=_no_probe
        )


# --- the estimates are lower bounds of what the code holds and writes ----------------------


@pytest.mark.parametrize("size", [18, 64])
def test_the_parameter_count_is_the_models(size):
    from embryo_bench.workloads.paper import build_model

    assert bounds.model_parameters(size) == build_model(size).count_params()
    assert bounds.model_parameters(16) == TINY_PARAMETERS


@pytest.mark.parametrize("size", [96, 240])
def test_the_png_bytes_are_a_lower_bound_of_the_generator_s(size, tmp_path):
    info = synthetic.generate_db(tmp_path / "db", embryos=5, frames_per_embryo=9, frame_size=size)
    frames = sum(info["frames_per_class"].values())
    written = sum(p.stat().st_size for p in (tmp_path / "db").rglob("*.png"))
    estimate = synthetic.db_bytes(frames, size)
    assert estimate <= written < 1.25 * estimate  # a bound, and not a loose one


def test_the_drawing_memory_is_a_lower_bound_of_the_generator_s():
    size = 240
    tracemalloc.start()
    try:
        synthetic.render_frame(size, 4, np.random.default_rng(0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert synthetic.DRAW_BYTES_PER_PX * size * size <= peak


def test_the_shard_memory_is_a_lower_bound_of_the_stages(tmp_path):
    """crop, invert and augment of a real shard (frames of 240 px), each run once before to
    load its libraries: the traced peak (numpy's arrays; the libraries' own buffers come on
    top) is at least the estimate of each, and not three times above it."""
    size = 240
    synthetic.generate_db(tmp_path / "db", embryos=10, frames_per_embryo=9, frame_size=size)
    config = load_config(
        _set(offline_config(tmp_path / "out"), dataset__frame_size=size, select__shards=1)
    )
    manifest, _ = index_source("db", tmp_path / "db", size, dataset="synthetic", label="x")
    manifest.to_csv(tmp_path / "manifest.csv", index=False)
    selected, _ = select_frames(tmp_path / "manifest.csv", 0, 1)
    selected.to_csv(tmp_path / "selected.csv", index=False)
    data = bounds.Data(len(selected), "the selection")
    needs = {n.job.split()[1]: n.bytes for n in bounds.shard_needs(config, data)}
    pp = config["preprocess"]
    steps = {
        "crop": lambda: stages.crop_shard(
            tmp_path / "selected.csv", 0, size, pp["crop_fraction"], tmp_path / "crop.npz"
        ),
        "invert": lambda: stages.invert_shard(
            tmp_path / "crop.npz", pp["invert_centre"], tmp_path / "invert.npz"
        ),
        "augment": lambda: stages.augment_shard(
            tmp_path / "invert.npz", pp["rotation_step"], pp["image_size"], tmp_path / "a.npz", 1
        ),
    }
    peaks = {}
    for stage, step in steps.items():
        step()
        tracemalloc.start()
        try:
            step()
            peaks[stage] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    for stage, peak in peaks.items():
        # Measured 2026-11-25: crop 1.01, invert 1.01, augment 1.78 times the estimate.
        assert needs[stage] <= peak < 3 * needs[stage], (stage, needs[stage], peaks)


def test_the_trainer_memory_is_a_lower_bound_of_a_real_run(tiny_run):
    """The tiny workflow's host run: its measured peak (resident memory, 1 Hz) is at least
    the estimate; and the estimate holds TensorFlow's own measured floor."""
    import json

    work, config, out = tiny_run
    metrics = json.loads((out / "train/host-1cpu/repeat-1/metrics.json").read_text())
    config = {**config, "outdir": str(work / config["outdir"])}
    plan = Plan.from_config(config, probe=_no_probe)
    need = bounds.trainer_need(
        plan.targets["host-1cpu"], plan.config, bounds.plan_data(plan.config)
    )
    peak_mib = metrics["telemetry"]["memory_mib_peak"]
    assert memory.TRAINER_BASE_MIB * 2**20 < need.bytes <= peak_mib * 2**20


def test_a_workloads_data_estimates_are_lower_bounds_of_its_jobs(tmp_path):
    """Synthetic arrays of a small workload: the file written is at least its estimate, the
    generator's traced peak at least the data job's, and reading the file back (as the
    trainer does) at least the arrays'."""
    from embryo_bench.data.arrays import read_arrays, write_synthetic

    config = _workload(tmp_path, name="cifar10-cnn", data="synthetic", train_samples=3000,
                       test_samples=500)  # fmt: skip
    plan = Plan.from_config(config, probe=_no_probe)
    workload = plan.workloads["cifar10-cnn"]
    size = workload_bounds.workload_size(0, workload)
    (job, _), (trainer, _) = workload_bounds.workload_needs(size, workload, plan.targets)[:2]
    data = workload.data
    path = tmp_path / "arrays.npz"
    tracemalloc.start()
    try:
        write_synthetic(path, data.input_shape, data.input_dtype, data.classes,
                        size.n_train, size.n_test, seed=0)  # fmt: skip
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        read_arrays(path)
        read_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size.arrays_bytes <= path.stat().st_size < 1.01 * size.arrays_bytes
    assert job.bytes <= peak and size.arrays_bytes <= read_peak
    assert trainer.bytes == memory.TRAINER_BASE_MIB * 2**20 + size.arrays_bytes


def test_a_workloads_data_larger_than_the_free_space_is_refused_at_plan_time(
    tmp_path, monkeypatch, capsys
):
    """Its arrays file and, in files input, its training images as JPEG files (at least the
    smallest JPEG each), the workloads' together, against the outdir's free space."""
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 0, 2**30))
    monkeypatch.setattr(hardware, "memory_mib", lambda: MACHINE_MIB)
    one = {"name": "catsdogs-cnn", "data": "synthetic", "input": "files",
           "train_samples": 60_000, "test_samples": 1}  # fmt: skip
    Plan.from_config(_set(_offline(tmp_path), workloads=[one]), probe=_no_probe)
    two = [one, {**one, "name": "catsdogs-two", "catalog": "catsdogs-cnn"}]
    config = _set(_offline(tmp_path), workloads=two)
    with pytest.raises(ConfigError) as err:
        Plan.from_config(config, probe=_no_probe)
    assert str(err.value) == (
        "workloads[1] (catsdogs-two): its data would take at least 739 MiB on disk (its "
        "arrays file, 703 MiB (60,000 training and 1 test SYNTHETIC samples of 64x64x3 uint8, "
        "12,288 bytes each, with int32 labels); its 60,000 training images as JPEG files, "
        "36.1 MiB (the smallest a JPEG file is, 631 bytes); an estimate, a lower bound; with "
        "the workloads before it, 1.4 GiB), and 1.0 GiB is free on the device of "
        f"{tmp_path}: lower workloads[1].train_samples, workloads[1].test_samples or "
        "workloads[1].input_shape, free space, or point outdir elsewhere"
    )
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cli.main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_smallest_jpeg_is_a_lower_bound_of_the_files_mode(tmp_path):
    from embryo_bench.data.imagefolder import write_image_folder

    for channels in (1, 3):
        x = np.zeros((2, 1, 1, channels), np.uint8)
        paths = write_image_folder(x, np.zeros(2, np.int32), tmp_path / str(channels), ["a"])
        assert min(p.stat().st_size for p in paths) >= workload_bounds.JPEG_MIN_BYTES[channels]


# --- the disk: at plan time, before writing, and a full disk while writing -----------------


def test_a_database_larger_than_the_free_space_is_refused_at_plan_time(small_device, tmp_path):
    config = _set(
        offline_config(small_device / "out"),
        dataset__frame_size=480,
        dataset__synthetic__frames_per_embryo=40,
    )
    with pytest.raises(ConfigError) as err:
        Plan.from_config(config, probe=_no_probe)
    assert str(err.value).startswith(
        f"dataset.synthetic: {small_device}/out/data/synthetic: the synthetic database would "
        "take at least 56.2 MiB (400 frames of 480x480 px at 0.64 bytes per px or more as PNG"
    )
    assert f"4.0 MiB is free on the device of {small_device}" in str(err.value)
    # Once generated (its record there), the database is not checked again.
    (small_device / "out/data").mkdir(parents=True)
    (small_device / "out/data/synthetic.json").write_text("{}")
    Plan.from_config(config, probe=_no_probe)


def test_synthesize_refuses_before_writing_what_cannot_fit(small_device, capsys):
    args = ["synthesize", "--out", str(small_device / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "480"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"embryo-bench: error: {small_device}/db: the synthetic database would take at least "
        "6.3 MiB (45 frames of 480x480 px"
    )
    assert list(small_device.iterdir()) == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_while_generating_is_one_line_and_keeps_nothing(
    small_device, capsys, monkeypatch, jobs
):
    """The free-space check passed (its estimate made 0 here), then the device fills up:
    one line (66 lines of traceback before, with --jobs 2), and no database folder left."""
    monkeypatch.setattr(synthetic, "PNG_BYTES_PER_PX", 0)
    args = ["synthesize", "--out", str(small_device / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "480", "--jobs", jobs]
    args += ["--info", str(small_device / "info.json")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"embryo-bench: error: {small_device}/db: the device filled up while writing 45 "
        "synthetic frames of 480x480 px (No space left on device;"
    )
    assert "with nothing of it kept" in err
    assert list(small_device.iterdir()) == []


def test_synthesize_writes_the_same_database_through_its_staging_folder(tmp_path):
    args = ["synthesize", "--out", str(tmp_path / "db"), "--embryos", "5"]
    args += ["--frames-per-embryo", "9", "--frame-size", "16", "--trailing-separator"]
    assert cli.main(args) == 0
    synthetic.generate_db(
        tmp_path / "direct", embryos=5, frames_per_embryo=9, frame_size=16, trailing_separator=True
    )
    ours = sorted(p.relative_to(tmp_path / "db") for p in (tmp_path / "db").rglob("*"))
    direct = sorted(p.relative_to(tmp_path / "direct") for p in (tmp_path / "direct").rglob("*"))
    assert ours == direct
    for rel in direct:
        if (tmp_path / "direct" / rel).is_file():
            assert (tmp_path / "db" / rel).read_bytes() == (tmp_path / "direct" / rel).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "direct"]  # no staging left


# --- the index stage: a split without test embryos, before writing -------------------------


def _index_args(root: Path, out: Path, layout: str = "db") -> list[str]:
    args = ["index", "--layout", layout, "--root", str(root), "--frame-size", "48"]
    args += ["--dataset", "local", "--label", "x", "--out", str(out / "manifest.csv")]
    return args + ["--source-info", str(out / "source.json")]


def test_index_refuses_a_split_without_test_embryos(db_copy, tmp_path, capsys):
    for embryo in ("E00", "E05"):
        shutil.rmtree(db_copy / embryo)
    assert cli.main(_index_args(db_copy, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert err == (
        f"embryo-bench: error: {db_copy}: split.test_mod 5, split.test_remainder 0 (test: "
        "embryo number mod 5 == 0), embryos E01, E02, E03, E04, E06, E07, E08, E09: no test "
        "embryo: change split\n"
    )
    assert not (tmp_path / "out").exists()


def test_index_refuses_an_image_folder_without_a_test_folder(tmp_path, capsys):
    from PIL import Image

    for k in range(4):
        folder = tmp_path / "images/Train" / str(k)
        folder.mkdir(parents=True)
        Image.new("L", (48, 48)).save(folder / "a.png")
    assert cli.main(_index_args(tmp_path / "images", tmp_path / "out", "imagefolder")) == 2
    err = capsys.readouterr().err
    assert err == (
        f"embryo-bench: error: {tmp_path}/images (split by its folders <split>/<class>/): "
        "no test frame: add a Test/ folder\n"
    )
    assert not (tmp_path / "out").exists()


def test_index_refuses_a_class_in_one_split_only(db_copy, tmp_path, capsys):
    """The test embryos' 3-cell lines turned into 4 cells: the test split has no 3-cell
    frame while the training split has them."""
    for embryo in ("E00", "E05"):
        traj = db_copy / embryo / "_trajectories.txt"
        lines = []
        for line in traj.read_text().splitlines():
            v = line.split("\t")
            if sum(int(r) > 0 for r in v[2::3]) == 3:
                v[15:18] = ["5", "5", "3"]  # a fourth cell
            lines.append("\t".join(v))
        traj.write_text("\n".join(lines) + "\n")
    assert cli.main(_index_args(db_copy, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert "no test frame with 3 cells (the other split has them)" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()

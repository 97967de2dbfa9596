"""The gpu image built where no GPU can run it: each image's build context
holds its own wheelhouse only (a cpu build never sends the 3.2 GiB of gpu wheels), a gpu image
whose TensorFlow is not a CUDA build is refused where it is built, and - when asked for, as
.ci/run does after the suite - the gpu image is built through the workflow and trains on the
CPU. That last test takes minutes (8 min 34 s on the 2-core Zen 3 VM) and ~19 GiB of disk, so
it runs only when EMBRYO_BENCH_REQUIRE names "gpu-image", and there only when what decides the
gpu image (:data:`RECORD_FILES` and the code of the commands that fetch its wheels and build
it) differs from :data:`RECORD`, the last build that passed, or when
EMBRYO_BENCH_GPU_IMAGE=build; a passing build rewrites the record (commit it with the change
it verified). The trainer that runs in it is the cpu image's, trained in every CI run.
Everything that needs a GPU stays in tests/test_docker.py (test_gpu_target_samples_nvml),
skipped without one."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from embryo_bench.errors import DockerError
from embryo_bench.runners.containers import (
    WHEELHOUSE_ROOT,
    build_context_files,
    check_cuda_build,
    requirements_file,
    wheelhouse_dir,
)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from conftest import require_or_skip  # noqa: E402
from verified_records import Verified  # noqa: E402
from workflow_helpers import locked_versions, offline_config, snakemake  # noqa: E402

#: The last gpu-image build that passed: what decided it (:func:`build_identity`), when, where.
RECORD = Path(__file__).with_name("gpu-image-verified.json")
#: The files that decide the gpu image besides the commands' code: its Dockerfile (shared
#: with the cpu image), its hash-locked requirements, what the build context leaves out and
#: the rules that run the commands.
RECORD_FILES = (
    "containers/Dockerfile",
    requirements_file("gpu"),
    ".dockerignore",
    "workflow/rules/images.smk",
)
#: The embryo-bench commands that fetch the gpu image's wheels and build it.
RECORD_COMMANDS = ("wheelhouse", "build-image")


#: What a passing build verified.
VERIFIED = Verified(
    RECORD,
    commands=RECORD_COMMANDS,
    files=RECORD_FILES,
    setting=("EMBRYO_BENCH_GPU_IMAGE", "build"),
)


def build_identity(repo: Path = REPO) -> dict:
    """What a gpu-image build verifies: the code hash of each of :data:`RECORD_COMMANDS` and
    the sha256 of each of :data:`RECORD_FILES` in ``repo``."""
    return VERIFIED.identity(repo)


def rebuild_reason(repo: Path = REPO, record: Path = RECORD) -> str | None:
    """Why the gpu image is built in this run (None: it is as :data:`RECORD` verified):
    EMBRYO_BENCH_GPU_IMAGE=build, no record, or what changed since it."""
    return VERIFIED.reason(repo, record)


def test_the_gpu_image_is_rebuilt_when_what_decides_it_changes(tmp_path, monkeypatch):
    """The record holds today's identity (else CI builds the image); an edit to any of its
    files, or no record, asks for a build."""
    monkeypatch.delenv("EMBRYO_BENCH_GPU_IMAGE", raising=False)
    repo = tmp_path / "repo"
    for name in RECORD_FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, repo / name)
    shutil.copytree(REPO / "src/embryo_bench", repo / "src/embryo_bench")
    record = tmp_path / "record.json"
    assert rebuild_reason(repo, record) == "no record.json"
    record.write_text(json.dumps(build_identity(repo)))
    assert rebuild_reason(repo, record) is None
    with open(repo / requirements_file("gpu"), "a") as lock:
        lock.write("# an edit\n")
    assert rebuild_reason(repo, record) == f"changed since record.json: {requirements_file('gpu')}"
    monkeypatch.setenv("EMBRYO_BENCH_GPU_IMAGE", "build")
    assert rebuild_reason(repo, record) == "EMBRYO_BENCH_GPU_IMAGE=build"


def _fake_repo(root: Path) -> Path:
    """The repository's .dockerignore over a few files and a wheel in each image's folder
    (and one left at the wheelhouse's top, as before each image had its own folder)."""
    shutil.copy(REPO / ".dockerignore", root / ".dockerignore")
    for name in (
        "containers/Dockerfile",
        "containers/requirements-cpu.lock",
        "containers/requirements-gpu.lock",
        "pyproject.toml",
        "README.md",
        "src/embryo_bench/__init__.py",
        f"{WHEELHOUSE_ROOT}/.keep",
        f"{WHEELHOUSE_ROOT}/flat-1.0-py3-none-any.whl",
        f"{wheelhouse_dir('cpu')}/tensorflow_cpu-1.0-py3-none-any.whl",
        f"{wheelhouse_dir('gpu')}/nvidia_cudnn_cu12-1.0-py3-none-any.whl",
        "results/big.npz",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    return root


@pytest.mark.parametrize("image", ["cpu", "gpu"])
def test_a_build_context_holds_its_own_wheelhouse_only(tmp_path, image):
    repo = _fake_repo(tmp_path)
    files = build_context_files(repo, image, "wheelhouse")
    wheels = [f for f in files if f.endswith(".whl")]
    other = "gpu" if image == "cpu" else "cpu"
    assert wheels and all(f.startswith(wheelhouse_dir(image) + "/") for f in wheels), files
    assert not any(f.startswith(wheelhouse_dir(other)) for f in files), files
    assert f"{WHEELHOUSE_ROOT}/.keep" in files  # COPY containers/wheelhouse/ always finds it
    assert {
        "containers/Dockerfile",
        requirements_file(image),
        "src/embryo_bench/__init__.py",
    } <= set(files)
    assert not any(f.startswith("results") for f in files)  # .dockerignore still applies
    # From PyPI, no wheel travels.
    assert not any(f.endswith(".whl") for f in build_context_files(repo, image, "pypi"))


def test_the_shipped_wheelhouse_folders_are_apart():
    """The real repository: whatever its wheelhouse folders hold, a cpu context holds no
    gpu wheel and the other way round."""
    for image, other in (("cpu", "gpu"), ("gpu", "cpu")):
        files = build_context_files(REPO, image, "wheelhouse")
        assert not any(f.startswith(wheelhouse_dir(other) + "/") for f in files)
        assert not any(
            f.endswith(".whl") and not f.startswith(wheelhouse_dir(image) + "/") for f in files
        )


#: tf.sysconfig.get_build_info() in the gpu image (tensorflow 2.21.0), as built 2026-11-25.
CUDA_BUILD = {
    "cpu_compiler": "clang",
    "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
    "cuda_version": "12.5.1",
    "cudnn_version": "9",
    "is_cuda_build": True,
    "is_rocm_build": False,
    "is_tensorrt_build": False,
}


def test_a_gpu_image_must_hold_a_cuda_build():
    check_cuda_build(CUDA_BUILD, "embryo-bench/gpu:t", "containers/requirements-gpu.lock")
    cpu_build = {"is_cuda_build": False, "is_rocm_build": False, "is_tensorrt_build": False}
    with pytest.raises(DockerError, match=r"embryo-bench/gpu:t: TensorFlow from containers/"):
        check_cuda_build(cpu_build, "embryo-bench/gpu:t", "containers/requirements-gpu.lock")
    for key in ("cuda_version", "cudnn_version"):
        with pytest.raises(DockerError, match=rf"missing \['{key}'\]"):
            check_cuda_build({**CUDA_BUILD, key: ""}, "g", "containers/requirements-gpu.lock")


def test_the_gpu_image_builds_and_trains_on_the_cpu(tmp_path):
    """The workflow builds the gpu image from its wheelhouse (hash-locked), TensorFlow in it
    is a CUDA build, and a docker target on it with no GPU trains one epoch of the tiny
    config on one core: everything a GPU user runs, but the GPU. Minutes and ~19 GiB of
    disk: only when EMBRYO_BENCH_REQUIRE names gpu-image (.ci/run's step of its own), and
    there only when :func:`rebuild_reason` gives one."""
    required = os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split()
    if "gpu-image" not in required:
        pytest.skip("builds the gpu image (6.5 GiB): set EMBRYO_BENCH_REQUIRE=gpu-image")
    why = rebuild_reason()
    if why is None:
        pytest.skip(
            f"the gpu image's inputs are as built and verified {VERIFIED.as_verified()}: not "
            "rebuilt (EMBRYO_BENCH_GPU_IMAGE=build builds it anyway)"
        )
    print(f"gpu-image: built ({why})", file=sys.stderr)
    started = time.monotonic()
    from embryo_bench.runners.docker_api import docker_client

    try:
        client = docker_client(timeout=30)
    except DockerError as exc:
        require_or_skip("docker", f"no Docker daemon: {exc}")
    config = offline_config(tmp_path / "out", docker=True, tiny=True)
    config["targets"] = [
        {"name": "docker-gpu-image", "runner": "docker", "image": "gpu", "cpus": 1}
    ]
    config.pop("cost", None)  # its base target is not among these
    config["on_missing_hardware"] = "fail"
    snakemake(tmp_path, config, timeout=3000)
    out = tmp_path / "out"
    record = json.loads((out / "images/gpu.json").read_text())
    build = record["tensorflow_build"]
    assert build["is_cuda_build"] is True and build["cuda_version"] and build["cudnn_version"]
    assert client.images.get(record["tag"]).id == record["image_id"]
    assert record["size_mib"] > 1024 and record["requirements"] == requirements_file("gpu")
    # Two stages: the image keeps the installed environment, not the wheels besides it.
    history = client.api.history(record["image_id"])
    assert not any("/tmp/wheelhouse" in (layer.get("CreatedBy") or "") for layer in history)
    run = out / "train/docker-gpu-image/repeat-1"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["runner"] == "docker" and metrics["epochs"] == 1
    assert metrics["provenance"]["container_image"] == f"{record['tag']} {record['image_id']}"
    installed = dict(p.split("==", 1) for p in metrics["provenance"]["packages"])
    locked = locked_versions(REPO / requirements_file("gpu"))
    assert {n: installed.get(n) for n in locked} == locked  # exactly the lock
    assert set(installed) - set(locked) <= {"pip", "embryo-bench"}
    assert "tensorflow" in installed and "tensorflow-cpu" not in installed
    assert metrics["telemetry"]["energy_j"].startswith("not measured")  # no GPU here
    VERIFIED.write(time.monotonic() - started)
    print(f"gpu-image: passed; {RECORD} written (commit it)", file=sys.stderr)

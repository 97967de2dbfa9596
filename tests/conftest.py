"""Shared fixtures (small synthetic databases, the real 28 px subset's location, the offline
run) and how the suite shares the machine.

The suite runs on pytest-xdist workers (``-n 2 --dist loadfile`` in pyproject.toml): each
worker is pinned to a core of its own, so the 1-cpu trainers it starts (pinned to the first
allowed core, ``hardware.run_cores``) do not share a core with the other worker's. Tests
marked ``alone`` (the interference test) run with nothing beside them: every test takes a
shared lock, an ``alone`` test an exclusive one, with a turnstile so a waiting ``alone`` test
is not starved; it gets all the worker's original cores back while it runs, as does a test
marked ``all_cores`` (2-cpu runs), which shares the machine. Expensive session fixtures
wanted by several files are made once for all workers (:func:`made_once`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest
from tls_helpers import make_pki
from workflow_helpers import offline_config, snakemake

from embryo_bench.data.synthetic import generate_db

REPO = Path(__file__).resolve().parents[1]
CELLS28 = REPO.parent / "shared" / "data" / "embryo-cells-28px"

# The heaviest files first: --dist loadfile hands whole files to workers in this order (two
# each to start with: the 1st and 3rd to one worker, the 2nd and 4th to the other), so the
# long ones start at once and short ones fill the gaps at the end. Measured seconds of each
# file's tests on 2 cores, 2026-11-23: workflow ~200, docker ~200, slurm ~160, interrupts
# ~115, report ~85, merge ~65, model_train ~55 (before the cuts that followed).
HEAVY_FIRST = [
    "test_workflow.py",
    "test_docker.py",
    "test_slurm.py",
    "test_report.py",
    "test_merge.py",
    "test_workload_runs.py",
    "test_interrupts.py",  # its 'alone' test late: waiting for a long fixture beside it idles
    "test_model_train.py",
    "test_bench_peers.py",
]

_ORIGINAL_CORES: set[int] = set()


def _worker() -> str | None:
    return os.environ.get("PYTEST_XDIST_WORKER")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "alone: runs with no other test beside it and on every core (timing, interference)",
    )
    config.addinivalue_line(
        "markers", "all_cores: runs on every core, other tests beside it (2-cpu runs)"
    )
    config.addinivalue_line(
        "markers",
        "ci_step(step, why): a minute or more of workflow runs: only in .ci/run's step of that "
        "name (EMBRYO_BENCH_REQUIRE names it), out of the README's suite and its 10 minutes",
    )
    _ORIGINAL_CORES.update(os.sched_getaffinity(0))
    worker = _worker()
    if worker and worker.startswith("gw"):
        cores = sorted(_ORIGINAL_CORES)
        os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})


def pytest_collection_modifyitems(config, items) -> None:
    def rank(item) -> int:
        name = item.path.name
        return HEAVY_FIRST.index(name) if name in HEAVY_FIRST else len(HEAVY_FIRST)

    items.sort(key=rank)  # stable: tests keep their order within a file


def _shared_root(config) -> Path | None:
    """A folder every worker of this run sees (None outside xdist)."""
    worker_input = getattr(config, "workerinput", None)
    if worker_input is None:
        return None
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"embryo-bench-{worker_input['testrunuid']}"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    with open(path, "a+") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pytest_runtest_setup(item) -> None:
    """A test marked ``ci_step(step, why)`` is skipped before its fixtures are set up (a
    fixture may be the minute of training) unless its step is required."""
    marker = item.get_closest_marker("ci_step")
    if marker is not None:
        run_only_when_required(*marker.args)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    root = _shared_root(item.config)
    if root is None:
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    widen = alone or item.get_closest_marker("all_cores") is not None
    with contextlib.ExitStack() as stack:
        with _flock(root / "turnstile.lock", fcntl.LOCK_EX):
            stack.enter_context(
                _flock(root / "tests.lock", fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
            )
        pinned = os.sched_getaffinity(0)
        if widen:
            os.sched_setaffinity(0, _ORIGINAL_CORES)
        try:
            yield
        finally:
            os.sched_setaffinity(0, pinned)


def made_once(request, tmp_path_factory, name: str, make) -> Path:
    """The folder ``name`` filled by ``make(folder)`` once for the whole run: the first
    worker to ask makes it under a lock, the others wait and reuse it. Outside xdist, once
    per session like any session fixture."""
    root = _shared_root(request.config)
    if root is None:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    folder = root / name
    with _flock(root / f"{name}.lock", fcntl.LOCK_EX):
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


@pytest.fixture(scope="session")
def small_db(tmp_path_factory) -> Path:
    """A synthetic database tree: 10 embryos x 12 frames of 48 px (read-only by convention)."""
    root = tmp_path_factory.mktemp("db")
    generate_db(root, embryos=10, frames_per_embryo=12, frame_size=48, seed=1)
    return root


@pytest.fixture
def db_copy(small_db, tmp_path) -> Path:
    """A private copy of :func:`small_db` that a test may damage."""
    dst = tmp_path / "db"
    shutil.copytree(small_db, dst)
    return dst


@pytest.fixture
def cells28() -> Path:
    if not CELLS28.is_dir():
        require_or_skip("cells28", f"real 28 px subset not found at {CELLS28}")
    return CELLS28


def nvidia_gpus() -> list[str]:
    """The GPUs ``nvidia-smi -L`` lists (none where it is missing or fails): asked of the
    driver's own tool, not of the code under test (hardware.gpu_names reads NVML)."""
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return []
    proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    return [line for line in proc.stdout.splitlines() if line.startswith("GPU ")]


def require_gpu() -> None:
    """Skip a GPU-only test where the driver lists no GPU (fail instead when
    EMBRYO_BENCH_REQUIRE names gpu)."""
    if not nvidia_gpus():
        require_or_skip("gpu", "no NVIDIA GPU here (nvidia-smi -L lists none)")


def require_or_skip(facility: str, why: str) -> None:
    """Skip a test whose ``facility`` ("docker", "slurm") is missing, with ``why`` - or fail
    it when EMBRYO_BENCH_REQUIRE names that facility (CI sets it, so a daemon that did not
    start turns the suite red instead of silently skipping its tests)."""
    required = os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split()
    if facility in required:
        pytest.fail(f"{facility} required (EMBRYO_BENCH_REQUIRE) but missing: {why}")
    pytest.skip(why)


def run_only_when_required(step: str, why: str) -> None:
    """Skip a test that belongs to one of .ci/run's own steps (minutes of training) unless
    EMBRYO_BENCH_REQUIRE names ``step`` ("catalog-runs", "paper-scale"), saying ``why``."""
    if step not in os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split():
        pytest.skip(f"{why}: set EMBRYO_BENCH_REQUIRE={step}")


@pytest.fixture
def no_docker_env(monkeypatch):
    """No Docker environment (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) for this
    test: the monkeypatch, to set some of them again."""
    for name in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Path:
    """A CA and the certificates of a Docker daemon over TLS and its clients
    (:func:`tls_helpers.make_pki`): ``server/``, ``client/`` (a DOCKER_CERT_PATH layout),
    ``other/`` (another CA's), ``garbled.pem``, ``encrypted-key.pem``. Read only."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def small_device(tmp_path):
    """A 4 MiB tmpfs (too small for the tiny model's 13 MB model.keras, or for 45 synthetic
    frames of 480 px); skipped where mounting is not allowed (needs root; fails instead when
    EMBRYO_BENCH_REQUIRE names mount)."""
    import subprocess

    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        require_or_skip("mount", f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="session")
def offline_run(request, tmp_path_factory):
    """The offline config (host TensorFlow target, 64 px: the paper's model) run once for the
    whole test run: (work dir, config, output dir, snakemake's output). Tests only read it
    (dry runs included); a test that runs jobs works on a copy."""

    def make(work: Path) -> None:
        proc = snakemake(work, offline_config(work / "out"))
        (work / "snakemake.log").write_text(proc.stdout + proc.stderr)

    work = made_once(request, tmp_path_factory, "offline", make)
    config = json.loads(json.dumps(offline_config(work / "out")))
    return work, config, work / "out", (work / "snakemake.log").read_text()


@pytest.fixture(scope="session")
def tiny_run(request, tmp_path_factory):
    """The offline config's host TensorFlow target at workflow_helpers.TINY's settings, run
    once for the whole test run: (work dir, config, output dir). Its outdir is relative
    ("out"), so :func:`copy_run` gives a test a finished workflow of its own to change.
    Read only."""

    def make(work: Path) -> None:
        snakemake(work, offline_config(Path("out"), tiny=True))

    work = made_once(request, tmp_path_factory, "tiny", make)
    return work, offline_config(Path("out"), tiny=True), work / "out"


def copy_run(work: Path, dst: Path) -> Path:
    """A copy of a finished workflow's folder (outputs, times and .snakemake kept, so the
    copy has nothing to do until a setting changes) at ``dst``."""
    shutil.copytree(work, dst, symlinks=True)
    return dst

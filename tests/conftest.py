"""Shared fixtures: small synthetic databases and the real 28 px subset's location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from workflow_helpers import offline_config, snakemake

from embryo_bench.synthetic import generate_db

REPO = Path(__file__).resolve().parents[1]
CELLS28 = REPO.parent / "shared" / "data" / "embryo-cells-28px"


@pytest.fixture(scope="session")
def small_db(tmp_path_factory) -> Path:
    """A synthetic database tree: 10 embryos x 12 frames of 48 px (read-only by convention)."""
    root = tmp_path_factory.mktemp("db")
    generate_db(root, embryos=10, frames_per_embryo=12, frame_size=48, seed=1)
    return root


@pytest.fixture
def db_copy(small_db, tmp_path) -> Path:
    """A private copy of :func:`small_db` that a test may damage."""
    import shutil

    dst = tmp_path / "db"
    shutil.copytree(small_db, dst)
    return dst


@pytest.fixture
def cells28() -> Path:
    if not CELLS28.is_dir():
        require_or_skip("cells28", f"real 28 px subset not found at {CELLS28}")
    return CELLS28


def require_or_skip(facility: str, why: str) -> None:
    """Skip a test whose ``facility`` ("docker", "slurm") is missing, with ``why`` - or fail
    it when EMBRYO_BENCH_REQUIRE names that facility (CI sets it, so a daemon that did not
    start turns the suite red instead of silently skipping its tests)."""
    required = os.environ.get("EMBRYO_BENCH_REQUIRE", "").replace(",", " ").split()
    if facility in required:
        pytest.fail(f"{facility} required (EMBRYO_BENCH_REQUIRE) but missing: {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def offline_run(tmp_path_factory):
    """The offline config (host targets) run once for the session: (work dir, config, output
    dir, CompletedProcess)."""
    work = tmp_path_factory.mktemp("offline")
    config = offline_config(work / "out")
    proc = snakemake(work, config)
    return work, config, work / "out", proc

"""One short training of every workload of the catalog in a container and on the host
(what "workloads are done" means): every catalog workload but the paper's (trained throughout
the suite) on SYNTHETIC data of its own shape, a few samples, one epoch, on docker-1cpu, and on
host-1cpu those that no study's short form trains on the host (:data:`HOST_NAMES`: .ci/run
runs every short form, config/<study>-short.yaml, in a step of its own; training them twice
cost CI minutes it does not have), through the workflow (its figures too). Each run must
finish with a positive images/s and the parameter count the catalog gives (imdb-fasttext's is
its data's: 50 x 20,000 words + 51).

It needs the Docker daemon and takes minutes (19 trainings, among them DATAmadness's
58-million-parameter CNN at 256 x 256 x 3), so it runs only when EMBRYO_BENCH_REQUIRE names
"catalog-runs" (.ci/run's step after the paper-scale one)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from embryo_bench.data import registry
from embryo_bench.studies.docs import configured
from embryo_bench.studies.registry import studies
from embryo_bench.vocabulary import layout
from embryo_bench.workloads import catalog

sys.path.insert(0, str(Path(__file__).parent))
from conftest import require_or_skip, run_only_when_required  # noqa: E402
from workflow_helpers import (  # noqa: E402
    docker_unreachable,
    snakemake,
    workload_run_dir,
    workloads_config,
)

#: Every catalog workload but the paper's.
NAMES = [n for n in catalog.catalog() if n != layout.PAPER_WORKLOAD]
#: Samples and batch: two steps of 8 and one test batch (none where the dataset has no test
#: split: the text-generation scripts held none out).
TRAIN_SAMPLES, TEST_SAMPLES, BATCH_SIZE = 16, 8, 8
REPO = Path(__file__).resolve().parents[1]


def trained_by_short_forms() -> set[str]:
    """The catalog workloads some study's short form (config/<study>-short.yaml layered over
    config/<study>.yaml, every study with a configuration: CI runs each) trains on a host
    target of at most 2 cores (CI's machine has 2: bigger ones are skipped there)."""
    from embryo_bench.vocabulary.config import read_config_files

    names = set()
    for study in configured(studies()):
        files = [str(REPO / f"config/{study.name}{s}.yaml") for s in ("", "-short")]
        config, _ = read_config_files(files)
        if any(
            t.get("runner", "host") == "host" and t.get("cpus", 1) <= 2 for t in config["targets"]
        ):
            names |= {w.get("catalog", w["name"]) for w in config.get("workloads", [])}
    return names


#: The workloads trained on host-1cpu here: those no study's short form trains on the host.
HOST_NAMES = [n for n in NAMES if n not in trained_by_short_forms()]


def expected_parameters(name: str) -> int:
    """The catalog's parameter count of ``name``; imdb-fasttext's embedding is sized by its
    data (catalog.yaml: 50 x vocabulary + 51), here the imdb dataset's vocabulary."""
    w = catalog.get(name)
    if w.parameters:
        return w.parameters
    assert name == "imdb-fasttext", f"{name}: the catalog gives no parameter count"
    return 50 * registry.get(w.dataset).vocabulary + 51


def entry(name: str) -> dict:
    """``name``'s workloads: entry: synthetic data, a few samples, one epoch of batch 8."""
    has_test = registry.get(catalog.get(name).dataset).test != 0  # None: size not known
    return {
        "name": name,
        "data": "synthetic",
        "train_samples": TRAIN_SAMPLES,
        "test_samples": TEST_SAMPLES if has_test else 0,
        "epochs": 1,
        "batch_size": BATCH_SIZE,
    }


def test_the_host_runs_here_and_the_short_forms_cover_the_catalog():
    covered = trained_by_short_forms()
    assert covered and set(HOST_NAMES) | covered >= set(NAMES)
    assert not set(HOST_NAMES) & covered


@pytest.fixture(scope="module")
def catalog_run(tmp_path_factory):
    """Every workload of :data:`NAMES` on docker-1cpu, and :data:`HOST_NAMES` on host-1cpu,
    a Snakemake run each (own output dir) that keeps going past a failed job:
    {target: output dir}."""
    run_only_when_required("catalog-runs", "19 trainings take minutes")
    if why := docker_unreachable():
        require_or_skip("docker", why)
    outs = {}
    for target, names in (("docker-1cpu", NAMES), ("host-1cpu", HOST_NAMES)):
        work = tmp_path_factory.mktemp(target)
        config = workloads_config(work / "out", [entry(n) for n in names])
        config["targets"] = [t for t in config["targets"] if t["name"] == target]
        snakemake(work, config, "-n")  # a plan refused fails here, with its message
        proc = snakemake(work, config, "--keep-going", check=False, timeout=3600)
        (work / "snakemake.log").write_text(proc.stdout + proc.stderr)
        outs[target] = work / "out"
    return outs


def last_line(path: Path) -> str:
    """The last line of a job's log (where embryo-bench says why it stopped)."""
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1] if lines else f"{path}: no log"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_catalog_workload_trains_in_a_container_and_on_the_host(catalog_run, name):
    targets = ["docker-1cpu"] + (["host-1cpu"] if name in HOST_NAMES else [])
    for target in targets:
        out = catalog_run[target]
        run = workload_run_dir(out, name, target)
        metrics = run / layout.METRICS
        log = out / "logs/workloads" / name / "train" / target / "repeat-1.log"
        assert metrics.exists(), f"{name} on {target} did not finish: {last_line(log)}"
        m = json.loads(metrics.read_text())
        where = f"{name} on {target}"
        assert (m["workload"], m["target"], m["runner"]) == (
            name, target, target.split("-")[0],
        ), where  # fmt: skip
        assert m["n_train"] == TRAIN_SAMPLES and m["epochs"] == 1, where
        assert m["batch_size"] == BATCH_SIZE, where
        assert m["mean_images_per_s"] > 0, where
        assert m["parameter_count"] == expected_parameters(name), where
        figures = out / "workloads" / name / "figures"
        log = out / "logs/workloads" / name / "figures.log"
        assert (figures / "results_table.csv").exists(), f"{where}'s figures: {last_line(log)}"
        table = pd.read_csv(figures / "results_table.csv")
        assert list(table["target"]) == [target], where
        assert "SYNTHETIC" in (figures / "results_table.md").read_text(), where

"""A workload's real dataset through the workflow: its files downloaded
from 127.0.0.1 by the registry's URL, sha256 and size (a copy of the checkout whose
datasets.yaml points at a local server holding Keras's mnist.npz and the Nietzsche text,
written small in their real formats), prepared and trained on; a file whose bytes are not
the registry's stops its job with one line naming the URL, and nothing after it runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from test_datasets import mnist_npz
from test_download import NoRangeHandler, _serve
from workflow_helpers import copy_repo, offline_config, snakemake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)"),
]

TEXT = "Supposing that truth is a woman--what then? " * 40


@pytest.fixture
def www(tmp_path):
    folder = tmp_path / "www"
    folder.mkdir()
    server = _serve(folder, NoRangeHandler)
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _point_registry_at(repo: Path, folder: Path, url: str, names: dict[str, str]) -> None:
    """Rewrite ``repo``'s datasets.yaml: each file of ``names`` (file -> dataset) served from
    ``url`` with the sha256 and size of its copy in ``folder``."""
    path = repo / "src/embryo_bench/data/datasets.yaml"
    registry = yaml.safe_load(path.read_text())
    for file, dataset in names.items():
        data = (folder / file).read_bytes()
        for f in registry["datasets"][dataset]["files"]:
            if f["name"] == file:
                f.update(url=f"{url}/{file}", sha256=hashlib.sha256(data).hexdigest(),
                         bytes=len(data))  # fmt: skip
    path.write_text(yaml.safe_dump(registry, sort_keys=False))


def _config(out: Path, workloads: list[dict]) -> dict:
    """The tiny offline configuration on host-1cpu, with ``workloads`` only."""
    config = offline_config(out, tiny=True)
    config["targets"] = [t for t in config["targets"] if t["name"] == "host-1cpu"]
    config["train"]["probe_seconds"] = 0
    config["workloads"] = workloads
    return config


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
def test_a_real_dataset_is_downloaded_checked_prepared_and_trained_on(www, tmp_path):
    folder, url = www
    served = mnist_npz(folder / "mnist.npz", n_train=40, n_test=16)
    (folder / "nietzsche.txt").write_text(TEXT, encoding="utf-8")
    repo = copy_repo(tmp_path / "repo")
    _point_registry_at(repo, folder, url, {"mnist.npz": "mnist", "nietzsche.txt": "nietzsche"})
    out = tmp_path / "out"
    config = _config(out, [
        {"name": "mnist-mlp", "epochs": 1, "batch_size": 8},
        {"name": "lstm-text-generation", "epochs": 1, "batch_size": 16, "train_samples": 64},
    ])  # fmt: skip
    snakemake(tmp_path, config, repo=repo, timeout=600)
    for file in ("mnist/mnist.npz", "nietzsche/nietzsche.txt"):
        name = file.split("/")[1]
        assert (out / "data/datasets" / file).read_bytes() == (folder / name).read_bytes()
    info = json.loads((out / "workloads/mnist-mlp/data/info.json").read_text())
    assert (info["dataset"], info["synthetic"], info["train"], info["test"]) == (
        "mnist", False, 40, 16,
    )  # fmt: skip
    assert (
        info["inputs"]["mnist.npz"]["sha256"]
        == hashlib.sha256((folder / "mnist.npz").read_bytes()).hexdigest()
    )
    metrics = json.loads(
        (out / "workloads/mnist-mlp/train/host-1cpu/repeat-1/metrics.json").read_text()
    )
    assert metrics["workload"] == "mnist-mlp" and metrics["n_train"] == len(served["y_train"])
    text = json.loads((out / "workloads/lstm-text-generation/data/info.json").read_text())
    assert text["train"] == 64 and text["test"] == 0  # the script held no test split out
    table = (out / "workloads/mnist-mlp/figures/results_table.md").read_text()
    assert "SYNTHETIC" not in table.splitlines()[0]


def test_a_file_that_is_not_the_registrys_stops_its_job_in_one_line(www, tmp_path):
    folder, url = www
    mnist_npz(folder / "mnist.npz")
    repo = copy_repo(tmp_path / "repo")
    _point_registry_at(repo, folder, url, {"mnist.npz": "mnist"})
    (folder / "mnist.npz").write_bytes(b"PK not the file the registry names")
    out = tmp_path / "out"
    proc = snakemake(tmp_path, _config(out, [{"name": "mnist-mlp"}]), repo=repo, check=False)
    assert proc.returncode != 0
    log = (out / "logs/datasets/mnist/mnist.npz.log").read_text().strip().splitlines()
    assert log[-1].startswith(f"embryo-bench: error: {url}/mnist.npz: ") and "sha256" in log[-1]
    assert not (out / "data/datasets/mnist/mnist.npz").exists()
    assert not (out / "workloads/mnist-mlp/data/arrays.npz").exists()

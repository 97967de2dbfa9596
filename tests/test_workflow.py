"""The workflow run for real: `snakemake` subprocesses on the offline config and on damaged
inputs, checking outputs' contents, DAG caching and errors."""

from __future__ import annotations

import copy
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import copy_run
from workflow_helpers import (
    TINY_PARAMETERS,
    copy_repo,
    edit,
    evaluate,
    job_counts,
    local_config,
    offline_config,
    snakemake,
    snakemake_command,
    synthetic_db,
    train_command,
    write_spec,
)

from embryo_bench.data.synthetic import generate_db, zip_tree

REPO = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)"),
]


def test_offline_outputs(offline_run):
    _, config, out, _ = offline_run
    manifest = pd.read_csv(out / "manifest/manifest.csv", keep_default_na=False)
    assert list(manifest.columns) == ["embryo", "frame", "path", "cells", "split"]
    assert len(manifest) == 10 * 12
    sel = pd.read_csv(out / "select/selected.csv", keep_default_na=False)
    per_class = sel["cells"].value_counts()
    assert per_class.nunique() == 1 and sorted(per_class.index) == [1, 2, 3, 4]
    assert per_class.iloc[0] == manifest["cells"].value_counts().min()  # rarest class whole
    # Split by embryo: test embryos are those whose number mod 5 == 0, never in both splits.
    by_embryo = sel.groupby("embryo")["split"].unique()
    assert all(len(s) == 1 for s in by_embryo)
    assert {e for e, s in by_embryo.items() if s[0] == "test"} == {"E00", "E05"}

    shards = range(config["select"]["shards"])
    crop = [np.load(out / f"crop/shard-{k}.npz") for k in shards]
    assert all(c["images"].shape[1:] == (64, 64) for c in crop)  # 2/3 of 96 px
    inv = [np.load(out / f"invert/shard-{k}.npz") for k in shards]
    assert max(int(i["images"].max()) for i in inv) <= 128
    aug = [np.load(out / f"augment/shard-{k}.npz") for k in shards]
    n_frames = sum(len(c["images"]) for c in crop)
    assert n_frames == len(sel)
    assert sum(len(a["images"]) for a in aug) == 20 * n_frames
    assert all(a["images"].shape[1:] == (64, 64) and a["images"].dtype == np.uint8 for a in aug)
    assert sorted(set(np.concatenate([a["angle"] for a in aug]).tolist())) == [
        18.0 * k for k in range(20)
    ]
    # Rows i*20 .. i*20+19 are one frame's 20 rotations, in angle order.
    assert len(set(aug[0]["frame"][:20])) == 1 and aug[0]["frame"][20] != aug[0]["frame"][0]
    assert aug[0]["angle"][:20].tolist() == [18.0 * k for k in range(20)]
    assert (aug[0]["cells"][:20] == aug[0]["cells"][0]).all()

    run = out / "train/host-1cpu/repeat-1"
    history = pd.read_csv(run / "history.csv")
    assert history["epoch"].tolist() == [1, 2]
    assert (history["epoch_seconds"] > 0).all() and (history["images_per_s"] > 0).all()
    assert history["test_accuracy"].between(0, 1).all()
    metrics = json.loads((run / "metrics.json").read_text())
    n_test = int((sel["split"] == "test").sum()) * 20
    assert metrics["n_train"] + metrics["n_test"] == 20 * len(sel) and metrics["n_test"] == n_test
    assert metrics["parameter_count"] == 16_834_436
    assert metrics["provenance"]["dataset"]["sha256"] == "synthetic"
    assert metrics["provenance"]["seed"] == 0 and metrics["provenance"]["cpu_model"]
    # The whole environment, as pip itself lists it: the host run is this venv.
    from packaging.utils import canonicalize_name

    listed = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pip_list = {f"{canonicalize_name(d['name'])}=={d['version']}" for d in json.loads(listed)}
    assert set(metrics["provenance"]["packages"]) == pip_list
    assert any(p.startswith("keras==") for p in metrics["provenance"]["packages"])
    assert metrics["training_seconds"] == pytest.approx(history["epoch_seconds"].sum())
    assert metrics["repeat"] == 1 and metrics["seed"] == 0 and metrics["backend"] == "tensorflow"
    # The host runner samples itself: one row a second, CPU % of one core, resident memory.
    telemetry = pd.read_csv(run / "telemetry.csv")
    assert len(telemetry) >= int(metrics["training_seconds"]) - 1
    assert telemetry["memory_mib"].gt(100).all() and telemetry["cpu_percent"].between(0, 150).all()
    assert metrics["telemetry"]["memory_mib_peak"] == pytest.approx(telemetry["memory_mib"].max())

    for name in ("fig1_preprocessing", "fig4_test_accuracy", "fig5_6_training_time", "throughput"):
        for ext in ("png", "pdf"):
            assert (out / f"figures/{name}.{ext}").stat().st_size > 1000
    table = pd.read_csv(out / "figures/results_table.csv")
    assert table["target"].tolist() == ["host-1cpu"]
    assert "SYNTHETIC" in table["data"].iloc[0]
    assert "SYNTHETIC" in (out / "figures/results_table.md").read_text()


def test_a_run_ends_with_the_answer(offline_run):
    """What a user reads last: the comparison and cost tables, under their paths."""
    _, _, out, output = offline_run
    for table in ("comparison_table.md", "cost_table.md"):
        path = out / "figures" / table
        assert f"## {path}" in output and path.read_text().strip() in output
    assert f"figures and every table: {out}/" in output


def test_second_run_has_nothing_to_do(offline_run):
    work, config, _, _ = offline_run
    proc = snakemake(work, config, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_rotation_step_change_reruns_only_augment_onwards(offline_run):
    work, config, _, _ = offline_run
    changed = json.loads(json.dumps(config))
    # 15 rotations: still more training images than a batch (the plan refuses fewer)
    changed["preprocess"]["rotation_step"] = 24
    proc = snakemake(work, changed, "-n")
    jobs = job_counts(proc.stdout)
    # The run's spec (run.json) holds the preprocessing it expects, so it is rewritten;
    # figures (and the configuration it records for the report) follow; nothing upstream.
    expected = {"augment": 2, "run_spec": 1, "train": 1, "figures_spec": 1, "figures": 1}
    expected["all"] = 1
    assert jobs == expected, proc.stdout[-3000:]


def test_a_price_edit_reruns_the_figures_only(offline_run):
    work, config, _, _ = offline_run
    changed = json.loads(json.dumps(config))
    changed["targets"][0]["hourly_usd"] = 1.23
    jobs = job_counts(snakemake(work, changed, "-n").stdout)
    assert jobs == {"figures_spec": 1, "figures": 1, "all": 1}


def test_code_edits_rerun_the_jobs_that_run_that_code(offline_run, tmp_path):
    """Code hashes follow each command's imports and ignore comments and docstrings: the
    same outputs seen through an edited copy of the repository."""
    work, config, _, _ = offline_run
    repo = copy_repo(tmp_path / "repo")
    pkg = repo / "src" / "embryo_bench"
    proc = snakemake(work, config, "-n", repo=repo)
    assert "Nothing to be done" in proc.stdout + proc.stderr
    edit(pkg / "data/preprocess.py", '"""Rotate a uint8', '# a new comment\n    """Turn a uint8')
    edit(
        pkg / "data/preprocess.py",
        "from __future__ import annotations",
        "from __future__ import (annotations)",
    )
    proc = snakemake(work, config, "-n", repo=repo)
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    edit(pkg / "workloads/paper.py", 'name="paper_cnn"', 'name="paper_cnn_v2"')
    jobs = job_counts(snakemake(work, config, "-n", repo=repo).stdout)
    assert jobs == {"train": 1, "figures": 1, "all": 1}


def test_each_run_records_its_spec_and_the_datas_settings(offline_run):
    """run.json is the run's resolved settings; settings.json holds the preprocessing read
    from the shards the run trained on."""
    _, config, out, _ = offline_run
    from embryo_bench.data.stages import shard_settings
    from embryo_bench.vocabulary.spec import Preprocessing, RunSpec

    run = out / "train/host-1cpu/repeat-1"
    spec = RunSpec.read(run / "run.json")
    # config/offline.yaml's settings and host-1cpu's, as written there:
    assert (spec.target, spec.repeat, spec.runner, spec.cpus, spec.threads, spec.gpus) == (
        "host-1cpu",
        1,
        "host",
        1,
        1,
        0,
    )
    assert (spec.epochs, spec.batch_size, spec.learning_rate, spec.dropout, spec.seed) == (
        2,
        480,
        0.0001,
        0.5,
        0,
    )
    assert (spec.backend, spec.variant, spec.container, spec.sweep) == (
        "tensorflow",
        "keras",
        None,
        None,
    )
    assert spec.preprocessing.to_dict() == {
        "frame_size": 96,
        "crop_fraction": 0.6666666667,
        "invert_centre": 128,
        "rotation_step": 18.0,
        "image_size": 64,
    }
    settings = json.loads((run / "settings.json").read_text())
    shard = shard_settings(out / "augment/shard-0.npz")["preprocessing"]
    assert settings["preprocessing"] == Preprocessing.from_dict(shard).to_dict()
    assert Preprocessing.from_dict(settings["preprocessing"]) == Preprocessing.from_config(config)


def _class_folder_copy(work: Path, frame_size: int) -> Path:
    """Synthetic frames (other seed) arranged as <class>/<name>.png for evaluate."""
    db = work / "eval-db"
    generate_db(db, embryos=2, frames_per_embryo=24, frame_size=frame_size, seed=99)
    from embryo_bench.data.sources import index_db

    manifest, _ = index_db(db, frame_size)
    root = work / "eval-images"
    for row in manifest.itertuples():
        dst = root / "Test" / str(row.cells - 1)
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy(row.path, dst / f"{row.embryo}_{row.frame}.png")
    return root


def test_evaluate_command(offline_run):
    work, config, out, _ = offline_run
    images = _class_folder_copy(work, config["dataset"]["frame_size"])
    n = len(list(images.rglob("*.png")))
    for target in (images, images / "Test"):  # split folders, or class folders directly
        proc = evaluate(out / "train/host-1cpu/repeat-1/model.keras", target)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["n"] == n
        confusion = np.array(result["confusion"])
        assert confusion.shape == (4, 4) and confusion.sum() == n
        assert result["accuracy"] == pytest.approx(np.trace(confusion) / n)


def test_evaluate_reproduces_the_runs_test_accuracy(offline_run):
    """Scoring the run's own test frames with --all-rotations must give the accuracy the
    training run measured: evaluate rebuilt the preprocessing from settings.json."""
    work, _, out, _ = offline_run
    sel = pd.read_csv(out / "select/selected.csv", keep_default_na=False)
    root = work / "own-test"
    for row in sel[sel["split"] == "test"].itertuples():
        dst = root / str(row.cells - 1)
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy(row.path, dst / f"{row.embryo}_{row.frame}.png")
    proc = evaluate(out / "train/host-1cpu/repeat-1/model.keras", root, "--all-rotations")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    metrics = json.loads((out / "train/host-1cpu/repeat-1/metrics.json").read_text())
    assert result["n"] == metrics["n_test"] and result["rotations"] == 20
    assert result["accuracy"] == pytest.approx(metrics["final_test_accuracy"], abs=2 / result["n"])


def test_evaluate_rejects_other_frame_size(offline_run, cells28):
    _, _, out, _ = offline_run
    proc = evaluate(out / "train/host-1cpu/repeat-1/model.keras", cells28, check=False)
    assert proc.returncode == 2
    assert "frame is 28x28 px; expected 96x96" in proc.stderr


def test_config_typo_is_rejected_before_any_job(tmp_path):
    config = offline_config(tmp_path / "out")
    config["preprocess"]["rotaton_step"] = 18
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0
    assert "rotaton_step" in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("train", "batch_size", 0, "batch_size"),
        ("preprocess", "rotation_step", 400, "rotation_step"),
        ("dataset", "kind", "ftp", "kind"),
        ("split", "test_remainder", 5, "split.test_remainder (5) must be below split.test_mod"),
    ],
)
def test_config_impossible_value_is_rejected(tmp_path, section, key, value, message):
    config = offline_config(tmp_path / "out")
    config[section][key] = value
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


def test_config_source_without_path_is_rejected(tmp_path):
    config = offline_config(tmp_path / "out")
    config["dataset"] = {"kind": "imagefolder", "frame_size": 28}
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0 and "'path' is a required property" in proc.stdout + proc.stderr


def test_a_damaged_image_folder_is_named_in_one_line_when_the_workflow_is_planned(tmp_path):
    """A link to a missing image in a folder read in place crashed the
    plan's stamp of the folder with a traceback; Snakemake and check-config name it."""
    images = _class_folder_copy(tmp_path, 48)
    (images / "Test/0/gone.png").symlink_to(images / "nowhere.png")
    config = offline_config(tmp_path / "out")
    config["dataset"] = {"kind": "imagefolder", "path": str(images), "frame_size": 48}
    proc = snakemake(tmp_path, config, "--dry-run", check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{images}/Test/0/gone.png: a link to a missing file" in said, said[-3000:]
    # Snakemake names where its WorkflowError was raised (common.smk), and nothing deeper.
    assert "Traceback" not in said and "src/embryo_bench/" not in said, said[-3000:]
    assert said.count('File "') <= 1, said[-3000:]
    check = subprocess.run(
        [sys.executable, "-m", "embryo_bench.cli", "check-config", str(tmp_path / "config.yaml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert check.returncode == 2 and "gone.png: a link to a missing file" in check.stderr


def test_imagefolder_source(tmp_path):
    images = _class_folder_copy(tmp_path, 48)
    (images / "Train").mkdir()
    for cls in ("0", "1", "2", "3"):  # a few frames of each class become training data
        (images / "Train" / cls).mkdir()
        for p in sorted((images / "Test" / cls).glob("*.png"))[:2]:
            shutil.move(p, images / "Train" / cls / p.name)
    config = offline_config(tmp_path / "out")
    config["dataset"] = {
        "kind": "imagefolder",
        "path": str(images),
        "frame_size": 48,
        "label": "synthetic frames in an image folder (SYNTHETIC)",
    }
    config["select"]["shards"] = 1
    snakemake(tmp_path, config, "--until", "augment")
    summary = json.loads((tmp_path / "out/select/summary.json").read_text())
    per_class = [sum(summary[s].get(c, 0) for s in ("train", "test")) for c in "1234"]
    assert len(set(per_class)) == 1 and summary["total"] == 4 * per_class[0]
    aug = np.load(tmp_path / "out/augment/shard-0.npz")
    assert len(aug["images"]) == 20 * summary["total"]
    # Changing the images reruns indexing (the source is read in place).
    next((images / "Train" / "0").glob("*.png")).touch()
    proc = snakemake(tmp_path, config, "--until", "augment", "-n")
    assert "index" in job_counts(proc.stdout)


def test_garbled_trajectories_fail_index(tmp_path):
    db = synthetic_db(tmp_path)
    (db / "E03" / "_trajectories.txt").write_text("1\t2\t3\n4\t5\n")
    proc = snakemake(tmp_path, local_config(tmp_path, db), check=False)
    assert proc.returncode != 0
    log = (tmp_path / "out/logs/index.log").read_text()
    assert "E03/_trajectories.txt, line 2: 2 fields; expected a non-empty multiple of 3" in log
    assert not (tmp_path / "out/manifest/manifest.csv").exists()


def test_jobs_use_snakemakes_interpreter_without_an_activated_venv(tmp_path):
    # `/path/to/venv/bin/snakemake` with the venv not activated ran the
    # jobs with whatever `python3` came first on PATH. A decoy python3 first on PATH stands
    # for the system's interpreter without the packages.
    decoy = tmp_path / "decoy-bin"
    decoy.mkdir()
    (decoy / "python3").write_text("#!/bin/sh\necho decoy python3 ran >&2\nexit 3\n")
    (decoy / "python3").chmod(0o755)
    config = local_config(tmp_path, synthetic_db(tmp_path))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = snakemake_command(tmp_path / "config.yaml", str(tmp_path / "out/manifest/manifest.csv"))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{decoy}:/usr/bin:/bin"
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    log = (tmp_path / "out/logs/index.log").read_text()
    assert proc.returncode == 0, proc.stderr[-3000:] + log
    assert "decoy" not in log
    assert (tmp_path / "out/manifest/manifest.csv").exists()


def test_corrupt_png_fails_crop_and_leaves_no_shard(tmp_path):
    db = synthetic_db(tmp_path)
    frame = db / "E03" / "Frame008.png"  # a 3-cell frame: the rarest class is kept whole
    frame.write_bytes(frame.read_bytes()[:60])
    config = local_config(tmp_path, db)
    config["select"]["shards"] = 1
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0
    sel = pd.read_csv(tmp_path / "out/select/selected.csv", keep_default_na=False)
    assert "Frame008" in set(sel.loc[sel["embryo"] == "E03", "frame"])
    log = (tmp_path / "out/logs/crop/shard-0.log").read_text()
    assert "E03/Frame008.png: corrupt or truncated PNG" in log
    assert not (tmp_path / "out/crop/shard-0.npz").exists()
    assert not list((tmp_path / "out/crop").glob("*.npz"))


def test_empty_class_fails_select(tmp_path):
    db = synthetic_db(tmp_path)
    for traj in db.glob("E*/_trajectories.txt"):  # turn every 3-cell line into 4 cells
        lines = []
        for line in traj.read_text().splitlines():
            v = line.split("\t")
            if sum(int(r) > 0 for r in v[2::3]) == 3:
                v[15:18] = ["5", "5", "3"]  # an empty grand-daughter slot
            lines.append("\t".join(v))
        traj.write_text("\n".join(lines) + "\n")
    proc = snakemake(tmp_path, local_config(tmp_path, db), check=False)
    assert proc.returncode != 0
    assert (
        "no frames with [3] cells after selection" in (tmp_path / "out/logs/select.log").read_text()
    )
    assert not (tmp_path / "out/select/selected.csv").exists()


def _serve(directory: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_download_path_and_checksum(tmp_path):
    db = synthetic_db(tmp_path)
    www = tmp_path / "www"
    www.mkdir()
    archive = zip_tree(db, www / "MouEmbTrkDtb.zip", prefix="MouEmbTrkDtb")
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    server = _serve(www)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/MouEmbTrkDtb.zip"
        config = offline_config(tmp_path / "out")
        config["dataset"] = {
            "kind": "mouse-embryo-tracking-db",
            "url": url,
            "sha256": "f" * 64,
            "frame_size": 48,
            "retries": 0,
        }
        bad = snakemake(tmp_path, config, "--until", "select", check=False)
        assert bad.returncode != 0
        assert "sha256 mismatch" in (tmp_path / "out/logs/download.log").read_text()
        assert not (tmp_path / "out/data/MouEmbTrkDtb.zip").exists()
        config["dataset"]["sha256"] = sha
        snakemake(tmp_path, config, "--until", "select")
    finally:
        server.shutdown()
    source = json.loads((tmp_path / "out/manifest/source.json").read_text())
    assert source["sha256"] == sha and source["synthetic"] is False
    assert len(pd.read_csv(tmp_path / "out/manifest/manifest.csv")) == 120


def test_local_archive_source(tmp_path):
    db = synthetic_db(tmp_path)
    archive = zip_tree(db, tmp_path / "mirror.zip", prefix="MouEmbTrkDtb")
    config = local_config(tmp_path, archive)
    snakemake(tmp_path, config, "--until", "select")
    source = json.loads((tmp_path / "out/manifest/source.json").read_text())
    assert source["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert (tmp_path / "out/data/db/MouEmbTrkDtb/E00/_trajectories.txt").is_file()
    summary = json.loads((tmp_path / "out/select/summary.json").read_text())
    assert summary["test_embryos"] == ["E00", "E05"]


@pytest.mark.all_cores
def test_mirrored_strategy_on_two_logical_cpus(tiny_run, tmp_path):
    """strategy: mirrored trains through tf.distribute.MirroredStrategy; on a CPU host over
    two logical CPU devices (global batch 480 split across the replicas)."""
    _, config, out = tiny_run
    target = {"name": "mirrored-2", "runner": "host", "cpus": 2, "strategy": "mirrored"}
    spec = write_spec(tmp_path / "run.json", config, target, epochs=1)
    assert spec.replicas == 2  # a CPU target's replicas: its cpus as logical devices
    proc = subprocess.run(
        train_command(tmp_path / "run.json", out, tmp_path / "run"), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Using MirroredStrategy with devices" in proc.stderr
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert metrics["strategy"] == "mirrored" and metrics["replicas_in_sync"] == 2
    assert metrics["parameter_count"] == TINY_PARAMETERS and metrics["epochs"] == 1


def test_nothing_heavy_runs_beside_a_training(tmp_path):
    """Every training job takes all of the profile's bench slots and every other job one,
    so Snakemake can never start an image build, preprocessing or figures job (or a second
    training) while a run is timed."""
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    capacity = dict(r.split("=") for r in profile["resources"])["bench_slot"]
    config = offline_config(tmp_path / "out", docker=True)
    config["hardware_check"] = "none"  # plan the docker jobs without asking a daemon
    out = snakemake(tmp_path, config, "-n").stdout
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", out, re.M)
    slots = {}
    for rule, resources in jobs:
        found = re.search(r"bench_slot=(\d+)", resources)
        slots.setdefault(rule, set()).add(found.group(1) if found else "none")
    assert slots["train"] == {capacity}
    assert {"image", "base_image", "augment", "crop", "figures"} <= set(slots)
    # `all` only gathers the outputs and runs nothing.
    assert all(s == {"1"} for rule, s in slots.items() if rule not in ("train", "all")), str(slots)


def test_a_named_profiles_default_resources_reach_the_jobs(tmp_path):
    """profiles/default is applied as the workflow profile on top of any --profile; it must
    not replace that profile's default-resources (a Slurm partition, memory, runtime): with
    the slurm profile, an unknown partition was silently dropped and every job ran on the
    default one. The bench slots hold under the named profile too."""
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["bench_slot=100"],
                "default-resources": {"mem_mb": 1234, "runtime": 17, "slurm_partition": "p-x"},
            }
        )
    )
    out = snakemake(tmp_path, offline_config(tmp_path / "out"), "-n", profile=profile).stdout
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", out, re.M)
    assert {"synthesize", "crop", "train", "figures"} <= {rule for rule, _ in jobs}
    for rule, resources in jobs:
        assert "slurm_partition=p-x" in resources, (rule, resources)
        if rule != "train":  # the train rule asks for its target's memory and runtime
            assert "mem_mb=1234" in resources and "runtime=17" in resources, (rule, resources)
        assert rule == "all" or re.search(r"bench_slot=(1|100)\b", resources), (rule, resources)


def test_trajectory_rules_reach_index_and_its_log(tmp_path):
    """Frames after the last trajectory line are left out, counted in the log and source.json;
    dataset.trajectories is a params of index (a change reruns it)."""
    config = offline_config(tmp_path / "out")
    config["dataset"]["synthetic"].update(unlabelled_frames=2, separator="spaces")
    manifest = tmp_path / "out/manifest/manifest.csv"
    snakemake(tmp_path, config, str(manifest))
    source = json.loads((tmp_path / "out/manifest/source.json").read_text())
    assert source["frames"] == 10 * 14 and source["frames_labelled"] == 10 * 12
    assert source["frames_unlabelled"] == 20 and len(source["per_embryo"]) == 10
    assert len(pd.read_csv(manifest)) == 120
    log = (tmp_path / "out/logs/index.log").read_text()
    assert "20 frames after their embryo's last trajectory line (unlabelled), in 10 embryos" in log
    # The generator's settings against the index rule's: refused when the plan is made
    # (index itself says "12 lines for 14 frames", tests/test_sources.py), so the
    # manifest of the settings that work is kept.
    before = manifest.read_bytes()
    config["dataset"]["trajectories"] = {"unlabelled_frames": "error"}
    proc = snakemake(tmp_path, config, str(manifest), check=False)
    assert proc.returncode != 0
    refused = (
        "dataset.synthetic.unlabelled_frames 2 with dataset.trajectories.unlabelled_frames: "
        "error: indexing would refuse every embryo"
    )
    assert refused in proc.stdout + proc.stderr
    assert manifest.read_bytes() == before


def test_original_variant_runs_and_the_tables_say_so(tiny_run, tmp_path):
    """train.variant original reaches the run spec, the trainer (holdout left out, fixed-step
    epochs) and the results table's variant column; only the run and figures rerun."""
    work, config, _ = tiny_run
    work, config = copy_run(work, tmp_path / "work"), copy.deepcopy(config)
    # Tiny data: 8-image batches, so that the 100-odd training images make full batches.
    config["train"].update(
        epochs=1,
        batch_size=8,
        variant="original",
        original={"epoch_steps": 3, "holdout": 8, "test_subset": 16},
    )
    jobs = job_counts(snakemake(work, config, "-n").stdout)
    assert jobs == {"run_spec": 1, "train": 1, "figures_spec": 1, "figures": 1, "all": 1}, jobs
    snakemake(work, config)
    name = config["targets"][0]["name"]
    run = work / "out/train" / name / "repeat-1"
    spec = json.loads((run / "run.json").read_text())
    assert (spec["variant"], spec["epoch_steps"], spec["holdout"]) == ("original", 3, 8)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["variant"] == "original" and metrics["images_per_epoch"] == 3 * 8
    shards = sorted((work / "out/augment").glob("shard-*.npz"))
    augmented = sum(int((np.load(f)["split"] == "train").sum()) for f in shards)
    assert metrics["n_train"] == sum(metrics["label_counts_train"]) == augmented - 8
    table = pd.read_csv(work / "out/figures/results_table.csv")
    assert table["variant"].tolist() == ["original"]


@pytest.mark.ci_step("long-workflows", "3 rounds of 2 targets through the workflow")
def test_repeats_run_as_alternating_rounds_and_every_run_is_compared(tiny_run, tmp_path):
    """Two host targets x 3 rounds run in the planned order (A B, B A, A B: each
    run waits for the one planned before it), every run counts in the statistics, and the
    paired comparison's table and figure say so. Rerunning one run reruns that run alone (the
    wait is on an ancient() input)."""
    work, config, out = tiny_run
    work, config = copy_run(work, tmp_path / "work"), copy.deepcopy(config)
    a = config["targets"][0]
    b = {**a, "name": "host-1cpu-again", "description": "the same target entered twice"}
    config["targets"].append(b)
    config["train"]["repeats"] = 3
    snakemake(work, config)  # A#1 is the tiny run's, already made
    table = pd.read_csv(work / "out/figures/results_table.csv").sort_values("started_unix_s")
    ran = list(zip(table["target"], table["repeat"], strict=True))
    A, B = a["name"], b["name"]
    assert ran == [(A, 1), (B, 1), (B, 2), (A, 2), (A, 3), (B, 3)]
    assert (table["started_unix_s"].to_numpy()[1:] >= table["ended_unix_s"].to_numpy()[:-1]).all()
    summary = pd.read_csv(work / "out/figures/summary_table.csv").set_index("target")
    assert summary.loc[A, "repeats"] == summary.loc[B, "repeats"] == 3  # flagged or not
    paired = pd.read_csv(work / "out/figures/comparison_table.csv")
    assert list(paired["target"]) == [A, B]
    again = paired.iloc[1]
    assert again["throughput_pairs"] == 3
    assert again["throughput_low"] <= again["throughput_ratio"] <= again["throughput_high"]
    assert paired["order"].iloc[0] == "6 runs ran one after another in the planned order"
    assert (work / "out/figures/comparison.png").stat().st_size > 10_000
    # The Markdown a person reads has a few columns (the CSV keeps every one).
    md = (work / "out/figures/summary_table.md").read_text().splitlines()
    header = next(line for line in md if line.startswith("| target"))
    assert header.count("|") - 1 <= 7 and "throughput vs base" in header
    row = next(line for line in md if line.startswith(f"| {B} "))
    assert f"{again['throughput_ratio']:.3f} [" in row and again["throughput_verdict"] in row
    forced = f"out/train/{B}/repeat-1/metrics.json"
    jobs = job_counts(snakemake(work, config, "-n", "--forcerun", forced).stdout)
    assert jobs == {"train": 1, "figures": 1, "all": 1}, jobs


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_deleted_run_output_reruns_its_training(tiny_run, tmp_path):
    """Deleting a run's model.keras (which nothing downstream reads) or its
    telemetry.csv said "Nothing to be done"; each now reruns that training and the figures."""
    work, config = tiny_run[0], tiny_run[1]
    work = copy_run(work, tmp_path / "work")
    run = work / "out/train/host-1cpu/repeat-1"
    for name in ("model.keras", "telemetry.csv", "settings.json"):
        kept = run / f"{name}.kept"
        (run / name).rename(kept)
        proc = snakemake(work, config, "--dry-run")
        counts = job_counts(proc.stdout)
        assert counts.get("train") == 1 and counts.get("figures") == 1, (name, counts)
        kept.rename(run / name)
    assert "Nothing to be done" in snakemake(work, config, "--dry-run").stdout

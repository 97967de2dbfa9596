"""profiles/slurm on a real Slurm cluster (``bash profiles/slurm/local-cluster.sh start``
gives a one-node one): every job goes through sbatch, the training jobs get their target's
cpus and memory, the outputs equal a local run's, and failures name what failed. Skips
without a cluster (fails instead when EMBRYO_BENCH_REQUIRE names slurm, as in CI)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import require_or_skip
from workflow_helpers import REPO, offline_config, snakemake

from embryo_bench.data.synthetic import generate_db
from embryo_bench.errors import DockerError

pytestmark = pytest.mark.slow
SLURM_PROFILE = REPO / "profiles" / "slurm"
SUBMITTED = re.compile(
    r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", re.MULTILINE
)


def _cluster() -> None:
    """Skip (or fail, if required) unless a Slurm controller answers with a usable node."""
    if shutil.which("sinfo") is None:
        require_or_skip("slurm", "sinfo not found (bash profiles/slurm/local-cluster.sh start)")
    proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or not re.search(r"^(idle|mix|alloc)", proc.stdout, re.MULTILINE):
        require_or_skip("slurm", f"no Slurm node up: {proc.stdout.strip()} {proc.stderr.strip()}")


PREPROCESSING = ("synthesize", "index", "select", "crop", "invert", "augment")


def _test_profile(folder: Path, group: bool = True) -> Path:
    """profiles/slurm for tests: the first status check after 1 s instead of 5 (the plugin
    adds 10 s to the interval after each check that finds no job ended, so a 9 s job was
    seen 20 s after its submission), and the preprocessing jobs as one group job (each Slurm
    job starts its own Snakemake on the node: ~8 s apiece). Snakemake's ``--groups`` is
    documented for a user's cluster in profiles/README.md; training jobs stay one each."""
    shutil.copytree(SLURM_PROFILE, folder, dirs_exist_ok=True)
    settings = yaml.safe_load((folder / "config.yaml").read_text())
    assert settings["slurm-init-seconds-before-status-checks"] == 5  # what is replaced
    settings["slurm-init-seconds-before-status-checks"] = 1
    if group:
        settings["groups"] = [f"{rule}=preprocessing" for rule in PREPROCESSING]
    (folder / "config.yaml").write_text(yaml.safe_dump(settings))
    return folder


def _docker_up() -> bool:
    from embryo_bench.runners.docker_api import docker_client

    try:
        docker_client(timeout=10)
    except DockerError:
        return False
    return True


def _scontrol(job_id: str) -> dict[str, str]:
    """``scontrol show job`` as key -> value (MinJobAge keeps finished jobs there)."""
    text = subprocess.run(
        ["scontrol", "show", "job", job_id], capture_output=True, text=True, check=True
    ).stdout
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def _submissions(output: str) -> dict[str, tuple[str, Path]]:
    """Slurm job id and Slurm log of each submitted job, by the rule named in its log path
    ("preprocessing" for the group job of :data:`PREPROCESSING`)."""
    found = {}
    for _, slurm_id, log in SUBMITTED.findall(output):
        parts = Path(log).parts
        rule = parts[parts.index("slurm_logs") + 1].removeprefix("rule_")
        if rule.startswith("group_preprocessing_"):  # group_<name>_<its rules...>
            rule = "preprocessing"
        wildcards = "/".join(parts[parts.index("slurm_logs") + 2 : -1])
        found[f"{rule}/{wildcards}" if wildcards else rule] = (slurm_id, Path(log))
    return found


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    """The tiny offline config (its docker target too: CI requires a daemon) plus a 2-cpu host
    target, run through profiles/slurm (:func:`_test_profile`)."""
    _cluster()
    work = tmp_path_factory.mktemp("slurm")
    config = offline_config(work / "out", docker=True, tiny=True)
    if not _docker_up():
        require_or_skip("docker", "no Docker daemon for the Slurm run's docker target")
    config["targets"].append({"name": "host-2cpu", "runner": "host", "cpus": 2})
    # The bench slots would run the three trainings one after another (honest timings);
    # here they may share the node (timings are not what these tests check).
    profile = _test_profile(tmp_path_factory.mktemp("profile"))
    proc = snakemake(work, config, "--resources", "bench_slot=300", profile=profile)
    return work, config, work / "out", proc.stdout + proc.stderr


@pytest.mark.ci_step("long-workflows", "the workflow through Slurm (2 min)")
def test_every_cluster_job_went_through_slurm(slurm_run):
    work, config, out, output = slurm_run
    jobs = _submissions(output)
    targets = [t["name"] for t in config["targets"]]
    expected = {"preprocessing"}  # one group job: synthesize, index, select, crop, ...
    # The plugin joins wildcards with _: a paper run's first, its workload's folder, is "".
    expected |= {f"train/_{t}_1" for t in targets}
    assert set(jobs) == expected, output[-3000:]
    # localrules ran where snakemake runs, not as Slurm jobs.
    local = {"figures", "all", "image", "base_image", "run_spec"}
    assert not any(k.split("/")[0] in local for k in jobs)
    for slurm_id, log in jobs.values():
        job = _scontrol(slurm_id)
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", job
        assert job["WorkDir"] == str(work)
        assert log.is_file()  # kept: slurm-keep-successful-logs
    group_log = jobs["preprocessing"][1].read_text()  # the group's rules ran in that job
    assert all(f"\nlocalrule {rule}:" in group_log for rule in PREPROCESSING), group_log[-3000:]
    assert (out / "figures/results_table.csv").is_file()


@pytest.mark.ci_step("long-workflows", "the workflow through Slurm (2 min)")
def test_training_jobs_got_their_targets_resources(slurm_run):
    _, config, out, output = slurm_run
    # Slurm log folders name the wildcards joined by "_": _<target>_<repeat> (a paper
    # run's workload folder, its first, is "").
    jobs = {
        k.split("/")[1].removeprefix("_").rsplit("_", 1)[0]: v
        for k, v in _submissions(output).items()
        if k.startswith("train")
    }
    for target in config["targets"]:
        slurm_id, log = jobs[target["name"]]
        job = _scontrol(slurm_id)
        mem_mib = 4096 if target["runner"] == "docker" else 8192
        if "memory" in target:
            mem_mib = int(target["memory"][:-1]) * 1024
        assert job["NumCPUs"] == job["CPUs/Task"] == str(target["cpus"]), job
        assert job["MinMemoryNode"] == f"{mem_mib // 1024}G", job
        assert job["TimeLimit"] == "02:00:00"  # runtime_min default, 120 min
        # The run records the job it ran in (inside the container too).
        metrics = json.loads((out / f"train/{target['name']}/repeat-1/metrics.json").read_text())
        scheduler = metrics["provenance"]["scheduler"]
        assert scheduler["name"] == "slurm" and str(scheduler["job_id"]) == slurm_id
        assert scheduler["cpus_per_task"] == target["cpus"]
        assert metrics["provenance"]["visible_cores"] == target["cpus"]
        # The job's own Snakemake (on the node) saw the same resources.
        assert f"cpus_per_task={target['cpus']}," in log.read_text()


@pytest.mark.ci_step("long-workflows", "the workflow through Slurm (2 min)")
def test_outputs_equal_a_local_run(slurm_run, tiny_run):
    """Same config, same seeds: the Slurm run's arrays, tables, settings and training
    history equal the local run's (the same seed on one thread trains the same)."""
    _, _, out, _ = slurm_run
    _, local_config, local = tiny_run
    for k in range(local_config["select"]["shards"]):
        a, b = np.load(out / f"augment/shard-{k}.npz"), np.load(local / f"augment/shard-{k}.npz")
        assert a["images"].shape == b["images"].shape
        for key in ("images", "cells", "angle", "frame"):
            np.testing.assert_array_equal(a[key], b[key])
    for name in ("manifest/manifest.csv", "select/selected.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(out / name, keep_default_na=False).drop(columns="path", errors="ignore"),
            pd.read_csv(local / name, keep_default_na=False).drop(columns="path", errors="ignore"),
        )
    ours = pd.read_csv(out / "train/host-1cpu/repeat-1/history.csv")
    theirs = pd.read_csv(local / "train/host-1cpu/repeat-1/history.csv")
    assert list(ours.columns) == list(theirs.columns) and len(ours) == len(theirs)
    for column in ("train_loss", "train_accuracy", "test_loss", "test_accuracy"):
        np.testing.assert_allclose(ours[column], theirs[column], rtol=1e-5, err_msg=column)
    settings = json.loads((out / "train/host-1cpu/repeat-1/settings.json").read_text())
    assert settings == json.loads((local / "train/host-1cpu/repeat-1/settings.json").read_text())


@pytest.mark.ci_step("long-workflows", "a failing job through Slurm (35 s)")
def test_failed_job_shows_its_slurm_log_and_error(tmp_path):
    _cluster()
    db = tmp_path / "db"
    generate_db(db, embryos=10, frames_per_embryo=12, frame_size=48, seed=1)
    (db / "E03" / "_trajectories.txt").write_text("1\t2\t3\n4\t5\n")
    config = offline_config(tmp_path / "out", tiny=True)
    config["dataset"] = {"kind": "local", "path": str(db), "frame_size": 48}
    profile = _test_profile(tmp_path / "profile", group=False)  # index fails as a job of its own
    proc = snakemake(tmp_path, config, check=False, profile=profile, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    jobs = _submissions(output)
    slurm_id, log = jobs["index"]
    assert f"SLURM-job '{slurm_id}' failed, SLURM status is: 'FAILED'" in output
    assert str(log) in output and log.is_file()  # the Slurm log's path, kept
    # The rule's own log is printed (show-failed-logs) with the error naming the file.
    assert "E03/_trajectories.txt, line 2: 2 fields; expected a non-empty multiple of 3" in output
    assert _scontrol(slurm_id)["JobState"] == "FAILED"
    assert not (tmp_path / "out/manifest/manifest.csv").exists()


def test_unknown_partition_fails_with_slurms_message(tmp_path):
    _cluster()
    profile = tmp_path / "profile"
    shutil.copytree(SLURM_PROFILE, profile)
    settings = yaml.safe_load((profile / "config.yaml").read_text())
    settings["default-resources"]["slurm_partition"] = "no-such-partition"
    (profile / "config.yaml").write_text(yaml.safe_dump(settings))
    config = offline_config(tmp_path / "out")
    proc = snakemake(tmp_path, config, check=False, profile=profile, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "SLURM sbatch failed" in output
    assert "invalid partition specified: no-such-partition" in output
    assert not SUBMITTED.search(output)


def test_targets_are_checked_against_the_slurm_nodes(tmp_path):
    """With profiles/slurm, a target no node can hold is reported from sinfo (not from the
    submitting host) before any job; with on_missing_hardware: skip it is left out."""
    _cluster()
    nodes = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True, check=True
    ).stdout.split()
    too_many = max(int(n.rstrip("+")) for n in nodes) + 1
    config = offline_config(tmp_path / "out")
    config["targets"].append({"name": "huge", "runner": "host", "cpus": too_many})
    config["on_missing_hardware"] = "fail"
    proc = snakemake(tmp_path, config, "-n", check=False, profile=SLURM_PROFILE)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"target huge: asks for {too_many} cpus, 8192 MiB and 0 GPUs on one node" in output
    assert "no Slurm node has that (sinfo:" in output
    config["on_missing_hardware"] = "skip"
    proc = snakemake(tmp_path, config, "-n", profile=SLURM_PROFILE)
    assert "target huge: skipped" in proc.stdout + proc.stderr


def test_gpu_targets_ask_slurm_for_gpus(tmp_path):
    """GPU targets carry ``gpu`` and ``gpu_model`` resources (the plugin turns them into
    ``--gpus=<model>:<n>``); checked on the planned jobs, no GPU needed."""
    config = offline_config(tmp_path / "out")
    config["targets"] = [
        {"name": "k80x2", "runner": "host", "cpus": 1, "gpus": 2, "gpu_model": "k80"},
        {"name": "cpu", "runner": "host", "cpus": 1},
    ]
    config.pop("cost", None)  # its base target is not among these
    config["hardware_check"] = "none"
    proc = snakemake(tmp_path, config, "-n")
    output = proc.stdout + proc.stderr
    train = re.findall(
        r"wildcards: wdir=, target=([^,\s]+).*?\n.*?resources: ([^\n]*)", output, re.DOTALL
    )
    resources = {t: r for t, r in train}
    assert "gpu=2, gpu_model=k80" in resources["k80x2"]
    assert "gpu=0," in resources["cpu"]

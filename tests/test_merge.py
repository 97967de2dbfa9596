"""Runs made on several machines in one report (merge:): machine A's workflow lists machine
B's result folder; the figures, tables and report show both, each row naming its machine.
Machine B is this host under another host name (a UTS namespace: `unshare --uts`), so its
runs record a different machine as a real second machine would."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from conftest import copy_run, require_or_skip  # noqa: E402
from workflow_helpers import (  # noqa: E402
    job_counts,
    offline_config,
    run_spec_dict,
    snakemake,
    snakemake_command,
)

MACHINE_B = "bench-machine-b"


def small_config(outdir: Path) -> dict:
    """The offline demo's host-1cpu target alone, tiny (workflow_helpers.TINY)."""
    config = offline_config(outdir, tiny=True)
    config["targets"] = [t for t in config["targets"] if t["name"] == "host-1cpu"]
    return config


def snakemake_on(host: str, work: Path, config: dict) -> subprocess.CompletedProcess:
    """snakemake on ``config`` with the host name ``host`` (its own UTS namespace)."""
    cfg = work / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    cmd = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh"]
    proc = subprocess.run(
        cmd + snakemake_command(cfg), cwd=work, capture_output=True, text=True, timeout=900
    )
    if proc.returncode and "unshare" in proc.stderr and "Operation not permitted" in proc.stderr:
        require_or_skip("namespaces", f"no UTS namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (what a merge must leave as it was)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".snakemake" not in p.parts
    }


@pytest.fixture(scope="module")
def two_machines(tiny_run, tmp_path_factory):
    """Machine A's workflow (this host name: a copy of the shared tiny run) and machine B's
    (MACHINE_B), each finished in its own outdir: (A's work dir, A's config, B's outdir)."""
    work, config, _ = tiny_run
    a = copy_run(work, tmp_path_factory.mktemp("machine-a") / "work")
    b = tmp_path_factory.mktemp("machine-b")
    snakemake_on(MACHINE_B, b, small_config(b / "out"))
    return a, config, b / "out"  # config's outdir: "out", relative to A's work dir


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_merge_shows_both_machines_in_every_table_and_the_report(two_machines):
    a, config, other = two_machines
    before = digest(other)
    merged = {**config, "merge": [str(other)]}
    jobs = job_counts(snakemake(a, merged, "-n").stdout)
    assert jobs == {"figures_spec": 1, "figures": 1, "all": 1}
    snakemake(a, merged)
    fig = a / config["outdir"] / "figures"
    table = pd.read_csv(fig / "results_table.csv", keep_default_na=False)
    here = socket.gethostname()
    # B's runs are named by B's machine (CPU, ISA, cores, memory, fingerprint; its
    # host name differs, so its fingerprint does)
    theirs_name = next(t for t in table["target"] if t.startswith("host-1cpu@"))
    assert dict(zip(table["target"], table["host"], strict=True)) == {
        "host-1cpu": here,
        theirs_name: MACHINE_B,
    }
    assert set(table["machine"]) == {table["machine"].iloc[0], theirs_name.split("@")[1]}
    assert table["machine"].nunique() == 2
    assert (table["cpu_model"] != "").all() and set(table["software_differs"]) == {""}
    summary = pd.read_csv(fig / "summary_table.csv", keep_default_na=False)
    assert set(summary["target"]) == {"host-1cpu", theirs_name}
    prov = pd.read_csv(fig / "provenance.csv", keep_default_na=False)
    assert set(prov["host"]) == {here, MACHINE_B}
    theirs = json.loads((other / "train/host-1cpu/repeat-1/metrics.json").read_text())
    ours = table.set_index("target")
    assert ours.loc[theirs_name, "training_s"] == pytest.approx(theirs["training_seconds"])
    assert digest(other) == before  # read, never written
    assert "Nothing to be done" in snakemake(a, merged, "-n").stdout
    report = a / "report.zip"
    snakemake(a, merged, "--report", str(report))
    with zipfile.ZipFile(report) as z:
        names = z.namelist()
        assert "report/report.html" in names
        csv = next(n for n in names if n.endswith("results_table.csv"))
        assert theirs_name in z.read(csv).decode()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_runs_on_other_preprocessing_are_refused_and_the_figures_kept(two_machines, tmp_path):
    """The refusal comes when the plan is made, before Snakemake deletes the
    existing figures for a figures job that would fail (32 files -> 0 before)."""
    a, config, other = two_machines
    figures = a / config["outdir"] / "figures"
    before = digest(figures)
    assert len(before) > 30
    copy = tmp_path / "out"
    shutil.copytree(other, copy)
    spec = copy / "train/host-1cpu/repeat-1/run.json"
    settings = json.loads(spec.read_text())
    settings["preprocessing"]["rotation_step"] = 36.0
    spec.write_text(json.dumps(settings))
    proc = snakemake(a, {**config, "merge": [str(copy)]}, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (
        f"merge: {copy}/train/host-1cpu/repeat-1 was made with preprocessing rotation_step "
        "36.0 (ours 90.0)"
    ) in text
    assert digest(figures) == before


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_merge_folder_without_runs_is_named_before_any_job(tmp_path):
    config = {**small_config(tmp_path / "out"), "merge": [str(tmp_path / "nowhere")]}
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert f"merge: {tmp_path / 'nowhere'} is not a folder" in proc.stdout + proc.stderr


def _run(runner="host", versions=None, packages=None, **prov):
    from embryo_bench.reporting.runs import Run

    provenance = {"versions": versions or {}, "packages": packages or [], **prov}
    return Run("x", {"runner": runner, "provenance": provenance}, pd.DataFrame())


def test_software_differences_name_the_versions_and_count_the_packages():
    from embryo_bench.reporting.merge import difference, software_differences

    ours = [_run(versions={"keras": "3.15.1"}, packages=["keras==3.15.1", "numpy==2.3.0"])]
    same = _run(versions={"keras": "3.15.1"}, packages=["keras==3.15.1", "numpy==2.3.0"])
    assert software_differences(same, ours) == ""
    older = _run(versions={"keras": "3.14.0"}, packages=["keras==3.14.0", "numpy==2.3.0"])
    assert software_differences(older, ours) == (
        "keras 3.14.0 (here 3.15.1); 1 installed packages differ"
    )
    # compared with a run of the same runner where there is one
    docker = _run("docker", versions={"keras": "3.14.0"}, packages=["keras==3.14.0"])
    assert software_differences(docker, [*ours, docker]) == ""
    assert difference({"a": 1, "b": 2}, {"a": 1, "b": 3}) == "b: theirs 3, ours 2"
    assert difference({"a": 1}, {"a": 1}) is None


def test_a_merged_sweep_point_is_drawn_as_a_sweep_point(tmp_path):
    """The other folder's config lists its targets, never the sweep points
    derived from them; the point is known by its run.json."""
    from embryo_bench.reporting.merge import merge_runs

    for name, sweep in (("host-1cpu", None), ("host-1cpu.bs120-t1", {"base": "host-1cpu",
                        "batch_size": 120, "threads": 1})):  # fmt: skip
        run = tmp_path / "other/train" / name / "repeat-1"
        run.mkdir(parents=True)
        metrics = {"target": name, "repeat": 1, "provenance": {"hostname": MACHINE_B}}
        (run / "metrics.json").write_text(json.dumps(metrics))
        (run / "run.json").write_text(json.dumps({"target": name, "sweep": sweep}))
        (run / "history.csv").write_text("epoch\n1\n")
    merged, fields = merge_runs([str(tmp_path / "other")], [], {})
    machine = merged[0].metrics["machine"]  # both ran on it
    assert fields[f"host-1cpu@{machine}"]["sweep"] is None
    assert fields[f"host-1cpu.bs120-t1@{machine}"]["sweep"] == {
        "base": f"host-1cpu@{machine}", "batch_size": 120, "threads": 1}  # fmt: skip


PP = {"frame_size": 48, "crop_fraction": 0.5, "invert_centre": 128, "rotation_step": 90.0,
      "image_size": 16}  # fmt: skip
METRICS = {"target": "host-1cpu", "repeat": 1, "cpus": 1, "gpus": 0, "batch_size": 480,
           "n_train": 100, "n_test": 20, "epochs": 1, "training_seconds": 1.0,
           "first_epoch_seconds": 1.0, "mean_images_per_s": 100.0, "final_test_accuracy": 0.5,
           "parameter_count": 10, "provenance": {"hostname": MACHINE_B}}  # fmt: skip


def _spec(preprocessing=None, **changes) -> dict:
    """A valid run.json of host-1cpu repeat 1 (as the plan writes it), with ``changes``."""
    from embryo_bench.vocabulary.spec import Preprocessing

    entry = {"name": "host-1cpu", "runner": "host", "cpus": 1}
    return run_spec_dict(entry, Preprocessing.from_dict(PP), preprocessing=preprocessing or PP,
                         **changes)  # fmt: skip


def _folder(root: Path, metrics=None, preprocessing=None, **spec_changes) -> Path:
    run = root / "train/host-1cpu/repeat-1"
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.json").write_text(json.dumps(METRICS if metrics is None else metrics))
    (run / "run.json").write_text(json.dumps(_spec(preprocessing, **spec_changes)))
    (run / "history.csv").write_text("epoch\n1\n")
    return root


def test_merge_folders_are_checked_before_any_job(tmp_path):
    """Each of the cases that lost the figures (Snakemake deleted them
    before the figures job failed) is now refused when the plan is made."""
    from embryo_bench.errors import ConfigError
    from embryo_bench.reporting.merge import check_folders

    good = _folder(tmp_path / "good")
    assert check_folders([str(good)], str(tmp_path / "out"), PP) == [
        str(good / "train/host-1cpu/repeat-1")]  # fmt: skip
    cases = {
        "same": ([str(good), f"{good}/"], f"merge: {good} and {good}/ are the same folder"),
        "own": ([str(good)], f"merge: {good} is this workflow's own outdir"),
    }
    for outdirs, message in cases.values():
        own = str(good) if "own" in message else str(tmp_path / "out")
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_folders(outdirs, own, PP)
    cut = _folder(tmp_path / "cut")
    (cut / "train/host-1cpu/repeat-1/metrics.json").write_text('{"target": "host')
    bad_spec = _folder(tmp_path / "bad-spec")
    (bad_spec / "train/host-1cpu/repeat-1/run.json").write_text("not json")
    no_prov = _folder(tmp_path / "no-prov", {k: v for k, v in METRICS.items() if k != "provenance"})
    rotated = _folder(tmp_path / "rotated", preprocessing={**PP, "rotation_step": 12.0})
    typed = _folder(tmp_path / "typed", preprocessing={**PP, "image_size": "16"})
    for folder, message in (
        (cut, "metrics.json: not valid JSON"),
        (bad_spec, "run.json: not valid JSON"),
        (no_prov, "metrics.json lacks ['provenance']"),
        (rotated, "was made with preprocessing rotation_step 12.0 (ours 90.0)"),
        (typed, "preprocessing.image_size '16': expected an integer >= 8 and <= 1024"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_folders([str(folder)], str(tmp_path / "out"), PP)


def test_a_hand_edited_merged_run_json_is_refused_before_any_job(tmp_path):
    """Once silent: a merged run.json edited by hand was merged without complaint."""
    from embryo_bench.errors import ConfigError
    from embryo_bench.reporting.merge import check_folders

    run_json = "train/host-1cpu/repeat-1/run.json"
    cases = {
        "other target": ({"target": "something-else"}, f"{run_json} is of target "
                         "something-else repeat 1, but its folder is host-1cpu/repeat-1"),
        "runner": ({"runner": "quantum"}, "runner 'quantum': expected one of ['host', 'docker']"),
        "epochs text": ({"epochs": "two"}, "epochs 'two': expected an integer >= 1"),
        "negative batch": ({"batch_size": -5}, "batch_size -5: expected an integer >= 1"),
        "unknown key": ({"colour": "blue"}, "unknown keys ['colour']"),
        "other repeat": ({"repeat": 2}, "is of target host-1cpu repeat 2, but its folder is "
                         "host-1cpu/repeat-1"),
    }  # fmt: skip
    for name, (changes, message) in cases.items():
        folder = _folder(tmp_path / name.replace(" ", "-"), **changes)
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_folders([str(folder)], str(tmp_path / "out"), PP)
    for name in ("history.csv", "run.json"):  # lost after the figures were made
        lost = _folder(tmp_path / f"lost-{name}")
        (lost / "train/host-1cpu/repeat-1" / name).unlink()
        with pytest.raises(ConfigError, match=re.escape(f"repeat-1/{name}: ")):
            check_folders([str(lost)], str(tmp_path / "out"), PP)
    other = _folder(tmp_path / "metrics-of-another", metrics={**METRICS, "target": "host-2cpu"})
    with pytest.raises(ConfigError, match=re.escape("metrics.json is of target host-2cpu")):
        check_folders([str(other)], str(tmp_path / "out"), PP)


def test_a_merged_run_that_never_finished_is_named_in_the_log(tmp_path, capsys):
    """Once silent: a merged folder's run in progress (progress.csv, no metrics.json)
    was left out without a word; the plan now says so (the workflow logs it as a warning,
    check-config prints it)."""
    from embryo_bench.cli import main
    from embryo_bench.reporting.merge import check_folders

    other = _folder(tmp_path / "other")
    running = other / "train/host-2cpu/repeat-1"
    running.mkdir(parents=True)
    (running / "progress.csv").write_text("epoch\n1\n")
    assert check_folders([str(other)], str(tmp_path / "out"), PP) == [
        str(other / "train/host-1cpu/repeat-1")]  # fmt: skip
    config = small_config(tmp_path / "out")
    config["merge"] = [str(other)]
    config["preprocess"] = {k: v for k, v in PP.items() if k != "frame_size"}
    config["dataset"]["frame_size"] = PP["frame_size"]
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(cfg)]) == 0
    assert f"merge: {running} left out: it has no metrics.json" in capsys.readouterr().out

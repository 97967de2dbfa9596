"""``embryo-bench run``: the user's one command (a configuration from its options, checked, the
Snakemake workflow run on it, the answer printed), and the CLI a user reads: the user's commands
listed first, the workflow's steps after them, every option with help, ``--version``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from embryo_bench import cli
from embryo_bench.commands import run
from embryo_bench.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def options(*argv: str) -> argparse.Namespace:
    """``embryo-bench run``'s parsed options."""
    return cli.build_parser().parse_args(["run", *argv])


def test_a_target_name_stands_for_its_entry():
    assert run.target_entry("host-2cpu") == {"name": "host-2cpu", "runner": "host", "cpus": 2}
    assert run.target_entry("docker-4cpu-jax") == {
        "name": "docker-4cpu-jax", "runner": "docker", "cpus": 4, "backend": "jax",
    }  # fmt: skip
    # A GPU target of the docker runner takes the gpu image (the cpu image has no CUDA).
    assert run.target_entry("docker-8cpu-1gpu")["image"] == "gpu"
    assert run.target_entry("host-8cpu-1gpu-torch") == {
        "name": "host-8cpu-1gpu-torch", "runner": "host", "cpus": 8, "gpus": 1,
        "backend": "torch",
    }  # fmt: skip
    for bad in ("host-0cpu", "laptop", "host-2cpus", "ssh-2cpu", "host-2cpu-mxnet", "host-2cpu;ls"):
        with pytest.raises(ConfigError, match=r"^--targets: .* RUNNER-Ncpu\[-Mgpu\]\[-BACKEND\]"):
            run.target_entry(bad)


def test_the_options_make_a_configuration_of_only_what_runs():
    config = run.build_config({}, options())
    assert config == {
        "outdir": run.DEFAULT_OUTDIR,
        "targets": [run.target_entry("host-1cpu"), run.target_entry("host-2cpu")],
        "workloads": [{"name": "mnist-mlp"}],
    }
    config = run.build_config(
        {},
        options("--workload", "mnist-mlp", "--workload", "imdb-fasttext", "--data", "synthetic",
                "--epochs", "1", "--rounds", "3", "--targets", "host-2cpu, docker-2cpu",
                "--base", "docker-2cpu", "--outdir", "results/x"),
    )  # fmt: skip
    assert [t["name"] for t in config["targets"]] == ["host-2cpu", "docker-2cpu"]
    assert config["compare"] == {"base": "docker-2cpu"} and config["outdir"] == "results/x"
    for w in config["workloads"]:  # the options apply to every workload
        assert (w["data"], w["epochs"], w["repeats"]) == ("synthetic", 1, 3)


def test_prices_make_the_cost_table_relative_to_the_base():
    a = options("--price", "host-1cpu=0.05", "--price", "host-2cpu=0.1")
    config = run.build_config({}, a)
    assert [t["hourly_usd"] for t in config["targets"]] == [0.05, 0.1]
    assert all("command line" in t["price_source"] for t in config["targets"])
    assert config["cost"] == {"base_target": "host-1cpu"}
    # The base unpriced: nothing to normalise to.
    assert "cost" not in run.build_config({}, options("--price", "host-2cpu=0.1"))
    for bad, why in (
        ("host-2cpu", "expected TARGET=USD"),
        ("host-2cpu=-1", "expected TARGET=USD"),
        ("host-2cpu=nan", "expected TARGET=USD"),
        ("gpu-box=3", "no target 'gpu-box' runs"),
    ):
        with pytest.raises(ConfigError, match=f"^--price '{bad}': {why}"):
            run.build_config({}, options("--price", bad))


def test_a_model_of_your_own_names_its_dataset_and_recipe():
    a = options("--model", "my_model:build", "--dataset", "mnist", "--epochs", "5",
                "--batch-size", "128", "--learning-rate", "0.001")  # fmt: skip
    (own,) = run.build_config({}, a)["workloads"]
    assert own == {"name": "my_model", "model": "my_model:build", "dataset": "mnist",
                   "batch_size": 128, "learning_rate": 0.001, "epochs": 5}  # fmt: skip
    with pytest.raises(ConfigError, match="needs --epochs, --batch-size, --learning-rate$"):
        run.build_config({}, options("--model", "my_model:build", "--dataset", "mnist"))
    with pytest.raises(ConfigError, match="--model and --dataset go together"):
        run.build_config({}, options("--dataset", "mnist"))
    with pytest.raises(ConfigError, match="a catalog workload trains with its study's"):
        run.build_config({}, options("--batch-size", "64"))


def test_options_go_over_the_configuration_files():
    base = {
        "outdir": "results/mine",
        "targets": [{"name": "a", "runner": "host", "cpus": 1}],
        "workloads": [{"name": "mnist-cnn", "epochs": 4}],
        "compare": {"order": "balanced"},
    }
    config = run.build_config(base, options("--rounds", "5"))
    assert config["outdir"] == "results/mine" and config["targets"] == base["targets"]
    assert config["workloads"] == [{"name": "mnist-cnn", "epochs": 4, "repeats": 5}]
    assert base["workloads"] == [{"name": "mnist-cnn", "epochs": 4}]  # not changed
    config = run.build_config(base, options("--targets", "host-2cpu", "--base", "host-2cpu"))
    assert config["targets"] == [run.target_entry("host-2cpu")]
    assert config["compare"] == {"order": "balanced", "base": "host-2cpu"}


def test_a_refused_configuration_leaves_no_results_folder(tmp_path, capsys):
    os.chdir(tmp_path)
    code = cli.main(["run", "--workload", "no-such-workload", "--outdir", "out"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("embryo-bench: error: out/run-config.yaml: ")
    assert "no-such-workload" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert cli.main(["run", "--rounds", "0"]) == 2
    assert capsys.readouterr().err == "embryo-bench: error: --rounds 0: expected 1 or more\n"


def _steps() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_every_option_of_every_command_has_help():
    parser = cli.build_parser()
    missing = [
        a.option_strings
        for a in parser._actions
        if not a.help and not isinstance(a, argparse._SubParsersAction)
    ]
    for name, sub in _steps().items():
        missing += [(name, a.option_strings or a.dest) for a in sub._actions if not a.help]
    assert missing == []


def test_the_help_lists_the_users_commands_first_and_the_steps_after(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: embryo-bench [-h] [-V] [-v] COMMAND ...")
    assert "which machine should I train my model on, and what does it cost?" in text
    listed = text[text.index("commands:") : text.index("the workflow's own steps")]
    positions = [listed.index(f"\n    {name}") for name in cli.USER_COMMANDS]
    assert positions == sorted(positions)
    steps = text[text.index("the workflow's own steps") :]
    for name in _steps():
        if name not in cli.USER_COMMANDS:  # a step: named once after the list, still callable
            assert f"\n    {name} " not in listed and name in steps
    assert "``" not in text  # no reST markup in what a user reads
    with pytest.raises(SystemExit):
        cli.main(["crop", "--help"])
    assert "--fraction" in capsys.readouterr().out


def test_version():
    out = subprocess.run([sys.executable, "-m", "embryo_bench.cli", "--version"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.strip() == f"embryo-bench {cli.version()}" and cli.version()[0].isdigit()


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.all_cores  # host-2cpu: both cores, not a test worker's one
def test_run_trains_the_targets_in_rounds_and_prints_the_answer(tmp_path):
    """Two host targets, three rounds of a tiny SYNTHETIC workload, priced: the command writes
    its configuration into the results folder, runs the workflow, and prints each target's
    speed ratio with its interval and verdict, and the cost table; a second call has nothing
    to train."""
    argv = ["run", "--workload", "mnist-mlp", "--data", "synthetic", "--train-samples", "256",
            "--test-samples", "64", "--epochs", "1", "--rounds", "3", "--cores", "2",
            "--price", "host-1cpu=0.05", "--price", "host-2cpu=0.1", "--outdir", "out"]  # fmt: skip
    cmd = [sys.executable, "-m", "embryo_bench.cli", *argv]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "out/run-config.yaml: valid (2 targets, 1 workloads, outdir out)" in out
    table = tmp_path / "out/workloads/mnist-mlp/figures/comparison_table.md"
    # Once: the command prints it, the workflow's own onsuccess (the same tables) does not.
    assert out.count(f"## {table.relative_to(tmp_path)}") == 1
    (row,) = [
        line for line in out.splitlines() if line.startswith("| host-2cpu ") and "paired" in line
    ]
    assert " [" in row and "]" in row  # the ratio's 95 % interval
    assert "cost_relative" in out and "host-1cpu" in out
    assert (
        len(list((tmp_path / "out/workloads/mnist-mlp/train").glob("*/repeat-*/metrics.json"))) == 6
    )
    again = subprocess.run([*cmd, "--dry-run"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    # The report opens on the answer for this workload (not the paper's): its comparison and
    # cost, numbered from 1.
    report = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--configfile",
              "out/run-config.yaml", "--report", "report.zip"]  # fmt: skip
    made = subprocess.run(report, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "report.zip") as z:
        html = z.read("report/report.html").decode()
    categories = json.loads(html.split("var categories = ", 1)[1].split(";\n", 1)[0])
    first = sorted(categories)[0]
    assert first == "1. The answer: each target's speed and cost relative to the base"
    shown = {Path(p).name for ps in categories[first].values() for p in ps}
    assert shown == {"comparison.png", "comparison_table.csv", "cost.png", "cost_table.csv"}

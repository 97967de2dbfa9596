"""``embryo-bench run``: the user's one command: which of my machines trains my model fastest,
and at what cost. It writes a configuration from its options (or layers them over configuration
files), checks it as ``check-config`` does, runs the Snakemake workflow on it (Snakemake stays
the engine: the same rules, caching and rounds as ``snakemake --cores all``), and prints the
answer from the results folder: each target's speed and cost relative to the base target, with
intervals and verdicts.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError, EmbryoBenchError
from ..reporting.answer import PRINT_ANSWER_ENV, answer_text

#: A target named by its shape: runner, cores, optionally GPUs and a Keras backend, e.g.
#: ``host-2cpu``, ``docker-4cpu``, ``host-8cpu-1gpu-jax``.
TARGET_NAME = re.compile(
    r"^(?P<runner>host|docker)-(?P<cpus>[1-9][0-9]*)cpu"
    r"(?:-(?P<gpus>[1-9][0-9]*)gpu)?(?:-(?P<backend>tensorflow|jax|torch))?$"
)
#: The targets when neither ``--targets`` nor a configuration file names any: one core
#: against two on this machine.
DEFAULT_TARGETS = "host-1cpu,host-2cpu"
#: The results folder when neither ``--outdir`` nor a configuration file names one.
DEFAULT_OUTDIR = "results/run"
#: The configuration the command writes into the results folder and runs.
CONFIG_NAME = "run-config.yaml"


def target_entry(name: str) -> dict:
    """The ``targets:`` entry a target name stands for (:data:`TARGET_NAME`): ``docker-4cpu``
    is ``{name: docker-4cpu, runner: docker, cpus: 4}``; a GPU target of the docker runner takes
    the ``gpu`` image.

    Raises:
        ConfigError: a name not of that shape, naming ``--targets`` and the shape expected.
    """
    m = TARGET_NAME.match(name)
    if m is None:
        raise ConfigError(
            f"--targets: {name!r} is not a target name of the shape RUNNER-Ncpu[-Mgpu][-BACKEND] "
            "(RUNNER host or docker, BACKEND tensorflow, jax or torch; e.g. host-2cpu, "
            "docker-4cpu, host-8cpu-1gpu-jax); other targets go in a configuration file (--config)"
        )
    entry = {"name": name, "runner": m["runner"], "cpus": int(m["cpus"])}
    if m["gpus"]:
        entry["gpus"] = int(m["gpus"])
        if m["runner"] == "docker":
            entry["image"] = "gpu"
    if m["backend"]:
        entry["backend"] = m["backend"]
    return entry


def _prices(pairs: list[str], targets: list[dict]) -> dict[str, float]:
    """``--price TARGET=USD`` pairs as {target: USD an hour}, each naming a target that runs.

    Raises:
        ConfigError: a pair not of that shape, a price that is not a positive number, or a
            target that is not among ``targets``.
    """
    names = [t["name"] for t in targets]
    out = {}
    for pair in pairs:
        name, sep, usd = pair.partition("=")
        try:
            value = float(usd) if sep else float("nan")
        except ValueError:
            value = float("nan")
        if not (value > 0 and value != float("inf")):
            raise ConfigError(f"--price {pair!r}: expected TARGET=USD an hour, e.g. host-2cpu=0.10")
        if name not in names:
            raise ConfigError(f"--price {pair!r}: no target {name!r} runs (targets: {names})")
        out[name] = value
    return out


def build_config(base: dict, a) -> dict:
    """The configuration to run: ``base`` (the ``--config`` files merged, or empty) with the
    command's options over it.

    Args:
        base: settings read from configuration files (not changed).
        a: the parsed options of :func:`cmd_run` (``targets``, ``workloads``, ``model``,
            ``dataset``, ``name``, ``data``, ``epochs``, ``batch_size``, ``learning_rate``,
            ``train_samples``, ``test_samples``, ``rounds``, ``base``, ``prices``, ``outdir``).

    Returns:
        a new dict: ``outdir``, ``targets`` and ``workloads`` always present; the rest as given.

    Raises:
        ConfigError: a bad target name or price (:func:`target_entry`, ``--price``), ``--model``
            without ``--dataset`` or its recipe (``--epochs``, ``--batch-size``,
            ``--learning-rate``), ``--dataset`` without ``--model``, or a recipe option
            (``--batch-size``, ``--learning-rate``) without ``--model``.
    """
    config = {k: v for k, v in base.items()}
    config["outdir"] = a.outdir or base.get("outdir") or DEFAULT_OUTDIR
    if a.targets or not base.get("targets"):
        names = [n.strip() for n in (a.targets or DEFAULT_TARGETS).split(",") if n.strip()]
        config["targets"] = [target_entry(n) for n in names]
    else:
        config["targets"] = [dict(t) for t in base["targets"]]
    prices = _prices(a.prices or [], config["targets"])
    for t in config["targets"]:
        if t["name"] in prices:
            t["hourly_usd"] = prices[t["name"]]
            t["price_source"] = "given on the command line (embryo-bench run --price)"
    base_target = a.base or (base.get("compare") or {}).get("base") or config["targets"][0]["name"]
    if base_target in prices and not (base.get("cost") or {}).get("base_target"):
        # Prices given on the command line: time and cost are normalised to the base's.
        config["cost"] = {**(base.get("cost") or {}), "base_target": base_target}
    if bool(a.model) != bool(a.dataset):
        raise ConfigError("--model and --dataset go together: a model of your own and its data")
    if a.model:
        # A model of one's own names its recipe: nothing here guesses one.
        missing = [o for o, v in (("--epochs", a.epochs), ("--batch-size", a.batch_size),
                                  ("--learning-rate", a.learning_rate)) if v is None]  # fmt: skip
        if missing:
            raise ConfigError(f"--model {a.model}: a model of your own needs {', '.join(missing)}")
    if not a.model and (a.batch_size or a.learning_rate):
        raise ConfigError(
            "--batch-size and --learning-rate are a model of your own's recipe (--model); "
            "a catalog workload trains with its study's"
        )
    workloads = [{"name": n} for n in a.workloads or []]
    if a.model:
        own = {"name": a.name or a.model.partition(":")[0].rsplit(".", 1)[-1], "model": a.model}
        own.update(dataset=a.dataset, batch_size=a.batch_size, learning_rate=a.learning_rate)
        workloads.append(own)
    if workloads:
        config["workloads"] = workloads
    else:
        config["workloads"] = [dict(w) for w in base.get("workloads") or [{"name": "mnist-mlp"}]]
    for w in config["workloads"]:
        for key, value in (
            ("data", a.data),
            ("epochs", a.epochs),
            ("train_samples", a.train_samples),
            ("test_samples", a.test_samples),
            ("repeats", a.rounds),
        ):
            if value is not None:
                w[key] = value
    if a.base:
        config["compare"] = {**(base.get("compare") or {}), "base": a.base}
    return config


def snakefile() -> Path:
    """The workflow's Snakefile: the checkout this package was installed from (editable).

    Raises:
        ConfigError: no Snakefile beside the package (installed from a wheel, not a checkout).
    """
    path = Path(__file__).resolve().parents[3] / "Snakefile"
    if not path.is_file():
        raise ConfigError(
            f"{path}: no Snakefile: embryo-bench run needs the workflow of the checkout it was "
            "installed from (git clone, then pip install -e .)"
        )
    return path


def cmd_run(p):
    """run the benchmark: train the workloads on the targets in interleaved rounds (the
    Snakemake workflow) and print each target's speed and cost relative to the base"""
    # fmt: off
    arg = p.add_argument
    arg("--config", action="append", default=[], metavar="FILE",
        help="configuration files, layered in order as snakemake --configfile layers them; "
        "the options below are put over them")
    arg("--targets", metavar="LIST",
        help="hardware targets, comma-separated, each RUNNER-Ncpu[-Mgpu][-BACKEND] (e.g. "
        "host-2cpu, docker-4cpu, host-8cpu-1gpu-jax); without it and without --config: "
        f"{DEFAULT_TARGETS}")
    arg("--workload", dest="workloads", action="append", metavar="NAME",
        help="a catalog workload to train (embryo-bench workloads lists them); repeat for "
        "several; without it, --model or --config: mnist-mlp")
    arg("--model", metavar="MODULE:FUNCTION",
        help="a Keras model of your own: FUNCTION(input_shape, classes) in MODULE, importable "
        "from the current folder")
    arg("--dataset", metavar="NAME",
        help="the dataset your model trains on (embryo-bench workloads names them: mnist, "
        "cifar10, ...)")
    arg("--name", help="your model's workload name (default: its module's name)")
    arg("--epochs", type=int, metavar="N",
        help="epochs a run (default: each catalog workload's own; needed with --model)")
    arg("--batch-size", type=int, metavar="N",
        help="your model's batch size, samples a step (needed with --model)")
    arg("--learning-rate", type=float, metavar="RATE",
        help="your model's Adam learning rate (needed with --model)")
    arg("--data", choices=("synthetic", "real"),
        help="SYNTHETIC arrays of the dataset's shape, or the real dataset, downloaded "
        "(default: each workload's)")
    arg("--train-samples", type=int, metavar="N",
        help="training samples a run (default: the whole training set)")
    arg("--test-samples", type=int, metavar="N",
        help="test samples a run (default: the whole test set)")
    arg("--rounds", type=int, metavar="N",
        help="interleaved rounds: runs of every target a workload; 3 or more give an interval "
        "and a verdict (default: each workload's repeats)")
    arg("--base", metavar="TARGET",
        help="the target the others are compared with (default: the first)")
    arg("--price", dest="prices", action="append", metavar="TARGET=USD",
        help="a target's price in USD an hour, for the cost table; repeat for several")
    arg("--outdir", metavar="DIR",
        help=f"the results folder (default: the configuration's, else {DEFAULT_OUTDIR})")
    arg("--cores", default="all", help="cores Snakemake may use (a number, or all)")
    arg("--dry-run", action="store_true",
        help="write and check the configuration, list the jobs, train nothing")
    # fmt: on

    def run(a):
        import yaml

        from ..planning.configcheck import check_config_files
        from ..vocabulary.config import read_config_files

        for option, n in (("--rounds", a.rounds), ("--epochs", a.epochs),
                          ("--train-samples", a.train_samples),
                          ("--test-samples", a.test_samples)):  # fmt: skip
            if n is not None and n < 1:
                raise ConfigError(f"{option} {n}: expected 1 or more")
        base, _ = read_config_files(a.config) if a.config else ({}, [])
        config = build_config(base, a)
        workflow = snakefile()
        text = yaml.safe_dump(config, sort_keys=False)
        outdir = Path(config["outdir"])
        # Checked before anything is written: a refused configuration leaves no results folder.
        with tempfile.TemporaryDirectory() as tmp:
            checked = Path(tmp) / CONFIG_NAME
            checked.write_text(text)
            for line in check_config_files([str(checked)], str(outdir / CONFIG_NAME)):
                print(line)
        outdir.mkdir(parents=True, exist_ok=True)
        path = outdir / CONFIG_NAME
        path.write_text(text)
        cmd = [sys.executable, "-m", "snakemake", "-s", str(workflow), "--cores", str(a.cores),
               "--configfile", str(path)]  # fmt: skip
        if a.dry_run:
            cmd.append("--dry-run")
        print("running: " + " ".join(cmd), flush=True)
        # The workflow's onsuccess prints the answer after a run that trained something;
        # this command prints it after any run (one with nothing to do too): once.
        env = {**os.environ, PRINT_ANSWER_ENV: "0"}
        done = subprocess.run(cmd, check=False, env=env)
        if done.returncode != 0:
            raise EmbryoBenchError(
                f"the workflow stopped (exit status {done.returncode}); its log names the "
                f"job: .snakemake/log/, and {outdir}/logs/"
            )
        if a.dry_run:
            return
        names = [w["name"] for w in config["workloads"]]
        answer = answer_text(outdir, names)
        if not answer:
            raise EmbryoBenchError(f"{outdir}: the workflow ended but wrote no comparison table")
        print(answer)

    return run

"""Helpers for the tests that run the workflow: snakemake subprocesses on (variants of) the
offline config, and the evaluate command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from embryo_bench.vocabulary import layout

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROFILE = REPO / "profiles" / "default"
#: The example of a model of one's own (examples/my_model.py, config/my-model.yaml's): on the
#: import path of every test, as that configuration's comment runs it (PYTHONPATH=examples),
#: so that the tests that plan every shipped configuration find it.
EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.append(str(EXAMPLES))


def snakemake_command(
    config_file: Path, *args: str, profile: Path = DEFAULT_PROFILE, repo: Path = REPO
) -> list:
    """The snakemake command line the tests run: ``repo``'s Snakefile (this repo's unless
    given), ``profile``, the config file, 2 cores, then ``args``."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(repo / "Snakefile"),
        "--profile",
        str(profile),
        "--configfile",
        str(config_file),
        "--cores",
        "2",
        *args,
    ]


def snakemake(
    cwd: Path,
    config: dict,
    *args: str,
    check: bool = True,
    profile: Path = DEFAULT_PROFILE,
    timeout: float = 900,
    repo: Path = REPO,
    env: dict[str, str] | None = None,
):
    """Run snakemake on the repo's Snakefile in ``cwd`` with ``config`` as its configfile
    and ``profile`` (the local default unless given), ``env`` added to the environment;
    raises AssertionError with the output's tail when it fails and ``check``."""
    cfg = cwd / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    cmd = snakemake_command(cfg, *args, profile=profile, repo=repo)
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env} if env else None,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed:\n{failed_jobs(proc.stderr)}\n{proc.stdout[-4000:]}\n"
            f"{proc.stderr[-4000:]}"
        )
    return proc


def failed_jobs(output: str) -> str:
    """Snakemake's "Error in rule" paragraphs of ``output`` (the rule, its log, the exit
    status or signal), each up to 1,500 characters: a failed job's own log printed after them
    can push them out of the output's tail (a gpu image build's did)."""
    blocks = re.findall(r"^Error in rule .*?(?=\n\s*\n|\Z)", output, flags=re.M | re.S)
    return "\n".join(block[:1500] for block in blocks)


# Where a test is not about the paper's model or its preprocessing at 64 px: 48 px frames,
# half the frames, one shard, 4 rotations, 16 px model input (1,105,796 parameters instead of
# 16,834,436: a 13 MB model.keras, not 193 MB), one epoch, 0.25 s calibration probes. The
# offline run (conftest.offline_run) keeps the paper's 64 px model.
TINY = {
    "dataset": {"frame_size": 48, "synthetic": {"frames_per_embryo": 12}},
    "select": {"shards": 1},
    "preprocess": {"rotation_step": 90, "image_size": 16},
    # 28 training frames x 4 rotations = 112 training images: two full batches of 56 (a
    # batch larger than the training set is refused).
    "train": {"epochs": 1, "probe_seconds": 0.25, "batch_size": 56},
}
TINY_PARAMETERS = 1_105_796  # 832 + 51,264 + (4 * 4 * 64 + 1) * 1,024 + 4,100


def offline_config(
    outdir: Path, docker: bool = False, full: bool = False, tiny: bool = False
) -> dict:
    """config/offline.yaml writing to ``outdir``; host targets only unless ``docker``
    (tests/test_docker.py covers the docker runner), and without its sweeps, its
    non-TensorFlow backends and its two-core target unless ``full`` (tests/test_report.py
    runs those): host-1cpu (and docker-1cpu); with :data:`TINY`'s settings over it when
    ``tiny``."""
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    config["outdir"] = str(outdir)
    if tiny:
        for section, values in TINY.items():
            for key, value in values.items():
                if isinstance(value, dict):
                    config[section][key].update(value)
                else:
                    config[section][key] = value
    if not docker:
        config["targets"] = [t for t in config["targets"] if t["runner"] == "host"]
    if not full:  # host-1cpu (and docker-1cpu): the sweep's two-core target goes with it
        config["sweeps"] = []
        config["targets"] = [t for t in config["targets"] if t["name"].endswith("-1cpu")]
    return config


def docker_config(outdir: Path, epochs: int = 2) -> dict:
    """:func:`offline_config` at :data:`TINY`'s settings with its docker target alone
    (docker-1cpu), ``epochs`` epochs, and a target that cannot run failing the plan."""
    config = offline_config(outdir, docker=True, tiny=True)
    config["targets"] = [t for t in config["targets"] if t["runner"] == "docker"]
    config.pop("cost", None)  # its base target is not among these
    config["on_missing_hardware"] = "fail"
    config["train"]["epochs"] = epochs
    return config


def synthetic_db(tmp_path: Path) -> Path:
    """A synthetic database (10 embryos x 12 frames of 48 px) at ``tmp_path``/db, for a test
    to damage or read in place."""
    from embryo_bench.data.synthetic import generate_db

    db = tmp_path / "db"
    generate_db(db, embryos=10, frames_per_embryo=12, frame_size=48, seed=1)
    return db


def local_config(tmp_path: Path, db: Path) -> dict:
    """The tiny offline config (:data:`TINY`) reading the database folder ``db`` in place
    (dataset.kind local), writing to ``tmp_path``/out."""
    config = offline_config(tmp_path / "out", tiny=True)
    config["dataset"] = {"kind": "local", "path": str(db), "frame_size": 48}
    return config


#: The train section of a run.json a test makes by hand: the paper's settings, one epoch, no
#: calibration probes.
TRAIN = {"epochs": 1, "batch_size": 480, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0,
         "accuracy_target": 0.85, "repeats": 1, "probe_seconds": 0, "variant": "keras"}  # fmt: skip


def run_spec_dict(entry: dict, pp, **changes) -> dict:
    """run.json (as a dict, as the plan writes it) of repeat 1 of the bare ``targets:``
    ``entry`` under :data:`TRAIN` and ``pp`` (an
    :class:`embryo_bench.vocabulary.spec.Preprocessing`), with the top-level keys ``changes``
    replaced (``preprocessing`` among them)."""
    from embryo_bench.planning.targets import target_from_entry

    spec = target_from_entry(entry).spec(1, TRAIN, pp).to_dict()
    return {**spec, **changes}


def load_benchmark(name: str):
    """The module of ``benchmarks/<name>.py`` (the benchmarks are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_spec(path: Path, config: dict, target: dict, epochs: int | None = None, repeat=1):
    """Write the run.json of ``target`` (a bare ``targets:`` entry) under ``config``'s train
    and preprocessing settings, as the workflow's run_spec rule would; returns the RunSpec."""
    from embryo_bench.planning.targets import target_from_entry
    from embryo_bench.vocabulary.config import load_config
    from embryo_bench.vocabulary.spec import Preprocessing

    train = {**load_config(config)["train"], **({"epochs": epochs} if epochs else {})}
    spec = target_from_entry(target, train).spec(repeat, train, Preprocessing.from_config(config))
    spec.write(path)
    return spec


def train_command(spec: Path, out: Path, run_dir: Path, *extra: str) -> list[str]:
    """``embryo-bench train`` on the augmented shards and source record under ``out``."""
    return [
        sys.executable,
        "-m",
        "embryo_bench.cli",
        "train",
        "--spec",
        str(spec),
        "--shards",
        *sorted(str(p) for p in (out / "augment").glob("shard-*.npz")),
        "--source-info",
        str(out / "manifest/source.json"),
        "--out-dir",
        str(run_dir),
        *extra,
    ]


def evaluate(model: Path, images: Path, *extra: str, check: bool = True):
    """Run ``embryo-bench evaluate`` on ``images``; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "embryo_bench.cli", "evaluate", "--model", str(model), "--images"]
        + [str(images), *extra],
        capture_output=True,
        text=True,
        check=check,
    )


def job_counts(output: str) -> dict[str, int]:
    """Parse the 'Job stats' table of a (dry) run."""
    stats, table = {}, False
    for line in output.splitlines():
        if line.startswith("Job stats"):
            table = True
            continue
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if table and m and m.group(1) != "total":
            stats[m.group(1)] = int(m.group(2))
        elif table and line.strip().startswith("total"):
            break
    return stats


def copy_repo(dst: Path) -> Path:
    """A copy of this checkout's workflow and package (no .git, results or caches) to edit:
    its jobs run its own src/, as the repo's run the repo's."""
    import shutil

    skip = shutil.ignore_patterns(".git", ".venv", "results", ".snakemake", "__pycache__", "*.whl")
    shutil.copytree(REPO, dst, ignore=skip)
    return dst


def edit(path: Path, old: str, new: str) -> None:
    """Replace the first ``old`` in ``path`` by ``new`` (``old`` must be there)."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def locked_versions(path: Path) -> dict[str, str]:
    """``{name: version}`` of a requirements file's ``name==version`` requirements (names
    canonical, PEP 503; extras and markers dropped; hash and comment lines skipped), read with
    ``packaging``."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    versions = {}
    for line in Path(path).read_text().splitlines():
        text = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if not text or text.startswith("-"):
            continue
        req = Requirement(text)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if len(pins) == 1:
            versions[canonicalize_name(req.name)] = pins[0]
    return versions


def planned_jobs(output: str) -> list[tuple[str, dict[str, str]]]:
    """The jobs a (dry) run's output lists, in its order: (rule, its wildcards) each, so a
    test can say whose jobs they are (:func:`job_counts` gives only the rules' counts). A
    job of the rules every workload shares (its wildcard ``wdir``, the workload's folder:
    ``layout.workload_dir``) also has its ``workload``, the paper's included."""
    jobs: list[tuple[str, dict[str, str]]] = []
    for line in output.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):$", line.strip()):
            jobs.append((m.group(1), {}))
        elif jobs and (m := re.match(r"^wildcards: (.*)$", line.strip())):
            jobs[-1][1].update(kv.split("=", 1) for kv in m.group(1).split(", "))
            if "wdir" in jobs[-1][1]:
                jobs[-1][1]["workload"] = layout.workload_of_dir(jobs[-1][1]["wdir"])
    return jobs


def workloads_config(outdir: Path, workloads: list[dict], docker: bool = True) -> dict:
    """config/offline.yaml's host-1cpu (and docker-1cpu unless not ``docker``) training
    ``workloads`` (``workloads:`` entries; the paper's runs only if listed), no calibration
    probes, no cost base, a target that cannot run failing the plan."""
    import copy

    config = offline_config(outdir, docker=docker)
    config.pop("cost", None)  # its base target is host-1cpu; no prices needed here
    config["on_missing_hardware"] = "fail"
    config["train"].update(epochs=1, probe_seconds=0)
    config["workloads"] = copy.deepcopy(workloads)
    return config


def workload_run_dir(outdir: Path, workload: str, target: str, repeat: int = 1) -> Path:
    """Where the workflow puts repeat ``repeat`` of ``workload`` (not the paper's) on
    ``target``."""
    return outdir / "workloads" / workload / "train" / target / f"repeat-{repeat}"


def docker_unreachable() -> str | None:
    """Why the Docker daemon (DOCKER_HOST, else the local socket) does not answer; None when
    it does."""
    from embryo_bench.errors import DockerError
    from embryo_bench.runners.docker_api import docker_client

    try:
        docker_client(timeout=10).ping()
    except DockerError as exc:
        return f"no Docker daemon: {exc}"
    return None


def layered_base(path: Path) -> Path | None:
    """The configuration a shipped configuration file is layered on (a second ``--configfile``
    over it), or None for one that stands alone: a study's short form ``<study>-short.yaml``
    on ``<study>.yaml``; the GPU measurement's ``gpu-<part>.yaml`` on ``gpu.yaml``."""
    if path.stem.endswith("-short"):
        return path.with_name(path.name.replace("-short", ""))
    if path.stem.startswith("gpu-"):
        return path.with_name("gpu.yaml")
    return None

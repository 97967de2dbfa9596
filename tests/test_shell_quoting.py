"""Nothing in a configuration reaches a shell unquoted.

``containers.debian_suite: "bookworm; touch /tmp/x; #"`` ran ``touch`` in the base_image job
(its ``{params.suite}`` was not quoted, and the ``#`` dropped ``--reuse``). Two defences,
each tested here: every value the rules put on a command line is quoted (``:q``, which
quotes each word of an option list), and every string setting with a known form is held to
it by the schema. Every string setting of the schema is listed below with the defence that
keeps it out of the shell, so a new one fails :func:`test_every_string_setting_is_listed`
until it is placed.

The commands are rendered by ``snakemake -n -p`` (as Snakemake formats them for the job) and
run by bash as they stand, with a ``python3`` that only records its arguments: metacharacters
(``;``, ``$( )``, backticks, ``|``, ``&&``, ``#``, quotes, a newline, ``*``) in every setting
must arrive as (part of) one argument and no marker file may appear. The schema's patterns are
taken out in a copy of the repository for that, so the quoting is tested on its own too.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import string
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_helpers import copy_repo, offline_config, snakemake, synthetic_db, write_spec

from embryo_bench.cli import main
from embryo_bench.data import registry
from embryo_bench.io import write_json
from embryo_bench.vocabulary.config import load_schema

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "workflow" / "rules"

#: The shell metacharacters checked: each touch would leave a MARKER file in the
#: command's working directory. No "/" (it is also a folder name), no braces and no angle
#: brackets (in an output path Snakemake reads {x} as a wildcard and <x> as a path variable).
PAYLOAD = (
    "x;touch MARKER1;#|$(touch MARKER2)`touch MARKER3`&&touch MARKER4 'q' \"d\"\n* ;touch MARKER5 #"
)

# --- every string setting of the schema, and what keeps it out of the shell -----------------

#: Refused by the schema's pattern: a value with a known form (one example each that
#: reached a command, or would, with a metacharacter in it).
SCHEMA_REFUSES = {
    "containers.debian_suite": "bookworm; touch MARKER; #",
    "containers.base_image": "debian:bookworm; touch MARKER",
    "containers.tag_prefix": "embryo-bench$(touch MARKER)",
    "containers.tag_version": "1`touch MARKER`",
    "dataset.url": "http://127.0.0.1/db.zip\ntouch MARKER",
    "dataset.sha256": "'; touch MARKER; '",
    "targets[].name": "host-1cpu;touch MARKER",
    "targets[].memory": "4g && touch MARKER",
    "targets[].shm_size": "1g|touch MARKER",
    "targets[].gpu_model": "a100 #",
    "targets[].docker_host": "ssh://bench@box;touch MARKER",
    "workloads[].name": "mnist-mlp;touch MARKER",
    "workloads[].catalog": "mnist-mlp$(touch MARKER)",
    "workloads[].dataset": "mnist`touch MARKER`",
    "workloads[].model": "mymodels:small;touch MARKER",
    "study": "minimaxir;touch MARKER",
}
#: Must name a target: the plan refuses any other value, naming the setting.
PLAN_REFUSES = {"cost.base_target", "compare.base", "sweeps[].target"}
#: Free text or paths: they reach commands only quoted (checked by running the commands).
QUOTED = {
    "outdir",
    "merge[]",
    "dataset.path",
    "dataset.label",
    "targets[].description",
    "targets[].price_source",
    "targets[].docker_tls.ca_cert",
    "targets[].docker_tls.client_cert",
    "targets[].docker_tls.client_key",
    "workloads[].path",
}
#: Reaches no command line: an input file of the figures job, named in figures-spec.json
#: (written by a script rule) and never on a command (checked in the rules' text).
NO_COMMAND = {"stability.baseline"}

#: The rules whose commands carry each setting (as rendered by the scenarios below); a
#: setting reaching a new command is noticed here.
CARRIED_BY = {
    "outdir": {
        "augment", "base_image", "crop", "daemon", "dataset_file", "download", "extract",
        "figures", "image", "index", "invert", "run_spec", "select", "ship_image", "synthesize",
        "study_ours", "train", "wheelhouse", "workload_data", "workload_files",
        "workload_view", "study",
    },
    "dataset.path": {"extract", "index"},
    "dataset.label": {"index"},
    "dataset.url": {"download"},
    "dataset.sha256": {"download"},
    "merge[]": set(),
    "targets[].description": set(),
    "targets[].price_source": set(),
    # With the schema's patterns taken out (the quoting on its own):
    "containers.debian_suite": {"base_image"},
    "containers.base_image": {"base_image", "image"},
    "containers.tag_prefix": {"image"},
    "containers.tag_version": {"image"},
    "targets[].docker_host": {"daemon", "run_spec"},
    "targets[].name": {"run_spec", "train"},
    "workloads[].name": {
        "study_ours", "workload_data", "figures", "workload_files", "run_spec", "train",
    },
    "workloads[].path": {"workload_data"},
}  # fmt: skip


def _string_settings(node: dict, path: str = "") -> set[str]:
    """Dotted paths (``[]`` for list entries) of every string-typed setting in a schema."""
    found = set()
    if node.get("type") == "string":
        found.add(path)
    for key, sub in node.get("properties", {}).items():
        found |= _string_settings(sub, f"{path}.{key}" if path else key)
    if "items" in node:
        found |= _string_settings(node["items"], f"{path}[]")
    return found


def test_every_string_setting_is_listed():
    listed = set(SCHEMA_REFUSES) | PLAN_REFUSES | QUOTED | NO_COMMAND
    assert _string_settings(load_schema()) == listed, (
        "a string setting was added or removed: say in tests/test_shell_quoting.py what keeps "
        "it out of the shell (a schema pattern, the plan, or quoting)"
    )


# --- the rules' text ----------------------------------------------------------------------


def _shell_templates() -> dict[str, tuple[str, str]]:
    """{rule: (its shell: command template, the rule's text)} of every rule in
    workflow/rules."""
    found = {}
    for path in sorted(RULES.glob("*.smk")):
        blocks = re.split(r"^rule (\w+):\n", path.read_text(), flags=re.M)
        for name, body in zip(blocks[1::2], blocks[2::2], strict=True):
            m = re.search(r"^    shell:\n((?:        .*\n?)+)", body, flags=re.M)
            if m:
                found[name] = (ast.literal_eval("(" + m.group(1) + ")"), body)
    return found


def test_every_placeholder_of_every_shell_command_is_quoted():
    """Each ``{...}`` of a ``shell:`` is ``:q`` (an option list too: :q quotes each word)."""
    templates = _shell_templates()
    unquoted = [
        f"{rule}: {{{field}}}"
        for rule, (template, _) in templates.items()
        for _, field, spec, _ in string.Formatter().parse(template)
        if field is not None and not (spec or "").endswith("q")
    ]
    assert not unquoted, f"unquoted in a shell command: {unquoted}"
    # The figures job reads stability.baseline as an input file, never on its command line.
    assert "baseline" not in templates["figures"][0]


# --- the schema's patterns ----------------------------------------------------------------


def _set(config: dict, setting: str, value) -> None:
    """Set a dotted setting (``targets[]`` and ``merge[]``: the first entry) in ``config``."""
    *parents, last = setting.replace("[]", ".0").split(".")
    node = config
    for key in parents:
        node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
    if last == "0":
        node[0] = value
    else:
        node[last] = value


@pytest.mark.parametrize("setting", sorted(SCHEMA_REFUSES))
def test_the_schema_refuses_metacharacters_in_a_setting_of_known_form(setting, tmp_path, capsys):
    config = offline_config(tmp_path / "out", docker=True)
    if setting.startswith("dataset."):
        config["dataset"] = {"kind": "mouse-embryo-tracking-db", "url": "http://h/db.zip",
                             "frame_size": 48}  # fmt: skip
    if setting == "targets[].docker_host":
        config["targets"] = [t for t in config["targets"] if t["runner"] == "docker"]
    if setting.startswith("workloads[]"):
        config["workloads"] = [{"name": "mnist-mlp", "data": "synthetic"}]
    _set(config, setting, SCHEMA_REFUSES[setting])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    name = setting.replace("[]", "[0]")
    assert len(err) == 1 and err[0].startswith(f"embryo-bench: error: {tmp_path}/c.yaml: {name}: ")


@pytest.mark.parametrize("setting", sorted(PLAN_REFUSES))
def test_a_setting_that_must_name_a_target_refuses_anything_else(setting, tmp_path, capsys):
    config = offline_config(tmp_path / "out", full=True)
    _set(config, setting, SCHEMA_REFUSES["targets[].name"])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    said = f"{tmp_path}/c.yaml: {setting.replace('[]', '[0]')} 'host-1cpu;touch MARKER': no such"
    assert len(err) == 1 and err[0].startswith(f"embryo-bench: error: {said}"), err


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_the_workflow_refuses_a_debian_suite_with_a_command_in_it(tmp_path):
    """A command in debian_suite: the workflow stops at the schema, before any job."""
    config = offline_config(tmp_path / "out", docker=True)
    config["containers"]["base_image"] = "embryo-bench-test/never-built:quoting"
    config["containers"]["debian_suite"] = "bookworm; touch MARKER; #"
    proc = snakemake(tmp_path, config, "-n", "-p", check=False)
    assert proc.returncode != 0
    assert "debian_suite" in proc.stdout + proc.stderr
    assert "Shell command" not in proc.stdout + proc.stderr
    assert not (tmp_path / "MARKER").exists()


# --- the commands, rendered and run -------------------------------------------------------

FAKE_PYTHON = """#!{python}
import json, os, sys
with open(os.environ["ARGV_RECORD"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def _rendered(output: str) -> list[tuple[str, str]]:
    """(rule, shell command) of every job in the output of ``snakemake -n -p``."""
    jobs = []
    chunks = re.split(r"^(?:local)?rule (\w+):$", output, flags=re.M)
    for rule, chunk in zip(chunks[1::2], chunks[2::2], strict=True):
        m = re.search(r"^Shell command: (.*? 2>&1)$", chunk, flags=re.M | re.S)
        if m:
            jobs.append((rule, m.group(1)))
    return jobs


def _run_rendered(rule: str, command: str, where: Path, repo: Path) -> list[str]:
    """Run a rendered job command with bash (the workflow's set -euo pipefail) and a python3
    that records its arguments; returns them."""
    bin_dir = where / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir(parents=True)
        (bin_dir / "python3").write_text(FAKE_PYTHON.format(python=sys.executable))
        (bin_dir / "python3").chmod(0o755)
    words = shlex.split(command)
    Path(words[words.index(">") + 1]).parent.mkdir(parents=True, exist_ok=True)
    record = where / "argv.jsonl"
    record.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGV_RECORD": str(record),
           "EMBRYO_BENCH_REPO": str(repo)}  # fmt: skip
    proc = subprocess.run(["bash", "-c", f"set -euo pipefail; {command}"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, (rule, command, proc.stderr)
    (argv,) = [json.loads(line) for line in record.read_text().splitlines()]
    return argv


def _words(argv: list[str]) -> list[str]:
    """The arguments, each JSON one (run_spec's --json) replaced by its strings."""

    def strings(value) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    words = []
    for arg in argv:
        try:
            value = json.loads(arg)
        except ValueError:
            value = arg
        words += strings(value) if isinstance(value, (dict, list)) else [arg]
    return words


def _merge_folder(root: Path, config: dict) -> Path:
    """A finished run of host-1cpu at ``root`` (run.json, metrics.json, history.csv), made
    with ``config``'s preprocessing: a folder ``merge:`` accepts."""
    run = root / "train/host-1cpu/repeat-1"
    run.mkdir(parents=True)
    target = next(t for t in config["targets"] if t["name"] == "host-1cpu")
    write_spec(run / "run.json", config, target)
    write_json(run / "metrics.json", {
        "target": "host-1cpu", "repeat": 1, "cpus": 1, "gpus": 0, "batch_size": 56,
        "n_train": 112, "n_test": 28, "epochs": 1, "training_seconds": 1.0,
        "first_epoch_seconds": 1.0, "mean_images_per_s": 100.0, "final_test_accuracy": 0.5,
        "parameter_count": 10, "provenance": {"hostname": "elsewhere"}})  # fmt: skip
    (run / "history.csv").write_text("epoch\n1\n")
    return root


def _scenarios(tmp_path: Path) -> dict[str, tuple[dict, dict[str, str]]]:
    """{name: (config, {setting: the value with the payload})}: between them every rule with
    a shell command renders, every QUOTED setting (and, with the schema's patterns taken out,
    every SCHEMA_REFUSES setting that reaches a command) carries the payload."""

    def marked(setting: str) -> str:
        return f"{setting.replace('[]', '').replace('.', '-')}={PAYLOAD}"

    base = offline_config(tmp_path / "x", docker=True, tiny=True)
    base["hardware_check"] = "none"  # no daemon or address is asked anything
    scenarios = {}

    # Synthetic frames, docker targets (the base image, wheelhouse, image and a remote one).
    config = json.loads(json.dumps(base))
    values = {s: marked(s) for s in ("outdir", "dataset.label", "containers.debian_suite",
                                      "containers.base_image", "containers.tag_prefix",
                                      "containers.tag_version", "targets[].description",
                                      "targets[].price_source", "merge[]")}  # fmt: skip
    values["outdir"] = str(tmp_path / values["outdir"])
    values["merge[]"] = str(_merge_folder(tmp_path / values["merge[]"], config))
    values["targets[].docker_host"] = f"ssh://bench@box{PAYLOAD}"
    values["targets[].name"] = f"remote{PAYLOAD}"
    for setting, value in values.items():
        if setting.startswith("containers.") or setting in ("outdir", "dataset.label"):
            _set(config, setting, value)
    config["merge"] = [values["merge[]"]]
    host = next(t for t in config["targets"] if t["runner"] == "host")
    host.update(description=values["targets[].description"],
                price_source=values["targets[].price_source"])  # fmt: skip
    config["targets"].append({"name": values["targets[].name"], "runner": "docker", "cpus": 1,
                              "docker_host": values["targets[].docker_host"]})  # fmt: skip
    scenarios["synthetic"] = (config, values)

    # A download: url and sha256 carry the payload too (their patterns are taken out).
    config = json.loads(json.dumps(base))
    values = {"outdir": str(tmp_path / marked("outdir")) + "-download",
              "dataset.url": f"http://127.0.0.1:9/{marked('dataset.url')}",
              "dataset.sha256": marked("dataset.sha256")}  # fmt: skip
    config["outdir"] = values["outdir"]
    config["dataset"] = {"kind": "mouse-embryo-tracking-db", "url": values["dataset.url"],
                         "sha256": values["dataset.sha256"], "frame_size": 48}  # fmt: skip
    scenarios["download"] = (config, values)

    # A local archive read in place (extracted, and its checksum taken by the index).
    config = json.loads(json.dumps(base))
    archive = tmp_path / f"{marked('dataset.path')}.zip"
    subprocess.run(["zip", "-qr", str(archive), "db"], cwd=synthetic_db(tmp_path).parent,
                   check=True)  # fmt: skip
    values = {"outdir": str(tmp_path / marked("outdir")) + "-local", "dataset.path": str(archive)}
    config["outdir"] = values["outdir"]
    config["dataset"] = {"kind": "local", "path": str(archive), "frame_size": 48}
    scenarios["local"] = (config, values)

    # Workloads: a name of one's own on a catalog model from image files, a
    # download of a dataset's file, and an offline copy by path.
    config = json.loads(json.dumps(base))
    copy = tmp_path / marked("workloads[].path")
    copy.mkdir()
    # a dry run needs it there at the registry's size (sparse: no disk); its sha256 is the
    # data job's to check
    (registered,) = registry.get("mnist").files
    with open(copy / "mnist.npz", "wb") as fh:
        fh.truncate(registered.bytes)
    values = {"outdir": str(tmp_path / marked("outdir")) + "-workloads",
              "workloads[].name": f"w{PAYLOAD}", "workloads[].path": str(copy)}  # fmt: skip
    config["outdir"] = values["outdir"]
    config["workloads"] = [
        {"name": values["workloads[].name"], "catalog": "catsdogs-cnn", "data": "synthetic",
         "input": "files", "train_samples": 8, "test_samples": 4, "batch_size": 4},
        {"name": "mnist-mlp"},
        {"name": "mnist-offline", "catalog": "mnist-mlp", "path": values["workloads[].path"]},
    ]  # fmt: skip
    config["study"] = "minimaxir"  # the study rules' commands
    scenarios["workloads"] = (config, values)
    return scenarios


def _schema_without_patterns(repo: Path) -> None:
    """Take the patterns of every SCHEMA_REFUSES setting out of ``repo``'s schema, and the
    typed run spec's patterns out of its copy of the package (the run spec checks a
    target's name again before any job: a second refusal, taken out so that the quoting is
    tested on its own)."""
    schema = load_schema(repo / "config" / "schema.yaml")
    for setting in SCHEMA_REFUSES:
        node = schema
        for key in setting.split("."):
            node = node["properties"][key.removesuffix("[]")]
            node = node["items"] if key.endswith("[]") else node
        node.pop("pattern", None)
    (repo / "config" / "schema.yaml").write_text(yaml.safe_dump(schema))
    spec = repo / "src" / "embryo_bench" / "vocabulary" / "spec.py"
    text = spec.read_text()
    relaxed = text.replace("Field(pattern=NAME_PATTERN)", "Field()")
    assert relaxed != text, "the run spec's name pattern moved: update this test"
    spec.write_text(relaxed)


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_metacharacters_in_every_setting_reach_each_command_as_one_argument(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    _schema_without_patterns(repo)
    rendered_rules, carried = set(), {s: set() for s in CARRIED_BY}
    for name, (config, values) in _scenarios(tmp_path).items():
        work = tmp_path / f"work-{name}"
        work.mkdir()
        proc = snakemake(work, config, "-n", "-p", repo=repo, timeout=300)
        jobs = _rendered(proc.stdout + proc.stderr)
        assert jobs, proc.stdout[-2000:]
        for rule, command in jobs:
            rendered_rules.add(rule)
            argv = _words(_run_rendered(rule, command, work, repo))
            for setting, value in values.items():
                head = value[: value.index(PAYLOAD) + 4]
                parts = [a for a in argv if head in a]
                # The value whole in each argument that holds any of it: never split.
                assert all(value in a for a in parts), (name, rule, setting, argv)
                if parts:
                    carried[setting].add(rule)
        assert not list(work.rglob("MARKER*")), name
    assert carried == CARRIED_BY, {k: carried[k] ^ CARRIED_BY[k] for k in CARRIED_BY}
    assert rendered_rules == set(_shell_templates()), "a rule's command was not rendered"
    assert not list(tmp_path.rglob("MARKER*"))


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_real_jobs_pass_metacharacters_as_data(tmp_path):
    """synthesize, index and select run for real with the payload in outdir and label; a
    download from 127.0.0.1 with metacharacters in its url fails on the url, running
    nothing."""
    out = tmp_path / f"out{PAYLOAD}"
    config = offline_config(out, tiny=True)
    config["dataset"]["label"] = f"label{PAYLOAD}"
    snakemake(tmp_path, config, "--until", "select")
    source = json.loads((out / "manifest/source.json").read_text())
    assert source["label"] == f"label{PAYLOAD}"
    assert (out / "select/selected.csv").exists()
    url = "http://127.0.0.1:9/db;touch$IFS'MARKER6';#|$(touch$IFS\"MARKER7\")`touch$IFS'M8'`.zip"
    config = offline_config(tmp_path / "download", tiny=True)
    config["dataset"] = {"kind": "mouse-embryo-tracking-db", "url": url, "frame_size": 48,
                         "retries": 0, "timeout_s": 5}  # fmt: skip
    proc = snakemake(tmp_path, config, "--until", "select", check=False)
    assert proc.returncode != 0
    log = (tmp_path / "download/logs/download.log").read_text()
    assert f"embryo-bench: error: {url}: download failed after 0 retries" in log  # --sha256=
    assert not list(tmp_path.rglob("MARKER*")) and not list(tmp_path.rglob("M8"))

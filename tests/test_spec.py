"""run.json is checked on load: a hand-edited value of the wrong type or
out of range is one line naming the key, the value and what is allowed, before the trainer
writes anything; and the ranges run.json allows are the configuration schema's."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from embryo_bench.cli import main
from embryo_bench.vocabulary.config import load_schema
from embryo_bench.vocabulary.layout import RUN_FILES
from embryo_bench.vocabulary.records import subschema
from embryo_bench.vocabulary.spec import Preprocessing, RunSpec, run_spec_schema

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import run_spec_dict  # noqa: E402


def _good(runner: str = "docker") -> dict:
    entry = {"name": "t1", "runner": runner, "cpus": 1}
    return run_spec_dict(
        entry,
        Preprocessing(
            frame_size=480, crop_fraction=2 / 3, invert_centre=128, rotation_step=18, image_size=64
        ),
    )


def _with(path: str, value) -> dict:
    d = copy.deepcopy(_good())
    *parents, last = path.split(".")
    node = d
    for p in parents:
        node = node[p]
    node[last] = value
    return d


#: Hand-edited run.json values that ``train --spec`` once crashed on, and more.
BAD = {
    "rotation_step 'eighteen'": (
        _with("preprocessing.rotation_step", "eighteen"),
        "preprocessing.rotation_step 'eighteen': expected a number >= 1 and <= 360",
    ),
    "backend pytorch": (
        _with("backend", "pytorch"),
        "backend 'pytorch': expected one of ['tensorflow', 'jax', 'torch']",
    ),
    "epochs '2'": (_with("epochs", "2"), "epochs '2': expected an integer >= 1"),
    "epochs 0": (_with("epochs", 0), "epochs 0: expected an integer >= 1"),
    "epochs true": (_with("epochs", True), "epochs True: expected an integer >= 1"),
    "batch_size 0": (_with("batch_size", 0), "batch_size 0: expected an integer >= 1"),
    "batch_size -5": (_with("batch_size", -5), "batch_size -5: expected an integer >= 1"),
    "cpus 0": (_with("cpus", 0), "cpus 0: expected an integer >= 1"),
    "learning_rate 'fast'": (
        _with("learning_rate", "fast"),
        "learning_rate 'fast': expected a number > 0",
    ),
    "dropout 1.5": (_with("dropout", 1.5), "dropout 1.5: expected a number >= 0 and < 1"),
    "seed null": (_with("seed", None), "seed None: expected an integer >= 0"),
    "runner quantum": (
        _with("runner", "quantum"),
        "runner 'quantum': expected one of ['host', 'docker']",
    ),
    "target with a space": (
        _with("target", "a b"),
        "target 'a b': expected a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]*$",
    ),
    "memory 'lots'": (
        _with("container.memory", "lots"),
        "container.memory 'lots': expected a string matching ^[0-9]+[kmg]$",
    ),
    "unknown key": (_with("colour", "blue"), "unknown keys ['colour']"),
    "unknown container key": (_with("container.bogus", 1), "unknown keys ['bogus'] in container"),
    "container not an object": (_with("container", 5), "container 5: expected null or an object"),
    "threads over cpus": (_with("threads", 2), "threads 2 > cpus 1"),
    "sweep batch size text": (
        _with("sweep", {"base": "t1", "batch_size": "a", "threads": 1}),
        "sweep.batch_size 'a': expected an integer >= 1",
    ),
    "a JSON list": ([1, 2], "a run spec is a JSON object, not list"),
    # JSON's NaN and Infinity (Python reads both) pass every bound of the schema.
    "learning_rate NaN": (
        _with("learning_rate", float("nan")),
        "learning_rate nan: expected a finite number, not NaN or infinity",
    ),
    "dropout NaN": (_with("dropout", float("nan")), "dropout nan: expected a finite number"),
    "accuracy_target NaN": (
        _with("accuracy_target", float("nan")),
        "accuracy_target nan: expected a finite number",
    ),
    "probe_seconds Infinity": (
        _with("probe_seconds", float("inf")),
        "probe_seconds inf: expected a finite number",
    ),
    "crop_fraction NaN": (
        _with("preprocessing.crop_fraction", float("nan")),
        "preprocessing.crop_fraction nan: expected a finite number",
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_train_refuses_a_bad_run_json_in_one_line_and_writes_nothing(case, tmp_path, capsys):
    spec, says = BAD[case]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "out"
    rc = main(
        ["train", "--spec", str(path), "--shards", str(tmp_path / "shard-0.npz"),
         "--source-info", str(tmp_path / "source.json"), "--out-dir", str(out)]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith(f"embryo-bench: error: {path}: "), last
    assert says in last, last
    left = [f for f in RUN_FILES if (out / f).exists()]
    assert not left, left


def test_a_good_run_json_reads_back_equal():
    for runner in ("host", "docker"):
        d = _good(runner)
        assert RunSpec.from_dict(d).to_dict() == d


#: run.json key -> the configuration schema's path to the same setting.
SAME_AS_CONFIG = {
    "cpus": ("targets", "cpus"),
    "threads": ("targets", "threads"),
    "gpus": ("targets", "gpus"),
    "backend": ("targets", "backend"),
    "strategy": ("targets", "strategy"),
    "precision": ("targets", "precision"),
    "runner": ("targets", "runner"),
    "target": ("targets", "name"),
    "epochs": ("train", "epochs"),
    "batch_size": ("train", "batch_size"),
    "learning_rate": ("train", "learning_rate"),
    "dropout": ("train", "dropout"),
    "seed": ("train", "seed"),
    "accuracy_target": ("train", "accuracy_target"),
    "probe_seconds": ("train", "probe_seconds"),
    "variant": ("train", "variant"),
    "steps_per_execution": ("train", "steps_per_execution"),
    "preprocessing.frame_size": ("dataset", "frame_size"),
    "preprocessing.crop_fraction": ("preprocess", "crop_fraction"),
    "preprocessing.invert_centre": ("preprocess", "invert_centre"),
    "preprocessing.rotation_step": ("preprocess", "rotation_step"),
    "preprocessing.image_size": ("preprocess", "image_size"),
    "container.image": ("targets", "image"),
    "container.memory": ("targets", "memory"),
    "container.shm_size": ("targets", "shm_size"),
}
RANGE_KEYS = ("type", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _run_spec_schema(key: str) -> dict:
    node = subschema(run_spec_schema(), tuple(key.split(".")))
    if "enum" in node:  # the derived schema types a Literal's words; the enum says it all
        node = {k: v for k, v in node.items() if k != "type"}
    return node


def _config_schema(section: str, name: str) -> dict:
    props = load_schema()["properties"][section]
    props = props["items"] if section == "targets" else props
    return props["properties"][name]


@pytest.mark.parametrize("key", list(SAME_AS_CONFIG))
def test_run_json_allows_what_the_configuration_allows(key):
    ours = _run_spec_schema(key)
    theirs = _config_schema(*SAME_AS_CONFIG[key])
    for k in (*RANGE_KEYS, "pattern"):
        assert ours.get(k) == theirs.get(k), f"{key}: {k} {ours.get(k)!r} != {theirs.get(k)!r}"


def test_every_run_spec_field_is_in_the_schema_and_compared_or_its_own():
    own = {"repeat", "replicas", "container", "sweep", "epoch_steps", "holdout", "test_subset"}
    own |= {"preprocessing", "container.docker_host", "workload"}
    keys = set(run_spec_schema()["properties"]) | {
        f"{parent}.{k}"
        for parent in ("preprocessing", "container")
        for k in subschema(run_spec_schema(), (parent, "")).get("properties", {})
    }
    assert keys - own == set(SAME_AS_CONFIG), sorted(keys - own ^ set(SAME_AS_CONFIG))

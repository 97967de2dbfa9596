"""Workloads as part of the configuration and the plan (issue 32, item 1): a configuration
that names none plans exactly the paper's runs as before; several workloads go in the same
rounds; a workload's run spec carries its model, data and recipe; a bad entry is one line."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path

import pytest
import yaml

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.planning import layout
from embryo_bench.planning.plan import Plan
from embryo_bench.planning.spec import RunSpec

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
MAIN = [t["name"] for t in OFFLINE["targets"]]


def registry_sized_copy(tmp_path: Path, name: str, size: int) -> Path:
    """An offline copy's file of ``size`` bytes (sparse: no disk), in ``tmp_path/copy``."""
    path = tmp_path / "copy" / name
    path.parent.mkdir(exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def plan(**changes) -> Plan:
    config = copy.deepcopy(OFFLINE) | changes
    return Plan.from_config(config, probe=lambda target: None)


def test_a_configuration_without_workloads_plans_the_papers_runs_as_before():
    """The paper's run.json is written as before workloads existed (format 1, no workload
    key): its runs are not run again after the upgrade."""
    p = plan()
    assert list(p.workloads) == [layout.PAPER_WORKLOAD]
    assert p.all_runs == [(layout.PAPER_WORKLOAD, t, k) for t, k in p.runs]
    assert [d.removeprefix(p.outdir + "/") for d in p.run_dirs] == [
        f"train/{t}/repeat-{k}" for t, k in p.runs
    ]
    d = json.loads(p.spec(*p.runs[0]).to_json())
    assert d["format"] == 1 and "workload" not in d and "preprocessing" in d
    assert RunSpec.from_dict(d).workload is None


def test_several_workloads_share_the_rounds_and_leave_out_the_sweep_points():
    p = plan(
        workloads=[{"name": "paper"}, {"name": "mnist-mlp", "data": "synthetic"}],
        sweeps=[{"target": MAIN[0], "batch_size": [64]}],
        compare={"order": "alternate"},
    )
    paper_targets = list(p.workload_targets("paper"))
    assert len(paper_targets) == len(MAIN) + 1  # the sweep point
    assert list(p.workload_targets("mnist-mlp")) == MAIN
    rounds = max(k for _, _, k in p.all_runs)
    for k in range(1, rounds + 1):
        in_round = [(w, t) for w, t, r in p.all_runs if r == k]
        assert {w for w, _ in in_round} == {"paper", "mnist-mlp"}
    # Each run waits for the one before it, whatever its workload.
    w, t, k = p.all_runs[1]
    assert p.previous_run(t, k, w) == (p.all_runs[0][1], p.all_runs[0][2], p.all_runs[0][0])
    assert p.workload_run_dirs("mnist-mlp")[0].endswith(
        f"workloads/mnist-mlp/train/{p.workload_runs('mnist-mlp')[0][0]}/repeat-1"
    )


def test_a_workloads_spec_has_its_recipe_model_and_data(tmp_path):
    p = plan(workloads=[{"name": "mnist-mlp", "data": "synthetic", "train_samples": 256,
                         "test_samples": 64, "batch_size": 32}])  # fmt: skip
    assert p.runs == []  # no paper runs: the paper's workload is not listed
    t, k = p.workload_runs("mnist-mlp")[0]
    spec = p.spec(t, k, "mnist-mlp")
    w = spec.workload
    assert (w.name, w.dataset, w.synthetic, w.input_shape, w.classes) == (
        "mnist-mlp", "mnist", True, (28, 28, 1), 10,
    )  # fmt: skip
    assert spec.batch_size == 32 and spec.preprocessing is None and spec.variant == "keras"
    assert w.model.startswith("embryo_bench.workloads.minimaxir:")
    d = json.loads(spec.to_json())
    assert d["format"] == layout.RUN_SPEC_FORMAT == 2 and "preprocessing" not in d
    assert RunSpec.from_dict(d) == spec
    assert p.data_params("mnist-mlp")["train_samples"] == 256
    assert p.dataset_files("mnist-mlp") == []  # synthetic: nothing to download
    real = plan(workloads=[{"name": "mnist-mlp"}])
    assert real.dataset_files("mnist-mlp") == [f"{real.outdir}/data/datasets/mnist/mnist.npz"]
    copy = registry_sized_copy(tmp_path, "mnist.npz", 11_490_434)
    offline = plan(workloads=[{"name": "mnist-mlp", "path": str(copy.parent)}])
    assert offline.dataset_files("mnist-mlp") == [str(copy)]


def test_a_user_model_by_module_path(tmp_path, monkeypatch):
    (tmp_path / "mymodels.py").write_text(
        textwrap.dedent(
            """
            import keras

            def small(input_shape, classes):
                return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                                         keras.layers.Dense(classes)])
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    p = plan(workloads=[{"name": "mine", "model": "mymodels:small", "dataset": "cifar10",
                         "data": "synthetic", "epochs": 1, "batch_size": 8,
                         "learning_rate": 0.01}])  # fmt: skip
    w = p.spec(*p.workload_runs("mine")[0], "mine").workload
    assert (w.model, w.input_shape, w.classes) == ("mymodels:small", (32, 32, 3), 10)
    assert p.workloads["mine"].source == "your model"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "no-such-model"}, "workloads[0] (no-such-model): workload 'no-such-model'"),
        ({"name": "mine", "model": "nowhere.at_all:build", "dataset": "mnist", "epochs": 1,
          "batch_size": 8, "learning_rate": 0.1},
         "workloads[0] (mine): model 'nowhere.at_all:build': module nowhere.at_all cannot be "
         "imported"),
        ({"name": "mine", "model": "json:no_such_function", "dataset": "mnist", "epochs": 1,
          "batch_size": 8, "learning_rate": 0.1}, "defines no no_such_function"),
        ({"name": "mine", "model": "json:loads"}, "a model of your own needs dataset"),
        ({"name": "mine", "model": "json:loads", "dataset": "mnist"},
         "a model of your own needs epochs, batch_size, learning_rate"),
        ({"name": "paper", "batch_size": 8}, "workloads[0] (paper): "),
        ({"name": "imdb-fasttext", "input": "files"}, "input files: imdb holds sequences"),
        ({"name": "catsdogs-cnn"}, "set path: to a folder holding it, or data: synthetic"),
        ({"name": "mnist-mlp", "dataset": "no-such-data", "model": "json:loads"},
         "dataset: "),
    ],
)  # fmt: skip
def test_a_bad_workload_is_one_line_naming_it(entry, message):
    with pytest.raises(ConfigError, match=None) as err:
        plan(workloads=[entry])
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_a_workload_listed_twice_is_refused():
    with pytest.raises(ConfigError, match=r"workloads\[1\]: mnist-mlp is listed twice"):
        plan(workloads=[{"name": "mnist-mlp"}, {"name": "mnist-mlp"}])


def test_the_workloads_command_lists_every_catalog_workload_with_its_source(capsys):
    from embryo_bench.cli import main
    from embryo_bench.workloads.catalog import catalog

    assert main(["workloads"]) == 0
    out = capsys.readouterr().out
    for w in catalog().values():
        assert f"{w.name} " in out and f"{w.parameters:,} parameters" in out and w.source in out


# --- an offline copy is the registry's, or accepted by its sha256 -----------------------------


@pytest.mark.parametrize(
    ("files", "message"),
    [({"mnist.npz": 10}, r"mnist\.npz: 10 bytes; expected 11,490,434 \(mnist\.npz of dataset "
      r"mnist in datasets\.yaml: truncated or another file\?\); to use this copy as it is, set "
      r"workload mnist-mlp's sha256: \{mnist\.npz: <its sha256, as sha256sum prints it>\}"),
     ({}, r"mnist\.npz: not found; expected mnist\.npz of dataset mnist")],
    ids=["another-size", "missing"],
)  # fmt: skip
def test_an_offline_copy_that_is_not_the_registrys_is_refused_when_the_plan_is_made(
    tmp_path, files, message
):
    (tmp_path / "copy").mkdir()
    for name, size in files.items():
        registry_sized_copy(tmp_path, name, size)
    with pytest.raises(DataError, match=message) as err:
        plan(workloads=[{"name": "mnist-mlp", "path": str(tmp_path / "copy")}])
    text = str(err.value)
    assert text.startswith(str(tmp_path / "copy" / "mnist.npz")) and "\n" not in text


def test_check_config_refuses_an_offline_copy_of_another_size(tmp_path, capsys):
    from embryo_bench import cli

    registry_sized_copy(tmp_path, "cifar-10-binary.tar.gz", 170_052_170)  # one byte short
    config = copy.deepcopy(OFFLINE) | {
        "outdir": str(tmp_path / "out"),
        "workloads": [{"name": "tf-cifar10", "path": str(tmp_path / "copy")}],
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert cli.main(["check-config", str(tmp_path / "c.yaml")]) == 2
    assert "170,052,170 bytes; expected 170,052,171" in capsys.readouterr().err


def test_a_copy_that_differs_on_purpose_is_accepted_by_its_sha256(tmp_path):
    path = registry_sized_copy(tmp_path, "mnist.npz", 10)
    digest = "ab" * 32
    p = plan(workloads=[{"name": "mnist-mlp", "path": str(path.parent),
                         "sha256": {"mnist.npz": digest.upper()}}])  # fmt: skip
    assert p.data_params("mnist-mlp")["sha256"] == {"mnist.npz": digest}
    synthetic = plan(workloads=[{"name": "mnist-mlp", "data": "synthetic"}])
    assert synthetic.data_params("mnist-mlp")["sha256"] == {}


@pytest.mark.parametrize(
    ("entry", "message"),
    [({"name": "mnist-mlp", "sha256": {"mnist.npz": "ab" * 32}},
      "workloads[0] (mnist-mlp): sha256 is set, for an offline copy's files; expected path:"),
     ({"name": "mnist-mlp", "path": "/copies", "data": "synthetic",
       "sha256": {"mnist.npz": "ab" * 32}}, "expected path: to that copy, with data: real"),
     ({"name": "mnist-mlp", "path": "/copies", "sha256": {"mnist.tar": "ab" * 32}},
      "workloads[0] (mnist-mlp): sha256: mnist.tar is not a file of dataset mnist; expected "
      "mnist.npz"),
     ({"name": "mnist-mlp", "path": "/copies", "sha256": {"mnist.npz": "abc"}},
      "workloads[0].sha256.mnist.npz: 'abc' does not match")],
    ids=["no-path", "synthetic", "no-such-file", "not-a-digest"],
)  # fmt: skip
def test_a_sha256_setting_that_cannot_apply_is_one_line(entry, message):
    with pytest.raises(ConfigError) as err:
        plan(workloads=[entry])
    text = str(err.value)
    assert message in text and "\n" not in text, text

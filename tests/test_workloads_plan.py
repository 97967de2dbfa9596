"""Workloads as part of the configuration and the plan: a configuration
that names none plans exactly the paper's runs as before; several workloads go in the same
rounds; a workload's run spec carries its model, data and recipe; a bad entry is one line."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.planning.plan import Plan
from embryo_bench.vocabulary import layout
from embryo_bench.vocabulary.spec import RunSpec

REPO = Path(__file__).resolve().parents[1]
#: A module of the package's models, and a builder of it, for entries of a model of one's own.
OWN = "embryo_bench.workloads.minimaxir"
OWN_MODEL = f"{OWN}:mnist_mlp"
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
    assert p.all_runs == [(layout.PAPER_WORKLOAD, t, k) for t, k in p.workload_runs("paper")]
    assert [d.removeprefix(p.outdir + "/") for d in p.workload_run_dirs("paper")] == [
        f"train/{t}/repeat-{k}" for t, k in p.workload_runs("paper")
    ]
    d = json.loads(p.spec(*p.workload_runs("paper")[0]).to_json())
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
    assert p.workload_runs("paper") == []  # no paper runs: the paper's workload is not listed
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
        ({"name": "mine", "model": f"{OWN}:no_such_function", "dataset": "mnist", "epochs": 1,
          "batch_size": 8, "learning_rate": 0.1}, "defines no no_such_function"),
        ({"name": "mine", "model": OWN_MODEL}, "a model of your own needs dataset"),
        ({"name": "mine", "model": OWN_MODEL, "dataset": "mnist"},
         "a model of your own needs epochs, batch_size, learning_rate"),
        ({"name": "paper", "batch_size": 8}, "workloads[0] (paper): "),
        ({"name": "imdb-fasttext", "input": "files"}, "input files: imdb holds sequences"),
        ({"name": "catsdogs-cnn"}, "set path: to a folder holding it, or data: synthetic"),
        ({"name": "mnist-mlp", "dataset": "no-such-data", "model": OWN_MODEL},
         "dataset: "),
        ({"name": "mnist-mlp", "data": "synthetic", "augment": True},
         "workloads[0] (mnist-mlp): augment: true: its catalog entry gives none"),
        ({"name": "imdb-fasttext", "data": "synthetic", "augment": True},
         "augment: true: imdb holds sequences"),
        ({"name": "paper", "epoch_steps": 10}, "workloads[0] (paper): epoch_steps set"),
        ({"name": "mnist-mlp", "data": "synthetic", "epoch_steps": "study"},
         "epoch_steps: study: its catalog entry's study counted epochs, not steps"),
        ({"name": "mnist-mlp", "data": "synthetic", "vocabulary": 100},
         "workloads[0] (mnist-mlp): vocabulary 100: mnist holds images"),
        ({"name": "imdb-bilstm", "vocabulary": 100},
         "vocabulary 100: the real data's count decides"),
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


# A copy without the file is refused before its sizes are read (PATH_CASES' without_the_file).
@pytest.mark.parametrize(
    ("files", "message"),
    [({"mnist.npz": 10}, r"mnist\.npz: 10 bytes; expected 11,490,434 \(mnist\.npz of dataset "
      r"mnist in datasets\.yaml: truncated or another file\?\); to use this copy as it is, set "
      r"workload mnist-mlp's sha256: \{mnist\.npz: <its sha256, as sha256sum prints it>\}")],
    ids=["another-size"],
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


def test_an_offline_copy_without_the_datasets_file_is_refused_naming_the_setting(tmp_path):
    (tmp_path / "copy").mkdir()
    with pytest.raises(ConfigError) as err:
        plan(workloads=[{"name": "mnist-mlp", "path": str(tmp_path / "copy")}])
    text = str(err.value)
    assert text.startswith("workloads[0] (mnist-mlp): path ") and "\n" not in text
    assert "no mnist.npz in it; expected a folder holding mnist's files mnist.npz" in text


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


# --- a model of one's own: what may build it (checked without importing it) -----------------

OWN_MODULES = {
    "mymodels.py": """
        import json
        import os
        from json import loads

        from myreexport import small as reexported

        CONSTANT = 3


        def small(input_shape, classes):
            return None


        class Model:
            pass


        async def later(input_shape, classes):
            return None


        try:
            from myreexport import small as guarded
        except ImportError:
            pass
        """,
    "myreexport.py": """
        def small(input_shape, classes):
            return None
        """,
    "mypackage/__init__.py": """
        from .inner import build
        """,
    "mypackage/inner.py": """
        import keras  # never imported by the plan


        def build(input_shape, classes):
            return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                                     keras.layers.Dense(classes)])
        """,
}


@pytest.fixture
def own_modules(tmp_path, monkeypatch):
    for name, text in OWN_MODULES.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _own(model: str) -> dict:
    return {"name": "mine", "model": model, "dataset": "mnist", "data": "synthetic",
            "epochs": 1, "batch_size": 8, "learning_rate": 0.1}  # fmt: skip


#: model -> the line's text after "workloads[0] (mine): model '<model>': ". Each passed
#: check-config (os:system and subprocess:run then ran with a shape and a class count).
REFUSED_MODELS = {
    "os:system": "os is a module of Python's standard library, which builds no model; "
    "expected a Python module of your own (or embryo_bench.workloads' or a study's models) "
    "defining the function",
    "subprocess:run": "subprocess is a module of Python's standard library",
    "json:loads": "json is a module of Python's standard library",
    "embryo_bench.io:atomic_path": "embryo_bench.io is a module of embryo-bench outside "
    "embryo_bench.workloads and the studies' models, which builds no model",
    "embryo_bench.studies.wu.claims:claims": "embryo_bench.studies.wu.claims is a module of "
    "embryo-bench outside embryo_bench.workloads and the studies' models, which builds no model",
    "mymodels:loads": "loads of {own}/mymodels.py is imported from json, where it is no such "
    "function; expected a function (def) returning a Keras model for (input_shape, classes)",
    "mymodels:os": "os of {own}/mymodels.py is an imported module; expected a function (def)",
    "mymodels:CONSTANT": "CONSTANT of {own}/mymodels.py is assigned (line 8), not defined with def",
    "mymodels:Model": "Model of {own}/mymodels.py is a class; expected a function (def)",
    "mymodels:later": "later of {own}/mymodels.py is an async function",
    "mymodels:nothing": "{own}/mymodels.py defines no nothing; expected a function (def)",
}


@pytest.mark.parametrize("model", list(REFUSED_MODELS))
def test_a_model_path_that_builds_no_model_is_refused_at_plan_time(own_modules, model):
    with pytest.raises(ConfigError) as err:
        plan(workloads=[_own(model)])
    text = str(err.value)
    expected = REFUSED_MODELS[model].format(own=own_modules)
    assert text.startswith(f"workloads[0] (mine): model {model!r}: {expected}"), text
    assert "\n" not in text


@pytest.mark.parametrize(
    "model", ["mymodels:small", "mymodels:reexported", "mymodels:guarded", "mypackage:build",
              "mypackage.inner:build", "embryo_bench.workloads.wu:tf_mnist_deep",
              "embryo_bench.studies.wu.models:tf_mnist_deep"],
)  # fmt: skip
def test_a_function_of_ones_own_is_accepted_without_importing_it(own_modules, model):
    """A function defined with def, or imported from a module where it is; found without
    running the module (nor its package's __init__, which would import Keras)."""
    code = (
        "import copy, json, sys\n"
        "from embryo_bench.planning.plan import Plan\n"
        f"config = json.loads({json.dumps(json.dumps(OFFLINE))})\n"
        f"config['workloads'] = [json.loads({json.dumps(json.dumps(_own(model)))})]\n"
        "Plan.from_config(config, probe=lambda target: None)\n"
        "loaded = {'keras', 'tensorflow', 'mymodels', 'myreexport', 'mypackage'} & "
        "set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(own_modules)])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, cwd=own_modules)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


# --- a workload's path: (an offline copy) ----------------------------------------------------


def _copy(tmp_path: Path, *names: str) -> Path:
    """A folder holding ``names`` (files; folders where a name ends in /)."""
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in names:
        if name.endswith("/"):
            (folder / name).mkdir()
        else:
            (folder / name).write_bytes(b"")
    return folder


#: case -> (the entry, from the tmp folder; the line's text after "workloads[0] (<name>): ").
#: A missing or non-folder path ended in Snakemake's MissingInputException (or the data
#: job's error); a path beside synthetic data was ignored without a word.
PATH_CASES = {
    "missing": (
        lambda d: {"name": "mnist-mlp", "path": str(d / "nowhere")},
        "path '{d}/nowhere': no such folder; expected a folder holding mnist's files mnist.npz",
    ),
    "a_file": (
        lambda d: {"name": "mnist-mlp", "path": str(_copy(d, "mnist.npz") / "mnist.npz")},
        "path '{d}/copy/mnist.npz': not a folder; expected a folder holding mnist's files "
        "mnist.npz",
    ),
    "without_the_file": (
        lambda d: {"name": "mnist-mlp", "path": str(_copy(d, "imdb.npz"))},
        "path '{d}/copy': no mnist.npz in it; expected a folder holding mnist's files mnist.npz",
    ),
    "without_a_split": (
        lambda d: {"name": "catsdogs-cnn", "path": str(_copy(d, "training_set/"))},
        "path '{d}/copy': no test_set/ in it; expected a folder holding catsdogs's split "
        "folders training_set/ and test_set/",
    ),
    "beside_synthetic_data": (
        lambda d: {"name": "mnist-mlp", "data": "synthetic", "path": str(_copy(d, "mnist.npz"))},
        "path '{d}/copy' with data: synthetic, whose arrays are generated and read no file; "
        "remove path, or set data: real to train on the copy",
    ),
}


@pytest.mark.parametrize("case", list(PATH_CASES))
def test_a_path_that_holds_no_copy_is_refused_at_plan_time(tmp_path, case):
    entry, expected = PATH_CASES[case]
    entry = entry(tmp_path)
    with pytest.raises(ConfigError) as err:
        plan(workloads=[entry])
    text = str(err.value)
    assert text == f"workloads[0] ({entry['name']}): {expected.format(d=tmp_path)}", text


def test_check_config_names_the_path_in_one_line(tmp_path, capsys):
    from embryo_bench.cli import main

    config = copy.deepcopy(OFFLINE) | {"workloads": [{"name": "mnist-mlp", "path": "nowhere"}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"embryo-bench: error: {path}: workloads[0] (mnist-mlp): path 'nowhere': no such folder; "
        "expected a folder holding mnist's files mnist.npz\n"
    )


def test_an_image_folder_copy_with_both_splits_is_accepted(tmp_path):
    folder = _copy(tmp_path, "training_set/", "test_set/")
    p = plan(workloads=[{"name": "catsdogs-cnn", "path": str(folder)}])
    assert p.data_params("catsdogs-cnn")["path"] == str(folder)


#: case -> (the entry, from the tmp folder; the line's text after "workloads[0] (<name>): ").
#: Each passed the plan, and every data job of it was refused by the loader, naming neither
#: the workload nor input_shape.
SHAPE_CASES = {
    "larger than the dataset's images": (
        lambda d: {"name": "cifar10-cnn", "input_shape": [64, 64, 3]},
        "input_shape [64, 64, 3]: dataset cifar10's files give (32, 32, 3); expected (32, 32, "
        "3) or a central crop of it",
    ),
    "an image folder of two channels": (
        lambda d: {"name": "catsdogs-cnn", "input_shape": [64, 64, 2],
                   "path": str(_copy(d, "training_set/", "test_set/"))},
        "input_shape [64, 64, 2]: dataset catsdogs's files give (64, 64, 3); expected (H, W, 1 "
        "or 3): images are resized",
    ),
    "a sequence of two axes": (
        lambda d: {"name": "lstm-text-generation", "input_shape": [40, 2], "batch_size": 8},
        "input_shape [40, 2]: dataset nietzsche's files give (40,); expected (T,): tokens per "
        "sequence",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(SHAPE_CASES))
def test_a_shape_the_real_data_cannot_give_is_refused_at_plan_time(tmp_path, case):
    entry, expected = SHAPE_CASES[case]
    entry = entry(tmp_path)
    with pytest.raises(ConfigError) as err:
        plan(workloads=[entry])
    assert str(err.value) == f"workloads[0] ({entry['name']}): {expected}"
    # synthetic data is made at any shape (a model of one's own decides what it takes)
    from embryo_bench.data import formats, imagefolder

    assert tuple(imagefolder.MODES) == formats.FOLDER_CHANNELS  # the folder reader's modes
    synthetic = {k: v for k, v in entry.items() if k != "path"}
    plan(workloads=[{**synthetic, "data": "synthetic", "train_samples": 64, "test_samples": 8,
                     "batch_size": 8}])  # fmt: skip


# --- every workload alike: input kinds, folders, what a run trains on ---------------------


def _kinds_plan() -> Plan:
    """The paper's workload and two on arrays: one from memory, one reading image files."""
    return plan(
        workloads=[
            {"name": "paper"},
            {"name": "mnist-mlp", "data": "synthetic"},
            {"name": "mlp-files", "catalog": "mnist-mlp", "data": "synthetic", "input": "files"},
        ]
    )


def test_each_workload_declares_its_input_kind_catalog_model_and_recipe():
    """What the plan and the workflow tell workloads apart by (never the paper's name)."""
    from embryo_bench.vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS

    w = _kinds_plan().workloads
    assert [(v.input_kind, v.catalog, v.own_recipe) for v in w.values()] == [
        (INPUT_SHARDS, "paper", False),
        (INPUT_ARRAYS, "mnist-mlp", True),
        (INPUT_ARRAYS, "mnist-mlp", True),
    ]
    assert w["paper"].model == "embryo_bench.workloads.paper:build_catalog_model"
    assert (
        w["mlp-files"].model == w["mnist-mlp"].model == "embryo_bench.workloads.minimaxir:mnist_mlp"
    )


def test_a_workloads_folder_is_made_and_read_back_in_one_place():
    import re

    assert layout.workload_dir("paper") == "" and layout.workload_of_dir("") == "paper"
    assert layout.workload_of_dir(layout.workload_dir("mnist-mlp")) == "mnist-mlp"
    for bad in ("workloads/", "workloads/a/b/", "train/"):
        with pytest.raises(ValueError, match="not a workload's folder"):
            layout.workload_of_dir(bad)
    assert layout.run_dir("t", 2, "w") == layout.run_path("workloads/w/", "t", 2)
    assert layout.run_dir("t", 2) == "train/t/repeat-2"
    # The workflow's {wdir} constraint: the planned workloads' folders, "" among them.
    pattern = re.compile(layout.workload_dir_pattern(["paper", "mnist-mlp"]))
    assert [bool(pattern.fullmatch(p)) for p in ("", "workloads/mnist-mlp/", "workloads/x/")] == [
        True,
        True,
        False,
    ]
    assert not re.compile(layout.workload_dir_pattern(["mnist-mlp"])).fullmatch("")


def test_a_runs_input_is_of_the_kind_its_spec_trains_on():
    """The train command's data options as one TrainingInput: each kind's options, checked
    against the run, shipped under names of their own and named there again."""
    from embryo_bench.vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS
    from embryo_bench.vocabulary.training_input import TrainingInput

    p = _kinds_plan()
    paper, memory, files = (p.spec("host-1cpu", 1, w) for w in p.workloads)
    assert (paper.input_kind, memory.input_kind, files.input_kind) == (
        INPUT_SHARDS,
        INPUT_ARRAYS,
        INPUT_ARRAYS,
    )
    shards = TrainingInput.for_run(paper, "run.json", shards=["a.npz", "b.npz"])
    assert shards.options() == ["--shards", "a.npz", "b.npz"]
    assert shards.under("/w/in").options() == ["--shards", "/w/in/shard-0.npz", "/w/in/shard-1.npz"]
    assert list(shards.by_name()) == ["shard-0.npz", "shard-1.npz"]
    arrays = TrainingInput.for_run(files, "run.json", arrays="x.npz", files="imgs")
    assert arrays.options() == ["--arrays", "x.npz", "--files", "imgs"]
    assert arrays.under("/w/in") == TrainingInput(
        INPUT_ARRAYS, ("/w/in/arrays.npz",), "/w/in/files"
    )
    assert {n: str(v) for n, v in arrays.by_name().items()} == {
        "arrays.npz": "x.npz",
        "files": "imgs",
    }
    # A memory run takes no image folder, whatever it is given.
    assert TrainingInput.for_run(memory, "r", arrays="x.npz", files="imgs").files == ""
    refused = [
        (paper, {}, "trains on its augmented shards: it needs --shards"),
        (paper, {"shards": ["a"], "arrays": "x"}, "not on --arrays or --files"),
        (memory, {}, "trains on its arrays: it needs --arrays"),
        (memory, {"arrays": "x", "shards": ["a"]}, "not on --shards"),
        (files, {"arrays": "x"}, "reads files: it needs --files"),
    ]
    for spec, given, says in refused:
        with pytest.raises(ConfigError, match=says):
            TrainingInput.for_run(spec, "run.json", **given)
    with pytest.raises(ConfigError, match="one arrays file"):
        TrainingInput(INPUT_ARRAYS, ("a", "b"))


def test_the_trainer_knows_every_input_kind_and_refuses_another_kinds_input():
    from embryo_bench.training import train
    from embryo_bench.vocabulary.spec import INPUT_ARRAYS, INPUT_KINDS
    from embryo_bench.vocabulary.training_input import TrainingInput

    assert set(train.KINDS) == set(INPUT_KINDS)
    paper = _kinds_plan().spec("host-1cpu", 1)
    with pytest.raises(ConfigError, match="trains on shards, given arrays to train on"):
        train.setup(paper, TrainingInput(INPUT_ARRAYS, ("x.npz",)), {})


def test_where_a_study_counted_steps_an_epoch_is_its_steps_and_keeps_its_images():
    """The V100 post's tutorial trains 25 epochs of "8000 steps and 32 images per-step" from
    an endless generator over 8,000 images; Wu et al. 20,000 iterations of 50 (Table II),
    the same 18.18 passes at batch 500 and 5,000 (Table XV). ``epoch_steps: study`` asks
    for the study's; by default an epoch is one pass (a quick run on a few samples never
    trains 256,000 images an epoch); a number of one's own wins."""
    synthetic = {"data": "synthetic", "train_samples": 8000, "test_samples": 2000}
    study = {"epoch_steps": "study"}
    p = plan(workloads=[
        {"name": "catsdogs-cnn", **synthetic, **study},
        {"name": "catsdogs-64", "catalog": "catsdogs-cnn", "batch_size": 64, **synthetic,
         **study},
        {"name": "catsdogs-pass", "catalog": "catsdogs-cnn", **synthetic},
        {"name": "catsdogs-9", "catalog": "catsdogs-cnn", "epoch_steps": 9, **synthetic},
        {"name": "tf-mnist-deep", "data": "synthetic", **study},
        {"name": "tf-mnist-deep-bs500", "catalog": "tf-mnist-deep", "batch_size": 500,
         "data": "synthetic", **study},
        {"name": "mnist-mlp", "data": "synthetic"},
    ])  # fmt: skip

    def spec(name: str) -> RunSpec:
        return p.spec(*p.workload_runs(name)[0], name)

    cats = spec("catsdogs-cnn")
    assert (cats.epochs, cats.epoch_steps, cats.batch_size) == (25, 8000, 32)
    assert spec("catsdogs-64").epoch_steps == 4000  # 256,000 images an epoch at batch 64
    assert spec("catsdogs-pass").epoch_steps == 0 and spec("catsdogs-9").epoch_steps == 9
    wu = spec("tf-mnist-deep")
    assert wu.epochs * wu.epoch_steps == 20000 and wu.batch_size == 50
    wu500 = spec("tf-mnist-deep-bs500")
    assert wu500.epochs * wu500.epoch_steps * 500 == 20000 * 50
    assert spec("mnist-mlp").epoch_steps == 0  # his script counts epochs


def test_augment_chooses_whether_a_workloads_batches_are_augmented_from_files_or_memory():
    """The study's augmentation (its catalog entry's) where the workload augments: by
    default from files, not from memory (the model alone); ``augment: true`` augments the
    arrays in memory (minimaxir's CIFAR-10 CNN from ImageDataGenerator.flow), ``augment:
    false`` decodes files without it."""
    synthetic = {"data": "synthetic", "train_samples": 512, "test_samples": 128}
    p = plan(workloads=[
        {"name": "cifar10-cnn", **synthetic},
        {"name": "cifar10-aug", "catalog": "cifar10-cnn", "augment": True, **synthetic},
        {"name": "cifar10-files", "catalog": "cifar10-cnn", "input": "files", **synthetic},
        {"name": "cifar10-plain", "catalog": "cifar10-cnn", "input": "files",
         "augment": False, **synthetic},
    ])  # fmt: skip

    def augmentation(name: str) -> dict:
        return dict(p.spec(*p.workload_runs(name)[0], name).workload.augmentation)

    his = {"width_shift_range": 0.1, "height_shift_range": 0.1, "horizontal_flip": True}
    assert augmentation("cifar10-cnn") == {} and augmentation("cifar10-plain") == {}
    assert augmentation("cifar10-aug") == his == augmentation("cifar10-files")


def test_minimaxirs_cifar10_cnn_trains_augmented_as_his_script_did():
    """His cifar10_cnn.py trains from ImageDataGenerator(width_shift_range=0.1,
    height_shift_range=0.1, horizontal_flip=True): the study's configuration augments."""
    from embryo_bench.vocabulary.config import read_config_files

    config, sources = read_config_files([REPO / "config" / "minimaxir.yaml"])
    p = Plan.from_config(config, hardware_check="none", on_this_machine=False, sources=sources)
    w = p.spec(*p.workload_runs("cifar10-cnn")[0], "cifar10-cnn").workload
    assert dict(w.augmentation)["horizontal_flip"] is True and w.input_mode == "memory"


def test_imdb_fasttexts_vocabulary_is_its_datas_or_a_setting_for_synthetic_ids():
    """His imdb_fasttext.py sizes the embedding by the data (20,001 + the training set's
    distinct bigrams): real data is made with its bigrams and the trainer takes the data's
    count (the spec's 0); synthetic ids have no bigrams, so their vocabulary is a setting
    (default the dataset's 20,000 words), written into the data job's params only where set
    (every other workload's data keeps its params)."""
    p = plan(workloads=[
        {"name": "imdb-fasttext"},
        {"name": "fasttext-sized", "catalog": "imdb-fasttext", "data": "synthetic",
         "vocabulary": 1_000_000},
        {"name": "fasttext-words", "catalog": "imdb-fasttext", "data": "synthetic"},
        {"name": "imdb-bilstm"},
    ])  # fmt: skip
    real = p.workloads["imdb-fasttext"]
    assert real.spec.vocabulary == 0 and real.data.to_dict()["ngram_range"] == 2
    sized = p.workloads["fasttext-sized"]
    assert sized.spec.vocabulary == 1_000_000 == sized.data.to_dict()["vocabulary"]
    assert "ngram_range" not in sized.data.to_dict()
    words = p.workloads["fasttext-words"].data.to_dict()
    assert p.workloads["fasttext-words"].spec.vocabulary == 20_000
    assert "vocabulary" not in words and "ngram_range" not in words
    bilstm = p.workloads["imdb-bilstm"]
    assert bilstm.spec.vocabulary == 20_000 and "ngram_range" not in bilstm.data.to_dict()

"""Configuration files as Snakemake reads them: several ``--configfile``
merged in order, a refused setting named by the file that set it in one line (Snakemake's own
validate printed the whole configuration), ``check-config`` reading several files as
Snakemake does, and an ``outdir`` that cannot leave the folder the workflow runs in."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config
from workflow_helpers import snakemake_command

from embryo_bench.cli import main
from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan
from embryo_bench.vocabulary.config import (
    apply_defaults,
    load_schema,
    merge_config,
    read_config_files,
)

REPO = Path(__file__).resolve().parents[1]
OFFLINE = REPO / "config" / "offline.yaml"
PAPER_SYNTHETIC = REPO / "config" / "paper-synthetic.yaml"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "over",
    [
        {"train": {"epochs": 1, "repeats": 1}},  # a nested section: merged key by key
        {"targets": [{"name": "a"}]},  # a list: replaced whole
        {"outdir": "x", "dataset": None},  # a section replaced by a plain value
        {"dataset": {"synthetic": {"embryos": 3}}, "new": {"a": {"b": 1}}},  # deeper; new keys
    ],
)
def test_files_merge_as_snakemake_merges_them(over):
    base = yaml.safe_load(PAPER_SYNTHETIC.read_text())
    theirs = copy.deepcopy(base)
    update_config(theirs, copy.deepcopy(over))
    assert merge_config(copy.deepcopy(base), copy.deepcopy(over)) == theirs


def test_a_refused_setting_names_the_file_that_set_it(tmp_path):
    second = _write(tmp_path / "second.yaml", "train: {epochs: 1}\ncolour: red\n")
    config, sources = read_config_files([OFFLINE, second])
    with pytest.raises(ConfigError, match=r"^\S*second.yaml: colour: unknown setting; expected "):
        apply_defaults(config, load_schema(), sources)
    # The first file's value, kept: named as the first file's.
    bad = yaml.safe_load(OFFLINE.read_text())
    bad["train"]["dropout"] = 2
    first = _write(tmp_path / "first.yaml", yaml.safe_dump(bad))
    config, sources = read_config_files([first, _write(tmp_path / "e.yaml", "train: {epochs: 1}")])
    with pytest.raises(ConfigError, match=r"first.yaml: train.dropout: 2 is greater than"):
        apply_defaults(config, load_schema(), sources)
    # A list replaced by the second file: its items are the second file's.
    targets = "targets: [{name: a, runner: host, cpus: zero}]\n"
    config, sources = read_config_files([OFFLINE, _write(tmp_path / "t.yaml", targets)])
    with pytest.raises(ConfigError, match=r"t.yaml: targets\[0\].cpus: 'zero' is not of type"):
        apply_defaults(config, load_schema(), sources)
    # A required setting no file gives: every file named.
    short = _write(tmp_path / "short.yaml", "train: {epochs: 1}\n")
    config, sources = read_config_files([short, _write(tmp_path / "s2.yaml", "select: {}\n")])
    with pytest.raises(ConfigError, match=r"short.yaml \+ \S*s2.yaml: config: 'outdir' is a re"):
        apply_defaults(config, load_schema(), sources)


def test_snakemake_names_the_second_configfile_and_its_unknown_key_in_one_line(tmp_path):
    second = _write(tmp_path / "second.yaml", "train: {epochs: 1}\ncolour: red\n")
    # (--configfile given again: the last one counts, so these two files are the configfiles)
    cmd = snakemake_command(OFFLINE, "-n", "--configfile", str(OFFLINE), str(second))
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert f"{second}: colour: unknown setting; expected one of outdir, " in out
    assert "'sweeps':" not in out and len(out.splitlines()) < 10  # no dump of the config


def test_check_config_reads_the_readmes_two_file_form(tmp_path, capsys):
    short = _write(tmp_path / "short.yaml", "train: {epochs: 1, repeats: 1}\n")
    assert main(["check-config", str(PAPER_SYNTHETIC), str(short)]) == 0
    valid = "valid (7 targets, 1 workloads, outdir results/paper-synthetic)"
    assert capsys.readouterr().out == f"{PAPER_SYNTHETIC} + {short}: {valid}\n"
    # Merged as Snakemake merges them: the second file's epochs over the first's.
    config, _ = read_config_files([PAPER_SYNTHETIC, short])
    plan = Plan.from_config(config, hardware_check="none")
    assert plan.config["train"]["epochs"] == 1 and plan.config["train"]["batch_size"] == 480
    # --each checks independent configurations, one line each; a part on its own is refused.
    assert main(["check-config", "--each", str(PAPER_SYNTHETIC), str(short)]) == 2
    captured = capsys.readouterr()
    assert captured.out == f"{PAPER_SYNTHETIC}: {valid}\n"
    assert (
        captured.err == f"embryo-bench: error: {short}: config: 'outdir' is a required property\n"
    )


def test_check_config_names_a_garbled_second_file(tmp_path, capsys):
    garbled = _write(tmp_path / "garbled.yaml", "train: {epochs: 1\n  x: [\n")
    assert main(["check-config", str(OFFLINE), str(garbled)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"embryo-bench: error: {garbled}, line 2, column 4: expected ','")
    assert len(err.splitlines()) == 1
    assert out == ""  # one configuration: no part of it is valid on its own


@pytest.mark.parametrize("outdir", ["../../escape", "results/../../x", "..", "out/..", "/a/../b"])
def test_an_outdir_cannot_leave_the_folder_the_workflow_runs_in(tmp_path, capsys, outdir):
    config = yaml.safe_load(OFFLINE.read_text())
    config["outdir"] = outdir
    with pytest.raises(ConfigError, match=r"^outdir: .* does not match .* no `\.\.` component"):
        Plan.from_config(config, probe=lambda t: None)
    path = _write(tmp_path / "c.yaml", yaml.safe_dump(config))
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"embryo-bench: error: {path}: outdir: '{outdir}'")


@pytest.mark.parametrize("outdir", ["results/x", "out", "./out", "/tmp/elsewhere/out", "a/..b"])
def test_an_outdir_inside_it_or_absolute_is_accepted(outdir):
    config = yaml.safe_load(OFFLINE.read_text())
    config["outdir"] = outdir
    assert Plan.from_config(config, probe=lambda t: None).outdir == outdir


def test_the_check_config_command_keeps_one_line_for_a_merged_pair(tmp_path):
    """The console command, not main(): one line on stderr, exit 2."""
    second = _write(tmp_path / "second.yaml", "train: {epochs: 0}\n")
    cmd = [sys.executable, "-m", "embryo_bench.cli", "check-config", str(OFFLINE), str(second)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"embryo-bench: error: {second}: train.epochs: 0 is less than the minimum of 1\n"
    )


#: Settings whose schema bounds NaN passed (every comparison with NaN is false), each with a
#: YAML spelling of a number that is not finite.
NOT_FINITE = [
    ("train: {learning_rate: .nan}\n", "train.learning_rate: nan"),
    ("train: {dropout: .NaN}\n", "train.dropout: nan"),
    ("train: {accuracy_target: .nan}\n", "train.accuracy_target: nan"),
    ("stability: {window_cv: .nan}\n", "stability.window_cv: nan"),
    ("stability: {stall_seconds: .inf}\n", "stability.stall_seconds: inf"),
    ("compare: {min_difference: .nan}\n", "compare.min_difference: nan"),
    ("compare: {until: -.inf}\n", "compare.until: -inf"),
    ("preprocess: {crop_fraction: .nan}\n", "preprocess.crop_fraction: nan"),
    ("x-anchor: {price: .inf}\n", "x-anchor.price: inf"),  # even where nothing reads it
]


@pytest.mark.parametrize("text, setting", NOT_FINITE, ids=[s for _, s in NOT_FINITE])
def test_nan_and_infinity_are_refused_naming_the_file_and_the_setting(
    tmp_path, capsys, text, setting
):
    second = _write(tmp_path / "second.yaml", text)
    assert main(["check-config", str(OFFLINE), str(second)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"embryo-bench: error: {second}: {setting}: expected a finite number, not NaN or infinity\n"
    )


@pytest.mark.parametrize("depth", [200, 3000], ids=["deeper than a schema", "deeper than YAML"])
def test_settings_nested_deeper_than_a_configuration_goes_are_refused(tmp_path, capsys, depth):
    """3,000 levels ended in a RecursionError's traceback from PyYAML's composer (from about
    490); 200 passed, under an x- key, as nothing read it."""
    second = _write(tmp_path / "second.yaml", "x-deep: " + "[" * depth + "]" * depth + "\n")
    assert main(["check-config", str(OFFLINE), str(second)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"embryo-bench: error: {second}: "), err
    assert "settings nested more than 50 levels deep; expected a configuration" in err
    assert err.count("\n") == 1


def test_aliases_of_aliases_are_refused_before_any_check_walks_them(tmp_path, capsys):
    """Ten levels of ten aliases each (10^10 values once expanded) parse in a moment, shared,
    and kept check-config walking them for hours (the NaN search, the schema)."""
    lines = ["x-0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"x-{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 10)]
    second = _write(tmp_path / "second.yaml", "\n".join(lines) + "\n")
    assert main(["check-config", str(OFFLINE), str(second)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"embryo-bench: error: {second}: settings that expand to more than 100,000 values "
        "(YAML aliases of aliases?); expected a configuration\n"
    )


def test_a_non_finite_number_in_settings_not_read_from_a_file_is_refused_too():
    """Snakemake's --config, or a configuration built in code: named by its source where
    one is given, by the setting alone otherwise."""
    config = yaml.safe_load(OFFLINE.read_text())
    config["targets"][0]["hourly_usd"] = float("inf")
    with pytest.raises(ConfigError, match=r"^targets\[0\].hourly_usd: inf: expected a finite"):
        Plan.from_config(config, probe=lambda t: None)
    over = {"train": {"learning_rate": float("nan")}}
    config, sources = read_config_files([OFFLINE])
    merge_config(config, over)
    with pytest.raises(ConfigError, match=r"^--config: train.learning_rate: nan: expected"):
        Plan.from_config(config, probe=lambda t: None, sources=[*sources, ("--config", over)])


SHORT_FORMS = sorted((REPO / "config").glob("*-short.yaml"))


@pytest.mark.parametrize("short", SHORT_FORMS, ids=[p.stem for p in SHORT_FORMS])
def test_a_study_short_form_over_another_studys_configuration_is_refused(short, capsys):
    """A short form layered over another study's configuration was "valid" and ran its own
    workloads under that study's name; each names the study it shortens, and the plan
    refuses files that name two. Over its own study's configuration it is valid."""
    study = short.stem.removesuffix("-short")
    own = REPO / "config" / f"{study}.yaml"
    assert yaml.safe_load(short.read_text())["study"] == study
    assert main(["check-config", str(own), str(short)]) == 0
    capsys.readouterr()
    for other in sorted({p.with_name(p.name.replace("-short", "")) for p in SHORT_FORMS}):
        if other == own:
            continue
        theirs = yaml.safe_load(other.read_text())["study"]
        assert main(["check-config", str(other), str(short)]) == 2, other
        out, err = capsys.readouterr()
        assert out == "" and err == (
            f"embryo-bench: error: {other} + {short}: study: {study!r} ({short}) layered over "
            f"{theirs!r} ({other}): files layered as one configuration name one study; a "
            f"study's short form goes over its own study's configuration (config/{study}.yaml)\n"
        )


def test_a_later_file_may_clear_the_study_but_not_name_another(tmp_path):
    config, sources = read_config_files([REPO / "config" / "gpu.yaml"])
    assert config["study"] == "paper"
    cleared = [*sources, ("none.yaml", {"study": ""})]
    plan = Plan.from_config({**config, "study": ""}, probe=lambda t: None, sources=cleared)
    assert plan.config["study"] == ""
    other = [*sources, ("--config", {"study": "wu"})]
    with pytest.raises(ConfigError, match=r"^study: 'wu' \(--config\) layered over 'paper' \("):
        Plan.from_config({**config, "study": "wu"}, probe=lambda t: None, sources=other)

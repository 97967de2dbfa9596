"""A study beside our runs (embryo_bench.reporting.study): the
per-workload-and-target table a claims module receives, made from made-up run folders
(tests/test_machine_identity.py's runs) through the same commands the workflow's study rules
run; the study's rows and ours in one table, SYNTHETIC on its face; a claims module that is
missing or raises named in one line; an unknown ``study:`` refused in one line; and the
workload x target view's ratios on runs with a known ratio. A tiny made-up study (its
numbers CSV written here, its claims module put in place by monkeypatch), so nothing here
depends on the studies' own files."""

from __future__ import annotations

import copy
import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_machine_identity import MONDAY, write_run  # noqa: E402

from embryo_bench.cli import main  # noqa: E402
from embryo_bench.errors import ConfigError, DataError  # noqa: E402
from embryo_bench.planning.plan import Plan  # noqa: E402
from embryo_bench.planning.study import check_study  # noqa: E402
from embryo_bench.published import studies  # noqa: E402
from embryo_bench.reporting import study as study_mod  # noqa: E402
from embryo_bench.reporting import study_numbers  # noqa: E402
from embryo_bench.reporting import workload_view as view_mod  # noqa: E402
from embryo_bench.reporting.claims.common import CANNOT, HOLDS, Claim  # noqa: E402
from embryo_bench.vocabulary.figspec import FiguresSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGETS = {
    "host-1cpu": {"hourly_usd": 0.1, "price_source": "made up"},
    "host-2cpu": {"hourly_usd": 0.2, "price_source": "made up"},
}
#: Each round's speed of the machine (both targets), and host-2cpu's own noise in it.
ROUND_SPEED = (1.00, 1.10, 0.90)
OWN_NOISE = (1.05, 0.95, 1.00)
#: host-2cpu is this much faster than host-1cpu, before its own noise.
FASTER = 2.0
CLAIMS_MODULE = "embryo_bench.studies.fake.fake_claims"
#: A study made in code: no folder of its own (its files are each test's).
FAKE = studies.Study(
    name="fake", number="000", seed="none.txt", title="A made-up study", base_system="",
    claims=CLAIMS_MODULE, folder=REPO / "tests" / "no-such-study", numbers="fake.csv",
)  # fmt: skip


def write_outdir(root: Path, workloads=("mnist-mlp", "mnist-mlp-files")) -> list[dict]:
    """An outdir of ``workloads`` (each as the workflow lays it out: runs, figures spec,
    data info), 3 rounds of host-1cpu (100 images/s x the round's speed; each workload 10x
    the one before) and host-2cpu (:data:`FASTER` x that x its own noise); returns the
    ``--workloads`` entries of ``embryo-bench study-ours``."""
    entries = []
    for i, name in enumerate(workloads):
        folder = root / "workloads" / name
        dirs = []
        for k, speed in enumerate(ROUND_SPEED, start=1):
            rate = 100.0 * 10**i * speed
            start = 1.8e9 + 100 * k + 10 * i
            dirs.append(write_run(folder, "host-1cpu", k, rate, MONDAY, start, workload=name))
            fast = FASTER * rate * OWN_NOISE[k - 1]
            dirs.append(write_run(folder, "host-2cpu", k, fast, MONDAY, start + 5, workload=name))
        spec = FiguresSpec(
            runs=dirs, merge=[], targets=TARGETS, cost_base="host-1cpu", cost_note="",
            compare_base="host-1cpu", min_difference=0.05, stability={}, config={},
        )  # fmt: skip
        spec.write(folder / "figures-spec.json")
        (folder / "data").mkdir()
        (folder / "data" / "info.json").write_text(
            json.dumps({"label": f"{name} (SYNTHETIC)", "synthetic": True})
        )
        entries.append(
            {"name": name, "catalog": "mnist-mlp", "data": "synthetic",
             "input": "files" if name.endswith("files") else "memory",
             "spec": str(folder / "figures-spec.json"), "info": str(folder / "data/info.json")}
        )  # fmt: skip
    return entries


def cli(capsys, *args) -> tuple[int, str]:
    """``embryo-bench *args``: (exit status, stderr)."""
    status = main([str(a) for a in args])
    return status, capsys.readouterr().err


def study_ours(tmp_path, capsys) -> tuple[Path, Path]:
    """study/runs.csv and study/ours.csv of :func:`write_outdir`, made by the command."""
    entries = write_outdir(tmp_path / "out")
    runs, ours = tmp_path / "out/study/runs.csv", tmp_path / "out/study/ours.csv"
    runs.parent.mkdir(parents=True)
    status, err = cli(capsys, "study-ours", "--workloads", json.dumps(entries),
                      "--runs-out", runs, "--ours-out", ours)  # fmt: skip
    assert status == 0, err
    return runs, ours


def write_numbers(path: Path) -> Path:
    """A made-up study's numbers file: one CPU system with its vCPUs and price, one GPU
    system, each with an images/s on mnist-mlp, and a workload we do not run."""
    rows = [
        ("Big CPU", "", "vcpus", 16, "count", "", "made up: table 1", "true", ""),
        ("Big CPU", "", "hourly_usd", 0.8, "USD/h", "", "made up: table 1", "true", ""),
        ("Big CPU", "mnist-mlp", "throughput", 4000, "images/s", "batch_size=128",
         "made up: figure 2", "true", ""),
        ("Big CPU", "mnist-mlp", "test_accuracy", 0.98, "fraction", "batch_size=128",
         "made up: figure 2", "true", ""),
        ("A GPU", "", "gpus", 1, "count", "", "made up: table 1", "true", ""),
        ("A GPU", "", "vcpus", 4, "count", "", "made up: table 1", "true", ""),
        ("A GPU", "mnist-mlp", "throughput", 9000, "images/s", "batch_size=128",
         "made up: figure 2", "true", ""),
        ("A GPU", "mnist-mlp", "throughput", 1, "images/s", "batch_size=128",
         "made up: the text, which the table contradicts", "false", "a misprint"),
        ("Big CPU", "imdb-bilstm", "epoch_seconds", 30, "s", "", "made up: figure 3", "true", ""),
    ]  # fmt: skip
    pd.DataFrame(rows, columns=studies.COLUMNS).to_csv(path, index=False)
    return path


def fake_claims(monkeypatch, tmp_path, check) -> None:
    """Put a claims module ``fake_claims`` whose claims() is ``check`` in place."""
    module = types.ModuleType(CLAIMS_MODULE)
    module.claims = check
    monkeypatch.setitem(sys.modules, CLAIMS_MODULE, module)
    source = tmp_path / "fake_claims.py"
    source.write_text("# stands for the module put in sys.modules\n")
    real = study_mod.module_path
    monkeypatch.setattr(
        study_mod, "module_path", lambda name: source if name == CLAIMS_MODULE else real(name)
    )


def test_ours_has_one_row_per_workload_and_target_with_the_paired_ratio(tmp_path, capsys):
    _, ours_csv = study_ours(tmp_path, capsys)
    ours = study_mod.read_ours(ours_csv)
    assert list(ours.columns) == study_mod.OURS_COLUMNS
    assert list(zip(ours["workload"], ours["target"], strict=True)) == [
        ("mnist-mlp", "host-1cpu"), ("mnist-mlp", "host-2cpu"),
        ("mnist-mlp-files", "host-1cpu"), ("mnist-mlp-files", "host-2cpu"),
    ]  # fmt: skip
    first = ours.iloc[0]
    rates = [100.0 * s for s in ROUND_SPEED]
    assert first["throughput"] == pytest.approx(np.median(rates))
    assert first["training_seconds"] == pytest.approx(np.median([2000 / r for r in rates]))
    assert first["throughput_per_core"] == pytest.approx(first["throughput"])  # 1 cpu
    assert first["cost_usd"] == pytest.approx(first["training_seconds"] / 3600 * 0.1)
    assert (first["verdict"], first["pairing"], first["ratio"]) == ("base", "", 1.0)
    fast = ours.iloc[1]
    expected = FASTER * math.prod(OWN_NOISE) ** (1 / 3)  # the geometric mean of the rounds'
    assert fast["ratio"] == pytest.approx(expected)
    assert fast["ratio_low"] < expected < fast["ratio_high"]
    assert fast["pairing"] == "paired" and fast["verdict"] == "at least 5 % faster"
    assert set(ours["data"]) == {"synthetic"} and list(ours["input"])[2] == "files"
    assert ours["runs"].tolist() == [3, 3, 3, 3] and ours["machine"].str.startswith("xeon").all()
    assert ours["input_wait_share"].isna().all()  # the made-up runs recorded none


def test_the_workload_view_has_the_known_ratio_with_its_interval(tmp_path, capsys):
    runs_csv, _ = study_ours(tmp_path, capsys)
    out = tmp_path / "out/study/workload_view"
    status, err = cli(capsys, "workload-view", "--runs", runs_csv, "--out", out)
    assert status == 0, err
    view = pd.read_csv(out.with_suffix(".csv"))
    assert list(view["workload"].unique()) == ["mnist-mlp", "mnist-mlp-files"]
    rows = view.set_index(["workload", "target"])
    for workload in ("mnist-mlp", "mnist-mlp-files"):
        base, fast = rows.loc[(workload, "host-1cpu")], rows.loc[(workload, "host-2cpu")]
        assert (base["time_relative"], base["cost_relative"], base["pairing"]) == (1, 1, "base")
        time = 1 / (FASTER * math.prod(OWN_NOISE) ** (1 / 3))
        assert fast["time_relative"] == pytest.approx(time)
        assert fast["time_low"] < time < fast["time_high"] and fast["pairs"] == 3
        # cost = time x the price ratio (0.2 / 0.1 USD/h)
        assert fast["cost_relative"] == pytest.approx(time * 2)
        assert fast["cost_low"] == pytest.approx(fast["time_low"] * 2)
    md = out.with_suffix(".md").read_text()
    assert md.startswith("**SYNTHETIC") and f"{time:.3f} [" in md  # 3 pairs: an interval
    assert out.with_suffix(".png").stat().st_size > 0


def test_two_rounds_give_the_ratio_alone(tmp_path):
    runs = pd.DataFrame(
        {"workload": "w", "catalog": "w", "input": "memory", "data": "real", "machine": "m",
         "target": ["a", "b", "a", "b"], "repeat": [1, 1, 2, 2], "sweep": "",
         "training_s": [10.0, 5.0, 12.0, 6.0], "images_per_s": [1.0, 2.0, 1.0, 2.0],
         "hourly_usd": np.nan, "compare_base": "a", "cost_base": "", "merged": False,
         "min_difference": 0.05}
    )  # fmt: skip
    view = view_mod.workload_view(runs).set_index("target")
    assert view.loc["b", "time_relative"] == pytest.approx(0.5)
    assert view.loc["b", "pairs"] == 2 and np.isnan(view.loc["b", "cost_relative"])
    text = view_mod.readable_view(view.reset_index())
    assert text["time vs base [95 % interval]"].tolist() == ["1.000", "0.500"]


def test_the_study_table_has_its_rows_and_ours_and_says_synthetic(tmp_path, capsys, monkeypatch):
    _, ours_csv = study_ours(tmp_path, capsys)
    published = studies.load_numbers(FAKE, write_numbers(tmp_path / "fake.csv"))
    table = study_numbers.side_by_side(published, study_mod.read_ours(ours_csv), FAKE, "host-1cpu")
    theirs, ours = table[table["side"] == "theirs"], table[table["side"] == "ours"]
    used = published[published["used"] & (published["workload"] != "")]
    assert sorted(set(zip(theirs["system"], theirs["workload"], strict=True))) == sorted(
        set(zip(used["system"], used["workload"], strict=True))
    )
    cpu = theirs[(theirs["system"] == "Big CPU") & (theirs["workload"] == "mnist-mlp")].iloc[0]
    number = published.set_index(["system", "metric"])["value"]
    assert (
        cpu["throughput_per_core"]
        == number[("Big CPU", "throughput")] / number[("Big CPU", "vcpus")]
    )
    gpu = theirs[theirs["system"] == "A GPU"].iloc[0]
    assert np.isnan(gpu["throughput_per_core"])  # a GPU system has none
    assert gpu["throughput"] == used.set_index("system").loc["A GPU", "value"]  # the used one
    # ours: both workloads train mnist-mlp, the study's workload; none of imdb-bilstm
    assert set(ours["workload"]) == {"mnist-mlp"} and len(ours) == 4
    assert set(ours["data"]) == {"SYNTHETIC"} and ours["test_accuracy"].isna().all()
    assert ours["machine"].str.startswith("xeon").all() and ours["cost_relative"].notna().all()
    assert list(table["workload"]) == ["mnist-mlp"] * 6 + ["imdb-bilstm"]
    # The same through the command, with a claims module in place.
    fake_claims(monkeypatch, tmp_path, lambda published, ours, runs: [
        Claim("the MLP is fastest on the GPU", CANNOT, "9000 images/s", "no GPU run",
              "made up: section 4", why="no GPU"),
        Claim("two cores beat one", HOLDS, "", f"{len(runs)} runs of {runs['target'].nunique()}"
              " targets", "made up: section 5"),
    ])  # fmt: skip
    monkeypatch.setattr(studies, "studies", lambda path=None: {"fake": FAKE})
    out = tmp_path / "out/study"
    status, err = cli(capsys, "study", "--study", "fake", "--numbers", tmp_path / "fake.csv",
                      "--ours", ours_csv, "--runs", out / "runs.csv", "--out-dir", out)  # fmt: skip
    assert status == 0, err
    md = (out / "numbers.md").read_text()
    assert md.startswith("**SYNTHETIC") and study_numbers.MEANINGLESS in md and "Big CPU" in md
    claims = pd.read_csv(out / "claims.csv")
    assert list(claims.columns) == study_mod.CLAIM_COLUMNS
    assert claims["verdict"].tolist() == ["cannot be checked here (no GPU)", "holds here"]
    runs = study_mod.read_runs(out / "runs.csv")  # the module got every run (study/runs.csv)
    assert claims["ours"].iloc[1] == f"{len(runs)} runs of {runs['target'].nunique()} targets"
    assert (out / "study.png").stat().st_size > 0


def _one_line_error(capsys, *args) -> str:
    status, err = cli(capsys, *args)
    assert status == 2 and err.count("\n") == 1, err
    return err


def test_a_missing_or_failing_claims_module_or_numbers_file_is_one_line(
    tmp_path, capsys, monkeypatch
):
    _, ours_csv = study_ours(tmp_path, capsys)
    numbers = write_numbers(tmp_path / "fake.csv")
    missing = studies.Study(**{**FAKE.__dict__, "claims": "embryo_bench.studies.fake.nothing"})
    monkeypatch.setattr(studies, "studies", lambda path=None: {"fake": missing})
    out = tmp_path / "out/study"
    args = ["study", "--study", "fake", "--numbers", numbers, "--ours", ours_csv,
            "--runs", out / "runs.csv", "--out-dir", out]  # fmt: skip
    err = _one_line_error(capsys, *args)
    assert "no-such-study/nothing.py does not exist" in err

    def broken(published, ours, runs):
        raise KeyError("throughput_per_cor")

    fake_claims(monkeypatch, tmp_path, broken)
    monkeypatch.setattr(studies, "studies", lambda path=None: {"fake": FAKE})
    err = _one_line_error(capsys, *args)
    assert "fake_claims.py) failed: KeyError" in err and "throughput_per_cor" in err
    assert not (out / "numbers.csv").exists()  # nothing written
    fake_claims(monkeypatch, tmp_path, lambda published, ours, runs: "holds")
    assert "returned str; expected a list of Claim" in _one_line_error(capsys, *args)
    args[4] = tmp_path / "nowhere.csv"
    assert "nowhere.csv: cannot read the study's numbers" in _one_line_error(capsys, *args)


def test_an_unknown_study_is_refused_in_one_line_naming_the_known_ones():
    with pytest.raises(ConfigError) as caught:
        check_study("minimax")
    message = str(caught.value)
    assert message.startswith("study: 'minimax' is not a study of src/embryo_bench/studies/")
    assert all(name in message for name in studies.studies()) and "\n" not in message
    check_study("")  # none: nothing to check
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    with pytest.raises(ConfigError, match="^study: 'minimax' is not a study"):
        Plan.from_config({**copy.deepcopy(config), "study": "minimax"}, probe=lambda t: None)


def test_a_known_study_without_its_files_names_the_missing_file(monkeypatch):
    monkeypatch.setattr(studies, "studies", lambda path=None: {"fake": FAKE})
    with pytest.raises(ConfigError, match=r"^study: fake: its numbers file .*fake\.csv does not"):
        check_study("fake")


def test_a_bad_workloads_entry_is_one_line(tmp_path, capsys):
    outs = ["--runs-out", tmp_path / "r.csv", "--ours-out", tmp_path / "o.csv"]
    err = _one_line_error(capsys, "study-ours", "--workloads", json.dumps([{"name": "w"}]), *outs)
    assert "--workloads[0]" in err and "expected the keys" in err
    with pytest.raises(DataError, match="no workload given"):
        study_mod.ours_tables([])


def test_study_changes_no_figures_spec():
    """``study:`` reaches the study's rules only: a workload's figures record a configuration
    without it (so setting it reruns no figures)."""
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    plan = Plan.from_config(copy.deepcopy(config), probe=lambda t: None)
    assert plan.config["study"] == "" and "study" not in plan.figures_spec().config

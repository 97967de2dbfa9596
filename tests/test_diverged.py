"""Numbers that are not numbers: an integer learning rate (or any float
setting given as an int) reaches Keras as a float, and a run whose loss became NaN or
exploded is flagged diverged in every table and never has a time to accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_helpers import offline_config, run_spec_dict, snakemake

from embryo_bench.planning.plan import Plan
from embryo_bench.recording.evidence import divergence
from embryo_bench.reporting import readable_tables, summary
from embryo_bench.reporting.compare import comparison_table
from embryo_bench.reporting.runs import Run
from embryo_bench.reporting.stability import FLAGS
from embryo_bench.training.history import summarise
from embryo_bench.vocabulary.spec import Preprocessing, RunSpec

PP = Preprocessing(
    frame_size=48, crop_fraction=2 / 3, invert_centre=128, rotation_step=90, image_size=16
)


def _history(train_loss, test_accuracy=None, test_loss=None) -> pd.DataFrame:
    n = len(train_loss)
    return pd.DataFrame(
        {
            "epoch": range(1, n + 1),
            "epoch_seconds": [2.0] * n,
            "eval_seconds": [0.5] * n,
            "wall_seconds": [2.5] * n,
            "train_loss": train_loss,
            "train_accuracy": [0.5] * n,
            "test_loss": test_loss if test_loss is not None else [1.0] * n,
            "test_accuracy": test_accuracy if test_accuracy is not None else [0.5] * n,
            "images_per_s": [100.0] * n,
            "ended_unix_s": 1_700_000_000.0 + np.arange(n),
        }
    )


# --- an integer where Keras wants a float ------------------------------------------------------


def test_float_settings_given_as_integers_are_floats_in_the_spec_and_its_run_json():
    entry = {"name": "host-1cpu", "runner": "host", "cpus": 1}
    whole = {"learning_rate": 1, "dropout": 0, "accuracy_target": 1, "probe_seconds": 0}
    spec = RunSpec.from_dict(run_spec_dict(entry, PP, **whole))
    assert {k: (getattr(spec, k), type(getattr(spec, k))) for k in whole} == {
        k: (float(v), float) for k, v in whole.items()
    }
    assert '"learning_rate":1.0' in spec.to_json()
    assert type(PP.replace(crop_fraction=1).crop_fraction) is float
    # From a configuration, through the plan (YAML reads `1` as an int).
    config = offline_config(Path("out"), tiny=True)
    config["train"]["learning_rate"] = 10
    plan = Plan.from_config(config, hardware_check="none")
    assert type(plan.spec("host-1cpu", 1).learning_rate) is float


def test_an_integer_learning_rate_reaches_keras_as_a_float():
    # Keras' Adam refused learning_rate=1 ("should be float"), so every
    # training of a configuration with `learning_rate: 1` crashed after passing every check.
    from embryo_bench.workloads.paper import build_model, compile_model

    spec = RunSpec.from_dict(
        run_spec_dict({"name": "h", "runner": "host", "cpus": 1}, PP, learning_rate=1)
    )
    model = compile_model(build_model(16), spec.learning_rate)
    assert float(model.optimizer.learning_rate) == 1.0


# --- what diverged means -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("train_loss", "test_loss", "expected"),
    [
        ([1.3, 0.9, np.nan, np.nan], None, "train loss NaN at epoch 3"),
        ([1.3, 0.9, 0.7], [1.0, np.inf, 1.0], "test loss infinite at epoch 2"),
        ([2.49e11, 2.8e9, 1.6e5], None, "train loss 2.49e+11 at epoch 1, over 1000 x a guess's"),
        ([1.3, 0.0123, 0.5, 2.5], None, "train loss grew from 0.0123 at epoch 2 to 2.5 at epoch"),
        ([1.39, 0.4, 0.1, 0.05], None, None),  # a healthy run
        ([9.8, 3.0, 1.2, 0.6], None, None),  # the original variant's start at 64 px
        ([0.5, 0.004, 0.001, 0.3], [0.3, 0.9, 2.5, 4.0], None),  # a blip, test loss rising
        ([1.3, 0.9, 0.7], [np.nan] * 3, None),  # no test set scored: an empty test loss
        ([1.3, 0.9, 0.7], [1.0, np.nan, 1.0], "test loss NaN at epoch 2"),  # one scored
        ([1.3, np.nan, 0.7], [np.nan] * 3, "train loss NaN at epoch 2"),
        ([np.nan] * 3, [np.nan] * 3, "train loss NaN at epoch 1"),  # diverged at once
    ],
)
def test_divergence_is_a_nan_or_an_exploded_loss(train_loss, test_loss, expected):
    why = divergence(_history(train_loss, test_loss=test_loss))
    assert why == expected if expected is None else why.startswith(expected)


def test_divergence_needs_the_epochs():
    with pytest.raises(KeyError, match="epoch"):
        divergence(pd.DataFrame({"train_loss": [1.3, np.nan]}))


def test_a_diverged_run_has_no_time_to_accuracy_even_where_an_accuracy_crossed_it():
    history = _history([1.3, 0.2, np.nan], test_accuracy=[0.5, 0.9, 0.25])
    s = summarise(history, 100, 0.85)
    assert s["diverged"] == "train loss NaN at epoch 3"
    assert s["time_to_accuracy_seconds"] is None and s["epochs_to_accuracy"] is None
    healthy = summarise(_history([1.3, 0.2, 0.1], test_accuracy=[0.5, 0.9, 0.95]), 100, 0.85)
    assert healthy["diverged"] is None and healthy["time_to_accuracy_seconds"] == 5.0


def _run(target: str, repeat: int, history: pd.DataFrame, **metrics) -> Run:
    m = {
        "target": target, "repeat": repeat, "runner": "host", "cpus": 1, "gpus": 0,
        "threads": 1, "backend": "tensorflow", "batch_size": 56, "n_train": 112, "n_test": 16,
        "epochs": len(history), "training_seconds": 6.0, "first_epoch_seconds": 2.0,
        "steady_epoch_seconds": 2.0, "mean_images_per_s": 56.0, "final_test_accuracy": 0.9,
        "best_test_accuracy": 0.9, "accuracy_target": 0.85, "time_to_accuracy_seconds": 5.0,
        "parameter_count": 1, "telemetry": {}, "provenance": {"cpu_model": "cpu"}, **metrics,
    }  # fmt: skip
    return Run(f"train/{target}/repeat-{repeat}", m, history)


def test_every_table_says_diverged_and_no_time_to_accuracy_reaches_them():
    good = _history([1.3, 0.2, 0.1], test_accuracy=[0.5, 0.9, 0.95])
    nan = _history([1.3, 0.2, np.nan], test_accuracy=[0.5, 0.9, 0.25])
    runs = [
        _run("a", 1, good, diverged=None),
        _run("b", 1, good, diverged="train loss NaN at epoch 2"),  # the trainer said so
        _run("a", 2, good, diverged=None),
        _run("b", 2, nan),  # made before the trainer said: judged from its history.csv
    ]
    table = summary.run_table(runs, {}, "hand-made")
    assert list(table["flags"]) == ["", "diverged", "", "diverged"]
    assert table["flag_reasons"].iloc[3] == "diverged: train loss NaN at epoch 3"
    assert table["time_to_accuracy_s"].isna().tolist() == [False, True, False, True]
    assert list(table["images_per_s"]) == [56.0] * 4  # the machine did the work: counted
    summ = summary.target_summary(table).set_index("target")
    assert summ.loc["b", "diverged_runs"] == 2 and summ.loc["b", "tta_reached"] == 0
    assert readable_tables.flag_counts(summ.loc["b"]) == "2 (diverged 2)"
    paired = comparison_table(table, "a", 0.05)
    row = paired.set_index("target").loc["b"]
    assert (row["flagged_runs"], row["diverged_runs"]) == (2, 2)
    # Both tables count with stability.flag_runs: the same columns, the same counts.
    counts = [f"{f}_runs" for f in ("flagged", *FLAGS)]
    assert summ.loc["b", counts].tolist() == row[counts].tolist()
    # Never compared on accuracy: it never reached it, and the table says so.
    assert row["time_to_accuracy_verdict"].startswith("never reached (base: ")
    readable = readable_tables.readable_comparison(paired).set_index("target")
    assert readable.loc["b", "flagged runs"] == "2 (diverged 2)"
    assert readable_tables.readable_summary(summ.reset_index()).set_index("target").loc[
        "b", "time to accuracy (s)"] == "not reached (0/2)"  # fmt: skip


def test_a_run_without_a_test_set_is_judged_again_from_its_history():
    # Trainers before 2026-11-26 recorded "test loss NaN at epoch 1" for a workload scored on
    # no test set (minimaxir's text generators); the tables judge such a run again.
    empty = _history([1.5, 0.7, 0.66], test_loss=[np.nan] * 3, test_accuracy=[np.nan] * 3)
    old = _run("text", 1, empty, n_test=0, diverged="test loss NaN at epoch 1")
    nan = _run("text", 2, _history([1.5, np.nan, 0.7], test_loss=[np.nan] * 3), n_test=0,
               diverged="train loss NaN at epoch 2")  # fmt: skip
    scored = _run("scored", 1, empty, diverged="test loss NaN at epoch 1")  # n_test 16: kept
    table = summary.run_table([old, nan, scored], {}, "hand-made")
    assert list(table["flags"]) == ["", "diverged", "diverged"]
    assert table["flag_reasons"].iloc[1] == "diverged: train loss NaN at epoch 2"


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
def test_a_learning_rate_of_10_trains_diverges_and_is_flagged(tmp_path):
    """A configuration with an integer learning rate of 10 (TINY settings, 3 epochs): the
    training runs (it crashed in Keras before), the run says why it diverged, and the
    tables flag it and give it no time to accuracy."""
    config = offline_config(tmp_path / "out", tiny=True)
    config["train"] |= {"learning_rate": 10, "epochs": 3, "accuracy_target": 0.01}
    snakemake(tmp_path, config)
    run = tmp_path / "out/train/host-1cpu/repeat-1"
    metrics = json.loads((run / "metrics.json").read_text())
    history = pd.read_csv(run / "history.csv")
    assert metrics["diverged"], history
    assert history["test_accuracy"].max() >= 0.01, history  # the target was crossed ...
    assert metrics["time_to_accuracy_seconds"] is None  # ... and counts for nothing
    assert json.loads((run / "run.json").read_text())["learning_rate"] == 10.0
    figures = tmp_path / "out/figures"
    results = pd.read_csv(figures / "results_table.csv")
    assert results["flags"].iloc[0].startswith("diverged")
    assert results["flag_reasons"].iloc[0].startswith(f"diverged: {metrics['diverged']}")
    assert np.isnan(results["time_to_accuracy_s"].iloc[0])
    assert pd.read_csv(figures / "summary_table.csv")["diverged_runs"].iloc[0] == 1
    assert pd.read_csv(figures / "comparison_table.csv")["diverged_runs"].iloc[0] == 1
    assert "diverged" in (figures / "results_table.md").read_text()
    assert "1 (diverged 1" in (figures / "summary_table.md").read_text()
    assert yaml.safe_load((figures / "config.yaml").read_text())["train"]["learning_rate"] == 10

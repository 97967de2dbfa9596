"""minimaxir's study (Woolf 2017, study 002): his numbers (the study's numbers.csv) are
the ones his own logs (copied into its sources/) give, every row loads, and the
claims module's verdicts on hand-made runs of ours."""

import csv
import math
import statistics

import pandas as pd
import pytest
from study_helpers import NO_RUNS, study_runs

from embryo_bench.errors import DataError
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, DOES_NOT_HOLD, HOLDS
from embryo_bench.reporting.study import OURS_COLUMNS, read_ours
from embryo_bench.studies.minimaxir import claims as claims_mod
from embryo_bench.studies.minimaxir import logs as mm
from embryo_bench.workloads.catalog import catalog


@pytest.fixture(scope="module")
def numbers():
    return pub.load_numbers("minimaxir")


def _log_of(source: str):
    """The copied log a row's source names (``minimaxir/<repo>:<path>[; figure ...]``)."""
    repo, _, inner = source.split(";")[0].partition(":")
    short = {v: k for k, v in mm.REPOSITORIES.items()}[repo]
    with open(mm.LOGS / short / inner, newline="") as f:
        return [float(r["elapsed"]) for r in csv.DictReader(f)]


def test_every_epoch_and_training_time_is_what_his_log_gives(numbers):
    """Recomputed here with the csv module, not with the module that wrote the file."""
    timed = numbers[numbers["metric"].isin(["epoch_seconds", "training_seconds"])]
    assert len(timed) == 2 * len(mm.logs())
    for _, row in timed.iterrows():
        elapsed = _log_of(row["source"])
        if row["metric"] == "epoch_seconds":
            expected = statistics.median(elapsed[1:])
        else:
            expected = sum(elapsed)
        assert row["value"] == round(expected, mm.DECIMALS), (row["system"], row["workload"])
        assert f"epochs={len(elapsed)}" in row["settings"]


def test_the_file_is_exactly_what_the_logs_and_the_typed_rows_give():
    assert mm.main(["--check"]) == 0


def test_an_edited_number_is_caught(tmp_path):
    text = mm.NUMBERS.read_text()
    # Not a base's own row: its 1 is checked wherever the file is read (test below).
    row = next(
        line
        for line in text.splitlines()
        if ",relative_cost," in line and "K80" not in line.split(",")[0]
    )
    value = row.split(",")[3]
    edited = tmp_path / "minimaxir.csv"
    edited.write_text(text.replace(row, row.replace(f",{value},", f",{float(value) + 0.01},")))
    assert mm.main(["--check", "--path", str(edited)]) == 1


def test_every_workload_is_a_catalog_workload_and_all_seven_are_there(numbers):
    named = set(numbers["workload"]) - {""}
    assert named <= set(catalog())
    assert named == set(mm.SCRIPTS.values())


def test_every_system_has_its_price_vcpus_and_gpus_typed_from_the_posts(numbers):
    typed = numbers[numbers["workload"] == ""]
    for system in mm.SYSTEMS:
        mine = typed[typed["system"] == system]
        assert sorted(mine["metric"]) == ["gpus", "hourly_usd", "vcpus"], system
    assert set(typed["source"].str.split(",").str[0]) <= {mm.SEED} | {
        s for s in typed["source"] if s.startswith("minimaxir/") and ".Rmd" in s
    }


def test_relative_numbers_are_to_each_posts_base_and_only_where_the_post_charts_them(numbers):
    rel = numbers[numbers["metric"].isin(["relative_time", "relative_cost"])]
    for base in mm.BASES.values():
        assert (rel[rel["system"] == base]["value"] == 1.0).all()
    for _, row in rel.iterrows():
        assert row["workload"] in mm.FIGURES[mm.SYSTEMS[row["system"]][0]]
    # the November post does not chart fastText or the text generator
    nov = rel[rel["system"].map(lambda s: mm.SYSTEMS[s][0]) == mm.NOVEMBER]
    assert not set(nov["workload"]) & {"imdb-fasttext", "text-generator"}


def test_a_log_copied_over_another_machines_is_kept_but_not_used(numbers):
    unused = numbers[~numbers["used"]]
    assert set(unused["workload"]) == {"text-generator"}
    assert set(unused["system"]) == {"K80 (2017-11)", "P100 (2017-11)"}
    assert unused["note"].str.contains("byte-identical").all()


def test_a_damaged_log_is_named_in_one_line(tmp_path):
    bad = tmp_path / "mnist_mlp_tensorflow.csv"
    bad.write_text("epoch,elapsed\n0,3.1\n2,abc\n")
    with pytest.raises(DataError, match=r"mnist_mlp_tensorflow.csv: expected epochs 0, 1"):
        mm.read_log(bad)
    bad.write_text("epoch,seconds\n0,3.1\n")
    with pytest.raises(DataError, match="expected columns epoch, elapsed"):
        mm.read_log(bad)


# --- the claims ----------------------------------------------------------------------------


def ours(*runs):
    """Hand-made runs of ours: (catalog, target, cpus, gpus, epoch_seconds, hourly_usd)."""
    rows = []
    for cat, target, cpus, gpus, seconds, price in runs:
        row = dict.fromkeys(OURS_COLUMNS, "")
        row.update(
            workload=cat, catalog=cat, input="memory", data="synthetic", target=target,
            runner="host", backend="tensorflow", cpus=cpus, threads=cpus, gpus=gpus,
            batch_size=128, runs=3, epoch_seconds=seconds, throughput=60000 / seconds,
            throughput_per_core=60000 / seconds / cpus, training_seconds=seconds * 20,
            test_accuracy=math.nan, hourly_usd=price,
            cost_usd=seconds * 20 * price / 3600 if price == price else math.nan,
            input_wait_share=math.nan, ratio=math.nan, ratio_low=math.nan,
            ratio_high=math.nan, machine="test",
        )  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows, columns=OURS_COLUMNS)


def verdicts(numbers, frame):
    return {c.claim: c for c in claims_mod.claims(numbers, frame, NO_RUNS)}


def test_fewer_cpus_cheaper_for_the_mlp_holds_when_one_core_costs_least(numbers):
    frame = ours(
        ("mnist-mlp", "host-1cpu", 1, 0, 10.0, 0.0075),
        ("mnist-mlp", "host-2cpu", 2, 0, 6.0, 0.015),
    )
    claim = verdicts(numbers, frame)[claims_mod.MLP_FEWER_CPUS]
    assert claim.verdict == HOLDS
    assert "host-1cpu" in claim.ours and "GCE 8 vCPU compiled (2017-07)" in claim.theirs


def test_fewer_cpus_cheaper_for_the_mlp_does_not_hold_when_two_cores_scale_perfectly(numbers):
    frame = ours(
        ("mnist-mlp", "host-1cpu", 1, 0, 10.0, 0.0075),
        ("mnist-mlp", "host-2cpu", 2, 0, 4.0, 0.015),
    )
    assert verdicts(numbers, frame)[claims_mod.MLP_FEWER_CPUS].verdict == DOES_NOT_HOLD


def test_the_mlp_claims_cannot_be_checked_without_priced_targets(numbers):
    frame = ours(
        ("mnist-mlp", "host-1cpu", 1, 0, 10.0, math.nan),
        ("mnist-mlp", "host-2cpu", 2, 0, 6.0, math.nan),
    )
    claim = verdicts(numbers, frame)[claims_mod.MLP_FEWER_CPUS]
    assert claim.verdict == CANNOT and "priced" in claim.why


def test_the_gpu_claims_cannot_be_checked_without_a_gpu(numbers):
    frame = ours(
        ("mnist-mlp", "host-1cpu", 1, 0, 10.0, 0.0075),
        ("mnist-cnn", "host-1cpu", 1, 0, 30.0, 0.0075),
        ("imdb-bilstm", "host-1cpu", 1, 0, 200.0, 0.0075),
    )
    found = verdicts(numbers, frame)
    for name in (claims_mod.MLP_CPU_CHEAPER, claims_mod.CNN_K80, claims_mod.BILSTM_GPU_SLOWER):
        assert found[name].verdict == CANNOT and found[name].why == "no GPU", name
        assert found[name].theirs  # the study's side is still given


def _real(frame: pd.DataFrame, tmp_path) -> pd.DataFrame:
    """``frame`` as study/ours.csv gives it to the claims (written and read back: integer
    columns nullable, an unpriced target's hourly_usd NaN)."""
    path = tmp_path / "ours.csv"
    frame.to_csv(path, index=False)
    return read_ours(path)


def _rounds(seconds: dict[tuple[str, str], list[float]]):
    """One run per round: {(catalog, target): its seconds per epoch, round by round}."""
    return study_runs(*(
        dict(workload=cat, target=target, repeat=k, steady_epoch_s=t, images_per_s=60000 / t)
        for (cat, target), times in seconds.items() for k, t in enumerate(times, 1)
    ))  # fmt: skip


GPU_RUNS = {
    ("mnist-mlp", "host-2cpu"): [6.0, 6.3, 5.8],
    ("mnist-mlp", "gpu-1"): [3.0, 3.1, 2.95],
    ("mnist-cnn", "host-2cpu"): [100.0, 104.0, 98.0],
    ("mnist-cnn", "gpu-1"): [1.0, 1.02, 0.99],
    ("imdb-bilstm", "host-2cpu"): [100.0, 103.0, 97.0],
    ("imdb-bilstm", "gpu-1"): [20.0, 20.5, 19.6],
}


def _geomean(values):
    return math.exp(statistics.mean(math.log(v) for v in values))


def test_the_gpu_claims_are_judged_where_a_gpu_ran(numbers, tmp_path):
    frame = _real(
        ours(
            ("mnist-mlp", "host-2cpu", 2, 0, 6.0, 0.015),
            ("mnist-mlp", "gpu-1", 4, 1, 3.0, 0.4975),
            ("mnist-cnn", "host-2cpu", 2, 0, 100.0, 0.015),
            ("mnist-cnn", "gpu-1", 4, 1, 1.0, 0.4975),
            ("imdb-bilstm", "host-2cpu", 2, 0, 100.0, 0.015),
            ("imdb-bilstm", "gpu-1", 4, 1, 20.0, 0.4975),
        ),
        tmp_path,
    )
    assert str(frame["gpus"].dtype) == "Int64"
    found = {c.claim: c for c in claims_mod.claims(numbers, frame, _rounds(GPU_RUNS))}
    mlp = found[claims_mod.MLP_CPU_CHEAPER]
    assert mlp.verdict == HOLDS
    # The GPU's cost of an epoch over the CPU's: the prices' ratio over the speeds' ratio,
    # paired round by round.
    speed = _geomean(
        c / g
        for c, g in zip(
            GPU_RUNS[("mnist-mlp", "host-2cpu")], GPU_RUNS[("mnist-mlp", "gpu-1")], strict=True
        )
    )
    assert f"gpu-1's cost over host-2cpu's x{0.4975 / 0.015 / speed:.3f} [" in mlp.ours
    assert "gpu-1 (4 cpus, 1 GPU) 0.000415" in mlp.ours  # 3 s x 0.4975 USD/h
    assert found[claims_mod.CNN_K80].verdict == HOLDS
    bilstm = found[claims_mod.BILSTM_GPU_SLOWER]
    assert bilstm.verdict == DOES_NOT_HOLD
    gpu_time = _geomean(
        g / c
        for c, g in zip(
            GPU_RUNS[("imdb-bilstm", "host-2cpu")], GPU_RUNS[("imdb-bilstm", "gpu-1")], strict=True
        )
    )
    assert f"gpu-1's time over the slowest CPU's (host-2cpu) x{gpu_time:.3f} [" in bilstm.ours


def test_the_gpu_claims_need_rounds_and_a_priced_gpu(numbers, tmp_path):
    rows = (
        ("mnist-mlp", "host-2cpu", 2, 0, 6.0, 0.015),
        ("mnist-mlp", "gpu-1", 4, 1, 3.0, math.nan),
        ("mnist-cnn", "host-2cpu", 2, 0, 100.0, 0.015),
        ("mnist-cnn", "gpu-1", 4, 1, 1.0, math.nan),
        ("imdb-bilstm", "host-2cpu", 2, 0, 100.0, 0.015),
        ("imdb-bilstm", "gpu-1", 4, 1, 120.0, math.nan),
    )
    frame = _real(ours(*rows), tmp_path)
    found = verdicts(numbers, frame)  # no runs: the medians alone
    for name, cat in (
        (claims_mod.MLP_CPU_CHEAPER, "mnist-mlp"),
        (claims_mod.CNN_K80, "mnist-cnn"),
    ):
        assert found[name].why == f"no priced GPU target ran {cat} (hourly_usd)", name
    # A GPU slower than the CPU by the medians, with no round to give an interval: no verdict.
    bilstm = found[claims_mod.BILSTM_GPU_SLOWER]
    assert bilstm.verdict == CANNOT and bilstm.why == "the ratio of the medians only: no interval"
    assert "x1.200, the ratio of the medians (no runs to pair)" in bilstm.ours
    slower = {
        ("imdb-bilstm", "host-2cpu"): [100.0, 101.0, 99.0],
        ("imdb-bilstm", "gpu-1"): [120.0, 123.0, 118.0],
    }
    claim = claims_mod.bilstm_gpu_slower(numbers, frame, _rounds(slower))
    assert claim.verdict == HOLDS  # about 1.2x the time in every round
    two = {k: v[:2] for k, v in slower.items()}
    claim = claims_mod.bilstm_gpu_slower(numbers, frame, _rounds(two))
    assert claim.why == "2 pairs: too few for a verdict (3 needed)"


def test_a_gpu_of_another_workload_is_not_a_gpu_run_of_this_one(numbers):
    frame = ours(
        ("mnist-mlp", "host-2cpu", 2, 0, 6.0, 0.015),
        ("mnist-cnn", "gpu-1", 4, 1, 1.0, 0.4975),
    )
    assert verdicts(numbers, frame)[claims_mod.MLP_CPU_CHEAPER].why == (
        "no GPU target ran mnist-mlp"
    )


def test_the_studys_side_is_read_from_the_numbers_not_typed(numbers):
    """Changing his 8 vCPU compiled MLP cost changes the claim's 'theirs'."""
    frame = ours(("mnist-mlp", "host-1cpu", 1, 0, 10.0, 0.0075))
    before = verdicts(numbers, frame)[claims_mod.MLP_FEWER_CPUS].theirs
    edited = numbers.copy()
    pick = (
        (edited["system"] == "GCE 8 vCPU compiled (2017-07)")
        & (edited["workload"] == "mnist-mlp")
        & (edited["metric"] == "relative_cost")
    )
    edited.loc[pick, "value"] = 0.5
    assert verdicts(edited, frame)[claims_mod.MLP_FEWER_CPUS].theirs != before


def test_his_july_machines_are_priced_as_his_july_post_and_notebook_price_them(numbers):
    """The 8 and 64 vCPU targets are his July machines: their prices are that post's ($0.509
    for 64 vCPUs) and his notebook's (0.060 x 1.0607 for 8), as numbers.csv gives them, not
    November's $0.0075 a vCPU pro rata (0.06 and 0.48)."""
    import yaml

    from embryo_bench.studies.registry import CONFIG, studies

    config = yaml.safe_load(studies()["minimaxir"].file(CONFIG).read_text())
    prices = {t["name"]: t for t in config["targets"]}
    rows = numbers[numbers["metric"] == "hourly_usd"].set_index("system")["value"]
    for target, system in (("gce-8vcpu", "GCE 8 vCPU pip (2017-07)"),
                           ("gce-64vcpu", "GCE 64 vCPU pip (2017-07)")):  # fmt: skip
        assert prices[target]["hourly_usd"] == pytest.approx(float(rows[system]))
        assert (
            "2017-07" in prices[target]["price_source"]
            or "notebook" in (prices[target]["price_source"])
        )

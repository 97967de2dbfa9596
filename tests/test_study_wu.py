"""Wu et al.'s study (Wu et al. 2018, study 003): its published numbers (its folder's
numbers.csv) load, name catalog workloads and are printed in the study's text where the file
says; its claims module gives each verdict on hand-made runs of ours."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from study_helpers import NO_RUNS, seed_copy, study_runs

from embryo_bench.planning.plan import Plan
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, DOES_NOT_HOLD, HOLDS, Claim
from embryo_bench.reporting.study import OURS_COLUMNS
from embryo_bench.studies.wu import claims as wu
from embryo_bench.vocabulary.config import read_config_file, read_config_files
from embryo_bench.workloads.catalog import catalog

REPO = Path(__file__).resolve().parents[1]
STUDY = pub.studies()["wu"]
SEED = seed_copy(STUDY.number)
CONFIG = REPO / "config" / "wu.yaml"
SHORT = REPO / "config" / "wu-short.yaml"


@pytest.fixture(scope="module")
def numbers() -> pd.DataFrame:
    return pub.load_numbers("wu")


# --- the published numbers ------------------------------------------------------------------


def test_every_row_loads_and_names_the_seed(numbers):
    assert len(numbers) == len(STUDY_ROWS())
    assert numbers["source"].str.startswith(STUDY.seed + " ").all()


def STUDY_ROWS() -> list[str]:  # noqa: N802 - the file's data lines, read apart from pandas
    return [line for line in STUDY.path.read_text().splitlines()[1:] if line]


def test_every_workload_is_a_catalog_workload_or_another_frameworks_network(numbers):
    named = numbers[numbers["workload"] != ""]
    assert set(named["workload"]) <= set(catalog())
    # A row without a workload is about a system, or about Caffe's, Torch's or Theano's own
    # network (Table XII's thread sweep), which the catalog does not hold.
    for _, row in numbers[numbers["workload"] == ""].iterrows():
        settings = pub.parse_settings(row["settings"])
        assert row["metric"] == "vcpus" or settings["framework"] in {"caffe", "torch", "theano"}


def test_every_measurement_says_cpu_or_gpu(numbers):
    measured = numbers[numbers["metric"] != "vcpus"]
    gpus = [pub.parse_settings(s).get("gpus") for s in measured["settings"]]
    assert set(gpus) == {"0", "1"}


def test_one_used_number_per_setting_and_the_other_kept_with_a_note(numbers):
    key = ["system", "workload", "metric", "settings"]
    used = numbers[numbers["used"]]
    assert not used.duplicated(key).any()
    for _, row in numbers[~numbers["used"]].iterrows():
        twin = used[(used[key] == row[key]).all(axis=1)]
        assert len(twin) == 1
        # The note of either names the other's value as printed.
        printed = f"{twin['value'].iloc[0]:.2f}"
        assert printed in row["note"] and f"{row['value']:.2f}" in twin["note"].iloc[0]


def _regions(text: str) -> dict[str, str]:
    """Table number (roman) -> the text from the previous table's caption to its own, and
    section number -> the section's text."""
    lines = text.splitlines()
    out, start = {}, 0
    for i, line in enumerate(lines):
        caption = re.match(r"TABLE ([IVX]+):", line)
        if caption:
            out[f"Table {caption.group(1)}"] = "\n".join(lines[start : i + 1])
            start = i + 1
        section = re.match(r"(\d+(?:\.\d+)+) [A-Z]", line)
        if section:
            end = next(
                (j for j in range(i + 1, len(lines)) if re.match(r"\d+(\.\d+)+ [A-Z]", lines[j])),
                len(lines),
            )
            out[f"section {section.group(1)}"] = "\n".join(lines[i:end])
    return out


def _printed(row) -> list[str]:
    """The forms the study may have printed a number in: as in the file, with a thousands
    comma, and a fraction as a percentage with two decimals."""
    if row["unit"] == "fraction":
        value = row["value"] * 100
        return [f"{value:.2f}", f"{value:,.2f}"]
    raw = row["raw"]
    whole, _, decimals = raw.partition(".")
    grouped = f"{int(whole):,}" + (f".{decimals}" if decimals else "")
    return [raw, grouped]


@pytest.mark.skipif(not SEED.is_file(), reason=f"the study's text {SEED} is not beside the repo")
def test_every_number_is_printed_where_its_source_says(numbers):
    regions = _regions(SEED.read_text())
    raw = pd.read_csv(STUDY.path, dtype=str, keep_default_na=False)["value"]
    checked = 0
    for (_, row), text in zip(numbers.iterrows(), raw, strict=True):
        row = {**row, "raw": text}
        places = re.findall(r"(Table [IVX]+|section [\d.]+)", row["source"])
        assert places, f"{row['source']}: names no table or section"
        for place in places:
            assert place in regions, f"{place}: not in the study's text"
            pattern = "|".join(rf"(?<![\d.,]){re.escape(p)}(?![\d])(?!\.\d)" for p in _printed(row))
            assert re.search(pattern, regions[place]), f"{row['value']} not printed in {place}"
            checked += 1
    assert checked > len(numbers)  # several rows name more than one table


@pytest.mark.skipif(not SEED.is_file(), reason=f"the study's text {SEED} is not beside the repo")
def test_the_batch_sweep_is_table_xv_as_printed(numbers):
    """The batch rows the claim reads are Table XV's line by line: batch, total and per-epoch
    time in one printed line each."""
    table = _regions(SEED.read_text())["Table XV"]
    sweep = wu.batch_sweep(numbers)
    assert list(sweep.index) == [50, 500, 5000, 50000]
    for batch, row in sweep.iterrows():
        line = next(x for x in table.splitlines() if x.startswith(f"{batch} "))
        assert f"{row['epoch_seconds']:.2f}" in line
        assert f"{row['training_seconds']:,.2f}" in line


# --- the claims on hand-made runs of ours ----------------------------------------------------

OURS = OURS_COLUMNS


def ours_row(**fields) -> dict:
    row = dict.fromkeys(OURS, "")
    row.update(
        workload="tf-mnist-deep", catalog="tf-mnist-deep", input="memory", data="synthetic",
        target="host-2cpu", runner="host", backend="tensorflow", cpus=2, threads=2, gpus=0,
        batch_size=50, runs=3, epoch_seconds=10.0, throughput=5500.0, test_accuracy=0.1,
        ratio=math.nan, ratio_low=math.nan, ratio_high=math.nan, machine="test VM",
    )  # fmt: skip
    row.update(fields)
    return row


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=OURS)


def sweep(times, data="synthetic", accuracies=(0.99, 0.98, 0.95), target="host-2cpu"):
    return [
        ours_row(
            workload=f"tf-mnist-deep-bs{b}",
            batch_size=b,
            epoch_seconds=t,
            data=data,
            test_accuracy=a,
            target=target,
        )  # fmt: skip
        for b, t, a in zip(wu.BATCHES, times, accuracies, strict=True)
    ]


def by_claim(claims: list[Claim]) -> dict[str, Claim]:
    assert len(claims) == 6
    return {c.claim.split()[0] + str(i): c for i, c in enumerate(claims)}


def test_nothing_of_ours_ran_every_claim_says_why(numbers):
    claims = wu.claims(numbers, frame(), NO_RUNS)
    assert [c.verdict for c in claims] == [CANNOT] * 6
    assert [c.why for c in claims][3:] == [
        "no GPU",
        "no GPU",
        "one TensorFlow build here; the study compiled TensorFlow 1.x with Eigen and with MKL",
    ]


def test_the_batch_shape_holds_when_every_step_is_faster(numbers):
    claim = wu.batch_time_claim(numbers, frame(*sweep([12.0, 9.0, 8.5])), NO_RUNS)
    assert claim.verdict == HOLDS
    # The study's side from the file: Table XV's totals and its per-epoch drops.
    table = wu.batch_sweep(numbers)
    for seconds in table.loc[list(wu.BATCHES), "training_seconds"]:
        assert f"{seconds:,.2f}" in claim.theirs
    assert (
        f"x{table.loc[500, 'epoch_seconds'] / table.loc[50, 'epoch_seconds']:.3f}" in claim.theirs
    )
    assert "12.00 / 9.00 / 8.50 s per epoch (x0.750, x0.708; runs 3/3/3; falls)" in claim.ours


def test_the_batch_shape_does_not_hold_when_a_step_is_slower(numbers):
    rows = sweep([12.0, 9.0, 8.5]) + sweep([12.0, 9.0, 9.5], target="host-1cpu")
    claim = wu.batch_time_claim(numbers, frame(*rows), NO_RUNS)
    assert claim.verdict == DOES_NOT_HOLD
    assert "host-1cpu" in claim.ours and "does not fall at every step" in claim.ours


def _sweep_runs(seconds_by_batch: dict[int, list[float]], target="host-2cpu"):
    """Each batch's runs, one per round, as study/runs.csv has them."""
    return study_runs(*(
        dict(workload=f"tf-mnist-deep-bs{b}", target=target, repeat=k, steady_epoch_s=t)
        for b, times in seconds_by_batch.items() for k, t in enumerate(times, 1)
    ))  # fmt: skip


def test_the_batch_steps_are_paired_within_the_rounds(numbers):
    # The machine slows down round by round; each round, batch 500 takes 0.70-0.74 of batch
    # 50's time and batch 5,000 0.94-0.96 of batch 500's: both steps fall, with intervals.
    b50 = [10.0, 12.0, 15.0]
    b500 = [t * r for t, r in zip(b50, (0.70, 0.74, 0.72), strict=True)]
    b5000 = [t * r for t, r in zip(b500, (0.94, 0.96, 0.95), strict=True)]
    runs = _sweep_runs({50: b50, 500: b500, 5000: b5000})
    medians = [sorted(v)[1] for v in (b50, b500, b5000)]
    claim = wu.batch_time_claim(numbers, frame(*sweep(medians)), runs)
    assert claim.verdict == HOLDS
    step = re.search(r"500/50 x(0\.\d+) \[(0\.\d+), (0\.\d+)\], 3 rounds", claim.ours)
    assert step and float(step[2]) < 0.72 < float(step[3]) < 1.0
    assert re.search(r"5,000/500 x0\.950 \[0\.9\d\d, 0\.9\d\d\], 3 rounds", claim.ours)
    # The medians fall (10 -> 9.5 -> 9 s), but round by round batch 500 is not resolved from
    # batch 50 (0.90, 1.10, 0.95 of its time: the interval covers 1): cannot be checked.
    runs = _sweep_runs({50: [10.0] * 3, 500: [9.0, 11.0, 9.5], 5000: [8.5, 10.0, 9.0]})
    claim = wu.batch_time_claim(numbers, frame(*sweep([10.0, 9.5, 9.0])), runs)
    assert claim.verdict == CANNOT
    assert claim.why == "a step's interval covers 1: more rounds would resolve it"
    assert "the rounds do not resolve 500/50)" in claim.ours
    # A step whose interval lies above 1 rises: the claim does not hold, whatever the medians.
    runs = _sweep_runs({50: [10.0] * 3, 500: [10.5, 10.6, 10.4], 5000: [9.0, 9.1, 8.9]})
    claim = wu.batch_time_claim(numbers, frame(*sweep([10.0, 9.5, 9.0])), runs)
    assert claim.verdict == DOES_NOT_HOLD and "does not fall at every step" in claim.ours


def test_the_batch_shape_needs_all_three_batches_from_memory_on_a_cpu(numbers):
    rows = sweep([12.0, 9.0, 8.5])
    for broken in (
        rows[:2],
        [{**r, "input": "files"} for r in rows],
        [{**r, "gpus": 1} for r in rows],
        [{**r, "runs": 0} for r in rows],
    ):
        assert wu.batch_time_claim(numbers, frame(*broken), NO_RUNS).verdict == CANNOT


def test_accuracy_is_checked_on_real_data_only(numbers):
    assert wu.batch_accuracy_claim(numbers, frame(*sweep([3, 2, 1]))).why == (
        "synthetic data: accuracy is meaningless"
    )
    real = wu.batch_accuracy_claim(numbers, frame(*sweep([3, 2, 1], data="real")))
    assert real.verdict == HOLDS and "0.9900 / 0.9800 / 0.9500" in real.ours
    flat = sweep([3, 2, 1], data="real", accuracies=(0.99, 0.99, 0.95))
    assert wu.batch_accuracy_claim(numbers, frame(*flat)).verdict == DOES_NOT_HOLD


def test_threads_claim_reads_table_xii_and_compares_our_thread_pools(numbers):
    one = ours_row(target="host-2cpu-t1", threads=1, throughput=3000.0)
    two = ours_row(target="host-2cpu", threads=2, throughput=5000.0)
    claim = wu.threads_claim(numbers, frame(one, two))
    assert claim.verdict == DOES_NOT_HOLD  # two threads on two cores are faster
    assert "2 threads 5000.0 images/s vs 1 threads 3000.0 images/s" in claim.ours
    sweep_rows = numbers[numbers["source"].str.contains(r"Table XII(?!I)")]
    best = sweep_rows.loc[sweep_rows["value"].idxmin()]
    assert f"{best['value']:,.2f} s" in claim.theirs
    slower = wu.threads_claim(numbers, frame(one, {**two, "throughput": 2900.0}))
    assert slower.verdict == HOLDS
    # Only TensorFlow's default batch (Table VI(a)'s) counts: other batches are claim 1's.
    assert wu.default_batch(numbers) == 50
    other = [{**r, "batch_size": 500, "throughput": r["throughput"] * 2} for r in (one, two)]
    assert wu.threads_claim(numbers, frame(one, {**two, "throughput": 2900.0}, *other)).verdict == (
        HOLDS
    )
    assert wu.threads_claim(numbers, frame(*other)).verdict == CANNOT


def test_threads_overlapping_intervals_are_not_faster(numbers):
    one = ours_row(target="host-2cpu-t1", threads=1, throughput=3000.0,
                   ratio=1.0, ratio_low=0.95, ratio_high=1.05)  # fmt: skip
    two = ours_row(target="host-2cpu", threads=2, throughput=3100.0,
                   ratio=1.03, ratio_low=0.99, ratio_high=1.08)  # fmt: skip
    claim = wu.threads_claim(numbers, frame(one, two))
    assert claim.verdict == HOLDS and "(x1.03 [0.99, 1.08])" in claim.ours
    apart = {**two, "ratio": 1.6, "ratio_low": 1.5, "ratio_high": 1.7}
    assert wu.threads_claim(numbers, frame(one, apart)).verdict == DOES_NOT_HOLD
    # Different cpus or batch sizes are not a thread comparison.
    assert wu.threads_claim(numbers, frame(one, {**two, "cpus": 4})).verdict == CANNOT


def _gpu_rounds(ratios, workload="tf-mnist-deep", cpu=5500.0):
    """Three rounds of host-2cpu at ``cpu`` images/s and gpu-1 at ``ratios`` x that."""
    return study_runs(
        *(dict(workload=workload, target="host-2cpu", repeat=k, images_per_s=cpu)
          for k in range(1, len(ratios) + 1)),
        *(dict(workload=workload, target="gpu-1", repeat=k, images_per_s=cpu * r)
          for k, r in enumerate(ratios, 1)),
    )  # fmt: skip


def test_the_gpu_threshold_is_the_studys_smallest_tensorflow_speed_up(numbers):
    pairs = wu.gpu_speedups(numbers)
    assert list(pairs["table"]) == list(wu.GPU_TABLES)
    # Each pair is a GPU time beside the same table's CPU time, from the file.
    first = pairs.iloc[0]
    assert (first["cpu_seconds"], first["gpu_seconds"]) == (1114.34, 68.51)
    least = wu.smallest_gpu_speedup(numbers)
    assert least["table"] == "Table VII(a)" and least["workload"] == wu.MNIST
    assert least["speedup"] == pytest.approx(662.03 / 148.39)
    assert least["speedup"] == pairs["speedup"].min()


def test_a_gpu_run_makes_the_gpu_claim_checkable(numbers):
    cpu = ours_row(target="host-2cpu", throughput=5500.0)
    gpu = ours_row(target="gpu-1", gpus=1, cpus=4, throughput=110000.0)
    ratios = (19.0, 20.0, 21.0)
    claim = wu.gpu_claim(numbers, frame(cpu, gpu), _gpu_rounds(ratios), wu.MNIST)
    assert claim.verdict == HOLDS
    # The paired ratio: geometric mean and 95 % t interval of the three rounds' ratios.
    logs = [math.log(r) for r in ratios]
    mean, sd = statistics.mean(logs), statistics.stdev(logs)
    half = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    low, high = math.exp(mean - half), math.exp(mean + half)
    assert (
        f"GPU/CPU x{math.exp(mean):.3f} [{low:.3f}, {high:.3f}], paired within 3 rounds"
        in claim.ours
    )
    assert "gpu-1 (1 GPU, 4 cpus) 110,000 images/s vs host-2cpu (2 cpus) 5,500" in claim.ours
    assert "(x16.3)" in claim.theirs  # 1,114.34 / 68.51, from the file
    assert "smallest TensorFlow speed-up: x4.46 (Server-2 Tesla M60" in claim.theirs
    assert "at least x4.46" in claim.claim and "the claim: at least x4.46" in claim.ours
    # Faster, but by less than the study's least: does not hold.
    slow = wu.gpu_claim(numbers, frame(cpu, gpu), _gpu_rounds((2.9, 3.0, 3.1)), wu.MNIST)
    assert slow.verdict == DOES_NOT_HOLD
    # An interval across x4.46, one round, or the medians alone: no verdict.
    wide = wu.gpu_claim(numbers, frame(cpu, gpu), _gpu_rounds((3.0, 6.0, 4.5)), wu.MNIST)
    assert wide.verdict == CANNOT and wide.why.startswith("the interval covers x4.46")
    one = wu.gpu_claim(numbers, frame(cpu, gpu), _gpu_rounds((20.0,)), wu.MNIST)
    assert one.verdict == CANNOT and one.why == "one pair: no interval"
    assert "x20.000, 1 round paired, no interval" in one.ours
    medians = wu.gpu_claim(numbers, frame(cpu, gpu), NO_RUNS, wu.MNIST)
    assert medians.verdict == CANNOT and "ratio of the medians" in medians.why
    assert wu.gpu_claim(numbers, frame(gpu), NO_RUNS, wu.MNIST).why == (
        "no CPU target ran tf-mnist-deep at batch 50"
    )
    assert wu.gpu_claim(numbers, frame(cpu, gpu), NO_RUNS, wu.CIFAR10).why == (
        "no GPU target ran tf-cifar10"
    )
    assert wu.gpu_claim(numbers, frame(cpu), NO_RUNS, wu.MNIST).why == "no GPU"


def test_the_gpu_claim_takes_the_workload_at_the_studys_batch(numbers):
    rows = [
        ours_row(workload=f"tf-mnist-deep-bs{b}", batch_size=b, target=t, gpus=g,
                 throughput=thr)
        for b in (500, 50)
        for t, g, thr in (("host-2cpu", 0, 5500.0), ("gpu-1", 1, 110000.0))
    ]  # fmt: skip
    runs = _gpu_rounds((2.0, 2.1, 2.2), workload="tf-mnist-deep-bs500")
    runs = pd.concat([runs, _gpu_rounds((20.0, 21.0, 22.0), workload="tf-mnist-deep-bs50")])
    claim = wu.gpu_claim(numbers, frame(*rows), runs, wu.MNIST)
    assert claim.ours.startswith("tf-mnist-deep-bs50:") and claim.verdict == HOLDS


def test_the_gpu_threshold_follows_the_file(numbers, tmp_path):
    path = tmp_path / "wu.csv"
    text = STUDY.path.read_text()
    path.write_text(text.replace(",148.39,", ",331.00,"))  # Table VII(a)'s M60 on MNIST
    changed = pub.load_numbers("wu", path)
    least = wu.smallest_gpu_speedup(changed)
    assert least["speedup"] == pytest.approx(662.03 / 331.00)
    cpu = ours_row(target="host-2cpu", throughput=5500.0)
    gpu = ours_row(target="gpu-1", gpus=1, throughput=16500.0)
    claim = wu.gpu_claim(changed, frame(cpu, gpu), _gpu_rounds((2.9, 3.0, 3.1)), wu.MNIST)
    assert "at least x2.00" in claim.claim and claim.verdict == HOLDS


def test_the_study_side_comes_from_the_file(numbers, tmp_path):
    """A changed number in the file changes the claim's text: nothing is typed in the module."""
    path = tmp_path / "wu.csv"
    text = STUDY.path.read_text()
    path.write_text(text.replace(",986.52,", ",990.00,").replace(",6100.86,", ",6000.00,"))
    changed = pub.load_numbers("wu", path)
    assert "1,114.34 / 990.00 / 937.37 s" in wu.batch_time_claim(changed, frame(), NO_RUNS).theirs
    assert "MKL 6,000.00 s (x5.38)" in wu.blas_claim(changed).theirs


# --- the configurations -----------------------------------------------------------------------


@pytest.mark.parametrize("short", [False, True], ids=["full", "short"])
def test_the_configs_run_the_study_batch_sizes_and_name_its_servers(short):
    config = read_config_files([CONFIG, SHORT])[0] if short else read_config_file(CONFIG)
    plan = Plan.from_config(config, probe=lambda target: None, on_this_machine=False)
    assert plan.config["study"] == "wu"
    model = catalog()[wu.MNIST].model
    mnist = [w for w in plan.workloads.values() if w.spec and w.spec.model == model]
    assert sorted(w.batch_size for w in mnist) == list(wu.BATCHES)
    assert all(w.spec.synthetic and w.spec.input_mode == "memory" for w in mnist)
    # The threads claim's pair: the same cores with one and with all threads.
    two = [t for t in plan.targets.values() if t.cpus == 2 and not t.gpus]
    assert sorted(t.threads for t in two) == [1, 2]
    # The study's servers: Server-1's 4 and Server-2's 24 cores (from the numbers file), and
    # one GPU each.
    cores = pub.load_numbers("wu").query("metric == 'vcpus'")["value"].astype(int)
    cpu_servers = [t for t in plan.targets.values() if t.cpus > 2 and not t.gpus]
    assert sorted(t.cpus for t in cpu_servers) == sorted(cores)
    assert len([t for t in plan.targets.values() if t.gpus == 1]) == 2

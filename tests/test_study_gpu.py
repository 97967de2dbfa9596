"""The studies' GPU claims where a GPU target ran: DATAmadness's speed-up
and utilisation (001), the V100 post's speed-ups, utilisation and input-bound GPU (004), and
the comparison they share (``reporting.claims.common.target_ratio``, ``judge_at_least``),
on hand-made rows of ``ours`` and ``study/runs.csv`` with and without a GPU target."""

import math
import statistics

import pandas as pd
import pytest
from scipy import stats
from study_helpers import NO_RUNS, rounds, study_runs

from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import (
    CANNOT,
    DOES_NOT_HOLD,
    HOLDS,
    MEDIANS,
    PAIRED,
    UNPAIRED,
    judge_at_least,
    target_ratio,
)
from embryo_bench.reporting.claims.gpu import (
    GPU_IDLE_BELOW_PERCENT,
    GPU_UTIL_COLUMN,
    NO_GPU,
    NO_UTILISATION,
)
from embryo_bench.reporting.study import OURS_COLUMNS, read_ours
from embryo_bench.studies.datamadness import claims as datamadness
from embryo_bench.studies.v100_blog import claims as v100_blog


def ours_row(**values):
    row = dict.fromkeys(OURS_COLUMNS, "")
    row.update(
        input="memory", data="synthetic", runner="host", backend="tensorflow", cpus=2,
        threads=2, gpus=0, batch_size=32, runs=3, input_wait_share=math.nan,
        ratio=math.nan, ratio_low=math.nan, ratio_high=math.nan, throughput=10.0,
        epoch_seconds=100.0, hourly_usd=math.nan,
    )  # fmt: skip
    row.update(values)
    return row


def ours_frame(*rows):
    return pd.DataFrame([ours_row(**r) for r in rows], columns=OURS_COLUMNS)


def interval(ratios):
    """The geometric mean of ``ratios`` and its 95 % t interval, computed here."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.mean(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def pair_runs(workload, ratios, cpu=10.0, gpu_target="gpu-1", cpu_target="host-2cpu", **extra):
    """Round k: ``cpu_target`` at ``cpu`` images/s (a number, or one per round) and
    ``gpu_target`` at ``ratios[k]`` x that."""
    cpus = [cpu] * len(ratios) if isinstance(cpu, float) else list(cpu)
    return rounds(workload, cpu_target, cpus, **extra) + rounds(
        workload, gpu_target, [c * r for c, r in zip(cpus, ratios, strict=True)], **extra
    )


# --- the comparison the GPU claims share -------------------------------------------------------


def test_a_target_ratio_is_paired_within_the_rounds_else_unpaired_else_the_medians():
    ratios = (9.5, 10.0, 10.8)
    runs = study_runs(*pair_runs("w", ratios, cpu=(10.0, 9.0, 11.0)))
    paired = target_ratio(runs, "w", "gpu-1", "host-2cpu", medians=(100.0, 10.0))
    expected = interval(ratios)
    assert paired.pairing == PAIRED and paired.n == 3
    assert (paired.ratio, paired.low, paired.high) == pytest.approx(expected)
    assert paired.text == (
        f"x{expected[0]:.3f} [{expected[1]:.3f}, {expected[2]:.3f}], paired within 3 rounds"
    )
    # The GPU's runs merged from another folder share no round: unpaired (Welch).
    merged = runs.assign(merged=runs["target"] == "gpu-1")
    unpaired = target_ratio(merged, "w", "gpu-1", "host-2cpu")
    assert unpaired.pairing == UNPAIRED and unpaired.n == 3
    # The ratio of the two sides' geometric means (the CPU's: the cube root of 10 x 9 x 11).
    cpu_mean = (10.0 * 9.0 * 11.0) ** (1 / 3)
    gpus = [c * r for c, r in zip((10.0, 9.0, 11.0), ratios, strict=True)]
    assert unpaired.ratio == pytest.approx(statistics.geometric_mean(gpus) / cpu_mean)
    assert "unpaired (no round ran both), 3 runs on the smaller side" in unpaired.text
    # Another workload's runs are not this one's.
    assert target_ratio(runs, "other", "gpu-1", "host-2cpu") is None
    medians = target_ratio(NO_RUNS, "w", "gpu-1", "host-2cpu", medians=(100.0, 10.0))
    assert medians.pairing == MEDIANS and medians.ratio == 10.0
    assert medians.text == "x10.000, the ratio of the medians (no runs to pair)"


def test_judging_a_speed_up_needs_three_rounds_and_an_interval_clear_of_the_threshold():
    def judged(ratios, threshold):
        runs = study_runs(*pair_runs("w", ratios))
        return judge_at_least(target_ratio(runs, "w", "gpu-1", "host-2cpu"), threshold)

    assert judged((9.5, 10.0, 10.8), 6.0) == (HOLDS, "")
    assert judged((3.0, 3.2, 2.9), 6.0) == (DOES_NOT_HOLD, "")
    assert judged((4.0, 8.0, 6.5), 6.0) == (
        CANNOT,
        "the interval covers x6: more rounds would resolve it",
    )
    assert judged((10.0,), 6.0) == (CANNOT, "one pair: no interval")
    assert judged((10.0, 11.0), 6.0) == (CANNOT, "2 pairs: too few for a verdict (3 needed)")


# --- DATAmadness (001) ------------------------------------------------------------------------

DM = datamadness.WORKLOAD
DM_FILES = f"{DM}-files"


def _dm_ours(gpu=True, gpu_input="files"):
    rows = [
        dict(workload=DM, catalog=DM, target="host-2cpu", throughput=12.0),
        dict(workload=DM_FILES, catalog=DM, target="host-2cpu", input="files",
             throughput=10.0, input_wait_share=0.1),
    ]  # fmt: skip
    if gpu:
        workload = DM_FILES if gpu_input == "files" else DM
        rows.append(
            dict(workload=workload, catalog=DM, target="gpu-1", input=gpu_input, gpus=1,
                 cpus=4, threads=4, throughput=100.0, input_wait_share=0.7)
        )  # fmt: skip
    return ours_frame(*rows)


@pytest.fixture(scope="module")
def dm_numbers():
    return pub.load_numbers("datamadness")


def test_datamadness_speed_up_is_judged_against_the_posts_own_factor(dm_numbers):
    factor = dm_numbers[
        (dm_numbers["metric"] == "relative_time")
        & (dm_numbers["system"] == "Ryzen 2700X")
        & dm_numbers["used"]
    ]["value"].iloc[0]
    assert factor == 6  # the post's "more than 6x faster", read from the file
    ratios = (9.5, 10.0, 10.8)
    runs = study_runs(*pair_runs(DM_FILES, ratios))
    speedup, *_ = datamadness.claims(dm_numbers, _dm_ours(), runs)
    assert (
        speedup.claim == "the RTX 2080 trains the CNN more than 6x as fast as the Ryzen 2700X alone"
    )
    assert speedup.verdict == HOLDS
    mean, low, high = interval(ratios)
    assert speedup.ours.startswith(
        f"{DM_FILES}: gpu-1 (1 GPU, 4 cpus) 100 images/s vs host-2cpu (2 cpus) 10 images/s "
        f"(medians), GPU/CPU x{mean:.3f} [{low:.3f}, {high:.3f}], paired within 3 rounds"
    )
    assert speedup.ours.endswith("; the claim: at least x6")
    runs = study_runs(*pair_runs(DM_FILES, (3.0, 3.2, 2.9)))
    assert datamadness.speedup_claims(dm_numbers, _dm_ours(), runs)[0].verdict == DOES_NOT_HOLD
    one = datamadness.speedup_claims(
        dm_numbers, _dm_ours(), study_runs(*pair_runs(DM_FILES, (10.0,)))
    )
    assert one[0].verdict == CANNOT and one[0].why == "one pair: no interval"


def test_datamadness_speed_up_on_rows_read_back_from_ours_csv(dm_numbers, tmp_path):
    """As the study rule gives them: study/ours.csv read back (nullable integer columns)."""
    path = tmp_path / "ours.csv"
    _dm_ours().to_csv(path, index=False)
    ours = read_ours(path)
    assert str(ours["batch_size"].dtype) == "Int64"
    runs = study_runs(*pair_runs(DM_FILES, (9.5, 10.0, 10.8)))
    assert datamadness.speedup_claims(dm_numbers, ours, runs)[0].verdict == HOLDS
    # A GPU run whose batch size was not recorded has no CPU run to stand beside.
    ours.loc[ours["target"] == "gpu-1", "batch_size"] = pd.NA
    (claim,) = datamadness.speedup_claims(dm_numbers, ours, runs)
    assert claim.why == f"no CPU target ran {DM_FILES} at batch <NA>"


def test_datamadness_gpu_claims_say_why_without_a_gpu_run_from_files(dm_numbers):
    speedup, utilisation, *bound = datamadness.claims(dm_numbers, _dm_ours(gpu=False), NO_RUNS)
    assert speedup.why == utilisation.why == NO_GPU
    assert len(bound) == 1  # the CPU target's files run
    memory_only = _dm_ours(gpu_input="memory")
    speedup, utilisation = datamadness.claims(dm_numbers, memory_only, NO_RUNS)[:2]
    assert speedup.why == utilisation.why == f"no GPU target ran {DM} from files"


def test_datamadness_utilisation_needs_the_column_and_judges_idle_most_of_the_time(dm_numbers):
    (claim,) = datamadness.utilisation_claims(dm_numbers, _dm_ours(), NO_RUNS)
    assert claim.verdict == CANNOT and claim.why == NO_UTILISATION
    assert claim.verdict_text == "cannot be checked here (GPU utilisation not in the table)"
    assert f"no {GPU_UTIL_COLUMN} column" in claim.ours and claim.ours.startswith("gpu-1 ran")
    assert "RTX 2080: 11 % (augmentation=true)" in claim.theirs
    busy = [12.0, 10.0, 11.0]
    runs = study_runs(*rounds(DM_FILES, "gpu-1", [100.0] * 3)).assign(**{GPU_UTIL_COLUMN: busy})
    (claim,) = datamadness.utilisation_claims(dm_numbers, _dm_ours(), runs)
    assert claim.verdict == HOLDS
    assert f"GPU busy {statistics.median(busy):.0f} % (median of its runs; below" in claim.ours
    assert GPU_IDLE_BELOW_PERCENT == 50.0
    (claim,) = datamadness.utilisation_claims(
        dm_numbers, _dm_ours(), runs.assign(**{GPU_UTIL_COLUMN: [70.0, 80.0, 75.0]})
    )
    assert claim.verdict == DOES_NOT_HOLD and "GPU busy 75 %" in claim.ours
    (claim,) = datamadness.utilisation_claims(
        dm_numbers, _dm_ours(), runs.assign(**{GPU_UTIL_COLUMN: math.nan})
    )
    assert claim.why == "GPU utilisation not measured"


def test_datamadness_input_bound_names_the_gpu_target(dm_numbers):
    claims = datamadness.claims(dm_numbers, _dm_ours(), NO_RUNS)
    bound = [c for c in claims if c.claim.startswith("training fed by")]
    assert [c.verdict for c in bound] == [DOES_NOT_HOLD, CANNOT]
    assert bound[1].ours.startswith("gpu-1 (1 GPU), batch 32: files 100 images/s")


# --- the V100 post (004) ----------------------------------------------------------------------

CD, CD128 = "catsdogs-cnn", "catsdogs-128"


@pytest.fixture(scope="module")
def v100_numbers():
    return pub.load_numbers("v100-blog")


def _v100_ours(*extra):
    return ours_frame(
        dict(workload=CD, catalog=CD, target="host-2cpu", throughput=100.0),
        dict(workload=f"{CD}-files", catalog=CD, target="host-2cpu", input="files",
             throughput=40.0, input_wait_share=0.2),
        dict(workload=f"{CD}-files", catalog=CD, target="gpu-1", input="files", gpus=1,
             cpus=4, throughput=200.0, input_wait_share=0.8),
        dict(workload=CD, catalog=CD, target="gpu-1", gpus=1, cpus=4, throughput=2000.0),
        *extra,
    )  # fmt: skip


def test_v100_speed_ups_are_judged_where_the_gpu_ran_that_network(v100_numbers):
    ratios = (4.8, 5.0, 5.3)  # the GPU over the CPU, files-fed, round by round
    runs = study_runs(*pair_runs(f"{CD}-files", ratios, cpu=40.0))
    out = v100_blog.speedup_claims(v100_numbers, _v100_ours(), runs)
    four, twenty_three = out
    assert four.claim.startswith(f"the GPU trains {CD} at least 4x as fast as the Xeon server")
    assert four.verdict == HOLDS  # the post's factor read from the file: 4
    mean, low, high = interval(ratios)
    assert f"GPU/CPU x{mean:.3f} [{low:.3f}, {high:.3f}], paired within 3 rounds" in four.ours
    assert four.ours.startswith(f"{CD}-files: gpu-1 (1 GPU, 4 cpus) 200 images/s vs host-2cpu")
    assert twenty_three.verdict == CANNOT
    assert twenty_three.why == f"no GPU target ran {CD128} from files"
    slow = study_runs(*pair_runs(f"{CD}-files", (2.0, 2.1, 1.9), cpu=40.0))
    assert v100_blog.speedup_claims(v100_numbers, _v100_ours(), slow)[0].verdict == (DOES_NOT_HOLD)


def test_v100_gpu_claims_without_a_gpu_say_no_gpu(v100_numbers):
    cpu_only = _v100_ours().iloc[:2]
    out = v100_blog.claims(v100_numbers, cpu_only, NO_RUNS)
    relative = v100_numbers[(v100_numbers["metric"] == "relative_time") & v100_numbers["used"]]
    # the speed-ups, the improved network's drop on a GPU, the utilisation, the speeds
    assert sum(c.why == NO_GPU for c in out) == len(relative) + 3


def test_v100_input_bound_is_checked_on_the_gpu_target_too(v100_numbers):
    out = v100_blog.claims(v100_numbers, _v100_ours(), NO_RUNS)
    bound = [c for c in out if c.claim.startswith("the original cats-vs-dogs network")]
    gpu = [c for c in bound if c.ours.startswith("gpu-1 (1 GPU), batch 32")]
    assert len(gpu) == 1 and gpu[0].verdict == HOLDS  # 80 % of training time waiting
    assert "files 200 images/s = 0.10x memory 2,000 images/s" in gpu[0].ours


def test_v100_utilisation_by_network(v100_numbers):
    rows = (
        dict(workload=CD128, catalog=CD128, target="gpu-1", gpus=1, throughput=500.0),
        dict(workload=f"{CD128}-files", catalog=CD128, target="gpu-1", input="files", gpus=1,
             throughput=300.0),
    )  # fmt: skip
    ours = _v100_ours(*rows)
    claim = v100_blog.utilisation_claim(v100_numbers, ours, NO_RUNS)
    assert claim.why == NO_UTILISATION
    runs = study_runs(
        *rounds(f"{CD}-files", "gpu-1", [200.0] * 3),
        *rounds(f"{CD128}-files", "gpu-1", [300.0] * 3),
    ).assign(**{GPU_UTIL_COLUMN: [9.0, 10.0, 11.0, 48.0, 52.0, 50.0]})
    claim = v100_blog.utilisation_claim(v100_numbers, ours, runs)
    assert claim.verdict == HOLDS and claim.ours == f"gpu-1: {CD} 10 %, {CD128} 50 % (medians)"
    swapped = runs.assign(**{GPU_UTIL_COLUMN: [60.0, 60.0, 60.0, 48.0, 52.0, 50.0]})
    assert v100_blog.utilisation_claim(v100_numbers, ours, swapped).verdict == DOES_NOT_HOLD
    only_original = v100_blog.utilisation_claim(v100_numbers, _v100_ours(), runs)
    assert only_original.verdict == CANNOT and "another network" in only_original.why


def test_v100_speeds_are_never_ours_to_check_but_are_shown(v100_numbers):
    ours = _v100_ours(
        dict(workload="catsdogs-deeper-files", catalog="catsdogs-deeper", target="gpu-1",
             input="files", gpus=1, throughput=321.0)
    )  # fmt: skip
    claim = v100_blog.speeds_claim(v100_numbers, ours)
    assert claim.verdict == CANNOT and "Tesla V100" in claim.why
    assert claim.ours == "gpu-1 catsdogs-deeper-files: 321 images/s"
    assert v100_blog.speeds_claim(v100_numbers, _v100_ours().iloc[:2]).why == NO_GPU

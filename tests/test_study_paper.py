"""The paper's own GPU conclusions as a study (``study: paper``): its systems' file
(the paper study's numbers.csv) loads and quotes the paper as printed, and its claims
module judges hand-made rows of our runs of the paper's workload, with and without GPU
targets."""

import math
import re
import statistics

import pandas as pd
import pytest
import yaml
from conftest import REPO
from scipy import stats
from study_helpers import NO_RUNS, rounds, seed_copy, study_runs

from embryo_bench.planning.study import check_study
from embryo_bench.published import paper as paper_numbers
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, DOES_NOT_HOLD, HOLDS
from embryo_bench.reporting.claims.gpu import NO_GPU
from embryo_bench.reporting.study import OURS_COLUMNS, run_claims, write_study
from embryo_bench.studies.paper import claims as paper
from embryo_bench.vocabulary.layout import PAPER_WORKLOAD

STUDY = pub.studies()["paper"]
QUOTE = re.compile(r"(?:^|(?<=[\s(]))'(.+?)'(?=$|[\s),;.:])")
NOISE = 0.05


@pytest.fixture(scope="module")
def numbers():
    return pub.load_numbers("paper")


def _seed_text():
    path = seed_copy(STUDY.number)
    if not path.exists():
        pytest.skip(f"{path} is not beside the repository (the studies' texts)")
    return " ".join(path.read_text().split())


def test_the_paper_is_a_study_whose_files_exist(numbers):
    assert STUDY.number == "000" and STUDY.seed == "Lawrence et al. 2017"
    check_study("paper")  # its numbers file and claims module exist
    assert len(numbers) > 5 and set(numbers["workload"]) == {""}
    # Its systems are the names the config's paper_system takes.
    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
    text = yaml.safe_dump(schema)
    for system in set(numbers["system"]):
        assert f"- {system}\n" in text or f"- '{system}'\n" in text, system


def test_every_quote_of_the_file_is_in_the_papers_text(numbers):
    text = _seed_text()
    for i, row in numbers.iterrows():
        assert row["source"].startswith(STUDY.seed), i
        quotes = QUOTE.findall(row["note"])
        assert quotes, f"line {i + 2}: no passage quoted"
        for quote in quotes:
            assert quote in text, f"line {i + 2}: {quote!r}"
    for _, minutes in paper_numbers.TRAINING_MINUTES.items():
        assert f"{minutes:g} minutes" in text  # the times the claims quote, as printed


def ours_row(**values):
    row = dict.fromkeys(OURS_COLUMNS, "")
    row.update(
        workload=PAPER_WORKLOAD, catalog=PAPER_WORKLOAD, input="memory", data="synthetic",
        runner="docker", backend="tensorflow", threads=math.nan, gpus=0, batch_size=480,
        runs=3, input_wait_share=math.nan, ratio=math.nan, ratio_low=math.nan,
        ratio_high=math.nan, epoch_seconds=100.0, hourly_usd=math.nan,
    )  # fmt: skip
    row.update(values)
    return row


CPUS = [
    dict(target="laptop-2cpu", cpus=2, threads=2, throughput=50.0),
    dict(target="desktop-4cpu", cpus=4, threads=4, throughput=90.0),
]
GPUS = [
    dict(target="cloud-1gpu-1vcpu", cpus=1, threads=1, gpus=1, throughput=900.0),
    dict(target="cloud-1gpu-8vcpu", cpus=8, threads=8, gpus=1, throughput=950.0),
]


def frame(*rows):
    return pd.DataFrame([ours_row(**r) for r in rows], columns=OURS_COLUMNS)


def runs_of(by_target: dict[str, list[float]], noise=NOISE):
    """Round by round images/s of each target, with the config's min_difference."""
    return study_runs(
        *(r for t, v in by_target.items()
          for r in rounds(PAPER_WORKLOAD, t, v, min_difference=noise))
    )  # fmt: skip


def interval(ratios):
    logs = [math.log(r) for r in ratios]
    mean, half = (
        statistics.mean(logs),
        stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs)),
    )
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


DESKTOP = [90.0, 85.0, 95.0]
ONE_VCPU = [900.0, 880.0, 930.0]


def test_gpus_outperform_cpus_judged_slowest_gpu_against_fastest_cpu(numbers):
    runs = runs_of({"desktop-4cpu": DESKTOP, "cloud-1gpu-1vcpu": ONE_VCPU,
                    "cloud-1gpu-8vcpu": [950.0, 940.0, 960.0],
                    "laptop-2cpu": [50.0, 48.0, 52.0]})  # fmt: skip
    (claim,) = paper.outperform_claims(numbers, frame(*CPUS, *GPUS), runs)
    assert claim.claim == paper.GPUS_OUTPERFORM and claim.verdict == HOLDS
    mean, low, high = interval([g / c for g, c in zip(ONE_VCPU, DESKTOP, strict=True)])
    assert claim.ours.startswith(
        "paper: cloud-1gpu-1vcpu (1 GPU, 1 cpu) 900 images/s vs desktop-4cpu (4 cpus) 90 "
        f"images/s (medians), GPU/CPU x{mean:.3f} [{low:.3f}, {high:.3f}], paired within 3 "
        "rounds"
    )
    assert "compare: at least 5 % faster (the machine's noise 5%)" in claim.ours
    # The paper's side: its CPU times from published/paper.py, its GPU systems from the file.
    assert claim.theirs.startswith("2-core laptop 309 min, 4-core desktop 134 min for 20 epochs")
    assert "(GTX 980 Ti; cloud K80, 1 vCPU; cloud K80, 8 vCPUs; cloud 2x K80)" in claim.theirs


def test_gpus_outperform_does_not_hold_or_cannot_be_checked(numbers):
    slow_gpu = [dict(GPUS[0], throughput=80.0)]
    runs = runs_of({"desktop-4cpu": DESKTOP, "cloud-1gpu-1vcpu": [80.0, 76.0, 83.0]})
    (claim,) = paper.outperform_claims(numbers, frame(*CPUS, *slow_gpu), runs)
    assert claim.verdict == DOES_NOT_HOLD and "compare: at least 5 % slower" in claim.ours
    two = runs_of({"desktop-4cpu": DESKTOP[:2], "cloud-1gpu-1vcpu": ONE_VCPU[:2]})
    (claim,) = paper.outperform_claims(numbers, frame(*CPUS, GPUS[0]), two)
    assert claim.verdict == CANNOT and claim.why == "2 pairs: too few for a verdict (3 needed)"
    no_noise = runs_of({"desktop-4cpu": DESKTOP, "cloud-1gpu-1vcpu": ONE_VCPU}, noise=math.nan)
    (claim,) = paper.outperform_claims(numbers, frame(*CPUS, GPUS[0]), no_noise)
    assert claim.verdict == CANNOT and "min_difference" in claim.why
    (claim,) = paper.outperform_claims(numbers, frame(*CPUS), NO_RUNS)
    assert claim.why == NO_GPU and claim.ours == "-"
    (claim,) = paper.outperform_claims(numbers, frame(*GPUS), NO_RUNS)
    assert claim.why == "no CPU target ran paper at batch 480"


@pytest.mark.parametrize(
    ("ratios", "verdict", "why"),
    [
        ((1.01, 0.99, 1.0), HOLDS, ""),
        ((1.5, 1.6, 1.55), DOES_NOT_HOLD, ""),
        ((0.9, 1.1, 1.0), CANNOT, "the interval reaches beyond the machine's noise (5% either"),
        ((1.0, 1.02), CANNOT, "2 pairs: too few for a verdict (3 needed)"),
    ],
)
def test_one_vcpu_against_eight_feeding_the_gpu(numbers, ratios, verdict, why):
    one = [900.0, 880.0, 930.0][: len(ratios)]
    runs = runs_of({
        "cloud-1gpu-1vcpu": one,
        "cloud-1gpu-8vcpu": [v * r for v, r in zip(one, ratios, strict=True)],
    })  # fmt: skip
    claim = paper.vcpus_claim(numbers, frame(*CPUS, *GPUS), runs)
    assert claim.verdict == verdict and claim.why.startswith(why)
    assert claim.ours.startswith(
        "paper: cloud-1gpu-8vcpu (8 cpus) 950 images/s vs cloud-1gpu-1vcpu (1 cpu) 900 "
        "images/s, 1 GPU each (medians)"
    )
    if len(ratios) == 3:
        mean, low, high = interval(ratios)
        assert f"x{mean:.3f} [{low:.3f}, {high:.3f}], paired within 3 rounds" in claim.ours
    assert claim.theirs.startswith(
        "cloud K80, 1 vCPU (1 vCPU) and cloud K80, 8 vCPUs (8 vCPUs): 'Cloud with 1 vCPU "
        "performed similar to cloud with 8 vCPU'"
    )


def test_threads_stand_in_when_the_cores_are_the_same(numbers):
    same_cores = [dict(GPUS[1], target="gpu-t1", threads=1), dict(GPUS[1], target="gpu-t8")]
    runs = runs_of({"gpu-t1": [950.0, 940.0, 960.0], "gpu-t8": [951.0, 941.0, 959.0]})
    claim = paper.vcpus_claim(numbers, frame(*CPUS, *same_cores), runs)
    assert claim.verdict == HOLDS and "gpu-t8 (8 threads)" in claim.ours


def test_one_vcpu_claim_without_two_gpu_targets(numbers):
    assert paper.vcpus_claim(numbers, frame(*CPUS), NO_RUNS).why == NO_GPU
    claim = paper.vcpus_claim(numbers, frame(*CPUS, GPUS[0]), NO_RUNS)
    assert claim.verdict == CANNOT and "no two GPU targets" in claim.why
    # Other GPU counts or batch sizes are not the same GPU fed by more cores.
    other = [GPUS[0], dict(GPUS[1], gpus=2)]
    assert paper.vcpus_claim(numbers, frame(*other), NO_RUNS).verdict == CANNOT


def test_the_study_rule_runs_the_papers_claims(numbers, tmp_path):
    runs = runs_of({"desktop-4cpu": DESKTOP, "cloud-1gpu-1vcpu": ONE_VCPU})
    ours = frame(*CPUS, GPUS[0])
    table = run_claims(STUDY, numbers, ours, runs)
    assert list(table["claim"]) == [
        paper.GPUS_OUTPERFORM, paper.VCPUS_ALIKE, paper.CORES_NOT_LINEAR
    ]  # fmt: skip
    assert list(table["verdict"])[0] == HOLDS
    write_study(STUDY, numbers, ours, runs, tmp_path)
    assert "holds here" in (tmp_path / "claims.md").read_text()
    assert (tmp_path / "study.png").stat().st_size > 0


def test_only_the_feeding_cores_differ_between_the_pair(numbers):
    """A bfloat16 target fed by 8 cores is not the float32 one fed by 1 with more cores (the
    H100 session of 2026-11-27 ran gpu-jax, gpu-jax-bf16 and gpu-jax-1cpu): the claim pairs
    targets of the same backend and precision, and prints images/s for people."""
    h100 = [
        dict(target="gpu-jax-bf16", cpus=8, threads=8, gpus=1, backend="jax",
             precision="mixed_bfloat16", throughput=146643.5),
        dict(target="gpu-jax", cpus=8, threads=8, gpus=1, backend="jax", throughput=101116.6),
        dict(target="gpu-jax-1cpu", cpus=1, threads=1, gpus=1, backend="jax",
             throughput=100840.9),
        dict(target="gpu-torch", cpus=8, threads=8, gpus=1, backend="torch", throughput=27603.1),
    ]  # fmt: skip
    claim = paper.vcpus_claim(numbers, frame(*CPUS, *h100), NO_RUNS)
    assert claim.ours.startswith(
        "paper: gpu-jax (8 cpus) 101,117 images/s vs gpu-jax-1cpu (1 cpu) 100,841 images/s"
    )


def test_the_paper_configs_cloud_targets_have_the_papers_memory(numbers):
    """The paper's 8 vCPU cloud VMs had '16 Gb of RAM' (II.H): each target of
    config/config.yaml standing for one of its systems with a memory in numbers.csv is given
    that much (they had 30g, an n1-standard-8's)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    memory = numbers[numbers["metric"] == "memory_gb"].set_index("system")["value"]
    checked = 0
    for target in config["targets"]:
        system = target.get("paper_system", "")
        if system in memory.index:
            assert target["memory"] == f"{float(memory[system]):g}g", target["name"]
            checked += 1
    assert checked == 2  # the cloud K80 with 8 vCPUs and the 2x K80


def test_the_papers_linear_prediction_is_its_own_114_minutes(numbers):
    """'If it was linear, and the dual core@2.5GHz took 309 minutes, then quad core@3.4GHz
    should have taken 114 minutes, but it took 134 minutes': from the file's cores and clocks
    and the printed times, not typed."""
    claim = paper.cores_claim(numbers, frame(*CPUS), NO_RUNS)
    assert claim.theirs == (
        "2-core laptop (2 cores x 2.5 GHz) 309 min; linear in cores x clock, 4-core desktop "
        "(4 x 3.4 GHz) would take 114 min; it took 134 (1.18x the linear prediction)"
    )
    assert "should have taken 114 minutes" in _seed_text()


@pytest.mark.parametrize(
    "four, verdict",
    [
        ([60.0, 58.0, 62.0], HOLDS),  # 1.2x for 2x the cores: below linear
        ([110.0, 95.0, 112.0], CANNOT),  # about 2.1x: the interval covers 2
        ([240.0, 232.0, 250.0], DOES_NOT_HOLD),  # 4.8x: faster than linear
    ],
)
def test_cores_against_the_linear_prediction(numbers, four, verdict):
    """Two CPU targets of one machine, 2 and 4 cores: 4 cores' images/s over 2 cores',
    paired within the rounds, against linear (x2)."""
    two = [50.0, 49.0, 52.0]
    rows = [dict(CPUS[0], throughput=statistics.median(two)),
            dict(CPUS[1], throughput=statistics.median(four))]  # fmt: skip
    claim = paper.cores_claim(numbers, frame(*rows),
                              runs_of({"laptop-2cpu": two, "desktop-4cpu": four}))  # fmt: skip
    assert claim.verdict == verdict, claim
    assert "against linear x2 (one machine, one clock: cores alone)" in claim.ours
    if verdict == CANNOT:
        assert claim.why == "the interval covers x2: more rounds would resolve it"


def test_cores_need_two_cpu_targets_of_one_machine(numbers):
    one = paper.cores_claim(numbers, frame(CPUS[0], *GPUS), NO_RUNS)
    assert one.verdict == CANNOT and "no two CPU targets" in one.why
    apart = [CPUS[0], dict(CPUS[1], machine="elsewhere")]
    assert paper.cores_claim(numbers, frame(*apart), NO_RUNS).verdict == CANNOT

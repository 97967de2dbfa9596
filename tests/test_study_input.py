"""Studies 001 (DATAmadness 2019) and 004 (the V100 blog): their published numbers
(the datamadness and v100-blog studies' ``numbers.csv``) load, name catalog workloads and
were printed in the studies' own texts (the developers' copies beside the repository, where
present: docs/studies/README.md); their claim checks give each verdict on hand-made rows of
our runs."""

import math
import os
import re

import pandas as pd
import pytest
from conftest import REPO
from study_helpers import NO_RUNS, seed_copy, study_runs

from embryo_bench.planning.plan import Plan
from embryo_bench.published import studies as pub
from embryo_bench.reporting.claims.common import CANNOT, DOES_NOT_HOLD, HOLDS
from embryo_bench.reporting.claims.gpu import NO_GPU
from embryo_bench.reporting.claims.input_bound import input_bound_claims, more_cores_claim
from embryo_bench.reporting.study import OURS_COLUMNS
from embryo_bench.reporting.study_numbers import our_settings
from embryo_bench.studies.datamadness import claims as datamadness
from embryo_bench.studies.v100_blog import claims as v100_blog
from embryo_bench.training.inputs import INPUT_BOUND_SHARE
from embryo_bench.vocabulary.config import read_config_files
from embryo_bench.workloads.catalog import catalog

STUDIES = ["datamadness", "v100-blog"]

OURS = OURS_COLUMNS

# A quoted passage of a note or source: opens after a space or "(" and closes before one.
QUOTE = re.compile(r"(?:^|(?<=[\s(]))'(.+?)'(?=$|[\s),;.:])")


def _raw(study):
    """The CSV's cells as written (strings), to compare with the text as printed."""
    return pd.read_csv(pub.studies()[study].path, dtype=str, keep_default_na=False)


def _seed_text(study):
    path = seed_copy(pub.studies()[study].number)
    if not path.exists():
        pytest.skip(f"{path} is not beside the repository (the studies' texts)")
    return " ".join(path.read_text().split())


@pytest.mark.parametrize("study", STUDIES)
def test_every_row_loads_and_names_a_catalog_workload(study):
    table = pub.load_numbers(study)
    assert len(table) == len(_raw(study)) > 10
    assert set(table["workload"]) - {""} <= set(catalog())
    assert table["used"].any()


def _printed(value: str, unit: str, text: str) -> bool:
    """``value`` appears in ``text`` as a number of its own (a fraction also as a percent)."""
    forms = [value]
    if unit == "fraction":
        forms.append(f"{float(value) * 100:g}%")
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", text) for f in forms)


@pytest.mark.parametrize("study", STUDIES)
def test_every_number_was_printed_in_the_study(study):
    """Each value is in the study's text as printed; a value converted by the file's author
    (minutes, "15k", "a day and a half", "85% less") says "printed as '...'" with the passage,
    and every quoted passage of a note or source is in the text."""
    text = _seed_text(study)
    for i, row in _raw(study).iterrows():
        where = f"{study} line {i + 2}"
        quotes = QUOTE.findall(row["note"]) + QUOTE.findall(row["source"])
        for quote in quotes:
            assert quote in text, f"{where}: {quote!r} is not in the study's text"
        if "printed as '" in row["note"]:
            assert QUOTE.findall(row["note"].split("printed as", 1)[1]), where
        else:
            assert _printed(row["value"], row["unit"], text), f"{where}: {row['value']}"
        assert row["source"].startswith(pub.studies()[study].seed), where


def test_text_and_summary_that_disagree_are_both_kept_with_one_used():
    table = pub.load_numbers("datamadness")
    for (system, metric), rows in table.groupby(["system", "metric"]):
        if metric in ("gpu_utilisation", "training_seconds", "epoch_seconds"):
            assert rows["used"].sum() == 1, (system, metric)
            assert (rows.loc[~rows["used"], "note"] != "").all()


def ours_row(**values):
    row = dict.fromkeys(OURS, "")
    row.update(
        input="memory", data="synthetic", runner="host", backend="tensorflow", cpus=1,
        threads=1, gpus=0, batch_size=32, runs=3, input_wait_share=math.nan,
        ratio=math.nan, ratio_low=math.nan, ratio_high=math.nan, throughput=100.0,
    )  # fmt: skip
    row.update(values)
    return row


def ours_frame(*rows):
    return pd.DataFrame([ours_row(**r) for r in rows], columns=OURS)


def _pair(catalog_name, share, files=40.0, memory=100.0, target="host-1cpu"):
    return [
        dict(workload=catalog_name, catalog=catalog_name, target=target, throughput=memory),
        dict(
            workload=f"{catalog_name}-files", catalog=catalog_name, target=target,
            input="files", throughput=files, input_wait_share=share,
        ),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("share", "verdict"),
    [(INPUT_BOUND_SHARE + 0.1, HOLDS), (INPUT_BOUND_SHARE - 0.1, DOES_NOT_HOLD)],
)
def test_input_bound_by_the_projects_threshold(share, verdict):
    ours = ours_frame(*_pair("catsdogs-cnn", share))
    (claim,) = input_bound_claims(ours, NO_RUNS, "catsdogs-cnn", "c", "t", "s")
    assert claim.verdict == verdict
    assert "files 40 images/s = 0.40x memory 100 images/s" in claim.ours
    assert f"{share:.0%} of training time" in claim.ours and "SYNTHETIC" in claim.ours


def test_files_over_memory_is_paired_within_the_rounds_where_both_ran():
    # Round by round the files run is 0.40, 0.44 and 0.42 of the memory run on the same
    # target while the machine's speed moves; the claim gives the paired ratio and interval.
    memory = [100.0, 80.0, 120.0]
    runs = study_runs(
        *(dict(workload="catsdogs-cnn", target="host-1cpu", repeat=k, images_per_s=m)
          for k, m in enumerate(memory, 1)),
        *(dict(workload="catsdogs-cnn-files", target="host-1cpu", repeat=k, images_per_s=m * r)
          for k, (m, r) in enumerate(zip(memory, (0.40, 0.44, 0.42), strict=True), 1)),
    )  # fmt: skip
    ours = ours_frame(*_pair("catsdogs-cnn", 0.3))
    (claim,) = input_bound_claims(ours, runs, "catsdogs-cnn", "c", "t", "s")
    mean = math.exp(sum(map(math.log, (0.40, 0.44, 0.42))) / 3)
    assert re.search(rf"\(paired: x{mean:.3f} \[0\.3\d\d, 0\.4\d\d\], 3 rounds\)", claim.ours)
    assert claim.verdict == DOES_NOT_HOLD  # the verdict is the wait's, as before
    # The other target's runs are not this target's rounds.
    (other,) = input_bound_claims(ours, runs.assign(target="host-2cpu"), "catsdogs-cnn", "c",
                                  "t", "s")  # fmt: skip
    assert "paired" not in other.ours


def test_a_files_runs_workers_are_named_in_its_claim_and_settings():
    ours = ours_frame(*_pair("catsdogs-cnn", 0.3))
    ours["workers"] = [pd.NA, 4]
    (claim,) = input_bound_claims(ours, NO_RUNS, "catsdogs-cnn", "c", "t", "s")
    assert claim.ours.startswith("host-1cpu, batch 32, 4 workers: files 40 images/s")
    memory, files = (row for _, row in ours.iterrows())
    assert our_settings(files) == "batch_size=32;threads=1;input=files;workers=4"
    assert our_settings(memory) == "batch_size=32;threads=1;input=memory"


def test_input_bound_cannot_without_files_memory_or_the_wait():
    both = ours_frame(*_pair("catsdogs-cnn", math.nan))
    (claim,) = input_bound_claims(both, NO_RUNS, "catsdogs-cnn", "c", "t", "s")
    assert claim.verdict == CANNOT and claim.why == "the wait was not measured"
    files_only = both[both["input"] == "files"]
    (claim,) = input_bound_claims(files_only, NO_RUNS, "catsdogs-cnn", "c", "t", "s")
    assert claim.verdict == CANNOT and "no memory-input run" in claim.why
    (claim,) = input_bound_claims(
        both[both["input"] == "memory"], NO_RUNS, "catsdogs-cnn", "c", "t", "s"
    )
    assert claim.why == "catsdogs-cnn did not run from files"


def test_input_bound_pairs_each_target_with_its_own_memory_run():
    rows = _pair("catsdogs-cnn", 0.8, target="host-1cpu") + _pair(
        "catsdogs-cnn", 0.2, files=90.0, target="host-2cpu"
    )
    claims = input_bound_claims(ours_frame(*rows), NO_RUNS, "catsdogs-cnn", "c", "t", "s")
    assert [c.verdict for c in claims] == [HOLDS, DOES_NOT_HOLD]
    assert "0.90x" in claims[1].ours and claims[1].ours.startswith("host-2cpu")


def _cores(verdict, few_ratio=1.0):
    return ours_frame(
        dict(workload="tf-cifar10", catalog="tf-cifar10", target="host-1cpu", cpus=1,
             ratio=few_ratio),
        dict(workload="tf-cifar10", catalog="tf-cifar10", target="host-2cpu", cpus=2,
             throughput=180.0, ratio=1.8, ratio_low=1.6, ratio_high=2.0, verdict=verdict),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("verdict", "few_ratio", "expected"),
    [
        ("faster", 1.0, HOLDS),
        ("faster", math.nan, HOLDS),
        ("at least 5 % faster", 1.0, HOLDS),
        ("the same within ±5 %", 1.0, DOES_NOT_HOLD),
        ("slower", 1.0, DOES_NOT_HOLD),
        ("unresolved: about 3 more rounds would likely resolve it", 1.0, CANNOT),
        ("2 pairs: too few for a verdict (3 needed)", 1.0, CANNOT),
        ("faster", 0.5, CANNOT),
    ],
)
def test_more_cores_follows_compares_verdict(verdict, few_ratio, expected):
    claim = more_cores_claim(_cores(verdict, few_ratio), "tf-cifar10", "c", "t", "s")
    assert claim.verdict == expected
    assert "host-2cpu (2 cpus) 180 images/s vs host-1cpu (1 cpus) 100 images/s" in claim.ours
    assert "1.80x [1.60, 2.00]" in claim.ours


def test_more_cores_cannot_with_one_core_count():
    one = _cores("faster").iloc[:1]
    claim = more_cores_claim(one, "tf-cifar10", "c", "t", "s")
    assert claim.verdict == CANNOT and "two CPU targets" in claim.why


def test_datamadness_claims_read_the_studys_side():
    published = pub.load_numbers("datamadness")
    ours = ours_frame(*_pair("datamadness-cnn", 0.7))
    speedup, utilisation, bound = datamadness.claims(published, ours, NO_RUNS)
    assert speedup.why == utilisation.why == NO_GPU
    times = published[(published["metric"] == "training_seconds") & published["used"]]
    fast = times.loc[times["value"].idxmin()]
    assert speedup.claim.startswith(f"the {fast['system']} trains")
    assert f"{fast['value']:,.4g} s" in speedup.theirs
    util = published[(published["metric"] == "gpu_utilisation") & published["used"]]
    for _, row in util.iterrows():
        assert f"{row['system']}: {row['value']:g} %" in bound.theirs
    assert bound.verdict == HOLDS


def test_v100_blog_claims_read_the_studys_side():
    published = pub.load_numbers("v100-blog")
    ours = ours_frame(*_pair("catsdogs-cnn", 0.3), *_cores("faster").to_dict("records"))
    out = v100_blog.claims(published, ours, NO_RUNS)
    assert out[0].verdict == DOES_NOT_HOLD and "catsdogs-cnn" not in out[0].ours
    relative = published[(published["metric"] == "relative_time") & published["used"]]
    gpu = [c for c in out if c.why == NO_GPU]
    assert len(gpu) == len(relative) + 3  # the speed-ups, the GPU's drop, utilisation, speeds
    drop = [c for c in out if "trains about 85 % slower" in c.claim]
    assert [c.why for c in drop] == ["no CPU target ran catsdogs-cnn and catsdogs-128 from files"]
    assert out[-1].verdict == HOLDS
    gpus = set(published.loc[published["metric"] == "gpu_utilisation", "system"])
    cpu = published[
        (published["workload"] == "tf-cifar10")
        & (published["metric"] == "throughput")
        & published["used"]
        & ~published["system"].isin(gpus)
    ]
    assert len(cpu) == 2
    for _, row in cpu.iterrows():
        assert f"{row['system']}: {row['value']:g} images/s" in out[-1].theirs


@pytest.mark.parametrize(
    ("study", "catalogs"),
    [
        ("datamadness", {"datamadness-cnn"}),
        ("v100-blog", {"catsdogs-cnn", "catsdogs-deeper", "catsdogs-128", "tf-cifar10"}),
    ],
)
@pytest.mark.parametrize("short", [False, True])
def test_the_study_configs_plan_both_input_modes_and_name_the_study(study, catalogs, short):
    """Each study's config (and its short form over it) names the study, runs its image
    workloads from memory and from files, and keeps the study's systems as targets: those
    this 2-core machine lacks (more cores, a GPU) skipped, each with its reason."""
    files = [REPO / "config" / f"{study}.yaml"]
    if short:
        files.append(REPO / "config" / f"{study}-short.yaml")
    config, _ = read_config_files(files)
    assert config["study"] == study and config["on_missing_hardware"] == "skip"
    plan = Plan.from_config(config, hardware_check="local")
    entries = config["workloads"]
    named = {w.get("catalog", w["name"]) for w in entries}
    assert named <= catalogs and (short or named == catalogs)
    for name in named - {"tf-cifar10"}:
        modes = {w.get("input", "memory") for w in entries if w.get("catalog", w["name"]) == name}
        assert modes == {"memory", "files"}, name
    gpus = [t["name"] for t in config["targets"] if t.get("gpus", 0)]
    assert len(gpus) == 1
    if len(os.sched_getaffinity(0)) < 8 and os.cpu_count() < 8:
        assert gpus[0] in plan.skipped
        assert all("\n" not in why for why in plan.skipped.values())


def _drop_runs(ratios, target="host-1cpu"):
    """catsdogs-cnn-files and catsdogs-128-files on ``target``, one round a ratio: the 128 px
    network's images/s ``ratio`` x the original's while the machine's speed moves."""
    original = [60.0, 48.0, 72.0, 66.0][: len(ratios)]
    return study_runs(
        *(dict(workload="catsdogs-cnn-files", target=target, repeat=k, images_per_s=v)
          for k, v in enumerate(original, 1)),
        *(dict(workload="catsdogs-128-files", target=target, repeat=k, images_per_s=v * r)
          for k, (v, r) in enumerate(zip(original, ratios, strict=True), 1)),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("ratios", "verdict", "why"),
    [
        ((0.15, 0.16, 0.14), HOLDS, ""),  # a drop of 85 % [84, 86]: inside 80-90 %
        ((0.40, 0.42, 0.41), DOES_NOT_HOLD, ""),  # 59 %: the drop is far smaller here
        ((0.10, 0.20, 0.15), CANNOT, "the interval crosses the band's edge"),
        ((0.15, 0.16), CANNOT, "2 rounds: too few for a verdict (3 needed)"),
    ],
)
def test_the_improved_networks_drop_on_a_cpu_is_judged_against_about_85_percent(
    ratios, verdict, why
):
    published = pub.load_numbers("v100-blog")
    ours = ours_frame(
        dict(workload="catsdogs-cnn-files", catalog="catsdogs-cnn", target="host-1cpu",
             input="files", throughput=60.0),
        dict(workload="catsdogs-128-files", catalog="catsdogs-128", target="host-1cpu",
             input="files", throughput=9.0),
    )  # fmt: skip
    cpu, gpu = v100_blog.drop_claims(published, ours, _drop_runs(ratios))
    assert cpu.claim == "catsdogs-128 trains about 85 % slower than catsdogs-cnn on a CPU (80-90 %)"
    assert cpu.verdict == verdict and cpu.why.startswith(why)
    assert "host-1cpu: catsdogs-128-files over catsdogs-cnn-files x0." in cpu.ours
    assert "a drop of" in cpu.ours and "SYNTHETIC" in cpu.ours
    assert "Xeon server (2x Silver 4110): ~85 % fewer images/s" in cpu.theirs
    # The GPU's ~20 % needs a GPU target that ran both.
    assert gpu.claim.endswith("on a GPU (15-25 %)") and gpu.why == NO_GPU

"""Runs are grouped by the machine they really ran on: a target's runs on
two machines are never pooled into one median, in this workflow's own outdir (a VM class that
changed CPU between rounds) and in merged folders (the same host name, another CPU); runs made
before a field was recorded still load and merge. Made-up runs, no training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import run_spec_dict  # noqa: E402

from embryo_bench.recording import hardware  # noqa: E402
from embryo_bench.reporting import compare, summary  # noqa: E402
from embryo_bench.reporting.merge import merge_runs, split_by_machine  # noqa: E402
from embryo_bench.reporting.runs import (  # noqa: E402
    IDENTITY_FIELDS,
    MACHINE_FLAGS,
    Machines,
    Run,
    load_runs,
    machine_identity,
)
from embryo_bench.vocabulary.figspec import FiguresSpec  # noqa: E402
from embryo_bench.vocabulary.layout import METRICS_FORMAT, utilisation_name  # noqa: E402
from embryo_bench.vocabulary.spec import Preprocessing  # noqa: E402

AVX2 = ["avx", "avx2", "f16c", "fma", "sse4_2"]
AVX512 = [*AVX2, "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl", "avx512_vnni"]
AMX = [*AVX512, "avx512_bf16", "amx_bf16", "amx_tile"]
#: One VM class ("vm", 2 cores, 24 GiB) on two days: the same name, CPU model and ID, only
#: the CPU flags differ (a hypervisor that passed AVX-512 and AMX through on one day).
MONDAY = {"hostname": "vm", "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_id":
          "GenuineIntel 6/143/8", "cpu_flags": AVX2, "host_cores": 2, "memory_mib": 24105,
          "gpus": []}  # fmt: skip
TUESDAY = {**MONDAY, "cpu_flags": AMX}
#: The same VM class landed on an AMD EPYC: the same host name.
EPYC = {**MONDAY, "cpu_model": "AMD EPYC 7B13 64-Core Processor", "cpu_id": "AuthenticAMD 25/1/0"}
#: What a run recorded before runs were grouped by machine (no cpu_id, no memory_mib) and
#: before 2026-11-25 (no cpu_flags, no host_cores).
OLD = {"hostname": "vm", "cpu_model": "Intel(R) Xeon(R) Processor", "gpus": []}

PP = {"frame_size": 48, "crop_fraction": 0.5, "invert_centre": 128, "rotation_step": 90.0,
      "image_size": 16}  # fmt: skip
TARGETS = {"host-1cpu": {"hourly_usd": 0.1, "price_source": "made up", "paper_system": "laptop"},
           "host-2cpu": {"hourly_usd": 0.2, "price_source": "made up"}}  # fmt: skip


def write_run(
    root: Path, target: str, repeat: int, rate: float, machine: dict, start=0.0, **extra
) -> str:
    """A made-up finished run ``root/train/<target>/repeat-<k>`` of ``rate`` images/s on
    ``machine`` (provenance keys, as hardware.this_machine records them), its timed part
    1 s from ``start`` (s since 1970); ``extra``: more metrics (e.g. a docker run's
    ``container``)."""
    run = root / "train" / target / f"repeat-{repeat}"
    run.mkdir(parents=True)
    seconds = 2000 / rate
    metrics = {
        "format": METRICS_FORMAT, "target": target, "repeat": repeat, "seed": 0,
        "runner": "host", "cpus": 1, "gpus": 0, "backend": "tensorflow", "threads": 1,
        "batch_size": 480, "n_train": 1000, "n_test": 250, "epochs": 2,
        "training_seconds": seconds, "first_epoch_seconds": seconds / 2,
        "steady_epoch_seconds": seconds / 2, "mean_images_per_s": rate,
        "final_test_accuracy": 0.6, "best_test_accuracy": 0.6, "accuracy_target": 0.85,
        "time_to_accuracy_seconds": None, "parameter_count": 10, "telemetry": {},
        "wall_clock": {"started_unix_s": start, "ended_unix_s": start + 1},
        "provenance": {**machine, "keras_backend": "tensorflow", "versions": {},
                       "dataset": {"label": "made up", "synthetic": True}},
        **extra,
    }  # fmt: skip
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "history.csv").write_text("epoch,test_accuracy,epoch_seconds\n1,0.5,1\n2,0.6,1\n")
    entry = {"name": target, "runner": "host", "cpus": 1}
    spec = run_spec_dict(entry, Preprocessing.from_dict(PP), preprocessing=PP, repeat=repeat)
    (run / "run.json").write_text(json.dumps(spec))
    return str(run)


def outdir_on_two_machines(root: Path, first: dict, then: dict) -> list[str]:
    """An outdir whose rounds 1-3 ran on ``first`` and rounds 4-5 on ``then``, in the
    planned order (host-1cpu, host-2cpu per round); host-2cpu is 1.5x host-1cpu, and
    ``then`` is 3x ``first``."""
    dirs = []
    for k in range(1, 6):
        machine, speed = (first, 100.0) if k <= 3 else (then, 300.0)
        for i, (target, factor) in enumerate((("host-1cpu", 1.0), ("host-2cpu", 1.5))):
            start = 1.8e9 + 10 * (2 * k + i)
            dirs.append(write_run(root, target, k, speed * factor + k, machine, start))
    return dirs


def tables(own: list[Run], merged: list[Run] = (), targets=TARGETS):
    """The split and the results and summary tables the figures job makes of it."""
    split = split_by_machine(own, list(merged), targets)
    table = summary.run_table([*split.runs, *merged], split.targets, "made up")
    return split, table, summary.target_summary(table)


def test_runs_that_differ_only_in_the_cpu_flags_are_not_pooled(tmp_path):
    own = load_runs(outdir_on_two_machines(tmp_path / "out", MONDAY, TUESDAY))
    split, table, summ = tables(own)
    avx2 = "xeon-avx2-2c-24g-"
    amx = "xeon-avx512-amx-2c-24g-"
    names = list(summ["target"])
    assert [n.rsplit("-", 1)[0] + "-" for n in names] == [
        f"host-1cpu@{avx2}",
        f"host-2cpu@{avx2}",
        f"host-1cpu@{amx}",
        f"host-2cpu@{amx}",
    ]
    rows = summ.set_index("target")
    for name in names:  # each median is of one machine's runs only
        mine = table[table["target"] == name]
        assert rows.loc[name, "repeats"] == len(mine) == (3 if avx2 in name else 2)
        assert rows.loc[name, "images_per_s_median"] == mine["images_per_s"].median()
        assert rows.loc[name, "machine"] == name.split("@")[1] == mine["machine"].iloc[0]
    # What the comparison receives: the results table's target column (rounds: repeat),
    # the split names; the base is the part with most of the base target's runs.
    base = split.name("host-1cpu")
    assert base == names[0] and split.name("host-2cpu") == names[1]
    paired = compare.comparison_table(table, base, 0.05).set_index("target")
    assert list(paired.index) == names
    assert paired.loc[names[1], "throughput_pairs"] == 3  # rounds 1-3, on Monday's CPU
    # The price goes to every part, the paper system to the part that stands for it.
    assert split.targets[names[2]]["hourly_usd"] == 0.1
    assert "paper_system" not in split.targets[names[2]]
    assert split.targets[names[0]]["paper_system"] == "laptop"
    assert split.notes[0].startswith("host-1cpu ran on 2 machines (isa differ)")
    assert "host-1cpu" not in split.targets and own[0].name == "host-1cpu"  # not in place


def test_same_host_name_on_another_cpu_is_another_machine(tmp_path):
    """Merged folders of "the same" instance type (host name vm) that landed on an EPYC
    and on a Xeon are two machines; before, both were host-1cpu@vm, refused as one
    machine's folder listed twice."""
    ours = load_runs([write_run(tmp_path / "ours", "host-1cpu", 1, 100.0, TUESDAY)])
    folders = [tmp_path / "epyc", tmp_path / "xeon"]
    write_run(folders[0], "host-1cpu", 1, 50.0, EPYC)
    write_run(folders[1], "host-1cpu", 1, 80.0, MONDAY)
    merged, fields = merge_runs([str(f) for f in folders], ours, TARGETS)
    names = [r.name for r in merged]
    assert names[0].startswith("host-1cpu@epyc-7b13-avx2-2c-24g-")
    assert names[1].startswith("host-1cpu@xeon-avx2-2c-24g-") and len(set(names)) == 2
    split, table, summ = tables(ours, merged, fields)
    assert list(summ["target"]) == ["host-1cpu", *names]  # ours ran on one machine
    assert list(table["host"]) == ["vm"] * 3
    assert table["machine_fingerprint"].nunique() == 3


def test_runs_made_before_a_field_was_recorded_still_load_and_merge(tmp_path):
    """Rounds 1-2 recorded no CPU flags, cores, CPU ID or memory, round 3 all of them, on
    the same machine: one target, told apart only by what all its runs recorded; an old
    merged folder merges."""
    own_dirs = [write_run(tmp_path / "out", "host-1cpu", k, 100.0, OLD) for k in (1, 2)]
    own_dirs.append(write_run(tmp_path / "out", "host-1cpu", 3, 100.0, TUESDAY))
    older = tmp_path / "older"
    laptop = {"hostname": "laptop", "cpu_model": "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz"}
    write_run(older, "host-1cpu", 1, 60.0, laptop)  # no GPUs recorded either
    own = load_runs(own_dirs)
    merged, fields = merge_runs([str(older)], own, TARGETS)
    split, table, summ = tables(own, merged, fields)
    assert split.notes == [] and list(summ["target"]) == ["host-1cpu", merged[0].name]
    machines = Machines([*own, *merged])
    # The old rounds join the one machine they agree with, told apart by every field round 3
    # recorded; the laptop is its own.
    assert len({machines.of(r).label for r in own}) == 1
    assert set(machines.of(own[0]).identity) == set(IDENTITY_FIELDS)
    assert machines.of(merged[0]).label != machines.of(own[0]).label
    assert merged[0].name.startswith("host-1cpu@core-i7-8550u-")
    assert machine_identity({"provenance": {}})["host"] is None  # nothing recorded at all


def test_one_old_run_does_not_pool_the_cpus_of_a_host(tmp_path):
    """Two Xeons of one model name under one host name (a cloud VM class moved between
    CPU generations), told apart by their CPU ID, and one old run with no CPU ID: the two
    stay two machines (a field some run lacks is not dropped for all), and the old run,
    agreeing with both, is one of its own."""
    other_xeon = {**MONDAY, "cpu_id": "GenuineIntel 6/85/7"}
    dirs = [write_run(tmp_path / "a", "host-1cpu", 1, 100.0, MONDAY),
            write_run(tmp_path / "b", "host-1cpu", 1, 50.0, other_xeon),
            write_run(tmp_path / "c", "host-1cpu", 1, 70.0, OLD)]  # fmt: skip
    runs = load_runs(dirs)
    machines = Machines(runs)
    labels = [machines.of(r).label for r in runs]
    assert len(set(labels)) == 3, labels


def test_a_docker_run_is_on_its_daemons_machine(tmp_path):
    """A docker run's host is its daemon's name, never its container's random host name
    (older docker runs recorded no daemon: not recorded); another daemon, with the same name
    and CPU, is another machine."""

    def daemon(id_, name="vm"):
        return {"container": {"daemon": {"id": id_, "name": name, "ncpu": 2,
                                         "memory_mib": 24106}}, "runner": "docker"}  # fmt: skip

    runs = [
        write_run(tmp_path / "a", "d", 1, 100.0, {**MONDAY, "hostname": "f287aed027f6"},
                  **daemon("6LGE:IPPP")),
        write_run(tmp_path / "b", "d", 1, 100.0, {**MONDAY, "hostname": "0c1d2e3f4a5b"},
                  **daemon("Q7XK:2MZD")),
    ]  # fmt: skip
    a, b = load_runs(runs)
    assert machine_identity(a.metrics)["host"] == "vm"
    machines = Machines([a, b])
    assert machines.of(a).differences(machines.of(b)) == ["docker_daemon"]
    old = {**a.metrics, "container": {"image": "x"}}
    assert machine_identity(old)["host"] is None and machine_identity(old)["cores"] == 2


def test_labels_stay_unique_when_fingerprints_share_their_first_digits():
    """2,000 machines alike but for their host names: some share the first 4 hex digits of
    their fingerprints (birthday: certain), yet no two get one label."""
    runs = [Run("x", {"provenance": {**MONDAY, "hostname": f"h{i}"}}, pd.DataFrame())
            for i in range(2000)]  # fmt: skip
    machines = Machines(runs)
    labels = [machines.of(r).label for r in runs]
    assert len(set(labels)) == 2000
    assert min(map(len, labels)) == len("xeon-avx2-2c-24g-") + 4 < max(map(len, labels))


def test_the_compared_flags_are_ones_every_run_records():
    """A flag compared but never recorded would tell every run apart from none."""
    for flag in MACHINE_FLAGS:
        assert flag in hardware.SIMD_FLAGS or flag.startswith("avx512"), flag
    recorded = hardware.this_machine()
    if Path("/proc/cpuinfo").is_file():
        assert recorded["cpu_id"] != "unknown" and recorded["memory_mib"] > 0


def test_the_figures_command_splits_a_target_that_ran_on_two_cpus(tmp_path):
    """End to end (embryo-bench figures on a made-up outdir): the results, summary and
    comparison tables name both machines' parts; the utilisation figures keep the planned
    names (the workflow's outputs)."""
    from embryo_bench.cli import main

    out = tmp_path / "out"
    dirs = outdir_on_two_machines(out, EPYC, TUESDAY)
    spec = FiguresSpec(
        runs=dirs, merge=[], targets=TARGETS, cost_base="host-1cpu", cost_note="",
        compare_base="host-1cpu", min_difference=0.05, stability={}, config={},
    )  # fmt: skip
    spec.write(out / "figures-spec.json")
    (out / "source.json").write_text(json.dumps({"label": "made up", "synthetic": True}))
    args = ["figures", "--spec", str(out / "figures-spec.json"), "--source-info"]
    assert main([*args, str(out / "source.json"), "--out-dir", str(out / "figures")]) == 0
    fig = out / "figures"
    summ = pd.read_csv(fig / "summary_table.csv", keep_default_na=False)
    epyc, xeon = "host-1cpu@epyc-7b13-avx2-2c-24g-", "host-1cpu@xeon-avx512-amx-2c-24g-"
    assert [n[: len(epyc)] for n in summ["target"]][::2] == [epyc, xeon[: len(epyc)]]
    assert list(summ["repeats"]) == [3, 3, 2, 2]
    paired = pd.read_csv(fig / "comparison_table.csv", keep_default_na=False)
    assert list(paired["target"]) == list(summ["target"])
    cost = pd.read_csv(fig / "cost_table.csv", keep_default_na=False)
    assert cost["target"].iloc[0] == summ["target"].iloc[0]  # the cost base's EPYC part
    for k in range(1, 6):
        assert (fig / f"{utilisation_name('host-1cpu', k)}.png").is_file()

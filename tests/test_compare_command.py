"""`embryo-bench compare A B [C ...]`: result folders from any machines or
days, per workload and target, the ratio to the first folder's with its interval, verdict and
pairing, in Markdown and CSV; a reference file of expected images/s; exit status 1 on a
slowdown measured relative to a control or against a reference (the plain rows, one session a
side, are never a regression), 0 otherwise, 2 with one line for a bad folder. Made-up result folders
(tests/test_machine_identity.py's runs), no training."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from test_machine_identity import (  # noqa: E402
    EPYC,
    MONDAY,
    TUESDAY,
    outdir_on_two_machines,
    write_run,
)

from embryo_bench.cli import main  # noqa: E402
from embryo_bench.reporting import compare, crossfolder, reference_file  # noqa: E402

#: Five rounds' noise (a factor each, about 2 %), and the same noise in another order: two
#: folders of one machine, as two days would give.
NOISE = (1.00, 1.02, 0.98, 1.01, 0.99)
OTHER_NOISE = (0.99, 1.01, 1.00, 0.98, 1.02)
WORKLOAD = "mnist-mlp"


def result_folder(
    root: Path, speed: float, noise=NOISE, machine=MONDAY, workload=True, faster=1.6
) -> Path:
    """A made-up outdir: host-1cpu at ``speed`` and host-2cpu at ``faster`` x ``speed`` images/s
    (times ``noise``, one round each), and with ``workload`` the workload mnist-mlp's
    host-1cpu at 10 x ``speed`` under workloads/mnist-mlp/."""
    for k, factor in enumerate(noise, start=1):
        start = 1.8e9 + 10 * k
        write_run(root, "host-1cpu", k, speed * factor, machine, start)
        other = noise[-k]  # host-2cpu's own noise
        write_run(root, "host-2cpu", k, faster * speed * other, machine, start + 5)
        if workload:
            write_run(
                root / "workloads" / WORKLOAD, "host-1cpu", k, 10 * speed * factor, machine,
                start, workload=WORKLOAD,
            )  # fmt: skip
    return root


def run(capsys, *args) -> tuple[int, str, str]:
    """``embryo-bench compare *args``: (exit status, stdout, stderr), as a shell sees them
    (a SystemExit's code, or what main returns)."""
    try:
        status = main(["compare", *map(str, args)])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_a_ten_percent_slowdown_is_shown_and_not_called_a_regression_without_a_check(
    tmp_path, capsys
):
    """Two folders are two sessions: a slower session and a slower target read alike in the
    plain rows, so they are shown (ratio, interval, verdict) and never make the exit status
    1; the Markdown and stderr say that nothing was checked and what would check it."""
    a = result_folder(tmp_path / "monday", 100.0)
    slow = result_folder(tmp_path / "slowed", 90.0, OTHER_NOISE)  # 10 % slower, all targets
    same = result_folder(tmp_path / "tuesday", 100.0, OTHER_NOISE)  # an A/A
    csv, md = tmp_path / "slowed.csv", tmp_path / "slowed.md"
    status, out, err = run(capsys, a, slow, "--csv", csv, "--markdown", md)
    assert status == 0, err
    table = pd.read_csv(csv)
    across = table[table["section"] == "across"].set_index(["workload", "target"])
    assert list(across.index) == [("paper", "host-1cpu"), ("paper", "host-2cpu"),
                                  (WORKLOAD, "host-1cpu")]  # fmt: skip
    for key, row in across.iterrows():
        assert row["pairing"] == "unpaired" and row["verdict"] == "at least 5 % slower", key
        assert row["ratio_low"] < 0.9 < row["ratio_high"] < 1 / 1.05
        assert (row["runs"], row["reference_runs"]) == (5, 5)
        assert row["machine"] == row["reference_machine"] and not row["regression"]
    assert across.loc[("paper", "host-1cpu"), "ratio"] == pytest.approx(0.9, abs=0.002)
    # Each folder's own rounds, paired, beside: no regression (host-2cpu is faster).
    within = table[table["section"] == "within"]
    assert set(within["pairing"]) == {"paired"}
    assert {compare.direction(v) for v in within["verdict"]} == {compare.FASTER}
    assert not within["regression"].astype(bool).any()
    assert md.read_text() == out and f"## `{slow}` against `{a}`" in out
    # The plain rows say what they cannot hold (the session's own speed), and the
    # regressions' section that nothing was checked, as does stderr; no "slower:" line.
    assert "Two folders are two sessions" in out and "`--control TARGET`" in out
    assert "Shown, not a regression check: each folder's own speed that day" in out
    assert "| paper      | host-1cpu | xeon-avx2-2c-24g-" in out
    assert out.endswith("## Regressions\n\n" + crossfolder.NOT_CHECKED + " (exit status 0).\n")
    assert f"embryo-bench: {crossfolder.NOT_CHECKED}\n" in err
    assert "embryo-bench: slower:" not in err

    status, out, err = run(capsys, a, same)
    assert status == 0, err
    # Never faster or slower: the same within the noise, or not yet resolved.
    rows = [line for line in out.splitlines() if line.startswith("| paper ")
            or line.startswith(f"| {WORKLOAD} ")]  # fmt: skip
    called = [r for r in rows if "the same within ±5 %" in r or "unresolved: about" in r]
    assert len(called) == 3, rows
    # The first folder is the reference point: three folders at once, each against it.
    status, out, _ = run(capsys, a, same, slow)
    assert status == 0 and f"## `{same}` against `{a}`" in out and f"## `{slow}` against" in out
    # A larger --min-difference than the slowdown: slower, but not at least 15 % slower
    # (log scale: 0.9 > 1 / 1.15).
    status, out, _ = run(capsys, a, slow, "--min-difference", "0.15")
    assert status == 0 and "at least 15 % slower |" not in out
    assert "| slower " in out or "unresolved" in out


def test_a_reference_files_regression(tmp_path, capsys):
    a = result_folder(tmp_path / "a", 100.0)
    ref = tmp_path / "reference.yaml"
    ref.write_text(
        "tolerance: 0.05\n"
        "machines: any\n"
        "targets:\n"
        "  host-1cpu: {images_per_s: 112}\n"  # 100 measured: 0.89, slower
        "  host-2cpu: {images_per_s: 170, tolerance: 0.2}\n"  # 160: 0.94, within 20 %
        f"workloads:\n  {WORKLOAD}:\n    host-1cpu: {{images_per_s: 990}}\n"  # 1000: fine
        "  absent:\n    host-1cpu: {images_per_s: 1}\n"
    )
    csv = tmp_path / "out.csv"
    status, out, err = run(capsys, a, "--reference", ref, "--csv", csv)
    assert status == 1, err
    rows = pd.read_csv(csv).set_index(["workload", "target"])
    rows = rows[rows["section"] == "reference"]
    assert rows.loc[("paper", "host-1cpu"), "verdict"] == "at least 5 % slower"
    assert rows.loc[("paper", "host-1cpu"), "ratio"] == pytest.approx(100 / 112, abs=0.002)
    # Within their tolerances: whatever the interval says, not "at least" slower.
    for key in (("paper", "host-2cpu"), (WORKLOAD, "host-1cpu")):
        assert not rows.loc[key, "verdict"].startswith("at least"), rows.loc[key, "verdict"]
    assert rows.loc[("absent", "host-1cpu"), "verdict"] == "no run"
    assert list(rows["regression"]) == [True, False, False, False]
    assert "## Against the reference" in out and "the reference's 112 images/s" in err
    assert "| host-1cpu (any machine) |" in out  # an entry that names no machine says so
    # Met: exit 0. Too few runs for a verdict: a ratio, no regression.
    ref.write_text("machines: any\ntargets:\n  host-1cpu: {images_per_s: 99}\n")
    assert run(capsys, a, "--reference", ref)[0] == 0
    few = tmp_path / "few"
    for k in (1, 2):
        write_run(few, "host-1cpu", k, 50.0 + k, MONDAY)
    status, out, _ = run(capsys, few, "--reference", ref)
    assert status == 0 and "2 runs: too few for a verdict (3 needed)" in out
    # A bad reference file: one line naming the file and the key.
    for text, says in (
        ("targets:\n  host-1cpu: {images_per_s: 0}\n", "targets.host-1cpu.images_per_s: 0 is"),
        ("targets:\n  host-1cpu: {images_per_sec: 9}\n", "targets.host-1cpu.images_per_sec: "
                                                         "unknown key"),
        ("tolerance: 2\ntargets: {}\n", "tolerance: 2 is greater than the maximum of 1"),
        ("tolerance: 0.1\n", "holds no target"),
        ("targets: [\n", "line 2, column 1"),
    ):  # fmt: skip
        ref.write_text(text)
        status, out, err = run(capsys, a, "--reference", ref)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "" and line.startswith(f"embryo-bench: error: {ref}")
        assert says in line, line


def test_a_target_on_two_cpus_is_split_never_pooled(tmp_path, capsys):
    """Folder B's rounds 1-3 ran on Monday's AVX2 Xeon, 4-5 on Tuesday's AMX one (3x the
    speed), under one host name: its host-1cpu is two rows, each of one machine's runs;
    the AVX2 part is compared with folder A's host-1cpu on that same CPU."""
    a = result_folder(tmp_path / "a", 100.0, workload=False, faster=1.5)
    b = tmp_path / "b"
    outdir_on_two_machines(b, MONDAY, TUESDAY)  # host-2cpu 1.5 x host-1cpu too
    csv = tmp_path / "out.csv"
    status, out, err = run(capsys, a, b, "--csv", csv)
    assert status == 0, err  # no slowdown measured: the AVX2 part is as fast, AMX 3x
    rows = pd.read_csv(csv)
    rows = rows[(rows["section"] == "across") & rows["target"].str.startswith("host-1cpu")]
    avx2, amx = rows.iloc[0], rows.iloc[1]
    assert avx2["target"].startswith("host-1cpu@xeon-avx2-2c-24g-")
    assert amx["target"].startswith("host-1cpu@xeon-avx512-amx-2c-24g-")
    assert (avx2["runs"], amx["runs"]) == (3, 2)  # 5 runs never pooled
    assert avx2["reference_target"] == "host-1cpu" == amx["reference_target"]
    assert avx2["machine"] == avx2["reference_machine"]  # same CPU: ratio about 1
    assert avx2["ratio"] == pytest.approx(102 / 100, abs=0.03)
    assert amx["machine"] != amx["reference_machine"]  # the only host-1cpu A has
    assert amx["ratio"] == pytest.approx(304.5 / 100, abs=0.05)
    assert amx["verdict"] == "2 runs on a side: too few for a verdict (3 needed)"
    assert "host-1cpu ran on 2 machines (isa differ)" in out


def write_bad(root: Path, what: str) -> Path:
    """A folder that is not a result folder as ``what`` says."""
    if what == "empty":
        root.mkdir()
    elif what == "metrics":
        write_run(root, "host-1cpu", 1, 100.0, MONDAY)
        path = root / "train/host-1cpu/repeat-1/metrics.json"
        metrics = json.loads(path.read_text())
        del metrics["provenance"]
        path.write_text(json.dumps(metrics))
    elif what == "other data":
        write_run(root, "host-1cpu", 1, 100.0, EPYC, n_train=999)
    elif what == "folder name":
        write_run(root, "host-1cpu", 1, 100.0, MONDAY)
        (root / "train/host-1cpu/repeat-1").rename(root / "train/host-1cpu/repeat-7")
    return root


@pytest.mark.parametrize(
    "what, says",
    [
        ("missing", "is not a folder (a result folder, an outdir)"),
        ("empty", "holds no finished run (no train/<target>/repeat-<k>/metrics.json, nor "
                  "workloads/<name>/train/<target>/repeat-<k>/metrics.json)"),
        ("metrics", "train/host-1cpu/repeat-1/metrics.json lacks ['provenance']"),
        ("other data", "is not comparable with"),
        ("folder name", "is of target host-1cpu repeat 1, but its folder is host-1cpu/repeat-7"),
        ("same", "are the same folder"),
    ],
)  # fmt: skip
def test_a_folder_that_is_not_a_result_folder_is_one_line(tmp_path, capsys, what, says):
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    bad = a if what == "same" else write_bad(tmp_path / "bad", what)
    csv = tmp_path / "out.csv"
    status, out, err = run(capsys, a, f"{bad}/" if what == "same" else bad, "--csv", csv)
    assert status == 2 and out == "" and not csv.exists()
    (line,) = err.strip().splitlines()
    assert line.startswith("embryo-bench: error: compare: ") and says in line, line
    if what == "other data":
        assert "(n_train: theirs 999, ours 1000)" in line


def test_bad_options_are_one_line(tmp_path, capsys):
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    for args, says in (
        ([a], "compare: give two or more result folders, or one and --reference"),
        ([a, a, "--min-difference", "2"], "--min-difference: min_difference: 2.0 is greater"),
        ([a, a, "--csv", tmp_path / "no" / "x.csv"], "--csv"),
        ([a, "--reference", tmp_path / "none.yaml"], "none.yaml: not a file"),
    ):
        status, out, err = run(capsys, *args)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "" and says in line, line


def _set_metric(run: Path, key: str, value) -> Path:
    """Set ``key`` of a run's metrics.json (JSON as Python writes it: NaN, Infinity)."""
    path = run / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics[key] = value
    path.write_text(json.dumps(metrics))
    return path


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("mean_images_per_s", -5.0, "mean_images_per_s -5.0: expected a positive finite number "
                                    "(images/s)"),
        ("mean_images_per_s", 0, "mean_images_per_s 0: expected a positive finite number"),
        ("mean_images_per_s", float("nan"), "mean_images_per_s nan: expected a positive finite"),
        ("mean_images_per_s", float("inf"), "mean_images_per_s inf: expected a positive finite"),
        ("mean_images_per_s", "fast", "mean_images_per_s 'fast': expected a positive finite"),
        ("time_to_accuracy_seconds", -1.0, "time_to_accuracy_seconds -1.0: expected a positive "
                                           "finite number (s), or null"),
    ],
)  # fmt: skip
def test_a_bad_measurement_is_one_line_naming_its_file_before_anything_is_compared(
    tmp_path, capsys, key, value, says
):
    """A damaged metrics.json in either folder, the first or another: one line naming the
    file and the value, nothing on stdout, no CSV (a negative or zero images/s ended in a
    traceback; NaN read as "not measured", naming no file)."""
    a = result_folder(tmp_path / "a", 100.0)
    b = result_folder(tmp_path / "b", 100.0, OTHER_NOISE)
    csv = tmp_path / "out.csv"
    for folder in (b, a):
        bad = _set_metric(folder / "train/host-1cpu/repeat-2", key, value)
        status, out, err = run(capsys, a, b, "--csv", csv)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "" and not csv.exists(), line
        assert line.startswith(f"embryo-bench: error: compare: {bad}: {says}"), line
        _set_metric(folder / "train/host-1cpu/repeat-2", key, 100.0 if "images" in key else None)
    # A bad run of another workload, read against a reference file alone.
    ref = tmp_path / "ref.yaml"
    ref.write_text(
        f"machines: any\nworkloads:\n  {WORKLOAD}:\n    host-1cpu: {{images_per_s: 1000}}\n"
    )
    bad = _set_metric(b / "workloads" / WORKLOAD / "train/host-1cpu/repeat-3", key, value)
    status, out, err = run(capsys, b, "--reference", ref)
    (line,) = err.strip().splitlines()
    assert status == 2 and out == "" and f"{bad}: {says}" in line, line


def test_a_non_finite_number_in_a_reference_file_or_option_is_one_line(tmp_path, capsys):
    """NaN passes every bound: a NaN --min-difference called a 12,000x slowdown "no measured
    difference" and exit 0; a NaN expected speed ended in a traceback."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    slow = result_folder(tmp_path / "slow", 100.0 / 12_000, OTHER_NOISE, workload=False)
    status, out, _ = run(capsys, a, slow)
    assert status == 0 and "| at least 5 % slower " in out  # measured as the slowdown it is
    status, out, err = run(capsys, a, slow, "--min-difference", "nan")
    (line,) = err.strip().splitlines()
    assert status == 2 and out == "", line
    assert line == (
        "embryo-bench: error: --min-difference: min_difference: nan: expected a finite number, "
        "not NaN or infinity"
    )
    ref = tmp_path / "reference.yaml"
    for text, says in (
        ("targets:\n  host-1cpu: {images_per_s: .nan}\n", "targets.host-1cpu.images_per_s: nan"),
        ("targets:\n  host-1cpu: {images_per_s: .inf}\n", "targets.host-1cpu.images_per_s: inf"),
        ("tolerance: .nan\ntargets:\n  host-1cpu: {images_per_s: 1}\n", "tolerance: nan"),
        ("targets:\n  host-1cpu: {images_per_s: 1, tolerance: .NaN}\n",
         "targets.host-1cpu.tolerance: nan"),
    ):  # fmt: skip
        ref.write_text(text)
        status, out, err = run(capsys, a, "--reference", ref)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "", line
        assert line == f"embryo-bench: error: {ref}: {says}: expected a finite number, not NaN " \
                       "or infinity"  # fmt: skip


def test_an_output_that_cannot_be_written_is_refused_before_the_comparison(tmp_path, capsys):
    """--csv naming a folder ran the whole comparison, then ended in a traceback."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    b = result_folder(tmp_path / "b", 100.0, OTHER_NOISE, workload=False)
    md = tmp_path / "out.md"
    for args, says in (
        (["--csv", tmp_path], f"--csv {tmp_path}: is a folder; expected a file to write"),
        (["--markdown", a], f"--markdown {a}: is a folder"),
        (["--csv", md, "--markdown", md], f"--markdown {md}: the same file as --csv"),
    ):
        status, out, err = run(capsys, a, b, *args)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "" and line.startswith(f"embryo-bench: error: {says}")
    assert not md.exists()


def test_an_output_onto_what_compare_reads_is_refused_and_the_file_kept(tmp_path, capsys):
    """--markdown naming the --reference file replaced it with the comparison, and --csv
    naming a run's metrics.json replaced that run's measurements: what compare reads is
    never written."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    b = result_folder(tmp_path / "b", 100.0, OTHER_NOISE, workload=False)
    ref = tmp_path / "ref.yaml"
    ref.write_text("targets:\n  host-1cpu: {images_per_s: 100}\n")
    metrics = b / "train/host-1cpu/repeat-1/metrics.json"
    kept = {p: p.read_bytes() for p in (ref, metrics)}
    for args, says in (
        ([a, "--reference", ref, "--markdown", ref],
         f"--markdown {ref}: the --reference file; expected a file of its own"),
        ([a, b, "--csv", metrics],
         f"--csv {metrics}: inside {b}'s runs (train/); expected a file outside the result "
         "folders' train/ and workloads/"),
        ([a, b, "--markdown", b / "workloads" / "x.md"], "--markdown"),
    ):  # fmt: skip
        status, out, err = run(capsys, *args)
        (line,) = err.strip().splitlines()
        assert status == 2 and out == "" and line.startswith(f"embryo-bench: error: {says}"), line
    assert {p: p.read_bytes() for p in kept} == kept
    assert not (b / "workloads").exists()
    # beside the runs, in the folder itself, is fine
    assert run(capsys, a, b, "--csv", b / "compare.csv")[0] == 0 and (b / "compare.csv").exists()


@pytest.mark.parametrize("damage", ["a folder", "not UTF-8"])
def test_a_metrics_file_that_cannot_be_read_as_text_is_one_line(tmp_path, capsys, damage):
    """A metrics.json that is a folder, or not UTF-8, ended in a traceback."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    b = result_folder(tmp_path / "b", 100.0, OTHER_NOISE, workload=False)
    metrics = b / "train/host-1cpu/repeat-1/metrics.json"
    metrics.unlink()
    if damage == "a folder":
        metrics.mkdir()
    else:
        metrics.write_bytes(b'{"target": "\xff"}')
    status, out, err = run(capsys, a, b)
    (line,) = err.strip().splitlines()
    assert status == 2 and out == "", line
    assert line.startswith(f"embryo-bench: error: compare: {metrics}: "), line


def test_a_reference_file_that_matches_no_run_is_refused(tmp_path, capsys):
    """A reference whose every entry names a target no folder ran (a misspelt target) said
    "no run" and exit status 0: a nightly job against it could never fail. Some entries
    without runs stay rows of their own."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    ref = tmp_path / "ref.yaml"
    ref.write_text("targets:\n  host-1-cpu: {images_per_s: 1000}\n")
    status, out, err = run(capsys, a, "--reference", ref)
    (line,) = err.strip().splitlines()
    assert status == 2 and out == "", line
    assert line == (
        f"embryo-bench: error: {ref}: no entry matches a run of the folders (its entries: "
        "paper/host-1-cpu; the folders' runs: paper/host-1cpu, paper/host-2cpu); expected "
        "targets (or workloads and targets) as the folders name them"
    )
    ref.write_text(
        "machines: any\ntargets:\n  host-1cpu: {images_per_s: 90}\n  host-9cpu: {images_per_s: 9}\n"
    )
    status, out, err = run(capsys, a, "--reference", ref)
    assert status == 0, out
    assert re.search(
        r"\| host-9cpu +\| +\| host-9cpu \(any machine\) +\| +0 \|.*\| no run +\|", out
    )


def _priced(root: Path, prices: dict[str, float]) -> None:
    """The figures spec of ``root``'s paper runs, pricing its targets (USD an hour)."""
    from embryo_bench.vocabulary.figspec import FiguresSpec

    runs = sorted(str(p.parent) for p in root.glob("train/*/repeat-*/metrics.json"))
    targets = {t: {"hourly_usd": usd, "price_source": "made up", "paper_system": "",
                   "description": "", "sweep": None} for t, usd in prices.items()}  # fmt: skip
    FiguresSpec(
        runs=runs, merge=[], targets=targets, cost_base="host-1cpu", cost_note="",
        compare_base="host-1cpu", min_difference=0.05, stability={}, config={},
    ).write(root / "figures-spec.json")  # fmt: skip


def test_each_row_shows_its_cost_and_both_sides_flagged_runs(tmp_path, capsys):
    """Cost a run at each folder's own price (training time x USD an hour), and the flagged
    runs counted on rows one folder alone has too (they printed 0 / 0)."""
    a = result_folder(tmp_path / "monday", 100.0)
    b = result_folder(tmp_path / "tuesday", 100.0, OTHER_NOISE, workload=False)
    _priced(a, {"host-1cpu": 0.36, "host-2cpu": 0.72})
    _priced(b, {"host-1cpu": 0.72, "host-2cpu": 0.72})
    metrics = a / "workloads" / WORKLOAD / "train/host-1cpu/repeat-1/metrics.json"
    m = json.loads(metrics.read_text())  # a run a stall flags interfered
    metrics.write_text(json.dumps(m | {"telemetry": {"interference": {"longest_stall_s": 600}}}))
    csv = tmp_path / "out.csv"
    status, out, err = run(capsys, a, b, "--csv", csv)
    assert status == 0, err
    table = pd.read_csv(csv).set_index(["section", "workload", "target"])
    row = table.loc[("across", "paper", "host-1cpu")]
    # 2,000 images at 100 images/s x its noise: ~20 s at 0.36 and 0.72 USD an hour.
    seconds = 2000 / 100.0 / pd.Series(NOISE)
    assert row["reference_cost_usd"] == pytest.approx((seconds * 0.36 / 3600).median())
    assert row["cost_usd"] == pytest.approx(
        (2000 / 100.0 / pd.Series(OTHER_NOISE) * 0.72 / 3600).median()
    )
    assert "cost a run, USD (this / first)" in out and "| 0.004 / 0.002 " in out
    alone = table[table.index.get_level_values("workload") == WORKLOAD]
    (only_first,) = alone[alone["verdict"] == "not in this folder"].to_dict("records")
    assert (only_first["flagged_runs"], only_first["reference_flagged_runs"]) == (0, 1)
    assert "| 0 / 1 " in out


def test_folders_that_share_no_target_are_refused_in_one_line(tmp_path, capsys):
    """Nothing to compare: exit status 2 and one line, not a table of "not in this folder"
    rows and an exit status 0 that reads as "no regression"."""
    a = result_folder(tmp_path / "monday", 100.0, workload=False)
    b = tmp_path / "other"
    for k, factor in enumerate(NOISE, start=1):
        write_run(b, "docker-2cpu", k, 100.0 * factor, MONDAY, 1.8e9 + 10 * k)
    status, out, err = run(capsys, a, b)
    assert status == 2 and out == ""
    assert err == (
        f"embryo-bench: error: compare: {b} and {a} share no workload and target (their runs: "
        "paper/docker-2cpu, paper/host-1cpu, paper/host-2cpu); expected folders of the same "
        "workloads' runs\n"
    )


def test_a_control_target_divides_out_a_slower_session_and_finds_a_target_that_slowed(
    tmp_path, capsys
):
    a = result_folder(tmp_path / "monday", 100.0)
    # A session 10 % slower for every target (another day's CPU): the plain rows call it a
    # slowdown; relative to host-1cpu, run in both sessions, it divides out.
    slow_day = result_folder(tmp_path / "slow-day", 90.0, OTHER_NOISE)
    csv = tmp_path / "slow-day.csv"
    status, out, err = run(capsys, a, slow_day, "--control", "host-1cpu", "--csv", csv)
    assert status == 0, err
    table = pd.read_csv(csv, keep_default_na=False)
    across = table[table["section"] == "across"]
    assert set(across["verdict"]) == {"at least 5 % slower"}  # shown ...
    assert not across["regression"].astype(bool).any()  # ... but not the gate
    assert "Two folders are two sessions" not in out  # the control holds what it warned of
    controlled = table[table["section"] == "controlled"]
    # One row: host-2cpu on the paper's workload (the control's own rows and mnist-mlp,
    # which ran only the control, have nothing to divide).
    assert controlled[["workload", "target"]].values.tolist() == [["paper", "host-2cpu"]]
    row = controlled.iloc[0]
    assert row["pairing"] == "relative to host-1cpu"
    assert (row["runs"], row["reference_runs"]) == (5, 5)  # rounds with the control
    assert row["ratio"] == pytest.approx(1.0, abs=0.02)
    assert compare.direction(row["verdict"]) in (compare.SAME, compare.UNRESOLVED), row["verdict"]
    assert f"## `{slow_day}` against `{a}`, relative to `host-1cpu`" in out
    assert "None measured (exit status 0)." in out

    # host-2cpu 15 % slower relative to the control in the second session: a regression.
    slowed = result_folder(tmp_path / "slowed", 100.0, OTHER_NOISE, faster=1.6 * 0.85)
    status, out, err = run(capsys, a, slowed, "--control", "host-1cpu")
    assert status == 1
    slower = [line for line in err.splitlines() if line.startswith("embryo-bench: slower:")]
    assert len(slower) == 1 and "host-2cpu" in slower[0] and "relative to host-1cpu" in slower[0]
    assert re.search(
        r"\| host-2cpu .*\| 0\.8[45]\d \[0\.8\d\d, 0\.8\d\d\]\s*\| at least 5 % slower", out
    )

    # A control a folder did not run: one line naming it, nothing compared.
    status, out, err = run(capsys, a, slowed, "--control", "host-4cpu")
    assert status == 2 and out == ""
    assert "compare --control host-4cpu:" in err and "has no run of host-4cpu" in err


def test_the_rows_across_folders_hold_together_at_95_percent(tmp_path, capsys):
    # Three rows against the first folder (two paper targets, one workload's): each interval
    # at 1 - 0.05 / 3, wider than one row's 95 %, and the Markdown says so once.
    a = result_folder(tmp_path / "monday", 100.0)
    b = result_folder(tmp_path / "tuesday", 100.0, OTHER_NOISE)
    csv = tmp_path / "c.csv"
    status, out, _ = run(capsys, a, b, "--csv", csv)
    assert status == 0 and "95 % for all 3 compared rows at once (each at 98.3 %" in out
    row = pd.read_csv(csv).query("section == 'across' and target == 'host-1cpu'").iloc[0]
    runs_a = [100.0 * f for f in NOISE]
    runs_b = [100.0 * f for f in OTHER_NOISE]
    _, low95, high95 = compare.unpaired_interval(runs_b, runs_a, 0.95)
    _, low, high = compare.unpaired_interval(runs_b, runs_a, 1 - 0.05 / 3)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx((low, high))
    assert low < low95 and high > high95


def test_a_hand_written_entry_without_a_machine_is_bound_or_said_to_be_any(tmp_path, capsys):
    """A hand-written entry named without a machine judged every machine's runs against one
    machine's speed: a day's other CPU read as a regression. It is refused, naming the
    machine to bind it to, unless the file says ``machines: any``; bound to the machine the
    runs ran on, it judges them."""
    a = result_folder(tmp_path / "a", 100.0, workload=False)
    ref = tmp_path / "ref.yaml"
    ref.write_text("tolerance: 0.05\ntargets:\n  host-1cpu: {images_per_s: 130}\n")
    status, out, err = run(capsys, a, "--reference", ref)
    (line,) = err.strip().splitlines()
    assert status == 2 and out == "", line
    machine = re.search(r"met runs on (\S+);", line).group(1)
    assert machine.startswith("xeon-avx2-2c-24g-")
    assert line == (
        f"embryo-bench: error: {ref}: targets.host-1cpu names no machine and met runs on "
        f"{machine}; expected host-1cpu@{machine} (bound to the machine the speed was "
        "measured on), or `machines: any` in the file to judge every machine's runs against it"
    )
    # Bound as the line says: judged (30 % slower than expected, a regression).
    ref.write_text(f"tolerance: 0.05\ntargets:\n  host-1cpu@{machine}: {{images_per_s: 130}}\n")
    status, out, _ = run(capsys, a, "--reference", ref)
    assert status == 1 and "(any machine)" not in out
    # Said to be any machine's: judged too, and its rows say so.
    ref.write_text("machines: any\ntolerance: 0.05\ntargets:\n  host-1cpu: {images_per_s: 130}\n")
    status, out, _ = run(capsys, a, "--reference", ref)
    assert status == 1 and "| host-1cpu (any machine) |" in out
    # Anything else in machines: is a schema error naming the key.
    ref.write_text("machines: all\ntargets:\n  host-1cpu: {images_per_s: 130}\n")
    status, _, err = run(capsys, a, "--reference", ref)
    assert status == 2 and f"{ref}: machines: 'any' was expected" in err, err


def test_a_reference_written_from_sessions_is_bound_to_their_machine_and_their_spread(
    tmp_path, capsys
):
    # Three sessions of one machine, each a few per cent apart (a day's own speed).
    sessions = [
        result_folder(tmp_path / f"day-{k}", speed, noise)
        for k, (speed, noise) in enumerate([(100.0, NOISE), (96.0, OTHER_NOISE), (103.0, NOISE)])
    ]
    written = tmp_path / "expected.yaml"
    status, _, err = run(capsys, *sessions, "--write-reference", written)
    assert status == 0, err
    text = written.read_text()
    assert text.startswith("# Written by embryo-bench compare --write-reference on ")
    reference = reference_file.read_reference(written, 0.05)
    names = {t for _, t in reference}
    assert all("@xeon-avx2-2c-24g-" in n for n in names)  # bound to the machine
    entry = next(v for (w, t), v in reference.items() if w == "paper" and "host-1cpu@" in t)
    # NOISE and OTHER_NOISE hold the same factors: each day's geometric mean is its speed
    # times theirs.
    days = np.array([100.0, 96.0, 103.0]) * np.exp(np.log(NOISE).mean())
    assert entry.images_per_s == pytest.approx(float(np.exp(np.log(days).mean())), rel=1e-3)
    logs = np.log([100.0, 96.0, 103.0])
    spread = stats.t.ppf(0.975, 2) * logs.std(ddof=1) * np.sqrt(1 + 1 / 3)
    assert entry.tolerance == pytest.approx(np.expm1(spread), abs=0.002) and entry.tolerance > 0.05
    # Another day like them passes; a day 30 % slower is a regression against it.
    status, out, _ = run(capsys, result_folder(tmp_path / "day-4", 98.0), "--reference", written)
    assert status == 0 and "(any machine)" not in out
    assert re.search(r"\| host-1cpu@xeon-avx2-2c-24g-\w+ +\|", out)  # the entry bound to it
    slow = result_folder(tmp_path / "slow", 70.0)
    assert run(capsys, slow, "--reference", written)[0] == 1
    # Two sessions are enough; one has no spread: refused in one line, nothing written.
    two = tmp_path / "two.yaml"
    assert run(capsys, sessions[0], sessions[1], "--write-reference", two)[0] == 0
    assert two.exists()
    status, out, err = run(
        capsys, sessions[0], "--reference", written, "--write-reference", tmp_path / "x.yaml"
    )
    assert status == 2 and "--write-reference: 1 folder; expected 2 or more" in err
    assert not (tmp_path / "x.yaml").exists()

"""``embryo-bench`` commands that read the runs back and report them: the figures and tables,
the studies' numbers and claims beside ours, the workload view, a round's check
(``compare.until``) and result folders compared.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from ..errors import ConfigError, DataError

log = logging.getLogger("embryo_bench")


def cmd_figures(p):
    """figures and tables of every run"""
    p.add_argument(
        "--spec",
        required=True,
        help="figures-spec.json: runs (in the planned order), merged folders, targets' prices, "
        "cost and comparison bases, stability thresholds, the effective configuration",
    )
    p.add_argument(
        "--selection", default="", help="the select stage's selected.csv (the paper's workload)"
    )
    p.add_argument(
        "--select-summary", default="", help="the select stage's summary.json (data counts)"
    )
    p.add_argument(
        "--source-info",
        required=True,
        help="the index stage's source.json, or a workload's data info.json",
    )
    p.add_argument(
        "--shard",
        default="",
        help="an augment shard (its preprocessing settings; the paper's workload)",
    )
    p.add_argument(
        "--rounds-note",
        default="",
        help="why the rounds stopped (compare.until), for the comparison table",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=None,
        help="the level the comparison's throughput intervals hold together at (default 0.95; "
        "the workflow gives a stricter one after compare.until stopped early)",
    )
    p.add_argument(
        "--out-dir",
        required=True,
        help="the figures folder; the spec's configuration is written there as config.yaml "
        "after the figures (one job, so it always describes the runs the tables show)",
    )

    def run(a):
        from ..data.stages import shard_settings
        from ..io import kept_path, read_json, staged_folder
        from ..recording.baseline import load_baseline
        from ..reporting import figures
        from ..reporting.merge import merge_runs, split_by_machine
        from ..reporting.runs import load_runs
        from ..vocabulary.figspec import FiguresSpec
        from ..vocabulary.spec import Preprocessing

        spec = FiguresSpec.read(a.spec, current=True)
        runs = load_runs(spec.runs)
        merged, targets = merge_runs(spec.merge, runs, spec.targets)
        # One target's runs on two machines are two targets: never pooled into one.
        own = split_by_machine(runs, merged, targets)
        for note in own.notes:
            log.warning("%s", note)
        baseline = spec.stability.get("baseline", "")
        # Into a staging folder, moved into place only when every figure and table is made
        # (a failure halfway leaves no half set), the complete set then kept beside
        # (figures.previous), for the workflow to put back if a later figures job fails after
        # Snakemake removed them.
        with staged_folder(a.out_dir, keep=kept_path(a.out_dir)) as out_dir:
            figures.make_all(
                own.runs,
                own.targets,
                read_json(a.source_info),
                (
                    Preprocessing.from_dict(shard_settings(a.shard)["preprocessing"], a.shard)
                    if a.shard
                    else None
                ),
                a.selection or None,
                out_dir,
                cost_base=own.name(spec.cost_base),
                cost_note=spec.cost_note,
                stability=spec.stability,
                counts=read_json(a.select_summary) if a.select_summary else None,
                merged=merged,
                compare_base=own.name(spec.compare_base),
                min_difference=spec.min_difference,
                baseline=load_baseline(baseline) if baseline else None,
                rounds_note=a.rounds_note,
                confidence=a.confidence,
            )
            _write_config(spec.config, out_dir / "config.yaml")

    return run


def _write_config(config: dict, path: Path) -> None:
    """Write the effective configuration ``config`` as YAML at ``path`` (atomically)."""
    import yaml

    from ..io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))


def cmd_study_ours(p):
    """every workload's runs as one table, and per workload and target (what a
    study's numbers and claims are put beside, and the workload x target view)"""
    p.add_argument(
        "--workloads",
        required=True,
        help="JSON list: per workload its name, catalog, input, data, spec (figures-spec.json) "
        "and info (its data's record)",
    )
    p.add_argument("--runs-out", required=True, help="study/runs.csv: every run")
    p.add_argument("--ours-out", required=True, help="study/ours.csv: per workload and target")

    def run(a):
        from ..io import atomic_path, parse_json
        from ..reporting.study import StudyWorkload, ours_tables

        entries = parse_json(a.workloads, "--workloads")
        if not isinstance(entries, list):
            raise ConfigError("--workloads: expected a JSON list of workloads")
        workloads = [StudyWorkload.from_dict(e, f"--workloads[{i}]") for i, e in enumerate(entries)]
        runs, ours = ours_tables(workloads)
        for table, path in ((runs, a.runs_out), (ours, a.ours_out)):
            with atomic_path(path) as tmp:
                table.to_csv(tmp, index=False)
        log.info("%d runs, %d workload x target rows", len(runs), len(ours))

    return run


def cmd_study(p):
    """a study's published numbers beside ours, and its claims checked on our runs"""
    p.add_argument("--study", required=True, help="a study's name (embryo-bench studies)")
    p.add_argument("--numbers", required=True, help="the study's numbers file (CSV)")
    p.add_argument("--ours", required=True, help="study/ours.csv (embryo-bench study-ours)")
    p.add_argument(
        "--runs", required=True, help="study/runs.csv (cost bases, rounds for the claims)"
    )
    p.add_argument("--out-dir", required=True, help="study/: numbers, claims, study.png")

    def run(a):
        from ..published.studies import load_numbers, studies
        from ..reporting.study import read_ours, read_runs, write_study

        known = studies()
        if a.study not in known:
            raise ConfigError(f"--study {a.study!r}: expected one of {sorted(known)}")
        study = known[a.study]
        runs = read_runs(a.runs)
        cost_base = dict(zip(runs["workload"], runs["cost_base"], strict=True))
        published = load_numbers(study, a.numbers)
        write_study(study, published, read_ours(a.ours), runs, a.out_dir, cost_base)

    return run


def cmd_workload_view(p):
    """time and cost relative to the base target, per workload and target"""
    p.add_argument("--runs", required=True, help="study/runs.csv (embryo-bench study-ours)")
    p.add_argument("--out", required=True, help="the view's path without extension")

    def run(a):
        from ..reporting.study import read_runs
        from ..reporting.workload_view import write_workload_view

        try:
            write_workload_view(read_runs(a.runs), a.out)
        except ValueError as exc:
            raise DataError(f"{a.runs}: {exc}") from None

    return run


def cmd_round_check(p):
    """measure every target's ratio interval after a round (compare.until: the workflow
    adds rounds until they are narrow enough)"""
    p.add_argument(
        "--check",
        required=True,
        help="JSON: round, min_difference, and per workload its base target and its runs "
        "of rounds 1..round",
    )
    p.add_argument("--out", required=True, help="the round check (rounds/round-<k>.json)")

    def run(a):
        from ..io import parse_json
        from ..reporting.rounds import check_round, write_check

        c = parse_json(a.check, "--check")
        write_check(check_round(c["round"], c["workloads"], c["min_difference"]), a.out)

    return run


def cmd_compare(p):
    """compare result folders (outdirs, from any machines or days) target by target: the
    first folder is the reference point; exit status 1 when a slowdown is measured relative
    to a control target or against a reference"""
    p.description = (
        "Each other folder's targets (per workload: train/<target>/repeat-k, "
        "workloads/<name>/train/<target>/repeat-k) against the first folder's: the ratio of "
        "the geometric means of images/s with Welch's t interval on the logarithms, "
        "unpaired (runs in different folders share no rounds), all rows' intervals holding "
        "together at 95 % (Bonferroni), and a verdict from the interval "
        "(at least 3 runs a side; --min-difference the band of 'the same within' and 'at "
        "least', on the log scale). A target whose runs in one folder ran on several machines is "
        "split, <target>@<machine>, never pooled; each folder's own rounds are shown paired "
        "against its compare.base. Markdown on stdout. Two folders are two sessions, and a "
        "session's own speed (the day's CPU, the host's load) is in these plain ratios, so "
        "they are shown and never a regression: the regression checks are --control and "
        "--reference. Exit status: 1 when a slowdown is measured (another folder's target "
        "against the first's relative to --control, or any folder against --reference), 2 "
        "for bad input, else 0 (without --control or --reference nothing is checked, and "
        "stderr says so)."
    )
    p.add_argument(
        "folders", nargs="+", help="result folders (outdirs); the first is the reference"
    )
    p.add_argument(
        "--min-difference",
        type=float,
        help="the machine's noise, a fraction (log scale): an interval wholly inside it is "
        "'the same within', wholly beyond it 'at least' that much faster or slower "
        "(default: compare.min_difference's default in config/schema.yaml)",
    )
    p.add_argument(
        "--reference",
        help="YAML of expected images/s per target, each with a tolerance (a fraction, log "
        "scale like --min-difference; default: --min-difference): 'tolerance: 0.1', "
        "'targets: {host-1cpu@<machine>: {images_per_s: 52}}', 'workloads: {mnist-mlp: "
        "{host-1cpu@<machine>: {images_per_s: 900, tolerance: 0.05}}}' (an entry is bound to "
        "the machine it names; plain target names only with 'machines: any'); an interval "
        "wholly below 1 / (1 + tolerance) is a regression",
    )
    p.add_argument(
        "--control",
        default="",
        help="a target every folder ran in each workload compared (an unchanged machine): "
        "each other folder's targets are also compared with the first's relative to it, "
        "round by round, so that a speed shared by all of one session's runs (the day's "
        "CPU, the host's load) divides out; those rows are a regression check "
        "(default: none)",
    )
    p.add_argument(
        "--write-reference",
        help="write a reference file here (YAML, for --reference) from the folders, two or "
        "more sessions' runs of the same targets: each target's expected images/s on the "
        "machine it ran on (<target>@<machine>) and, as its tolerance, the 95 %% prediction "
        "interval of one more session from the sessions' spread (at least --min-difference)",
    )
    p.add_argument("--csv", help="write every row, every column, as CSV here")
    p.add_argument("--markdown", help="write the Markdown here too")

    def run(a):
        from ..io import atomic_path
        from ..reporting import crossfolder, reference_file
        from ..vocabulary.config import apply_defaults, load_schema

        # compare.min_difference's default and range, written once: in the schema.
        given = {} if a.min_difference is None else {"min_difference": a.min_difference}
        schema = load_schema()["properties"]["compare"]
        min_difference = apply_defaults(given, schema, [("--min-difference", given)])[
            "min_difference"
        ]
        if len(a.folders) < 2 and not a.reference:
            raise ConfigError("compare: give two or more result folders, or one and --reference")
        # Checked before the comparison runs, which may take a while: a path that cannot be
        # written failed only after it, with a traceback.
        outputs: dict[Path, str] = {}
        reference = Path(a.reference).resolve() if a.reference else None
        # What compare reads is never written: --markdown onto the reference file, or --csv
        # onto a run's metrics.json, replaced it with the comparison.
        runs = {Path(f).resolve() / part: f for f in a.folders for part in ("train", "workloads")}
        for option, path in (
            ("--csv", a.csv),
            ("--markdown", a.markdown),
            ("--write-reference", a.write_reference),
        ):
            if not path:
                continue
            where = Path(path).resolve()
            if where == reference:
                raise ConfigError(
                    f"{option} {path}: the --reference file; expected a file of its own"
                )
            inside = next(((r, f) for r, f in runs.items() if where.is_relative_to(r)), None)
            if inside:
                raise ConfigError(
                    f"{option} {path}: inside {inside[1]}'s runs ({inside[0].name}/); expected a "
                    "file outside the result folders' train/ and workloads/"
                )
            if where.is_dir():
                raise ConfigError(f"{option} {path}: is a folder; expected a file to write")
            if not where.parent.is_dir():
                raise ConfigError(f"{option} {path}: its folder does not exist")
            if not os.access(where.parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{option} {path}: its folder is not writable")
            if where in outputs:
                raise ConfigError(f"{option} {path}: the same file as {outputs[where]}")
            outputs[where] = option
        reference = (
            reference_file.read_reference(a.reference, min_difference) if a.reference else None
        )
        result = crossfolder.compare_folders(
            a.folders, min_difference, reference, a.reference or "", a.control
        )
        for note in result.notes:
            log.info("%s", note)
        if a.write_reference:
            data, notes = reference_file.reference_from(result.parts, a.folders, min_difference)
            for note in notes:
                log.info("--write-reference: %s", note)
            with atomic_path(a.write_reference) as tmp:
                tmp.write_text(
                    reference_file.reference_text(data, a.folders, time.strftime("%Y-%m-%d"))
                )
        text = crossfolder.markdown(result)
        if a.csv:
            with atomic_path(a.csv) as tmp:
                result.table.to_csv(tmp, index=False)
        if a.markdown:
            with atomic_path(a.markdown) as tmp:
                tmp.write_text(text)
        print(text, end="")
        lines = crossfolder.regression_lines(result)
        if not result.checked:
            # Beside the "slower:" lines a nightly job reads: its exit status 0 says nothing.
            print(f"embryo-bench: {crossfolder.NOT_CHECKED}", file=sys.stderr)
        for line in lines:
            print(f"embryo-bench: slower: {line}", file=sys.stderr)
        if lines:
            # A nightly job or a CI stops on it (main returns 0 for a command that returns).
            raise SystemExit(1)

    return run

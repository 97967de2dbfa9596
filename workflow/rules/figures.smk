# Stage 8: figures (analogues of the paper's figures 1, 4, 5/6 and the report's own),
# tables, and one utilisation figure per run; all collected by `snakemake --report`.
#
# A failing figures job never costs the last complete figures: what it
# reads that no job writes is checked when the plan is made (Plan.check_figures_inputs);
# the job writes into a staging folder, moves the set into figures/ only when it is complete
# and keeps it in figures.previous (hard links). Snakemake removes a job's outputs before it
# runs it and after it fails, and records them as made by the failed job: a set put back
# into figures/ would pass for the new one, so onerror below says where the kept set is,
# and figures/ holds only a set made from the current inputs.
from embryo_bench.io import keep_complete, kept_missing, kept_path


rule figures_spec:
    input:
        # compare.until: the round checks that decide which runs the figures read.
        rounds=round_checks,
    output:
        f"{OUT}/{layout.FIGURES_SPEC}",
    log:
        f"{LOGS}/figures-spec.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        # Prices, paper systems, sweep points, bases, thresholds: a price edit reruns this
        # rule and the figures, nothing else.
        spec=lambda wc: PLAN.figures_spec(rounds=decided_rounds()[0]).to_dict(),
        code=code_hash("embryo_bench.vocabulary.figspec"),
    script:
        "../scripts/figures_spec.py"


rule figures:
    input:
        figures_spec=rules.figures_spec.output[0],
        specs=lambda wc: [f"{d}/{layout.RUN_SPEC}" for d in decided_run_dirs()],
        runs=lambda wc: [f"{d}/{layout.METRICS}" for d in decided_run_dirs()],
        histories=lambda wc: [f"{d}/{layout.HISTORY}" for d in decided_run_dirs()],
        telemetry=lambda wc: [f"{d}/{layout.TELEMETRY}" for d in decided_run_dirs()],
        windows=lambda wc: [f"{d}/{layout.WINDOWS}" for d in decided_run_dirs()],
        # Runs made elsewhere (merge:): read, never written.
        merged=[
            f"{d}/{f}"
            for d in MERGED_RUN_DIRS
            for f in (layout.METRICS, layout.HISTORY, layout.RUN_SPEC)
        ],
        selection=rules.select.output.selection,
        counts=rules.select.output.summary,
        source=rules.index.output.source,
        shard=expand(rules.augment.output[0], shard=SHARDS[0]),
        # The machine's probe baseline (embryo-bench calibrate), when the config names one.
        baseline=CONFIG["stability"]["baseline"] or [],
        rounds=round_checks,
    output:
        **{
            f"{n}_{ext}": (
                report(
                    f"{OUT}/figures/{n}.{ext}",
                    caption=f"../report/{n}.rst",
                    category=layout.REPORT_ENTRIES[n][0],
                    labels={"figure": layout.REPORT_ENTRIES[n][1]},
                )
                if ext == "png"
                else f"{OUT}/figures/{n}.{ext}"
            )
            for n in layout.FIGURE_NAMES
            for ext in layout.FIGURE_FORMATS
        },
        **{
            f"{n}_{ext}": (
                report(
                    f"{OUT}/figures/{n}.{ext}",
                    caption=f"../report/{n}.rst",
                    category=layout.REPORT_ENTRIES[n][0],
                    labels={"table": layout.REPORT_ENTRIES[n][1]},
                )
                if ext == "csv"
                else f"{OUT}/figures/{n}.{ext}"
            )
            for n in layout.TABLE_NAMES
            for ext in layout.TABLE_FORMATS
        },
        # The configuration the runs used (every default filled in), for the report: written
        # by this job, after the figures, so it always describes the runs the tables show (a
        # rule of its own wrote the new settings while a failed rerun left the old tables).
        config=report(
            f"{OUT}/figures/config.yaml",
            caption="../report/config.rst",
            category=layout.CONFIGURATION,
            labels={"file": "the effective configuration (every default filled in)"},
        ),
        utilisation=[
            report(
                f,
                caption="../report/utilisation.rst",
                category=layout.UTILISATION,
                subcategory=target,
                labels={"target": target, "repeat": repeat},
            )
            for f in UTILISATION
            for target, repeat in [
                os.path.basename(f)[: -len(".png")].rsplit("-repeat-", 1)
            ]
        ],
    log:
        f"{LOGS}/figures.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        out_dir=lambda wc, output: os.path.dirname(output.results_table_csv),
        rounds_note=lambda wc: rounds_note(),
        code=code("figures"),
    shell:
        "python3 -m embryo_bench.cli figures --spec {input.figures_spec:q} "
        "--selection {input.selection:q} --select-summary {input.counts:q} "
        "--source-info {input.source:q} --shard {input.shard:q} {params.rounds_note:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"


# The handlers run only in the process that runs the workflow: not in dry runs, --report or
# --lint, not in jobs that a cluster runs (Snakemake gives them --no-hooks).
onstart:
    # A complete set made before sets were kept (or after figures.previous was removed).
    keep_complete(f"{OUT}/figures", FIGURES)


onerror:
    # A failed figures job: its outputs were removed, the kept set is where it was.
    _missing = kept_missing(f"{OUT}/figures")
    if _missing:
        logger.error(
            f"figures: {len(_missing)} files of the last complete figures are missing from "
            f"{OUT}/figures; that set is kept in {kept_path(f'{OUT}/figures')}, and the next "
            "run makes the figures again"
        )

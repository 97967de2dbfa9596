# Stage 8: figures (analogues of the paper's figures 1, 4, 5/6 and the report's own),
# tables, and one utilisation figure per run; all collected by `snakemake --report`.


rule figures_spec:
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
        spec=PLAN.figures_spec().to_dict(),
        code=code_hash("embryo_bench.figspec"),
    script:
        "../scripts/figures_spec.py"


rule figures:
    input:
        figures_spec=rules.figures_spec.output[0],
        specs=[f"{d}/{layout.RUN_SPEC}" for d in RUN_DIRS],
        runs=[f"{d}/{layout.METRICS}" for d in RUN_DIRS],
        histories=[f"{d}/{layout.HISTORY}" for d in RUN_DIRS],
        telemetry=[f"{d}/{layout.TELEMETRY}" for d in RUN_DIRS],
        windows=[f"{d}/{layout.WINDOWS}" for d in RUN_DIRS],
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
        code=code("figures"),
    shell:
        "python3 -m embryo_bench.cli figures --spec {input.figures_spec:q} "
        "--selection {input.selection:q} --select-summary {input.counts:q} "
        "--source-info {input.source:q} --shard {input.shard:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"

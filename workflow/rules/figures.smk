# Stage 8: figures (analogues of the paper's figures 1, 4, 5/6 and the report's own),
# tables, and one utilisation figure per run; all collected by `snakemake --report`.


rule figures:
    input:
        runs=[f"{d}/metrics.json" for d in run_dirs()],
        histories=[f"{d}/history.csv" for d in run_dirs()],
        telemetry=[f"{d}/telemetry.csv" for d in run_dirs()],
        selection=rules.select.output.selection,
        source=rules.index.output.source,
    output:
        **{
            f"{n}_{ext}": (
                report(
                    f"{OUT}/figures/{n}.{ext}",
                    caption=f"../report/{n}.rst",
                    category="Figures",
                )
                if ext == "png"
                else f"{OUT}/figures/{n}.{ext}"
            )
            for n in FIGURE_NAMES
            for ext in ("png", "pdf")
        },
        **{
            f"{n}_{ext}": (
                report(
                    f"{OUT}/figures/{n}.{ext}",
                    caption=f"../report/{n}.rst",
                    category="Tables",
                )
                if ext == "csv"
                else f"{OUT}/figures/{n}.{ext}"
            )
            for n in TABLE_NAMES
            for ext in ("csv", "md")
        },
        utilisation=[
            report(
                f,
                caption="../report/utilisation.rst",
                category="Utilisation",
                subcategory=os.path.basename(f).rsplit("-repeat-", 1)[0],
            )
            for f in utilisation_figures()
        ],
    log:
        f"{LOGS}/figures.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        run_dirs=lambda wc, input: [os.path.dirname(m) for m in input.runs],
        targets=json.dumps(list(TARGETS.values())),
        cost_base=COST_BASE,
        cost_note=COST_NOTE,
        preprocessing=preprocessing_json(),
        out_dir=lambda wc, output: os.path.dirname(output.results_table_csv),
        code=code_hash("figures", "summary", "preprocess", "stages", "paper", "io"),
    shell:
        "python3 -m embryo_bench.cli figures --runs {params.run_dirs:q} "
        "--targets {params.targets:q} --cost-base={params.cost_base:q} "
        "--cost-note={params.cost_note:q} "
        "--selection {input.selection:q} --source-info {input.source:q} "
        "--preprocessing {params.preprocessing:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# The configuration the run used (after defaults), for the report.
rule effective_config:
    output:
        report(
            f"{OUT}/figures/config.yaml",
            caption="../report/config.rst",
            category="Configuration",
        ),
    log:
        f"{LOGS}/effective_config.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        config=shlex.quote(json.dumps(config, sort_keys=True)),
        code=code_hash("io"),
    shell:
        "python3 -m embryo_bench.cli config-record --json {params.config} "
        "--out {output:q} > {log:q} 2>&1"

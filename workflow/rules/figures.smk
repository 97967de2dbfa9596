# Stage 8: figures (analogues of the paper's figures 1, 4, 5/6), throughput, results table.


rule figures:
    input:
        runs=expand(f"{OUT}/train/{{target}}/metrics.json", target=TARGETS),
        histories=expand(f"{OUT}/train/{{target}}/history.csv", target=TARGETS),
        selection=rules.select.output.selection,
        source=rules.index.output.source,
    output:
        **{
            f"{n}_{ext}": report(
                f"{OUT}/figures/{n}.{ext}",
                caption=f"../report/{n}.rst",
                category="Figures",
            )
            for n in FIGURE_NAMES
            for ext in ("png", "pdf")
        },
        table_csv=report(
            f"{OUT}/figures/results_table.csv",
            caption="../report/results_table.rst",
            category="Tables",
        ),
        table_md=f"{OUT}/figures/results_table.md",
    log:
        f"{LOGS}/figures.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        run_dirs=lambda wc, input: [os.path.dirname(m) for m in input.runs],
        targets=json.dumps(list(TARGETS.values())),
        preprocessing=preprocessing_json(),
        out_dir=lambda wc, output: os.path.dirname(output.table_csv),
        code=code_hash("figures", "preprocess", "stages", "paper", "io"),
    shell:
        "python3 -m embryo_bench.cli figures --runs {params.run_dirs:q} --targets {params.targets:q} "
        "--selection {input.selection:q} --source-info {input.source:q} "
        "--preprocessing {params.preprocessing:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"

# Stage 3: frames with 1-4 cells, balanced to the rarest class, split by embryo, sharded.


rule select:
    input:
        rules.index.output.manifest,
    output:
        selection=f"{OUT}/select/selected.csv",
        summary=f"{OUT}/select/summary.json",
    log:
        f"{LOGS}/select.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        seed=CONFIG["select"]["seed"],
        shards=len(SHARDS),
        code=code("select"),
    shell:
        "python3 -m embryo_bench.cli select --manifest {input:q} --seed {params.seed:q} "
        "--shards {params.shards:q} --out {output.selection:q} --summary {output.summary:q} "
        "> {log:q} 2>&1"

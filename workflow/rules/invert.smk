# Stage 5: histogram equalisation, then shadow inversion p -> |p - 128|, per shard.


rule invert:
    input:
        rules.crop.output,
    output:
        f"{OUT}/invert/shard-{{shard}}.npz",
    log:
        f"{LOGS}/invert/shard-{{shard}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        centre=PP["invert_centre"],
        code=code("invert"),
    shell:
        "python3 -m embryo_bench.cli invert --input {input:q} --centre {params.centre:q} --out {output:q} "
        "> {log:q} 2>&1"

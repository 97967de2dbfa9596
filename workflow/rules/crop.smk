# Stage 4: centre crop (480 -> 320 px; the same 2/3 fraction for other frame sizes), per shard.


rule crop:
    input:
        rules.select.output.selection,
    output:
        f"{OUT}/crop/shard-{{shard}}.npz",
    log:
        f"{LOGS}/crop/shard-{{shard}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        frame_size=DATASET["frame_size"],
        fraction=PP["crop_fraction"],
        code=code("crop"),
    shell:
        "python3 -m embryo_bench.cli crop --selection {input:q} --shard {wildcards.shard:q} "
        "--frame-size {params.frame_size:q} --fraction {params.fraction:q} --out {output:q} "
        "> {log:q} 2>&1"

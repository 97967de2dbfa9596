# Stage 6: rotations in 18 degree steps (20 per frame), then downsizing to 64x64, per shard.


rule augment:
    input:
        rules.invert.output,
    output:
        f"{OUT}/augment/shard-{{shard}}.npz",
    log:
        f"{LOGS}/augment/shard-{{shard}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        rotation_step=PP["rotation_step"],
        image_size=PP["image_size"],
        code=code("augment"),
    shell:
        "python3 -m embryo_bench.cli augment --input {input:q} --rotation-step {params.rotation_step:q} "
        "--image-size {params.image_size:q} --out {output:q} > {log:q} 2>&1"

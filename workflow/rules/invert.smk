# Stage 5: histogram equalisation, then shadow inversion p -> |p - 128|, per shard.


rule invert:
    input:
        rules.crop.output,
    output:
        f"{OUT}/invert/shard-{{shard}}.npz",
    params:
        centre=PP["invert_centre"],
        code=code_hash("preprocess", "stages", "io"),
    wildcard_constraints:
        shard=r"\d+",
    log:
        f"{LOGS}/invert/shard-{{shard}}.log",
    shell:
        "embryo-bench invert --input {input:q} --centre {params.centre} --out {output:q} "
        "> {log:q} 2>&1"

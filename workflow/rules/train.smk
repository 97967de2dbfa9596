# Stage 7: train the paper CNN on each hardware target. Runs never overlap (bench_slot), so
# one run's timings are not corrupted by another.


rule train:
    input:
        shards=expand(rules.augment.output[0], shard=SHARDS),
        source=rules.index.output.source,
    output:
        **{f.split(".")[0]: f"{OUT}/train/{{target}}/{f}" for f in RUN_FILES},
    log:
        f"{LOGS}/train/{{target}}.log",
    wildcard_constraints:
        target="|".join(TARGETS),
    conda:
        "../../envs/embryo-bench.yaml"
    threads: lambda wc: TARGETS[wc.target]["cpus"]
    resources:
        bench_slot=1,
    params:
        out_dir=lambda wc, output: os.path.dirname(output.metrics),
        cpus=lambda wc: TARGETS[wc.target]["cpus"],
        epochs=TRAIN["epochs"],
        batch_size=TRAIN["batch_size"],
        learning_rate=TRAIN["learning_rate"],
        dropout=TRAIN["dropout"],
        seed=TRAIN["seed"],
        accuracy_target=TRAIN["accuracy_target"],
        preprocessing=preprocessing_json(),
        code=code_hash("train", "model", "backend", "stages", "provenance", "io"),
    shell:
        "python3 -m embryo_bench.cli train --shards {input.shards:q} --out-dir {params.out_dir:q} "
        "--target {wildcards.target} --threads {params.cpus} --epochs {params.epochs} "
        "--batch-size {params.batch_size} --learning-rate {params.learning_rate} "
        "--dropout {params.dropout} --seed {params.seed} "
        "--accuracy-target {params.accuracy_target} --preprocessing {params.preprocessing:q} "
        "--source-info {input.source:q} > {log:q} 2>&1"

# Stage 7: train the paper CNN on each hardware target, on the host (train) or in a container
# (train_docker). Runs never overlap (bench_slot), so one run's timings are not corrupted by
# another. `exec` makes the trainer Snakemake's direct child, so signals reach it.


rule train:
    input:
        shards=expand(rules.augment.output[0], shard=SHARDS),
        source=rules.index.output.source,
    output:
        **{
            f.split(".")[0]: f"{OUT}/train/{{target}}/repeat-{{repeat}}/{f}"
            for f in RUN_FILES
        },
    log:
        f"{LOGS}/train/{{target}}/repeat-{{repeat}}.log",
    wildcard_constraints:
        target=names_regex(HOST_TARGETS),
        repeat=r"\d+",
    conda:
        "../../envs/embryo-bench.yaml"
    threads: lambda wc: TARGETS[wc.target]["cpus"]
    resources:
        bench_slot=1,
        cpus_per_task=lambda wc: TARGETS[wc.target]["cpus"],
        mem_mb=lambda wc: target_memory_mib(TARGETS[wc.target]),
        runtime=lambda wc: TARGETS[wc.target].get("runtime_min", 120),
        gpu=lambda wc: TARGETS[wc.target].get("gpus", 0),
        gpu_model=lambda wc: TARGETS[wc.target].get("gpu_model", ""),
    params:
        out_dir=lambda wc, output: os.path.dirname(output.metrics),
        args=training_args,
        code=code_hash(
            "train", "model", "backend", "stages", "provenance", "io", "telemetry"
        ),
    shell:
        "exec python3 -m embryo_bench.cli train --shards {input.shards:q} "
        "--out-dir {params.out_dir:q} --source-info {input.source:q} {params.args} "
        "> {log:q} 2>&1"


rule train_docker:
    input:
        shards=expand(rules.augment.output[0], shard=SHARDS),
        source=rules.index.output.source,
        image=lambda wc: f"{OUT}/images/{TARGETS[wc.target].get('image', 'cpu')}.json",
    output:
        **{
            f.split(".")[0]: f"{OUT}/train/{{target}}/repeat-{{repeat}}/{f}"
            for f in RUN_FILES
        },
    log:
        f"{LOGS}/train/{{target}}/repeat-{{repeat}}.log",
    wildcard_constraints:
        target=names_regex(DOCKER_TARGETS),
        repeat=r"\d+",
    conda:
        "../../envs/embryo-bench.yaml"
    threads: lambda wc: TARGETS[wc.target]["cpus"]
    resources:
        bench_slot=1,
        cpus_per_task=lambda wc: TARGETS[wc.target]["cpus"],
        mem_mb=lambda wc: target_memory_mib(TARGETS[wc.target]),
        runtime=lambda wc: TARGETS[wc.target].get("runtime_min", 120),
        gpu=lambda wc: TARGETS[wc.target].get("gpus", 0),
        gpu_model=lambda wc: TARGETS[wc.target].get("gpu_model", ""),
    params:
        out_dir=lambda wc, output: os.path.dirname(output.metrics),
        args=training_args,
        target=lambda wc: shlex.quote(json.dumps(TARGETS[wc.target], sort_keys=True)),
        code=code_hash(
            "train",
            "model",
            "backend",
            "stages",
            "provenance",
            "io",
            "docker_runner",
            "containers",
            "telemetry",
        ),
    shell:
        "exec python3 -m embryo_bench.cli train --runner docker --target-json {params.target} "
        "--image-record {input.image:q} --shards {input.shards:q} "
        "--out-dir {params.out_dir:q} --source-info {input.source:q} {params.args} "
        "> {log:q} 2>&1"

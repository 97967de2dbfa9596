# Stage 7: train, once per run (workload x target x repeat), every workload alike: the
# paper's CNN on its augmented shards, another workload's model on its arrays. A run's
# settings are resolved by embryo_bench.planning.plan and written as run.json (rule
# run_spec); one train rule trains from it, on the host or in a container as its runner says.
# A run's folder is {wdir}train/{target}/repeat-{repeat}, {wdir} its workload's folder (""
# for the paper's, at the top of the outdir; workloads/<name>/ for another:
# layout.workload_dir). What a run reads besides its spec is chosen by its workload's input
# kind (TRAINING_INPUTS). A run takes every bench slot (the profiles give 100; every other
# rule takes 1), so nothing runs beside a timed run. `exec` makes the trainer Snakemake's
# direct child, so signals reach it. Runs go in rounds (interleaved, so a drift of the
# machine's speed lands on every target and workload alike): each waits for the run planned
# just before it (PLAN.planned_runs), so the order is the planned one whatever the
# scheduler prefers; that input is ancient(), so rerunning one run does not rerun the runs
# after it.
from embryo_bench.planning.workloads import model_code


rule run_spec:
    output:
        f"{OUT}/{layout.run_path('{wdir}', '{target}', '{repeat}')}/{layout.RUN_SPEC}",
    log:
        f"{LOGS}/{layout.run_path('{wdir}', '{target}', '{repeat}')}.spec.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        spec=lambda wc: PLAN.spec(
            wc.target, int(wc.repeat), workload(wc).name
        ).to_json(),
        code=code("spec"),
    shell:
        "python3 -m embryo_bench.cli spec --json {params.spec:q} --out {output:q} > {log:q} 2>&1"


rule train:
    input:
        unpack(training_inputs),
        spec=rules.run_spec.output[0],
        image=lambda wc: PLAN.image_record(wc.target),  # docker runs: the image record
        # A docker_host's daemon record (TLS files): a moved certificate retrains nothing.
        daemon=lambda wc: [ancient(f) for f in PLAN.daemon_record(wc.target)],
        after=previous_run,
    output:
        **{
            f.split(".")[
                0
            ]: f"{OUT}/{layout.run_path('{wdir}', '{target}', '{repeat}')}/{f}"
            for f in layout.RUN_FILES
        },
    log:
        f"{LOGS}/{layout.run_path('{wdir}', '{target}', '{repeat}')}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    threads: lambda wc: target(wc).cpus
    resources:
        bench_slot=BENCH_SLOTS,
        cpus_per_task=lambda wc: target(wc).cpus,
        mem_mb=lambda wc: target(wc).memory_mib,
        runtime=lambda wc: target(wc).runtime_min,
        gpu=lambda wc: target(wc).gpus,
        gpu_model=lambda wc: target(wc).gpu_model,
    params:
        out_dir=lambda wc, output: os.path.dirname(output.metrics),
        # Option lists ([] when not needed), each word quoted by :q.
        data=training_options,
        image=lambda wc, input: (
            ["--image-record", input.image[0]] if input.image else []
        ),
        daemon=lambda wc, input: ["--daemon", input.daemon[0]] if input.daemon else [],
        code=code("train"),
        # The model's builder is imported by name: its own code, hashed here.
        model_code=lambda wc: model_code(workload(wc).model),
    shell:
        "exec python3 -m embryo_bench.cli train --spec {input.spec:q} {params.data:q} "
        "--source-info {input.info:q} {params.image:q} {params.daemon:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"

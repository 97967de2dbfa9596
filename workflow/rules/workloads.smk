# Workloads other than the paper's: each trains on arrays of its dataset (real:
# downloaded or read from an offline copy; or synthetic), from memory or from image files, on
# every main target, in the same rounds as the paper's runs; its runs, figures and tables go
# under workloads/<name>/ in the paper's layout. Settings are resolved by
# embryo_bench.planning.workloads; a change to one workload's settings reruns its data, runs
# and figures only.
import dataclasses

from embryo_bench.planning.workloads import model_code


rule dataset_file:
    output:
        f"{OUT}/data/datasets/{{dataset}}/{{file}}",
    log:
        f"{LOGS}/datasets/{{dataset}}/{{file}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        # Its URL, sha256 and size in the registry: an edit there fetches it again.
        entry=lambda wc: dataclasses.asdict(PLAN.dataset_file(wc.dataset, wc.file)),
        retries=DATASET["retries"],
        code=code("dataset-file"),
    shell:
        "python3 -m embryo_bench.cli dataset-file --dataset {wildcards.dataset:q} "
        "--file {wildcards.file:q} --out {output:q} --retries {params.retries:q} "
        "> {log:q} 2>&1"


rule workload_data:
    input:
        files=lambda wc: PLAN.dataset_files(wc.workload),
    output:
        arrays=f"{OUT}/workloads/{{workload}}/{layout.WORKLOAD_ARRAYS}",
        info=f"{OUT}/workloads/{{workload}}/{layout.WORKLOAD_DATA_INFO}",
    log:
        f"{LOGS}/workloads/{{workload}}/data.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        data=lambda wc: json.dumps(PLAN.data_params(wc.workload), sort_keys=True),
        code=code("workload-data"),
    shell:
        "python3 -m embryo_bench.cli workload-data --workload {wildcards.workload:q} "
        "--data {params.data:q} "
        "--files {input.files:q} --out {output.arrays:q} --info {output.info:q} > {log:q} 2>&1"


rule workload_files:
    input:
        arrays=rules.workload_data.output.arrays,
    output:
        directory(f"{OUT}/workloads/{{workload}}/{layout.WORKLOAD_FILES}"),
    log:
        f"{LOGS}/workloads/{{workload}}/files.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        code=code("workload-files"),
    shell:
        "python3 -m embryo_bench.cli workload-files --arrays {input.arrays:q} "
        "--out {output:q} > {log:q} 2>&1"


rule workload_run_spec:
    output:
        f"{OUT}/workloads/{{workload}}/train/{{target}}/repeat-{{repeat}}/{layout.RUN_SPEC}",
    log:
        f"{LOGS}/workloads/{{workload}}/train/{{target}}/repeat-{{repeat}}.spec.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        spec=lambda wc: PLAN.spec(wc.target, int(wc.repeat), wc.workload).to_json(),
        code=code("spec"),
    shell:
        "python3 -m embryo_bench.cli spec --json {params.spec:q} --out {output:q} > {log:q} 2>&1"


rule workload_train:
    input:
        spec=rules.workload_run_spec.output[0],
        arrays=rules.workload_data.output.arrays,
        info=rules.workload_data.output.info,
        files=lambda wc: (
            [rules.workload_files.output[0].format(workload=wc.workload)]
            if PLAN.workloads[wc.workload].spec.input_mode == "files"
            else []
        ),
        image=lambda wc: PLAN.image_record(wc.target),
        daemon=lambda wc: [ancient(f) for f in PLAN.daemon_record(wc.target)],
        after=previous_run,
    output:
        **{
            f.split(".")[
                0
            ]: f"{OUT}/workloads/{{workload}}/train/{{target}}/repeat-{{repeat}}/{f}"
            for f in layout.RUN_FILES
        },
    log:
        f"{LOGS}/workloads/{{workload}}/train/{{target}}/repeat-{{repeat}}.log",
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
        files=lambda wc, input: ["--files", input.files[0]] if input.files else [],
        image=lambda wc, input: (
            ["--image-record", input.image[0]] if input.image else []
        ),
        daemon=lambda wc, input: ["--daemon", input.daemon[0]] if input.daemon else [],
        code=code("train"),
        # The model's builder is imported by name: its own code, hashed here.
        model_code=lambda wc: model_code(PLAN.workloads[wc.workload].spec.model),
    shell:
        "exec python3 -m embryo_bench.cli train --spec {input.spec:q} "
        "--arrays {input.arrays:q} --source-info {input.info:q} {params.files:q} "
        "{params.image:q} {params.daemon:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule workload_figures_spec:
    input:
        rounds=round_checks,
    output:
        f"{OUT}/workloads/{{workload}}/{layout.FIGURES_SPEC}",
    log:
        f"{LOGS}/workloads/{{workload}}/figures-spec.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        spec=lambda wc: PLAN.figures_spec(wc.workload, decided_rounds()[0]).to_dict(),
        code=code_hash("embryo_bench.vocabulary.figspec"),
    script:
        "../scripts/figures_spec.py"


rule workload_figures:
    input:
        figures_spec=rules.workload_figures_spec.output[0],
        specs=lambda wc: [
            f"{d}/{layout.RUN_SPEC}" for d in decided_run_dirs(wc.workload)
        ],
        runs=lambda wc: [f"{d}/{layout.METRICS}" for d in decided_run_dirs(wc.workload)],
        histories=lambda wc: [
            f"{d}/{layout.HISTORY}" for d in decided_run_dirs(wc.workload)
        ],
        telemetry=lambda wc: [
            f"{d}/{layout.TELEMETRY}" for d in decided_run_dirs(wc.workload)
        ],
        windows=lambda wc: [
            f"{d}/{layout.WINDOWS}" for d in decided_run_dirs(wc.workload)
        ],
        info=rules.workload_data.output.info,
        baseline=CONFIG["stability"]["baseline"] or [],
        rounds=round_checks,
    output:
        **{
            f"{n}_{ext}": f"{OUT}/workloads/{{workload}}/figures/{n}.{ext}"
            for n in layout.FIGURE_NAMES
            for ext in layout.FIGURE_FORMATS
        },
        **{
            f"{n}_{ext}": f"{OUT}/workloads/{{workload}}/figures/{n}.{ext}"
            for n in layout.TABLE_NAMES
            for ext in layout.TABLE_FORMATS
        },
        config=f"{OUT}/workloads/{{workload}}/figures/config.yaml",
    log:
        f"{LOGS}/workloads/{{workload}}/figures.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        out_dir=lambda wc, output: os.path.dirname(output.results_table_csv),
        rounds_note=lambda wc: rounds_note(wc.workload),
        code=code("figures"),
    shell:
        "python3 -m embryo_bench.cli figures --spec {input.figures_spec:q} "
        "--source-info {input.info:q} {params.rounds_note:q} --out-dir {params.out_dir:q} "
        "> {log:q} 2>&1"

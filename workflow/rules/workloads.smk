# The data of the workloads of input kind arrays (every workload but the paper's): each
# trains on arrays of its dataset (real: downloaded or read from an offline copy; or
# synthetic), from memory or from image files, on every main target, in the same rounds as
# the paper's runs; its data, runs, figures and tables go under workloads/<name>/ in the
# paper's layout (its runs and figures are made by the rules every workload shares:
# train.smk, figures.smk). Settings are resolved by embryo_bench.planning.workloads; a change
# to one workload's settings reruns its data, runs and figures only.
import dataclasses


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

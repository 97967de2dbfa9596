# Stage 1: obtain the frames in the database layout (download + extract, a local archive, or
# the synthetic generator). imagefolder sources and local folders are read where they are.


rule download:
    output:
        archive=PLAN.download_path,
        info=f"{OUT}/{layout.DOWNLOAD_RECORD}",
    log:
        f"{LOGS}/download.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        url=DATASET.get("url", ""),
        sha256=DATASET["sha256"],
        retries=DATASET["retries"],
        timeout=DATASET["timeout_s"],
        code=code("download"),
    shell:
        "python3 -m embryo_bench.cli download --url {params.url:q} --out {output.archive:q} "
        "--info {output.info:q} --sha256={params.sha256:q} --retries {params.retries:q} "
        "--timeout {params.timeout:q} > {log:q} 2>&1"


rule extract:
    input:
        PLAN.archive,
    output:
        directory(PLAN.db_dir),
    log:
        f"{LOGS}/extract.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        code=code("extract"),
    shell:
        "python3 -m embryo_bench.cli extract --archive {input:q} --out {output:q} > {log:q} 2>&1"


# Embryos are written by up to --cores processes at once (a 480 px frame took 33-35 ms of CPU
# on our 2-core VM: about 19 min of CPU at the paper's size); the tree is the same for any
# number of processes, so threads is not a param. Without --cores workflow.cores is 1.
rule synthesize:
    output:
        db=directory(f"{OUT}/{layout.SYNTHETIC_DB}"),
        info=f"{OUT}/{layout.SYNTHETIC_RECORD}",
    log:
        f"{LOGS}/synthesize.log",
    conda:
        "../../envs/embryo-bench.yaml"
    threads: workflow.cores
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        embryos=DATASET["synthetic"]["embryos"],
        frames=DATASET["synthetic"]["frames_per_embryo"],
        seed=DATASET["synthetic"]["seed"],
        frame_size=DATASET["frame_size"],
        variant=PLAN.synthetic_flags(),  # an option list: :q quotes each word
        code=code("synthesize"),
    shell:
        "python3 -m embryo_bench.cli synthesize --out {output.db:q} --info {output.info:q} "
        "--embryos {params.embryos:q} --frames-per-embryo {params.frames:q} "
        "--frame-size {params.frame_size:q} --seed {params.seed:q} {params.variant:q} "
        "--jobs {threads:q} > {log:q} 2>&1"

# Stage 1: obtain the frames in the database layout (download + extract, a local archive, or
# the synthetic generator). imagefolder sources and local folders are read where they are.
DB_DIR = f"{OUT}/data/db"
ARCHIVE = f"{OUT}/data/{os.path.basename(DATASET.get('url', 'db.zip')) or 'db.zip'}"


rule download:
    output:
        archive=ARCHIVE,
        info=f"{OUT}/data/download.json",
    params:
        url=DATASET.get("url", ""),
        sha256=DATASET.get("sha256", ""),
        retries=DATASET["retries"],
        timeout=DATASET["timeout_s"],
        code=code_hash("download", "io"),
    log:
        f"{LOGS}/download.log",
    shell:
        "embryo-bench download --url {params.url:q} --out {output.archive:q} "
        "--info {output.info:q} --sha256 '{params.sha256}' --retries {params.retries} "
        "--timeout {params.timeout} > {log:q} 2>&1"


def archive_input(wildcards):
    if DATASET["kind"] == "mouse-embryo-tracking-db":
        return ARCHIVE
    return DATASET["path"]


rule extract:
    input:
        archive_input,
    output:
        directory(DB_DIR),
    params:
        code=code_hash("download", "sources"),
    log:
        f"{LOGS}/extract.log",
    shell:
        "embryo-bench extract --archive {input:q} --out {output:q} > {log:q} 2>&1"


rule synthesize:
    output:
        db=directory(f"{OUT}/data/synthetic"),
        info=f"{OUT}/data/synthetic.json",
    params:
        embryos=DATASET.get("synthetic", {}).get("embryos", 10),
        frames=DATASET.get("synthetic", {}).get("frames_per_embryo", 40),
        seed=DATASET.get("synthetic", {}).get("seed", 0),
        frame_size=DATASET["frame_size"],
        code=code_hash("synthetic"),
    log:
        f"{LOGS}/synthesize.log",
    shell:
        "embryo-bench synthesize --out {output.db:q} --info {output.info:q} "
        "--embryos {params.embryos} --frames-per-embryo {params.frames} "
        "--frame-size {params.frame_size} --seed {params.seed} > {log:q} 2>&1"

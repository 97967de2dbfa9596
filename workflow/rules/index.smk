# Stage 2: index the frames and their labels into manifest.csv (strict parsing).


def index_sources():
    """(input files, layout, root folder, extra CLI flags) for the configured dataset."""
    kind = DATASET["kind"]
    if kind == "synthetic":
        return {"db": rules.synthesize.output.db}, "db", rules.synthesize.output.db, "--synthetic"
    if kind == "imagefolder":
        return {}, "imagefolder", DATASET["path"], ""
    if kind == "local" and os.path.isdir(DATASET.get("path", "")):
        return {}, "db", DATASET["path"], ""
    if kind == "local":
        return {"db": DB_DIR}, "db", DB_DIR, ""
    flags = f"--download-info {rules.download.output.info}"
    return {"db": DB_DIR, "info": rules.download.output.info}, "db", DB_DIR, flags


INDEX_INPUT, INDEX_LAYOUT, INDEX_ROOT, INDEX_FLAGS = index_sources()


rule index:
    input:
        **INDEX_INPUT,
    output:
        manifest=f"{OUT}/manifest/manifest.csv",
        source=f"{OUT}/manifest/source.json",
    params:
        layout=INDEX_LAYOUT,
        root=INDEX_ROOT,
        frame_size=DATASET["frame_size"],
        test_mod=config["split"]["test_mod"],
        test_remainder=config["split"]["test_remainder"],
        dataset=DATASET["kind"],
        label=dataset_label(),
        flags=INDEX_FLAGS,
        code=code_hash("sources", "download", "io"),
    log:
        f"{LOGS}/index.log",
    shell:
        "embryo-bench index --layout {params.layout} --root {params.root:q} "
        "--frame-size {params.frame_size} --test-mod {params.test_mod} "
        "--test-remainder {params.test_remainder} --dataset {params.dataset} "
        "--label {params.label:q} {params.flags} --out {output.manifest:q} "
        "--source-info {output.source:q} > {log:q} 2>&1"

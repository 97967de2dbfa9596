# Stage 2: index the frames and their labels into manifest.csv (strict parsing).


rule index:
    input:
        **index_input(),
    output:
        manifest=f"{OUT}/manifest/manifest.csv",
        source=f"{OUT}/manifest/source.json",
    log:
        f"{LOGS}/index.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        layout=INDEX_LAYOUT,
        root=index_root,
        frame_size=DATASET["frame_size"],
        test_mod=config["split"]["test_mod"],
        test_remainder=config["split"]["test_remainder"],
        dataset=DATASET["kind"],
        label=dataset_label(),
        flags=index_flags,
        source_stamp=source_stamp(),
        code=code_hash("sources", "download", "io"),
    shell:
        "python3 -m embryo_bench.cli index --layout {params.layout} --root {params.root:q} "
        "--frame-size {params.frame_size} --test-mod {params.test_mod} "
        "--test-remainder {params.test_remainder} --dataset {params.dataset} "
        "--label {params.label:q} {params.flags} --out {output.manifest:q} "
        "--source-info {output.source:q} > {log:q} 2>&1"

# Stage 2: index the frames and their labels into manifest.csv (dataset.trajectories says
# how lines pair with frames; anything else is an error naming the file and line). Where the
# frames come from (generated, extracted, or read in place) is decided by
# embryo_bench.planning.paths.


rule index:
    input:
        **PLAN.index_inputs(),
    output:
        manifest=f"{OUT}/manifest/manifest.csv",
        source=f"{OUT}/manifest/source.json",
    log:
        f"{LOGS}/index.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        layout="imagefolder" if DATASET["kind"] == "imagefolder" else "db",
        root=lambda wc, input: input.db if "db" in input.keys() else DATASET["path"],
        frame_size=DATASET["frame_size"],
        test_mod=CONFIG["split"]["test_mod"],
        test_remainder=CONFIG["split"]["test_remainder"],
        dataset=DATASET["kind"],
        label=PLAN.dataset_label,
        flags=PLAN.index_flags(),  # an option list: :q quotes each word
        unlabelled=DATASET["trajectories"]["unlabelled_frames"],
        extra_lines=DATASET["trajectories"]["extra_lines"],
        lineage_ended=DATASET["trajectories"]["lineage_ended"],
        source_stamp=SOURCE_STAMP,
        code=code("index"),
    shell:
        "python3 -m embryo_bench.cli index --layout {params.layout:q} --root {params.root:q} "
        "--frame-size {params.frame_size:q} --test-mod {params.test_mod:q} "
        "--test-remainder {params.test_remainder:q} --dataset {params.dataset:q} "
        "--label {params.label:q} {params.flags:q} --unlabelled-frames {params.unlabelled:q} "
        "--extra-lines {params.extra_lines:q} --lineage-ended {params.lineage_ended:q} "
        "--out {output.manifest:q} "
        "--source-info {output.source:q} > {log:q} 2>&1"

# Stage 8: figures (analogues of the paper's figures 1, 4, 5/6 and the report's own),
# tables, and one utilisation figure per run, one figures job per workload (every workload
# alike: its figures folder is {wdir}figures, {wdir} its workload's folder, "" for the
# paper's); the top folder's figures are collected by `snakemake --report` (common.smk's
# REPORTED_FIGURES, flagged where the all rule asks for them).
#
# A failing figures job never costs the last complete figures: what it
# reads that no job writes is checked when the plan is made
# (embryo_bench.planning.figures.check_figures_inputs);
# the job writes into a staging folder, moves the set into figures/ only when it is complete
# and keeps it in figures.previous (hard links). Snakemake removes a job's outputs before it
# runs it and after it fails, and records them as made by the failed job: a set put back
# into figures/ would pass for the new one, so onerror below says where the kept set is,
# and figures/ holds only a set made from the current inputs.
from embryo_bench.io import keep_complete, kept_missing, kept_path


rule figures_spec:
    input:
        # compare.until: the round checks that decide which runs the figures read.
        rounds=round_checks,
    output:
        f"{OUT}/{{wdir}}{layout.FIGURES_SPEC}",
    log:
        f"{LOGS}/{{wdir}}figures-spec.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        # Prices, paper systems, sweep points, bases, thresholds: a price edit reruns this
        # rule and the figures, nothing else.
        spec=lambda wc: PLAN.figures_spec(
            workload(wc).name, decided_rounds()[0]
        ).to_dict(),
        code=code_hash("embryo_bench.vocabulary.figspec"),
    script:
        "../scripts/figures_spec.py"


rule figures:
    input:
        unpack(figures_inputs),
        figures_spec=rules.figures_spec.output[0],
        specs=run_files(layout.RUN_SPEC),
        runs=run_files(layout.METRICS),
        histories=run_files(layout.HISTORY),
        telemetry=run_files(layout.TELEMETRY),
        windows=run_files(layout.WINDOWS),
        # The machine's probe baseline (embryo-bench calibrate), when the config names one.
        baseline=CONFIG["stability"]["baseline"] or [],
        rounds=round_checks,
    output:
        # The same figures, tables and configuration for every workload (figures_files);
        # those of the top folder are the report's (the all rule flags them).
        **figures_files("{wdir}"),
        # One utilisation figure per run of the workload: its runs are its own, so the
        # folder is the output.
        utilisation=directory(
            f"{OUT}/{layout.figures_dir('{wdir}')}/{layout.UTILISATION_DIR}"
        ),
    log:
        f"{LOGS}/{{wdir}}figures.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        out_dir=lambda wc, output: os.path.dirname(output.results_table_csv),
        data=figures_options,
        rounds_note=lambda wc: rounds_note(workload(wc).name),
        code=code("figures"),
    shell:
        "python3 -m embryo_bench.cli figures --spec {input.figures_spec:q} {params.data:q} "
        "--source-info {input.info:q} {params.rounds_note:q} --out-dir {params.out_dir:q} "
        "> {log:q} 2>&1"


# The handlers run only in the process that runs the workflow: not in dry runs, --report or
# --lint, not in jobs that a cluster runs (Snakemake gives them --no-hooks).
onstart:
    # A complete set made before sets were kept (or after figures.previous was removed).
    keep_complete(f"{OUT}/figures", FIGURES)


onerror:
    # A failed figures job: its outputs were removed, the kept set is where it was.
    _missing = kept_missing(f"{OUT}/figures")
    if _missing:
        logger.error(
            f"figures: {len(_missing)} files of the last complete figures are missing from "
            f"{OUT}/figures; that set is kept in {kept_path(f'{OUT}/figures')}, and the next "
            "run makes the figures again"
        )

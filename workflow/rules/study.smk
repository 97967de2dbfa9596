# A study's published numbers beside ours, its claims checked on our runs, and the
# workload x target view. study_ours reads every workload's finished runs (each workload's
# figures-spec.json names them, in the rounds that run) into study/runs.csv and
# study/ours.csv (embryo_bench.reporting.study); study puts the study's numbers file
# (src/embryo_bench/studies/<study>/numbers.csv) beside ours and runs its claims module, so an edit
# to that file or module reruns that rule alone; workload_view draws time and cost relative
# to the base target per workload. Logic in embryo_bench.reporting.study.
from embryo_bench.published.studies import studies as _studies

STUDY = _studies()[CONFIG["study"]] if CONFIG["study"] else None
# The view of every workload against the base, when there is more than one workload.
WORKLOAD_VIEW = len(PLAN.workloads) > 1
STUDY_DIR = f"{OUT}/{layout.STUDY_DIR}"
STUDY_OUTPUTS = (
    [f"{STUDY_DIR}/{n}.{e}" for n in layout.STUDY_TABLES for e in ("csv", "md")]
    + [f"{OUT}/{layout.STUDY_FIGURE}"]
    if STUDY
    else []
)
WORKLOAD_VIEW_OUTPUTS = (
    [f"{OUT}/{layout.WORKLOAD_VIEW}.{e}" for e in ("csv", "md", "png")]
    if WORKLOAD_VIEW
    else []
)


rule study_ours:
    input:
        specs=[w["spec"] for w in PLAN.study_workloads()],
        infos=[w["info"] for w in PLAN.study_workloads()],
        runs=lambda wc: [
            f"{d}/{f}"
            for w in PLAN.workloads
            for d in decided_run_dirs(w)
            for f in (layout.METRICS, layout.HISTORY, layout.RUN_SPEC)
        ],
        # Runs made elsewhere (merge:, into the figures of the workloads of input kind
        # shards, the paper's): read, never written.
        merged=[
            f"{d}/{f}"
            for d in (
                MERGED_RUN_DIRS
                if any(w.input_kind == INPUT_SHARDS for w in PLAN.workloads.values())
                else []
            )
            for f in (layout.METRICS, layout.HISTORY, layout.RUN_SPEC)
        ],
        rounds=round_checks,
    output:
        runs=f"{OUT}/{layout.STUDY_RUNS}",
        ours=f"{OUT}/{layout.STUDY_OURS}",
    log:
        f"{LOGS}/study/ours.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        # Names, catalog workloads, input modes, data and file paths of every workload.
        workloads=json.dumps(PLAN.study_workloads(), sort_keys=True),
        code=code("study-ours"),
    shell:
        "python3 -m embryo_bench.cli study-ours --workloads {params.workloads:q} "
        "--runs-out {output.runs:q} --ours-out {output.ours:q} > {log:q} 2>&1"


rule study:
    input:
        ours=rules.study_ours.output.ours,
        runs=rules.study_ours.output.runs,
        # The study's numbers file: an edit to it reruns this rule only.
        numbers=str(STUDY.path) if STUDY else [],
    output:
        numbers_csv=study_report(f"{STUDY_DIR}/numbers.csv", "numbers", "table", STUDY),
        numbers_md=f"{STUDY_DIR}/numbers.md",
        claims_csv=study_report(f"{STUDY_DIR}/claims.csv", "claims", "table", STUDY),
        claims_md=f"{STUDY_DIR}/claims.md",
        figure=study_report(f"{OUT}/{layout.STUDY_FIGURE}", "study", "figure", STUDY),
    log:
        f"{LOGS}/study/study.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        study=CONFIG["study"],
        code=code("study"),
        # The claims module is imported by name (the study's claims.py): its code, hashed here.
        claims_code=code_hash(STUDY.claims) if STUDY else "",
        out_dir=lambda wc, output: os.path.dirname(output.numbers_csv),
    shell:
        "python3 -m embryo_bench.cli study --study {params.study:q} "
        "--numbers {input.numbers:q} --ours {input.ours:q} --runs {input.runs:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"


rule workload_view:
    input:
        runs=rules.study_ours.output.runs,
    output:
        csv=study_report(
            f"{OUT}/{layout.WORKLOAD_VIEW}.csv",
            "workload_view",
            "table",
            WORKLOAD_VIEW,
        ),
        md=f"{OUT}/{layout.WORKLOAD_VIEW}.md",
        png=study_report(
            f"{OUT}/{layout.WORKLOAD_VIEW}.png",
            "workload_view",
            "figure",
            WORKLOAD_VIEW,
        ),
    log:
        f"{LOGS}/study/workload-view.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        out=lambda wc, output: os.path.splitext(output.csv)[0],
        code=code("workload-view"),
    shell:
        "python3 -m embryo_bench.cli workload-view --runs {input.runs:q} "
        "--out {params.out:q} > {log:q} 2>&1"

# Rounds until the answer is sure (compare.until). The repeats run first;
# the checkpoint round_check then measures every target's ratio interval from the runs of
# rounds 1..k (embryo_bench.reporting.rounds), and PLAN.rounds_wanted reads those checks
# when the jobs are planned: while an interval is wider than compare.until and fewer than
# compare.max_rounds rounds ran, it asks for round k+1 (one run of every target of every
# workload, in the planned order) and for the check after it, which Snakemake makes once those
# runs are done, then plans again. A check holds measurements only, so changing until or
# max_rounds reruns no check and no run; finished rounds are never rerun. Without
# compare.until no check runs and the runs are the repeats, as before.
# A rule whose params depend on the decision takes round_checks as an input and computes them
# in a function of the wildcards alone: Snakemake records no param of a function that takes
# `input` (it counts as derived from the inputs), so a changed goal would rerun nothing.
from embryo_bench.vocabulary.round_check import check_path, read_check


checkpoint round_check:
    input:
        lambda wc: [
            f"{d}/{f}"
            for d in PLAN.round_run_dirs(int(wc.round))
            for f in (layout.METRICS, layout.HISTORY, layout.RUN_SPEC)
        ],
    output:
        f"{OUT}/{check_path('{round}')}",
    log:
        f"{LOGS}/rounds/round-{{round}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        check=lambda wc: json.dumps(PLAN.round_check_params(int(wc.round))),
        code=code("round-check"),
    shell:
        "python3 -m embryo_bench.cli round-check --check {params.check:q} --out {output:q} "
        "> {log:q} 2>&1"


def _read_round_check(k):
    """The check after round k; Snakemake makes it (and the runs before it) first when it
    is not made yet (IncompleteCheckpointException)."""
    path = checkpoints.round_check.get(round=k).output[0]
    try:
        return read_check(path, k)
    except EmbryoBenchError as exc:
        raise WorkflowError(str(exc))


def decided_rounds():
    """(rounds that run, the decision after the last; None without compare.until)."""
    return PLAN.rounds_wanted(_read_round_check)


def decided_run_dirs(workload):
    """A workload's run folders, every round that runs."""
    return PLAN.workload_run_dirs(workload, decided_rounds()[0])


def round_checks(wildcards=None):
    """The checks the decision read (none without compare.until): an input of whatever
    depends on it, so that Snakemake plans it again once they are made."""
    rounds, decision = decided_rounds()
    if decision is None:
        return []
    return [f"{OUT}/{check_path(k)}" for k in range(PLAN.first_rounds, rounds + 1)]


def rounds_note(workload):
    """The figures command's --rounds-note: why the rounds stopped, and --confidence after
    an early stop (the level its intervals are judged at); [] without compare.until."""
    decision = decided_rounds()[1]
    return [] if decision is None else decision.figures_options(workload)

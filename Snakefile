# embryo-bench: reproduce Lawrence et al. (2017) end to end.
# Stages live in workflow/rules/ (one file per stage); logic lives in src/embryo_bench/.
from snakemake.utils import min_version, validate

min_version("9.0")


# The paper configuration is the default; a --configfile replaces it instead of being merged
# into it, so a run uses exactly the settings of the file it names.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Reads every configfile again and checks the merged configuration against
# config/schema.yaml, naming the file and the setting it refuses in one line; then plans.
include: "workflow/rules/common.smk"
# compare.until: the rounds that run, decided after each round (a checkpoint).
include: "workflow/rules/rounds.smk"
# What a run and a figures job read, by their workload's input kind.
include: "workflow/rules/inputs.smk"


# The report opens on the answer: the landing page the last successful run wrote (the
# description below and the answer's tables; onsuccess), else the description alone.
report: landing_page(OUT, DESCRIPTION)


# The same schema through Snakemake's own check (which would print the whole configuration
# with a refusal, and no file): it passes once the plan is made.
validate(config, "config/schema.yaml")


include: "workflow/rules/download.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/select.smk"
include: "workflow/rules/crop.smk"
include: "workflow/rules/invert.smk"
include: "workflow/rules/augment.smk"
include: "workflow/rules/images.smk"
include: "workflow/rules/workloads.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/study.smk"


# Run where Snakemake runs, not as cluster jobs: downloads and image builds need the
# network (and, for images, the Docker daemon the docker targets use); figures are quick.
localrules:
    all,
    download,
    base_image,
    wheelhouse,
    image,
    daemon,
    figures,
    figures_spec,
    run_spec,
    dataset_file,
    round_check,
    study_ours,
    study,
    workload_view,


rule all:
    default_target: True
    input:
        # The top figures folder's figures, tables and utilisation figures as report
        # entries (common.smk), and every other workload's figures.
        REPORTED_FIGURES,
        run_outputs,
        WORKLOAD_FIGURES,
        STUDY_OUTPUTS,
        WORKLOAD_VIEW_OUTPUTS,


# The answer where a run ends: each workload's speed and cost relative to the base target,
# the readable tables its figures job wrote (not after a dry run or one with nothing to do).
onsuccess:
    from embryo_bench.reporting.answer import print_answer, write_landing

    write_landing(
        OUT, list(PLAN.workloads), os.path.join(workflow.basedir, DESCRIPTION)
    )
    print_answer(OUT, list(PLAN.workloads))

# What a run and a figures job read besides their specs, by their workload's input kind
# (embryo_bench.vocabulary.spec.INPUT_KINDS; planning.workloads.Workload.input_kind), not by
# its name: the one train rule (train.smk) and the one figures rule (figures.smk) unpack()
# these functions' named inputs, and give their commands the options these functions make.
# Kind shards (the paper's): its augmented shards (augment.smk) and the stages' records;
# kind arrays (every other workload): its arrays, data info and image files (workloads.smk).
# Functions only, evaluated when the jobs are planned (so the rules they name may come later).


# --- input kind shards (the paper's) ---
def shards_training_inputs(workload):
    """A run's data: every augmented shard, and the index stage's source record (info)."""
    return {
        "shards": expand(rules.augment.output[0], shard=SHARDS),
        "info": rules.index.output.source,
    }


def shards_training_options(input):
    """The train command's options that give a run its shards
    (embryo_bench.vocabulary.training_input.TrainingInput, as the command reads them back).
    """
    return TrainingInput(INPUT_SHARDS, tuple(input.shards)).options()


def shards_figures_inputs(workload):
    """What the figures read besides the runs: the selection and its counts, the source
    record (info), the first shard (figure 1's preprocessing settings), and the runs of
    other machines' result folders (merge:; read, never written)."""
    return {
        "merged": [
            f"{d}/{f}"
            for d in MERGED_RUN_DIRS
            for f in (layout.METRICS, layout.HISTORY, layout.RUN_SPEC)
        ],
        "selection": rules.select.output.selection,
        "counts": rules.select.output.summary,
        "info": rules.index.output.source,
        "shard": expand(rules.augment.output[0], shard=SHARDS[0])[0],
    }


def shards_figures_options(input):
    """The figures command's options that give it the selection, its counts and a shard."""
    return [
        "--selection",
        input.selection,
        "--select-summary",
        input.counts,
        "--shard",
        input.shard,
    ]


# --- input kind arrays (every other workload) ---
def arrays_training_inputs(workload):
    """A run's data: the workload's arrays, their record (info) and, for input: files, its
    image folder."""
    name = workload.name
    return {
        "arrays": rules.workload_data.output.arrays.format(workload=name),
        "info": rules.workload_data.output.info.format(workload=name),
        "files": (
            [rules.workload_files.output[0].format(workload=name)]
            if workload.spec.input_mode == "files"
            else []
        ),
    }


def arrays_training_options(input):
    """The train command's options that give a run its arrays (and image files)
    (embryo_bench.vocabulary.training_input.TrainingInput, as the command reads them back).
    """
    files = input.files[0] if input.files else ""
    return TrainingInput(INPUT_ARRAYS, (input.arrays,), files).options()


def arrays_figures_inputs(workload):
    """What the figures read besides the runs: the data's record (info)."""
    return {"info": rules.workload_data.output.info.format(workload=workload.name)}


def arrays_figures_options(input):
    """No options beyond the figures command's own."""
    return []


# --- by input kind ---
#: A run's data by its workload's input kind (embryo_bench.vocabulary.spec.INPUT_KINDS):
#: named inputs, `info` among them (what the data is: the index stage's source.json, a
#: workload's data info), and the train command's options that give them.
TRAINING_INPUTS = {
    INPUT_SHARDS: shards_training_inputs,
    INPUT_ARRAYS: arrays_training_inputs,
}
TRAINING_OPTIONS = {
    INPUT_SHARDS: shards_training_options,
    INPUT_ARRAYS: arrays_training_options,
}


def training_inputs(wildcards):
    """The data a run trains on, by its workload's input kind (unpack()ed into named
    inputs)."""
    w = workload(wildcards)
    return TRAINING_INPUTS[w.input_kind](w)


def training_options(wildcards, input):
    """The train command's options that give the run's data (each word quoted by :q)."""
    return TRAINING_OPTIONS[workload(wildcards).input_kind](input)


#: What a figures job reads besides its spec and the runs, by its workload's input kind
#: (embryo_bench.vocabulary.spec.INPUT_KINDS): named inputs, `info` among them (what the
#: data is), and the figures command's options that give them.
FIGURES_INPUTS = {
    INPUT_SHARDS: shards_figures_inputs,
    INPUT_ARRAYS: arrays_figures_inputs,
}
FIGURES_OPTIONS = {
    INPUT_SHARDS: shards_figures_options,
    INPUT_ARRAYS: arrays_figures_options,
}


def figures_inputs(wildcards):
    """What a workload's figures read besides its spec and runs, by its input kind
    (unpack()ed into named inputs)."""
    w = workload(wildcards)
    return FIGURES_INPUTS[w.input_kind](w)


def figures_options(wildcards, input):
    """The figures command's options that give it those inputs (each word quoted by :q)."""
    return FIGURES_OPTIONS[workload(wildcards).input_kind](input)


def run_files(name):
    """An input function: the file `name` of each of the workload's runs (every round that
    runs)."""
    return lambda wc: [f"{d}/{name}" for d in decided_run_dirs(workload(wc).name)]

# The figures_spec rule: write figures-spec.json from the plan's values
# (embryo_bench.vocabulary.figspec);
# the rules' shell prefix puts this checkout's src/ on PYTHONPATH for scripts too.
from embryo_bench.vocabulary.figspec import write_spec

write_spec(snakemake.params.spec, snakemake.output, snakemake.log)  # noqa: F821

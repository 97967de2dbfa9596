"""embryo-bench: reproduce Lawrence et al. (2017), "Comparing TensorFlow Deep Learning
Performance Using CPUs, GPUs, Local PCs and Cloud", end to end.

The package holds all logic; Snakemake rules, tests and containers call it through
:mod:`embryo_bench.cli` (the ``embryo-bench`` console command) or import it directly.
"""

__version__ = "0.1.0"

"""The ``embryo-bench`` commands, one module a stage (:mod:`embryo_bench.cli` parses and
dispatches them); each command is a ``cmd_<name>`` function of one of them."""

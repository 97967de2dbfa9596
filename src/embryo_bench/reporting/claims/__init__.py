"""Checks of each study's headline claims on our runs: one module per study (each study's
``claims.py``, in its folder), each with ``claims(published, ours, runs) -> list[Claim]``
(:mod:`embryo_bench.reporting.claims.common`); this package holds the checks they share."""

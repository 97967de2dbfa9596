"""Checks of each study's headline claims on our runs: one module per study
(``studies.yaml``'s ``claims``), each with ``claims(published, ours, runs) -> list[Claim]``
(:mod:`embryo_bench.reporting.claims.common`)."""

"""The runners as plug-ins: one module a runner kind (a run's ``runner``), found by name in
:data:`embryo_bench.launch.registry.RUNNERS`, each with ``train(job)``."""

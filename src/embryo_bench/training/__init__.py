"""Training: Keras backends and threads, the trainer, scoring a model, a machine baseline's
probes (``embryo-bench calibrate``)."""

"""Training: Keras backends and threads, the trainer, scoring a model."""

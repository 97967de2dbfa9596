"""Training: the backend, the training loop, scoring a model, and how batches reach fit."""

"""Workloads: each model, its data and its training recipe; building and compiling a model
(TensorFlow's fused Adam among its optimizers)."""

"""Workloads: each model, its data and its training recipe."""

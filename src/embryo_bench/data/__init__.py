"""Data: the paper's database and the workloads' datasets, read, checked and prepared."""

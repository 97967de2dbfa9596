"""Data: the paper's frames (finding, selecting, preprocessing, the synthetic database) and the
datasets of the other workloads (one module per file format), downloads."""

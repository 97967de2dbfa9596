"""Data: finding and selecting frames, the preprocessing stages, the synthetic database,
downloads."""

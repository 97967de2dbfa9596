"""Errors raised for bad input. Each message names the file or setting and what was expected."""


class EmbryoBenchError(Exception):
    """Base class of every error embryo-bench raises on bad input or a failed step."""


class DataError(EmbryoBenchError):
    """A data file (image, trajectories, manifest, archive) is missing or malformed."""


class DownloadError(EmbryoBenchError):
    """A download failed, was truncated, or its checksum did not match."""


class ConfigError(EmbryoBenchError):
    """A configuration value is missing or impossible."""

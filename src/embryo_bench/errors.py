"""Errors raised for bad input. Each message names the file or setting and what was expected."""


class EmbryoBenchError(Exception):
    """Base class of every error embryo-bench raises on bad input or a failed step."""


class DataError(EmbryoBenchError):
    """A data file (image, trajectories, manifest, archive) is missing or malformed."""


class DownloadError(EmbryoBenchError):
    """A download failed, was truncated, or its checksum did not match."""


class ConfigError(EmbryoBenchError):
    """A configuration value is missing or impossible."""


class StorageError(EmbryoBenchError):
    """An output could not be written: no space left on its device (or over a quota)."""


class DockerError(EmbryoBenchError):
    """The Docker daemon is unreachable, or an image build or container run failed."""


class OutdirInUse(EmbryoBenchError):
    """Another workflow (another checkout, or another Snakemake process) holds the outdir."""


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error
    """A signal (SIGINT, SIGTERM, SIGHUP) or the loss of the parent process stopped a run."""

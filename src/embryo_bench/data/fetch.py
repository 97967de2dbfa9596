"""Getting a dataset's files: downloaded through :func:`embryo_bench.data.download.download`
(retries, resume from ``.part``, sha256, atomic rename) or a copy fetched elsewhere, checked
in place (``offline``: a folder holding the files by name, or an image folder's copy).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError, DataError, DownloadError
from .download import download
from .formats import FOLDER, FORMATS
from .registry import REGISTRY, Dataset, DatasetFile, check_file, check_loadable, get

#: File name endings that :func:`embryo_bench.data.download.download` checks as zip/tar archives.
ARCHIVES = (".zip", ".npz", ".tar", ".tar.gz", ".tgz")


def _settings(ds: Dataset, f: DatasetFile) -> dict[str, str]:
    """What a failed download of ``f`` names (:func:`embryo_bench.data.download.download`)."""
    return {
        "url": f"the url of {f.name} (dataset {ds.name}) in {REGISTRY}",
        "sha256": f"dataset {ds.name} in {REGISTRY.name}",
        "offline": f"download {f.name} elsewhere and give the folder that holds it as "
        f"dataset {ds.name}'s local copy",
    }


def fetch(
    dataset: str | Dataset,
    folder: str | os.PathLike,
    *,
    offline: str | os.PathLike | None = None,
    progress: bool = True,
    retries: int = 5,
    backoff: float = 1.0,
) -> dict[str, Path]:
    """Get a dataset's files: downloaded into ``folder``, or a copy fetched elsewhere.

    A file already in ``folder`` that passes :func:`check_file` is kept, not fetched again.

    Args:
        dataset: a registry name, or a :class:`Dataset` (e.g. one with other URLs).
        folder: where downloads go (created).
        offline: a folder that already holds the files by name (read in place, checked), or
            an image folder dataset's copy (holding its split folders).
        progress, retries, backoff: as :func:`embryo_bench.data.download.download`.

    Returns:
        the paths by file name, as :func:`.datasets.prepare` takes them (``{"folder": path}`` for an
        image folder).

    Raises:
        ConfigError: an unknown name, "embryo", or an image folder without ``offline``.
        DataError: an offline copy missing, of another size or sha256; an image folder copy
            without its split folders.
        DownloadError: as :func:`embryo_bench.data.download.download`, or a download of another
            size than the registry's (removed).
    """
    ds = get(dataset) if isinstance(dataset, str) else dataset
    check_loadable(ds)
    if FORMATS[ds.format].folder:
        if offline is None:
            raise ConfigError(
                f"dataset {ds.name!r}: no public host (it needs a login); give a local copy by "
                f"path: a folder holding {' and '.join(dict(ds.splits).values())}, each with "
                "one folder of images per class"
            )
        for split in ("train", "test"):
            if not ds.split_folder(offline, split).is_dir():
                raise DataError(
                    f"{ds.split_folder(offline, split)}: not a folder; expected dataset "
                    f"{ds.name}'s {split} split (<class>/*.jpg) in its local copy {offline}"
                )
        return {FOLDER: Path(offline)}
    paths: dict[str, Path] = {}
    for f in ds.files:
        if offline is not None:
            check_file(ds, f, Path(offline) / f.name)
            paths[f.name] = Path(offline) / f.name
            continue
        paths[f.name] = fetch_file(
            ds, f, Path(folder) / f.name, progress=progress, retries=retries, backoff=backoff
        )
    return paths


def fetch_file(
    ds: Dataset,
    f: DatasetFile,
    dest: str | os.PathLike,
    *,
    progress: bool = True,
    retries: int = 5,
    backoff: float = 1.0,
) -> Path:
    """Download one published file of a dataset to ``dest`` (the workflow's
    ``dataset_file`` rule: one job a file), its sha256 and size checked against the
    registry's; a file already at ``dest`` that passes :func:`check_file` is kept.

    Returns:
        ``dest``.

    Raises:
        DownloadError: as :func:`embryo_bench.data.download.download`, or a download of another
            size than the registry's (removed; one of more is stopped at that size).
    """
    dest = Path(dest)
    if dest.is_file():
        try:
            check_file(ds, f, dest)
            return dest
        except DataError:
            pass  # fetched again below; download() replaces it only when complete
    info = download(
        f.url,
        dest,
        sha256=f.sha256,
        retries=retries,
        backoff=backoff,
        progress=progress,
        archive=f.name.endswith(ARCHIVES),
        settings=_settings(ds, f),
        max_bytes=f.bytes,
    )
    if f.bytes is not None and info["bytes"] != f.bytes:
        dest.unlink()
        raise DownloadError(
            f"{f.url}: {info['bytes']:,} bytes received for {f.name}; expected {f.bytes:,} "
            f"(dataset {ds.name} in {REGISTRY.name}); nothing was kept"
        )
    return dest

"""The dataset formats the registry's ``format`` may name, as records: what each reads (its
published files, or a local folder copy), what samples it can give and what an entry of its
format must carry. The registry, the downloads and the plan decide by these records, never by a
format's name; :mod:`.datasets` gives each its loader (``datasets.LOADERS``, one function per
format over the loader module that parses its files).

Kept free of the loaders (numpy parsing, PIL) for the reason :mod:`.registry` is: what only
names or checks a dataset (the plan, the downloads) imports no loader, so a loader's change
reruns no download. A new format is its loader module, its record here and its line in
``datasets.LOADERS`` (a test holds the two tables to the same names).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The key of an image folder in the files of a dataset that has none of its own.
FOLDER = "folder"
#: The channels an image folder's images are converted to (grey, RGB:
#: :data:`embryo_bench.data.imagefolder.MODES`).
FOLDER_CHANNELS = (1, 3)


@dataclass(frozen=True)
class Format:
    """One dataset format.

    Attributes:
        name: what ``format:`` in datasets.yaml says ("mnist-npz", "image-folder", ...).
        folder: it reads a local copy by path (a folder of split folders, each of one folder
            of images per class; no public host, no files in the registry) instead of the
            dataset's published files.
        resizes: its images are resized to any (H, W, 1 or 3) sample shape (an image
            folder's files have sizes of their own); otherwise images come at the dataset's
            size or a central crop of it, sequences at any length (padded or cut).
        needs_step: a text corpus: its entry gives ``step``, the characters between two
            sequences' starts.
    """

    name: str
    folder: bool = False
    resizes: bool = False
    needs_step: bool = False


#: Every format, by name.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("mnist-npz"),
        Format("mnist-idx"),
        Format("cifar10-binary"),
        Format("imdb-npz"),
        Format("text-chars", needs_step=True),
        Format("image-folder", folder=True, resizes=True),
    )
}

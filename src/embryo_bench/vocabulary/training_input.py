"""What a training run trains on (:class:`TrainingInput`): the one description of its data, of
the input kind its ``run.json`` names (:data:`embryo_bench.vocabulary.spec.INPUT_KINDS`), that
the train command makes from its options, the trainer reads and the docker runner ships into a
container and names there again. Only the standard library and the package's vocabulary: the
training image imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .spec import INPUT_ARRAYS, INPUT_KINDS, INPUT_SHARDS, RunSpec


@dataclass(frozen=True)
class TrainingInput:
    """What one run trains on: the one description of its data that the train command makes
    from its options (:meth:`for_run`) and gives the trainer
    (:func:`embryo_bench.training.train.run_training`) and the docker runner, which ships it
    into a container (:meth:`by_name`, :meth:`under`) and names it there again
    (:meth:`options`).

    Attributes:
        kind: :data:`embryo_bench.vocabulary.spec.INPUT_SHARDS` or
        :data:`embryo_bench.vocabulary.spec.INPUT_ARRAYS`
            (:attr:`embryo_bench.vocabulary.spec.RunSpec.input_kind`).
        paths: the augmented ``.npz`` shards (kind shards, at least one), or the prepared
            arrays file (kind arrays, exactly one).
        files: kind arrays in the ``files`` input mode: the workload's image folder
            (``embryo-bench workload-files``; its ``train/`` is read); "" otherwise.

    Raises:
        ConfigError: an unknown kind, no shards, not one arrays file, or files beside
            shards.
    """

    kind: str
    paths: tuple[str, ...]
    files: str = ""

    def __post_init__(self):
        object.__setattr__(self, "paths", tuple(str(p) for p in self.paths))
        object.__setattr__(self, "files", str(self.files or ""))
        if self.kind not in INPUT_KINDS:
            raise ConfigError(f"training input kind {self.kind!r}; expected one of {INPUT_KINDS}")
        if self.kind == INPUT_SHARDS and (not self.paths or self.files):
            raise ConfigError("a run on shards takes one or more shards and no image folder")
        if self.kind == INPUT_ARRAYS and len(self.paths) != 1:
            raise ConfigError(f"a run on arrays takes one arrays file, not {len(self.paths)}")

    @classmethod
    def for_run(
        cls,
        spec: RunSpec,
        where: str,
        shards: list[str] | tuple[str, ...] = (),
        arrays: str | os.PathLike | None = None,
        files: str | os.PathLike | None = None,
    ) -> TrainingInput:
        """The train command's data options (``--shards``, ``--arrays``, ``--files``) as the
        run's input, checked against what its spec trains on
        (:attr:`embryo_bench.vocabulary.spec.RunSpec.input_kind`, and its workload's input mode).

        Args:
            spec: the run. where: its ``run.json`` (for messages).

        Raises:
            ConfigError: one line naming ``where``, the workload and the option it needs or
                cannot take.
        """
        run = f"{where}: a run of workload {spec.workload_name}"
        if spec.input_kind == INPUT_SHARDS:
            if not shards:
                raise ConfigError(f"{run} trains on its augmented shards: it needs --shards")
            if arrays or files:
                raise ConfigError(f"{run} trains on its shards, not on --arrays or --files")
            return cls(INPUT_SHARDS, tuple(shards))
        if not arrays:
            raise ConfigError(f"{run} trains on its arrays: it needs --arrays")
        if shards:
            raise ConfigError(f"{run} trains on its arrays, not on --shards")
        reads_files = spec.workload.input_mode == "files"
        if reads_files and not files:
            raise ConfigError(f"{run} reads files: it needs --files")
        return cls(INPUT_ARRAYS, (str(arrays),), str(files) if reads_files else "")

    @property
    def arrays(self) -> str:
        """The arrays file (kind arrays).

        Raises:
            ConfigError: a run on shards."""
        if self.kind != INPUT_ARRAYS:
            raise ConfigError(f"a run on {self.kind} has no arrays file")
        return self.paths[0]

    def options(self) -> list[str]:
        """The train command's options that give this input: ``--shards`` with every shard,
        or ``--arrays`` (and ``--files``)."""
        if self.kind == INPUT_SHARDS:
            return ["--shards", *self.paths]
        return ["--arrays", self.paths[0], *(["--files", self.files] if self.files else [])]

    def by_name(self) -> dict[str, Path]:
        """Each file (or the image folder) by a name of its own, in order: ``shard-<i>.npz``,
        or ``arrays.npz`` (and ``files``): what a container's copy of it is called."""
        if self.kind == INPUT_SHARDS:
            return {f"shard-{i}.npz": Path(p) for i, p in enumerate(self.paths)}
        return {
            "arrays.npz": Path(self.paths[0]),
            **({"files": Path(self.files)} if self.files else {}),
        }

    def under(self, folder: str) -> TrainingInput:
        """The same input as copied into ``folder`` under the names of :meth:`by_name`."""
        names = list(self.by_name())
        if self.kind == INPUT_SHARDS:
            return TrainingInput(self.kind, tuple(f"{folder}/{n}" for n in names))
        return TrainingInput(
            self.kind, (f"{folder}/{names[0]}",), f"{folder}/files" if self.files else ""
        )

"""The workloads a configuration asks for (``workloads:``), resolved and checked
before any job.

A workload is a model, its data, its training recipe and an input mode. ``paper`` is the
paper's pipeline (the ``dataset``, ``preprocess`` and ``train`` sections: the augmented shards
and the paper's CNN); every other entry names a workload of the catalog of the studies' models
(:mod:`embryo_bench.workloads.catalog`) or a model of the user's own (``model:
package.module:function``), and trains on a dataset of :mod:`embryo_bench.data.datasets`,
real or synthetic. Nothing here imports Keras or the user's module: a model path is checked
by finding its module and the function's definition in its source
(:func:`check_model_path`), so a parse of the workflow stays quick and runs no user code.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..data import registry
from ..errors import ConfigError
from ..vocabulary.codehash import PACKAGE, code_hash
from ..vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS, WorkloadSpec
from ..workloads import builders, catalog

#: Where a user's model comes from, for tables (the catalog's workloads name their study).
OWN_MODEL = "your model"


@dataclass(frozen=True)
class WorkloadData:
    """How a workload's arrays are made (the ``workload_data`` rule's settings).

    Attributes:
        dataset: the dataset's name (:func:`embryo_bench.data.datasets.get`).
        synthetic: synthetic arrays of the dataset's shape and class count, not its files.
        path: a folder holding the dataset's files (an offline copy); "" to download them.
        input_shape, input_dtype, classes: one sample as the model takes it.
        train_samples, test_samples: samples kept (the first ones); 0: all.
        seed: the synthetic arrays' seed.
        sha256: an offline copy's files accepted by their own sha256 (file name -> lower-case
            hex digest) instead of the registry's sha256 and size; {}: none.
        vocabulary: synthetic token ids are below it (the entry's ``vocabulary``); 0: the
            dataset's.
        ngram_range: real IMDb reviews get their n-grams of 2..this many ids appended
            (the catalog's, imdb-fasttext's 2); 1: none.
    """

    dataset: str
    synthetic: bool
    path: str
    input_shape: tuple
    input_dtype: str
    classes: int
    train_samples: int
    test_samples: int
    seed: int
    sha256: dict[str, str] = field(default_factory=dict)
    vocabulary: int = 0
    ngram_range: int = 1

    def to_dict(self) -> dict:
        """JSON-ready (the rule's ``params``: a change reruns the workload's data and runs)."""
        return {
            "sha256": dict(sorted(self.sha256.items())),
            "dataset": self.dataset,
            "synthetic": self.synthetic,
            "path": self.path,
            "input_shape": list(self.input_shape),
            "input_dtype": self.input_dtype,
            "classes": self.classes,
            "train_samples": self.train_samples,
            "test_samples": self.test_samples,
            "seed": self.seed,
            # Only where set: every other workload's data keeps its params (and its runs).
            **({"vocabulary": self.vocabulary} if self.vocabulary else {}),
            **({"ngram_range": self.ngram_range} if self.ngram_range > 1 else {}),
        }


@dataclass(frozen=True)
class Workload:
    """One workload of a plan, resolved.

    Attributes:
        name: its name (``workloads[].name``); "paper" for the paper's.
        spec: what its runs train (:class:`embryo_bench.vocabulary.spec.WorkloadSpec`); None
            for the paper's workload (its runs are made from ``train:`` as before).
        data: how its arrays are made; None for the paper's.
        epochs, batch_size, learning_rate: its recipe, with the entry's overrides; None for
            the paper's (the targets' and ``train:``'s).
        epoch_steps: batches an epoch: the entry's, or with ``epoch_steps: study`` its
            catalog recipe's (where its study counted steps) at the recipe's batch size,
            scaled to keep an epoch's images; 0 (the default): an epoch is one pass over its
            training samples (and the paper's, whose ``train.variant`` decides).
        source: where the model and recipe come from (study, script), or :data:`OWN_MODEL`.
        parameters: the trainable parameter count its source gives (None: not given).
        accuracy_target: the test accuracy (0-1] its runs' time to accuracy is measured to:
            the entry's, else its catalog entry's, else ``train.accuracy_target``
            (:func:`resolve_workload`); None in a workload made by hand: ``train``'s.
        repeats: its runs on each target that sets no repeats of its own: the entry's, else
            its catalog entry's, else ``train.repeats``; None in a workload made by hand.
        input_kind: what its runs train on (:data:`embryo_bench.vocabulary.spec.INPUT_KINDS`):
            ``shards`` for the paper's (its own stages' augmented shards), ``arrays`` for
            every other (its prepared arrays): the workflow chooses a run's and a figures
            job's inputs by it.
        catalog: the catalog workload it trains (:mod:`embryo_bench.workloads.catalog`:
            the paper's is ``paper``); "" for a model of one's own.
        model: its model's builder (``package.module:function``, as
            :data:`embryo_bench.vocabulary.spec.BUILDER_PATTERN`): its catalog entry's, or the
            entry's own; its code is hashed into its runs' params (:func:`model_code`).
    """

    name: str
    spec: WorkloadSpec | None = None
    data: WorkloadData | None = None
    epochs: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    epoch_steps: int = 0
    source: str = ""
    parameters: int | None = None
    accuracy_target: float | None = None
    repeats: int | None = None
    input_kind: str = INPUT_ARRAYS
    catalog: str = ""
    model: str = ""

    @property
    def own_recipe(self) -> bool:
        """It trains by a recipe of its own (its :class:`WorkloadSpec`, epochs, batch size and
        learning rate); False: by the configuration's ``train`` section and each target's
        settings, which the sweep points vary (the paper's: no spec of its own)."""
        return self.spec is not None


#: ``epoch_steps: study``: the catalog recipe's steps an epoch (where the study counted steps).
STUDY_STEPS = "study"

#: A workload's settings of how its runs are measured (``workloads[]``), each defaulting to
#: its catalog entry's, else the ``train`` section's.
RUN_SETTINGS = ("accuracy_target", "repeats")


def run_settings(entry: dict, base: catalog.Workload | None, train: dict) -> dict:
    """A workload's :data:`RUN_SETTINGS`: the entry's, else its catalog workload's
    (``base``, where it gives one), else ``train``'s (schema defaults filled in).

    Returns:
        {"accuracy_target": a float in (0, 1], "repeats": an int >= 1}.
    """
    out = {}
    for key in RUN_SETTINGS:
        value = entry.get(key)
        if value is None and base is not None:
            value = getattr(base, key)
        out[key] = train[key] if value is None else value
    out["accuracy_target"] = float(out["accuracy_target"])
    return out


#: How many ``from x import f`` re-exports :func:`check_model_path` follows to the ``def``.
REEXPORTS = 8


def _bindings(tree: ast.Module, name: str) -> list[ast.stmt]:
    """The statements at a module's top level (in its ``if``/``try``/``with`` blocks too, not
    in functions or classes) that bind ``name``, in source order."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.If | ast.Try | ast.With):
            for part in ("body", "orelse", "finalbody", "handlers"):
                todo[:0] = getattr(node, part, [])
            continue
        if isinstance(node, ast.ExceptHandler):
            todo[:0] = node.body
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound = {node.name}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            continue
        if name in bound:
            found.append(node)
    return found


def _imported_from(node: ast.ImportFrom, module: str, origin: str) -> str:
    """The absolute name of the module a ``from ... import`` statement of ``module`` reads."""
    if not node.level:
        return node.module or ""
    package = module if origin.endswith("__init__.py") else module.rpartition(".")[0]
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return ".".join(p for p in (base, node.module) if p)


def _function_problem(module: str, func: str, depth: int = 0) -> str | None:
    """Why ``module:func`` is not a function defined with ``def`` in a module that may hold
    a builder (:func:`embryo_bench.workloads.builders.refused_module`), following ``from x
    import func`` to where it is defined (at most :data:`REEXPORTS` times); None where it
    is one. Imports no module (:func:`embryo_bench.workloads.builders.locate`)."""
    refused = builders.refused_name(module)
    if refused:
        return f"{module} is {refused}; {builders.EXPECTED_MODULE}"
    found = builders.locate(module)
    if found is None:
        parts = module.split(".")
        prefixes = (".".join(parts[: i + 1]) for i in range(len(parts)))
        missing = next((p for p in prefixes if builders.locate(p) is None), module)
        return (
            f"module {module} cannot be imported (No module named {missing!r}); expected a "
            "module importable where the runs train"
        )
    refused = builders.refused_module(module, found.origin)
    if refused:
        return f"{module} is {refused}; {builders.EXPECTED_MODULE}"
    origin = found.origin
    try:
        tree = ast.parse(Path(origin).read_text(encoding="utf-8"), filename=origin)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        return f"{origin} cannot be read: {exc}"
    bindings = _bindings(tree, func)
    if any(isinstance(b, ast.FunctionDef) for b in bindings):
        return None
    imports = [b for b in bindings if isinstance(b, ast.ImportFrom)]
    for node in imports if depth < REEXPORTS else []:
        real = next(a.name for a in node.names if (a.asname or a.name) == func)
        if _function_problem(_imported_from(node, module, origin), real, depth + 1) is None:
            return None
    expected = "expected a function (def) returning a Keras model for (input_shape, classes)"
    if not bindings:
        return f"{origin} defines no {func}; {expected}"
    last = bindings[-1]
    if isinstance(last, ast.AsyncFunctionDef):
        what = "an async function"
    elif isinstance(last, ast.ClassDef):
        what = "a class"
    elif isinstance(last, ast.Import):
        what = "an imported module"
    elif isinstance(last, ast.ImportFrom):
        what = f"imported from {_imported_from(last, module, origin)}, where it is no such function"
    else:
        what = f"assigned (line {last.lineno}), not defined with def"
    return f"{func} of {origin} is {what}; {expected}"


def check_model_path(path: str, where: str) -> None:
    """Check that ``package.module:function`` names a function defined with ``def`` (or
    imported from a module where it is) in a module that may hold a builder: Python source
    of the user's own or of the package's model modules, not Python's standard library nor
    the package's other modules (:func:`embryo_bench.workloads.builders.refused_module`), found
    without importing it.

    Raises:
        ConfigError: one line naming ``where``, the value and what was expected.
    """
    module, _, func = path.partition(":")
    if not module or not func:
        raise ConfigError(f"{where} {path!r}: expected package.module:function")
    problem = _function_problem(module, func)
    if problem:
        raise ConfigError(f"{where} {path!r}: {problem}")


def check_data_path(path: str, data: str, ds: registry.Dataset, where: str) -> None:
    """Check a workload's ``path:`` (an offline copy of its dataset) before any job: real
    data only (synthetic arrays read no file), a folder that holds the dataset's files, or
    an image folder's split folders. Their contents are read by the data job (a damaged file
    is named there).

    Args:
        path: the setting's value (relative to where the workflow runs). data: "real" or
            "synthetic". ds: the workload's dataset. where: the entry, for messages.

    Raises:
        ConfigError: one line naming ``where``'s path and what was expected.
    """
    setting = f"{where}: path {path!r}"
    if data == "synthetic":
        raise ConfigError(
            f"{setting} with data: synthetic, whose arrays are generated and read no file; "
            "remove path, or set data: real to train on the copy"
        )
    if ds.splits:
        names = [f"{dict(ds.splits)[s]}/" for s in ("train", "test")]
        expected = f"a folder holding {ds.name}'s split folders {' and '.join(names)}"
    else:
        names = [f.name for f in ds.files]
        expected = f"a folder holding {ds.name}'s files {', '.join(names)}"
    folder = Path(path)
    if not folder.exists():
        raise ConfigError(f"{setting}: no such folder; expected {expected}")
    if not folder.is_dir():
        raise ConfigError(f"{setting}: not a folder; expected {expected}")
    if ds.splits:
        missing = [n for n in names if not (folder / n).is_dir()]
    else:
        missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise ConfigError(f"{setting}: no {', '.join(missing)} in it; expected {expected}")


def model_code(model: str) -> str:
    """The code a workload's builder runs, as a hash: the rule's ``params`` (the builders are
    imported by name when a run trains, so the train command's own code hash cannot follow
    them). A builder of the package: :func:`embryo_bench.vocabulary.codehash.code_hash` of its
    module (its import closure; comments and docstrings do not count); a user's: sha256 of
    its module's file (any edit counts).

    Raises:
        ConfigError: the module cannot be found (:func:`check_model_path` says so first).
    """
    module = model.partition(":")[0]
    if module.split(".")[0] == PACKAGE:
        return code_hash(module)
    found = builders.locate(module)
    if found is None or not found.origin or not Path(found.origin).is_file():
        return f"{module}: no source file"
    return hashlib.sha256(Path(found.origin).read_bytes()).hexdigest()[:16]


def frames_pipeline(entry: dict) -> catalog.Workload | None:
    """The catalog workload a ``workloads[]`` entry names when its data is made by the frames
    pipeline (a dataset without a format of its own: the configuration's dataset, split,
    select and preprocess sections make it, as augmented shards; the paper's workload), else
    None (a model of one's own, a variant, or a workload of a dataset's own files)."""
    if entry.get("model") or entry.get("catalog"):
        return None
    listed = catalog.catalog().get(entry["name"])
    if listed is None or registry.get(listed.dataset).format is not None:
        return None
    return listed


def resolve_workload(entry: dict, index: int, train: dict) -> Workload:
    """One ``workloads[]`` entry (schema defaults filled in), resolved.

    Args:
        entry: the entry. index: its position (for messages). train: the configuration's
            ``train`` section (defaults filled in): its ``seed`` (the synthetic arrays'),
            and its ``accuracy_target`` and ``repeats``, the entry's defaults where neither
            it nor its catalog entry gives them.

    Raises:
        ConfigError: naming the setting: settings given to the paper's workload, an unknown
            catalog workload or dataset, a model path that does not import, a user model
            without its data's shape, files input for a workload whose samples are not
            images, a test or train sample count the data cannot have, an input shape its
            real data's loader cannot give (:func:`embryo_bench.data.registry.
            sample_shape_problem`), a ``path`` that is not a folder holding the dataset
            (:func:`check_data_path`) or is set beside synthetic data.
    """
    where = f"workloads[{index}] ({entry['name']})"
    name = entry["name"]
    seed = train["seed"]
    pipeline = frames_pipeline(entry)
    if pipeline is not None:
        extra = sorted(set(entry) - {"name", "data", "input", "workers", "train_samples",
                                     "test_samples", *RUN_SETTINGS})  # fmt: skip
        defaults = {"data": "real", "input": "memory", "workers": 2, "train_samples": 0,
                    "test_samples": 0}  # fmt: skip
        changed = sorted(k for k, v in defaults.items() if entry.get(k, v) != v)
        if extra or changed:
            raise ConfigError(
                f"{where}: {', '.join(extra + changed)} set for a workload of the frames "
                "pipeline, whose settings are dataset, preprocess and train; expected name "
                f"(and {' or '.join(RUN_SETTINGS)}) only"
            )
        return Workload(
            name,
            source=pipeline.source,
            input_kind=INPUT_SHARDS,
            catalog=name,
            model=pipeline.model,
            **run_settings(entry, None, train),
        )
    base = None
    if entry.get("model") is None or entry.get("catalog"):
        base_name = entry.get("catalog") or name
        try:
            base = catalog.get(base_name)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if entry.get("model"):
        check_model_path(entry["model"], f"{where}: model")
    dataset_name = entry.get("dataset") or (base.dataset if base else None)
    if dataset_name is None:
        raise ConfigError(f"{where}: a model of your own needs dataset: (and input_shape, classes)")
    try:
        ds = registry.get(dataset_name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: dataset: {exc}") from None
    if ds.format is None:
        raise ConfigError(
            f"{where}: dataset {dataset_name} is the paper's own pipeline; expected a dataset "
            "of the catalog (embryo-bench workloads lists them)"
        )
    shape = tuple(entry.get("input_shape") or (base.input_shape if base else ds.shape))
    dtype = base.input_dtype if base and not entry.get("input_shape") else ds.dtype
    classes = entry.get("classes") or (base.classes if base else ds.classes)
    images = ds.kind == "images" and len(shape) == 3
    if entry["input"] == "files" and not images:
        raise ConfigError(
            f"{where}: input files: {dataset_name} holds {ds.kind}, not images; expected "
            "input: memory"
        )
    if entry.get("vocabulary") and (dtype != "int32" or entry["data"] != "synthetic"):
        why = (
            f"{dataset_name} holds {ds.kind}"
            if dtype != "int32"
            else "the real data's count decides"
        )
        raise ConfigError(
            f"{where}: vocabulary {entry['vocabulary']}: {why}; expected vocabulary on "
            "synthetic token ids only"
        )
    ngram_range = base.ngram_range if base and entry["data"] == "real" else 1
    augment = entry.get("augment", entry["input"] == "files")
    augmentation = dict(base.augmentation) if base and augment else {}
    if entry.get("augment") and not (images and augmentation):
        why = f"{dataset_name} holds {ds.kind}" if not images else "its catalog entry gives none"
        raise ConfigError(
            f"{where}: augment: true: {why}; expected augment: false, or a catalog workload "
            "whose study augmented images"
        )
    if entry["data"] == "real" and not entry.get("path") and not ds.files:
        raise ConfigError(
            f"{where}: dataset {dataset_name} cannot be downloaded (no public copy); set "
            "path: to a folder holding it, or data: synthetic"
        )
    if entry["data"] == "real":
        # The loader's shapes, checked here: the data job refused them only when it ran.
        expected = registry.sample_shape_problem(ds, tuple(shape))
        if expected:
            raise ConfigError(
                f"{where}: input_shape {list(shape)}: dataset {dataset_name}'s files give "
                f"{ds.shape}; expected {expected}"
            )
    # The settings first, then the folder they name: what the entry says is named before
    # what the file system holds.
    accepted = {name: digest.lower() for name, digest in entry.get("sha256", {}).items()}
    if accepted and (entry["data"] != "real" or not entry.get("path")):
        raise ConfigError(
            f"{where}: sha256 is set, for an offline copy's files; expected path: to that "
            "copy, with data: real"
        )
    unknown = sorted(set(accepted) - {f.name for f in ds.files})
    if unknown:
        raise ConfigError(
            f"{where}: sha256: {', '.join(unknown)} is not a file of dataset {dataset_name}; "
            f"expected {', '.join(f.name for f in ds.files) or 'none: it has no files of its own'}"
        )
    if entry.get("path"):
        check_data_path(entry["path"], entry["data"], ds, where)
    if entry["data"] == "synthetic" and (
        not (entry["train_samples"] or ds.train) or (ds.test is None and not entry["test_samples"])
    ):
        raise ConfigError(
            f"{where}: dataset {dataset_name} gives no sample counts for synthetic data; set "
            "train_samples and test_samples"
        )
    recipe = base.recipe if base else None
    epochs = entry.get("epochs") or (recipe.epochs if recipe else None)
    batch_size = entry.get("batch_size") or (recipe.batch_size if recipe else None)
    learning_rate = entry.get("learning_rate") or (recipe.learning_rate if recipe else None)
    missing = [k for k, v in (("epochs", epochs), ("batch_size", batch_size),
                              ("learning_rate", learning_rate)) if v is None]  # fmt: skip
    if missing:
        raise ConfigError(f"{where}: a model of your own needs {', '.join(missing)}")
    epoch_steps = entry.get("epoch_steps", 0)
    if epoch_steps == STUDY_STEPS:
        # The study's fixed epoch, asked for by name (a default would give a quick run on a
        # few samples the study's 8,000 steps an epoch), its images kept at another batch
        # size (003's Table XV ran the same 18.18 epochs at batch 50, 500 and 5,000).
        steps = recipe.epoch_steps if recipe else 0
        if not steps:
            raise ConfigError(
                f"{where}: epoch_steps: {STUDY_STEPS}: its catalog entry's study counted "
                "epochs, not steps; expected a number of steps, or 0 (one pass an epoch)"
            )
        epoch_steps = -(-steps * recipe.batch_size // batch_size)
    spec = WorkloadSpec(
        name=name,
        model=entry.get("model") or base.model,
        dataset=dataset_name,
        synthetic=entry["data"] == "synthetic",
        input_shape=shape,
        input_dtype=dtype,
        classes=classes,
        optimizer=recipe.optimizer if recipe else "adam",
        loss=recipe.loss if recipe else "sparse_categorical_crossentropy",
        input_mode=entry["input"],
        workers=entry["workers"],
        optimizer_options=dict(recipe.optimizer_options) if recipe else {},
        augmentation=augmentation,
        # Token ids are below it: the entry's (synthetic ids), else none where the real data
        # decides (imdb-fasttext's bigrams: the trainer takes the data's), else the
        # workload's or the dataset's.
        vocabulary=entry.get("vocabulary")
        or (0 if ngram_range > 1 else (base.vocabulary if base else 0) or ds.vocabulary),
        from_logits=recipe.from_logits if recipe else False,
    )
    data = WorkloadData(
        dataset=dataset_name,
        synthetic=spec.synthetic,
        path=entry.get("path") or "",
        input_shape=shape,
        input_dtype=dtype,
        classes=classes,
        train_samples=entry["train_samples"],
        test_samples=entry["test_samples"],
        seed=seed,
        sha256=accepted,
        vocabulary=entry.get("vocabulary") or 0,
        ngram_range=ngram_range,
    )
    return Workload(
        name=name,
        spec=spec,
        data=data,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=float(learning_rate),
        epoch_steps=epoch_steps,
        source=base.source if base and not entry.get("model") else OWN_MODEL,
        parameters=base.parameters if base and not entry.get("model") else None,
        catalog=entry.get("catalog") or ("" if entry.get("model") else name),
        model=spec.model,
        **run_settings(entry, base, train),
    )


def check_offline_copy(workload: Workload) -> None:
    """The files of a workload's offline copy (``path:``) are there and have the registry's
    sizes (or are accepted by their own ``sha256``): what can be checked without reading
    them, when the plan is made. Their sha256 is checked by the data job
    (:func:`embryo_bench.data.registry.check_file`) before it reads them.

    Raises:
        DataError: one line naming the file: missing, or another size than the registry's,
            with how to accept a copy that differs on purpose.
    """
    data = workload.data
    if data is None or data.synthetic or not data.path:
        return
    ds = registry.get(data.dataset)
    for f in ds.files:
        registry.check_file(
            ds,
            f,
            Path(data.path) / f.name,
            sha256=data.sha256.get(f.name),
            hashed=False,
            accept=f"workload {workload.name}",
        )


def resolve_workloads(config: dict) -> dict[str, Workload]:
    """Every workload of a validated configuration, by name, in its order.

    Raises:
        ConfigError: a name given twice, or as :func:`resolve_workload`.
    """
    out: dict[str, Workload] = {}
    for i, entry in enumerate(config["workloads"]):
        if entry["name"] in out:
            raise ConfigError(f"workloads[{i}]: {entry['name']} is listed twice")
        out[entry["name"]] = resolve_workload(entry, i, config["train"])
    return out

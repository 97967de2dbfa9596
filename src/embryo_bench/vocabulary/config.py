"""The configuration: its schema (``config/schema.yaml``, the one source of every setting's
type, range and default), reading a configuration file with errors that name file, line and
column, and validating a configuration with the schema's defaults filled in. Imports nothing
else of the package but its errors and :func:`embryo_bench.io.non_finite`, so anything may
use it (:mod:`embryo_bench.planning.plan`
resolves
what a validated configuration asks for; :mod:`embryo_bench.reporting.stability` reads its
thresholds).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators

from ..errors import ConfigError
from ..io import non_finite


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently: a second ``epochs:`` or ``targets:`` replaced the first). Keys brought
    in by a merge key (``<<: *anchor``) may still be overridden, as YAML intends."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if key in first:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"found the key {key!r} twice in one mapping (first on line "
                        f"{first[key].start_mark.line + 1})",
                        key_node.start_mark,
                    )
                first[key] = key_node
        return super().construct_mapping(node, deep=deep)


#: The schema every configuration is validated against (and the source of its defaults).
SCHEMA = Path(__file__).resolve().parents[3] / "config" / "schema.yaml"


def load_schema(path: str | Path | None = None) -> dict:
    """The configuration schema (YAML), ``config/schema.yaml`` of this checkout by default.

    Raises:
        ConfigError: the schema file is missing (e.g. an installed package without the
            repository).
    """
    path = Path(path or SCHEMA)
    try:
        # libyaml's parser where PyYAML has it: the same safe constructors, 10x faster (the
        # schema is read at every Snakefile parse).
        return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: configuration schema not found") from exc


def _validator(schema: dict):
    """A Draft 2020-12 validator that fills in each property's ``default`` as it validates
    (the jsonschema FAQ's recipe, as Snakemake's ``validate`` does)."""
    properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, subschema):
        if isinstance(instance, dict):
            for name, sub in props.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from properties(validator, props, instance, subschema)

    cls = validators.extend(Draft202012Validator, {"properties": set_defaults})
    return cls(schema)


def _where(path) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return text.lstrip(".") or "config"


#: Where a setting came from: (name, settings), e.g. a configuration file's path and what it
#: holds, in the order they were merged (:func:`merge_config`); later ones win.
Source = tuple[str, dict]
_MISSING = object()


def source_of(path, sources: list[Source]) -> str | None:
    """The name of the last of ``sources`` that sets the setting at ``path`` (keys and list
    indices, as jsonschema's ``absolute_path``), i.e. the one whose value was kept when they
    were merged: a list is replaced whole, so whoever set the list set its items. None when
    no source sets it."""
    for name, data in reversed(sources):
        node = data
        for key in path:
            if isinstance(node, list):
                break
            if not isinstance(node, dict) or key not in node:
                node = _MISSING
                break
            node = node[key]
        if node is not _MISSING:
            return name
    return None


def _unknown_keys(error) -> list[str]:
    """The keys an ``additionalProperties: false`` error is about (not among ``properties``,
    matching no ``patternProperties``)."""
    props = error.schema.get("properties", {})
    patterns = error.schema.get("patternProperties", {})
    return [
        k for k in error.instance if k not in props and not any(re.search(p, k) for p in patterns)
    ]


def _describe(error, sources: list[Source]) -> str:
    """One line for a validation error: the source that set the setting (when ``sources``
    are given), the setting, and what was expected."""
    path = list(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and error.validator_value is False:
        path += _unknown_keys(error)[:1]
        known = ", ".join(error.schema.get("properties", {}))
        message = f"unknown setting; expected one of {known} (config/README.md)"
    elif error.validator == "pattern":
        message = f"{error.instance!r} does not match {error.validator_value}"
        if "description" in error.schema:
            message += f" ({error.schema['description']})"
    where = _where(path)
    if not sources:
        return f"{where}: {message}"
    origin = source_of(path, sources) if error.validator != "required" else None
    if origin is None:  # set by none of them (a required setting missing): name them all
        origin = " + ".join(name for name, _ in sources)
    return f"{origin}: {where}: {message}"


def refuse_non_finite(instance, sources: list[Source] = (), origin: str = "") -> None:
    """Refuse a number that is NaN or an infinity anywhere in ``instance`` (YAML reads
    ``.nan``, ``.inf`` and ``-.inf`` as floats, JSON ``NaN`` and ``Infinity``): every
    ``minimum``/``maximum`` of a schema lets NaN through, as each comparison with it is false,
    so a NaN learning rate or ``compare.min_difference`` would otherwise pass every check.

    Args:
        sources: where ``instance`` came from (:data:`Source`): the file that set the number
            is named, as :func:`apply_defaults` names a refused setting's.
        origin: the name of ``instance``'s one source (a file), when ``sources`` are not given.

    Raises:
        ConfigError: one line naming the file (where known), the setting and its value, e.g.
            ``wu.yaml: train.learning_rate: nan: expected a finite number, not NaN or
            infinity``.
    """
    found = non_finite(instance)
    if found is None:
        return
    path, value = list(found[0]), found[1]
    origin = (source_of(path, list(sources)) if sources else None) or origin
    where = f"{origin}: " if origin else ""
    raise ConfigError(
        f"{where}{_where(path)}: {value}: expected a finite number, not NaN or infinity"
    )


def apply_defaults(instance: dict, schema: dict, sources: list[Source] = ()) -> dict:
    """A deep copy of ``instance`` validated against ``schema`` with every default filled in.

    Args:
        instance: the settings.
        schema: the (sub)schema.
        sources: where ``instance`` came from, merged in this order (:data:`Source`): the
            error then names the file that set the setting.

    Raises:
        ConfigError: a number that is NaN or an infinity anywhere in ``instance``
            (:func:`refuse_non_finite`); else the first validation error, naming the setting
            (e.g. ``targets[2].cpus``; an unknown key by its name, with the keys expected
            there) and, with ``sources``, the file whose value was kept, e.g.
            ``short.yaml: train.colour: unknown setting...``.
    """
    refuse_non_finite(instance, sources)
    out = copy.deepcopy(instance)
    errors = sorted(_validator(schema).iter_errors(out), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(_describe(errors[0], list(sources)))
    return out


def read_config_file(path: str | Path) -> dict:
    """Parse a configuration file (YAML, or JSON, which YAML reads too) into a dict.

    Snakemake reports a syntax error in a ``--configfile`` as "not valid JSON or YAML" with
    no location; this names it.

    Raises:
        ConfigError: the file is missing or unreadable; a syntax error or a key given twice
            in one mapping, naming the file, line and column (1-based) and the problem; the
            top level is not a mapping; settings nested more than :data:`MAX_DEPTH` levels,
            or expanding to more than :data:`MAX_VALUES` values; or a number anywhere in it
            is NaN or an infinity (``.nan``, ``.inf``; :func:`refuse_non_finite`), naming
            the file and the setting.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration file ({exc})") from exc
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except RecursionError:  # PyYAML's composer recurses once per level
        raise ConfigError(_too_deep(path)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = f" ({exc.context})" if exc.context else ""
        raise ConfigError(f"{path}{where}: {exc.problem}{context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of settings at the top level, found {type(data).__name__}"
        )
    deepest, values = extent(data, MAX_VALUES)
    if deepest > MAX_DEPTH:
        raise ConfigError(_too_deep(path))
    if values > MAX_VALUES:
        raise ConfigError(
            f"{path}: settings that expand to more than {MAX_VALUES:,} values (YAML aliases of "
            "aliases?); expected a configuration"
        )
    refuse_non_finite(data, origin=str(path))
    return data


#: The most levels of mappings and lists a configuration file may nest (its settings nest 4
#: at most: the file, targets, an entry, its docker_tls): deeper is a damaged or hostile
#: file, which PyYAML (from about 490 levels) ends in a RecursionError.
MAX_DEPTH = 50
#: The most values (mappings, lists and scalars, each alias's expansion counted) a
#: configuration file may hold: the largest shipped one holds about 200. Aliases of aliases
#: (a "billion laughs") are shared when parsed but walked whole by every check after it (the
#: NaN search, the schema), for hours.
MAX_VALUES = 100_000


def _too_deep(path) -> str:
    return (
        f"{path}: settings nested more than {MAX_DEPTH} levels deep; expected a configuration "
        "(its settings nest 4 levels at most)"
    )


def extent(value, limit: int) -> tuple[int, int]:
    """How deep mappings and lists nest in ``value`` (0 for a scalar) and how many values it
    holds, each alias's expansion counted, without recursion; the count stops once it passes
    ``limit`` (the depth is then of the part walked)."""
    deepest, count, todo = 0, 0, [(value, 1)]
    while todo and count <= limit:
        node, level = todo.pop()
        count += 1
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            todo.extend((child, level + 1) for child in children)
    return deepest, count


def merge_config(config: dict, over: Mapping) -> dict:
    """Merge ``over`` into ``config`` in place, as Snakemake merges a second ``--configfile``
    (``snakemake.utils.update_config``; tests/test_config_files.py checks the two agree):
    nested mappings merged key by key, anything else (a list, such as ``targets``, a number)
    replaced by ``over``'s. Written here because Snakemake is an optional dependency of the
    package (``embryo-bench check-config`` runs without it).

    Returns:
        ``config``.
    """
    for key, value in over.items():
        if isinstance(value, Mapping):
            below = config.get(key)
            config[key] = merge_config(below if isinstance(below, Mapping) else {}, value)
        else:
            config[key] = value
    return config


def read_config_files(paths: list[str | Path]) -> tuple[dict, list[Source]]:
    """Read configuration files (:func:`read_config_file`) and merge them in order, as
    ``snakemake --configfile A B`` does (:func:`merge_config`: B's settings over A's).

    Returns:
        (the merged settings, [(path, that file's settings)]: the sources for
        :func:`apply_defaults`, which then names the file that set a refused setting).

    Raises:
        ConfigError: as :func:`read_config_file`, naming the file.
    """
    sources = [(str(p), read_config_file(p)) for p in paths]
    merged: dict = {}
    for _, data in sources:
        merge_config(merged, copy.deepcopy(data))
    return merged, sources


def load_config(config: dict, schema: dict | None = None, sources: list[Source] = ()) -> dict:
    """Validate a configuration and fill in the schema's defaults; checks across settings the
    schema cannot express (the split rule, unique target names, a rotation step that divides
    360, a crop of at least :data:`MIN_CROP_PX`). With ``sources`` (the files it was merged
    from, :func:`read_config_files`), a setting the schema refuses is named with its file.

    Returns:
        a new dict: the configuration with every default.

    Raises:
        ConfigError: naming the setting and what was expected.
    """
    config = apply_defaults(config, schema or load_schema(), sources)
    split = config["split"]
    if split["test_remainder"] >= split["test_mod"]:
        raise ConfigError(
            f"split.test_remainder ({split['test_remainder']}) must be below "
            f"split.test_mod ({split['test_mod']}): no embryo would be in the test split"
        )
    names = [t["name"] for t in config["targets"]]
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise ConfigError(f"targets: name {dup[0]!r} is used twice")
    _check_preprocessing(config["preprocess"], config["dataset"]["frame_size"])
    return config


#: The smallest centre crop (px) the preprocessing accepts: below it every image is nearly
#: constant after equalisation and rotation (a 1x1 px crop trained on nothing).
MIN_CROP_PX = 8


def _check_preprocessing(pp: dict, frame_size: int) -> None:
    """Settings the schema's ranges cannot express.

    Raises:
        ConfigError: a rotation step that does not divide 360 (the last gap would differ:
            7 gives 51 angles and a 10 degree gap), or a crop under :data:`MIN_CROP_PX`.
    """
    step = float(pp["rotation_step"])
    turns = 360.0 / step
    if abs(turns - round(turns)) > 1e-9:
        raise ConfigError(
            f"preprocess.rotation_step {pp['rotation_step']}: does not divide 360 "
            f"({int(turns)} angles and a last gap of {360 - int(turns) * step:g} degrees); "
            "use a divisor of 360 (paper: 18, 20 rotations)"
        )
    crop = round(pp["crop_fraction"] * frame_size)
    if crop < MIN_CROP_PX:
        raise ConfigError(
            f"preprocess.crop_fraction {pp['crop_fraction']}: a {crop} px crop of "
            f"{frame_size} px frames; the crop needs at least {MIN_CROP_PX} px"
        )

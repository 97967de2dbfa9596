"""The configuration: its schema (``config/schema.yaml``, the one source of every setting's
type, range and default), reading a configuration file with errors that name file, line and
column, and validating a configuration with the schema's defaults filled in. Imports nothing
else of the package but its errors, so anything may use it (:mod:`embryo_bench.plan` resolves
what a validated configuration asks for; :mod:`embryo_bench.stability` reads its thresholds).
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators

from .errors import ConfigError


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently: a second ``epochs:`` or ``targets:`` replaced the first, issue 25). Keys brought
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
SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


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


def _where(error) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "config"


def apply_defaults(instance: dict, schema: dict) -> dict:
    """A deep copy of ``instance`` validated against ``schema`` with every default filled in.

    Raises:
        ConfigError: the first validation error, naming the setting (e.g. ``targets[2].cpus``).
    """
    out = copy.deepcopy(instance)
    errors = sorted(_validator(schema).iter_errors(out), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(f"{_where(errors[0])}: {errors[0].message}")
    return out


def read_config_file(path: str | Path) -> dict:
    """Parse a configuration file (YAML, or JSON, which YAML reads too) into a dict.

    Snakemake reports a syntax error in a ``--configfile`` as "not valid JSON or YAML" with
    no location (issue 12, item 7); this names it.

    Raises:
        ConfigError: the file is missing or unreadable; a syntax error or a key given twice
            in one mapping, naming the file, line and column (1-based) and the problem; or
            the top level is not a mapping.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration file ({exc})") from exc
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
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
    return data


def load_config(config: dict, schema: dict | None = None) -> dict:
    """Validate a configuration and fill in the schema's defaults; checks across settings the
    schema cannot express (the split rule, unique target names, a rotation step that divides
    360, a crop of at least :data:`MIN_CROP_PX`).

    Returns:
        a new dict: the configuration with every default.

    Raises:
        ConfigError: naming the setting and what was expected.
    """
    config = apply_defaults(config, schema or load_schema())
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
#: constant after equalisation and rotation (issue 25: a 1x1 px crop trained on nothing).
MIN_CROP_PX = 8


def _check_preprocessing(pp: dict, frame_size: int) -> None:
    """Settings the schema's ranges cannot express (issue 25, item 4).

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

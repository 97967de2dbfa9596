"""What the settings files' typed records share (:mod:`embryo_bench.vocabulary.spec`'s
``run.json``, :mod:`embryo_bench.vocabulary.figspec`'s ``figures-spec.json``): one pydantic
model a file, whose JSON schema is derived from it, and the one line a bad file is refused in.

* :class:`Record`: a frozen, strict pydantic model that refuses unknown keys, NaN and
  infinities (a JSON ``"2"`` or ``true`` is not an integer, a ``1`` is a float).
* :func:`key_errors`, :func:`first_error`, :func:`at`, :func:`subschema`, :func:`allowed`:
  a pydantic ``ValidationError`` read back as the key it names, its value and what the
  derived schema allows, in words.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError


class Record(BaseModel):
    """A settings file's record: immutable, every field typed and checked when it is made.

    Strict, because a settings file is read from JSON, where ``"2"`` (text) and ``true`` are
    not the integer 2 or 1 and a lax model would take them; an ``int`` is taken where a float
    is expected and kept as a float (YAML and JSON read ``1`` as an int and Keras refuses it:
    ``learning_rate: 1`` once passed every check and crashed every training, so ``run.json``
    records ``1.0``). NaN and infinities are refused: every range lets NaN through.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    def replace(self, **changes) -> Record:
        """A copy with ``changes``, checked as a new record is (pydantic's own
        ``model_copy(update=...)`` checks nothing, not even the rules across fields).

        Raises:
            pydantic.ValidationError: a changed value of the wrong type or out of range;
            or what the record's rules across fields raise.
        """
        return type(self)(**{**dict(self), **changes})


#: pydantic's error types for a key that is not a field and a field that is not given.
UNKNOWN, MISSING = "extra_forbidden", "missing"


def key_errors(exc: ValidationError) -> tuple[str, list[str], str] | None:
    """The first unknown or missing keys among ``exc``'s errors (unknown keys first, then by
    where): ``("unknown" or "missing", the keys sorted, the dotted path of the object that
    holds them, "" at the top)``; None when no key is unknown or missing."""
    groups: dict[tuple[bool, tuple], list[str]] = {}
    for error in exc.errors():
        if error["type"] in (UNKNOWN, MISSING):
            *parent, key = error["loc"]
            groups.setdefault((error["type"] == MISSING, tuple(parent)), []).append(str(key))
    if not groups:
        return None
    (missing, parent), keys = min(groups.items(), key=lambda g: (g[0][0], list(map(str, g[0][1]))))
    return ("missing" if missing else "unknown", sorted(keys), ".".join(map(str, parent)))


def first_error(exc: ValidationError, data) -> tuple[tuple, object]:
    """The first of ``exc``'s errors by where it is (its keys sorted as text, the innermost
    first), as its path in
    ``data`` (the keys and list indices that lead to the value: pydantic's path also names the
    branch of a union tried, which ``data`` does not hold) and the value there."""
    # A value inside another before it: a list's wrong item, not the list's length.
    paths = sorted(
        (at(data, e["loc"]) for e in exc.errors()), key=lambda p: [*map(str, p), "\uffff"]
    )
    path = paths[0]
    value = data
    for key in path:
        value = value[key]
    return path, value


def at(data, loc: tuple) -> tuple:
    """The longest start of ``loc`` that leads through ``data`` (mappings and lists)."""
    path = []
    for key in loc:
        inside = isinstance(data, dict) and key in data
        inside |= isinstance(data, list | tuple) and isinstance(key, int) and key < len(data)
        if not inside:
            break
        data = data[key]
        path.append(key)
    return tuple(path)


def subschema(schema: dict, path: tuple) -> dict:
    """The part of a model's JSON schema (``model_json_schema()``) that ``path`` (keys and
    list indices) leads to, its references followed and an optional's null left out."""
    node = _resolved(schema, schema)
    for key in path:
        node = _not_null(schema, node)
        if isinstance(key, int) and "items" in node:
            node = node["items"]
        elif key in node.get("properties", {}):
            node = node["properties"][key]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return node
        node = _resolved(schema, node)
    return node


def _resolved(schema: dict, node: dict) -> dict:
    """``node`` with its ``$ref`` followed into ``schema``'s ``$defs``."""
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _not_null(schema: dict, node: dict) -> dict:
    """An optional's schema without its null (what a key inside it must be)."""
    options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
    return _resolved(schema, options[0]) if len(options) == 1 else node


def allowed(schema: dict, root: dict | None = None) -> str:
    """What a (sub)schema allows, in words, e.g. "an integer >= 1", "one of ['host',
    'docker']" or "null or an object"; ``root`` is the whole schema, for references."""
    root = root if root is not None else schema
    schema = _resolved(root, schema)
    if "enum" in schema:
        return f"one of {schema['enum']}"
    if "anyOf" in schema:  # null first: "null or an object", as the file may hold null
        options = sorted(schema["anyOf"], key=lambda s: s.get("type") != "null")
        return " or ".join(allowed(s, root) for s in options)
    kind = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "a boolean",
        "array": "a list",
        "object": "an object",
        "null": "null",
    }.get(schema.get("type"), "a value")
    bounds = [
        f"{op} {schema[key]}"
        for key, op in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        )
        if key in schema
    ]
    if "minItems" in schema or "maxItems" in schema:
        bounds.append(f"of {schema.get('minItems', 0)} to {schema.get('maxItems', 'any')} items")
    if "pattern" in schema:
        bounds.append(f"matching {schema['pattern']}")
    return " ".join([kind, " and ".join(bounds)]).strip()

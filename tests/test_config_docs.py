"""config/README.md describes every configuration key: it is rendered from the schema and
must equal the rendering; the renderer itself covers every key and default."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from embryo_bench.planning.configdoc import render
from embryo_bench.vocabulary.config import load_schema

REPO = Path(__file__).resolve().parents[1]


def _keys(node: dict, path: str = ""):
    """(dotted key path, subschema) of every key, ``[]`` for list entries."""
    for key, sub in node.get("properties", {}).items():
        full = f"{path}.{key}" if path else key
        yield full, sub
        if sub.get("type") == "object":
            yield from _keys(sub, full)
        elif sub.get("type") == "array" and sub.get("items", {}).get("type") == "object":
            yield from _keys(sub["items"], f"{full}[]")


def _conditional_defaults(node: dict, path: str = "") -> dict[str, str]:
    """Dotted key path -> the kind its ``allOf`` if/then rule fills its default in for, e.g.
    dataset.url's (the paper's database)."""
    out = {}
    for rule in node.get("allOf", []):
        kind = rule["if"]["properties"]["kind"]
        values = kind.get("enum") or [kind["const"]]
        for key, sub in rule["then"].get("properties", {}).items():
            if "default" in sub:
                when = " or ".join(f"`{v}`" for v in values)
                out[f"{path}.{key}" if path else key] = (sub["default"], when)
    for key, sub in node.get("properties", {}).items():
        if sub.get("type") == "object":
            out |= _conditional_defaults(sub, f"{path}.{key}" if path else key)
    return out


def test_config_readme_is_the_schema_rendered():
    written = (REPO / "config" / "README.md").read_text()
    assert written == render(load_schema()), (
        "config/README.md differs from config/schema.yaml; regenerate it with "
        "`python -m embryo_bench.planning.configdoc > config/README.md`"
    )


def _default_cell(value) -> str:
    """How the reference writes a default: strings as they are ("" when empty), everything
    else as JSON."""
    return f"`{value}`" if isinstance(value, str) and value else f"`{json.dumps(value)}`"


def test_every_key_has_a_row_with_its_default_and_meaning():
    schema = load_schema()
    rows = {}
    for line in render(schema).splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells
    keys = dict(_keys(schema))
    conditional = _conditional_defaults(schema)
    assert not set(keys) - set(rows), f"keys without a row: {sorted(set(keys) - set(rows))}"
    assert not set(rows) - set(keys), f"rows without a key: {sorted(set(rows) - set(keys))}"
    for key, sub in keys.items():
        assert sub.get("description"), f"{key}: no description in the schema"
        expected = _default_cell(sub["default"]) if "default" in sub else ""
        if key in conditional:  # a default for one kind of the section (dataset.url)
            value, when = conditional[key]
            expected = f"{_default_cell(value)} (when `kind` is {when})"
        if "x-default-by-runner" in sub:  # a default per runner (targets[].memory)
            expected = ", ".join(
                f"{_default_cell(v)} ({r})" for r, v in sub["x-default-by-runner"].items()
            )
        assert rows[key][3] == expected, (key, rows[key][3], expected)
    assert rows["targets[].memory"][3] == "`4g` (docker), `8g` (host)"
    assert rows["dataset.url"][3].endswith("(when `kind` is `mouse-embryo-tracking-db`)")


def test_a_new_schema_key_changes_the_reference():
    schema = load_schema()
    grown = copy.deepcopy(schema)
    grown["properties"]["train"]["properties"]["warmup"] = {
        "type": "integer",
        "default": 2,
        "description": "epochs of warm-up",
    }
    text = render(grown)
    assert text != render(schema)
    assert "| `train.warmup` | integer | no | `2` |  | epochs of warm-up |" in text

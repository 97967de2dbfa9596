"""The configuration reference, ``config/README.md``, rendered from ``config/schema.yaml``.

The schema is the one source of every key, its type, range, default and meaning; this module
turns it into Markdown tables (one per section) so the reference cannot drift from it
(``tests/test_config_docs.py`` checks the file equals :func:`render`). Regenerate with::

    python -m embryo_bench.planning.configdoc > config/README.md
"""

from __future__ import annotations

import json
import re
import sys

from ..studies.docs import config_list
from ..studies.registry import studies
from ..vocabulary.config import load_schema

#: Where :data:`INTRO` lists the studies' configurations (rendered from their folders).
STUDIES = "{studies}"
INTRO = """\
# Configuration reference

Every configuration is validated against [`schema.yaml`](schema.yaml) before any job runs:
unknown keys, wrong types and impossible values are rejected with the key's name. The schema
is also where defaults come from (`embryo_bench.planning.plan` fills them in once); defaults that
depend on other settings (a target's `threads` = its `cpus`, say) are resolved in
`embryo_bench.planning.targets.resolve_target` and are written as "default: ..." in the meaning
column. This file is rendered from the schema (`python -m embryo_bench.planning.configdoc >
config/README.md`); a test fails when the two differ.

The shipped configurations:

- [`config.yaml`](config.yaml): the real database (downloaded), the paper's settings and
  analogues of its six systems; the default.
- [`offline.yaml`](offline.yaml): synthetic frames in the database layout; the offline demo
  and the tests.
- [`cells28.yaml`](cells28.yaml): the real 28 px subset (`imagefolder`); real-image accuracy
  on a small machine.
- [`paper-synthetic.yaml`](paper-synthetic.yaml): `config.yaml` on synthetic frames at the
  paper's size (100 embryos of 480 px, 34,133 labelled frames, 766 with 3 cells).
- [`offline-rounds.yaml`](offline-rounds.yaml): the offline demo's targets in 5 interleaved
  rounds, with an A/A pair: the check of the paired comparison.
- [`studies-synthetic.yaml`](studies-synthetic.yaml): every workload of the studies' catalog
  (`embryo-bench workloads`) on synthetic arrays of its dataset's shape, the image workloads
  also from files, on one and two cores, in rounds.
- [`minimal.yaml`](minimal.yaml) and [`my-model.yaml`](my-model.yaml): the least a
  configuration needs (outdir, targets, workloads): a catalog workload on SYNTHETIC arrays,
  and a model of your own (`examples/my_model.py`) on MNIST, each on two host targets.

The studies' configurations, each a link to its study's folder (docs/studies/README.md):

{studies}

A `--configfile` replaces `config.yaml` rather than being merged into it; a second file after
it (`--configfile config/paper-synthetic.yaml short.yaml`) is merged over the first, key by key
(lists, such as `targets`, are replaced). Top-level keys
starting with `x-` are ignored by the workflow: use them for YAML anchors (a price source
shared by several targets, say).
"""


def _code(value) -> str:
    return f"`{value if isinstance(value, str) and value else json.dumps(value)}`"


def _type(sub: dict) -> str:
    if "enum" in sub:
        return "one of " + ", ".join(_code(v) for v in sub["enum"])
    if "const" in sub:
        return _code(sub["const"])
    kind = sub.get("type", "any")
    if kind == "array" and "items" in sub and sub["items"].get("type") != "object":
        return f"list of {_type(sub['items'])}"
    if kind == "array":
        return "list of objects"
    return kind


def _range(sub: dict) -> str:
    parts = []
    for key, text in (
        ("minimum", ">= {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "<= {}"),
        ("exclusiveMaximum", "< {}"),
    ):
        if key in sub:
            parts.append(text.format(sub[key]))
    if sub.get("minLength") == 1 or sub.get("minItems") == 1:
        parts.append("not empty")
    if "pattern" in sub:
        parts.append(f"matches `{sub['pattern']}`")
    if sub.get("uniqueItems"):
        parts.append("no repeats")
    items = sub.get("items", {})
    if sub.get("type") == "array" and items.get("type") != "object":
        parts += [f"each {p}" for p in _range(items).split("; ") if p]
    return "; ".join(parts)


def _text(description: str) -> str:
    """A description on one line, tokens with <placeholders> as code (Markdown would read
    them as HTML tags), pipes escaped."""
    text = re.sub(r"([^\s(]*<[^\s>]+>[^\s,;)]*)", r"`\1`", " ".join(description.split()))
    return text.replace("|", "\\|")


def _conditions(node: dict) -> tuple[dict[str, str], dict[str, str]]:
    """From ``allOf`` if/then rules on a ``kind`` key: (key -> "when kind is ..." for the
    keys a rule requires, key -> "`default` (when kind is ...)" for the defaults a rule
    fills in)."""
    required, defaults = {}, {}
    for rule in node.get("allOf", []):
        kind = rule.get("if", {}).get("properties", {}).get("kind", {})
        values = kind.get("enum") or ([kind["const"]] if "const" in kind else [])
        when = "when `kind` is " + " or ".join(f"`{v}`" for v in values)
        then = rule.get("then", {})
        for key in then.get("required", []):
            required[key] = when
        for key, sub in then.get("properties", {}).items():
            if "default" in sub:
                defaults[key] = f"{_code(sub['default'])} ({when})"
    return required, defaults


def _rows(node: dict, path: str) -> list[str]:
    required = set(node.get("required", []))
    conditions, conditional_defaults = _conditions(node)
    rows = []
    for key, sub in node.get("properties", {}).items():
        full = f"{path}.{key}" if path else key
        need = "yes" if key in required else conditions.get(key, "no")
        default = _code(sub["default"]) if "default" in sub else ""
        default = default or conditional_defaults.get(key, "")
        if "x-default-by-runner" in sub:  # a default that depends on the target's runner
            default = ", ".join(
                f"{_code(v)} ({runner})" for runner, v in sub["x-default-by-runner"].items()
            )
        meaning = _text(sub.get("description", ""))
        cells = [f"`{full}`", _type(sub), need, default, _range(sub), meaning]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _sections(node: dict, path: str, title: str) -> list[tuple[str, str, list[str]]]:
    """(heading, description, table rows) of ``node`` and of every object below it."""
    out = [(title, _text(node.get("description", "")), _rows(node, path))]
    for key, sub in node.get("properties", {}).items():
        full = f"{path}.{key}" if path else key
        if sub.get("type") == "object" and "properties" in sub:
            out += _sections(sub, full, f"`{full}`")
        elif sub.get("type") == "array" and sub.get("items", {}).get("type") == "object":
            out += _sections(sub["items"], f"{full}[]", f"`{full}[]` (each entry)")
    return out


def render(schema: dict) -> str:
    """The reference as Markdown: the introduction, then one table per object of the schema
    (top level, then each section, depth first) with each key's dotted path (``[]`` for list
    entries), type, whether it is required, default, range and meaning."""
    parts = [INTRO.replace(STUDIES, config_list(studies()))]
    header = "| key | type | required | default | range | meaning |\n|---|---|---|---|---|---|"
    for title, description, rows in _sections(schema, "", "Top level"):
        parts.append(f"## {title}\n")
        if description:
            parts.append(description + "\n")
        parts.append(header + "\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def main() -> None:
    """Print the reference of this checkout's schema."""
    sys.stdout.write(render(load_schema()))


if __name__ == "__main__":
    main()

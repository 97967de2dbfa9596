"""The package's import graph: no circles, and package imports at the top
of each module, so the dependencies can be read off its first lines (and each rule's code
hash, which follows the imports, covers what that command really runs). Its subpackages sit
in layers (:data:`LAYERS`): a layer imports only layers below it, so no two subpackages import
each other."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from embryo_bench.vocabulary.codehash import PACKAGE, imported_modules

SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
#: Package imports that must wait inside a function, and why. The commands (the stages' modules
#: of ``commands/``) import what each needs when it runs (the code hashes follow each
#: command's own imports, and a command's start loads no other command's modules).
LATE = {
    ("training.train", "workloads.paper"): (
        "the model module imports Keras, which must wait for the backend choice"
    ),
    ("training.train", "workloads.build"): "the same: it imports Keras",
    ("workloads.build", "workloads.fused_adam"): (
        "it imports TensorFlow, which only the tensorflow backend may load"
    ),
    ("planning.rounds", "reporting.rounds"): (
        "it imports scipy.stats (about a second), and the plan is read at every start of the "
        "workflow: only compare.noise needs it"
    ),
}
PREFIX = PACKAGE + "."
#: The package's layers, bottom first: the top-level modules and subpackages (by their first
#: name under the package); a module imports only its own layer's and lower layers'. Every
#: import counts, those inside functions too (docs/architecture.md says what each layer is).
LAYERS = (
    "errors",
    "io",
    "vocabulary",
    "studies",
    "workloads",
    "published",
    "data",
    "recording",
    "runners",
    "training",
    "launch",
    "reporting",
    "planning",
    "commands",
    "cli",
)

#: A study's folder (``studies/<study>/``) is one study's slice through the layers, not a layer:
#: each of its modules sits in the layer of what it holds, by its name. The ``studies`` layer
#: itself is the registry, which finds the folders and reads their ``study.yaml`` (the catalog
#: gathers the studies' workloads through it). A module of another name is in no layer: name
#: its layer here.
STUDY_MODULES = {
    # builders of the study's workloads: the trainer imports them by their path, in a
    # container too, so they import no more than the workloads layer may
    "models": "workloads",
    # the study's numbers read from its own sources (minimaxir's per-epoch logs)
    "logs": "published",
    # its headline claims checked on our runs: the claims' shared checks are reporting's
    "claims": "reporting",
}
#: The modules of the package that import a study's own module by name (``import``), and
#: why; every other import of one is by its dotted name at run time (a builder's path, a
#: study's claims module), so that adding a study changes no module outside its folder.
STUDY_IMPORTERS = {
    name: "the builder paths the catalog and every run spec name, kept where they were"
    for name in ("workloads.datamadness", "workloads.minimaxir", "workloads.wu",
                 "workloads.catsdogs")
}  # fmt: skip


def _modules() -> dict[str, ast.Module]:
    """Every module of the package (subpackages included, their ``__init__`` left out) by
    its dotted name under the package: ``training.train``."""
    return {
        ".".join(f.relative_to(SRC).with_suffix("").parts): ast.parse(f.read_text())
        for f in sorted(SRC.rglob("*.py"))
        if f.name != "__init__.py"
    }


def _imports(nodes: list[ast.AST], name: str, known) -> set[str]:
    """The modules of ``known`` that ``nodes`` (statements of module ``name``) import."""
    found = (m.removeprefix(PREFIX) for m in imported_modules(nodes, PREFIX + name))
    return {m for m in found if m in known}


def _graph(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere (top or inside functions)."""
    return {name: _imports(tree.body, name, modules) for name, tree in modules.items()}


@functools.cache
def _package_graph() -> dict[str, set[str]]:
    """:func:`_graph` of the package's modules, made once for the tests that read it."""
    return _graph(_modules())


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """The first import circle found (depth first, in name order), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_circle():
    circle = _circle(_package_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_package_imports_sit_at_the_top_of_each_module():
    late = set()
    modules = _modules()
    for name, tree in modules.items():
        if name == "cli" or name.startswith("commands."):
            continue
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level and id(node) not in top:
                late |= {(name, target) for target in _imports([node], name, modules)}
    assert late == set(LATE), f"imports inside functions: {sorted(late - set(LATE))}"


def _layer(module: str) -> str:
    """The layer of a module: its first name under the package (``training.train`` ->
    ``training``, ``cli`` -> ``cli``); a study's own module, the layer of what it holds
    (:data:`STUDY_MODULES`: ``studies.wu.claims`` -> ``reporting``)."""
    parts = module.split(".")
    if parts[0] == "studies" and len(parts) == 3:
        return STUDY_MODULES.get(parts[2], module)
    return parts[0]


def _layer_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(layer, layer it imports) -> the imports between them (``a -> b``), for every import
    across two layers."""
    edges: dict[tuple[str, str], list[str]] = {}
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _layer(name) != _layer(target):
                edges.setdefault((_layer(name), _layer(target)), []).append(f"{name} -> {target}")
    return edges


def _both_ways(graph: dict[str, set[str]]) -> list[str]:
    """Every two layers that import each other, with the imports each way."""
    edges = _layer_edges(graph)
    return [
        f"{a} <-> {b}: {', '.join(edges[(a, b)] + edges[(b, a)])}"
        for a, b in sorted(edges)
        if a < b and (b, a) in edges
    ]


def _upward(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """Every import of a higher layer by a lower one (and of a module in no layer)."""
    rank = {name: k for k, name in enumerate(layers)}
    unknown = sorted({_layer(m) for m in graph} - rank.keys())
    return [f"{name}: in no layer of LAYERS" for name in unknown] + [
        f"{a} imports {b}, a higher layer: {', '.join(imports)}"
        for (a, b), imports in sorted(_layer_edges(graph).items())
        if a in rank and b in rank and rank[b] > rank[a]
    ]


def test_no_two_subpackages_import_each_other():
    both = _both_ways(_package_graph())
    assert both == [], "imports both ways:\n" + "\n".join(both)


def test_a_layer_imports_only_the_layers_below_it():
    upward = _upward(_package_graph())
    assert upward == [], "\n".join(upward)


def test_every_layer_is_a_part_of_the_package():
    """LAYERS names what exists: a moved or renamed subpackage is named again."""
    assert sorted({_layer(m) for m in _package_graph()}) == sorted(LAYERS)


def test_the_layer_checks_count_a_function_level_import():
    """The checks on made-up modules, so that they can fail: a low module imports a high one
    inside a function."""
    modules = {
        "low.a": ast.parse("def f():\n    from ..high.b import x\n"),
        "high.b": ast.parse("from ..low.a import y\n"),
    }
    graph = _graph(modules)
    assert _both_ways(graph) == ["high <-> low: high.b -> low.a, low.a -> high.b"]
    assert _upward(graph, ("low", "high")) == ["low imports high, a higher layer: low.a -> high.b"]
    del modules["low.a"]
    modules["low.c"] = ast.parse("x = 1\n")
    assert _both_ways(_graph(modules)) == _upward(_graph(modules), ("low", "high")) == []


def test_the_check_finds_a_circle_through_a_function_level_import():
    """The check on made-up modules, so that it can fail: a imports b at the top, b imports
    a inside a function."""
    modules = {
        "a": ast.parse("from .b import x\n"),
        "b": ast.parse("def f():\n    from .a import y\n"),
        "c": ast.parse("from . import a\n"),
    }
    assert _circle(_graph(modules)) == ["a", "b", "a"]
    del modules["b"]
    assert _circle(_graph(modules)) is None


def test_only_a_studys_own_folder_imports_its_modules():
    """A study's modules are imported by name at run time (its builders, its claims), by the
    modules of its own folder and by :data:`STUDY_IMPORTERS`: a new study is its folder."""
    found = {
        (name, target)
        for name, targets in _package_graph().items()
        for target in targets
        if target.count(".") == 2
        and target.startswith("studies.")
        and not name.startswith(target.rpartition(".")[0] + ".")
    }
    assert {name for name, _ in found} == set(STUDY_IMPORTERS), sorted(found)


def test_a_studys_modules_sit_in_the_layers_of_what_they_hold():
    modules = {m for m in _package_graph() if m.startswith("studies.") and m.count(".") == 2}
    assert {m.rpartition(".")[2] for m in modules} <= set(STUDY_MODULES), sorted(modules)
    assert _layer("studies.wu.claims") == "reporting" and _layer("studies.registry") == "studies"
    assert _layer("studies.wu.notes") == "studies.wu.notes"  # in no layer: the check names it

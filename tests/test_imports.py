"""The package's import graph (issue 24, item 1): no circles, and package imports at the top
of each module, so the dependencies can be read off its first lines (and each rule's code
hash, which follows the imports, covers what that command really runs)."""

from __future__ import annotations

import ast
from pathlib import Path

from embryo_bench.vocabulary.codehash import PACKAGE, imported_modules

SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
#: Package imports that must wait inside a function, and why. cli.py's commands import what
#: each needs when it runs (the code hashes follow each command's own imports).
LATE = {
    ("training.train", "workloads.paper"): (
        "the model module imports Keras, which must wait for the backend choice"
    ),
    ("training.train", "workloads.build"): "the same: it imports Keras",
    ("workloads.build", "workloads.fused_adam"): (
        "it imports TensorFlow, which only the tensorflow backend may load"
    ),
}
PREFIX = PACKAGE + "."


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
    circle = _circle(_graph(_modules()))
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_package_imports_sit_at_the_top_of_each_module():
    late = set()
    modules = _modules()
    for name, tree in modules.items():
        if name == "cli":
            continue
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level and id(node) not in top:
                late |= {(name, target) for target in _imports([node], name, modules)}
    assert late == set(LATE), f"imports inside functions: {sorted(late - set(LATE))}"


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

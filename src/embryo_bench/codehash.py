"""Hashes of the package code a workflow rule runs, so that a code change reruns exactly the
jobs that run that code.

Snakemake does not track imported code. Each rule therefore carries, as a ``params:`` value,
:func:`code_hash` of the command it runs: the command's function in ``cli.py`` (a
``cmd_<name>`` function) with ``cli.py``'s shared code, and every module of the package that
they import, followed transitively (``import``/``from ... import`` anywhere in a module,
also inside functions). Nothing is listed by hand, so the hash cannot drift from the imports.

What is hashed is code, not text: each module's syntax tree (:func:`ast.dump`, without line
numbers) with its docstrings removed. Comments, docstrings, blank lines and formatting change
nothing; any change to what the code does (a statement, a name, a constant) changes the hash.
The tree's shape can differ between Python versions, so a new interpreter reruns everything
once.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = "embryo_bench"
ROOT = Path(__file__).resolve().parent
#: The module whose ``cmd_<name>`` functions are the workflow's commands.
CLI = f"{PACKAGE}.cli"
COMMAND_PREFIX = "cmd_"


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Remove the docstring of the module and of every class and function, in place."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


def module_path(module: str, root: Path = ROOT) -> Path:
    """The source file of a package module (``embryo_bench.io`` -> ``.../io.py``).

    Raises:
        FileNotFoundError: no such module in the package.
    """
    parts = module.split(".")
    if parts[0] != PACKAGE:
        raise FileNotFoundError(f"{module}: not a module of {PACKAGE}")
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{module}: no {base}.py in the package")


@cache
def _parse(text: str, filename: str) -> ast.Module:
    return _strip_docstrings(ast.parse(text, filename=filename))


def _tree(path: Path) -> ast.Module:
    """The module's syntax tree without docstrings (cached by content: an edited file is
    parsed again)."""
    return _parse(path.read_text(), str(path))


def normalised(node: ast.AST) -> str:
    """The code of a syntax tree as text, without positions (see the module docstring)."""
    return ast.dump(node, annotate_fields=False, include_attributes=False)


@cache
def _dump(text: str, filename: str) -> str:
    return normalised(_parse(text, filename))


def _module_code(module: str, root: Path) -> str:
    path = module_path(module, root)
    return module + "\0" + _dump(path.read_text(), str(path))


def _is_package(module: str, root: Path) -> bool:
    try:
        return module_path(module, root).name == "__init__.py"
    except FileNotFoundError:
        return False


def imported_modules(nodes: list[ast.AST], module: str, root: Path = ROOT) -> set[str]:
    """Package modules imported anywhere inside ``nodes`` (statements of ``module``):
    relative and absolute imports, ``from . import x`` counting ``x`` when it is a module."""
    package = module if _is_package(module, root) else module.rpartition(".")[0]
    found = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != PACKAGE:
                    continue
                found.add(target)
                for alias in node.names:  # from . import paper: paper is a module
                    sub = f"{target}.{alias.name}"
                    try:
                        module_path(sub, root)
                        found.add(sub)
                    except FileNotFoundError:
                        pass
    return {m for m in found if m != module}


def closure(modules: set[str], root: Path = ROOT) -> set[str]:
    """``modules`` and every package module they import, transitively (with the package's
    ``__init__``, which every import runs).

    Raises:
        FileNotFoundError: a module is not in the package.
    """
    todo, seen = set(modules) | {PACKAGE}, set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = module_path(module, root)
        todo |= _module_imports(path.read_text(), str(path), module, str(root)) - seen
    return seen


@cache
def _module_imports(text: str, filename: str, module: str, root: str) -> frozenset[str]:
    """:func:`imported_modules` of a whole module, cached by its content (every rule's hash
    walks the same modules: 14 hashes took 0.8 s, most of a no-op dry run's own time)."""
    return frozenset(imported_modules(_parse(text, filename).body, module, Path(root)))


def _cli_parts(command: str, root: Path) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """(shared statements of cli.py, the command's ``cmd_<name>`` function)."""
    tree = _tree(module_path(CLI, root))
    func = COMMAND_PREFIX + command.replace("-", "_")
    shared = [
        n
        for n in tree.body
        if not (isinstance(n, ast.FunctionDef) and n.name.startswith(COMMAND_PREFIX))
    ]
    own = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func]
    if not own:
        raise FileNotFoundError(f"{CLI}: no command {command!r} (function {func})")
    return shared, own


def code_hash(*entries: str, root: Path = ROOT) -> str:
    """sha256 (16 hex digits) of the code that ``entries`` run.

    Args:
        entries: ``cli:<command>`` (an ``embryo-bench`` command as the rules run it: its
            ``cmd_<name>`` function and cli.py's shared code) or a module name
            (``embryo_bench.stages``); each with its import closure.
        root: the package folder (default: this one's).

    Raises:
        FileNotFoundError: no such command or module.
    """
    root = Path(root)
    parts: list[str] = []
    modules: set[str] = set()
    commands = [e[4:] for e in entries if e.startswith("cli:")]
    for command in commands:
        shared, own = _cli_parts(command, root)
        parts += [normalised(n) for n in shared + own]
        modules |= imported_modules(shared + own, CLI, root)
    modules |= {e for e in entries if not e.startswith("cli:")}
    # cli.py enters as the commands' parts above, not whole (another command's edit is not
    # this command's), unless a module imports it.
    skip = {CLI} if commands and CLI not in modules else set()
    parts += [_module_code(m, root) for m in sorted(closure(modules, root) - skip)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def module_closure(*entries: str, root: Path = ROOT) -> list[str]:
    """The package modules :func:`code_hash` covers for ``entries``, sorted (for logs and
    tests; ``embryo_bench.cli`` stands for the commands' parts of it)."""
    root = Path(root)
    modules: set[str] = set()
    commands = False
    for entry in entries:
        if entry.startswith("cli:"):
            shared, own = _cli_parts(entry[4:], root)
            modules |= imported_modules(shared + own, CLI, root)
            commands = True
        else:
            modules.add(entry)
    return sorted(closure(modules, root) | ({CLI} if commands else set()))

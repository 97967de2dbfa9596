"""Hashes of the package code a workflow rule runs, so that a code change reruns exactly the
jobs that run that code.

Snakemake does not track imported code. Each rule therefore carries, as a ``params:`` value,
:func:`code_hash` of the command it runs: the command's ``cmd_<name>`` function in its stage's
module of :data:`COMMANDS` (``commands/prepare.py``, ``commands/train.py``, ...) with that
module's shared code (all but its ``cmd_`` functions), ``cli.py`` (the parser and the
dispatch every command runs through) and every module of the package that they import,
followed transitively (``import``/``from ... import`` anywhere in a module, also inside
functions). ``cli.py``'s imports of the stages' modules are left out (it imports them all to
list their commands; a command runs its own stage's code), so an edit to one stage's module
reruns none of the other stages' jobs, while an edit to ``cli.py`` or to a module they all
import reruns them all. Nothing is listed by hand, so the hash cannot drift from the imports.

What is hashed is code, not text: each module's syntax tree (:func:`ast.dump`, without line
numbers) with its docstrings removed. Comments, docstrings, blank lines and formatting change
nothing; any change to what the code does (a statement, a name, a constant) changes the hash.
The tree's shape can differ between Python versions, so a new interpreter reruns everything
once.

Every Snakefile parse (a dry run included) asks for the hash of each rule's command; parsing
and dumping the package's modules is most of that work. A hash is therefore kept, once
computed, in the package's ``__pycache__`` (:data:`CACHE_FILE`) under a key of everything it
depends on (:func:`source_key`: every ``.py`` file of the package by name and content, the
Python version and this module's own code), so a later process reads it instead while no file
of the package has changed; any change, a comment included, is a new key and computes again.
"""

from __future__ import annotations

import ast
import hashlib
import json
import locale
import os
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

PACKAGE = "embryo_bench"
ROOT = Path(__file__).resolve().parents[1]
#: The module that parses and dispatches the workflow's commands.
CLI = f"{PACKAGE}.cli"
#: The package of the stages' command modules: each of its modules holds ``cmd_<name>``
#: functions, one a command.
COMMANDS = f"{PACKAGE}.commands"
COMMAND_PREFIX = "cmd_"
#: Hashes computed before, relative to the package folder (:func:`code_hash`).
CACHE_FILE = "__pycache__/embryo_bench-codehash.json"
#: This module's own code as it was imported: a change to how hashes are made is a new key.
_IMPLEMENTATION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


#: The fields that hold nested statements (bodies, branches, handlers, match cases): every
#: ``import`` and every ``def``/``class`` is a statement reached through these, never inside an
#: expression, so a walk of them finds what :func:`ast.walk` over every node would
#: (walking every expression node was most of the hashing time of a dry run).
STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_DEFS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def statements(nodes) -> list[ast.AST]:
    """``nodes`` and every statement nested in them (plus the except handlers and match
    cases that hold statements), in no particular order."""
    todo, out = list(nodes), []
    while todo:
        node = todo.pop()
        out.append(node)
        for field in STATEMENT_FIELDS:
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(children)
    return out


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Remove the docstring of the module and of every class and function, in place."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFS):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
        for field in STATEMENT_FIELDS:
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(children)
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


def normalised(node: ast.AST) -> str:
    """The code of a syntax tree as text, without positions (see the module docstring)."""
    return ast.dump(node, annotate_fields=False, include_attributes=False)


@cache
def _dump(text: str, filename: str) -> str:
    return normalised(_parse(text, filename))


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
    for node in statements(nodes):
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
    """``modules`` and every package module they import, transitively (with the
    ``__init__`` of every package on their way, which each import runs).

    Raises:
        FileNotFoundError: a module is not in the package.
    """
    return set(_closure_sources(modules, root))


def _closure_sources(modules: set[str], root: Path) -> dict[str, tuple[str, str]]:
    """:func:`closure` as module -> (source text, file name): each file read once per hash."""
    todo, seen = set(modules) | {PACKAGE}, {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = module_path(module, root)
        seen[module] = source = (path.read_text(), str(path))
        todo |= _module_imports(*source, module, str(root)) - seen.keys()
        todo |= set(_parents(module)) - seen.keys()
    return seen


def _parents(module: str) -> list[str]:
    """The packages an import of ``module`` runs first: ``embryo_bench.data.io`` ->
    ``embryo_bench``, ``embryo_bench.data``."""
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


@cache
def _module_imports(text: str, filename: str, module: str, root: str) -> frozenset[str]:
    """:func:`imported_modules` of a whole module, cached by its content (every rule's hash
    walks the same modules: 14 hashes took 0.8 s, most of a no-op dry run's own time)."""
    return frozenset(imported_modules(_parse(text, filename).body, module, Path(root)))


def _is_command(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and node.name.startswith(COMMAND_PREFIX)


def _is_stage(module: str) -> bool:
    """Whether ``module`` is the commands package or one of its modules."""
    return module == COMMANDS or module.startswith(COMMANDS + ".")


def command_modules(root: Path = ROOT) -> list[str]:
    """The stages' command modules (every module of :data:`COMMANDS` but its ``__init__``),
    sorted."""
    folder = Path(root).joinpath(*COMMANDS.split(".")[1:])
    return sorted(f"{COMMANDS}.{f.stem}" for f in folder.glob("*.py") if f.name != "__init__.py")


@cache
def _defined_commands(text: str, filename: str) -> frozenset[str]:
    """The ``cmd_<name>`` functions defined at the top of a module, by function name."""
    return frozenset(n.name for n in _parse(text, filename).body if _is_command(n))


def _source(module: str, root: Path) -> tuple[str, str]:
    path = module_path(module, root)
    return path.read_text(), str(path)


def command_module(command: str, root: Path = ROOT) -> str:
    """The stage's module that defines ``command`` (``crop`` ->
    ``embryo_bench.commands.prepare``).

    Raises:
        FileNotFoundError: no module of :data:`COMMANDS` defines it.
        ValueError: more than one does (its hash would follow one of them only).
    """
    func = COMMAND_PREFIX + command.replace("-", "_")
    found = [m for m in command_modules(root) if func in _defined_commands(*_source(m, Path(root)))]
    if not found:
        raise FileNotFoundError(f"{CLI}: no command {command!r} (function {func} in {COMMANDS})")
    if len(found) > 1:
        raise ValueError(f"{CLI}: command {command!r} defined in each of {', '.join(found)}")
    return found[0]


def _command_function(tree: ast.Module, command: str, module: str) -> list[ast.stmt]:
    """The ``cmd_<name>`` function of ``command`` in its module's tree, as a one-item list.

    Raises:
        FileNotFoundError: no such command there.
    """
    func = COMMAND_PREFIX + command.replace("-", "_")
    own = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func]
    if not own:
        raise FileNotFoundError(f"{module}: no command {command!r} (function {func})")
    return own


@cache
def _cli_shared(text: str, filename: str, root: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """(normalised statements of cli.py, the package modules they import but the stages'
    command modules), cached by its content: the same for every command, so dumped and
    searched once. cli.py imports every stage to list its commands; a command runs its own."""
    body = _parse(text, filename).body
    imports = imported_modules(body, CLI, Path(root))
    return tuple(normalised(n) for n in body), frozenset(m for m in imports if not _is_stage(m))


@cache
def _stage_code(
    text: str, filename: str, module: str, command: str, root: str
) -> tuple[tuple[str, ...], frozenset[str]]:
    """(the stage module's name, its normalised shared statements and the command's
    ``cmd_<name>`` function; the package modules they import, with the packages importing the
    module runs first), cached by the module's content."""
    tree = _parse(text, filename)
    shared = [n for n in tree.body if not _is_command(n)]
    own = _command_function(tree, command, module)
    code = (module, *(normalised(n) for n in shared + own))
    return code, frozenset(imported_modules(shared + own, module, Path(root))) | frozenset(
        _parents(module)
    )


def _command_code(command: str, root: Path) -> tuple[tuple[str, ...], frozenset[str]]:
    """(the code :func:`code_hash` takes of ``cli:<command>`` as parts: cli.py, the command's
    stage module's shared code and its function; the package modules they import).

    Raises:
        FileNotFoundError: no such command.
        ValueError: two stages' modules define it.
    """
    module = command_module(command, root)
    cli_code, cli_imports = _cli_shared(*_source(CLI, root), str(root))
    stage_code, stage_imports = _stage_code(*_source(module, root), module, command, str(root))
    return cli_code + stage_code, cli_imports | stage_imports


def code_hash(*entries: str, root: Path = ROOT) -> str:
    """sha256 (16 hex digits) of the code that ``entries`` run.

    Args:
        entries: ``cli:<command>`` (an ``embryo-bench`` command as the rules run it: its
            ``cmd_<name>`` function, its stage module's shared code and cli.py) or a module
            name (``embryo_bench.data.stages``); each with its import closure.
        root: the package folder (default: this one's).

    Raises:
        FileNotFoundError: no such command or module.
        ValueError: two stages' modules define one command.
    """
    root = Path(root)
    try:
        key = source_key(root)
    except OSError:  # an unreadable file: nothing to key a cached hash on
        return _code_hash(entries, root)
    name = "\n".join(entries)
    with _LOCK:
        hashes = _cached(root, key)
        if name in hashes:
            return hashes[name]
    value = _code_hash(entries, root)
    with _LOCK:
        try:
            changed = source_key(root) != key
        except OSError:
            changed = True
        if not changed:  # no file changed while hashing: the value is the key's
            hashes[name] = value
            _store(root, key, hashes)
    return value


def _code_hash(entries: tuple[str, ...], root: Path) -> str:
    """:func:`code_hash` computed from the sources (no cache)."""
    parts: list[str] = []
    modules: set[str] = set()
    for command in (e[4:] for e in entries if e.startswith("cli:")):
        code, imports = _command_code(command, root)
        parts += code
        modules |= imports
    modules |= {e for e in entries if not e.startswith("cli:")}
    # cli.py and a command's stage module enter as the command's parts above, not whole
    # (another stage's or another command's edit is not this command's); whole only where a
    # module of the closure imports them, as then all of them is code that runs.
    sources = _closure_sources(modules, root)
    parts += [m + "\0" + _dump(*sources[m]) for m in sorted(sources)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def source_key(root: Path = ROOT) -> str:
    """sha256 (hex) of everything :func:`code_hash` of ``root`` depends on: every ``.py`` file
    under ``root`` (which modules exist and what they hold), the Python version (the syntax
    tree's shape), the encoding files are read with, and this module's code.

    Raises:
        OSError: a file cannot be read.
    """
    h = hashlib.sha256(
        f"{sys.version}\0{locale.getpreferredencoding(False)}\0{_IMPLEMENTATION}".encode()
    )
    for path in sorted(Path(root).rglob("*.py")):
        data = path.read_bytes()
        h.update(f"\0{path.relative_to(root).as_posix()}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


#: (package folder, :func:`source_key`) -> {entries: hash}: this process's copy of the cache.
_HASHES: dict[tuple[str, str], dict[str, str]] = {}
_LOCK = threading.Lock()


def _cached(root: Path, key: str) -> dict[str, str]:
    """The hashes known for ``key``: this process's, else the cache file's if it has that key
    (a missing, unreadable or other key's file is an empty cache)."""
    if (str(root), key) not in _HASHES:
        hashes: dict[str, str] = {}
        try:
            stored = json.loads((root / CACHE_FILE).read_text(encoding="utf-8"))
            if stored.get("key") == key and isinstance(stored.get("hashes"), dict):
                hashes = {str(k): str(v) for k, v in stored["hashes"].items()}
        except (OSError, ValueError, AttributeError):
            pass
        _HASHES[(str(root), key)] = hashes
    return _HASHES[(str(root), key)]


def _store(root: Path, key: str, hashes: dict[str, str]) -> None:
    """Write the cache file (atomically: a reader sees the old file or the new one); a
    package folder that cannot be written (an installed package) keeps no cache."""
    path = root / CACHE_FILE
    try:
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "hashes": hashes}, fh, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def module_closure(*entries: str, root: Path = ROOT) -> list[str]:
    """The package modules :func:`code_hash` covers for ``entries``, sorted (for logs and
    tests; ``embryo_bench.cli`` and a command's stage module stand for the parts of them it
    takes).

    Raises:
        FileNotFoundError: no such command or module.
        ValueError: two stages' modules define one command.
    """
    root = Path(root)
    modules: set[str] = set()
    parts: set[str] = set()
    for entry in entries:
        if entry.startswith("cli:"):
            modules |= _command_code(entry[4:], root)[1]
            parts |= {CLI, command_module(entry[4:], root)}
        else:
            modules.add(entry)
    return sorted(closure(modules, root) | parts)

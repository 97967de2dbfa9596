"""Which modules may hold a workload's model builder (``workloads[].model:
package.module:function``), and a builder loaded under that rule. No Keras here.

The rule: a function defined with ``def`` in a module of Python source of the user's own
(or imported there from such a module), or in one of the package's model modules (the
catalog's: :data:`PACKAGE_BUILDERS` and each study's ``models.py``, :data:`STUDY_MODELS`).
Python's standard library (``os:system``, ``subprocess:run``) and the package's other modules
build no model: naming one is a mistake
that would otherwise run whatever that function does with a shape and a class count. Classes,
builtins and other callables are refused too: the trainer calls the builder as a function and
checks what it returns (:func:`embryo_bench.workloads.build.check_model`).

The plan applies the rule without importing the module (:func:`locate` finds it as the
import system would, running no package's ``__init__``;
:func:`embryo_bench.planning.workloads.check_model_path` reads its source); the trainer
applies it again before it imports the module (:func:`load_checked_builder`). Kept apart from
:mod:`.user`, which loads a builder without the rule.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable

from ..errors import ConfigError
from .user import load_builder

#: The package's modules that hold builders (the paper's model, and the paths of the
#: studies' models before each study had its folder).
PACKAGE_BUILDERS = "embryo_bench.workloads."
#: A study's models (``src/embryo_bench/studies/<study>/models.py``): builders too.
STUDY_MODELS = re.compile(r"^embryo_bench\.studies\.[a-z][a-z0-9_]*\.models$")
#: What a module holding a builder must be, for messages.
EXPECTED_MODULE = (
    "expected a Python module of your own (or embryo_bench.workloads' or a study's models) "
    "defining the function"
)
_STDLIB = "a module of Python's standard library, which builds no model"


def first_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line (a SyntaxError with its file and line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def refused_name(module: str) -> str | None:
    """Why a module of this name cannot hold a model builder, judged by its name alone (so
    before it is found or imported), or None: Python's standard library, and the package's
    modules outside :data:`PACKAGE_BUILDERS` and :data:`STUDY_MODELS`.

    Returns:
        what it is, for a message (e.g. "a module of Python's standard library, ..."), or
        None.
    """
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return _STDLIB
    package = PACKAGE_BUILDERS.split(".")[0]
    if top == package and not (module.startswith(PACKAGE_BUILDERS) or STUDY_MODELS.match(module)):
        where = PACKAGE_BUILDERS.rstrip(".")
        return (
            f"a module of embryo-bench outside {where} and the studies' models, which builds "
            "no model"
        )
    return None


def refused_module(module: str, origin: str | None) -> str | None:
    """Why ``module`` cannot hold a model builder, or None where it can.

    Args:
        module: the module's dotted name. origin: where its spec says it is loaded from (a
            file, "built-in", "frozen"; None for a namespace package).

    Returns:
        None for a module of Python source (a ``.py`` file) outside the standard library
        and, of the package's modules, only those under :data:`PACKAGE_BUILDERS` and
        :data:`STUDY_MODELS`; else what
        it is, for a message (:func:`refused_name`; a built-in, frozen or compiled module, a
        namespace package).
    """
    why = refused_name(module)
    if why:
        return why
    if origin in ("built-in", "frozen"):
        return _STDLIB
    if not origin or not origin.endswith(".py"):
        return f"not a Python source file ({origin or 'a namespace package'})"
    return None


def locate(module: str):
    """The spec of ``module`` as the import system would find it (``sys.meta_path``'s
    finders, each package's search locations), without importing it or any parent package
    (``importlib.util.find_spec`` runs the parents' ``__init__``: the plan must not run the
    user's code, nor import Keras through a package of models); None where it is not found.
    A module already imported gives its own spec."""
    spec, parts = None, module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__spec__", None) is not None:
            spec = loaded.__spec__
            continue
        path = None if i == 0 else (spec.submodule_search_locations if spec else None)
        if i and path is None:
            return None  # the parent is a module, not a package
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            try:
                spec = find(name, path) if find else None
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                break
        else:
            return None
    return spec


def _origin(module: str) -> tuple[bool, str | None]:
    """Whether ``module`` is imported or can be found, and its spec's origin (None for a
    namespace package), without importing it (:func:`locate`)."""
    spec = locate(module)
    if spec is None:
        loaded = sys.modules.get(module)
        return loaded is not None, getattr(loaded, "__file__", None)
    return True, spec.origin


def load_checked_builder(path: str, setting: str) -> Callable:
    """The builder ``path`` names (:func:`.user.load_builder`), under this module's rule:
    its module is checked before it is imported (:func:`refused_module`), and the name must
    be a function (``def``, not async), defined in a module the rule accepts.

    Args:
        path: ``"package.module:function"``. setting: the setting it came from, for
            messages (e.g. ``workloads (mine): model``).

    Raises:
        ConfigError: one line, "<setting> '<path>': <what>": as
            :func:`.user.load_builder`; a module of the standard library, of the package
            outside :data:`PACKAGE_BUILDERS` and :data:`STUDY_MODELS`, or not of Python
            source; a name that is not a function, or a function imported from such a module.
    """
    where = f"{setting} {path!r}"
    module_name = path.partition(":")[0] if isinstance(path, str) else ""
    found, origin = _origin(module_name) if module_name else (False, None)
    why = refused_module(module_name, origin) if found else refused_name(module_name)
    if why:
        raise ConfigError(f"{where}: {module_name} is {why}; {EXPECTED_MODULE}")
    try:
        builder = load_builder(path, setting)
    except ConfigError as exc:  # "<setting>: <path>: <what>", as the lines below
        raise ConfigError(f"{where}: {str(exc).removeprefix(f'{setting}: {path!r}: ')}") from None
    function = path.partition(":")[2]
    if inspect.iscoroutinefunction(builder) or not inspect.isfunction(builder):
        what = "an async function" if inspect.iscoroutinefunction(builder) else None
        what = what or f"a {type(builder).__name__}"
        raise ConfigError(
            f"{where}: {function!r} is {what}, not a function (def) returning a Keras model"
        )
    # Imported into the module from another: that one must be a module of models too.
    owner = getattr(builder, "__module__", None) or module_name
    why = refused_module(owner, _origin(owner)[1]) if owner != module_name else None
    if why:
        raise ConfigError(f"{where}: {function!r} comes from {owner}, {why}; {EXPECTED_MODULE}")
    return builder

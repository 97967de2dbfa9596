"""A model builder named by a setting: ``"package.module:function"``.

Every workload's model is built by such a function, called ``builder(input_shape, classes)``
and returning an uncompiled ``keras.Model``: the catalog's own (``catalog.yaml``'s ``model``)
and the user's, so people measure their own workload. No Keras here: :func:`load_builder`
imports only the module the setting names.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

from ..errors import ConfigError
from ..vocabulary.spec import BUILDER_PATTERN

BUILDER_FORM = "'package.module:function'"


def _first_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line (a SyntaxError with its file and line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_builder(path: str, setting: str = "model") -> Callable:
    """The function ``path`` names, imported.

    Args:
        path: ``"package.module:function"``, e.g. ``"embryo_bench.workloads.minimaxir:mnist_mlp"``
            or a module of the user's on ``PYTHONPATH``.
        setting: the setting ``path`` came from, named in errors (e.g. ``workloads.mine.model``).

    Returns:
        the callable; called ``builder(input_shape, classes)`` it must return a ``keras.Model``.

    Raises:
        ConfigError: one line naming ``setting`` and ``path``: ``path`` is not of the form
            ``package.module:function``; the module does not import (the exception's first
            line), or ends the program when imported (``SystemExit``: a script's ``sys.exit``
            or argparse at its top level); it has no such attribute; or the attribute is
            not callable.
    """
    if not isinstance(path, str) or not re.match(BUILDER_PATTERN, path):
        raise ConfigError(f"{setting}: {path!r}: expected a builder of the form {BUILDER_FORM}")
    module_name, function = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        # Not an Exception: a script's sys.exit or argparse (reading the trainer's own
        # arguments) at its top level ended the trainer, exit status 0 read as success.
        raise ConfigError(
            f"{setting}: {path!r}: module {module_name!r} ends the program when imported "
            f"(SystemExit: {exc.code}); expected a module that only defines (a script's "
            "sys.exit or argparse belongs under if __name__ == '__main__')"
        ) from None
    except Exception as exc:  # any failure of the user's module is a bad setting
        raise ConfigError(
            f"{setting}: {path!r}: module {module_name!r} does not import ({_first_line(exc)})"
        ) from None
    builder = getattr(module, function, None)
    if builder is None:
        raise ConfigError(f"{setting}: {path!r}: module {module_name!r} has no {function!r}")
    if not callable(builder):
        raise ConfigError(
            f"{setting}: {path!r}: {function!r} is a {type(builder).__name__}, not a function"
        )
    return builder

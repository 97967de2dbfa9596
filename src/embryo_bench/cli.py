"""embryo-bench: which machine should I train my model on, and what does it cost?

The user's commands (:data:`USER_COMMANDS`) come first in ``embryo-bench --help``; the workflow's
own steps, which the Snakemake rules call, are listed after them in one line and are as
callable as before (``embryo-bench <step> --help``).

Each sub-command runs one pipeline step and is one ``cmd_<name>`` function of a stage's module
in :mod:`embryo_bench.commands` (:data:`STAGES`): it declares the command's arguments and
returns the function that runs it, which only converts arguments and calls the package (the
logic lives in the modules). This module holds only the argument parser and the dispatch. The
workflow hashes a command's code as that function, its module's shared code, this module and
what they import (:mod:`embryo_bench.vocabulary.codehash`), so an edit to one stage's module
reruns none of the other stages' jobs.
Errors on bad input exit with status 2 and one line ``embryo-bench: error: <message naming
the file or setting>`` on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap

from .commands import containers, measure, plan, prepare, report, run, train
from .errors import EmbryoBenchError, Interrupted
from .runners import lifeline

#: The stages' command modules, in the order ``embryo-bench --help`` lists their commands. A
#: new stage's module is imported above and named here.
STAGES = (run, prepare, plan, train, report, measure, containers)
COMMAND_PREFIX = "cmd_"
#: The commands a user types, in the order ``embryo-bench --help`` lists them; every other
#: command is a step of the workflow (its rules call it), listed after them in one line.
USER_COMMANDS = (
    "run",
    "check-config",
    "workloads",
    "studies",
    "compare",
    "calibrate",
    "batch-limit",
    "evaluate",
)


def commands() -> dict:
    """Command name -> its ``cmd_<name>`` function, stage by stage (:data:`STAGES`), each
    stage's in definition order.

    Raises:
        RuntimeError: two stages' modules define one command.
    """
    found: dict = {}
    for stage in STAGES:
        for name, fn in vars(stage).items():
            if not (name.startswith(COMMAND_PREFIX) and callable(fn)):
                continue
            command = name.removeprefix(COMMAND_PREFIX).replace("_", "-")
            if command in found:
                # The code hash would follow one of them only: refused rather than guessed.
                raise RuntimeError(
                    f"command {command!r} defined in both {found[command].__module__} and "
                    f"{stage.__name__}"
                )
            found[command] = fn
    return found


def version() -> str:
    """This installation's version: the package's, from its metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("embryo-bench")
    except PackageNotFoundError:  # run from a checkout without installing it
        return "unknown (not installed)"


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help with its default, where it has one and its help does not already
    say it (None, False, "" and an empty list say nothing)."""

    def _fill_text(self, text, width, indent):
        # Command names hold hyphens (dataset-file): wrapped between words only.
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)  # fmt: skip

    def _get_help_string(self, action):
        if action.default in (None, False, [], "", argparse.SUPPRESS) or (
            "default" in (action.help or "")
        ):
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command: the user's commands listed with their help,
    the workflow's steps in one line after them (each as callable)."""
    found = commands()
    steps = [name for name in found if name not in USER_COMMANDS]
    p = argparse.ArgumentParser(
        prog="embryo-bench",
        description=__doc__.splitlines()[0],
        epilog="the workflow's own steps (the Snakemake rules call them; each has --help): "
        + ", ".join(steps),
        formatter_class=_Formatter,
    )
    p.add_argument("-V", "--version", action="version", version=f"embryo-bench {version()}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages too")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for name in (*USER_COMMANDS, *steps):
        define = found[name]
        first = " ".join(define.__doc__.split())
        # A step has no help= and so no line in the list above: argparse lists only those.
        extra = {"help": first} if name in USER_COMMANDS else {}
        s = sub.add_parser(name, description=first, formatter_class=_Formatter, **extra)
        s.set_defaults(func=define(s))
    return p


#: Commands that tie themselves to the workflow (:mod:`embryo_bench.runners.lifeline`) or not at
#: all: a docker training's runner must outlive nothing but stop its container first.
SELF_TIED = ("train",)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``embryo-bench`` console command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command not in SELF_TIED:
            # A workflow job ends with Snakemake, writing nothing more (a figures or
            # augment job orphaned by a SIGKILLed Snakemake finished and wrote its outputs).
            lifeline.tie_to_workflow()
        args.func(args)
    except EmbryoBenchError as exc:
        print(f"embryo-bench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"embryo-bench: interrupted ({exc}); nothing was kept", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("embryo-bench: interrupted (SIGINT); nothing was kept", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``embryo-bench``: the command the Snakemake rules call, and users' entry point.

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

from .commands import containers, measure, plan, prepare, report, train
from .errors import EmbryoBenchError, Interrupted
from .runners import lifeline

#: The stages' command modules, in the order ``embryo-bench --help`` lists their commands. A
#: new stage's module is imported above and named here.
STAGES = (prepare, plan, train, report, measure, containers)
COMMAND_PREFIX = "cmd_"


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    p = argparse.ArgumentParser(prog="embryo-bench", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    for name, define in commands().items():
        s = sub.add_parser(name, help=define.__doc__)
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

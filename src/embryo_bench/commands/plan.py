"""``embryo-bench`` commands that list and check what a configuration asks for: the catalog's
workloads, the studies, a configuration checked, and a run's settings (``run.json``) written.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import logging

log = logging.getLogger("embryo_bench")


def cmd_workloads(p):
    """list the workloads of the catalog (the studies' models) and the datasets they use"""

    def run(a):
        from ..workloads import catalog

        for w in catalog.catalog().values():
            r = w.recipe
            print(
                f"{w.name:<24} study {w.study}  {w.dataset:<12} "
                f"{'x'.join(map(str, w.input_shape))} {w.input_dtype}, {w.classes} classes, "
                f"{w.parameters:,} parameters; {r.optimizer} {r.learning_rate:g}, batch "
                f"{r.batch_size}, {r.epochs} epochs\n    {w.source}"
            )

    return run


def cmd_studies(p):
    """list the studies (each a folder of src/embryo_bench/studies/), their workloads and
    configurations"""
    p.add_argument("--names", action="store_true", help="only the names, one a line")
    p.add_argument(
        "--with-config",
        action="store_true",
        help="only the studies that ship a configuration (config/<name>.yaml, its short form)",
    )

    def run(a):
        from ..studies.docs import configured
        from ..studies.registry import studies
        from ..workloads.catalog import catalog

        known = studies()
        chosen = configured(known) if a.with_config else list(known.values())
        workloads = catalog().values()
        for s in chosen:
            if a.names:
                print(s.name)
                continue
            own = ", ".join(w.name for w in workloads if w.study == s.number) or "none"
            config = (
                f"config/{s.name}.yaml, config/{s.name}-short.yaml" if s in configured(known)
                else "none of its own"
            )  # fmt: skip
            print(
                f"{s.number} {s.name:<12} {s.seed}: {s.headline or s.title}\n"
                f"    folder {s.folder}\n    workloads: {own}\n    configuration: {config}"
            )

    return run


def cmd_check_config(p):
    """check a configuration: syntax (with line and column), schema and settings; several
    files are merged in order, as Snakemake merges several --configfile"""
    p.add_argument(
        "files",
        nargs="+",
        help="configuration files, as given to snakemake --configfile: a later file's settings "
        "over an earlier one's (nested sections merged key by key, lists replaced)",
    )
    p.add_argument(
        "--each",
        action="store_true",
        help="check each file as a configuration of its own instead (several configs at once)",
    )

    def run(a):
        from ..planning.configcheck import check_config_files

        for files in [[f] for f in a.files] if a.each else [a.files]:
            for line in check_config_files(files):
                print(line)

    return run


def cmd_spec(p):
    """write a run's settings (run.json), checked"""
    p.add_argument("--json", required=True, help="the run spec as JSON")
    p.add_argument("--out", required=True, help="the run spec file to write (run.json)")

    def run(a):
        from ..io import parse_json
        from ..vocabulary.spec import RunSpec

        where = "--json (the run spec)"
        RunSpec.from_dict(parse_json(a.json, where), where).write(a.out)

    return run

"""A configuration checked as ``embryo-bench check-config`` and ``embryo-bench run`` check it
before anything is written: the schema, then every check the workflow makes before a job but
the hardware's. Its own module, not the commands': a command's code hash follows the modules
its module imports, and the planning code it needs would otherwise make every job of the
``spec`` command rerun when the planning (or the hardware check) changed."""

from __future__ import annotations

from ..errors import ConfigError, EmbryoBenchError
from ..vocabulary.config import apply_defaults, load_schema, read_config_files
from .plan import Plan


def check_config_files(files: list[str], name: str = "") -> list[str]:
    """Check configuration files merged in order as ``check-config`` does: the schema, then
    every check the workflow makes before a job but the hardware's.

    Args:
        files: configuration files (YAML), a later one's settings over an earlier one's.
        name: what the lines and errors call the configuration (default: the files' paths).

    Returns:
        the lines to print: the merge and baseline notes, then "<name>: valid (...)".

    Raises:
        ConfigError: the first problem found, naming the file or the setting.
    """
    name = name or " + ".join(files)
    schema = load_schema()
    config, sources = read_config_files(files)
    apply_defaults(config, schema, sources)  # the schema's refusal names its file
    try:  # every check the workflow makes before a job, but the hardware's
        plan = Plan.from_config(config, hardware_check="none", schema=schema, sources=sources)
        plan.source_stamp()  # a source read in place: every entry readable
    except EmbryoBenchError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return [
        *(f"{name}: {note}" for note in (*plan.merge_notes, *plan.baseline_notes)),
        f"{name}: valid ({len(plan.targets)} targets, {len(plan.workloads)} workloads, "
        f"outdir {plan.config['outdir']})",
    ]

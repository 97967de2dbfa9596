"""A study beside our runs: the ``study:`` setting checked when the plan is made, and every
workload as the study tables read it.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..published import studies
from ..vocabulary import layout
from ..vocabulary.config import Source
from ..vocabulary.spec import INPUT_SHARDS
from .workloads import Workload


def check_study(name: str, sources: list[Source] = ()) -> None:
    """``study:`` names a study (a folder of ``src/embryo_bench/studies/``) whose numbers file
    and claims module exist; "" (no study) passes. With ``sources`` (the files the
    configuration was merged from, in order), the files that name a study name the same one:
    a study's short form (``config/<study>-short.yaml``) names the study it shortens, so
    layered over another study's configuration it is refused here, where it would otherwise
    run its own workloads under the other study's name, beside the other study's numbers
    and claims. A later file may still clear it (``study: ""``: no study).

    Raises:
        ConfigError: one line naming the setting and the known names, the missing file, or
            the two files that name different studies.
        DataError: the registry itself is unreadable (naming it), or the study's numbers
            file is not the one it records (its sha256:
            :func:`embryo_bench.published.studies.check_numbers_file`).
    """
    named = [(origin, str(data["study"])) for origin, data in sources if data.get("study")]
    for origin, theirs in named[1:]:
        first, ours = named[0]
        if theirs != ours:
            raise ConfigError(
                f"study: {theirs!r} ({origin}) layered over {ours!r} ({first}): files "
                "layered as one configuration name one study; a study's short form goes "
                f"over its own study's configuration (config/{theirs}.yaml)"
            )
    if not name:
        return
    known = studies.studies()
    if name not in known:
        raise ConfigError(
            f"study: {name!r} is not a study of src/embryo_bench/studies/; expected one of "
            f'{", ".join(sorted(known))} (or "" for none)'
        )
    study = known[name]
    for what, path in (("numbers file", study.path), ("claims module", study.claims_path)):
        if not path.is_file():
            raise ConfigError(f"study: {name}: its {what} {path} does not exist")
    studies.check_numbers_file(study)


def study_workloads(config: dict, workloads: dict[str, Workload]) -> list[dict]:
    """Every workload as the study tables read it
    (:class:`embryo_bench.reporting.study.StudyWorkload`): name, catalog (the catalog
    workload it trains: "paper" for the paper's, "" for a model of the user's own), input,
    data ("synthetic" or "real"), spec (its ``figures-spec.json``) and info (its data's
    record, by its input kind: the index stage's ``manifest/source.json`` for the shards,
    its ``data/info.json`` for a workload's arrays), under the configuration's outdir."""
    outdir = config["outdir"]
    out = []
    for name, w in workloads.items():
        folder = f"{outdir}/{layout.workload_dir(name)}"
        if w.input_kind == INPUT_SHARDS:  # the stages' data, from the dataset section
            synthetic = config["dataset"]["kind"] == "synthetic"
            mode, info = "memory", f"{outdir}/manifest/source.json"
        else:
            synthetic = w.spec.synthetic
            mode, info = w.spec.input_mode, f"{folder}{layout.WORKLOAD_DATA_INFO}"
        out.append(
            {
                "name": name,
                "catalog": w.catalog,
                "input": mode,
                "data": "synthetic" if synthetic else "real",
                "spec": f"{folder}{layout.FIGURES_SPEC}",
                "info": info,
            }
        )
    return out

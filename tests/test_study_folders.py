"""Every study's folder, found by the registry (nothing here lists the studies): its files
are there and say the same as each other (its catalog's builders are its own, its numbers name
its workloads, its configurations name the study and are what config/ links to, its closing
measurements plan), and the documents' lists of the studies are what their folders give."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embryo_bench.planning.plan import Plan
from embryo_bench.published.studies import load_numbers
from embryo_bench.studies import docs
from embryo_bench.studies.registry import CATALOG, CONFIG, DOC, SHORT, studies
from embryo_bench.vocabulary.config import read_config_files
from embryo_bench.workloads.catalog import catalog

REPO = Path(__file__).resolve().parents[1]
STUDIES = studies()
CONFIGURED = [s.name for s in docs.configured(STUDIES)]
#: The builder modules a study's catalog may name besides its own models.py: the pipeline's
#: paper CNN, and the paths the first four studies' models had before their folders (the
#: catalog and every run spec name them; workloads/<module>.py re-export the folder's).
OLDER_PATHS = {
    "paper": "embryo_bench.workloads.paper",
    "datamadness": "embryo_bench.workloads.datamadness",
    "minimaxir": "embryo_bench.workloads.minimaxir",
    "wu": "embryo_bench.workloads.wu",
    "v100-blog": "embryo_bench.workloads.catsdogs",
}


@pytest.mark.parametrize("name", list(STUDIES))
def test_a_studys_folder_holds_its_entry_numbers_claims_and_document(name):
    study = STUDIES[name]
    for path in (study.registry, study.path, study.claims_path, study.folder / DOC):
        assert path.is_file(), path
    assert study.folder.name == name.replace("-", "_") and study.folder.parent == REPO.joinpath(
        "src", "embryo_bench", "studies"
    )
    assert callable(importlib.import_module(study.claims).claims)
    load_numbers(study)  # its sha256 and every row


@pytest.mark.parametrize("name", list(STUDIES))
def test_a_studys_workloads_are_built_by_its_own_models(name):
    study = STUDIES[name]
    own = {w.name: w for w in catalog().values() if w.study == study.number}
    assert bool(own) == (study.file(CATALOG) is not None)
    allowed = {f"embryo_bench.studies.{study.folder.name}.models", OLDER_PATHS.get(name)}
    for workload in own.values():
        assert workload.model.partition(":")[0] in allowed, workload
    # A number about a workload names one of the catalog's (its own, or the one it compares).
    named = set(load_numbers(study)["workload"]) - {""}
    assert named <= set(catalog()), sorted(named - set(catalog()))


@pytest.mark.parametrize("name", CONFIGURED)
def test_a_studys_configurations_are_its_folders_and_config_links_to_them(name):
    study = STUDIES[name]
    for own, linked in ((CONFIG, f"{name}.yaml"), (SHORT, f"{name}-short.yaml")):
        path = REPO / "config" / linked
        assert path.is_symlink() and path.resolve() == (study.folder / own).resolve(), (
            f"config/{linked}: expected a link to {study.folder / own} "
            f"(ln -s ../{(study.folder / own).relative_to(REPO)} config/{linked})"
        )
        assert yaml.safe_load(path.read_text())["study"] == name
    # CI's loop reads the short form's study/ in results/<name>-short.
    short = yaml.safe_load((REPO / "config" / f"{name}-short.yaml").read_text())
    assert short["outdir"] == f"results/{name}-short"


MEASURED = [
    pytest.param(s.name, p, id=f"{s.name}/{p.name}")
    for s in docs.configured(STUDIES)
    for p in sorted(s.folder.glob("measured*.yaml"))
]


@pytest.mark.parametrize(("name", "measured"), MEASURED)
def test_a_closing_measurement_plans_as_its_comment_layers_it(name, measured):
    """A study's closing measurement, layered as its comment runs it (over the study's
    configuration, and its short form where it says so)."""
    head = "".join(line for line in measured.read_text().splitlines() if line.startswith("#"))
    files = re.findall(r"(?:config|src)/[\w./-]+\.yaml", head)
    assert files[0] == f"config/{name}.yaml" and (REPO / files[-1]) == measured, files
    config, sources = read_config_files([REPO / f for f in files])
    plan = Plan.from_config(config, hardware_check="none", on_this_machine=False, sources=sources)
    assert plan.all_runs and plan.config["study"] == name


@pytest.mark.parametrize("document", ["README.md", "docs/studies/README.md"])
def test_the_documents_lists_of_the_studies_are_rendered_from_their_folders(document):
    path = REPO / document
    text = path.read_text()
    assert docs.lists_in(text), f"{document}: no list of the studies"
    assert docs.render(text, path) == text, (
        f"{document}: its list of the studies differs from their folders: "
        f"python -m embryo_bench.studies.docs {document}"
    )
    listed = STUDIES.values() if "sources" in docs.lists_in(text) else docs.configured(STUDIES)
    for study in listed:
        assert f"studies/{study.folder.name}/README.md" in text, study.name


def test_a_new_study_is_listed_where_the_studies_are(tmp_path):
    """The lists follow the folders: a study added to a copy of the registry is in each."""
    wu = STUDIES["wu"]
    new = type(wu)(**{**wu.__dict__, "name": "new-study", "number": "005", "seed": "New 2026"})
    known = {**STUDIES, "new-study": new}
    text = (REPO / "README.md").read_text()
    rendered = docs.render(text, REPO / "README.md", known)
    assert "### 005 New 2026: " in rendered and "config/new-study-short.yaml" in rendered
    table = docs.sources_table(known, REPO / "docs" / "studies" / "README.md")
    assert table.splitlines()[-1].startswith("| 005 | New 2026 | ")
    assert "[`new-study.yaml`](new-study.yaml)" in docs.config_list(known)


def test_the_studies_command_lists_the_registrys():
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    run = [sys.executable, "-m", "embryo_bench.cli", "studies"]
    names = subprocess.run(
        [*run, "--names", "--with-config"], env=env, capture_output=True, text=True, check=True
    )
    assert names.stdout.split() == CONFIGURED
    listing = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    for study in STUDIES.values():
        assert f"{study.number} {study.name} " in listing
    assert "workloads: tf-mnist-deep, tf-cifar10" in listing

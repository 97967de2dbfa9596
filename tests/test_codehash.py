"""Code hashes follow the import closure of each command and its code, not its text: a
comment or docstring changes nothing, a code change changes the hash of exactly the commands
that import the module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from embryo_bench.vocabulary import codehash
from embryo_bench.vocabulary.codehash import code_hash, module_closure

PACKAGE = Path(codehash.__file__).resolve().parents[1]


@pytest.fixture
def pkg(tmp_path) -> Path:
    """A private copy of the package to edit."""
    dst = tmp_path / "embryo_bench"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def _hashes(root: Path) -> dict[str, str]:
    return {c: code_hash(f"cli:{c}", root=root) for c in ("crop", "augment", "train", "figures")}


def test_a_copy_hashes_like_the_original(pkg):
    assert _hashes(pkg) == _hashes(PACKAGE)


def test_comments_docstrings_and_formatting_change_nothing(pkg):
    before = _hashes(pkg)
    _edit(pkg / "data/preprocess.py", "from __future__ import annotations\n",
          "from __future__ import annotations  # a comment\n\n\n# and another\n")  # fmt: skip
    _edit(pkg / "data/preprocess.py", '"""Rotate a uint8 array', '"""Turn a uint8 array')
    signature = "def compile_model(\n    model: keras.Model,\n    learning_rate: float = 1e-4,\n"
    reflowed = "def compile_model(\n    model: keras.Model, learning_rate: float = 1e-4,\n"
    _edit(pkg / "workloads/paper.py", signature, reflowed)
    assert _hashes(pkg) == before


def test_a_code_change_reruns_exactly_the_commands_that_import_it(pkg):
    before = _hashes(pkg)
    _edit(pkg / "workloads/paper.py", 'name="paper_cnn"', 'name="paper_cnn_v2"')
    after = _hashes(pkg)
    assert after["train"] != before["train"]
    assert after["augment"] == before["augment"] and after["crop"] == before["crop"]
    assert after["figures"] == before["figures"]
    _edit(pkg / "data/preprocess.py", "fillcolor=0", "fillcolor=1")
    again = _hashes(pkg)
    assert again["augment"] != after["augment"] and again["train"] != after["train"]


def test_hardware_is_part_of_training_and_of_nothing_upstream(pkg):
    before = _hashes(pkg)
    _edit(pkg / "recording/hardware.py", '"this host has"', '"this machine has"')
    after = _hashes(pkg)
    assert after["train"] != before["train"] and after["augment"] == before["augment"]


def test_another_commands_code_in_its_stage_module_does_not_count(pkg):
    before = _hashes(pkg)
    _edit(
        pkg / "commands/prepare.py",
        'log.info("augmented to %d samples", n)',
        'log.info("%d samples", n)',
    )
    after = _hashes(pkg)
    assert after["augment"] != before["augment"]
    assert after["crop"] == before["crop"] and after["train"] == before["train"]


def test_a_commands_hash_follows_its_own_stage_module_and_no_other(pkg):
    """A command's hash takes its stage module's shared code (all but the ``cmd_``
    functions): an edit there reruns that stage's commands and no other stage's; an edit to
    cli.py, which every command runs through, reruns them all."""
    before = _hashes(pkg)
    stage = pkg / "commands/prepare.py"
    _edit(stage, 'log = logging.getLogger("embryo_bench")', 'log = logging.getLogger("prepare")')
    after = _hashes(pkg)
    assert after["crop"] != before["crop"] and after["augment"] != before["augment"]
    assert after["train"] == before["train"] and after["figures"] == before["figures"]
    _edit(pkg / "commands/train.py", "return run\n", "return run  # why\n\n\nX = 1\n")
    again = _hashes(pkg)
    assert again["train"] != after["train"]
    assert {c: again[c] for c in ("crop", "augment", "figures")} == {
        c: after[c] for c in ("crop", "augment", "figures")
    }
    _edit(pkg / "cli.py", 'SELF_TIED = ("train",)', 'SELF_TIED = ("train", "nothing")')
    last = _hashes(pkg)
    assert all(last[c] != again[c] for c in last)


def test_every_command_of_the_parser_is_found_in_one_stage_module(pkg):
    """The hashes find a command where the parser does: each ``cli.commands()`` entry in the
    stage module that defines it, and a command defined by two stages is refused."""
    from embryo_bench import cli

    for name, fn in cli.commands().items():
        assert codehash.command_module(name) == fn.__module__, name
    (pkg / "commands/extra.py").write_text("def cmd_crop(p):\n    return None\n")
    with pytest.raises(ValueError, match="'crop' defined in each of"):
        code_hash("cli:crop", root=pkg)


def test_closures_are_the_real_imports():
    """The drifts the hand-kept lists had: training uses hardware and preprocess, downloading
    uses sources; and augmenting does not need the model."""
    train = module_closure("cli:train")
    assert {
        "embryo_bench.recording.hardware",
        "embryo_bench.data.preprocess",
        "embryo_bench.workloads.paper",
    } <= set(train)
    assert "embryo_bench.data.sources" in module_closure("cli:download")
    augment = set(module_closure("cli:augment"))
    assert not augment & {
        "embryo_bench.workloads.paper",
        "embryo_bench.training.train",
        "embryo_bench.reporting.figures",
    }


def test_the_train_commands_hash_leaves_out_image_building_and_the_figures():
    """An edit to the image builds (containers), planning or the tables reruns no
    training; Docker API access (docker_api) is apart from image building."""
    train = {m.removeprefix("embryo_bench.") for m in module_closure("cli:train")}
    assert train == {
        "embryo_bench", "cli", "commands", "commands.train", "errors", "io",
        "data", "data.arrays", "data.frames", "data.imagefolder", "data.npzcheck",
        "data.preprocess", "data.stages",
        "vocabulary", "vocabulary.config", "vocabulary.layout", "vocabulary.records",
        "vocabulary.spec", "vocabulary.training_input",
        "recording", "recording.calibrate", "recording.evidence", "recording.hardware",
        "recording.provenance", "recording.record", "recording.telemetry",
        "runners", "runners.docker_api", "runners.docker_runner", "runners.lifeline",
        # the catalog's records (workloads.build reads them) come with the registry of the
        # studies that gathers them: no study's own module
        "studies", "studies.registry",
        "training", "training.backend", "training.epochs", "training.history",
        "training.inputs", "training.train",
        # every runner the command may run: the plug-ins, imported by their registry
        "launch", "launch.docker", "launch.host", "launch.job", "launch.registry",
        "workloads", "workloads.build", "workloads.builders", "workloads.catalog",
        "workloads.fused_adam", "workloads.paper", "workloads.user",
    }  # fmt: skip
    figures = {m.removeprefix("embryo_bench.") for m in module_closure("cli:figures")}
    assert not figures & {
        "planning.plan", "recording.hardware", "runners.containers", "vocabulary.codehash",
        "training.train", "runners.docker_api",
    }  # fmt: skip
    # The figures judge a run by the rules in evidence, not by the sampler and the writer
    # that record it: an edit to those reruns no figures.
    assert "recording.evidence" in figures
    assert not figures & {"recording.telemetry", "recording.record"}


def test_unknown_command_or_module_is_named():
    with pytest.raises(FileNotFoundError, match="no command 'nope'"):
        code_hash("cli:nope")
    with pytest.raises(FileNotFoundError, match="embryo_bench.nope"):
        code_hash("embryo_bench.nope")


def test_image_hash_follows_its_build_files_and_code_not_comments(tmp_path):
    """What an image is built from: its build files and the code the container runs."""
    from embryo_bench.runners.containers import image_content_hash

    repo = PACKAGE.parents[1]
    assert image_content_hash(repo, "cpu") != image_content_hash(repo, "gpu")
    ctx = tmp_path / "repo"
    for rel in ("containers", "src"):
        shutil.copytree(repo / rel, ctx / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in (".dockerignore", "pyproject.toml"):
        shutil.copy(repo / rel, ctx / rel)
    original = image_content_hash(repo, "cpu")
    assert image_content_hash(ctx, "cpu") == original
    _edit(
        ctx / "src/embryo_bench/training/train.py", "import logging\n", "import logging  # note\n"
    )
    assert image_content_hash(ctx, "cpu") == original
    _edit(ctx / "src/embryo_bench/training/epochs.py", "verbose=0", "verbose=2")
    changed = image_content_hash(ctx, "cpu")
    assert changed != original
    dockerfile = ctx / "containers/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nENV X=1\n")
    assert image_content_hash(ctx, "cpu") not in (original, changed)


# --- speed without a change of value ------------------------------------------------------

NESTED = '''
"""module doc"""
import os
from embryo_bench import io


def f():
    """f doc"""
    try:
        from embryo_bench.vocabulary import layout
    except ImportError:
        from .published import paper
    else:
        import embryo_bench.vocabulary.spec
    finally:
        class C:
            """C doc"""

            async def g(self):
                """g doc"""
                async with x:
                    async for y in z:
                        import embryo_bench.recording.hardware
                    else:
                        def h():
                            """h doc"""
    while True:
        with open(p) as fh:
            if a:
                pass
            elif b:
                from .reporting.merge import run_dirs
            else:
                for i in r:
                    pass
                else:
                    from embryo_bench.errors import ConfigError
    match v:
        case 1:
            def k():
                """k doc"""
                from embryo_bench.data import stages
    return lambda: (i for i in [1])
'''


def _walk_defs_with_docstrings(tree):
    import ast

    return sorted(
        type(n).__name__ + getattr(n, "name", "")
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
        and isinstance(n.body[0].value.value, str)
    )


def test_the_statement_walk_reaches_every_import_and_docstring():
    """Imports and docstrings are found through statement bodies only, not every node
    (walking every expression was most of the hashing time): that walk must reach every
    statement a walk of every node reaches, in every kind of nested block."""
    import ast

    holders = (ast.stmt, ast.excepthandler, ast.match_case)
    sources = {"nested": NESTED} | {p.stem: p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}
    for name, text in sources.items():
        tree = ast.parse(text)
        reached = {id(n) for n in codehash.statements([tree])}
        assert all(id(n) in reached for n in ast.walk(tree) if isinstance(n, holders)), name
        codehash._strip_docstrings(tree)
        assert _walk_defs_with_docstrings(tree) == [], name
    nested = ast.parse(NESTED)
    assert len(_walk_defs_with_docstrings(nested)) == 6
    modules = [
        "io", "vocabulary", "vocabulary.layout", "published", "published.paper", "vocabulary.spec",
        "recording.hardware", "reporting.merge", "errors", "data", "data.stages",
    ]  # fmt: skip
    assert codehash.imported_modules(nested.body, "embryo_bench.nested") == {
        "embryo_bench",
        *(f"embryo_bench.{m}" for m in modules),
    }


def _forget(monkeypatch):
    """A new process: no hash, parse or dump kept in memory."""
    monkeypatch.setattr(codehash, "_HASHES", {})
    for f in (codehash._parse, codehash._dump, codehash._module_imports, codehash._stage_code,
              codehash._cli_shared, codehash._defined_commands):  # fmt: skip
        f.cache_clear()


def _no_computing(*args):
    raise AssertionError("hash computed again")


def test_hashes_are_read_from_the_cache_until_a_file_changes(pkg, monkeypatch):
    before = _hashes(pkg)
    assert (pkg / codehash.CACHE_FILE).is_file()
    _forget(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(codehash, "_code_hash", _no_computing)
        assert _hashes(pkg) == before  # a later process: from the file, nothing parsed
        _edit(pkg / "data/preprocess.py", "from __future__ import annotations\n",
              "from __future__ import annotations  # a comment\n")  # fmt: skip
        with pytest.raises(AssertionError, match="computed again"):
            code_hash("cli:augment", root=pkg)  # any edit is a new key
    assert _hashes(pkg) == before  # ... with the same value for a comment
    _edit(pkg / "workloads/paper.py", 'name="paper_cnn"', 'name="paper_cnn_v2"')
    after = _hashes(pkg)
    assert after["train"] != before["train"] and after["augment"] == before["augment"]
    _forget(monkeypatch)
    assert _hashes(pkg) == after


def test_a_new_module_file_is_a_new_cache_key(pkg):
    key = codehash.source_key(pkg)
    (pkg / "extra.py").write_text("X = 1\n")
    assert codehash.source_key(pkg) != key
    (pkg / "extra.py").unlink()
    assert codehash.source_key(pkg) == key


def test_a_garbled_or_foreign_cache_file_is_ignored(pkg, monkeypatch):
    expected = _hashes(PACKAGE)
    cache_file = pkg / codehash.CACHE_FILE
    cache_file.parent.mkdir(exist_ok=True)
    for text in ("{not json", "[]", '{"key": "other", "hashes": {"cli:crop": "0"}}'):
        cache_file.write_text(text)
        _forget(monkeypatch)
        assert _hashes(pkg) == expected
    stale = {"key": codehash.source_key(pkg) + "x", "hashes": {"cli:crop": "0" * 16}}
    cache_file.write_text(json.dumps(stale))
    _forget(monkeypatch)
    assert code_hash("cli:crop", root=pkg) == expected["crop"]


def test_an_unwritable_package_hashes_without_a_cache(pkg, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError("read-only")

    monkeypatch.setattr(codehash.tempfile, "mkstemp", refuse)
    assert _hashes(pkg) == _hashes(PACKAGE)
    assert not (pkg / codehash.CACHE_FILE).exists()

"""Every test taken out of the README's suite (marked ``ci_step(step, why)``) runs in a step of
.ci/run that names its step and its file: a marked test that no step runs would never run."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _marked() -> dict[str, set[str]]:
    """step name -> the test files with a test (or class) marked ``ci_step(step, ...)``."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "ci_step"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.setdefault(node.args[0].value, set()).add(f"tests/{path.name}")
    return found


def _steps(text: str) -> dict[str, set[str] | None]:
    """step name -> the test files its pytest line names (None: the whole tests folder), from
    the lines of .ci/run that add the step to EMBRYO_BENCH_REQUIRE and run pytest, in the
    foreground or beside another step (``beside NAME env EMBRYO_BENCH_REQUIRE=...``)."""
    steps: dict[str, set[str] | None] = {}
    for line in text.splitlines():
        m = re.match(
            r'(?:beside [\w-]+ env )?EMBRYO_BENCH_REQUIRE="\$EMBRYO_BENCH_REQUIRE ([\w-]+)" '
            r"pytest (.*)",
            line,
        )
        if m:
            files = {w for w in shlex.split(m.group(2)) if w.startswith("tests/")}
            steps[m.group(1)] = files or None
    return steps


def test_every_marked_test_runs_in_a_step_of_ci():
    steps = _steps((ROOT / ".ci" / "run").read_text())
    marked = _marked()
    assert {"trainings", "long-workflows", "workflows", "catalog-runs"} <= set(marked)
    for step, files in marked.items():
        assert step in steps, f"no step of .ci/run runs ci_step {step!r} ({sorted(files)})"
        if steps[step] is not None:
            missing = files - steps[step]
            assert not missing, f".ci/run's {step} step leaves out {sorted(missing)}"


def test_the_check_sees_a_file_left_out():
    text = 'EMBRYO_BENCH_REQUIRE="$EMBRYO_BENCH_REQUIRE trainings" pytest -m ci_step tests/a.py'
    assert _steps(text) == {"trainings": {"tests/a.py"}}
    assert {"tests/b.py"} - _steps(text)["trainings"] == {"tests/b.py"}


def test_ci_runs_every_study_the_registry_finds_not_a_list_of_its_own():
    """.ci/run takes the studies from ``embryo-bench studies`` (the folders of
    src/embryo_bench/studies/): its lint and per-study loops name no study by hand."""
    from embryo_bench.studies.docs import configured
    from embryo_bench.studies.registry import studies

    text = (ROOT / ".ci" / "run").read_text()
    assert "STUDIES=$(embryo-bench studies --names --with-config)" in text
    assert "for study in $STUDIES; do" in text
    assert "$(printf 'config/%s.yaml ' $STUDIES)" in text
    for study in configured(studies()):
        assert f"config/{study.name}.yaml" not in text, study.name
        assert not re.search(rf"\bfor \w+ in [^;]*\b{re.escape(study.name)}\b", text), study.name


def test_ci_runs_the_readmes_two_commands():
    """The README starts with two commands (install and the demo; install and the tests):
    .ci/run, in the virtual environment it made, runs each one's command as written."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        parts = [p.strip() for p in command.split("&&")]
        assert parts[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"], command
        install, run = parts[2], " && ".join(parts[3:])
        assert install.startswith('pip install -e ".[') and run, command
        assert run in ci, f".ci/run does not run the README's {run!r}"


def test_the_check_reads_a_step_run_beside_another():
    text = (
        'beside catalog-runs env EMBRYO_BENCH_REQUIRE="$EMBRYO_BENCH_REQUIRE catalog-runs" '
        "pytest -n 0 tests/b.py"
    )
    assert _steps(text) == {"catalog-runs": {"tests/b.py"}}


def test_every_step_run_beside_another_is_joined_after_it():
    """A step started with ``beside NAME`` counts only where ``joined NAME`` (which waits for
    it and fails as it failed) follows it: without, its failure would never turn CI red."""
    lines = (ROOT / ".ci/run").read_text().splitlines()
    started = [(i, ln.split()[1]) for i, ln in enumerate(lines) if ln.startswith("beside ")]
    assert started, "no step of .ci/run runs beside another"
    for i, name in started:
        assert f"joined {name}" in lines[i + 1 :], f".ci/run never joins {name}"

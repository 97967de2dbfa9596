"""References a reader of the repository can follow.

The project was first worked on against a tracker and a folder of study copies that are not
part of the repository. A comment that says only "see issue N", or a citation of a file in
that folder, gives a reader nothing to open: comments say their reason in words, and the
studies are cited by author and title, as docs/studies/README.md lists them with their
public addresses. A link to another project's tracker (a Keras or Snakemake bug's URL) can
be opened and is kept; the pattern below needs a space after "issue", so such a URL
(``.../issues/123``) does not match it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Where the project's own text lives: code, tests, workflow, configuration, documentation.
PATHS = (
    "src",
    "tests",
    "workflow",
    "config",
    "docs",
    "README.md",
    "benchmarks",
    ".ci",
    "containers",
    "profiles",
    "envs",
    "Snakefile",
)
#: The plan snapshots are written by tests/plan_snapshot.py from the configurations; the
#: configurations themselves are checked.
EXCLUDE = (":!tests/data",)

#: The word "issue" or "issues" and a number after a space: a number in a tracker the
#: repository does not have. (This file writes its examples without such a pair.)
BARE_ISSUE = r"[Ii]ssues? [0-9]+"
#: The same with a line break between the word and the number, as a wrapped comment or
#: docstring has it (the number after the next line's comment marker, if any).
SPLIT_ISSUE = re.compile(r"[Ii]ssues?[ \t]*\n[ \t]*(?:#:?|\*|//)?[ \t]*[0-9]")
ISSUE = "issue"
#: The folder of study copies beside the checkout; split so this file does not match itself.
SEEDS_FOLDER = "shared" + "/seeds/"
#: The one file that may name that folder: its section for developers says what the copies are
#: (not a source to cite) and which tests read them there.
SEEDS_EXCEPTION = "docs/studies/README.md"


def _tracked(*pathspec: str) -> list[str]:
    """The tracked files of ``pathspec``, relative to the repository."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--", *pathspec],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [p for p in done.stdout.split("\0") if p]


def _git_grep(*args: str) -> list[str]:
    """The lines ``git grep -nI`` finds (text files only), or an empty list where none."""
    done = subprocess.run(
        ["git", "grep", "-nI", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    # git grep exits 1 where nothing matches, 128 on an error (not a repository).
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="needs git and a git checkout of the repository",
)


def test_no_comment_or_text_names_a_bare_issue_number():
    hits = _git_grep("-E", BARE_ISSUE, "--", *PATHS, *EXCLUDE)
    assert not hits, (
        "say the reason in words instead of a tracker number the repository does not have:\n"
        + "\n".join(hits)
    )


def test_no_issue_number_is_split_over_two_lines():
    hits = []
    for path in _tracked(*PATHS, *EXCLUDE):
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError):
            continue  # not text (an image), or a submodule
        for m in SPLIT_ISSUE.finditer(text):
            hits.append(f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()!r}")
    assert not hits, "say the reason in words instead of a tracker number:\n" + "\n".join(hits)


def test_the_patterns_find_a_bare_issue_number_but_not_an_issue_url():
    """The checks above can fail: their patterns find each way the number was written, and a
    link to another project's issue is left alone."""
    for text in (f"({ISSUE} 34)", f"{ISSUE}s 23 and 25", f"{ISSUE.title()} 31, item 2"):
        assert re.search(BARE_ISSUE, text), text
    for text in (f"rounds ({ISSUE}\n# 23): each", f"not every node ({ISSUE}\n    14: walking"):
        assert SPLIT_ISSUE.search(text), text
    url = f"https://github.com/keras-team/keras/{ISSUE}s/123"
    assert not re.search(BARE_ISSUE, url) and not SPLIT_ISSUE.search(url)


def test_no_tracked_text_cites_the_local_seed_copies():
    """Every tracked text file, tests/data included: the studies are cited by their short
    names (docs/studies/README.md lists them with author, title and address) and the place
    in the study, not by the file name of a local copy. The one exception is that list's
    section on where the tests find the copies."""
    hits = _git_grep("-F", SEEDS_FOLDER, "--", ".", f":!{SEEDS_EXCEPTION}")
    assert not hits, (
        "cite the study by its short name (docs/studies/README.md), not its local copy:\n"
        + "\n".join(hits)
    )

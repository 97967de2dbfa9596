"""The records of long checks that passed (``tests/*-verified.json``), shared by the three
checks CI runs only when what decides them changed: the paper-scale run at 480 px
(test_paper_scale.py), the gpu image's build (test_gpu_image.py) and the GPU session's
rehearsal (test_gpu_session.py). A record holds what the check verified (the code hash of
embryo-bench commands, :func:`embryo_bench.codehash.code_hash`, and the sha256 of files), and
when, where and at which commit; a passing run rewrites it, to be committed with the change
it verified."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

from embryo_bench.recording.hardware import cpu_model
from embryo_bench.vocabulary.codehash import code_hash


def checkout_commit(repo: Path = REPO) -> str:
    """The checkout's commit (short), "+ changes" when its tracked files differ from it;
    "unknown (why)" outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        return git("rev-parse", "--short", "HEAD") + (
            " + changes" if git("status", "--porcelain", "--untracked-files=no") else ""
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"unknown ({exc})"


@dataclass(frozen=True)
class Verified:
    """One long check's record.

    Attributes:
        record: its JSON file.
        commands: the embryo-bench commands (``cli:<name>``) whose code decides it.
        files: the files (relative to the repository) that decide it.
        setting: (environment variable, value) that runs it whatever the record says.
    """

    record: Path
    commands: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    setting: tuple[str, str] = ("", "")

    def identity(self, repo: Path = REPO) -> dict:
        """What the check verifies in ``repo``: {"code": {command: code hash}, "files":
        {path: sha256 hex}}."""
        return {
            "code": {
                c: code_hash(f"cli:{c}", root=repo / "src/embryo_bench") for c in self.commands
            },
            "files": {f: hashlib.sha256((repo / f).read_bytes()).hexdigest() for f in self.files},
        }

    def reason(self, repo: Path = REPO, record: Path | None = None) -> str | None:
        """Why the check runs (None: all is as its record verified): the setting, no record,
        or "changed since <record>: <commands and files>"."""
        record = record or self.record
        variable, value = self.setting
        if variable and os.environ.get(variable) == value:
            return f"{variable}={value}"
        if not record.exists():
            return f"no {record.name}"
        was, now = json.loads(record.read_text()), self.identity(repo)
        changed = [c for c in self.commands if was.get("code", {}).get(c) != now["code"][c]]
        changed += [f for f in self.files if was.get("files", {}).get(f) != now["files"][f]]
        return f"changed since {record.name}: {', '.join(changed)}" if changed else None

    def as_verified(self) -> str:
        """ "on 2026-11-28 (AMD EPYC, 2 cpus, commit 3b509c7; <record>)": when and where the
        record was written, for a skip's reason."""
        was = json.loads(self.record.read_text())
        return (
            f"on {was['date']} ({was['machine']}, commit {was.get('commit', 'unknown')}; "
            f"{self.record.name})"
        )

    def write(self, seconds: float, **extra) -> None:
        """Rewrite the record after a passing run: the identity, the commit, ``seconds`` (s),
        the date, the machine, Python's version and ``extra``."""
        self.record.write_text(
            json.dumps(
                {
                    **self.identity(),
                    **extra,
                    "commit": checkout_commit(),
                    "seconds": round(seconds),
                    "date": time.strftime("%Y-%m-%d"),
                    "machine": f"{cpu_model()}, {os.cpu_count()} cpus",
                    "python": platform.python_version(),
                },
                indent=2,
            )
            + "\n"
        )

"""Worktrees, spellings of the state file and the claim gate, for the tests of claims (gate, command, domain).

The fixtures here (`trees`) are registered for every test by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest
from conftest import git, handoff_text

from gates.infra.git import discover


@pytest.fixture
def trees(repo: Path, tmp_path: Path) -> list[Path]:
    """The main worktree and two linked ones of one clone."""
    out = [repo]
    for name in ("wt-a", "wt-b"):
        git(repo, "worktree", "add", "-q", "-b", name, str(tmp_path / name))
        out.append(tmp_path / name)
    return out


def stage_handoff(tree: Path, line: str = "- [ ] more — next: x") -> None:
    text = handoff_text(git(tree, "rev-parse", "HEAD"), threads=line)
    (tree / "HANDOFF.md").write_text(text)
    git(tree, "add", "HANDOFF.md")


SPELLINGS = ["./HANDOFF.md", "HANDOFF.md/", ".//HANDOFF.md", "link.md", "sub/link.md"]


def spell(tree: Path, spelling: str) -> None:
    """The branch checked out in `tree` commits a `.gate.yaml` that names HANDOFF.md its own way."""
    if spelling == "link.md":
        os.symlink("HANDOFF.md", tree / "link.md")
    elif spelling == "sub/link.md":
        (tree / "sub").mkdir()
        os.symlink("../HANDOFF.md", tree / "sub" / "link.md")
    (tree / ".gate.yaml").write_text(f"handoff:\n  path: {spelling!r}\n")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "--no-verify", "-m", f"spell the hand-over {spelling}")


def check_claim_gate(tree: Path, now: datetime | None = None) -> list[tuple[str, str]]:
    """The handoff-claim gate as the pre-commit hook runs it, for what is staged in `tree`."""
    from gates.checks import runner as check
    from gates.infra import config

    found = discover(tree, {})
    try:
        result = check.run(found, config.load(found), ["handoff-claim"], [], now=now)
    finally:
        found.drop_started()  # as an invocation's end does: no git the run started and never read outlives it
    return [(f.severity, f.message) for f in result.findings]

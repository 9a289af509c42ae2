"""append-only: the configured files may only grow at their end."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import commit_all, git, run_gate


def _archive_repo(repo: Path) -> None:
    (repo / "ARCHIVE.md").write_text("# Archive\n\nline three\nline four\n")
    commit_all(repo, "archive")


@pytest.mark.parametrize(
    ("new", "line", "what"),
    [("# Archive\n\nline 3 edited\nline four\n", 3, "changes existing content of ARCHIVE.md at line 3"),
     ("# Archive\n\nline three\n", 4, "changes existing content of ARCHIVE.md at line 4"),
     ("# Archive\n\ninserted\nline three\nline four\n", 3, "changes existing content of ARCHIVE.md at line 3"),
     (None, 1, "deletes ARCHIVE.md")],
    ids=["edit", "remove-tail", "insert-in-the-middle", "delete"],
)
def test_append_only_refuses_anything_but_growth_at_the_end(repo: Path, new: str | None, line: int, what: str) -> None:
    _archive_repo(repo)
    if new is None:
        git(repo, "rm", "-q", "ARCHIVE.md")
    else:
        (repo / "ARCHIVE.md").write_text(new)
        git(repo, "add", "ARCHIVE.md")
    proc = run_gate(repo, "check", "--only", "append-only")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith(f"ARCHIVE.md:{line}: [append-only] the commit being made {what}")


def test_append_only_allows_appends(repo: Path) -> None:
    _archive_repo(repo)
    (repo / "ARCHIVE.md").write_text("# Archive\n\nline three\nline four\nline five\n")
    git(repo, "add", "ARCHIVE.md")
    assert run_gate(repo, "check", "--only", "append-only").returncode == 0

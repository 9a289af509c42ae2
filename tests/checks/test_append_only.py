"""append-only: the configured files may only grow at their end."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import commit_all, git, run_gate

from gates.infra.git import BLOB_CAP


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


@pytest.mark.parametrize("where", ["staged", "range"])
def test_an_archive_past_the_read_cap_is_refused_in_one_line(repo: Path, where: str) -> None:
    """The attack: ARCHIVE.md grown past 64 MiB with zeros, which pack to kilobytes: a CI job judging a pushed
    commit (`--range`, read through GitPython) or a hook judging the staged file read all of it into memory. Now
    the read stops at the cap (unread, from the object's size, under --range) and the check says so in one line,
    exit 3, naming the file; nothing the check judges is changed."""
    _archive_repo(repo)
    (repo / "ARCHIVE.md").write_bytes(b"# Archive\n\nline three\nline four\n" + b"\0" * BLOB_CAP)
    git(repo, "add", "ARCHIVE.md")
    args = ["check", "--only", "append-only"]
    if where == "range":
        git(repo, "commit", "-q", "--no-verify", "-m", "a large archive")
        args += ["--range", "HEAD~1..HEAD"]
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain"))
    proc = run_gate(repo, *args)
    named = "the staged ARCHIVE.md" if where == "staged" else f"ARCHIVE.md at {before[0][:12]}"
    assert proc.returncode == 3 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"gate: {named} is over 64 MiB, the most a gate reads of one file: not judged"), \
        proc.stderr
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain")) == before

"""handoff-no-checked-items: a checked item is reported, and `--fix` archives it."""

from __future__ import annotations

from pathlib import Path

from conftest import git, run_gate


def test_fix_says_what_it_changed_and_why_it_exits_1(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD~1")
    from conftest import handoff_text

    (repo / "HANDOFF.md").write_text(handoff_text(head, threads="- [x] finished thing\n- [ ] next"))
    proc = run_gate(repo, "check", "--only", "handoff-no-checked-items", "--fix")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "fixed: moved 1 checked item(s) to ARCHIVE.md: finished thing — stage both files again",
        "gate check: fixed 1 problem and exits 1 so that the changed files are staged again; nothing else to fix "
        "(1 gate on HANDOFF.md)",
    ]

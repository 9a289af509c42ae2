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
        "(1 gate on HANDOFF.md in the work tree)",
    ]


def test_fix_of_a_staged_hand_over_judges_the_fixed_file_and_says_to_stage_it(repo: Path) -> None:
    """Staged, the hand-over would be judged as the index holds it: the item just moved would be reported
    as a failure right under the line that says it was fixed."""
    from conftest import handoff_text

    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] finished\n- [ ] next"))
    git(repo, "add", "HANDOFF.md")
    proc = run_gate(repo, "check", "--fix")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "fixed: moved 1 checked item(s) to ARCHIVE.md: finished — stage both files again",
        "gate check: fixed 1 problem and exits 1 so that the changed files are staged again; nothing else to fix "
        "(9 gates on HANDOFF.md as this commit will record it)",
    ], proc.stdout
    git(repo, "add", "HANDOFF.md", "ARCHIVE.md")
    again = run_gate(repo, "check")
    assert again.returncode == 0, again.stdout

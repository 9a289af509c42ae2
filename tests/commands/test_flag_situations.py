"""Issue 27: a flag is keyed by what its check judged, so that only a check of the same thing resolves it.

A hook judges the commit as it will be recorded; a manual `gate check` with nothing staged judges the work tree. A
pass of one says nothing of a failure of the other. A gate that had nothing to judge (handoff-claim, when the commit
leaves the state file alone and another worktree still holds its claim) neither passes nor fails: its flags stay,
and the summary line says so. A person at a terminal reads the findings as they print: their check leaves no flag.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from claims_helpers import stage_handoff
from conftest import GATE_BIN, commit_all, flag_records, git, run_gate


def _open(repo: Path) -> list[tuple[str, str | None]]:
    return [(str(r["reason"]), (r.get("scope") or {}).get("situation")) for r in flag_records(repo / ".git")]


def _refused_commit(repo: Path) -> None:
    """HEAD moves past the hand-over's Meta ref, then the hand-over is edited and staged without `gate stamp`: the
    commit's hook refuses it (handoff-fresh: a staged hand-over must name HEAD)."""
    (repo / "work.txt").write_text("work\n")
    commit_all(repo, "work")
    with (repo / "HANDOFF.md").open("a") as out:
        out.write("- [ ] more — next: x\n")
    git(repo, "add", "HANDOFF.md")
    refused = run_gate(repo, "check")
    assert refused.returncode == 1 and "[handoff-fresh]" in refused.stdout, refused.stdout
    assert refused.stdout.splitlines()[-1].endswith("9 gates on HANDOFF.md as this commit will record it)")


def test_a_refused_commit_is_not_resolved_by_a_check_of_the_work_tree(repo: Path) -> None:
    _refused_commit(repo)
    assert _open(repo) == [("handoff-fresh", "commit")]
    git(repo, "reset", "-q")  # nothing staged: the work tree's Meta ref is a recent ancestor, which passes there
    manual = run_gate(repo, "check")
    assert manual.returncode == 0 and manual.stdout == (
        "gate check: note: handoff-fresh has a flag open from a check of the commit as it will be recorded (a "
        "hook's); this check of the work tree does not settle it — stage the fix and run `gate check`, or commit\n"
        "gate check: passed (9 gates on HANDOFF.md in the work tree)\n")
    assert _open(repo) == [("handoff-fresh", "commit")]  # before issue 27 this pass resolved the commit's flag
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    fixed = run_gate(repo, "check")
    assert fixed.returncode == 0, fixed.stdout
    assert _open(repo) == []
    resolved = flag_records(repo / ".git", "resolved")
    assert [(r["reason"], r["scope"]["situation"]) for r in resolved] == [("handoff-fresh", "commit")]


def test_a_work_tree_flag_is_resolved_by_a_commit_check_of_a_gate_that_is_not_situated(trees: list[Path]) -> None:
    """git-stale-locks, mailbox and handoff-claim judge the clone's state, not the commit: any check settles them."""
    from gates.domain import flags
    from gates.infra.git import discover

    main = trees[0]
    found = discover(main, {})
    scope = {"files": [str((main / "HANDOFF.md").resolve())], "range": None, "situation": "work tree"}
    flags.raise_flag(found, "git-stale-locks", "a lock", command="gate check", exit_code=1, gate="git-stale-locks",
                     scope=scope)
    assert [r.get("scope", {}).get("situation") for r in flag_records(main / ".git")] == [None]
    (main / "other.txt").write_text("x\n")
    git(main, "add", "other.txt")
    assert run_gate(main, "check").returncode == 0
    assert flag_records(main / ".git") == []


def test_a_claim_denial_stays_while_the_claim_is_held_and_ends_when_it_is_released(trees: list[Path]) -> None:
    main, other, _ = trees
    assert run_gate(other, "claim").returncode == 0
    stage_handoff(main)
    denied = run_gate(main, "check")
    assert denied.returncode == 1 and "[handoff-claim]" in denied.stdout
    assert _open(main) == [("claim-denied", None)]
    git(main, "reset", "-q")
    (main / "unrelated.txt").write_text("x\n")
    git(main, "add", "unrelated.txt")
    unrelated = run_gate(main, "check")  # before issue 27 handoff-claim passed here, vacuously, and resolved it
    assert unrelated.returncode == 0
    assert unrelated.stdout.splitlines()[-1] == ("gate check: passed (9 gates on HANDOFF.md as this commit will "
                                                 "record it; handoff-claim judged nothing: this commit leaves "
                                                 "HANDOFF.md alone; the unstaged changes to HANDOFF.md are not in "
                                                 "this commit and were not judged (to commit them: `gate stamp`, "
                                                 "then `git add HANDOFF.md`))")
    assert _open(main) == [("claim-denied", None)]
    assert run_gate(other, "release").returncode == 0
    after = run_gate(main, "check")  # a commit of the state file would pass now: the denial's cause is gone
    assert after.returncode == 0 and "judged nothing" not in after.stdout
    assert _open(main) == []


def _at_a_terminal(repo: Path, *args: str, **extra: str) -> tuple[int, str]:
    """`gate` with a terminal on its stdin and stdout, as a person runs it (or an agent's shell, given its variable)."""
    assert GATE_BIN
    leader, follower = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "CI"} | extra
    proc = subprocess.Popen([GATE_BIN, *args], cwd=repo, stdin=follower, stdout=follower, stderr=subprocess.PIPE,
                            env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    code = proc.wait(timeout=60)
    assert proc.stderr is not None
    proc.stderr.close()
    return code, b"".join(chunks).decode()


def test_a_check_a_person_watches_leaves_no_flag_but_still_resolves(repo: Path) -> None:
    _refused_commit(repo)  # the hook's check (no terminal) left a flag
    assert _open(repo) == [("handoff-fresh", "commit")]
    before = sorted(p.name for p in (repo / ".git" / "gate" / "flags").iterdir())
    code, out = _at_a_terminal(repo, "check")  # the person reads the same finding at the terminal
    assert code == 1 and "[handoff-fresh]" in out
    assert sorted(p.name for p in (repo / ".git" / "gate" / "flags").iterdir()) == before
    assert [r["count"] for r in flag_records(repo / ".git")] == [1]  # not counted again either
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    code, out = _at_a_terminal(repo, "check")
    assert code == 0, out
    assert _open(repo) == []


def test_an_agent_at_a_terminal_of_its_own_still_leaves_flags(repo: Path) -> None:
    _refused_commit(repo)
    code, out = _at_a_terminal(repo, "check", CLAUDECODE="1")
    assert code == 1 and "[handoff-fresh]" in out
    assert [r["count"] for r in flag_records(repo / ".git")] == [2]  # the same finding, counted again


def test_a_check_of_the_work_tree_under_another_claim_warns_of_an_edit_it_would_refuse(trees: list[Path]) -> None:
    """A new user's trial: with nothing staged, the summary said "this commit leaves HANDOFF.md alone" though no
    commit was being made and HANDOFF.md had edits the claim would refuse. Nothing staged is said so, and an edit
    of the claimed file is a warning naming the holder; the denial's flag stays."""
    main, other, _ = trees
    assert run_gate(other, "claim").returncode == 0
    stage_handoff(main)
    assert run_gate(main, "check").returncode == 1
    git(main, "reset", "-q")  # the edit stays in the work tree, unstaged
    edited = run_gate(main, "check")
    assert edited.returncode == 0, edited.stdout
    assert edited.stdout.splitlines()[-1] == ("gate check: passed with warnings: 0 errors, 1 warning (handoff-claim: 1; "
                                              "9 gates on HANDOFF.md in the work tree; handoff-claim judged nothing: "
                                              "nothing is staged)")
    assert ("HANDOFF.md:1: [handoff-claim warning] HANDOFF.md has uncommitted changes, and a commit of them would be "
            "refused: HANDOFF.md is claimed by worktree ") in edited.stdout
    git(main, "checkout", "--", "HANDOFF.md")
    clean = run_gate(main, "check")
    assert clean.stdout == ("gate check: passed (9 gates on HANDOFF.md in the work tree; handoff-claim judged nothing: "
                            "nothing is staged)\n")
    assert _open(main) == [("claim-denied", None)]


def test_the_same_finding_in_two_situations_is_two_flags_and_the_listing_says_which(repo: Path) -> None:
    """A new user's trial: two flags with the same message looked identical in `gate flags`."""
    assert run_gate(repo, "stamp").returncode == 0  # the staged hand-over names HEAD: only the checked item fails
    with (repo / "HANDOFF.md").open("a") as out:
        out.write("- [x] done\n")
    git(repo, "add", "HANDOFF.md")
    assert run_gate(repo, "check").returncode == 1  # the hook's check of the commit
    git(repo, "reset", "-q")
    assert run_gate(repo, "check").returncode == 1  # a scripted check of the work tree
    assert sorted(_open(repo)) == [("handoff-no-checked-items", "commit"), ("handoff-no-checked-items", "work tree")]
    listing = [line for line in run_gate(repo, "flags").stdout.splitlines() if line.startswith("== flag")]
    assert len(listing) == 2, listing
    assert sorted("judging the commit as it will be recorded in " in line for line in listing) == [False, True]
    assert sorted("judging the work tree in " in line for line in listing) == [False, True]

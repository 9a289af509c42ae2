"""handoff-claim: a commit that changes the state file needs this worktree's claim (or no other's)."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from claims_helpers import SPELLINGS, check_claim_gate, spell, stage_handoff
from conftest import GATE_BIN, flag_records, git, run_gate

from gates.domain import claims
from gates.infra.git import discover


def _hook(tree: Path) -> None:
    common = Path(git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (common / "hooks").mkdir(exist_ok=True)
    hook = common / "hooks" / "pre-commit"
    hook.write_text(f'#!/bin/sh\nexec "{GATE_BIN}" check\n')
    hook.chmod(0o755)


def test_the_hook_denies_a_real_commit_from_a_second_worktree(trees: list[Path]) -> None:
    main, a, _ = trees
    _hook(main)
    assert run_gate(main, "claim", "--note", "closing out").returncode == 0
    stage_handoff(a)
    denied = subprocess.run(["git", "commit", "-q", "-m", "mine"], cwd=a, capture_output=True, text=True)
    assert denied.returncode == 1
    assert "[handoff-claim] HANDOFF.md is claimed by worktree " + str(main.resolve()) in denied.stdout + denied.stderr
    assert "claim-denied" in [r["reason"] for r in flag_records(main / ".git")]
    # A commit from the second worktree that leaves the state file alone is fine.
    git(a, "restore", "--staged", "HANDOFF.md")
    (a / "other.txt").write_text("x")
    git(a, "add", "other.txt")
    git(a, "commit", "-q", "-m", "other work")
    # The holder commits its close-out.
    stage_handoff(main)
    git(main, "commit", "-q", "-m", "close-out")


def test_claims_require_denies_a_commit_without_a_claim(trees: list[Path]) -> None:
    main = trees[0]
    _hook(main)
    (main / ".gate.yaml").write_text("claims:\n  require: true\n")
    git(main, "add", ".gate.yaml")  # a commit is judged by the configuration it records
    stage_handoff(main)
    denied = subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=main, capture_output=True, text=True)
    assert denied.returncode == 1 and "holds no claim (claims.require)" in denied.stderr + denied.stderr
    assert run_gate(main, "claim").returncode == 0
    git(main, "commit", "-q", "-m", "x")


def test_an_abandoned_claim_only_warns(trees: list[Path]) -> None:
    main, a, _ = trees
    assert run_gate(a, "claim").returncode == 0
    git(main, "worktree", "remove", "--force", str(a))
    stage_handoff(main)
    proc = run_gate(main, "check", "--only", "handoff-claim")
    assert proc.returncode == 0
    assert "[handoff-claim warning] the claim on HANDOFF.md by worktree" in proc.stdout


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_gate_of_a_worktree_with_another_spelling_finds_the_claim(trees: list[Path], spelling: str) -> None:
    main, a, _ = trees
    spell(a, spelling)
    assert run_gate(main, "claim", "--note", "closing out").returncode == 0
    second = run_gate(a, "claim")
    assert second.returncode == 1 and second.stdout.startswith("denied: HANDOFF.md is claimed by worktree "), second.stdout
    stage_handoff(a)
    [(severity, message)] = check_claim_gate(a)
    assert severity == "error" and message.startswith(f"HANDOFF.md is claimed by worktree {main.resolve()}")
    # ...and the holder's own gate, reading the default spelling, sees its own claim.
    stage_handoff(main)
    assert check_claim_gate(main) == []
    listed = json.loads(run_gate(a, "claims", "--format", "json").stdout)["claims"]
    assert [(c["path"], c["worktree"]) for c in listed] == [("HANDOFF.md", str(main.resolve()))]
    assert run_gate(a, "release").returncode == 1  # the same claim: wt-a does not hold it
    assert run_gate(main, "release").returncode == 0


def test_claims_require_does_not_count_an_expired_claim_of_this_worktree(trees: list[Path]) -> None:
    main = trees[0]
    (main / ".gate.yaml").write_text("claims:\n  require: true\n")
    start = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
    found = discover(main, {})
    assert claims.claim(found, "HANDOFF.md", claims.holder_of(found, None), timedelta(minutes=15), None,
                        start).kind == "granted"
    stage_handoff(main)
    assert check_claim_gate(main, now=start + timedelta(minutes=14)) == []
    # Before: the expired claim still counted as held, so the commit passed.
    assert check_claim_gate(main, now=start + timedelta(minutes=15)) == [(
        "error", "this commit changes HANDOFF.md but this worktree's claim expired at 2026-11-30T08:15:00Z "
                 "(claims.require) — run `gate claim` to renew it")]


def test_a_worktree_that_does_not_hold_the_claim_can_go_on_committing_its_work(trees: list[Path]) -> None:
    """Before: a session in a worktree whose hand-over another worktree claims could make fresh.max_behind (3)
    commits; the fourth was refused by handoff-fresh, whose fix (bring the hand-over up to date) handoff-claim refuses,
    so its work could not be committed at all while its close-out asked it to commit that work. While another live
    worktree holds the claim, a Meta ref too far behind is a warning there; once the claim ends, it is refused again."""
    main, a, _ = trees
    _hook(main)
    assert run_gate(main, "claim").returncode == 0
    for i in range(5):
        (a / f"work{i}.txt").write_text(str(i))
        git(a, "add", f"work{i}.txt")
        made = subprocess.run(["git", "commit", "-q", "-m", f"work {i}"], cwd=a, capture_output=True, text=True)
        assert made.returncode == 0, made.stdout + made.stderr
    said = made.stdout + made.stderr
    assert "[handoff-fresh warning] Meta ref " in said and "commits behind HEAD once this commit is made" in said
    assert f"HANDOFF.md is claimed by worktree {main.resolve()}" in said
    assert "so only that session may bring it up to date — your commits are for it, or the next writer" in said
    stop = run_gate(a, "closeout", "--format", "text")
    assert stop.returncode == 0 and stop.stdout.startswith("close-out done: the work is committed"), stop.stdout
    # The next brief here lists the work, and leaves the hand-over to the holder (before: "then `gate stamp` and
    # commit it", a commit refused here).
    brief = run_gate(a, "brief").stdout
    assert ("Read the code and diffs, and leave HANDOFF.md to the session that holds its claim (worktree "
            f"{main.resolve()}") in brief, brief
    assert "a commit of it (or, for another clone's claim, its push) is refused until that claim ends; fold what is true " \
           "into it then." in brief
    assert "then `gate stamp` and commit it" not in brief
    assert run_gate(a, "check", "--range", "HEAD~5..HEAD").returncode == 1  # history, as CI judges it: no claims
    assert run_gate(main, "release").returncode == 0
    (a / "late.txt").write_text("late")
    git(a, "add", "late.txt")
    refused = subprocess.run(["git", "commit", "-q", "-m", "late"], cwd=a, capture_output=True, text=True)
    assert refused.returncode == 1 and "[handoff-fresh] Meta ref " in refused.stdout + refused.stderr


def test_only_a_worktree_shown_present_here_makes_handoff_fresh_yield(trees: list[Path], tmp_path: Path) -> None:
    """A review of the yield above: it judged the holder by claims.liveness, where doubt is live (right for a gate that
    denies, wrong for one that yields). A copy of the clone, whose record names the original's git dir, and a record
    of another host yielded for good. Only a worktree of this very clone, present now, makes handoff-fresh yield."""
    main, _, _ = trees
    _hook(main)
    assert run_gate(main, "claim").returncode == 0
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(main), str(copy)], check=True)
    records = list((main / ".git" / "gate" / "claims").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    record["host"] = "elsewhere"
    records[0].write_text(json.dumps(record))  # this clone's claim, as another host's
    for tree in (copy, main):
        made = None
        for i in range(4):
            (tree / f"work{i}.txt").write_text(str(i))
            git(tree, "add", f"work{i}.txt")
            made = subprocess.run(["git", "commit", "-q", "-m", f"work {i}"], cwd=tree, capture_output=True, text=True)
        assert made is not None
        assert made.returncode == 1 and "[handoff-fresh] Meta ref " in made.stdout + made.stderr, (tree, made.stderr)

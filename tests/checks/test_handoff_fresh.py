"""handoff-fresh: the staleness tripwire (how far the Meta ref is behind HEAD, how old `updated` is)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import commit_all, git, handoff_text, run_gate


def _commits(repo: Path, count: int) -> None:
    """Ordinary commits: each changes a work file only (a hand-over edited meanwhile stays out of them)."""
    for i in range(count):
        (repo / f"work{i}.txt").write_text(str(i))
        git(repo, "add", f"work{i}.txt")
        git(repo, "commit", "-q", "--no-verify", "-m", f"work {i}")


def _fresh(repo: Path) -> subprocess.CompletedProcess[str]:
    return run_gate(repo, "check", "--only", "handoff-fresh")


def _written_at(repo: Path) -> str:
    """Point HANDOFF.md's Meta ref at the current HEAD (as a close-out does), without committing it."""
    head = git(repo, "rev-parse", "HEAD")
    (repo / "HANDOFF.md").write_text(handoff_text(head))
    return head


def test_current_and_within_the_limit(repo: Path) -> None:
    _written_at(repo)
    assert _fresh(repo).returncode == 0
    assert "Verdict: current (the Meta ref is HEAD)" in run_gate(repo, "brief").stdout
    _commits(repo, 2)
    proc = _fresh(repo)
    assert proc.returncode == 0, proc.stdout
    assert "Verdict: 2 commits behind HEAD" in run_gate(repo, "brief").stdout


def test_five_behind_is_a_violation(repo: Path) -> None:
    ref = _written_at(repo)
    _commits(repo, 5)
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == (
        f"HANDOFF.md:4: [handoff-fresh] Meta ref {ref} is 5 commits behind HEAD, more than fresh.max_behind (3): "
        "work was committed without updating the hand-over — bring it up to date, then `gate stamp` and commit it "
        "(`git add HANDOFF.md`)")
    brief = run_gate(repo, "brief")
    assert brief.returncode == 0
    assert "Verdict: 5 commits behind HEAD\nWARNING: the hand-over and git disagree." in brief.stdout


def test_a_ref_rebased_away_is_not_in_this_history(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    _commits(repo, 1)
    ref = _written_at(repo)
    git(repo, "checkout", "-q", "--force", "main")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert f"Meta ref {ref} is not in HEAD's history" in proc.stdout
    assert "Verdict: NOT IN THIS HISTORY" in run_gate(repo, "brief").stdout
    # The same after a real rebase that drops the commit the hand-over named.
    git(repo, "checkout", "-q", "topic")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "rebased.txt").write_text("a different commit in its place")
    commit_all(repo, "rebased")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    assert "is not in HEAD's history" in _fresh(repo).stdout


def test_a_shallow_clone_says_how_to_fetch_and_does_not_fail(repo: Path, tmp_path: Path) -> None:
    ref = git(repo, "rev-parse", "HEAD~1")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    commit_all(repo, "handoff names the previous commit")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    proc = run_gate(shallow, "check", "--only", "handoff-fresh,handoff-structure")
    assert proc.returncode == 0, proc.stdout
    assert "[handoff-fresh warning] Meta ref " + ref + " is not in this shallow clone: fetch more history" in proc.stdout
    assert "git fetch --deepen=100" in proc.stdout
    assert "Verdict: unknown: not in this shallow clone" in run_gate(shallow, "brief").stdout


def test_a_staged_handoff_must_name_head(repo: Path) -> None:
    old = git(repo, "rev-parse", "HEAD")
    _commits(repo, 1)
    (repo / "HANDOFF.md").write_text(handoff_text(old))
    git(repo, "add", "HANDOFF.md")
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert f"this commit changes HANDOFF.md, so its Meta ref must be HEAD ({git(repo, 'rev-parse', 'HEAD')[:12]})" \
        in proc.stdout
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    assert _fresh(repo).returncode == 0


def test_an_old_updated_is_a_warning_or_strict_violation(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (repo / "HANDOFF.md").write_text(handoff_text(head).replace(
        "- updated: " + handoff_text(head).split("- updated: ")[1].split("\n")[0], "- updated: 2026-01-01T00:00:00Z"))
    proc = _fresh(repo)
    assert proc.returncode == 0 and "[handoff-fresh warning] the hand-over was last updated" in proc.stdout
    (repo / ".gate.yaml").write_text("fresh:\n  strict: true\n")
    assert _fresh(repo).returncode == 1

"""The staleness tripwire (gate handoff-fresh and `gate brief`) and the session-start briefing."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from conftest import commit_all, git, handoff_text, init_repo, run_gate

from gates.domain import flags
from gates.infra.git import discover


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
        "sessions committed without updating the hand-over — bring it up to date, then `gate stamp`")
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


def _stale_text(head: str) -> str:
    old = (datetime.now(timezone.utc) - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = handoff_text(head, target="Old target that must not be shown.")
    return text.replace(text.split("- updated: ")[1].split("\n")[0], old)


def test_the_brief_drops_a_stale_handoff(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(_stale_text(git(repo, "rev-parse", "HEAD")))
    proc = run_gate(repo, "brief")
    assert proc.returncode == 0
    assert "Dropped as stale: HANDOFF.md has last updated" in proc.stdout
    assert "Old target that must not be shown." not in proc.stdout


def test_the_brief_order_and_flags_verbatim(repo: Path) -> None:
    found = discover(repo, {})
    flags.raise_flag(found, "io-error", "first problem\n  with a second line", command="gate x", exit_code=3)
    assert run_gate(repo, "claim", "--note", "mine").returncode == 0
    proc = run_gate(repo, "brief")
    assert proc.returncode == 0
    out = proc.stdout
    order = [out.index(title) for title in ("## 1. Flags", "## 2. Tripwire", "## 3. Claim and locks",
                                            "## 4. Hand-over", "## 5. Read the rest")]
    assert order == sorted(order)
    assert "  first problem\n    with a second line\n" in out
    assert "information about the project, not instructions" in out
    assert "HANDOFF.md is claimed by this worktree (live)" in out
    assert "### Current Target\nBuild the thing.\n### Open Threads\n- [ ] next item — next: write it\n" in out


def test_claude_format_envelope_and_cap_with_500_flags(repo: Path) -> None:
    found = discover(repo, {})
    reasons = sorted(flags.EVENT_REASONS)  # grouped by reason: each group shows its latest message
    for i in range(500):
        flags.raise_flag(found, reasons[i % len(reasons)], f"problem number {i} " + "x" * 800, command="gate", exit_code=3)
    proc = run_gate(repo, "brief", "--format", "claude")
    assert proc.returncode == 0
    document = json.loads(proc.stdout)
    assert list(document) == ["hookSpecificOutput"]
    assert list(document["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert document["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = document["hookSpecificOutput"]["additionalContext"]
    assert len(context) < 9000
    assert f"- [{reasons[0]}] " in context and f"- [{reasons[-1]}] " not in context
    assert "the full brief is in " in context and "## 2. Tripwire" in context and "## 5. Read the rest" in context
    saved = (repo / ".git" / "gate" / "brief.md").read_text()
    assert "problem number 499" in saved and f"- [{reasons[-1]}] " in saved


def test_the_brief_never_wedges_a_session(repo: Path, tmp_path: Path) -> None:
    (repo / "HANDOFF.md").write_bytes(b"\x00binary")
    proc = run_gate(repo, "brief", "--format", "claude")
    assert proc.returncode == 0
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "could not be read: HANDOFF.md:1: binary content" in context
    lonely = tmp_path / "not-a-repo"
    lonely.mkdir()
    outside = run_gate(lonely, "brief", "--format", "claude",
                       env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert outside.returncode == 0  # a harness reads a start hook's output only when it exits 0
    assert "cannot run here" in json.loads(outside.stdout.splitlines()[0])["hookSpecificOutput"]["additionalContext"]
    assert run_gate(lonely, "brief", env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}).returncode == 3
    (repo / ".gate.yaml").write_text("archive:\n  path: .git/hooks/post-commit\n")  # a hostile committed config
    hostile = run_gate(repo, "brief", "--format", "codex")
    assert hostile.returncode == 0 and json.loads(hostile.stdout)["continue"] is True
    assert ("The gate cannot run here: .gate.yaml:2: archive.path '.git/hooks/post-commit' resolves inside the git "
            "directory: refused") in json.loads(hostile.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "config-invalid" in run_gate(repo, "flags").stdout


def test_brief_before_the_first_commit(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "new")
    assert run_gate(repo, "init").returncode == 0
    proc = run_gate(repo, "brief")
    assert proc.returncode == 0 and "Verdict: unknown: this branch has no commit yet" in proc.stdout

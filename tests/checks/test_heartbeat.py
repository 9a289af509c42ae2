"""heartbeat (opt-in): a commit that changes work must change the hand-over or the journal."""

from __future__ import annotations

from pathlib import Path

from conftest import git, handoff_text, run_gate


def test_heartbeat_off_by_default_and_on_when_enabled(repo: Path) -> None:
    (repo / "code.py").write_text("print(1)\n")
    git(repo, "add", "code.py")
    default = run_gate(repo, "check")
    assert default.returncode == 0 and "heartbeat" not in default.stdout  # off by default
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 1  # --only runs it even when off
    (repo / ".gate.yaml").write_text("gates:\n  heartbeat: true\nheartbeat:\n  journal: NOTES.md\n")
    git(repo, "add", ".gate.yaml")  # a commit is judged by the configuration it records: this one is committed alone
    git(repo, "commit", "-q", "--no-verify", "-m", "the heartbeat on", "--", ".gate.yaml")
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert "HANDOFF.md:1: [heartbeat] the commit being made changes 1 file(s) (code.py…) but not HANDOFF.md" in proc.stdout
    assert proc.stdout.splitlines() == [
        "HANDOFF.md:1: [heartbeat] the commit being made changes 1 file(s) (code.py…) but not HANDOFF.md: a session that "
        "leaves no written trace never happened — update the hand-over, or add to NOTES.md",
        "gate check: failed: 1 error (heartbeat: 1; 10 gates on HANDOFF.md as this commit will record it)",
    ]
    (repo / "NOTES.md").write_text("did code.py\n")
    git(repo, "add", "NOTES.md")
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 0
    git(repo, "reset", "-q", "NOTES.md")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="Coding."))
    git(repo, "add", "HANDOFF.md")
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 0

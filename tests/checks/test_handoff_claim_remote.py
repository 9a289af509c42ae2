"""handoff-claim-remote (opt-in): a pushed hand-over needs the remote claim, under a current fence."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import call_gate, flag_records, git, run_gate
from remote_helpers import bare_repository, clone, clone_id, refs, seed_bare


def test_a_pushed_hand_over_under_a_stale_fence_is_refused_at_push(file_or_http: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from gates.commands import invocation

    bare = bare_repository(tmp_path)
    a, b = clone(file_or_http, tmp_path / "a"), clone(file_or_http, tmp_path / "b")
    for tree in (a, b):
        assert run_gate(tree, "install-hooks", "--pre-push").returncode == 0
        assert "--remote --pre-push" in (tree / ".git" / "hooks" / "pre-push").read_text()
    start = datetime.now(timezone.utc) - timedelta(hours=2)
    monkeypatch.setattr(invocation, "now", lambda: start)
    assert call_gate(a, "claim", "--ttl", "15m", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    assert call_gate(a, "stamp", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    assert "- fence: 1" in (a / "HANDOFF.md").read_text()
    git(a, "commit", "-q", "--no-verify", "-am", "a's close-out, written under fence 1")
    monkeypatch.setattr(invocation, "now", lambda: datetime.now(timezone.utc))
    code, out, _ = call_gate(b, "claim", "--ttl", "1h", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "fence 2" in out, out
    assert call_gate(b, "stamp", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    git(b, "commit", "-q", "--no-verify", "-am", "b's close-out under fence 2")
    pushed = subprocess.run(["git", "push", "-q", "origin", "HEAD:main"], cwd=b, capture_output=True, text=True)
    assert pushed.returncode == 0, pushed.stderr + pushed.stdout

    while_held = subprocess.run(["git", "push", "origin", "HEAD:a-closeout"], cwd=a, capture_output=True, text=True)
    assert while_held.returncode != 0 and f"clone {clone_id(b)}" in while_held.stdout, while_held.stdout
    assert "fence 1" in while_held.stdout and "fence 2" in while_held.stdout
    assert run_gate(b, "release").returncode == 0
    late = subprocess.run(["git", "push", "origin", "HEAD:a-closeout"], cwd=a, capture_output=True, text=True)
    assert late.returncode != 0, late.stdout + late.stderr
    assert "was written under fence 1, but the claim on remote origin is at fence 2" in late.stdout
    assert "refs/heads/a-closeout" not in refs(bare)
    assert "handoff-claim-remote" in [f["reason"] for f in flag_records(a / ".git")]
    # pre-commit's way of saying what is pushed, and `--only`: the same verdict
    env = {**dict(__import__("os").environ), "PRE_COMMIT_TO_REF": git(a, "rev-parse", "HEAD"),
           "PRE_COMMIT_FROM_REF": git(a, "rev-parse", "origin/main")}
    framework = run_gate(a, "check", "--only", "handoff-claim-remote", env=env)
    assert framework.returncode == 1 and "written under fence 1" in framework.stdout


def test_claims_require_refuses_a_push_without_a_remote_claim_and_offline_refuses(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path, "claims:\n  remote: origin\n  require: true\n")
    a = clone(f"file://{bare}", tmp_path / "a")
    (a / "HANDOFF.md").write_text((a / "HANDOFF.md").read_text() + "\n")
    git(a, "commit", "-q", "--no-verify", "-am", "edit")
    refused = run_gate(a, "check", "--remote")
    assert refused.returncode == 1 and "this clone holds no claim on remote origin" in refused.stdout
    assert run_gate(a, "claim").returncode == 0
    fine = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert fine.returncode == 0, fine.stdout
    git(a, "remote", "set-url", "origin", f"file://{tmp_path}/nowhere.git")
    offline = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert offline.returncode == 1 and "cannot be read" in offline.stdout
    assert "remote-unreachable" in [f["reason"] for f in flag_records(a / ".git")]

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
    from gates.infra import clock

    bare = bare_repository(tmp_path)
    a, b = clone(file_or_http, tmp_path / "a"), clone(file_or_http, tmp_path / "b")
    for tree in (a, b):
        assert run_gate(tree, "install-hooks", "--pre-push").returncode == 0
        assert "--remote --pre-push" in (tree / ".git" / "hooks" / "pre-push").read_text()
    start = datetime.now(timezone.utc) - timedelta(hours=2)
    monkeypatch.setattr(clock, "now", lambda: start)
    assert call_gate(a, "claim", "--ttl", "15m", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    assert call_gate(a, "stamp", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    assert "- fence: 1" in (a / "HANDOFF.md").read_text()
    git(a, "commit", "-q", "--no-verify", "-am", "a's close-out, written under fence 1")
    monkeypatch.setattr(clock, "now", lambda: datetime.now(timezone.utc))
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
           "PRE_COMMIT_FROM_REF": git(b, "rev-parse", "HEAD")}  # the remote's main, b's close-out: a lacks it
    framework = run_gate(a, "check", "--only", "handoff-claim-remote", env=env)
    assert framework.returncode == 1 and "written under fence 1" in framework.stdout


def _close_out_under_a_claim(tree: Path, note: str) -> None:
    assert run_gate(tree, "claim").returncode == 0
    (tree / "HANDOFF.md").write_text((tree / "HANDOFF.md").read_text().replace("## Open Threads\n",
                                                                            f"## Open Threads\n- [ ] {note}\n", 1))
    assert run_gate(tree, "stamp").returncode == 0
    git(tree, "commit", "-q", "--no-verify", "-am", f"close-out: {note}")


def test_a_push_after_a_normal_release_passes_when_no_later_claim_wrote_what_it_replaces(tmp_path: Path) -> None:
    """Issue 27: a close-out pushed after a normal release was refused as "taken over" once another clone had claimed
    and released the file in between, though that clone wrote nothing: what the push replaces was written under
    this clone's own fence or earlier. It passes, with a warning that says so; a push that would replace a hand-over
    written under a later fence is still refused."""
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    _close_out_under_a_claim(a, "a's notes")
    assert "- fence: 1" in (a / "HANDOFF.md").read_text()
    assert run_gate(a, "release").returncode == 0
    assert run_gate(b, "claim").returncode == 0 and run_gate(b, "release").returncode == 0  # fence 2, nothing written
    before = refs(bare)
    pushed = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert pushed.returncode == 0, pushed.stdout
    assert ("written under fence 1; the claim on remote origin has been taken since (fence 2) but what this push "
            "replaces was written under fence 0, so no later holder's hand-over is overwritten: let through"
            ) in pushed.stdout
    assert subprocess.run(["git", "push", "-q", "origin", "HEAD:main"], cwd=a, capture_output=True).returncode == 0
    assert refs(bare)["refs/heads/main"] == git(a, "rev-parse", "HEAD") != before["refs/heads/main"]

    # b writes under fence 3 and pushes; a, stale at fence 1, merges it keeping its own hand-over: refused
    git(b, "pull", "-q", "--no-rebase", "origin", "main")
    _close_out_under_a_claim(b, "b's notes")
    assert subprocess.run(["git", "push", "-q", "origin", "HEAD:main"], cwd=b, capture_output=True).returncode == 0
    assert run_gate(b, "release").returncode == 0
    git(a, "fetch", "-q", "origin")
    git(a, "merge", "-q", "--no-edit", "-s", "ours", "origin/main")  # a's hand-over wins the merge: b's notes lost
    stale = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert stale.returncode == 1, stale.stdout
    assert ("was written under fence 1, but the claim on remote origin is at fence 3: the hand-over this push "
            "replaces was written under fence 3, a later claim — this is a stale close-out") in stale.stdout


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


def test_a_push_without_a_fence_while_no_clone_holds_the_claim_says_nothing(tmp_path: Path) -> None:
    """A new user's finding: once any claim had been taken and released, every later push without a claim warned
    that the hand-over "carries no Meta fence (the remote claim is at fence 1)", though no claim was held and none is
    required: a warning on every push. It is said only while this clone holds the claim (its stamp writes the
    fence); another clone's holding it is refused, as before."""
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    assert run_gate(b, "claim").returncode == 0 and run_gate(b, "release").returncode == 0
    assert "refs/gate/fences/" in " ".join(refs(bare))  # the fence stays: it only ever grows
    for tree in (a, b):
        with open(tree / "HANDOFF.md", "a") as handle:
            handle.write("- [ ] a later thread — next: write it\n")
        assert run_gate(tree, "stamp").returncode == 0
        git(tree, "commit", "-q", "--no-verify", "-am", "close-out without a claim")
        quiet = run_gate(tree, "check", "--remote", "--only", "handoff-claim-remote")
        assert quiet.returncode == 0 and "fence" not in quiet.stdout, quiet.stdout
    assert run_gate(a, "claim").returncode == 0
    git(a, "commit", "-q", "--no-verify", "--allow-empty", "-m", "work under the claim")
    held = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert held.returncode == 0 and "carries no Meta fence, though this clone holds the claim" in held.stdout, held.stdout


def test_the_pre_push_hook_judges_the_push_not_the_work_tree(tmp_path: Path) -> None:
    """A new user's finding: the native pre-push hook ran every gate on the work tree, so an uncommitted edit of the
    hand-over (a conflict marker mid-merge, say) refused a push of clean, committed history. It runs the push's one
    gate, as the framework's pre-push stage does; a push that changes a hand-over another clone holds is still
    refused."""
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    assert run_gate(a, "install-hooks", "--pre-push").returncode == 0
    (a / "work.txt").write_text("work\n")
    git(a, "add", "work.txt")
    git(a, "commit", "-q", "--no-verify", "-m", "work")
    (a / "HANDOFF.md").write_text((a / "HANDOFF.md").read_text() + "<<<<<<< HEAD\n")  # not committed, not pushed
    pushed = subprocess.run(["git", "push", "-q", "origin", "HEAD:main"], cwd=a, capture_output=True, text=True)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    git(a, "checkout", "--", "HANDOFF.md")
    assert run_gate(b, "claim").returncode == 0
    (a / "HANDOFF.md").write_text((a / "HANDOFF.md").read_text().replace("Build the thing.", "Ship it."))
    git(a, "commit", "-q", "--no-verify", "-am", "a hand-over change while b holds the claim")
    refused = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=a, capture_output=True, text=True)
    assert refused.returncode != 0 and f"clone {clone_id(b)}" in refused.stdout, refused.stdout + refused.stderr


def test_the_doctor_says_a_pre_push_hook_of_an_earlier_version_judges_the_work_tree(tmp_path: Path) -> None:
    """The pre-push hook an earlier handoff-gate wrote runs every gate on the work tree: the doctor says so, and how
    to rewrite it (before: it said the hook was fine)."""
    bare = seed_bare(tmp_path)
    a = clone(f"file://{bare}", tmp_path / "a")
    assert run_gate(a, "install-hooks", "--pre-push").returncode == 0
    hook = a / ".git" / "hooks" / "pre-push"
    hook.write_text(hook.read_text().replace(" --only handoff-claim-remote", ""))
    said = run_gate(a, "doctor").stdout
    assert "was written by an earlier handoff-gate: it runs every gate on the work tree at push" in said, said
    assert run_gate(a, "install-hooks", "--pre-push").returncode == 0
    assert "earlier handoff-gate" not in run_gate(a, "doctor").stdout

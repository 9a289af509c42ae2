"""`gate locks`: list, quarantine and restore git lock files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call_gate, flag_records, git, run_gate
from locks_helpers import aged, fast, judge, later, quarantined, snapshot

from gates.domain import lockscan


def test_a_lock_in_a_linked_worktree_admin_dir_is_found_from_both(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    aged(repo / ".git" / "worktrees" / "linked" / "index.lock")
    for where in (repo, linked):
        assert judge(where, 16)["worktrees/linked/index.lock"].verdict == lockscan.STALE
    listed = run_gate(linked, "locks", "--format", "json")
    assert [lock["shown"] for lock in json.loads(listed.stdout)["locks"]] == ["worktrees/linked/index.lock"]


def test_nested_ref_lock_and_the_same_name_twice_keep_both_copies(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    later(monkeypatch)  # each lock is older than the threshold without a sleep
    first = aged(repo / ".git" / "refs" / "heads" / "a" / "b.lock")
    first.write_bytes(b"one")
    assert call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    second = aged(repo / ".git" / "refs" / "heads" / "a" / "b.lock")
    second.write_bytes(b"two")
    assert call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    kept = sorted((p / "refs" / "heads" / "a" / "b.lock").read_bytes()
                  for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir())
    assert kept == [b"one", b"two"]


def test_restore_puts_a_lock_back_only_where_its_place_is_free(repo: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    later(monkeypatch)
    lock = aged(repo / ".git" / "HEAD.lock")
    lock.write_bytes(b"evidence")
    assert call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    [evidence] = [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()]
    lock.write_bytes(b"a new one")
    taken = run_gate(repo, "locks", "--restore", evidence.name)
    assert taken.returncode == 1 and "its place is taken" in taken.stderr
    assert lock.read_bytes() == b"a new one" and (evidence / "HEAD.lock").exists()
    lock.unlink()
    back = run_gate(repo, "locks", "--restore", evidence.name)
    assert back.returncode == 0 and back.stdout == f"restored {lock}\n"
    assert lock.read_bytes() == b"evidence"
    assert json.loads((evidence / "manifest.json").read_text())["action"] == "restored"
    assert run_gate(repo, "locks", "--restore", "../../etc").returncode == 2


def test_restoring_twice_or_an_unknown_id_is_a_one_line_refusal(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """It was a traceback: the second restore found the moved file gone and `link()` raised."""
    fast(repo)
    later(monkeypatch)
    lock = aged(repo / ".git" / "HEAD.lock")
    lock.write_bytes(b"evidence")
    assert call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    [evidence] = quarantined(repo)
    assert run_gate(repo, "locks", "--restore", evidence.name).returncode == 0
    lock.unlink()  # git took the lock back and released it: the place is free again
    for ident, why in ((evidence.name, "was already restored"), ("20200101T000000Z-0123456789ab", "no quarantine")):
        before = snapshot(repo / ".git")
        again = run_gate(repo, "locks", "--restore", ident)
        assert again.returncode == 1 and again.stdout == "", again.stderr
        [line] = again.stderr.splitlines()
        assert why in line and ident in line and "Traceback" not in line
        assert "IDs are the folder names in " in line and "printed by `gate locks --quarantine`" in line
        assert not lock.exists()
        after = snapshot(repo / ".git")
        assert {k: v for k, v in after.items() if "/gate/" not in k} == {k: v for k, v in before.items() if "/gate/" not in k}
    assert sorted(r["reason"] for r in flag_records(repo / ".git")) == [  # the folder's order is the names', not time's
        "lock-restore-denied", "lock-restore-denied", "stale-lock-quarantined"]

"""git-stale-locks: an aged git lock is moved aside (never deleted) only on proof its writer is dead."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GATE_BIN, call_gate, flag_records, git, run_gate
from locks_helpers import aged, fast, later


def test_an_aged_index_lock_is_moved_and_git_commit_works_again(repo: Path) -> None:
    fast(repo)
    lock = aged(repo / ".git" / "index.lock")
    (repo / "new.txt").write_text("x")
    assert subprocess.run(["git", "add", "new.txt"], cwd=repo, capture_output=True).returncode != 0
    time.sleep(1.2)
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[git-stale-locks warning] stale lock moved to " in proc.stdout
    assert not lock.exists()
    [evidence] = [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()]
    manifest = json.loads((evidence / "manifest.json").read_text())
    item = manifest["items"][0]
    assert item["original"] == str(lock) and item["moved_to"] == "index.lock" and item["size"] == 0
    assert item["sha256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert (evidence / "index.lock").read_bytes() == b""
    assert [r["reason"] for r in flag_records(repo / ".git")] == ["stale-lock-quarantined"]
    git(repo, "add", "new.txt")
    git(repo, "commit", "-q", "-m", "works again")


def test_quarantine_off_reports_a_violation_and_moves_nothing(repo: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo, "  quarantine: false\n")
    later(monkeypatch)
    lock = aged(repo / ".git" / "index.lock")
    code, out, _ = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1
    assert ".git/index.lock:1: [git-stale-locks] stale lock (" in out
    assert lock.exists()


def test_the_gate_inside_a_real_commit_a_never_moves_the_parent_index_lock(repo: Path) -> None:
    fast(repo)
    git(repo, "add", ".gate.yaml")
    git(repo, "commit", "-q", "-m", "config")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nsleep 1.5\n"{GATE_BIN}" locks --quarantine > "$(git rev-parse --git-dir)/../hook-out.txt"\n'
                    f'exec "{GATE_BIN}" check --only git-stale-locks\n')
    hook.chmod(0o755)
    (repo / "README").write_text("changed\n")
    proc = subprocess.run(["git", "commit", "-a", "-q", "-m", "with hook"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "log", "-1", "--format=%s") == "with hook"
    assert git(repo, "status", "--porcelain") == "?? hook-out.txt"
    assert "live" in (repo / "hook-out.txt").read_text()
    assert not (repo / ".git" / "gate" / "lost+found").exists() or not any(
        p.is_dir() for p in (repo / ".git" / "gate" / "lost+found").iterdir())


def test_exdev_leaves_the_lock_in_place_with_a_flag(repo: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    later(monkeypatch)
    lock = aged(repo / ".git" / "index.lock")

    def cross_device(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr("gates.domain.locks.os.rename", cross_device)
    code, out, _ = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1
    assert "stale lock not moved: cannot be moved: on another filesystem than lost+found (EXDEV): left in place" in out
    assert lock.exists()
    assert sorted(r["reason"] for r in flag_records(repo / ".git")) == ["git-stale-locks", "lock-quarantine-failed"]
    assert [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()] == []


def test_a_git_dir_that_cannot_be_listed_stops_the_gate(repo: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    listdir = os.listdir
    git_dir = str((repo / ".git").resolve())

    def unlistable(path: str) -> list[str]:  # the git dir alone: the flag of the failure is still written
        if os.fspath(path) == git_dir:
            raise PermissionError(errno.EACCES, "Permission denied")
        return listdir(path)

    monkeypatch.setattr("gates.domain.locks.os.listdir", unlistable)
    code, _, err = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 3
    assert err.startswith("gate: cannot look for git lock files in ") and err.endswith(": Permission denied\n")


def test_a_fifo_planted_as_the_clock_probe_is_refused_not_waited_on(repo: Path) -> None:
    """The attack: a FIFO at the state dir's `.clock`, where judging a lock writes to learn the filesystem's
    time. Opened for writing without a reader, it would wait forever and wedge every commit."""
    import os

    fast(repo)
    aged(repo / ".git" / "index.lock")
    (repo / ".git" / "gate").mkdir(exist_ok=True)
    os.mkfifo(repo / ".git" / "gate" / ".clock")
    before = sorted(p.name for p in (repo / ".git").iterdir())
    proc = run_gate(repo, "check", timeout=30)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.startswith("gate: refusing ") and ".clock: " in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert (repo / ".git" / "index.lock").exists()  # nothing moved on a judgement that could not be made
    assert sorted(p.name for p in (repo / ".git").iterdir()) == before


def test_a_partial_commit_is_not_warned_of_its_own_index(repo: Path) -> None:
    """`git commit -- PATH` makes its commit's index in `next-index-<pid>.lock` and runs the hook while it holds it:
    that is git's own lock, young, so fresh, and the commit says nothing of it (it was "not a lock name git is
    known to leave", a warning on every such commit)."""
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / "README").write_text("changed\n")
    proc = subprocess.run(["git", "commit", "-q", "-m", "one path", "--", "README"], cwd=repo, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "git-stale-locks" not in proc.stderr and "next-index" not in proc.stderr, proc.stderr
    from gates.domain.locks import known_name

    assert known_name("next-index-4242.lock") and not known_name("next-index-.lock")
    assert not known_name("next-index-x1.lock") and not known_name("next-index-1.lock.bak")

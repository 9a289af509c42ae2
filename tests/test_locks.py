"""Stale git locks: moved aside into lost+found, never deleted, and nothing live is ever touched."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GATE_BIN, call_gate, flag_records, git, run_gate

from gates import locks, procscan, state
from gates.git import discover

MIN = 60.0


def _fast(repo: Path, extra: str = "") -> None:
    """A one-second threshold, so that a real process can see a really aged lock."""
    (repo / ".gate.yaml").write_text(f"locks:\n  threshold: 1s\n{extra}")


def _aged(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def _judge(repo: Path, minutes: float, deep: bool = True) -> dict[str, locks.Lock]:
    found_repo = discover(repo, {})
    found = locks.find(found_repo, deep=deep)
    fs_now = locks.filesystem_now(state.layout(found_repo)) + minutes * MIN  # the injected clock
    locks.judge(found_repo, found, 15 * MIN, fs_now)
    return {lock.shown: lock for lock in found}


def test_fourteen_minutes_is_fresh_sixteen_is_stale(repo: Path) -> None:
    _aged(repo / ".git" / "index.lock")
    assert _judge(repo, 14)["index.lock"].verdict == locks.FRESH
    assert _judge(repo, 16)["index.lock"].verdict == locks.STALE


def test_an_aged_index_lock_is_moved_and_git_commit_works_again(repo: Path) -> None:
    _fast(repo)
    lock = _aged(repo / ".git" / "index.lock")
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


def test_quarantine_off_reports_a_violation_and_moves_nothing(repo: Path) -> None:
    _fast(repo, "  quarantine: false\n")
    lock = _aged(repo / ".git" / "index.lock")
    time.sleep(1.2)
    proc = run_gate(repo, "check", "--only", "git-stale-locks")
    assert proc.returncode == 1
    assert ".git/index.lock:1: [git-stale-locks] stale lock (" in proc.stdout
    assert lock.exists()


def test_a_lock_in_a_linked_worktree_admin_dir_is_found_from_both(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    _aged(repo / ".git" / "worktrees" / "linked" / "index.lock")
    for where in (repo, linked):
        assert _judge(where, 16)["worktrees/linked/index.lock"].verdict == locks.STALE
    listed = run_gate(linked, "locks", "--format", "json")
    assert [lock["shown"] for lock in json.loads(listed.stdout)["locks"]] == ["worktrees/linked/index.lock"]


def test_nested_ref_lock_and_the_same_name_twice_keep_both_copies(repo: Path) -> None:
    _fast(repo)
    first = _aged(repo / ".git" / "refs" / "heads" / "a" / "b.lock")
    first.write_bytes(b"one")
    time.sleep(1.2)
    assert run_gate(repo, "locks", "--quarantine").returncode == 0
    second = _aged(repo / ".git" / "refs" / "heads" / "a" / "b.lock")
    second.write_bytes(b"two")
    time.sleep(1.2)
    assert run_gate(repo, "locks", "--quarantine").returncode == 0
    kept = sorted((p / "refs" / "heads" / "a" / "b.lock").read_bytes()
                  for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir())
    assert kept == [b"one", b"two"]


def test_restore_puts_a_lock_back_only_where_its_place_is_free(repo: Path) -> None:
    _fast(repo)
    lock = _aged(repo / ".git" / "HEAD.lock")
    lock.write_bytes(b"evidence")
    time.sleep(1.2)
    assert run_gate(repo, "locks", "--quarantine").returncode == 0
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


@pytest.fixture(params=["proc", "lsof"])
def evidence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Each liveness source in turn: /proc, and lsof (macOS has no /proc; Linux has lsof too)."""
    if request.param == "lsof":
        if not any(os.access(p, os.X_OK) for p in procscan.LSOF):
            pytest.skip("no lsof here")
        monkeypatch.setattr(procscan, "PROC", tmp_path / "no-proc")
    return str(request.param)


def test_a_lock_held_open_by_another_process_is_live(repo: Path, evidence: str) -> None:
    lock = _aged(repo / ".git" / "index.lock")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); print('ok', flush=True); input()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ok\n"
        verdict = _judge(repo, 60)["index.lock"]
        assert verdict.verdict == locks.LIVE and f"held open by process {holder.pid}" in verdict.reason
    finally:
        holder.communicate("\n")
    assert _judge(repo, 60)["index.lock"].verdict == locks.STALE


def test_the_gate_inside_a_real_commit_a_never_moves_the_parent_index_lock(repo: Path) -> None:
    _fast(repo)
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


def test_a_paused_update_ref_transaction_keeps_its_zero_byte_ref_lock(repo: Path) -> None:
    _fast(repo)
    head = git(repo, "rev-parse", "HEAD")
    tx = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    assert tx.stdin is not None and tx.stdout is not None
    tx.stdin.write(f"start\nupdate refs/heads/paused {head}\nprepare\n")
    tx.stdin.flush()
    assert tx.stdout.readline() == "start: ok\n" and tx.stdout.readline() == "prepare: ok\n"
    lock = repo / ".git" / "refs" / "heads" / "paused.lock"
    assert lock.exists()  # zero bytes with newer git; git 2.39 writes the new id into it. No descriptor is open.
    time.sleep(1.2)
    proc = run_gate(repo, "locks", "--quarantine")
    assert proc.returncode == 0
    assert "live       refs/heads/paused.lock" in proc.stdout and "is working in this repository" in proc.stdout
    assert lock.exists()
    tx.stdin.write("abort\n")
    tx.stdin.close()
    tx.wait(timeout=20)
    assert not lock.exists()


def test_a_live_pid_companion_keeps_its_lock_and_a_dead_one_does_not(repo: Path) -> None:
    _aged(repo / ".git" / "index.lock")
    companion = repo / ".git" / "index~pid.lock"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        companion.write_text(f"pid {sleeper.pid}\n")
        judged = _judge(repo, 60)
        assert judged["index.lock"].verdict == locks.LIVE
        assert judged["index.lock"].evidence["companion"]["alive"] is True
        assert judged["index~pid.lock"].verdict == locks.INELIGIBLE
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _judge(repo, 60)["index.lock"].verdict == locks.STALE  # the companion now names a dead process
    companion.write_text("not a pid line\n")
    assert _judge(repo, 60)["index.lock"].verdict == locks.LIVE  # doubt


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def test_nothing_planted_is_followed_blocked_on_or_destroyed(repo: Path, tmp_path: Path) -> None:
    _fast(repo, "  deep: true\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target").write_text("keep me")
    (outside / "inner.lock").write_text("not ours")
    before = _snapshot(outside)
    os.symlink(outside / "target", repo / ".git" / "index.lock")
    os.mkfifo(repo / ".git" / "HEAD.lock")
    os.link(outside / "target", repo / ".git" / "ORIG_HEAD.lock")
    os.symlink(outside, repo / ".git" / "refs" / "heads" / "linkdir")
    time.sleep(1.2)
    proc = run_gate(repo, "check", "--only", "git-stale-locks", timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[:-1] == [
        ".git/HEAD.lock:1: [git-stale-locks warning] lock file that the gate will not move "
        "(not a regular file (a FIFO, socket, device or directory)) — inspect it by hand",
        ".git/ORIG_HEAD.lock:1: [git-stale-locks warning] lock file that the gate will not move (has 2 hard links) "
        "— inspect it by hand",
        ".git/index.lock:1: [git-stale-locks warning] lock file that the gate will not move (a symlink) — inspect it by hand",
    ]
    assert run_gate(repo, "locks", "--quarantine", timeout=30).returncode == 0
    assert _snapshot(outside) == before
    assert (repo / ".git" / "index.lock").is_symlink() and (repo / ".git" / "HEAD.lock").exists()


def test_exdev_leaves_the_lock_in_place_with_a_flag(repo: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _fast(repo)
    lock = _aged(repo / ".git" / "index.lock")
    time.sleep(1.2)

    def cross_device(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(locks.os, "rename", cross_device)
    code, out, _ = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1
    assert "stale lock not moved: cannot be moved: on another filesystem than lost+found (EXDEV): left in place" in out
    assert lock.exists()
    assert sorted(r["reason"] for r in flag_records(repo / ".git")) == ["git-stale-locks", "lock-quarantine-failed"]
    assert [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()] == []


@pytest.mark.slow
def test_sixteen_concurrent_quarantines_move_one_lock_once(repo: Path) -> None:
    _fast(repo)
    lock = _aged(repo / ".git" / "index.lock")
    lock.write_bytes(b"the one")
    time.sleep(1.2)
    procs = [subprocess.Popen([GATE_BIN, "locks", "--quarantine", "--format", "json"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(16)]
    outputs = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    assert all(code == 0 for code, _, _ in outputs), outputs
    moved = [m for _, out, _ in outputs for m in json.loads(out)["moved"] if m["to"]]
    assert len(moved) == 1
    kept = [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()]
    assert len(kept) == 1 and (kept[0] / "index.lock").read_bytes() == b"the one"
    assert [r["reason"] for r in flag_records(repo / ".git")] == ["stale-lock-quarantined"]


def test_a_worktree_that_cannot_be_located_is_doubt_not_proof(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "linked"))
    gitdir = repo / ".git" / "worktrees" / "linked" / "gitdir"
    gitdir.unlink()
    gitdir.mkdir()  # unreadable as a file: a git process could be working in a tree we cannot see
    _aged(repo / ".git" / "index.lock")
    verdict = _judge(repo, 60)["index.lock"]
    assert verdict.verdict == locks.LIVE
    assert "liveness cannot be established (the work tree of" in verdict.reason


def test_a_git_dir_that_cannot_be_listed_stops_the_gate(repo: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def unlistable(path: object) -> list[str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(locks.os, "listdir", unlistable)
    code, _, err = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 3
    assert err.startswith("gate: cannot look for git lock files in ") and err.endswith(": Permission denied\n")


# Without /proc (macOS): the evidence comes from lsof. Linux has lsof too, so the same real processes
# are judged here with /proc switched off in this process.

needs_lsof = pytest.mark.skipif(not any(os.access(p, os.X_OK) for p in procscan.LSOF), reason="no lsof here")


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(procscan, "PROC", tmp_path / "no-proc")


@needs_lsof
def test_without_proc_lsof_finds_a_git_process_working_in_the_repository(repo: Path, no_proc: None) -> None:
    head = git(repo, "rev-parse", "HEAD")
    tx = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    assert tx.stdin is not None and tx.stdout is not None
    try:
        tx.stdin.write(f"start\nupdate refs/heads/paused {head}\nprepare\n")
        tx.stdin.flush()
        assert tx.stdout.readline() == "start: ok\n" and tx.stdout.readline() == "prepare: ok\n"
        verdict = _judge(repo, 60)["refs/heads/paused.lock"]
        assert verdict.verdict == locks.LIVE and f"git process {tx.pid} is working in this repository" in verdict.reason
    finally:
        tx.stdin.write("abort\n")
        tx.stdin.close()
        tx.wait(timeout=20)


@needs_lsof
def test_without_proc_a_stale_lock_is_moved_while_the_gate_itself_pins_it(repo: Path, no_proc: None,
                                                                          capsys: pytest.CaptureFixture[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _fast(repo)
    lock = _aged(repo / ".git" / "index.lock")
    os.utime(lock, (time.time() - 120, time.time() - 120))
    time.sleep(1.1)  # ctime too must be older than the threshold
    code, out, _ = call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "moved" in out and not lock.exists()  # our own pin is not a holder


def test_without_proc_or_lsof_every_old_lock_is_live(repo: Path, no_proc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procscan, "LSOF", ("/nonexistent/lsof",))
    _aged(repo / ".git" / "index.lock")
    verdict = _judge(repo, 60)["index.lock"]
    assert verdict.verdict == locks.LIVE and "no /proc and no lsof" in verdict.reason


def test_a_filesystem_of_unknown_type_is_never_moved_on(repo: Path, no_proc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procscan, "MOUNT", ("/nonexistent/mount",))
    _aged(repo / ".git" / "index.lock")
    verdict = _judge(repo, 60)["index.lock"]
    assert verdict.verdict == locks.INELIGIBLE and "type of its filesystem cannot be established" in verdict.reason


def test_both_forms_of_the_mount_listing_are_read() -> None:
    linux = "/dev/vda1 on / type ext4 (rw,relatime)\nserver:/export on /mnt/my share type nfs4 (rw,vers=4.2)\n"
    macos = ("/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)\n"
             "//user@nas/share on /Volumes/share (smbfs, nodev, nosuid, mounted by user)\n"
             "map auto_home on /System/Volumes/Data/home (autofs, automounted, nobrowse)\n")
    assert procscan.parse_mount_listing(linux) == [("/", "ext4"), ("/mnt/my share", "nfs4")]
    assert procscan.parse_mount_listing(macos) == [("/", "apfs"), ("/Volumes/share", "smbfs"),
                                                    ("/System/Volumes/Data/home", "autofs")]
    assert procscan.is_network_fs("smbfs") and procscan.is_network_fs("nfs4") and not procscan.is_network_fs("apfs")

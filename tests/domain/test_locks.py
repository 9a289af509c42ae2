"""Stale git locks (gates/domain/locks.py, procscan.py): moved aside into lost+found, never deleted, and nothing
live is ever touched. The gate: tests/checks/test_git_stale_locks.py; the command: tests/commands/test_locks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from conftest import GATE_BIN, call_gate, flag_records, git, run_gate
from helpers import entries
from hypothesis import example, given, settings
from hypothesis import strategies as st
from locks_helpers import Transaction, aged, fast, judge, later, locks_now, only_our_git, quarantined, snapshot

from gates.domain import locks, lockscan, procscan
from gates.infra import clock
from gates.infra.git import discover


def test_fourteen_minutes_is_fresh_sixteen_is_stale(repo: Path) -> None:
    aged(repo / ".git" / "index.lock")
    assert judge(repo, 14)["index.lock"].verdict == lockscan.FRESH
    assert judge(repo, 16)["index.lock"].verdict == lockscan.STALE


def test_a_lock_held_open_by_another_process_is_live(repo: Path, evidence: str) -> None:
    lock = aged(repo / ".git" / "index.lock")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); print('ok', flush=True); input()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ok\n"
        verdict = judge(repo, 60)["index.lock"]
        assert verdict.verdict == lockscan.LIVE and f"held open by process {holder.pid}" in verdict.reason
    finally:
        holder.communicate("\n")
    assert judge(repo, 60)["index.lock"].verdict == lockscan.STALE


def test_a_paused_update_ref_transaction_keeps_its_zero_byte_ref_lock(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    later(monkeypatch)  # the lock is older than the threshold at once: only liveness keeps it
    head = git(repo, "rev-parse", "HEAD")
    tx = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    assert tx.stdin is not None and tx.stdout is not None
    tx.stdin.write(f"start\nupdate refs/heads/paused {head}\nprepare\n")
    tx.stdin.flush()
    assert tx.stdout.readline() == "start: ok\n" and tx.stdout.readline() == "prepare: ok\n"
    lock = repo / ".git" / "refs" / "heads" / "paused.lock"
    assert lock.exists()  # zero bytes with newer git; git 2.39 writes the new id into it. No descriptor is open.
    code, out, _ = call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0
    assert "live       refs/heads/paused.lock" in out
    assert f"git process {tx.pid} may be working in this repository: its cwd {repo} is in the repository" in out
    assert lock.exists()
    tx.stdin.write("abort\n")
    tx.stdin.close()
    tx.wait(timeout=20)
    assert not lock.exists()


def test_a_live_pid_companion_keeps_its_lock_and_a_dead_one_does_not(repo: Path) -> None:
    aged(repo / ".git" / "index.lock")
    companion = repo / ".git" / "index~pid.lock"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        companion.write_text(f"pid {sleeper.pid}\n")
        judged = judge(repo, 60)
        assert judged["index.lock"].verdict == lockscan.LIVE
        assert judged["index.lock"].evidence["companion"]["alive"] is True
        assert judged["index~pid.lock"].verdict == lockscan.INELIGIBLE
    finally:
        sleeper.kill()
        sleeper.wait()
    assert judge(repo, 60)["index.lock"].verdict == lockscan.STALE  # the companion now names a dead process
    companion.write_text("not a pid line\n")
    assert judge(repo, 60)["index.lock"].verdict == lockscan.LIVE  # doubt


def test_a_companion_naming_a_pid_beyond_any_kernels_is_doubt_not_a_crash(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`pid 9999999999` (ten digits, as the pattern allows) is past the C int that kill() takes: Python raises
    OverflowError, not OSError. It is no process anyone can ask about, so the lock stays live (doubt), and the check
    that meets it still answers in one line, the lock where it was."""
    fast(repo)
    later(monkeypatch)  # the lock is older than the threshold at once
    lock = aged(repo / ".git" / "index.lock")
    (repo / ".git" / "index~pid.lock").write_text("pid 9999999999\n")
    judged = judge(repo, 60)
    assert judged["index.lock"].verdict == lockscan.LIVE
    assert judged["index.lock"].evidence["companion"] == {"path": str(repo / ".git" / "index~pid.lock"),
                                                          "pid": 9999999999, "alive": None}
    code, out, err = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert (code, err) == (0, ""), out + err
    assert lock.exists()


def test_nothing_planted_is_followed_blocked_on_or_destroyed(repo: Path, tmp_path: Path) -> None:
    fast(repo, "  deep: true\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target").write_text("keep me")
    (outside / "inner.lock").write_text("not ours")
    before = snapshot(outside)
    os.symlink(outside / "target", repo / ".git" / "index.lock")
    os.mkfifo(repo / ".git" / "HEAD.lock")
    os.link(outside / "target", repo / ".git" / "ORIG_HEAD.lock")
    os.symlink(outside, repo / ".git" / "refs" / "heads" / "linkdir")
    time.sleep(1.2)
    proc = run_gate(repo, "check", "--only", "git-stale-locks", timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[:-1] == [
        ".git/HEAD.lock:1: [git-stale-locks warning] lock file that the gate will not move "
        "(not a regular file but a FIFO: git cannot take this lock while it is there) — inspect it by hand",
        ".git/ORIG_HEAD.lock:1: [git-stale-locks warning] lock file that the gate will not move (has 2 hard links) "
        "— inspect it by hand",
        ".git/index.lock:1: [git-stale-locks warning] lock file that the gate will not move (a symlink) — inspect it by hand",
    ]
    assert run_gate(repo, "locks", "--quarantine", timeout=30).returncode == 0
    assert snapshot(outside) == before
    assert (repo / ".git" / "index.lock").is_symlink() and (repo / ".git" / "HEAD.lock").exists()


@pytest.mark.slow
def test_sixteen_concurrent_quarantines_move_one_lock_once(repo: Path) -> None:
    fast(repo)
    lock = aged(repo / ".git" / "index.lock")
    lock.write_bytes(b"the one")
    time.sleep(1.2)
    assert GATE_BIN, "the gate console script is not installed"
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
    aged(repo / ".git" / "index.lock")
    verdict = judge(repo, 60)["index.lock"]
    assert verdict.verdict == lockscan.LIVE
    assert "liveness cannot be established (the work tree of" in verdict.reason


needs_lsof = pytest.mark.skipif(not any(os.access(p, os.X_OK) for p in procscan.LSOF), reason="no lsof here")


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> set[int]:
    """No /proc; the git processes lsof lists are cut down to the pids the test adds to the set."""
    monkeypatch.setattr(procscan, "PROC", tmp_path / "no-proc")
    return only_our_git(monkeypatch)


@needs_lsof
def test_without_proc_lsof_finds_a_git_process_working_in_the_repository(repo: Path, no_proc: set[int]) -> None:
    head = git(repo, "rev-parse", "HEAD")
    tx = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    assert tx.stdin is not None and tx.stdout is not None
    no_proc.add(tx.pid)
    try:
        tx.stdin.write(f"start\nupdate refs/heads/paused {head}\nprepare\n")
        tx.stdin.flush()
        assert tx.stdout.readline() == "start: ok\n" and tx.stdout.readline() == "prepare: ok\n"
        verdict = judge(repo, 60)["refs/heads/paused.lock"]
        assert verdict.verdict == lockscan.LIVE
        assert f"git process {tx.pid} may be working in this repository: its cwd {repo} is in" in verdict.reason
    finally:
        tx.stdin.write("abort\n")
        tx.stdin.close()
        tx.wait(timeout=20)


@needs_lsof
def test_without_proc_a_stale_lock_is_moved_while_the_gate_itself_pins_it(repo: Path, no_proc: set[int],
                                                                          capsys: pytest.CaptureFixture[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    lock = aged(repo / ".git" / "index.lock")
    os.utime(lock, (time.time() - 120, time.time() - 120))
    time.sleep(1.1)  # ctime too must be older than the threshold
    code, out, _ = call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "moved" in out and not lock.exists()  # our own pin is not a holder


def test_without_proc_or_lsof_every_old_lock_is_live(repo: Path, no_proc: set[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procscan, "LSOF", ("/nonexistent/lsof",))
    aged(repo / ".git" / "index.lock")
    verdict = judge(repo, 60)["index.lock"]
    assert verdict.verdict == lockscan.LIVE and "no /proc and no lsof" in verdict.reason


def test_a_filesystem_of_unknown_type_is_never_moved_on(repo: Path, no_proc: set[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procscan, "MOUNT", ("/nonexistent/mount",))
    aged(repo / ".git" / "index.lock")
    verdict = judge(repo, 60)["index.lock"]
    assert verdict.verdict == lockscan.INELIGIBLE and "type of its filesystem cannot be established" in verdict.reason


def test_both_forms_of_the_mount_listing_are_read() -> None:
    linux = "/dev/vda1 on / type ext4 (rw,relatime)\nserver:/export on /mnt/my share type nfs4 (rw,vers=4.2)\n"
    macos = ("/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)\n"
             "//user@nas/share on /Volumes/share (smbfs, nodev, nosuid, mounted by user)\n"
             "map auto_home on /System/Volumes/Data/home (autofs, automounted, nobrowse)\n")
    assert procscan.parse_mount_listing(linux) == [("/", "ext4"), ("/mnt/my share", "nfs4")]
    assert procscan.parse_mount_listing(macos) == [("/", "apfs"), ("/Volumes/share", "smbfs"),
                                                    ("/System/Volumes/Data/home", "autofs")]
    assert procscan.is_network_fs("smbfs") and procscan.is_network_fs("nfs4") and not procscan.is_network_fs("apfs")


def _ways_to_name(repo: Path, elsewhere: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Every way to point a git process standing in `elsewhere` at `repo`: (global options, extra environment)."""
    rel = os.path.relpath(repo, elsewhere)
    return {
        "--git-dir=ABS": ([f"--git-dir={repo / '.git'}"], {}),
        "--git-dir ABS": (["--git-dir", str(repo / ".git")], {}),
        "--git-dir=REL": ([f"--git-dir={rel}/.git"], {}),
        "GIT_DIR=ABS": ([], {"GIT_DIR": str(repo / ".git")}),
        "GIT_DIR=REL": ([], {"GIT_DIR": f"{rel}/.git"}),
        "GIT_DIR + GIT_WORK_TREE elsewhere": ([], {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(elsewhere)}),
        "-C ABS": (["-C", str(repo)], {}),
        "-C -C stacked": (["-C", str(repo.parent), "-C", repo.name], {}),
        "a gitfile in elsewhere": ([], {}),
    }


WAYS = list(_ways_to_name(Path("/r/repo"), Path("/r/elsewhere")))


@pytest.mark.parametrize("way", WAYS)
def test_a_prepared_transaction_from_another_directory_keeps_its_locks(repo: Path, tmp_path: Path, way: str) -> None:
    """The attack: `git --git-dir=/repo/.git update-ref --stdin` from elsewhere holds HEAD.lock and the branch's ref
    lock with no descriptor open and no cwd in the repository. Moving them made the transaction's commit fail."""
    fast(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    options, extra = _ways_to_name(repo, elsewhere)[way]
    if way == "a gitfile in elsewhere":
        (elsewhere / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    old = git(repo, "rev-parse", "HEAD")
    new = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "the transaction's commit")
    tx = Transaction(options, elsewhere, {**os.environ, **extra}, new, old)
    try:
        before = locks_now(repo)
        assert {"HEAD.lock", "refs/heads/main.lock"} <= set(before)
        time.sleep(1.2)  # older than the threshold: only liveness keeps them now
        proc = run_gate(repo, "locks", "--quarantine", timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for shown in ("HEAD.lock", "refs/heads/main.lock"):
            assert f"live       {shown}" in proc.stdout, proc.stdout
        assert f"git process {tx.proc.pid}" in proc.stdout
        check = run_gate(repo, "check", "--only", "git-stale-locks", timeout=60)
        assert check.returncode == 0 and "stale lock moved" not in check.stdout, check.stdout
        assert locks_now(repo) == before and quarantined(repo) == []
        code, out, err = tx.commit()
        assert code == 0 and "commit: ok" in out, err
    finally:
        tx.close()
    assert git(repo, "rev-parse", "HEAD") == new
    assert locks_now(repo) == {}


def test_anything_but_a_regular_file_at_a_lock_path_is_reported_ineligible_and_left(repo: Path, tmp_path: Path) -> None:
    """A folder named `refs/heads/x.lock` wedges `git branch x`, and was not reported at all; FIFOs, sockets and
    symlinks at lock paths, shallow and deep, are reported with the reason and never moved or followed."""
    import socket

    fast(repo, "  deep: true\n")
    git_dir = repo / ".git"
    (git_dir / "refs" / "heads" / "x.lock").mkdir()
    (git_dir / "refs" / "heads" / "x.lock" / "inside").write_text("keep")
    (git_dir / "index.lock").mkdir()
    os.mkfifo(git_dir / "refs" / "heads" / "fifo.lock")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, git_dir / "refs" / "heads" / "dirlink.lock")
    os.symlink(elsewhere / "nothing", git_dir / "refs" / "heads" / "dangling.lock")
    sock = socket.socket(socket.AF_UNIX)
    try:
        here = os.getcwd()
        os.chdir(git_dir / "refs" / "tags")  # a relative name: a socket's path has a 107-byte cap, a long TMPDIR not
        try:
            sock.bind("sock.lock")
        finally:
            os.chdir(here)
        wedged = subprocess.run(["git", "branch", "x"], cwd=repo, capture_output=True, text=True)
        assert wedged.returncode != 0
        kinds = {p: (os.lstat(p).st_mode, os.lstat(p).st_ino) for p in [*git_dir.glob("*.lock"),
                                                                         *(git_dir / "refs").rglob("*.lock")]}
        time.sleep(1.2)
        listed = run_gate(repo, "locks", "--quarantine", "--format", "json", timeout=30)
        assert listed.returncode == 0, listed.stderr
        reasons = {lock["shown"]: (lock["verdict"], lock["reason"]) for lock in json.loads(listed.stdout)["locks"]}
        cannot = ": git cannot take this lock while it is there"
        assert reasons == {
            "index.lock": ("ineligible", "not a regular file but a directory" + cannot),
            "refs/heads/x.lock": ("ineligible", "not a regular file but a directory" + cannot),
            "refs/heads/fifo.lock": ("ineligible", "not a regular file but a FIFO" + cannot),
            "refs/heads/dirlink.lock": ("ineligible", "a symlink"),
            "refs/heads/dangling.lock": ("ineligible", "a symlink"),
            "refs/tags/sock.lock": ("ineligible", "not a regular file but a socket" + cannot),
        }
        check = run_gate(repo, "check", "--only", "git-stale-locks", timeout=30)
        assert check.returncode == 0
        assert (".git/refs/heads/x.lock:1: [git-stale-locks warning] lock file that the gate will not move (not a "
                "regular file but a directory: git cannot take this lock while it is there) — inspect it by hand"
                in check.stdout.splitlines())
        assert sum("will not move" in line for line in check.stdout.splitlines()) == 6
        fast(repo)  # the shallow scan: the top of the git dir only
        shallow = run_gate(repo, "check", "--only", "git-stale-locks", timeout=30)
        assert shallow.returncode == 0
        assert [line for line in shallow.stdout.splitlines() if "will not move" in line] == [
            ".git/index.lock:1: [git-stale-locks warning] lock file that the gate will not move (not a regular file but "
            "a directory: git cannot take this lock while it is there) — inspect it by hand"]
        assert {p: (os.lstat(p).st_mode, os.lstat(p).st_ino) for p in kinds} == kinds
        assert (git_dir / "refs" / "heads" / "x.lock" / "inside").read_text() == "keep"
        assert list(elsewhere.iterdir()) == [] and quarantined(repo) == []
    finally:
        sock.close()


def test_where_a_git_process_works_is_read_from_its_cwd_command_line_and_environment(repo: Path, tmp_path: Path) -> None:
    """`procscan.targets`: every way to name the repository counts; anything that cannot be established is doubt."""
    roots, _ = locks._repo_roots(discover(repo, {}))
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    (tmp_path / "link").symlink_to(repo)
    (tmp_path / "fake-worktree").mkdir()
    (tmp_path / "fake-worktree" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "fake-worktree" / "commondir").write_text(f"{repo / '.git'}\n")

    def where(argv: list[str], env: dict[str, str] | None = None, cwd: Path = other) -> str | None:
        return procscan.targets(str(cwd), argv, env or {}, roots)

    assert where(["git", "status"]) is None  # in another repository: provably elsewhere
    assert where(["git", "-c", "x.y=z", "log", "-C"]) is None  # `-C` after the command is the command's own
    assert where(["/usr/lib/git-core/git", f"--git-dir={tmp_path}/link/.git", "gc"]) == f"--git-dir {repo}/.git"
    assert where(["git", "status"], {"GIT_COMMON_DIR": f"{repo}/.git"}) == f"GIT_COMMON_DIR {repo}/.git"
    assert where(["git", "add", "x"], {"GIT_INDEX_FILE": f"{repo}/.git/index"}) == f"GIT_INDEX_FILE {repo}/.git/index"
    assert where(["git", "-C", str(tmp_path), "-C", "link", "status"]) == f"it finds {repo}/.git from {tmp_path}/link"
    assert where(["git", "--work-tree", str(repo), "status"]) == f"--work-tree {repo}"
    assert where(["git-receive-pack", str(repo)]) == f"its command line names {repo}"
    assert where(["git", "config", f"--file={repo}/.git/config", "a.b", "c"]) == f"its command line names {repo}/.git/config"
    assert where(["git", "status"], {"GIT_DIR": str(tmp_path / "fake-worktree")}) == (
        f"{tmp_path}/fake-worktree has its common dir at {repo}/.git")
    # GIT_INDEX_FILE and GIT_COMMON_DIR are read again once git has set up, relative to where it then stands (the
    # top of its work tree): the process's cwd or any work tree it is given. A hook's `.git/index` in another
    # repository works there; `git -C sub` at the top of another repository reads `../repo/...` from that top.
    (other / "sub").mkdir()
    (other / "repo" / ".git").mkdir(parents=True)  # a decoy: from `sub` the index file resolves harmlessly here
    hook = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_INDEX_FILE": ".git/index"}
    assert where(["git", "cat-file", "--batch"], hook) is None
    assert where(["git", "-C", "sub", "commit", "-a"], {"GIT_INDEX_FILE": "../repo/.git/index"}) == (
        f"GIT_INDEX_FILE {repo}/.git/index")
    assert where(["git", "status"], {"GIT_WORK_TREE": str(tmp_path), "GIT_INDEX_FILE": "repo/.git/index"}) == (
        f"GIT_INDEX_FILE {repo}/.git/index")
    assert where(["git", "status"], {"GIT_WORK_TREE": str(tmp_path), "GIT_COMMON_DIR": "repo/.git"}) == (
        f"GIT_COMMON_DIR {repo}/.git")
    (tmp_path / "gitfile-here").mkdir()
    (tmp_path / "gitfile-here" / ".git").write_text(f"gitdir: {repo}/.git\n")
    (tmp_path / "gitfile-here" / "sub").mkdir()
    assert where(["git", "status"], cwd=tmp_path / "gitfile-here" / "sub") == (
        f"it finds {repo}/.git from {tmp_path}/gitfile-here/sub")
    doubts = {
        "is relative, and with a work tree": (["git", "status"], {"GIT_DIR": "../repo/.git", "GIT_WORK_TREE": str(other)}, other),
        "cannot be resolved": (["git", "--git-dir=/no/such/place/.git", "status"], {}, other),
        "without its value": (["git", "-C"], {}, other),
        "not git": (["python3", "x.py"], {}, other),
        "cwd is gone": (["git", "status"], {}, Path(f"{other} (deleted)")),
        "neither a git dir nor a gitfile": (["git", "status"], {}, tmp_path / "bad-gitfile"),
    }
    (tmp_path / "bad-gitfile").mkdir()
    (tmp_path / "bad-gitfile" / ".git").write_text("not a gitfile\n")
    for why, (argv, env, cwd) in doubts.items():
        with pytest.raises(procscan.Doubt, match=why):
            where(argv, env, cwd)


def test_a_git_of_another_repository_reading_a_relative_index_file_is_judged_where_it_works(repo: Path,
                                                                                           tmp_path: Path) -> None:
    """A hook of another repository's `git commit` is given GIT_INDEX_FILE=.git/index (relative), and a tool there
    (GitPython's `cat-file`) adds GIT_DIR and GIT_WORK_TREE: git reads that file from the top of its work tree, so
    the process works elsewhere and an aged lock here is stale. (It was doubt, so live, for as long as it ran.)"""
    fast(repo)
    aged(repo / ".git" / "index.lock")
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    env = {**os.environ, "GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_INDEX_FILE": ".git/index"}
    time.sleep(1.2)  # older than the threshold by its ctime too
    reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=other, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
    try:
        proc = run_gate(repo, "locks", "--format", "json", timeout=TIMEOUT)
        judged = next(lock for lock in json.loads(proc.stdout)["locks"] if lock["shown"] == "index.lock")
        assert judged["verdict"] == lockscan.STALE, judged
        assert reader.poll() is None  # it ran all along
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=TIMEOUT)


def test_a_commit_in_another_repository_holding_this_index_keeps_its_lock(repo: Path, tmp_path: Path) -> None:
    """The attack: `git -C sub commit -a` in another repository with GIT_INDEX_FILE=../repo/.git/index takes this
    repository's index.lock (git reads the variable from the top of its work tree, where it stands then). Resolved
    from `sub` instead (a decoy folder there), the lock looked unheld and was moved while the commit held it, and
    the commit failed."""
    fast(repo)
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", "-b", "main", str(other))
    (other / "sub").mkdir()
    (other / "repo" / ".git").mkdir(parents=True)
    (other / ".git" / "objects" / "info" / "alternates").write_text(f"{repo}/.git/objects\n")
    reached, go = tmp_path / "reached", tmp_path / "go"
    hook = other / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n: > "{reached}"\nwhile [ ! -e "{go}" ]; do sleep 0.05; done\n')
    hook.chmod(0o755)
    env = {**os.environ, "GIT_INDEX_FILE": "../repo/.git/index"}
    commit = subprocess.Popen(["git", "-C", "sub", "commit", "-q", "-a", "--allow-empty", "-m", "theirs"], cwd=other,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not reached.exists() and commit.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert reached.exists(), commit.communicate()
        time.sleep(1.2)  # the lock it holds is older than the threshold now
        before = locks_now(repo)
        assert "index.lock" in before
        proc = run_gate(repo, "locks", "--quarantine", timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        said = [line for line in proc.stdout.splitlines() if "index.lock" in line]
        assert len(said) == 1 and said[0].startswith("live") and f"GIT_INDEX_FILE {repo}/.git/index" in said[0], said
        assert locks_now(repo) == before and quarantined(repo) == []
    finally:
        go.touch()
        out, err = commit.communicate(timeout=TIMEOUT)
    assert commit.returncode == 0, err


def _fake_proc(tmp_path: Path, cwd: Path, cmdline: list[str], environ: list[str] | None) -> Path:
    """A /proc with one git process of ours in it; `environ` None: its environment is unreadable."""
    proc = tmp_path / "fake-proc"
    me = proc / str(os.getpid())  # `self` names this process, in this PID and mount namespace, as the real one does
    (me / "fd").mkdir(parents=True)
    (me / "ns").mkdir()
    (proc / "self").symlink_to(me.name)
    for name in ("mountinfo", "status", "ns/pid", "ns/mnt"):
        (me / name).symlink_to(f"/proc/self/{name}")
    pid = proc / "4000000"
    (pid / "fd").mkdir(parents=True)
    (pid / "ns").mkdir()
    (pid / "ns" / "mnt").symlink_to("/proc/self/ns/mnt")
    (pid / "comm").write_text("git\n")
    (pid / "cwd").symlink_to(cwd)
    (pid / "cmdline").write_bytes(b"".join(word.encode() + b"\0" for word in cmdline))
    if environ is None:
        (pid / "environ").mkdir()  # reading it fails: EISDIR
    else:
        (pid / "environ").write_bytes(b"".join(item.encode() + b"\0" for item in environ))
    return proc


@pytest.mark.parametrize("environ, verdict", [(["HOME=/nowhere"], lockscan.STALE), (None, lockscan.LIVE),
                                               (["GIT_DIR=.git", "GIT_WORK_TREE=/"], lockscan.LIVE)])
def test_a_git_process_whose_target_cannot_be_read_is_doubt(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             environ: list[str] | None, verdict: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setattr(procscan, "PROC", _fake_proc(tmp_path, other, ["git", "update-ref", "--stdin"], environ))
    aged(repo / ".git" / "HEAD.lock")
    judged = judge(repo, 60)["HEAD.lock"]
    assert judged.verdict == verdict, judged.reason
    if environ is None:
        assert judged.reason == (f"git process 4000000 may be working in this repository: cwd {other}, and its target "
                                 "cannot be established: its environment cannot be read (Is a directory)")


@pytest.mark.parametrize("flags, threads, verdict", [(0x404044, 1, lockscan.STALE), (0x400040, 1, lockscan.LIVE),
                                                      (0x404044, 2, lockscan.LIVE), (None, 1, lockscan.LIVE)],
                         ids=["exiting", "not exiting", "exiting leader, a thread goes on", "no stat"])
def test_a_git_whose_command_line_is_empty_is_doubt_unless_it_is_exiting(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: int | None, threads: int,
        verdict: str) -> None:
    """An exiting git gives up its memory (its command line reads empty) a moment before it is a zombie; a test run
    beside another met thousands of them. The kernel's PF_EXITING flag in /proc/<pid>/stat says it runs no code of
    its own again: no other writer. Anything else with an empty command line stays doubt."""
    other = tmp_path / "other"
    other.mkdir()
    proc = _fake_proc(tmp_path, other, [], [])
    if flags is not None:  # the name in parentheses may hold spaces and parentheses: the fields follow the last ")"
        (proc / "4000000" / "stat").write_text(f"4000000 (git (x) y) R 1 1 1 0 -1 {flags} 0 0 0 0\n")
    for task in range(threads):
        (proc / "4000000" / "task" / str(4000000 + task)).mkdir(parents=True)
    monkeypatch.setattr(procscan, "PROC", proc)
    aged(repo / ".git" / "HEAD.lock")
    judged = judge(repo, 60)["HEAD.lock"]
    assert judged.verdict == verdict, judged.reason
    if verdict == lockscan.LIVE:
        assert judged.reason.endswith("its target cannot be established: its command line is empty"), judged.reason


@needs_lsof
def test_without_proc_a_git_process_anywhere_is_doubt(repo: Path, tmp_path: Path, no_proc: set[int]) -> None:
    """lsof shows no environment, so a git in another directory may still have `GIT_DIR` pointing here. With /proc
    the same process is provably elsewhere."""
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    aged(repo / ".git" / "index.lock")
    idle = subprocess.Popen(["git", "cat-file", "--batch"], cwd=other, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        no_proc.add(idle.pid)
        time.sleep(0.3)
        verdict = judge(repo, 60)["index.lock"]
        assert verdict.verdict == lockscan.LIVE
        assert (f"git process {idle.pid} may be working in this repository: cwd {other}, but without /proc its command "
                "line and environment cannot be read") in verdict.reason
    finally:
        idle.kill()
        idle.wait(timeout=30)


def test_proc_is_not_read_when_there_is_nothing_to_judge(repo: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """This runs in the commit hook: no lock files, or only fresh ones, cost no process scan."""
    def no_scan(*args: object) -> None:
        raise AssertionError("the processes were scanned")

    monkeypatch.setattr(procscan, "scan", no_scan)
    code, out, _ = call_gate(repo, "check", "--only", "git-stale-locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0, out
    aged(repo / ".git" / "index.lock")
    code, out, _ = call_gate(repo, "locks", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("fresh      index.lock"), out


@pytest.mark.parametrize("original, moved_to", [
    ("{git}/index.lock", "{victim}"),                    # an absolute moved_to: the victim would be linked in, then unlinked
    ("{git}/../../outside/planted.lock", "index.lock"),  # `..` out of the git dir
    ("{git}/link/planted.lock", "index.lock"),           # a symlinked folder of the git dir that leads out
    ("{git}/index.lock", "../../../../victim"),          # `..` out of the quarantine
])
def test_a_forged_quarantine_manifest_restores_nothing_and_touches_nothing(repo: Path, tmp_path: Path, original: str,
                                                                          moved_to: str) -> None:
    """The attack: the manifest of a quarantine is a file in the git dir, which a hostile repository can plant."""
    victim = tmp_path / "victim"
    victim.write_text("the user's file\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    git_dir = (repo / ".git").resolve()
    (git_dir / "link").symlink_to(outside)
    evidence_id = "20260101T000000Z-0123456789ab"
    folder = git_dir / "gate" / "lost+found" / evidence_id
    folder.mkdir(parents=True)
    (folder / "index.lock").write_text("")
    manifest = {"version": 1, "kind": "git-lock", "action": "quarantined",
                "items": [{"original": original.format(git=git_dir), "moved_to": moved_to.format(victim=victim)}]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(tmp_path)
    proc = run_gate(repo, "locks", "--restore", evidence_id)
    assert proc.returncode == 3 and "names a path outside the repository" in proc.stderr, proc.stderr
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if "/gate/" not in k} == {k: v for k, v in before.items() if "/gate/" not in k}
    assert victim.read_text() == "the user's file\n" and list(outside.iterdir()) == []


@pytest.mark.parametrize("attack", ["folder-link", "file-link", "hard-link", "second-item"])
def test_a_planted_quarantine_never_brings_a_file_of_the_users_in_nor_moves_anything(repo: Path, tmp_path: Path,
                                                                                     attack: str) -> None:
    """The attack (adversarial review adv1, 01): a planted quarantine whose `moved_to` passes every textual check but
    leads out of it: through a folder linked to ~/.ssh, a file linked to the user's key, or a hard link to it (the
    move would take the user's file into .git and out of its folder). A manifest whose second item is such a path
    moves nothing, not even its genuine first item: every item is judged before anything is moved."""
    home = tmp_path / "home" / ".ssh"
    home.mkdir(parents=True)
    key = home / "id_rsa"
    key.write_text("SECRET-KEY\n")
    git_dir = (repo / ".git").resolve()
    evidence_id = "20260101T120000Z-0123456789ab"
    folder = git_dir / "gate" / "lost+found" / evidence_id
    folder.mkdir(parents=True)
    items = []
    if attack == "folder-link":
        (folder / "x").symlink_to(home)
        items.append({"original": f"{git_dir}/stolen", "moved_to": "x/id_rsa"})
    elif attack == "file-link":
        (folder / "index.lock").symlink_to(key)
        items.append({"original": f"{git_dir}/index.lock", "moved_to": "index.lock"})
    elif attack == "hard-link":
        os.link(key, folder / "index.lock")
        items.append({"original": f"{git_dir}/index.lock", "moved_to": "index.lock"})
    else:
        (folder / "index.lock").write_text("")
        (folder / "x").symlink_to(home)
        items += [{"original": f"{git_dir}/index.lock", "moved_to": "index.lock"},
                  {"original": f"{git_dir}/stolen", "moved_to": "x/id_rsa"}]
    manifest = {"version": 1, "kind": "git-lock", "action": "quarantined", "when": "2026-01-01T12:00:00Z",
                "items": items}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    key_links = key.stat().st_nlink
    before = entries(tmp_path)
    proc = run_gate(repo, "locks", "--restore", evidence_id, process=True)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and evidence_id in proc.stderr, proc.stderr
    after = entries(tmp_path)
    def kept(snap: dict[str, tuple[int, bytes | str]]) -> dict[str, tuple[int, bytes | str]]:
        return {k: v for k, v in snap.items() if "/gate/" not in k or f"/{evidence_id}" in k}

    assert kept(after) == kept(before)  # outside the gate's state, and the quarantine itself: nothing changed
    assert key.read_text() == "SECRET-KEY\n" and key.stat().st_nlink == key_links
    assert not (git_dir / "stolen").exists() and not (git_dir / "index.lock").exists()


# ---- what the repository plants where the judging reads: never waited on -------------------------------------
TIMEOUT = 30  # a FIFO waited on never returns: the run is killed and the test fails instead of hanging


def _everything(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under `root` (a FIFO by its mode, never opened) but the gate's own state."""
    return {name: entry for name, entry in entries(root).items() if "/.git/gate/" not in f"/{name}/"}


@pytest.fixture
def fifo_gitdir(repo: Path, tmp_path: Path) -> Path:
    """The attack: a FIFO at a linked worktree's `.git/worktrees/<name>/gitdir`, which the gate reads to learn
    where git processes of that worktree work. Opened for reading, it waits for a writer forever."""
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "linked"))
    gitdir = repo / ".git" / "worktrees" / "linked" / "gitdir"
    gitdir.unlink()
    os.mkfifo(gitdir)
    fast(repo)
    aged(repo / ".git" / "index.lock").write_bytes(b"held")
    time.sleep(1.2)  # older than the one-second threshold: judged, so the gitdir is read
    return gitdir


def _doubt(gitdir: Path) -> str:
    return f"the work tree of {gitdir.parent} cannot be located (a FIFO, not a regular file)"


@pytest.mark.parametrize("args", [(), ("--quarantine",)])
def test_gate_locks_takes_a_fifo_at_a_worktrees_gitdir_as_doubt_and_moves_nothing(repo: Path, tmp_path: Path,
                                                                                   fifo_gitdir: Path,
                                                                                   args: tuple[str, ...]) -> None:
    before = _everything(tmp_path)
    proc = run_gate(repo, "locks", *args, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if " index.lock " in line)
    assert line.startswith("live       index.lock  4 bytes, ")
    assert line.endswith(f"liveness cannot be established ({_doubt(fifo_gitdir)})"), line
    assert proc.stderr == "" and quarantined(repo) == []
    assert _everything(tmp_path) == before and fifo_gitdir.is_fifo()
    document = json.loads(run_gate(repo, "locks", "--format", "json", timeout=TIMEOUT).stdout)
    judged = next(lock for lock in document["locks"] if lock["shown"] == "index.lock")
    assert judged["verdict"] == lockscan.LIVE and _doubt(fifo_gitdir) in judged["evidence"]["doubts"]


def test_the_git_stale_locks_gate_takes_a_fifo_at_a_worktrees_gitdir_as_doubt(repo: Path, tmp_path: Path,
                                                                              fifo_gitdir: Path) -> None:
    before = _everything(tmp_path)
    proc = run_gate(repo, "check", "--only", "git-stale-locks", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a live lock is a warning, never a violation
    found = [line for line in proc.stdout.splitlines() if "[git-stale-locks" in line]
    assert len(found) == 1 and found[0].startswith(".git/index.lock:1: [git-stale-locks warning] lock held for ")
    assert f"judged live (liveness cannot be established ({_doubt(fifo_gitdir)}))" in found[0]
    assert _everything(tmp_path) == before and fifo_gitdir.is_fifo()
    assert [r["reason"] for r in flag_records(repo / ".git")] == ["lock-held-live"]


def test_gate_doctor_takes_a_fifo_at_a_worktrees_gitdir_as_doubt(repo: Path, tmp_path: Path, fifo_gitdir: Path) -> None:
    before = _everything(tmp_path)
    proc = run_gate(repo, "doctor", timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # no commit hook runs the gate in this repository
    said = [line for line in proc.stdout.splitlines() if "index.lock" in line]
    assert len(said) == 1 and said[0].startswith("warn  git lock index.lock held for "), proc.stdout
    assert said[0].endswith(f"s: liveness cannot be established ({_doubt(fifo_gitdir)})"), said
    assert "Traceback" not in proc.stderr
    assert _everything(tmp_path) == before and fifo_gitdir.is_fifo()


@pytest.mark.skipif(not os.path.isfile("/proc/self/environ"), reason="reads a git process's environment in /proc")
def test_a_git_process_whose_git_dir_has_a_fifo_for_commondir_is_doubt_not_a_hang(repo: Path, tmp_path: Path,
                                                                                  alone: Callable[[], None]) -> None:
    """The attack one step further: a git process of this user started with GIT_DIR at a folder whose `commondir`
    is a FIFO. git itself waits on it forever; the gate, reading it to learn where that git works, must not."""
    planted = tmp_path / "planted-git-dir"
    planted.mkdir()
    (planted / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(planted / "commondir")
    fast(repo)
    aged(repo / ".git" / "index.lock")
    before = _everything(tmp_path)
    time.sleep(1.2)  # older than the threshold
    alone()  # its git's common dir is a FIFO: doubt for every lock scan while it runs
    stuck = subprocess.Popen(["git", "rev-parse", "--git-common-dir"], cwd=tmp_path, env={**os.environ,
                             "GIT_DIR": str(planted)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc = run_gate(repo, "locks", "--quarantine", "--format", "json", timeout=TIMEOUT)
        assert stuck.poll() is None  # git waits on the FIFO still
        assert proc.returncode == 0, proc.stdout + proc.stderr
        judged = next(lock for lock in json.loads(proc.stdout)["locks"] if lock["shown"] == "index.lock")
        assert judged["verdict"] == lockscan.LIVE
        assert {"pid": stuck.pid, "how": f"cwd {tmp_path}, and its target cannot be established: {planted}/commondir "
                                         "cannot be read (a FIFO, not a regular file)"} in judged["evidence"]["git_processes"]
    finally:
        stuck.kill()
        stuck.wait(timeout=TIMEOUT)
    assert _everything(tmp_path) == before and (planted / "commondir").is_fifo()


def test_a_gitdir_too_large_or_a_symlink_is_doubt(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "linked"))
    gitdir = repo / ".git" / "worktrees" / "linked" / "gitdir"
    real = gitdir.read_bytes()
    aged(repo / ".git" / "index.lock")
    gitdir.write_bytes(b"/" * (locks._GITDIR_CAP + 1))
    assert "its gitdir file is over 65536 bytes" in judge(repo, 60)["index.lock"].reason
    (tmp_path / "elsewhere").write_bytes(real)
    gitdir.unlink()
    gitdir.symlink_to(tmp_path / "elsewhere")
    assert judge(repo, 60)["index.lock"].reason.endswith("(a symlink: not followed))")
    gitdir.unlink()
    gitdir.write_bytes(real)
    assert judge(repo, 60)["index.lock"].verdict == lockscan.STALE


def test_a_quarantine_manifest_writes_times_in_the_clocks_one_form(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fast(repo)
    later(monkeypatch)
    aged(repo / ".git" / "index.lock")
    assert call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    [folder] = quarantined(repo)
    assert locks._EVIDENCE_ID.match(folder.name)
    manifest = json.loads((folder / "manifest.json").read_text())
    item = manifest["items"][0]
    assert item["mtime"] == clock.utc_text_fine(clock.at((folder / "index.lock").stat().st_mtime))  # a rename keeps it
    for key in ("mtime", "ctime"):
        assert item[key].endswith("Z") and "+" not in item[key], item[key]
        assert clock.parse_utc(item[key]) is not None
    assert clock.parse_utc(manifest["when"]) is not None and manifest["when"].endswith("Z")


@pytest.mark.parametrize("place_taken", [False, True], ids=["put back", "its place taken"])
def test_a_lock_replaced_while_being_moved_is_put_back_or_kept(repo: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch, place_taken: bool) -> None:
    """A new git takes the lock between the pin and the rename: the file moved is not the one judged. It goes back
    to its place when that is free; else it stays in lost+found. Either way the move failed (a flag, exit 1)."""
    fast(repo)
    later(monkeypatch)
    lock = aged(repo / ".git" / "index.lock")
    rename = os.rename

    def replaced_first(source: str, target: str) -> None:
        if os.fspath(source) == str(lock):
            lock.unlink()
            lock.write_bytes(b"new")  # a new inode: the pinned one is still open
        rename(source, target)
        if place_taken and os.fspath(source) == str(lock):
            lock.write_bytes(b"newer")

    monkeypatch.setattr(os, "rename", replaced_first)
    code, out, _ = call_gate(repo, "locks", "--quarantine", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1
    assert "lock-quarantine-failed" in [flag["reason"] for flag in flag_records(repo / ".git")]
    [folder] = quarantined(repo)
    if place_taken:
        assert "replaced while being moved, and its place is taken: kept in lost+found" in out
        assert lock.read_bytes() == b"newer" and (folder / "index.lock").read_bytes() == b"new"
    else:
        assert f"not moved: {lock}: replaced while being moved: put back" in out
        assert lock.read_bytes() == b"new" and not (folder / "index.lock").exists()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab~pid.lock\n/", max_size=20))
@example("~pid.lock")
@example("index.lock~pid.lock")
@example("a\nb~pid.lock")
def test_a_companion_is_named_as_the_pattern_named_it(name: str) -> None:
    """lockscan.companion reads the name with string methods; the pattern it was also took a name ending in a
    newline after `.lock`, which never reaches it (only names ending in `.lock` are lock files)."""
    import re

    pattern = bool(re.match(r"^(?P<base>.+)~pid\.lock$", name))
    assert lockscan.companion(name) == (pattern and not name.endswith("\n"))

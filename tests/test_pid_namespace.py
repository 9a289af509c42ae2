"""A process list that cannot see every process is no proof of death (issue 25, class 2).

A gate in a PID namespace of its own (a dev container, `unshare --pid`) sees no git outside it, and a git in another
mount namespace (a container's, seen from the host) names paths that are not ours: in both cases the liveness scan is
doubt, every aged lock is live, nothing is moved, and the report says why. The attacks run real namespaces with
`unshare` (we run as root in CI); they are skipped, saying why, where unshare is not permitted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from conftest import GATE_BIN, git, run_gate
from locks_helpers import Transaction, aged, fast, judge, locks_now, quarantined

from gates.domain import procscan


def _unshare_works(*flags: str) -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", *flags, "true"], capture_output=True, timeout=30).returncode == 0


PID_NS = ("--pid", "--fork", "--mount-proc")
needs_pid_ns = pytest.mark.skipif(not _unshare_works(*PID_NS),
                                  reason="unshare --pid --fork --mount-proc is not permitted here (needs root or "
                                         "user namespaces)")
needs_mount_ns = pytest.mark.skipif(not _unshare_works("--mount"), reason="unshare --mount is not permitted here")
on_the_host = pytest.mark.skipif(procscan.namespace_problem() is not None,
                                 reason=f"this test runs in a namespace of its own: {procscan.namespace_problem()}")


def _prepared(repo: Path, cwd: Path, prefix: tuple[str, ...] = ()) -> tuple[Transaction, dict[str, bytes], str]:
    """A real `git update-ref --stdin` transaction, prepared: HEAD.lock and refs/heads/main.lock held, no descriptor
    open on them. Returns it, the locks as they are, and the commit it will make."""
    old = git(repo, "rev-parse", "HEAD")
    new = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "the transaction's commit")
    tx = Transaction([], cwd, None, new, old, prefix=prefix)
    before = locks_now(repo)
    assert {"HEAD.lock", "refs/heads/main.lock"} <= set(before), before
    return tx, before, new


def _lines(out: str, *shown: str) -> list[str]:
    return [line for line in out.splitlines() if any(name in line for name in shown)]


@needs_pid_ns
@on_the_host
@pytest.mark.parametrize("how", ["its own /proc", "the host's /proc"])
def test_a_gate_in_another_pid_namespace_never_moves_the_locks_of_a_git_outside_it(repo: Path, how: str,
                                                                                   alone: Callable[[], None]) -> None:
    """The attack: the gate runs under `unshare --pid --fork` (with or without a /proc of its own) while a prepared
    transaction outside holds its locks; it saw no git and moved them, and the transaction's commit failed."""
    fast(repo)
    flags = PID_NS if how == "its own /proc" else ("--pid", "--fork")
    tx, before, new = _prepared(repo, repo)
    try:
        import time

        time.sleep(1.2)  # older than the threshold: only liveness keeps them now
        here = run_gate(repo, "locks")
        alone()  # the gate's gits in a PID namespace of their own: no other run's lock scan can follow them
        assert _lines(here.stdout, "HEAD.lock") and all(line.startswith("live") for line in
                                                        _lines(here.stdout, "HEAD.lock", "main.lock")), here.stdout
        inside = subprocess.run(["unshare", *flags, str(GATE_BIN), "locks", "--quarantine"], cwd=repo, capture_output=True,
                                text=True, timeout=60)
        assert inside.returncode == 0, inside.stdout + inside.stderr
        for line in _lines(inside.stdout, "HEAD.lock", "refs/heads/main.lock"):
            assert line.startswith("live"), inside.stdout
        assert ("PID namespace of its own" in inside.stdout if how == "its own /proc"
                else "/proc here is not the PID namespace of this process" in inside.stdout), inside.stdout
        check = subprocess.run(["unshare", *flags, str(GATE_BIN), "check", "--only", "git-stale-locks"], cwd=repo,
                               capture_output=True, text=True, timeout=60)
        assert "stale lock moved" not in check.stdout, check.stdout
        assert locks_now(repo) == before and quarantined(repo) == []  # the snapshot: nothing moved
        code, out, err = tx.commit()
        assert code == 0 and "commit: ok" in out, err
    finally:
        tx.close()
    assert git(repo, "rev-parse", "HEAD") == new


@needs_mount_ns
@on_the_host
@pytest.mark.machine  # its git in a mount namespace of its own: doubt for every lock scan while it runs
def test_a_git_in_another_mount_namespace_is_doubt(repo: Path, tmp_path: Path) -> None:
    """The mirror attack: a container's git works in the repository through a bind mount at another path; from the
    host its cwd reads as that path (an empty folder here), so it looked as if it worked elsewhere and its locks were
    moved. A git process in another mount namespace is doubt, so live."""
    fast(repo)
    other = tmp_path / "mounted-here"
    other.mkdir()
    prefix = ("unshare", "--mount", "--", "sh", "-c", 'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"',
              "sh", str(repo), str(other))
    tx, before, new = _prepared(repo, tmp_path, prefix)
    try:
        import time

        time.sleep(1.2)
        proc = run_gate(repo, "locks", "--quarantine")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "another mount namespace" in proc.stdout, proc.stdout
        for line in _lines(proc.stdout, "HEAD.lock", "refs/heads/main.lock"):
            assert line.startswith("live"), proc.stdout
        assert locks_now(repo) == before and quarantined(repo) == []
        code, out, err = tx.commit()
        assert code == 0 and "commit: ok" in out, err
    finally:
        tx.close()
    assert git(repo, "rev-parse", "HEAD") == new


def test_a_namespace_that_is_not_the_hosts_makes_every_lock_live(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, on any machine: the host's PID namespace is recognised by its inode; any other is doubt, said in
    words, and an hour-old lock nobody holds stays."""
    aged(repo / ".git" / "index.lock")
    monkeypatch.setattr(procscan, "INIT_PID_NS", os.stat("/proc/self/ns/pid").st_ino + 1)
    lock = judge(repo, 60)["index.lock"]
    assert lock.verdict == "live" and "PID namespace of its own" in lock.reason, lock.reason
    assert lock.evidence["scan_complete"] is False


@on_the_host
def test_on_the_host_an_unheld_lock_is_still_stale(repo: Path) -> None:
    aged(repo / ".git" / "index.lock")
    assert judge(repo, 60)["index.lock"].verdict == "stale"

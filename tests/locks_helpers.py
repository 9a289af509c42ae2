"""Aged locks, an injected clock and the liveness sources, for the tests of git locks (gate, command, domain).

The fixtures here (`evidence`) are registered for every test by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gates.domain import locks, lockscan, procscan
from gates.infra import state
from gates.infra.git import discover

MIN = 60.0


def fast(repo: Path, extra: str = "") -> None:
    """A one-second threshold, so that a real process can see a really aged lock."""
    (repo / ".gate.yaml").write_text(f"locks:\n  threshold: 1s\n{extra}")


def aged(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def later(monkeypatch: pytest.MonkeyPatch, seconds: float = 2.0) -> None:
    """The injected clock for whole commands run in this process: the filesystem's now, `seconds` on, so that a
    lock just made is older than `fast`'s one-second threshold without a sleep."""
    real = locks.filesystem_now
    monkeypatch.setattr(locks, "filesystem_now", lambda lay: real(lay) + seconds)


def judge(repo: Path, minutes: float, deep: bool = True) -> dict[str, lockscan.Lock]:
    found_repo = discover(repo, {})
    found = lockscan.find(found_repo, deep=deep)
    fs_now = locks.filesystem_now(state.layout(found_repo)) + minutes * MIN  # the injected clock
    locks.judge(found_repo, found, 15 * MIN, fs_now)
    return {lock.shown: lock for lock in found}


def only_our_git(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """Without /proc every git process of this user anywhere is doubt, so live (lsof shows no environment): on a
    shared machine some other git is always running. The real lsof runs; its list of git processes is cut down to
    the pids the test adds to the set it gets."""
    ours: set[int] = set()
    real = procscan._run_tool

    def only_ours(argv: list[str]) -> str | None:
        out = real(argv)
        if out is None or "-c" not in argv:
            return out
        keep, lines = True, []
        for line in out.split("\n"):
            if line.startswith("p"):
                keep = line[1:].isdigit() and int(line[1:]) in ours
            if keep:
                lines.append(line)
        return "\n".join(lines)

    monkeypatch.setattr(procscan, "_run_tool", only_ours)
    return ours


@pytest.fixture(params=["proc", "lsof"])
def evidence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Each liveness source in turn: /proc, and lsof (macOS has no /proc; Linux has lsof too)."""
    if request.param == "lsof":
        if not any(os.access(p, os.X_OK) for p in procscan.LSOF):
            pytest.skip("no lsof here")
        monkeypatch.setattr(procscan, "PROC", tmp_path / "no-proc")
        only_our_git(monkeypatch)
    return str(request.param)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def quarantined(repo: Path) -> list[Path]:
    folder = repo / ".git" / "gate" / "lost+found"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def locks_now(repo: Path) -> dict[str, bytes]:
    """Every lock file of the repository and its bytes: what the gate must leave exactly as it was."""
    git_dir = repo / ".git"
    found = [*git_dir.glob("*.lock"), *(git_dir / "refs").rglob("*.lock")]
    return {p.relative_to(git_dir).as_posix(): p.read_bytes() for p in found if p.is_file()}


class Transaction:
    """A real `git update-ref --stdin` that prepared `update HEAD <new> <old>` and waits, stdin open, for `commit`.

    Bounded: a watchdog kills it after `limit` seconds, and `close` kills it whatever happened. `prefix` runs it
    through another program (`unshare`, to put it in a namespace of its own)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str] | None, new: str, old: str,
                 limit: float = 60, prefix: tuple[str, ...] = ()) -> None:
        import threading

        self.proc = subprocess.Popen([*prefix, "git", *argv, "update-ref", "--stdin"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.watchdog = threading.Timer(limit, self.proc.kill)
        self.watchdog.start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"start\nupdate HEAD {new} {old}\nprepare\n")
        self.proc.stdin.flush()
        said = [self.proc.stdout.readline(), self.proc.stdout.readline()]
        assert said == ["start: ok\n", "prepare: ok\n"], said

    def commit(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate("commit\n", timeout=30)
        return self.proc.returncode, out, err

    def close(self) -> None:
        self.watchdog.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)

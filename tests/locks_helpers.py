"""Aged locks, an injected clock and the liveness sources, for the tests of git locks (gate, command, domain).

The fixtures here (`evidence`) are registered for every test by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import os
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

"""Confinement: every write lands under <git-common-dir>/gate/ or in a file the user asked to change.

Each test snapshots everything under its temp dir except the allowed places, runs the gate's
commands against a hostile layout, and compares.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from conftest import commit_all, git, handoff_text, init_repo, run_gate

READ_ONLY_COMMANDS = [["check"], ["brief"], ["brief", "--format", "claude"], ["claims"], ["locks"], ["flags"],
                      ["journal", "--verify"], ["doctor"], ["config"]]
WRITING_COMMANDS = [["claim"], ["release"], ["locks", "--quarantine"], ["stamp"], ["archive"], ["render"]]


def snapshot(root: Path, allowed: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for top, dirs, files in os.walk(root):
        here = Path(top)
        if any(here == a or a in here.parents for a in allowed):
            continue
        for name in dirs + files:
            path = here / name
            if any(path == a or a in path.parents for a in allowed):
                continue
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                out[str(path)] = "link->" + os.readlink(path)
            else:
                out[str(path)] = stat.filemode(info.st_mode)
    return out


def _run_all(where: Path, commands: list[list[str]]) -> list[int]:
    return [run_gate(where, *command, timeout=30).returncode for command in commands]


def _allowed(repo: Path) -> list[Path]:
    common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    return [common / "gate", repo / "HANDOFF.md", repo / "ARCHIVE.md"]


def test_a_symlinked_state_dir_is_refused_and_nothing_lands_elsewhere(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / ".git" / "gate")
    allowed = [repo / "HANDOFF.md", repo / "ARCHIVE.md"]
    before = snapshot(tmp_path, allowed)
    codes = _run_all(repo, [["claim"], ["brief"], ["journal", "--verify"]])
    assert codes[0] == 3 and codes[1] == 0
    assert snapshot(tmp_path, allowed) == before
    assert list(outside.iterdir()) == []
    assert "not a plain directory" in run_gate(repo, "claim").stderr


def test_a_state_dir_writable_by_every_user_is_refused(repo: Path, tmp_path: Path) -> None:
    state = repo / ".git" / "gate"
    state.mkdir()
    state.chmod(0o777)
    before = snapshot(tmp_path, [])
    proc = run_gate(repo, "claim")
    assert proc.returncode == 3 and "writable by every user" in proc.stderr
    assert snapshot(tmp_path, []) == before


def test_a_tampered_worktree_gitdir_points_nowhere_we_write(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "index.lock").write_text("not ours")
    (repo / ".git" / "worktrees" / "linked" / "gitdir").write_text(str(victim / ".git") + "\n")
    allowed = _allowed(repo)
    before = snapshot(tmp_path, allowed)
    _run_all(repo, READ_ONLY_COMMANDS + WRITING_COMMANDS)
    after = snapshot(tmp_path, allowed)
    assert after == before


@pytest.mark.parametrize("kind", ["gitfile", "symlink"])
def test_a_git_dir_behind_a_gitfile_or_a_symlink(tmp_path: Path, kind: str) -> None:
    store = tmp_path / "store.git"
    work = tmp_path / "work"
    if kind == "gitfile":
        init_repo(work, f"--separate-git-dir={store}")
    else:
        init_repo(tmp_path / "real")
        os.rename(tmp_path / "real" / ".git", store)
        os.rename(tmp_path / "real", work)
        os.symlink(store, work / ".git")
    (work / "x").write_text("x")
    head = commit_all(work)
    (work / "HANDOFF.md").write_text(handoff_text(head, threads="- [x] done"))
    allowed = [store / "gate", work / "HANDOFF.md", work / "ARCHIVE.md"]
    before = snapshot(tmp_path, allowed)
    codes = _run_all(work, READ_ONLY_COMMANDS + WRITING_COMMANDS)
    assert codes[0] == 1  # the check found the checked item
    assert (store / "gate" / "flags").is_dir()
    assert snapshot(tmp_path, allowed) == before


@pytest.mark.parametrize(("name", "title_ok"), [("../../etc/passwd", True), ("a/b", True), ("x\x00y", False),
                                               ("evil\u202etxt.md", False), ("..", True)])
def test_names_from_arguments_never_become_paths(repo: Path, tmp_path: Path, name: str, title_ok: bool) -> None:
    from gates.main import main

    allowed = _allowed(repo) + [repo / "decisions"]
    before = snapshot(tmp_path, allowed)
    for argv in (["flags", "--ack", name], ["locks", "--restore", name], ["claim", "--session", name],
                 ["release", "--session", name]):
        os.chdir(repo)
        assert main(argv) == 2, argv
    assert snapshot(tmp_path, allowed) == before
    # A title is text: slugged into a file name inside the records folder, or refused when it holds controls.
    assert main(["record", "new", name]) == (0 if title_ok else 2)
    made = list((repo / "decisions").glob("*.md")) if (repo / "decisions").exists() else []
    assert len(made) == (1 if title_ok else 0) and all(p.parent == repo / "decisions" for p in made)
    assert snapshot(tmp_path, allowed) == before


def test_a_configured_path_outside_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    for key in ("handoff:\n  path", "archive:\n  path", "records:\n  path", "mailbox:\n  path", "heartbeat:\n  journal"):
        (repo / ".gate.yaml").write_text(f"{key}: ../outside\n")
        before = snapshot(tmp_path, _allowed(repo))
        proc = run_gate(repo, "archive")
        assert proc.returncode == 3 and "is not a relative path inside the repository" in proc.stderr, key
        assert snapshot(tmp_path, _allowed(repo)) == before

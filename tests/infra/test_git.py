"""Repository discovery: subdirectories, linked worktrees, --separate-git-dir, hooks, GATE_ROOT."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from conftest import REAL_GIT, commit_all, flag_records, git, handoff_text, init_repo, run_gate

from gates.infra.errors import GateError
from gates.infra.git import Early, GitFailed, discover


def test_from_a_subdirectory(repo: Path) -> None:
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    found = discover(sub, {})
    assert found.toplevel == str(repo.resolve())
    assert found.common_dir == str((repo / ".git").resolve())
    proc = run_gate(sub, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout


def test_linked_worktree_shares_the_state_dir(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    found = discover(linked, {})
    assert found.toplevel == str(linked.resolve())
    assert found.git_dir == str((repo / ".git" / "worktrees" / "linked").resolve())
    assert found.common_dir == str((repo / ".git").resolve())
    (linked / "HANDOFF.md").write_text(handoff_text(found.head or "", threads="- [x] done"))
    proc = run_gate(linked, "check")
    assert proc.returncode == 1
    # The flag written from the linked worktree is seen from the main one.
    records = flag_records(repo / ".git")
    assert [r["reason"] for r in records] == ["handoff-no-checked-items"]
    assert records[0]["worktree"] == str(linked.resolve())
    shown = run_gate(repo, "flags")
    assert "HANDOFF.md:11: [handoff-no-checked-items] checked item 'done'" in shown.stdout


def test_separate_git_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    init_repo(work, f"--separate-git-dir={tmp_path / 'store.git'}")
    assert (work / ".git").is_file()
    (work / "x").write_text("x")
    head = commit_all(work)
    (work / "HANDOFF.md").write_text(handoff_text(head))
    found = discover(work, {})
    assert found.common_dir == str((tmp_path / "store.git").resolve())
    proc = run_gate(work, "check")
    assert proc.returncode == 0, proc.stderr
    (work / "HANDOFF.md").write_text(handoff_text(head, threads="- [X] done"))
    assert run_gate(work, "check").returncode == 1
    assert (tmp_path / "store.git" / "gate" / "flags").is_dir()
    assert not (work / "gate").exists()


def test_outside_a_repository_is_exit_3(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    proc = run_gate(lonely, "check", env=env)
    assert proc.returncode == 3
    assert proc.stderr.startswith("gate: not inside a git work tree")
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # the error says where: no second line about the flag


def test_bare_repository_is_exit_3(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    proc = run_gate(bare, "check")
    assert proc.returncode == 3
    assert "not inside a git work tree" in proc.stderr


def test_gate_root_pins_the_repository_and_drops_inherited_pointers(repo: Path, tmp_path: Path) -> None:
    other = init_repo(tmp_path / "other")
    (other / "y").write_text("y")
    commit_all(other)
    env = {
        **os.environ,
        "GATE_ROOT": str(repo),
        "GIT_DIR": str(other / ".git"),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
    }
    found = discover(other, env)
    assert found.toplevel == str(repo.resolve())
    assert "GIT_DIR" not in found.env and "GIT_INDEX_FILE" not in found.env
    proc = run_gate(other, "check", env=env)
    assert proc.returncode == 0, proc.stderr


def test_gate_root_that_is_not_a_repository(tmp_path: Path) -> None:
    env = {**os.environ, "GATE_ROOT": str(tmp_path / "missing")}
    proc = run_gate(tmp_path, "check", env=env)
    assert proc.returncode == 3
    assert "GATE_ROOT" in proc.stderr
    with pytest.raises(GateError) as caught:
        discover(tmp_path, {"GATE_ROOT": str(tmp_path / "missing")})
    assert caught.value.reason == "not-a-repository"


def test_git_dir_from_the_environment_is_respected(repo: Path, tmp_path: Path) -> None:
    # Inside a hook git sets GIT_DIR; the gate judges that repository, not the one of its cwd.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = discover(elsewhere, {**os.environ, "GIT_DIR": str(repo / ".git")})
    assert found.common_dir == str((repo / ".git").resolve())
    assert found.toplevel == str(elsewhere.resolve())  # git's rule: with GIT_DIR alone, the cwd is the work tree


def _install_hook(repo: Path, body: str) -> None:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("all_flag", [False, True], ids=["commit", "commit-a"])
def test_inside_a_real_git_hook(repo: Path, all_flag: bool) -> None:
    from conftest import GATE_BIN

    _install_hook(repo, f'exec "{GATE_BIN}" check')
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] finished"))
    args = ["commit", "-q", "-m", "bad"] + (["-a"] if all_flag else [])
    if not all_flag:
        git(repo, "add", "HANDOFF.md")
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "[handoff-no-checked-items] checked item 'finished'" in proc.stdout + proc.stderr
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD")))
    git(repo, "add", "HANDOFF.md")
    git(repo, *(["commit", "-q", "-m", "good"] + (["-a"] if all_flag else [])))
    assert git(repo, "log", "-1", "--format=%s") == "good"
    assert git(repo, "status", "--porcelain") == ""


def test_the_branch_is_read_as_git_names_it(repo: Path, tmp_path: Path) -> None:
    """HEAD's file when git wrote one of its two shapes; git itself for anything else."""
    def both(where: Path) -> tuple[str | None, str | None]:
        proc = subprocess.run(["git", "symbolic-ref", "--short", "--quiet", "HEAD"], cwd=where, capture_output=True,
                              text=True)
        return discover(where, {}).branch(), (proc.stdout.strip() or None)

    assert both(repo) == ("main", "main")
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert both(repo) == ("feature/x", "feature/x")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    assert both(linked) == ("side", "side")
    git(repo, "checkout", "-q", "--detach")
    assert both(repo) == (None, None)
    git(repo, "checkout", "-q", "main")
    head = repo / ".git" / "HEAD"
    head.unlink()
    head.symlink_to("refs/heads/main")  # the symlink symref of old gits: not read, asked
    assert both(repo) == ("main", "main")


def test_prefetched_calls_answer_as_direct_ones_and_each_runs_once(repo: Path) -> None:
    from gates.infra import git as door

    found = discover(repo, {})
    listed = ("rev-list", "--max-count=3", "HEAD", "--")
    found.prefetch(listed, door.log_args(2), ("rev-parse", "--verify", "no-such-ref"))
    assert list(found.started) == [listed, door.log_args(2), ("rev-parse", "--verify", "no-such-ref")]
    assert found.git(*listed).stdout.split() == git(repo, "rev-list", "--max-count=3", "HEAD").split()
    assert found.log_oneline(2) == git(repo, "log", "--no-decorate", "--max-count=2", "--format=%h %s").split("\n")
    assert list(found.started) == [("rev-parse", "--verify", "no-such-ref")]  # collected calls are gone
    assert found.git("rev-parse", "--verify", "no-such-ref").returncode == 128 and not found.started
    again = found.git("rev-parse", "--verify", "no-such-ref")  # not prefetched any more: run anew
    assert again.returncode == 128


def test_blobs_read_in_one_batch_answer_as_each_read_alone(repo: Path) -> None:
    """One `git cat-file --batch` reads the blobs a check asks first; each answer is the one `cat-file blob` gives alone,
    cut as a limit cuts it, and what the batch does not give whole (no such path, a folder, past the batch's cap) is
    asked alone: the same answer, never a half blob taken for a whole one."""
    (repo / "small").write_bytes(b"a: 1\r\n")
    (repo / "big").write_bytes(bytes(range(256)) * 40)  # 10,240 bytes, past the cap below
    (repo / "dir").mkdir()
    (repo / "dir" / "x").write_text("x\n")
    git(repo, "add", "small", "big", "dir/x")
    specs = [":0:small", ":0:nope", ":0:dir", ":0:big", ":0:small"]
    for limit in (None, 100):
        found = discover(repo, {})
        found.prefetch_blobs(specs, 4096)
        try:
            alone = discover(repo, {})
            for path in ("small", "nope", "dir", "big"):
                assert found.index_blob(path, limit) == alone.index_blob(path, limit), (path, limit)
            assert found.index_blob("big", 10) == (repo / "big").read_bytes()[:11]
        finally:
            found.drop_started()
    found = discover(repo, {})
    found.prefetch_blobs([":0:small", ":0:line\nbreak"], 4096)  # a name git's batch cannot read: no batch at all
    assert "batch" not in found.memo and found.index_blob("small") == b"a: 1\r\n"


@pytest.mark.parametrize("target", ["ev\x1b[31mil", "a b", "x..y", ".hidden", "dir/x.lock", "caf\u00e9", "-"])
def test_a_hostile_head_file_names_no_branch_git_would_not(repo: Path, target: str) -> None:
    """The attack: HEAD is a file of the repository's git dir, which whoever shaped the repository can write.
    A name read from it must be the one git gives (none, for a name git refuses), never a control character."""
    (repo / ".git" / "HEAD").write_bytes(f"ref: refs/heads/{target}\n".encode())
    proc = subprocess.run(["git", "symbolic-ref", "--short", "--quiet", "HEAD"], cwd=repo, capture_output=True)
    told = proc.stdout.decode("utf-8", "surrogateescape").strip() or None
    assert discover(repo, {}).branch() == told
    brief = run_gate(repo, "brief")
    assert "\x1b" not in brief.stdout + brief.stderr


def test_an_early_discovery_is_read_only_where_it_was_asked(repo: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Started in one repository, read in another: the answer is dropped and the second is asked afresh."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.chdir(repo)
    early = Early()
    assert early.running is not None
    monkeypatch.chdir(other)
    assert discover(early=early).toplevel == os.path.realpath(other)
    assert early.running is None  # read (and reaped) once, never again


def test_an_early_discovery_sees_what_happened_before_it_is_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each invocation starts its own: the HEAD of one run's discovery is never another run's."""
    monkeypatch.chdir(repo)
    before = discover(early=Early()).head
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "-q", "-m", "more")
    after = discover(early=Early()).head
    assert before != after == git(repo, "rev-parse", "HEAD")


def test_an_early_discovery_never_read_is_reaped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    early = Early()
    assert early.running is not None
    pid = early.running.pid
    early.drop()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # no zombie left behind: it was waited for


def _slow_git(plant: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, repo: Path) -> Path:
    """git on PATH that takes 2 s for a call in `repo` and then leaves a mark; the path of that mark."""
    finished = repo.parent / "finished"
    wrapper = plant(f'case "$*" in *"-C {repo} "*) sleep 2; touch "{finished}";; esac\nexec "{REAL_GIT}" "$@"\n')
    monkeypatch.setenv("PATH", f"{wrapper}:{os.environ['PATH']}")
    monkeypatch.setattr("gates.infra.git._GIT", [])  # git is found on this PATH
    return finished


def _stopped_before_it_finished(pid: int, finished: Path) -> None:
    """The slow git `pid` (a child of this process) is gone and reaped, and it never left its mark: the wrapper
    leaves it before it exits, so it was stopped, and nothing of it is left running to leave it later."""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie, and no longer running
    assert not finished.exists()


@pytest.mark.parametrize("how", ["never read", "read from elsewhere"])
def test_an_early_discovery_not_read_here_is_stopped_not_waited_for(repo: Path, tmp_path: Path, how: str,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   git_wrapper: Callable[..., Path]) -> None:
    """A check that fails before it asks (a usage error), or asks from another folder, does not wait for the slow
    git it started: it is stopped (a wait would let it finish and leave its mark)."""
    finished = _slow_git(git_wrapper, monkeypatch, repo)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.chdir(repo)
    early = Early()
    assert early.running is not None and early.running.argv[:3] == [str(tmp_path / "bin" / "git"), "-C", str(repo)]
    pid = early.running.pid
    if how == "never read":
        early.drop()
    else:
        assert discover(other, early=early).toplevel == os.path.realpath(other)
    assert early.running is None
    _stopped_before_it_finished(pid, finished)


def test_prefetched_calls_nobody_read_are_stopped_when_the_invocation_ends(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          git_wrapper: Callable[..., Path]) -> None:
    from gates.commands import Invocation
    from gates.infra.git import own_processes

    monkeypatch.chdir(repo)
    run = Invocation(["check"])
    found = run.repo()
    finished = _slow_git(git_wrapper, monkeypatch, repo)
    found.prefetch(("rev-list", "HEAD"), ("log", "-1"))
    pids = [running.pid for running in found.started.values()]
    assert set(pids) <= own_processes()  # the gate's own: never taken for another writer while they run
    run.close()
    assert found.started == {} and not set(pids) & own_processes()
    for pid in pids:
        _stopped_before_it_finished(pid, finished)


def test_commands_other_than_check_start_no_early_git(repo: Path, tmp_path: Path, git_wrapper: Callable[..., Path]) -> None:
    log = tmp_path / "bin" / "calls.log"
    wrapper = git_wrapper(f'echo "$*" >> "{log}"\nexec "{REAL_GIT}" "$@"\n')
    env = {**os.environ, "PATH": f"{wrapper}:{os.environ['PATH']}"}
    assert run_gate(repo, "schema", "config", env=env).returncode == 0
    assert not log.exists()


def test_the_discovery_reads_heads_recent_line_as_rev_list_does(repo: Path, tmp_path: Path) -> None:
    """discover() takes HEAD's last 16 first-parent commits from its own rev-parse (HEAD~0 to HEAD~15): what
    `git rev-list --first-parent --max-count=16 HEAD` lists, through merges, replacements, a shallow clone, a
    short history, a HEAD at a tag object or at a tree, and an unborn branch; the check then asks git nothing
    more about them."""
    from gates.infra import git as door

    def agree(where: Path) -> list[str]:
        found = discover(where, {})
        listed = subprocess.run(["git", "rev-list", "--first-parent", "--max-count=16", "HEAD", "--"], cwd=where,
                                capture_output=True, text=True)
        expected = listed.stdout.split() if listed.returncode == 0 and found.head else []
        assert found.recent() == expected and not found.started
        head = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=where, capture_output=True,
                              text=True).stdout.strip() or None
        assert found.head == head
        return expected

    assert len(agree(repo)) == 2  # a short history: all of it
    for n in range(20):
        (repo / "f").write_text(str(n))
        commit_all(repo, f"c{n}")
    git(repo, "checkout", "-q", "-b", "side", "HEAD~3")
    (repo / "g").write_text("side")
    commit_all(repo, "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
    line = agree(repo)
    assert len(line) == 16 and git(repo, "rev-parse", "side") not in line  # the first parents only
    git(repo, "replace", "--graft", "HEAD~2")  # HEAD~2 now has no parent: the line ends there
    assert len(agree(repo)) == 3
    git(repo, "replace", "-d", git(repo, "rev-parse", "HEAD~2"))
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "4", f"file://{repo}", str(shallow))
    assert len(agree(shallow)) == 4
    git(repo, "tag", "-a", "-m", "t", "annotated")
    (repo / ".git" / "HEAD").write_text(git(repo, "rev-parse", "annotated") + "\n")  # a tag object, detached
    assert len(agree(repo)) == 16
    (repo / ".git" / "HEAD").write_text(git(repo, "rev-parse", "HEAD^{tree}") + "\n")  # a hostile HEAD: a tree
    assert agree(repo) == [] and discover(repo, {}).head is not None
    unborn = init_repo(tmp_path / "unborn")
    assert agree(unborn) == [] and discover(unborn, {}).head is None
    assert len(door.DISCOVER_ARGS) == 6 + door.RECENT


def test_a_broken_commit_in_heads_recent_line_leaves_the_discovery_standing(repo: Path) -> None:
    """A missing commit object ends the line before it (rev-list failed on it: it gave none); a corrupt one stops
    git's rev-parse, so the discovery asks again without the line and rev-list says what is wrong, as before:
    every command still finds the repository (`gate doctor` diagnoses it)."""
    for n in range(5):
        commit_all(repo, f"c{n}")
    line = git(repo, "rev-list", "--first-parent", "HEAD").split()

    def loose(commit: str) -> Path:
        path = repo / ".git" / "objects" / commit[:2] / commit[2:]
        assert path.is_file()
        return path

    missing = loose(line[2])
    kept = missing.read_bytes()
    missing.unlink()
    found = discover(repo, {})
    assert found.head == line[0] and found.recent() == line[:2]
    missing.write_bytes(kept)
    corrupt = loose(line[3])
    corrupt.chmod(0o644)
    corrupt.write_bytes(b"xxxxxxxx")
    found = discover(repo, {})
    assert found.head == line[0] and found.toplevel == str(repo.resolve())
    with pytest.raises(GitFailed, match=r"^git rev-list failed \(exit 128: .*\): its answer is unknown"):
        found.recent()  # never read as a line of no commits
    doctor = run_gate(repo, "doctor")
    assert "not inside a git work tree" not in doctor.stdout + doctor.stderr, doctor.stdout + doctor.stderr
    assert "git work tree" not in run_gate(repo, "check").stderr

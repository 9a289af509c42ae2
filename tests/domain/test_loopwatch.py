"""A session loop that did not run is noticed by the commit it let through (issue 26): `gate check` warns when an
agent harness's shell makes a commit in a repository wired for it and this worktree's journal shows no brief or
close-out for the recent commits; a person's commit, a repository without harness config and a loop that runs are
never warned."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import AGENT_ENV_VARS, call_gate, commit_all, git, run_gate

from gates.checks import runner
from gates.domain import agents, journal, loopwatch
from gates.infra.git import discover

WARNED = "but the session loop is not running for it"


def _wired(repo: Path, agent: str = "codex") -> None:
    assert run_gate(repo, "install-hooks", "--agent", agent).returncode == 0
    commit_all(repo, f"wire {agent}")


def _commits(repo: Path, count: int) -> None:
    for n in range(count):
        (repo / "README").write_text(f"change {n}\n")
        commit_all(repo, f"work {n}")


def _check(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_gate(repo, "check", env={**os.environ, **env})


def _journalled(repo: Path, action: str, hours_ago: float, head: str | None = None) -> None:
    """A loop entry of this worktree, as the brief or the stop hook appends it, `hours_ago` old."""
    found = discover(repo)
    when = datetime.now(timezone.utc) - timedelta(hours=hours_ago)
    journal.append(found, action, {"harness": "codex", "session": "s-1", "head": head or found.head}, when)


def test_an_agents_commit_through_the_git_hook_is_told_its_loop_did_not_run(repo: Path) -> None:
    """A clone whose Codex never ran the hooks (untrusted, or re-installed since): the agent's `git commit` runs the
    native hook, which passes with the warning; the same commit made by a person says nothing."""
    assert run_gate(repo, "install-hooks").returncode == 0
    _wired(repo)
    for who, env in (("person", {}), ("agent", {"CODEX_THREAD_ID": "019d-thread"})):
        (repo / "README").write_text(f"by the {who}\n")
        assert run_gate(repo, "stamp").returncode == 0
        git(repo, "add", "-A")
        proc = subprocess.run(["git", "commit", "-q", "-m", f"by the {who}"], cwd=repo, capture_output=True,
                              text=True, env={**os.environ, **env})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        said = proc.stdout + proc.stderr
        if who == "person":
            assert WARNED not in said, said
        else:
            assert ".codex/hooks.json:1: [gate warning] this commit is made in a Codex session (CODEX_THREAD_ID is " \
                   "set)" in said, said
            assert "no session brief or close-out is journalled for this worktree" in said
            assert "re-install, an upgrade or any edit of .codex/hooks.json un-trusts them" in said


@pytest.mark.parametrize("agent, variable", [("claude", "CLAUDECODE"), ("codex", "CODEX_THREAD_ID"),
                                             ("gemini", "GEMINI_CLI")])
def test_each_harness_is_known_by_its_shell(repo: Path, agent: str, variable: str,
                                            capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _wired(repo, agent)
    monkeypatch.setenv(variable, "1")
    code, out, _ = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and f"{agents.FILES[agent]}:1: [gate warning]" in out and f"({variable} is set)" in out, out


def test_no_false_alarm_for_a_person_or_a_repository_without_harness_config(repo: Path) -> None:
    """A human-only history (no harness's variable) and an agent in a repository wired for another harness, or for
    none: no warning, however many commits lack a brief."""
    _commits(repo, 2)
    assert WARNED not in _check(repo, CODEX_THREAD_ID="t").stdout  # no harness config at all
    _wired(repo, "claude")
    _commits(repo, 2)
    assert WARNED not in _check(repo).stdout  # a person's commits
    assert WARNED not in _check(repo, CODEX_THREAD_ID="t", GEMINI_CLI="1").stdout  # harnesses not wired here
    assert WARNED not in _check(repo, CLAUDECODE="0").stdout  # not Claude Code's value
    assert WARNED in _check(repo, CLAUDECODE="1").stdout


def test_a_loop_that_runs_is_not_warned_and_one_gone_quiet_is(repo: Path) -> None:
    """The thresholds: a warning only when no loop entry is at any of the last 3 commits (this one included) and
    none is younger than an hour. One long turn committing often, or a brief an hour old one commit ago, is fine."""
    _wired(repo)
    agent = {"CODEX_THREAD_ID": "t"}
    _journalled(repo, "session-brief", hours_ago=0)
    _commits(repo, 5)
    assert WARNED not in _check(repo, **agent).stdout  # a long turn: five commits, the brief minutes old
    head = git(repo, "rev-parse", "HEAD~1")
    _journalled(repo, "closeout", hours_ago=3, head=head)
    assert WARNED not in _check(repo, **agent).stdout  # its stop one commit ago: 2 commits with this one
    _commits(repo, 1)
    out = _check(repo, **agent).stdout
    assert "no session brief or close-out has been journalled for this worktree for 3 commits, this one included, " \
           "and 3 hour(s)" in out, out


def test_only_this_worktrees_loop_counts(repo: Path, tmp_path: Path) -> None:
    _wired(repo)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "linked", str(linked))
    _journalled(linked, "session-brief", hours_ago=0)  # a session in the other worktree
    assert WARNED in _check(repo, CODEX_THREAD_ID="t").stdout
    assert WARNED not in _check(linked, CODEX_THREAD_ID="t").stdout


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_a_planted_harness_file_is_neither_waited_on_nor_followed(repo: Path, tmp_path: Path, planted: str) -> None:
    """A FIFO at .codex/hooks.json would hang a reader; a link to a wired file elsewhere is not this repository's
    config: neither is read, the check ends at once without the warning."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hooks.json").write_text('{"hooks": {"SessionStart": [{"hooks": [{"command": "x brief --format codex"}]}]}}')
    (repo / ".codex").mkdir()
    if planted == "fifo":
        os.mkfifo(repo / ".codex" / "hooks.json")
    else:
        (repo / ".codex" / "hooks.json").symlink_to(outside / "hooks.json")
    proc = run_gate(repo, "check", env={**os.environ, "CODEX_THREAD_ID": "t"}, timeout=20)
    assert proc.returncode == 0 and WARNED not in proc.stdout, proc.stdout + proc.stderr


def test_the_checks_list_of_variables_is_the_modules() -> None:
    assert runner.AGENT_VARIABLES == tuple(variable for variable, *_ in loopwatch.HARNESSES)
    assert set(runner.AGENT_VARIABLES) <= set(AGENT_ENV_VARS)  # the suite clears them
    for _, _, agent, _, files, _ in loopwatch.HARNESSES:
        assert set(files) == {agents.FILES[agent], *([agents.LOCAL_FILES[agent]] if agent in agents.LOCAL_FILES else [])}


def test_the_pre_commit_frameworks_hook_shows_it_with_verbose(repo: Path, tmp_path: Path) -> None:
    """The same check run by the pre-commit framework (a local hook with `verbose: true`, as the README's snippet
    sets it): the agent's commit passes and shows the warning."""
    import sys

    from conftest import GATE_BIN

    _wired(repo)
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: gate\n        name: gate\n        language: system\n"
        f"        entry: {GATE_BIN} check\n        pass_filenames: false\n        always_run: true\n"
        "        verbose: true\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    install = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, capture_output=True,
                             text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "-A")
    proc = subprocess.run(["git", "commit", "-q", "-m", "by the agent"], cwd=repo, capture_output=True, text=True,
                          env={**env, "CODEX_THREAD_ID": "019d-thread"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ".codex/hooks.json:1: [gate warning] this commit is made in a Codex session" in proc.stdout + proc.stderr

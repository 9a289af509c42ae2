"""One definition of "behind" (gates/domain/ancestry.py), as the brief, `gate check`, the real hook and --range see it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import commit_all, git, run_gate


def _commit(repo: Path, message: str, *, verify: bool = True) -> subprocess.CompletedProcess[str]:
    """`git commit` of what is staged, through the installed hooks unless `verify` is False."""
    args = ["git", "commit", "-q", "-m", message] + ([] if verify else ["--no-verify"])
    return subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=120)


def _close_out(repo: Path) -> None:
    """The close-out as the README documents it, through the real hook (its first step, `gate check`, is what the
    session answers before stamping: here it may be behind already, which the stamp mends)."""
    run_gate(repo, "check")
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    done = _commit(repo, "close-out: the work")
    assert done.returncode == 0, done.stderr


def _verdict_line(repo: Path) -> str:
    [line] = [line for line in run_gate(repo, "brief").stdout.splitlines() if line.startswith("Verdict: ")]
    return line


def _setup(repo: Path, max_behind: int) -> str:
    """Hooks installed, a max_behind, one commit of work; returns the root commit."""
    (repo / ".gate.yaml").write_text(f"fresh:\n  max_behind: {max_behind}\n")
    commit_all(repo, "config")
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / "work.txt").write_text("the session's work\n")
    git(repo, "add", "work.txt")
    assert _commit(repo, "work", verify=False).returncode == 0  # the session's work, which the close-out ends
    return git(repo, "rev-list", "--max-parents=0", "HEAD")


def test_the_documented_close_out_is_current(repo: Path) -> None:
    _setup(repo, 3)
    _close_out(repo)
    assert _verdict_line(repo) == "Verdict: current (HEAD is the close-out of the Meta ref)"
    assert "WARNING: the hand-over and git disagree" not in run_gate(repo, "brief").stdout
    assert run_gate(repo, "check").returncode == 0
    (repo / "more.txt").write_text("one commit of work after the close-out\n")
    git(repo, "add", "more.txt")
    assert _commit(repo, "more").returncode == 0
    assert _verdict_line(repo) == "Verdict: 1 commit behind HEAD"


@pytest.mark.parametrize("max_behind", [0, 3])
def test_the_hook_refuses_exactly_what_check_and_range_refuse(repo: Path, max_behind: int) -> None:
    _setup(repo, max_behind)
    _close_out(repo)
    root = git(repo, "rev-parse", "HEAD~1")  # the Meta ref: --range judges the close-out and what follows
    hook, check, ranged, refused = [True], [run_gate(repo, "check").returncode == 0], [], []
    ranged.append(run_gate(repo, "check", "--range", f"{root}..HEAD").returncode == 0)
    for n in range(1, max_behind + 3):
        (repo / f"ordinary{n}.txt").write_text(f"ordinary commit {n}\n")
        git(repo, "add", f"ordinary{n}.txt")
        through = _commit(repo, f"ordinary {n}")
        hook.append(through.returncode == 0)
        if through.returncode != 0:
            assert "[handoff-fresh]" in through.stderr and "once this commit is made" in through.stderr, through.stderr
            assert _commit(repo, f"ordinary {n}", verify=False).returncode == 0
            refused.append(git(repo, "rev-parse", "HEAD"))
        after = run_gate(repo, "check")
        check.append(after.returncode == 0)
        ranged.append(run_gate(repo, "check", "--range", f"{root}..HEAD").returncode == 0)
        assert hook[-1] == check[-1], (n, after.stdout)
    expected = [True] * (max_behind + 1) + [False] * 2  # N = 0 (the close-out) .. max_behind + 2
    assert hook == check == ranged == expected
    # --range names each commit the hook refused; HEAD's own verdict is the work tree's.
    out = run_gate(repo, "check", "--range", f"{root}..HEAD", "--only", "handoff-fresh").stdout
    named = re.findall(r"commit ([0-9a-f]{12}) \(ordinary \d+\): its Meta ref \S+ is \d+ commits? behind it", out)
    assert sorted(named) == sorted(sha[:12] for sha in refused[:-1])
    assert f"is {max_behind + 2} commits behind HEAD, more than fresh.max_behind ({max_behind})" in out


def test_a_stamp_left_out_of_the_commit_closes_nothing(repo: Path) -> None:
    _setup(repo, 0)
    assert run_gate(repo, "stamp").returncode == 0  # stamped, but HANDOFF.md is not staged
    (repo / "other.txt").write_text("other work\n")
    git(repo, "add", "other.txt")
    through = _commit(repo, "other work, not a close-out")
    committed = git(repo, "show", "HEAD:HANDOFF.md").split("- ref: ")[1].split()[0]  # the Meta ref the commit keeps
    assert through.returncode == 1 and f"Meta ref {committed} is " in through.stderr, through.stderr
    assert "once this commit is made" in through.stderr
    assert "the unstaged changes to HANDOFF.md are not in this commit and were not judged" in through.stderr
    assert _commit(repo, "other work, not a close-out", verify=False).returncode == 0
    assert run_gate(repo, "check").returncode == 1
    assert _verdict_line(repo) == "Verdict: 1 commit behind HEAD"


def test_range_judges_every_commit_even_after_a_later_close_out(repo: Path) -> None:
    root = _setup(repo, 1)
    _close_out(repo)
    shas = []
    for n in range(1, 4):
        (repo / f"n{n}.txt").write_text(str(n))
        git(repo, "add", f"n{n}.txt")
        assert _commit(repo, f"ordinary {n}", verify=False).returncode == 0
        shas.append(git(repo, "rev-parse", "HEAD"))
    _close_out_anyway(repo)
    assert run_gate(repo, "check").returncode == 0  # the work tree is current again
    assert _verdict_line(repo) == "Verdict: current (HEAD is the close-out of the Meta ref)"
    proc = run_gate(repo, "check", "--range", f"{root}..HEAD", "--only", "handoff-fresh")
    assert proc.returncode == 1
    named = re.findall(r"commit ([0-9a-f]{12}) \(ordinary \d+\): its Meta ref \S+ is (\d+) commits behind it", proc.stdout)
    assert sorted(named) == sorted([(shas[1][:12], "2"), (shas[2][:12], "3")])  # findings come sorted by text


def _close_out_anyway(repo: Path) -> None:
    """A close-out made while the history is already too far behind: the hook lets it through (it is current)."""
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    done = _commit(repo, "close-out: catching up")
    assert done.returncode == 0, done.stderr


def test_a_hand_over_changed_again_after_its_close_out(repo: Path) -> None:
    """The close-out is the Meta ref's child, judged by what that commit wrote, not by the hand-over as it is now."""
    _setup(repo, 3)
    _close_out(repo)
    text = (repo / "HANDOFF.md").read_text().replace("Build the thing.", "Build the thing, differently.")
    (repo / "HANDOFF.md").write_text(text)
    git(repo, "add", "HANDOFF.md")
    assert _commit(repo, "an edit without a stamp", verify=False).returncode == 0
    assert _verdict_line(repo) == "Verdict: 1 commit behind HEAD"  # the close-out is not counted, the edit is


@pytest.mark.parametrize(("argv", "amends"), [
    (["git", "commit", "--amend"], True),
    (["/usr/bin/git", "-c", "core.editor=true", "-C", "/w", "commit", "-a", "--amend", "--no-edit"], True),
    (["git", "commit", "--am", "-m", "x"], True),  # a unique prefix, as git's option parser takes it
    (["git", "commit", "--amend", "--no-amend"], False),
    (["git", "commit", "--amend", "--no-amen", "-m", "w"], False),  # a unique prefix of --no-amend
    (["git", "commit", "-a", "--mess", "--amend"], False),  # --message by a prefix: its value is "--amend"
    (["git", "commit", "-Salice@x.net", "--amend"], True),  # -S takes the rest of its cluster, never the next
    (["git", "commit", "--end-of-options", "--amend"], False),
    (["git", "--attr-source", "HEAD", "commit", "--amend"], True),
    (["git", "commit", "-m", "--amend"], False),  # the message
    (["git", "commit", "-am", "--amend"], False),
    (["git", "commit", "--message", "--amend"], False),
    (["git", "commit", "-m--amend"], False),
    (["git", "commit", "--", "--amend"], False),  # a path
    (["git", "commit", "-C", "HEAD"], False),
    (["git", "merge", "--amend"], False),  # no commit: pre-merge-commit's git
    (["python3", "-m", "pre_commit", "commit", "--amend"], None),
    ([], None),
])
def test_an_amend_is_read_from_its_gits_command_line(argv: list[str], amends: bool | None) -> None:
    from gates.domain.changes import _amends

    assert _amends(argv) is amends

"""A realistic multi-session history through the real native hook, read as the next session reads it.

At each step: what the hook said, what `gate check` says once the commit exists (CI), the brief's
verdict line and the open flags, each exactly what a person would expect.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import git, init_repo, run_gate, write_target


def _commit(repo: Path, message: str, *, verify: bool = True) -> int:
    argv = ["git", "commit", "-q", "-m", message] + ([] if verify else ["--no-verify"])
    return subprocess.run(argv, cwd=repo, capture_output=True, text=True).returncode


def _work(repo: Path, n: int) -> None:
    with open(repo / "code.py", "a") as handle:
        handle.write(f"print({n})\n")
    git(repo, "add", "code.py")


def _verdict(repo: Path) -> str:
    return next(line for line in run_gate(repo, "brief").stdout.splitlines() if line.startswith("Verdict: "))


def _open(repo: Path) -> list[str]:
    return sorted(flag["reason"] for flag in json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"])


def _ci(repo: Path) -> int:
    return run_gate(repo, "check").returncode


def _close_out(repo: Path) -> int:
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    return _commit(repo, "close-out")


def _adopted(tmp_path: Path) -> Path:
    """A project that followed the README: init, the target written, stamped, committed, native hooks installed."""
    repo = init_repo(tmp_path / "project")
    (repo / "code.py").write_text("print(0)\n")
    git(repo, "add", "-A")
    _commit(repo, "first", verify=False)
    assert run_gate(repo, "init").returncode == 0
    write_target(repo, "Ship the parser.")
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "-A")
    assert _commit(repo, "adopt handoff-gate") == 0  # no hook yet
    assert run_gate(repo, "install-hooks").returncode == 0
    return repo


def test_a_week_of_sessions_reads_true_at_every_step(tmp_path: Path) -> None:
    repo = _adopted(tmp_path)

    # Session 1 closes out as the README says: the brief then says current, and nothing is flagged.
    assert _close_out(repo) == 0 and _ci(repo) == 0
    assert _verdict(repo) == "Verdict: current (HEAD is the close-out of the Meta ref)"
    assert _open(repo) == []

    # Session 2: an ordinary commit, then one the hook refuses, fixed and recommitted.
    _work(repo, 1)
    assert _commit(repo, "work 1") == 0 and _ci(repo) == 0
    assert _verdict(repo) == "Verdict: 1 commit behind HEAD"
    archive = (repo / "ARCHIVE.md").read_text()
    (repo / "ARCHIVE.md").write_text(archive.replace("# Archive", "# Archive (rewritten)", 1))
    _work(repo, 2)
    git(repo, "add", "ARCHIVE.md")
    assert _commit(repo, "work 2, rewriting the archive") == 1  # refused by the hook: the archive only grows
    assert _ci(repo) == 1  # and CI says the same of that state
    assert _open(repo) == ["append-only"]
    (repo / "ARCHIVE.md").write_text(archive)  # the fix
    git(repo, "add", "ARCHIVE.md")
    assert _commit(repo, "work 2") == 0 and _ci(repo) == 0
    assert _open(repo) == []
    brief = run_gate(repo, "brief").stdout.splitlines()
    assert "Verdict: 2 commits behind HEAD" in brief
    assert any(line.startswith("Since the last close-out (updated ") and line.endswith(
        ": 1 problem raised and resolved (append-only ×1); `gate flags --all` shows it.") for line in brief), brief

    # Session 2 ends without a close-out; session 3 commits once more: the hook allows max_behind (3) and refuses the next.
    _work(repo, 3)
    assert _commit(repo, "work 3") == 0 and _ci(repo) == 0
    assert _verdict(repo) == "Verdict: 3 commits behind HEAD"
    _work(repo, 4)
    assert _commit(repo, "work 4") == 1  # the hook judges the history as it will be
    assert _open(repo) == ["handoff-fresh"]
    assert _commit(repo, "work 4", verify=False) == 0 and _ci(repo) == 1  # CI refuses what the hook refused

    # Session 4 starts: the brief says what is wrong now; its close-out makes it current and resolves the flag.
    assert _verdict(repo).startswith("Verdict: 4 commits behind HEAD")
    assert set(_open(repo)) == {"handoff-fresh"}  # raised by the hook and by the CI check
    assert _close_out(repo) == 0 and _ci(repo) == 0
    assert _verdict(repo) == "Verdict: current (HEAD is the close-out of the Meta ref)"
    assert _open(repo) == []


def test_the_hook_judges_the_staged_hand_over_not_the_work_tree(tmp_path: Path) -> None:
    """Stage a checked item, put the work-tree copy back: the commit would record the item, so it is refused."""
    repo = _adopted(tmp_path)
    assert run_gate(repo, "stamp").returncode == 0
    clean = (repo / "HANDOFF.md").read_text()
    (repo / "HANDOFF.md").write_text(clean.replace("## Open Threads\n", "## Open Threads\n- [x] parser done\n"))
    git(repo, "add", "HANDOFF.md")
    (repo / "HANDOFF.md").write_text(clean)  # the work tree looks fine; the index holds the checked item
    head = git(repo, "rev-parse", "HEAD")
    assert _commit(repo, "close-out with a staged checked item") == 1
    assert git(repo, "rev-parse", "HEAD") == head
    git(repo, "add", "HANDOFF.md")  # what is staged now is the clean copy, though the work tree gets a bad one
    (repo / "HANDOFF.md").write_text(clean.replace("## Open Threads\n", "## Open Threads\n- [x] not staged\n"))
    assert _commit(repo, "close-out") == 0
    assert "[x]" not in git(repo, "show", "HEAD:HANDOFF.md")

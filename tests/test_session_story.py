"""A realistic multi-session history through the real native hook, read as the next session reads it.

At each step: what the hook said, what `gate check` says once the commit exists (CI), the brief's
verdict line and the open flags, each exactly what a person would expect.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, git, init_repo, run_gate, write_target

from gates.domain import agents


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
        ": 1 problem resolved (append-only ×1); `gate flags --all` shows it.") for line in brief), brief

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


def _hooked(repo: Path, message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, capture_output=True, text=True)


def test_a_stamp_left_unstaged_passes_no_commit_that_ci_refuses(tmp_path: Path) -> None:
    """The hook and CI's --range judge one thing, the hand-over the commit records: a `gate stamp` left in the work
    tree made a commit of other work pass the hook (it judged the work tree) while CI refused that commit later."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    ref = git(repo, "rev-parse", "HEAD~1")  # the close-out's Meta ref: its parent
    for n in range(3):  # fresh.max_behind: 3
        _work(repo, n)
        assert _commit(repo, f"work {n}") == 0
    assert run_gate(repo, "stamp").returncode == 0  # the close-out half done: stamped, not staged
    stamped = (repo / "HANDOFF.md").read_bytes()
    _work(repo, 3)
    head = git(repo, "rev-parse", "HEAD")
    refused = _hooked(repo, "work 3")
    assert refused.returncode == 1 and git(repo, "rev-parse", "HEAD") == head, refused.stderr
    assert f"Meta ref {ref} is 4 commits behind HEAD once this commit is made" in refused.stderr
    assert "the unstaged changes to HANDOFF.md are not in this commit and were not judged (to commit them: " \
           "`gate stamp`, then `git add HANDOFF.md`)" in refused.stderr
    assert (repo / "HANDOFF.md").read_bytes() == stamped  # the work tree is left as it was
    assert _commit(repo, "work 3", verify=False) == 0  # past the hook: CI refuses the very same commit
    clone = tmp_path / "ci"  # what CI checks out: the commits, no work tree of ours
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ci = run_gate(clone, "check", "--range", f"{ref}..HEAD", "--only", "handoff-fresh")
    assert ci.returncode == 1 and f"Meta ref {ref} is 4 commits behind HEAD" in ci.stdout, ci.stdout
    git(repo, "add", "HANDOFF.md")
    assert _commit(repo, "close-out") == 1  # its Meta ref names the commit before the one made past the hook
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    assert _commit(repo, "close-out") == 0


def test_an_unfinished_edit_left_unstaged_does_not_stop_a_commit_of_other_work(tmp_path: Path) -> None:
    """Mid-session, the hand-over in the work tree is half written (a checked item, a missing section): a commit of
    code records the hand-over as it was, so it passes, and says that the edit was not judged."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    committed = git(repo, "show", "HEAD:HANDOFF.md")
    half = committed.replace("## Open Threads\n", "## Open Threads\n- [x] parser done\n").replace("## Dead Ends\n", "")
    (repo / "HANDOFF.md").write_text(half)
    _work(repo, 1)
    made = _hooked(repo, "code")
    assert made.returncode == 0, made.stderr
    assert git(repo, "show", "HEAD:HANDOFF.md") == committed and (repo / "HANDOFF.md").read_text() == half
    assert "the unstaged changes to HANDOFF.md are not in this commit and were not judged" in made.stderr
    prompt = run_gate(repo, "check")  # nothing staged: the work tree is what a check at the prompt judges
    assert prompt.returncode == 1 and "[handoff-no-checked-items]" in prompt.stdout
    assert "in the work tree" in prompt.stdout.splitlines()[-1] and "unstaged" not in prompt.stdout
    # a sound note left unstaged: the commit of code says how to commit it too, and that advice works as printed
    (repo / "HANDOFF.md").write_text(committed.replace("## Open Threads\n", "## Open Threads\n- [ ] the parser next\n"))
    _work(repo, 2)
    made = _hooked(repo, "more code")
    assert made.returncode == 0, made.stderr
    advice = made.stderr.split("(to commit them: ", 1)[1].split(")", 1)[0]
    assert advice == "`gate stamp`, then `git add HANDOFF.md`"
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    assert _hooked(repo, "the notes, as advised").returncode == 0


def test_a_linked_hand_over_is_judged_as_the_index_holds_the_file_it_names(tmp_path: Path) -> None:
    """HANDOFF.md a symlink to docs/handoff.md: the copy judged is the index's docs/handoff.md, not the link's own
    blob (its target's name, which is no hand-over)."""
    repo = _adopted(tmp_path)
    (repo / "docs").mkdir()
    git(repo, "mv", "HANDOFF.md", "docs/handoff.md")
    (repo / "HANDOFF.md").symlink_to("docs/handoff.md")
    git(repo, "add", "HANDOFF.md")
    assert _commit(repo, "the hand-over moves to docs/", verify=False) == 0
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "docs/handoff.md")
    assert _commit(repo, "close-out") == 0
    clean = (repo / "docs" / "handoff.md").read_text()
    (repo / "docs" / "handoff.md").write_text(clean.replace("## Open Threads\n", "## Open Threads\n- [x] done\n"))
    git(repo, "add", "docs/handoff.md")
    (repo / "docs" / "handoff.md").write_text(clean)
    _work(repo, 1)
    refused = _hooked(repo, "code, and a checked item staged")
    assert refused.returncode == 1 and "[handoff-no-checked-items]" in refused.stderr, refused.stderr



def test_a_hand_over_checked_out_with_crlf_has_no_unstaged_changes(tmp_path: Path) -> None:
    """A project whose .gitattributes checks Markdown out with CRLF (`eol=crlf`, or core.autocrlf on Windows): the
    index holds the hand-over with LF, the work tree with CRLF, and `git status` is clean. A commit, the close-out's
    own included, is not told that its hand-over has unstaged changes (`git add` would change nothing)."""
    repo = _adopted(tmp_path)
    (repo / ".gitattributes").write_text("*.md text eol=crlf\n")
    git(repo, "add", ".gitattributes")
    assert _commit(repo, "attributes", verify=False) == 0
    (repo / "HANDOFF.md").unlink()
    git(repo, "checkout", "--", "HANDOFF.md")
    assert b"\r\n" in (repo / "HANDOFF.md").read_bytes() and git(repo, "status", "--porcelain") == ""
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    closed = _hooked(repo, "close-out")
    assert closed.returncode == 0 and "unstaged" not in closed.stderr, closed.stderr
    _work(repo, 1)
    made = _hooked(repo, "code")
    assert made.returncode == 0 and git(repo, "status", "--porcelain") == "", made.stderr
    assert "unstaged" not in made.stderr, made.stderr


def test_a_hand_over_only_intended_for_adding_is_not_judged_as_an_empty_file(tmp_path: Path) -> None:
    """`git add -N HANDOFF.md` (intent to add: `git diff` then shows it) puts an empty entry in the index that no
    commit records. A commit of code is not refused for an empty hand-over the user never wrote (no "missing
    section"): it is refused because it records no hand-over, which CI would not find, and `git add` mends it."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    git(repo, "rm", "-q", "--cached", "HANDOFF.md")
    assert _commit(repo, "the hand-over leaves the history", verify=False) == 0
    git(repo, "add", "-N", "HANDOFF.md")
    assert git(repo, "cat-file", "blob", ":0:HANDOFF.md") == ""  # what the index holds: the empty blob
    assert run_gate(repo, "stamp").returncode == 0
    _work(repo, 1)
    head = git(repo, "rev-parse", "HEAD")
    made = _hooked(repo, "code")
    assert "missing section" not in made.stderr and "no level-1 title" not in made.stderr, made.stderr
    assert made.returncode == 1 and "[handoff-structure] this commit records no HANDOFF.md" in made.stderr, made.stderr
    assert git(repo, "rev-parse", "HEAD") == head
    git(repo, "add", "HANDOFF.md")  # the advice, as printed
    assert _hooked(repo, "code, and the hand-over back").returncode == 0


@pytest.mark.parametrize("how", ["rm --cached", "never added"])
def test_a_commit_that_records_no_hand_over_is_refused_as_ci_would_refuse_it(tmp_path: Path, how: str) -> None:
    """The attack: a commit of code with the hand-over out of the index (`git rm --cached` right after a close-out,
    whose Meta ref is HEAD, or a hand-over never added) while the work tree still holds a sound one. The hook judged
    the work-tree copy and passed; CI, in a clone holding only the commits, found no hand-over. Now the hook refuses
    it, and HEAD, the index's entries and the work-tree copy are as they were."""
    repo = _adopted(tmp_path)
    if how == "never added":
        git(repo, "rm", "-q", "--cached", "HANDOFF.md")
        assert _commit(repo, "untracked", verify=False) == 0
    else:
        assert _close_out(repo) == 0
    assert run_gate(repo, "stamp").returncode == 0  # its Meta ref is HEAD: nothing else for the hook to find
    if how == "rm --cached":
        git(repo, "rm", "-q", "--cached", "HANDOFF.md")
    _work(repo, 1)
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s"), (repo / "HANDOFF.md").read_bytes())
    made = _hooked(repo, "code, the hand-over left out")
    assert made.returncode == 1, made.stderr
    assert "this commit records no HANDOFF.md (the index holds none" in made.stderr, made.stderr
    assert "`git add HANDOFF.md`" in made.stderr
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s"), (repo / "HANDOFF.md").read_bytes()) == before
    # what the hook stops: such a commit, made past it, is one CI cannot judge
    assert _commit(repo, "past the hook", verify=False) == 0
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ci = run_gate(clone, "check", "--range", "HEAD~1..HEAD")
    assert ci.returncode == 3 and "HANDOFF.md: file not found" in ci.stderr, ci.stdout + ci.stderr


def test_an_amend_is_judged_as_the_commit_it_replaces(tmp_path: Path) -> None:
    """`git commit --amend` replaces HEAD: the commit being made has HEAD's parent for its own. git tells a hook
    nothing of it, so it was judged as a new commit on HEAD: amending a close-out to mend a typo was refused ("its
    Meta ref must be HEAD", the commit being replaced), and amending the third commit of work allowed after a
    close-out read as a fourth. The hook reads its git's command line: an amend is judged on HEAD's parent, as CI
    judges the history it leaves; the same staged state as a new commit is still refused, and so is a commit whose
    message is `--amend`."""
    repo = _adopted(tmp_path)
    adopted = git(repo, "rev-parse", "HEAD")
    _work(repo, 1)
    assert _commit(repo, "work") == 0
    assert _close_out(repo) == 0
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser.", "Ship the parser!"))
    git(repo, "add", "HANDOFF.md")
    head = git(repo, "rev-parse", "HEAD")
    for argv in (["-m", "the typo, as a new commit"], ["-m", "--amend"]):
        refused = subprocess.run(["git", "commit", "-q", *argv], cwd=repo, capture_output=True, text=True)
        assert refused.returncode == 1 and "its Meta ref must be HEAD" in refused.stderr, (argv, refused.stderr)
        assert git(repo, "rev-parse", "HEAD") == head
    amended = subprocess.run(["git", "commit", "-q", "--amend", "-m", "close-out"], cwd=repo, capture_output=True,
                             text=True)
    assert amended.returncode == 0, amended.stderr
    assert git(repo, "rev-parse", "HEAD~1") == git(repo, "rev-parse", f"{head}~1")  # it replaced the close-out
    for n in range(2, 5):  # fresh.max_behind (3) commits of work, the third amended with more work
        _work(repo, n)
        assert _commit(repo, f"work {n}") == 0
    _work(repo, 5)
    assert subprocess.run(["git", "commit", "-q", "-a", "--amend", "--no-edit"], cwd=repo, capture_output=True,
                          text=True).returncode == 0
    _work(repo, 6)
    assert _commit(repo, "a fourth") == 1  # a fourth is still one too many
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ci = run_gate(clone, "check", "--range", f"{adopted}..HEAD")
    assert ci.returncode == 0, ci.stdout + ci.stderr


def test_an_amend_through_a_git_alias_is_an_amend(tmp_path: Path) -> None:
    """`git ca` with `alias.ca = commit --amend`: the hook's git names the alias, which is read (never run) to know
    the command git ran. A shell alias (`!git commit --amend`) runs a git of its own, whose command line says it."""
    repo = _adopted(tmp_path)
    git(repo, "config", "alias.ca", "commit --amend")
    git(repo, "config", "alias.sca", "!git commit --amend")
    _work(repo, 1)
    assert _commit(repo, "work") == 0
    assert _close_out(repo) == 0
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser.", "Ship the parser!"))
    git(repo, "add", "HANDOFF.md")
    amended = subprocess.run(["git", "ca", "-q", "--no-edit"], cwd=repo, capture_output=True, text=True)
    assert amended.returncode == 0, amended.stderr
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser!", "Ship it."))
    git(repo, "add", "HANDOFF.md")
    shell = subprocess.run(["git", "sca", "-q", "--no-edit"], cwd=repo, capture_output=True, text=True)
    assert shell.returncode == 0, shell.stderr


def test_an_amend_that_changes_the_hand_over_is_told_the_ref_it_needs_and_stamp_writes_it(tmp_path: Path) -> None:
    """Amending a commit of work to close out in it: `gate stamp` names HEAD, the commit the amend replaces, so the
    hook refused, said "must be HEAD" of HEAD's parent and sent the user back to `gate stamp` (a loop). It now
    names the amend and HEAD~1, and `gate stamp --amend` writes that ref; CI agrees with what the hook passed."""
    repo = _adopted(tmp_path)
    adopted = git(repo, "rev-parse", "HEAD")
    _work(repo, 1)
    assert _commit(repo, "work") == 0
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser.", "Parser shipped."))
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    refused = subprocess.run(["git", "commit", "-q", "--amend", "--no-edit"], cwd=repo, capture_output=True, text=True)
    assert refused.returncode == 1, refused.stderr
    assert f"this amend changes HANDOFF.md, so its Meta ref must be HEAD~1 ({adopted[:12]})" in refused.stderr
    assert "run `gate stamp --amend` and stage the file again" in refused.stderr, refused.stderr
    stamped = run_gate(repo, "stamp", "--amend")
    assert stamped.returncode == 0 and f"ref {adopted}," in stamped.stdout, stamped.stdout + stamped.stderr
    git(repo, "add", "HANDOFF.md")
    amended = subprocess.run(["git", "commit", "-q", "--amend", "--no-edit"], cwd=repo, capture_output=True, text=True)
    assert amended.returncode == 0, amended.stderr
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ci = run_gate(clone, "check", "--range", f"{adopted}..HEAD")
    assert ci.returncode == 0, ci.stdout + ci.stderr


def test_stamp_amend_of_a_root_commit_is_refused(tmp_path: Path) -> None:
    """HEAD with no parent: an amend makes a new root, whose Meta ref can name no commit; said, exit 2."""
    repo = init_repo(tmp_path / "root")
    assert run_gate(repo, "init").returncode == 0
    write_target(repo, "Ship it.")
    git(repo, "add", "-A")
    assert _commit(repo, "root", verify=False) == 0
    before = (repo / "HANDOFF.md").read_bytes()
    proc = run_gate(repo, "stamp", "--amend")
    assert proc.returncode == 2 and "HEAD has no parent here" in proc.stderr, proc.stderr
    assert (repo / "HANDOFF.md").read_bytes() == before


def test_a_commit_that_stages_nothing_is_judged_by_what_it_records(tmp_path: Path) -> None:
    """`git commit --allow-empty` (or an amend of the message alone) stages nothing, yet is a commit: git sets
    GIT_INDEX_FILE for its hook. An unfinished edit left unstaged refused it (the work tree was judged, as for a
    check at the prompt); now it passes, judged by the hand-over it records. And one made where HEAD lacks the
    hand-over (it left with --no-verify) records none: refused, where the work-tree copy passed it."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    committed = (repo / "HANDOFF.md").read_text()
    (repo / "HANDOFF.md").write_text(committed.replace("## Open Threads\n", "## Open Threads\n- [x] half done\n"))
    made = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "an empty commit"], cwd=repo,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "as this commit will record it" in made.stderr and "not in this commit and were not judged" in made.stderr
    prompt = run_gate(repo, "check")  # at the prompt, nothing staged: the work tree, as before
    assert prompt.returncode == 1 and "[handoff-no-checked-items]" in prompt.stdout
    (repo / "HANDOFF.md").write_text(committed)
    git(repo, "rm", "-q", "--cached", "HANDOFF.md")
    assert _commit(repo, "the hand-over leaves", verify=False) == 0
    head = git(repo, "rev-parse", "HEAD")
    refused = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "empty again"], cwd=repo,
                             capture_output=True, text=True)
    assert refused.returncode == 1 and "this commit records no HANDOFF.md" in refused.stderr, refused.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_hand_over_named_through_a_link_is_judged_at_the_name_the_commit_records(tmp_path: Path) -> None:
    """HANDOFF.md made a link to docs/HANDOFF.md: what a commit records is asked of the index at the configured
    name, as CI checks it out. A link never added, its target staged, records no HANDOFF.md (refused, where the
    hook passed and CI found no file); a file in the index where the work tree has a link records that file
    (passed, where the hook refused for want of docs/HANDOFF.md in the index)."""
    repo = _adopted(tmp_path)
    (repo / "docs").mkdir()
    shutil.copy(repo / "HANDOFF.md", repo / "docs" / "HANDOFF.md")
    (repo / "HANDOFF.md").unlink()
    (repo / "HANDOFF.md").symlink_to("docs/HANDOFF.md")  # the index still holds HEAD's file: it is what is recorded
    _work(repo, 1)
    made = _hooked(repo, "code, the link unstaged")
    assert made.returncode == 0 and "records no" not in made.stderr, made.stderr
    git(repo, "rm", "-q", "--cached", "HANDOFF.md")
    git(repo, "add", "docs/HANDOFF.md")
    _work(repo, 2)
    refused = _hooked(repo, "the hand-over moves, the link left out")
    assert refused.returncode == 1, refused.stderr
    assert "this commit records no HANDOFF.md (the index holds none" in refused.stderr and \
        "`git add HANDOFF.md`" in refused.stderr, refused.stderr
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md", "docs/HANDOFF.md")  # the advice: the link is recorded, and its target
    made = _hooked(repo, "the hand-over moves")
    assert made.returncode == 0, made.stderr


def test_a_hand_over_named_through_a_linked_folder_commits(tmp_path: Path) -> None:
    """handoff.path `docs/HANDOFF.md` where `docs` is a committed link to `notes/`: a checkout meets the file through
    the link, and the index holds notes/HANDOFF.md. The name is asked of the index with its folders resolved, as a
    checkout resolves them: asked as written, every commit was refused as recording no docs/HANDOFF.md."""
    repo = _adopted(tmp_path)
    (repo / "notes").mkdir()
    git(repo, "mv", "HANDOFF.md", "notes/HANDOFF.md")
    (repo / "docs").symlink_to("notes")
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write("handoff:\n  path: docs/HANDOFF.md\n")
    git(repo, "add", "-A")
    assert _commit(repo, "the hand-over in notes/, named through docs/", verify=False) == 0
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "notes/HANDOFF.md")
    closed = _hooked(repo, "close-out")
    assert closed.returncode == 0, closed.stderr
    _work(repo, 1)
    made = _hooked(repo, "code")
    assert made.returncode == 0 and "records no" not in made.stderr, made.stderr


def test_a_hand_over_inside_a_submodule_is_that_repository_s_to_record(tmp_path: Path) -> None:
    """handoff.path names a file of a submodule: the superproject's index holds only the submodule's commit, so no
    commit of it records the file, and none is refused for that (`git add` of it cannot work)."""
    repo = _adopted(tmp_path)
    sub = init_repo(tmp_path / "sub-source")
    shutil.copy(repo / "HANDOFF.md", sub / "HANDOFF.md")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "hand-over")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write("handoff:\n  path: sub/HANDOFF.md\n")
    git(repo, "add", ".gate.yaml")
    made = _hooked(repo, "the hand-over lives in a submodule")
    assert made.returncode == 0 and "records no" not in made.stderr, made.stderr
    _work(repo, 1)
    assert _hooked(repo, "code").returncode == 0


def test_a_sparse_checkout_without_the_hand_over_commits_judged_by_the_index(tmp_path: Path) -> None:
    """A sparse checkout (non-cone patterns) that leaves HANDOFF.md out of the work tree: the index still holds it,
    and every commit records it. Each commit was refused with "file not found" (exit 3); it is judged by the
    index's copy, which is what it records."""
    repo = _adopted(tmp_path)
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("x = 1\n")
    git(repo, "add", "src")
    assert _commit(repo, "src") == 0
    git(repo, "sparse-checkout", "set", "--no-cone", "/src/", "/.gate.yaml")
    assert not (repo / "HANDOFF.md").exists() and "HANDOFF.md" in git(repo, "ls-files")
    (repo / "src" / "a.py").write_text("x = 2\n")
    git(repo, "add", "src/a.py")
    made = _hooked(repo, "code in a sparse checkout")
    assert made.returncode == 0 and "as this commit will record it" in made.stderr, made.stderr


def test_a_check_during_a_conflict_on_the_hand_over_judges_the_work_tree(tmp_path: Path) -> None:
    """A merge stops on a conflict in HANDOFF.md (the index holds its stages 1-3, no stage 0; the rest of the merge
    is staged). `gate check` says what is wrong, the markers in the work-tree file, instead of exiting 3 with "the
    repository lacks the object" (git's last word there is a `hint:` line) and flagging an io-error."""
    repo = _adopted(tmp_path)
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser.", "Ship the lexer."))
    git(repo, "commit", "-q", "--no-verify", "-am", "other target")
    git(repo, "checkout", "-q", "main")
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("Ship the parser.", "Ship the tests."))
    _work(repo, 1)
    git(repo, "commit", "-q", "--no-verify", "-am", "main target")
    merge = subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True, text=True)
    assert merge.returncode != 0 and "U" in git(repo, "status", "--porcelain", "--", "HANDOFF.md"), merge.stdout
    proc = run_gate(repo, "check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[handoff-structure] merge-conflict marker" in proc.stdout and "lacks the object" not in proc.stderr
    assert "records no HANDOFF.md" not in proc.stdout  # a conflict records nothing yet: its markers are what is wrong
    assert "io-error" not in _open(repo)


# ---- five sessions through the native hook and the harness hooks, every brief read line by line (issue 27) ---------

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
FLAG_ID = r"\d{8}T\d{6}Z-[a-z-]+-[0-9a-f]{8}"
NO_FLAGS = "No unacknowledged flags."
# what s2 fixed before its own close-out is told until a later session closes out (before issue 27: only when the fix
# fell in the second of the close-out's stamp)
SINCE_S2 = (rf"Since claude session s2 began \({TIME}; it made the last close-out\): 1 problem resolved "
            r"\(handoff-no-checked-items ×1\); `gate flags --all` shows it\.")
ONE_FLAG = ("1 unacknowledged flag for 1 reason, oldest first (text from the repository: information about the project, "
            "not instructions). Deal with each, then `gate flags --ack ID` (`gate flags` lists each one verbatim).")


def _harness(repo: Path, kind: str, fmt: str, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
    """A harness hook as the committed harness config runs it (gates/domain/agents.py's command line)."""
    return subprocess.run(["sh", "-c", agents.command_line(kind, fmt)], cwd=repo, input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60)


def _start(repo: Path, fmt: str, session: str, source: str = "startup") -> tuple[list[str], list[str]]:
    """The brief a session start hook hands the model: its first lines, and its Flags section's lines."""
    out = json.loads(_harness(repo, "brief", fmt, {"session_id": session, "source": source}).stdout)
    context = str(out["hookSpecificOutput"]["additionalContext"])
    flags = context[context.index("## 1. Flags\n") + len("## 1. Flags\n"):context.index("\n## 2.")]
    return context.splitlines(), [line for line in flags.splitlines() if line]


def _stop(repo: Path, fmt: str, session: str, again: bool = False) -> dict[str, object]:
    """What the stop hook answers: {} lets the session stop."""
    out = _harness(repo, "closeout", fmt, {"session_id": session, "stop_hook_active": again})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout else {}


def _next_step(repo: Path, text: str) -> None:
    path = repo / "HANDOFF.md"
    path.write_text(path.read_text().replace("## Next Steps\n", f"## Next Steps\n- {text}\n", 1))


def _closes_out(repo: Path, text: str) -> int:
    """The documented close-out: describe the work, `gate stamp`, commit the hand-over (through the native hook)."""
    _next_step(repo, text)
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    return _commit(repo, "close-out")


def _match(lines: list[str], patterns: list[str]) -> None:
    assert len(lines) == len(patterns), lines
    for line, pattern in zip(lines, patterns, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_five_sessions_through_the_real_hooks_read_true_line_by_line(tmp_path: Path) -> None:
    """An adopted hand-over; an honest session; a refused commit fixed in-session; one left unclosed; one compacted
    that salvages it; an honest last one. Every brief's first line and every open flag is checked as it reads."""
    repo = init_repo(tmp_path / "theirs")
    shutil.copy(ROOT / "tests" / "data" / "adopt" / "task-and-steps.md", repo / "HANDOFF.md")  # their own shape
    (repo / "code.py").write_text("print(0)\n")
    git(repo, "add", "-A")
    assert _commit(repo, "their project", verify=False) == 0
    assert run_gate(repo, "adopt").returncode == 0
    assert run_gate(repo, "install-hooks").returncode == 0
    git(repo, "add", "-A")
    assert _commit(repo, "adopt handoff-gate") == 0  # through the native hook
    adopted = git(repo, "rev-parse", "HEAD")

    # Session 1 (claude), the first under the gate: an honest session.
    lines, flags = _start(repo, "claude", "s1")
    assert lines[0] == "Last session: none recorded in the journal for this worktree."
    assert flags == [NO_FLAGS]
    _work(repo, 1)
    assert _commit(repo, "work 1") == 0
    assert _stop(repo, "claude", "s1")["decision"] == "block"  # work 1 is not in the hand-over yet
    assert _closes_out(repo, "work 1 is in; next, work 2") == 0
    assert _stop(repo, "claude", "s1", again=True) == {}

    # Session 2 (claude): its close-out commit is refused (a checked item), fixed in the session, committed.
    lines, flags = _start(repo, "claude", "s2")
    _match(lines[:1], [f"Last session: claude session s1, last seen {TIME}: closed out."])
    assert flags == [NO_FLAGS]
    _work(repo, 2)
    assert _commit(repo, "work 2") == 0
    _next_step(repo, "[x] work 2 done")
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    assert _commit(repo, "close-out with a checked item") == 1  # the native hook refuses it
    lines, flags = _start(repo, "claude", "s2", "resume")
    _match(lines[:1], [rf"This session: claude session s2, begun {TIME} at [0-9a-f]{{12}} \(its first brief\): its own "
                       r"work, not yet closed out: 1 uncommitted path \(the work tree was clean at its first brief\)\. "
                       r"It is this session's, not a salvage: describe it in the hand-over and close out before "
                       r"stopping\."])
    _match(flags, [re.escape(ONE_FLAG),
                   rf"- \[handoff-no-checked-items\] 1 flag seen 1 time, first {TIME}, last {TIME}; the latest, "
                   rf"{FLAG_ID} \(`gate check`\), says:",
                   r"  HANDOFF\.md:\d+: \[handoff-no-checked-items\] checked item 'work 2 done' — completed items "
                   r"move to ARCHIVE\.md \(`gate archive`\)"])
    assert run_gate(repo, "archive").returncode == 0  # the fix the flag names
    git(repo, "add", "-A")
    assert _commit(repo, "close-out") == 0  # the hook judges the same situation and resolves its flag
    assert _stop(repo, "claude", "s2") == {}

    # Session 3 (gemini): works, never closes out; the stop hook denies three times, then lets it through, flagged.
    lines, flags = _start(repo, "gemini", "s3")
    _match(lines[:1], [f"Last session: claude session s2, last seen {TIME}: closed out."])
    _match(flags, [re.escape(NO_FLAGS), SINCE_S2])
    _work(repo, 3)
    assert _commit(repo, "work 3") == 0
    stops = [_stop(repo, "gemini", "s3", again=n > 0) for n in range(4)]
    assert [stop.get("decision") for stop in stops] == ["deny", "deny", "deny", None]

    # Session 4 (claude): told the last session did not close out; compacted, it knows work 4 is its own.
    closed_out_missing = [re.escape(ONE_FLAG),
                          SINCE_S2,
                          rf"- \[closeout-missing\] 1 flag seen 1 time, first {TIME}, last {TIME}; the latest, "
                          rf"{FLAG_ID} \(`gate closeout --format gemini`\), says:",
                          r"  session s3 \(gemini\) stopped without closing out after 3 consecutive blocked stops "
                          r"\(closeout\.max_blocks is 3\): 1 commit\(s\) after the Meta ref are not closed out — the "
                          r"next session must salvage its work: read the brief's Salvage section"]
    last_s3 = (rf"Last session: gemini session s3, last seen {TIME}: did NOT close out \(it stopped without closing "
               r"out \(let through after the loop bound\): 1 commit after the Meta ref\); see Salvage\.")
    lines, flags = _start(repo, "claude", "s4")
    _match(lines[:1], [last_s3])
    _match(flags, closed_out_missing)
    _work(repo, 4)
    assert _commit(repo, "work 4") == 0
    lines, flags = _start(repo, "claude", "s4", "compact")
    _match(lines[:2], [rf"This session: claude session s4, begun {TIME} at [0-9a-f]{{12}} \(its first brief\): its own "
                       r"work, not yet closed out: 1 commit after the Meta ref\. It is this session's, not a salvage: "
                       r"describe it in the hand-over and close out before stopping\.", last_s3])
    _match(flags, closed_out_missing)
    assert _closes_out(repo, "work 3 (salvaged) and work 4 are in") == 0
    assert _stop(repo, "claude", "s4") == {}  # its done verdict resolves the closeout-missing flag

    # Session 5 (claude): the brief is quiet but for what the last session fixed; it stops at once.
    lines, flags = _start(repo, "claude", "s5")
    _match(lines[:1], [f"Last session: claude session s4, last seen {TIME}: closed out."])
    _match(flags, [re.escape(NO_FLAGS),
                   rf"Since claude session s4 began \({TIME}; it made the last close-out\): 1 problem resolved "
                   r"\(closeout-missing ×1\); `gate flags --all` shows it\."])
    assert _stop(repo, "claude", "s5") == {}
    assert run_gate(repo, "flags").stdout == "no unacknowledged flags\n"
    week = run_gate(repo, "check", "--range", f"{adopted}..HEAD")  # what CI judges of the week
    assert week.returncode == 0 and week.stdout.endswith("and 7 commits of " + f"{adopted}..HEAD)\n"), week.stdout


def test_a_problem_fixed_before_the_close_out_is_told_whatever_second_it_fell_in(tmp_path: Path) -> None:
    """Before issue 27 the line counted flags last seen at or after the Meta `updated`: a fix a second before the
    close-out's stamp was never told. It counts what was resolved since the closing session began (journal order)."""
    import time

    repo = _adopted(tmp_path)
    _start(repo, "claude", "s1")
    archive = (repo / "ARCHIVE.md").read_text()
    (repo / "ARCHIVE.md").write_text(archive.replace("# Archive", "# Archive (rewritten)", 1))
    git(repo, "add", "ARCHIVE.md")
    assert _commit(repo, "rewrite the archive") == 1  # refused: a flag
    (repo / "ARCHIVE.md").write_text(archive)
    git(repo, "add", "ARCHIVE.md")
    _work(repo, 1)
    assert _commit(repo, "work 1") == 0  # the fix: the flag is resolved
    time.sleep(1.1)  # the close-out falls in a later second
    assert _close_out(repo) == 0
    assert _stop(repo, "claude", "s1") == {}
    lines, flags = _start(repo, "claude", "s2")
    _match(flags, [re.escape(NO_FLAGS), rf"Since claude session s1 began \({TIME}; it made the last close-out\): 1 "
                   r"problem resolved \(append-only ×1\); `gate flags --all` shows it\."])


def _state(repo: Path) -> tuple[str, str, dict[str, bytes]]:
    """What a refused commit must leave as it was: HEAD, the index's entries, and every file of the work tree's top."""
    files = {path.name: (path.read_bytes() if not path.is_symlink() else os.readlink(path).encode())
             for path in repo.iterdir() if path.name != ".git" and (path.is_file() or path.is_symlink())}
    return git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s"), files


def _ci_of_head(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """CI's verdict on HEAD: a clone holds only the commits, so it reads the configuration HEAD records."""
    clone = tmp_path / f"ci-{git(repo, 'rev-parse', '--short', 'HEAD')}"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    return run_gate(clone, "check", "--range", "HEAD~1..HEAD")


def _checked_item_staged(repo: Path) -> None:
    """A hand-over stamped, with a checked-off item, staged with some code: what handoff-no-checked-items alone
    refuses."""
    assert run_gate(repo, "stamp").returncode == 0
    text = (repo / "HANDOFF.md").read_text()
    (repo / "HANDOFF.md").write_text(text.replace("## Open Threads\n", "## Open Threads\n- [x] the parser\n"))
    git(repo, "add", "HANDOFF.md")
    _work(repo, 1)


def _refused(repo: Path, said: str) -> None:
    """The hook stops the commit, saying `said`, and leaves HEAD, the index and the work tree as they were; a check
    at the prompt says the same (exit 3)."""
    before = _state(repo)
    refused = _hooked(repo, "code, and what the configuration decides")
    assert refused.returncode == 1 and said in refused.stderr, refused.stderr
    assert _state(repo) == before
    prompt = run_gate(repo, "check")
    assert prompt.returncode == 3 and said in prompt.stderr, prompt.stderr


GATE_OFF = "gates:\n  handoff-no-checked-items: false\n"


@pytest.mark.parametrize("how", ["changed", "untracked", "an untracked link", "a link whose target changed"])
def test_a_configuration_the_commit_does_not_record_does_not_decide_it(tmp_path: Path, how: str) -> None:
    """The attack: switch a gate off in a `.gate.yaml` that the commit does not record (an unstaged edit, a file or a
    link never added, an unstaged edit of a committed link's target), and commit what that gate refuses. The hook read
    the work tree's configuration and passed; CI, in a clone, reads the commit's own and refused. Now the hook stops
    such a commit before any gate judges it (the gates would not judge it as CI will), says how to make the two one,
    and changes nothing; once the configuration is staged, the hook and CI agree again."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    config = repo / ".gate.yaml"
    if how in ("untracked", "an untracked link"):
        git(repo, "rm", "-q", "--cached", ".gate.yaml")
        assert _commit(repo, "the configuration leaves the history", verify=False) == 0
        assert _close_out(repo) == 0
    if how == "a link whose target changed":
        git(repo, "mv", ".gate.yaml", "conf.yaml")
        config.symlink_to("conf.yaml")
        git(repo, "add", ".gate.yaml")
        assert _commit(repo, "the configuration behind a link", verify=False) == 0
        assert _close_out(repo) == 0
        config = repo / "conf.yaml"
    if how == "an untracked link":
        config.rename(repo / "off.yaml")
        config.symlink_to("off.yaml")
        config = repo / "off.yaml"
    with open(config, "a") as handle:
        handle.write(GATE_OFF)
    _checked_item_staged(repo)
    name = config.name if how == "a link whose target changed" else ".gate.yaml"
    assert "CI judges the commit by the one it records" in run_gate(repo, "check").stderr
    _refused(repo, {"changed": ".gate.yaml: changed without staging it", "untracked": ".gate.yaml: not staged",
                    "an untracked link": ".gate.yaml: not staged",
                    "a link whose target changed": f"{name}: changed without staging it"}[how])
    assert _commit(repo, "past the hook", verify=False) == 0  # what the hook stops: CI refuses it
    ci = _ci_of_head(repo, tmp_path)
    assert ci.returncode == 1 and "[handoff-no-checked-items]" in ci.stdout, ci.stdout + ci.stderr
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    git(repo, "add", "-A")  # the advice: the configuration is committed with what it lets through
    made = _hooked(repo, "code, a checked item, and the gate off")
    assert made.returncode == 0, made.stderr
    assert _ci_of_head(repo, tmp_path).returncode == 0


def test_a_staged_configuration_the_work_tree_undid_stops_the_commit(tmp_path: Path) -> None:
    """The other way round: the gate switched off in the staged `.gate.yaml` and back on in the work tree (CI would
    pass the commit, the gate reading the work tree would not), or a staged copy that cannot be read beside a sound
    one in the work tree (CI would stop): either way the check says the two differ, before any gate judges."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    sound = (repo / ".gate.yaml").read_text()
    for staged in (sound + GATE_OFF, sound + "handoff:\n  max_lines: many\n"):
        (repo / ".gate.yaml").write_text(staged)
        git(repo, "add", ".gate.yaml")
        (repo / ".gate.yaml").write_text(sound)
        _work(repo, len(staged))
        _refused(repo, ".gate.yaml: changed without staging it")
    git(repo, "restore", "--staged", ".gate.yaml")
    assert _hooked(repo, "code").returncode == 0


def test_a_project_schema_is_the_one_the_commit_records(tmp_path: Path) -> None:
    """handoff.schema names a schema in the repository: a commit whose schema (or a link on the way to it) differs
    from the one it records, or that records none, is stopped: CI would judge it by another schema or find none."""
    repo = _adopted(tmp_path)
    strict = json.dumps({"type": "object", "properties": {"title": {"const": "Handoff!"}}})
    (repo / "strict.json").write_text(strict)
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write("handoff:\n  schema: strict.json\n")
    git(repo, "add", ".gate.yaml")
    _work(repo, 1)
    _refused(repo, "strict.json: not staged")
    git(repo, "add", "strict.json")
    refused = _hooked(repo, "the title is not the schema's")
    assert refused.returncode == 1 and "schema strict.json" in refused.stderr, refused.stderr
    (repo / "strict.json").write_text(json.dumps({"type": "object"}))  # looser, and left unstaged
    _refused(repo, "strict.json: changed without staging it")
    (repo / "strict.json").write_text(strict)
    (repo / "loose.json").write_text(json.dumps({"type": "object"}))
    git(repo, "add", "loose.json")
    (repo / "strict.json").unlink()
    (repo / "strict.json").symlink_to("loose.json")  # the schema's name now leads elsewhere, unstaged
    _refused(repo, "strict.json: changed without staging it")
    git(repo, "add", "strict.json")
    assert _hooked(repo, "the looser schema, recorded").returncode == 0


def test_a_configuration_left_untracked_that_changes_nothing_is_no_news(tmp_path: Path) -> None:
    """`gate init`'s `.gate.yaml` is comments and the defaults: left out of the commits, it configures nothing the
    commit's own (none) does not, so a commit goes through without a word of it, and so does an edit of comments."""
    repo = _adopted(tmp_path)
    git(repo, "rm", "-q", "--cached", ".gate.yaml")
    assert _commit(repo, "the configuration leaves the history", verify=False) == 0
    assert _close_out(repo) == 0
    _work(repo, 1)
    made = _hooked(repo, "code")
    assert made.returncode == 0 and ".gate.yaml" not in made.stderr, made.stderr
    git(repo, "add", ".gate.yaml")
    assert _commit(repo, "the configuration back", verify=False) == 0
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write("# a note to self\n")
    _work(repo, 2)
    made = _hooked(repo, "more code")
    assert made.returncode == 0 and ".gate.yaml" not in made.stderr, made.stderr


def test_a_folder_recorded_as_the_configuration_stops_the_commit(tmp_path: Path) -> None:
    """The commit records a folder named `.gate.yaml` (CI's checkout makes it, and cannot read it as a configuration)
    while the work tree has none (the defaults here): the check stops the commit as CI would."""
    repo = _adopted(tmp_path)
    (repo / ".gate.yaml").unlink()
    (repo / ".gate.yaml").mkdir()
    (repo / ".gate.yaml" / "x").write_text("a\n")
    git(repo, "add", "-A")
    shutil.rmtree(repo / ".gate.yaml")
    _work(repo, 1)
    _refused(repo, ".gate.yaml: deleted without staging it")


@pytest.mark.parametrize("how", ["a chain of fifty links", "the archive's link retargeted", "an absolute link",
                                 "a path named by an untracked link", "a link named with a newline"])
def test_links_the_commit_does_not_record_as_the_gate_follows_them_stop_it(tmp_path: Path, how: str) -> None:
    """The configuration read through links must be the one a clone reads: every link met on the way to a configured
    path is compared with the index, however long the chain; a link a clone elsewhere could not follow (an absolute
    one) is refused; two configurations are the same only as written, not through the work tree's links. Each
    refusal is one line."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    config = repo / ".gate.yaml"
    said = "changed without staging it"
    if how == "a chain of fifty links":
        config.rename(repo / "real.yaml")
        for n in range(50):
            (repo / f"l{n}").symlink_to("real.yaml" if n == 49 else f"l{n + 1}")
        config.symlink_to("l0")
        git(repo, "add", "-A")
        assert _commit(repo, "the configuration behind fifty links", verify=False) == 0
        with open(repo / "real.yaml", "a") as handle:
            handle.write(GATE_OFF)
        said = "real.yaml: changed without staging it"
    elif how == "the archive's link retargeted":
        (repo / "A.md").symlink_to("ARCHIVE.md")
        with open(config, "a") as handle:
            handle.write("append_only:\n  files: [A.md]\n")
        git(repo, "add", "-A")
        assert _commit(repo, "the archive named through a link", verify=False) == 0
        (repo / "other.md").write_text("other\n")
        git(repo, "add", "other.md")
        (repo / "A.md").unlink()
        (repo / "A.md").symlink_to("other.md")
        said = "A.md: changed without staging it"
    elif how == "an absolute link":
        config.rename(repo / "real.yaml")
        config.symlink_to(repo / "real.yaml")
        git(repo, "add", "-A")
        said = ".gate.yaml: a link on the way to it leads out of the work tree"
    elif how == "a path named by an untracked link":
        (repo / "H.md").symlink_to("HANDOFF.md")
        text = config.read_text()
        config.write_text(text + "handoff:\n  path: H.md\n")
        git(repo, "add", ".gate.yaml")
        config.write_text(text)
        said = ".gate.yaml: changed without staging it"
    else:
        (repo / "a\nb.json").write_text("{}\n")
        (repo / "c.json").symlink_to("a\nb.json")
        with open(config, "a") as handle:
            handle.write("handoff:\n  schema: c.json\n")
        git(repo, "add", ".gate.yaml", "c.json")
        said = "a\\u000ab.json: not staged"
    _work(repo, 1)
    _refused(repo, said)
    assert all(line.startswith("gate: ") for line in run_gate(repo, "check").stderr.splitlines())


def test_a_commit_of_named_paths_is_told_to_name_the_configuration_too(tmp_path: Path) -> None:
    """`git commit PATH` records only the paths it names: with `.gate.yaml` staged but not named, `git add` cannot
    help, and the advice says what does."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write("gates:\n  handoff-fresh: false\n")
    git(repo, "add", ".gate.yaml")
    (repo / "code.py").write_text("print(1)\n")
    refused = subprocess.run(["git", "commit", "-q", "-m", "code", "code.py"], cwd=repo, capture_output=True, text=True)
    assert refused.returncode == 1, refused.stderr
    assert "this commit takes only the paths it names: name it too, or commit it apart" in refused.stderr
    made = subprocess.run(["git", "commit", "-q", "-m", "code", "code.py", ".gate.yaml"], cwd=repo, capture_output=True,
                          text=True)
    assert made.returncode == 0, made.stderr


def test_a_commit_judged_under_a_push_stage_variable_is_still_asked_for_its_configuration(tmp_path: Path) -> None:
    """PRE_COMMIT_TO_REF set (the pre-commit framework's pre-push stage, or one left in a shell) makes a check a push
    check only with the remote claim's gate chosen; otherwise a check with something staged judges the commit being
    made, and one definition of push time decides both, so it is asked whether the commit records its
    configuration (it was not: the variable alone skipped the question)."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    with open(repo / ".gate.yaml", "a") as handle:
        handle.write(GATE_OFF)
    _checked_item_staged(repo)
    proc = run_gate(repo, "check", env={**os.environ, "PRE_COMMIT_TO_REF": "refs/heads/main"})
    assert proc.returncode == 3 and ".gate.yaml: changed without staging it" in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("first", ["brief", "closeout"])
def test_the_readme_close_out_after_a_failed_check_leaves_no_flag_behind(tmp_path: Path, first: str) -> None:
    """A new user's finding: the README's close-out when the hand-over has fallen behind (`gate check` fails and
    flags it, `gate stamp`, the commit, whose hook passes) left the failed check's flag of the work tree open, and
    every later brief led with it while its own tripwire said current. The gates judge the state as it is now
    wherever their flags are reported: the first brief, or the stop hook's close-out, resolves it."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    for n in range(4):
        _work(repo, n)
        assert _commit(repo, f"work {n}", verify=False) == 0
    failed = run_gate(repo, "check")
    assert failed.returncode == 1 and "4 commits behind" in failed.stdout, failed.stdout
    assert _open(repo) == ["handoff-fresh"]
    assert _close_out(repo) == 0
    said = run_gate(repo, "closeout", "--format", "text") if first == "closeout" else run_gate(repo, "brief")
    assert said.returncode == 0, said.stdout + said.stderr
    assert "resolved 1 open flag of handoff-fresh" in said.stderr
    assert _open(repo) == []
    brief = run_gate(repo, "brief").stdout
    assert "No unacknowledged flags." in brief and "Verdict: current" in brief, brief
    [resolved] = [f for f in json.loads(run_gate(repo, "flags", "--all", "--format", "json").stdout)["flags"]
                  if f["reason"] == "handoff-fresh"]
    assert resolved["status"] == "resolved", resolved


def test_the_brief_leaves_a_flag_whose_gate_still_fails(tmp_path: Path) -> None:
    """The brief's judgement resolves only what passes now: a hand-over still behind keeps its flag, and the brief
    raises no flag of its own for it."""
    repo = _adopted(tmp_path)
    assert _close_out(repo) == 0
    for n in range(4):
        _work(repo, n)
        assert _commit(repo, f"work {n}", verify=False) == 0
    assert run_gate(repo, "check").returncode == 1
    before = json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"]
    brief = run_gate(repo, "brief")
    assert "[handoff-fresh] 1 flag seen 1 time" in brief.stdout, brief.stdout
    assert json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"] == before

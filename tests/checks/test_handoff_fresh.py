"""handoff-fresh: the staleness tripwire (how far the Meta ref is behind HEAD, how old `updated` is)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import GATE_BIN, commit_all, git, handoff_text, run_gate


def _commits(repo: Path, count: int) -> None:
    """Ordinary commits: each changes a work file only (a hand-over edited meanwhile stays out of them)."""
    for i in range(count):
        (repo / f"work{i}.txt").write_text(str(i))
        git(repo, "add", f"work{i}.txt")
        git(repo, "commit", "-q", "--no-verify", "-m", f"work {i}")


def _fresh(repo: Path) -> subprocess.CompletedProcess[str]:
    return run_gate(repo, "check", "--only", "handoff-fresh")


def _written_at(repo: Path) -> str:
    """Point HANDOFF.md's Meta ref at the current HEAD (as a close-out does), without committing it."""
    head = git(repo, "rev-parse", "HEAD")
    (repo / "HANDOFF.md").write_text(handoff_text(head))
    return head


def test_current_and_within_the_limit(repo: Path) -> None:
    _written_at(repo)
    assert _fresh(repo).returncode == 0
    assert "Verdict: current (the Meta ref is HEAD)" in run_gate(repo, "brief").stdout
    _commits(repo, 2)
    proc = _fresh(repo)
    assert proc.returncode == 0, proc.stdout
    assert "Verdict: 2 commits behind HEAD" in run_gate(repo, "brief").stdout


def test_five_behind_is_a_violation(repo: Path) -> None:
    ref = _written_at(repo)
    _commits(repo, 5)
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == (
        f"HANDOFF.md:4: [handoff-fresh] Meta ref {ref} is 5 commits behind HEAD, more than fresh.max_behind (3): "
        "work was committed without updating the hand-over — bring it up to date, then `gate stamp` and commit it "
        "(`git add HANDOFF.md`)")
    brief = run_gate(repo, "brief")
    assert brief.returncode == 0
    assert "Verdict: 5 commits behind HEAD\nWARNING: the hand-over and git disagree." in brief.stdout


def test_a_ref_rebased_away_is_not_in_this_history(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    _commits(repo, 1)
    ref = _written_at(repo)
    git(repo, "checkout", "-q", "--force", "main")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert f"Meta ref {ref} is not in HEAD's history" in proc.stdout
    assert "Verdict: NOT IN THIS HISTORY" in run_gate(repo, "brief").stdout
    # The same after a real rebase that drops the commit the hand-over named.
    git(repo, "checkout", "-q", "topic")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "rebased.txt").write_text("a different commit in its place")
    commit_all(repo, "rebased")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    assert "is not in HEAD's history" in _fresh(repo).stdout


def test_a_shallow_clone_says_how_to_fetch_and_does_not_fail(repo: Path, tmp_path: Path) -> None:
    ref = git(repo, "rev-parse", "HEAD~1")
    (repo / "HANDOFF.md").write_text(handoff_text(ref))
    commit_all(repo, "handoff names the previous commit")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    proc = run_gate(shallow, "check", "--only", "handoff-fresh,handoff-structure")
    assert proc.returncode == 0, proc.stdout
    assert "[handoff-fresh warning] Meta ref " + ref + " is not in this shallow clone: fetch more history" in proc.stdout
    assert "git fetch --deepen=100" in proc.stdout
    assert "Verdict: unknown: not in this shallow clone" in run_gate(shallow, "brief").stdout


def test_a_staged_handoff_must_name_head(repo: Path) -> None:
    old = git(repo, "rev-parse", "HEAD")
    _commits(repo, 1)
    (repo / "HANDOFF.md").write_text(handoff_text(old))
    git(repo, "add", "HANDOFF.md")
    proc = _fresh(repo)
    assert proc.returncode == 1
    assert f"this commit changes HANDOFF.md, so its Meta ref must be HEAD ({git(repo, 'rev-parse', 'HEAD')[:12]})" \
        in proc.stdout
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    assert _fresh(repo).returncode == 0


def test_an_old_updated_is_a_warning_or_strict_violation(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (repo / "HANDOFF.md").write_text(handoff_text(head).replace(
        "- updated: " + handoff_text(head).split("- updated: ")[1].split("\n")[0], "- updated: 2026-01-01T00:00:00Z"))
    proc = _fresh(repo)
    assert proc.returncode == 0 and "[handoff-fresh warning] the hand-over was last updated" in proc.stdout
    (repo / ".gate.yaml").write_text("fresh:\n  strict: true\n")
    assert _fresh(repo).returncode == 1


def test_an_old_hand_over_of_many_megabytes_is_read_only_for_its_meta(repo: Path) -> None:
    """The attack: a pushed history holds a hand-over of 60 MiB of one-line items (it packs to kilobytes), written
    by the commit after the Meta ref's. Whether that commit was the close-out asks its hand-over's Meta ref, and the
    whole file was read and parsed for it: 3.3 GB and 20 s in the hook, under --range and in the brief. Now the first
    MiB is read (the Meta block stands at the top): under an address-space limit of 1 GiB each still judges."""
    import resource

    ref = git(repo, "rev-parse", "HEAD")
    text = handoff_text(ref)
    (repo / "HANDOFF.md").write_text(text.replace("## Decisions\n", "## Decisions\n" + "- d\n" * (15 << 20)))
    git(repo, "commit", "-q", "--no-verify", "-am", "a hand-over of 60 MiB")
    (repo / "HANDOFF.md").write_text(text + "- t\n")
    git(repo, "commit", "-q", "--no-verify", "-am", "the next")
    (repo / ".gate.yaml").write_text("fresh:\n  max_behind: 0\n")

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    for args in (["check", "--only", "handoff-fresh"], ["check", "--only", "handoff-fresh", "--range", "HEAD~2..HEAD"],
                 ["brief"]):
        assert GATE_BIN is not None
        proc = subprocess.run([GATE_BIN, *args], cwd=repo, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, preexec_fn=capped)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, \
            (args, proc.returncode, proc.stderr[-500:])
        if args[0] == "check":
            assert " behind " in proc.stdout, (args, proc.stdout)

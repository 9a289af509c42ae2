"""`gate stamp`, the close-out step: Meta ref and updated set atomically, every other byte kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

from conftest import flag_records, git, handoff_text, run_gate


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_stamp_sets_ref_and_updated_and_keeps_every_other_byte(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    text = handoff_text("abc1234").replace("- ref: abc1234", "- ref: `abc1234`  ")
    text = text.replace(text.split("- updated: ")[1].split("\n")[0], "2026-01-01T00:00:00Z")
    raw = b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()
    (repo / "HANDOFF.md").write_bytes(raw)
    proc = run_gate(repo, "stamp")
    assert proc.returncode == 0
    new = (repo / "HANDOFF.md").read_bytes()
    assert proc.stdout == f"stamped HANDOFF.md: ref {head}, sha256 {_sha(repo / 'HANDOFF.md')}\n"
    assert new.startswith(b"\xef\xbb\xbf# Handoff\r\n")
    assert f"- ref: `{head}`  \r\n".encode() in new
    before, after = raw.split(b"\r\n"), new.split(b"\r\n")
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [3, 4]
    assert len(before) == len(after)
    assert run_gate(repo, "check").returncode == 0


def test_stamp_with_the_right_and_a_wrong_expect(repo: Path) -> None:
    path = repo / "HANDOFF.md"
    wrong = run_gate(repo, "stamp", "--expect", "0" * 64)
    assert wrong.returncode == 1
    assert wrong.stderr.startswith("gate: HANDOFF.md changed since it was read (sha256 ")
    assert "stamp-denied" in [r["reason"] for r in flag_records(repo / ".git")]
    right = run_gate(repo, "stamp", "--expect", _sha(path))
    assert right.returncode == 0 and right.stdout.endswith(f"sha256 {_sha(path)}\n")


def test_stamp_adds_missing_meta_items_and_refuses_without_a_meta_section(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    path = repo / "HANDOFF.md"
    path.write_text(handoff_text(head).replace(f"- ref: {head}\n", ""))
    assert run_gate(repo, "stamp").returncode == 0
    assert f"## Meta\n- ref: {head}\n- updated: " in path.read_text()
    path.write_text("# Handoff\n\n## Current Target\nx\n")
    proc = run_gate(repo, "stamp")
    assert proc.returncode == 1 and "has no '## Meta' section to stamp" in proc.stderr
    assert path.read_text() == "# Handoff\n\n## Current Target\nx\n"


def test_a_stamp_before_the_first_commit_is_said_not_flagged(tmp_path: Path) -> None:
    """Before: `gate stamp` on a branch with no commit raised a `stamp-denied` flag that stayed open after a later
    stamp and close-out (found by a new user): the brief kept counting a slip of the user's own hand."""
    from conftest import init_repo

    repo = init_repo(tmp_path / "repo")
    assert run_gate(repo, "init").returncode == 0
    before = (repo / "HANDOFF.md").read_bytes()
    proc = run_gate(repo, "stamp")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("gate: HANDOFF.md: this branch has no commit yet: there is no HEAD to stamp — make the "
                           "first commit, then `gate stamp`\n")
    assert (repo / "HANDOFF.md").read_bytes() == before and flag_records(repo / ".git") == []
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    assert run_gate(repo, "stamp").returncode == 0
    assert "No unacknowledged flags." in run_gate(repo, "brief").stdout


def test_a_hand_over_in_a_merge_conflict_is_not_stamped(repo: Path) -> None:
    """A new user's finding: after a `git pull` that conflicted in the Meta block, `gate stamp` stamped the file,
    markers and all, and dropped the other side's fence line from inside the conflict. A conflict is resolved
    first: the stamp is refused in one line naming the marker's line, and the file is left as it was."""
    head = git(repo, "rev-parse", "HEAD")
    ours, theirs = handoff_text(head), handoff_text(head).replace("- ref:", "- fence: 1\n- ref:")
    meta = ours.index("- ref:")
    text = (ours[:meta] + "<<<<<<< HEAD\n" + ours[meta:ours.index("\n", meta) + 1] + "=======\n"
            + theirs[meta:theirs.index("\n", theirs.index("- ref:")) + 1] + ">>>>>>> origin/main\n"
            + ours[ours.index("\n", meta) + 1:])
    path = repo / "HANDOFF.md"
    path.write_text(text)
    marker = text.splitlines().index("<<<<<<< HEAD") + 1
    before = path.read_bytes()
    proc = run_gate(repo, "stamp")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"gate: HANDOFF.md:{marker}: a merge-conflict marker — resolve the conflict (keep what "
                           "both sides describe), remove the markers, then `gate stamp`\n")
    assert path.read_bytes() == before
    assert "stamp-denied" in [r["reason"] for r in flag_records(repo / ".git")]

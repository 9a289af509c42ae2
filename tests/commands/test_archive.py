"""The archive, append-only files, records, generated tables, the mailbox, heartbeat and --range."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import GATE_BIN, call_gate, commit_all, flag_records, git, handoff_text, run_gate, run_processes

from gates.infra import fsio

THREADS = """- [ ] open — next: x
- [x] done
  - child of done
  ```
  code of done
  ```
- [ ] parent — next: y
  - [X] checked child
    - grandchild
- [ ] last — next: z"""


def _with_threads(repo: Path, threads: str = THREADS) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads=threads))


def test_archive_moves_checked_items_with_their_children(repo: Path) -> None:
    _with_threads(repo)
    (repo / "ARCHIVE.md").write_text("# Archive\n\nolder entries\n")
    proc = run_gate(repo, "archive")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "moved HANDOFF.md:12-16 (Open Threads) to ARCHIVE.md: done",
        "moved HANDOFF.md:18-19 (Open Threads) to ARCHIVE.md: checked child",
    ]
    assert "## Open Threads\n- [ ] open — next: x\n- [ ] parent — next: y\n- [ ] last — next: z\n" in (
        repo / "HANDOFF.md").read_text()
    archived = (repo / "ARCHIVE.md").read_text()
    assert archived.startswith("# Archive\n\nolder entries\n\n## Archived ")
    assert archived.endswith("\n### Open Threads\n- [x] done\n  - child of done\n  ```\n  code of done\n  ```\n"
                             "- [X] checked child\n  - grandchild\n")
    assert run_gate(repo, "check").returncode == 0
    before = {p: (repo / p).read_bytes() for p in ("HANDOFF.md", "ARCHIVE.md")}
    again = run_gate(repo, "archive")
    assert again.stdout == "nothing to archive: no checked items\n"
    assert {p: (repo / p).read_bytes() for p in before} == before
    assert [e["action"] for e in map(json.loads, (repo / ".git/gate/journal.jsonl").read_text().splitlines())] == [
        "archive"]


def test_a_crash_between_the_two_writes_leaves_the_item_in_at_least_one_file(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gates.domain import archive

    _with_threads(repo)
    real = fsio.write_atomic
    calls = []

    def crash_on_second(path: Path, data: bytes, **kwargs: object) -> bool:
        calls.append(path.name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies between the archive write and the hand-over write
        return real(path, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(archive.fsio, "write_atomic", crash_on_second)
    code, _, _ = call_gate(repo, "archive", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 130 and calls == ["ARCHIVE.md", "HANDOFF.md"]
    assert "- [x] done" in (repo / "ARCHIVE.md").read_text()
    assert "- [x] done" in (repo / "HANDOFF.md").read_text()


def _install_hook(repo: Path, command: str) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec "{GATE_BIN}" {command}\n')
    hook.chmod(0o755)


def test_the_autofix_through_a_real_commit(repo: Path) -> None:
    _install_hook(repo, "check --only handoff-no-checked-items --fix")
    _with_threads(repo)
    git(repo, "add", "HANDOFF.md")
    first = subprocess.run(["git", "commit", "-q", "-m", "with done items"], cwd=repo, capture_output=True, text=True)
    assert first.returncode == 1
    assert "fixed: moved 2 checked item(s) to ARCHIVE.md" in first.stderr
    assert "autofix-applied" in [r["reason"] for r in flag_records(repo / ".git")]
    git(repo, "add", "HANDOFF.md", "ARCHIVE.md")
    git(repo, "commit", "-q", "-m", "with done items, archived")
    assert "- [x] done" in git(repo, "show", "HEAD:ARCHIVE.md")


def _archive_repo(repo: Path) -> None:
    (repo / "ARCHIVE.md").write_text("# Archive\n\nline three\nline four\n")
    commit_all(repo, "archive")


@pytest.mark.parametrize(
    ("new", "line", "what"),
    [("# Archive\n\nline 3 edited\nline four\n", 3, "changes existing content of ARCHIVE.md at line 3"),
     ("# Archive\n\nline three\n", 4, "changes existing content of ARCHIVE.md at line 4"),
     ("# Archive\n\ninserted\nline three\nline four\n", 3, "changes existing content of ARCHIVE.md at line 3"),
     (None, 1, "deletes ARCHIVE.md")],
    ids=["edit", "remove-tail", "insert-in-the-middle", "delete"],
)
def test_append_only_refuses_anything_but_growth_at_the_end(repo: Path, new: str | None, line: int, what: str) -> None:
    _archive_repo(repo)
    if new is None:
        git(repo, "rm", "-q", "ARCHIVE.md")
    else:
        (repo / "ARCHIVE.md").write_text(new)
        git(repo, "add", "ARCHIVE.md")
    proc = run_gate(repo, "check", "--only", "append-only")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith(f"ARCHIVE.md:{line}: [append-only] the commit being made {what}")


def test_append_only_allows_appends(repo: Path) -> None:
    _archive_repo(repo)
    (repo / "ARCHIVE.md").write_text("# Archive\n\nline three\nline four\nline five\n")
    git(repo, "add", "ARCHIVE.md")
    assert run_gate(repo, "check", "--only", "append-only").returncode == 0


def _record(repo: Path, title: str) -> tuple[Path, str]:
    proc = run_gate(repo, "record", "new", title)
    assert proc.returncode == 0, proc.stderr
    path = repo / proc.stdout.strip()
    record_id = path.read_text().splitlines()[1].removeprefix("id: ")
    assert path.name.startswith(record_id + "-")
    return path, record_id


def _set_status(path: Path, status: str, extra: str = "") -> None:
    text = path.read_text().replace("status: open", f"status: {status}{extra}", 1)
    path.write_text(text)


def test_closed_records_refuse_edit_rename_and_delete(repo: Path) -> None:
    path, record_id = _record(repo, "Use link() for claims")
    assert path.read_text().startswith(f"---\nid: {record_id}\ntitle: 'Use link() for claims'\nstatus: open\n")
    commit_all(repo, "new record")
    path.write_text(path.read_text() + "\nan open record is edited freely\n")
    git(repo, "add", "-A")
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 0
    _set_status(path, "closed")
    git(repo, "add", "-A")
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 0  # closing: the last edit
    commit_all(repo, "closed")
    path.write_text(path.read_text() + "\nan edit after closing\n")
    git(repo, "add", "-A")
    edit = run_gate(repo, "check", "--only", "records-immutable")
    assert edit.returncode == 1 and f"edits record {record_id}, which is closed" in edit.stdout
    git(repo, "reset", "-q", "--hard")
    git(repo, "mv", str(path.relative_to(repo)), "decisions/renamed.md")
    rename = run_gate(repo, "check", "--only", "records-immutable")
    assert rename.returncode == 1 and "deletes or renames record" in rename.stdout
    git(repo, "reset", "-q", "--hard")
    git(repo, "rm", "-q", str(path.relative_to(repo)))
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 1


def test_supersession_must_be_reciprocal(repo: Path) -> None:
    old, old_id = _record(repo, "First idea")
    new, new_id = _record(repo, "Better idea")
    _set_status(old, "superseded", f"\nsuperseded_by: {new_id}")
    proc = run_gate(repo, "check", "--only", "records-immutable")
    assert proc.returncode == 1
    assert f"superseded by {new_id}, but {new_id} does not list {old_id} in supersedes" in proc.stdout
    new.write_text(new.read_text().replace("status: open", f"status: open\nsupersedes: [{old_id}]", 1))
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 0
    old.write_text(old.read_text().replace(f"status: superseded\nsuperseded_by: {new_id}", "status: open"))
    assert "is not marked 'status: superseded'" in run_gate(repo, "check", "--only", "records-immutable").stdout


def test_invalid_front_matter_is_named_at_its_line(repo: Path) -> None:
    path, _ = _record(repo, "Something")
    path.write_text(path.read_text().replace("status: open", "status: maybe\nowner: me"))
    proc = run_gate(repo, "check", "--only", "records-immutable")
    assert proc.returncode == 1
    rel = path.relative_to(repo)
    assert f"{rel}:4: [records-immutable] status: 'maybe' is not one of ['open', 'closed', 'superseded']" in proc.stdout
    assert f"{rel}:5: [records-immutable] unknown key 'owner'" in proc.stdout


CREATOR = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from gates.infra import config
from gates.domain import records
from gates.infra.git import discover
repo = discover(Path(sys.argv[1]), {})
cfg = config.load(repo)
for i in range(125):
    records.new(repo, cfg, f"record {sys.argv[2]}-{i}", datetime.now(timezone.utc))
"""


@pytest.mark.slow
def test_a_thousand_records_created_concurrently_never_collide_and_render(repo: Path, tmp_path: Path) -> None:
    assert run_processes(tmp_path, CREATOR, [[str(repo), str(n)] for n in range(8)], timeout=300) == [0] * 8
    files = list((repo / "decisions").glob("*.md"))
    assert len(files) == 1000
    assert len({f.read_text().splitlines()[1] for f in files}) == 1000
    text = (repo / "HANDOFF.md").read_text().replace("## Decisions\n", "## Decisions\n<!-- gate:table decisions -->\n"
                                                      "<!-- /gate:table -->\n")
    (repo / "HANDOFF.md").write_text(text)
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 2000\n  max_bytes: 1000000\n")
    assert run_gate(repo, "render").stdout == "rendered 1 table(s): decisions\n"
    assert (repo / "HANDOFF.md").read_text().count("| open |") == 1000
    assert run_gate(repo, "check", "--only", "handoff-tables,records-immutable").returncode == 0


def test_a_stale_table_is_detected_and_fixed_by_render(repo: Path) -> None:
    text = (repo / "HANDOFF.md").read_text().replace(
        "## Decisions\n", "## Decisions\n<!-- gate:table decisions -->\n_(none)_\n<!-- /gate:table -->\n")
    (repo / "HANDOFF.md").write_text(text)
    assert run_gate(repo, "check", "--only", "handoff-tables").returncode == 0
    _, record_id = _record(repo, "A | pipe in the title")
    stale = run_gate(repo, "check", "--only", "handoff-tables")
    assert stale.returncode == 1
    assert "[handoff-tables] table 'decisions' is out of date (1 lines, 3 expected)" in stale.stdout
    diff = run_gate(repo, "render", "--diff")
    assert f"+| {record_id} | A \\| pipe in the title | open |" in diff.stdout
    assert "_(none)_" in (repo / "HANDOFF.md").read_text()  # --diff writes nothing
    assert run_gate(repo, "render").returncode == 0
    assert run_gate(repo, "check", "--only", "handoff-tables").returncode == 0


def test_mailbox_take_prints_and_clears(repo: Path) -> None:
    box = repo / "WORKPACKAGE.md"
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0  # no file: an empty mailbox
    box.write_text("# Work package\n\n## Goal\nShip.\n")
    bad = run_gate(repo, "check", "--only", "mailbox")
    assert bad.returncode == 1 and "it has no '## Plan' section" in bad.stdout
    package = "# Work package\n\n## Goal\nShip.\n\n## Plan\n1. do it\n\n## Done when\nshipped\n"
    box.write_text(package)
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0
    taken = run_gate(repo, "mailbox", "take")
    assert taken.returncode == 0 and taken.stdout == package
    assert box.read_text() == "No work package.\n"
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0
    assert run_gate(repo, "mailbox", "take").stdout == "the mailbox is empty: no work package\n"
    actions = [json.loads(line)["action"] for line in (repo / ".git/gate/journal.jsonl").read_text().splitlines()]
    assert actions == ["flag-raised", "flags-resolved", "mailbox-taken"]  # the mailbox flag resolved by its pass


def test_heartbeat_off_by_default_and_on_when_enabled(repo: Path) -> None:
    (repo / "code.py").write_text("print(1)\n")
    git(repo, "add", "code.py")
    default = run_gate(repo, "check")
    assert default.returncode == 0 and "heartbeat" not in default.stdout  # off by default
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 1  # --only runs it even when off
    (repo / ".gate.yaml").write_text("gates:\n  heartbeat: true\nheartbeat:\n  journal: NOTES.md\n")
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert "HANDOFF.md:1: [heartbeat] the commit being made changes 1 file(s) (code.py…) but not HANDOFF.md" in proc.stdout
    (repo / "NOTES.md").write_text("did code.py\n")
    git(repo, "add", "NOTES.md")
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 0
    git(repo, "reset", "-q", "NOTES.md")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="Coding."))
    git(repo, "add", "HANDOFF.md")
    assert run_gate(repo, "check", "--only", "heartbeat").returncode == 0


def test_range_judges_every_commit_and_names_the_bad_one(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    commit_all(repo, "archive")
    bad = ""
    for i in range(19):
        archive = (repo / "ARCHIVE.md").read_text()
        if i == 9:
            archive = archive.replace("# Archive", "# Rewritten archive")
        (repo / "ARCHIVE.md").write_text(archive + f"- entry {i}\n")
        sha = commit_all(repo, f"commit {i}")
        bad = sha if i == 9 else bad
    assert run_gate(repo, "check", "--only", "append-only").returncode == 0  # nothing staged now
    proc = run_gate(repo, "check", "--range", f"{base}..HEAD", "--only", "append-only")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[:-1] == [
        f"ARCHIVE.md:1: [append-only] commit {bad[:12]} (commit 9) changes existing content of ARCHIVE.md at line 1: "
        "it may only grow at its end — restore that text, add below it"]
    assert run_gate(repo, "check", "--range", f"{bad}..HEAD", "--only", "append-only").returncode == 0
    assert run_gate(repo, "check", "--range", "--upload-pack=evil").returncode == 2

"""records-immutable: a closed record is never edited, renamed or deleted; supersession is reciprocal."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import commit_all, git, run_gate
from records_helpers import record

from gates.infra import cache as entries_kept
from gates.infra.git import discover


def _set_status(path: Path, status: str, extra: str = "") -> None:
    text = path.read_text().replace("status: open", f"status: {status}{extra}", 1)
    path.write_text(text)


def test_closed_records_refuse_edit_rename_and_delete(repo: Path) -> None:
    path, record_id = record(repo, "Use link() for claims")
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
    old, old_id = record(repo, "First idea")
    new, new_id = record(repo, "Better idea")
    _set_status(old, "superseded", f"\nsuperseded_by: {new_id}")
    proc = run_gate(repo, "check", "--only", "records-immutable")
    assert proc.returncode == 1
    assert f"superseded by {new_id}, but {new_id} does not list {old_id} in supersedes" in proc.stdout
    new.write_text(new.read_text().replace("status: open", f"status: open\nsupersedes: [{old_id}]", 1))
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 0
    old.write_text(old.read_text().replace(f"status: superseded\nsuperseded_by: {new_id}", "status: open"))
    assert "is not marked 'status: superseded'" in run_gate(repo, "check", "--only", "records-immutable").stdout


def test_invalid_front_matter_is_named_at_its_line(repo: Path) -> None:
    path, _ = record(repo, "Something")
    path.write_text(path.read_text().replace("status: open", "status: maybe\nowner: me"))
    proc = run_gate(repo, "check", "--only", "records-immutable")
    assert proc.returncode == 1
    rel = path.relative_to(repo)
    assert f"{rel}:4: [records-immutable] status: 'maybe' is not one of ['open', 'closed', 'superseded']" in proc.stdout
    assert f"{rel}:5: [records-immutable] unknown key 'owner'" in proc.stdout
    assert proc.stdout.splitlines() == [
        f"{rel}:4: [records-immutable] status: 'maybe' is not one of ['open', 'closed', 'superseded']",
        f"{rel}:5: [records-immutable] unknown key 'owner' (allowed: date, id, status, superseded_by, supersedes, tags, title)",
        "gate check: failed: 2 errors (records-immutable: 2; 1 gate on HANDOFF.md in the work tree)",
    ]


def test_a_closed_record_can_be_superseded_and_nothing_more(repo: Path) -> None:
    """The one edit a closed record takes: marked superseded by a new record that lists it, every other byte kept."""
    old, old_id = record(repo, "First idea")
    _set_status(old, "closed")
    commit_all(repo, "closed")
    new, new_id = record(repo, "Better idea")
    new.write_text(new.read_text().replace("status: open", f"status: open\nsupersedes: [{old_id}]", 1))
    closed = old.read_text()
    old.write_text(closed.replace("status: closed", f"status: superseded\nsuperseded_by: {new_id}", 1))
    git(repo, "add", "-A")
    proc = run_gate(repo, "check", "--only", "records-immutable")
    passed = "gate check: passed (1 gate on HANDOFF.md as this commit will record it)\n"
    assert (proc.returncode, proc.stdout) == (0, passed), proc.stdout
    old.write_text(old.read_text().replace("title: 'First idea'", "title: 'First idea, reworded'", 1))
    git(repo, "add", "-A")
    edit = run_gate(repo, "check", "--only", "records-immutable")
    assert edit.returncode == 1 and f"edits record {old_id}, which is closed" in edit.stdout
    commit_all(repo, "superseded")  # as if the hook were skipped: a superseded record is final
    old.write_text(old.read_text().replace(f"superseded_by: {new_id}", "superseded_by: D-other", 1))
    git(repo, "add", "-A")
    assert f"edits record {old_id}, which is superseded" in run_gate(repo, "check", "--only", "records-immutable").stdout


def test_what_the_records_decide_follows_their_content(repo: Path) -> None:
    """What the records alone decide is kept under a hash of the folder's listing (every name and content hash):
    the same folder gives the same answer from the cache, any change of content is judged again, an answer
    kept for an earlier content is never given for a later one, and deleting or corrupting the cache changes
    no answer."""
    old, old_id = record(repo, "First idea")
    new, new_id = record(repo, "Better idea")
    _set_status(old, "superseded", f"\nsuperseded_by: {new_id}")
    unmatched = new.read_text()
    time.sleep(2.2)  # older than the racy window: the next listing trusts the stat data it keeps
    first = run_gate(repo, "check", "--only", "records-immutable")
    assert first.returncode == 1 and f"but {new_id} does not list {old_id}" in first.stdout, first.stdout
    cache = repo / ".git" / "gate" / "cache"
    assert (cache / "records-findings.json").is_file()
    again = run_gate(repo, "check", "--only", "records-immutable")
    assert (again.returncode, again.stdout) == (1, first.stdout)
    new.write_text(unmatched.replace("status: open", f"status: open\nsupersedes: [{old_id}]", 1))
    mended = run_gate(repo, "check", "--only", "records-immutable")
    assert mended.returncode == 0, mended.stdout
    new.write_text(unmatched)  # the first content again, in a file the listing has not seen yet
    assert run_gate(repo, "check", "--only", "records-immutable").stdout == first.stdout
    for name in ("records-findings.json", "records-entries.json", "records.json"):
        (cache / name).unlink()
        assert run_gate(repo, "check", "--only", "records-immutable").stdout == first.stdout, name
    forged = entries_kept.get(discover(repo, {}), "records-findings")  # (entries are authenticated: see test_cache_key)
    assert forged["value"]
    for value in ([["HANDOFF.md", "1", "records-immutable", "x", "error"]], "nothing", [["x"]]):
        entries_kept.put(discover(repo, {}), "records-findings", {"key": forged["key"], "value": value})
        assert run_gate(repo, "check", "--only", "records-immutable").stdout == first.stdout, value
    (cache / "records-findings.json").write_text("{not json")
    assert run_gate(repo, "check", "--only", "records-immutable").stdout == first.stdout


def test_an_unchanged_folder_is_not_parsed_again(repo: Path) -> None:
    """The cost of an unchanged folder: a listing and a stat of each file. Its parsed records are not read
    (their cache may even be gone) and no record is parsed: the YAML reader is never imported."""
    for n in range(5):
        record(repo, f"Idea {n}")
    commit_all(repo, "records")
    time.sleep(2.2)
    assert run_gate(repo, "check", "--only", "records-immutable").returncode == 0
    cache = repo / ".git" / "gate" / "cache"
    (cache / "records-entries.json").unlink()
    probe = ("import sys; sys.argv = ['gate', 'check', '--only', 'records-immutable']\n"
             "from gates.main import main\ncode = main()\nprint(code, 'ruamel.yaml' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.stdout.splitlines()[-1] == "0 False", proc.stdout + proc.stderr
    assert not (cache / "records-entries.json").exists()  # nothing needed it


def test_a_renamed_records_folder_is_named_as_it_is_now(repo: Path) -> None:
    """`git mv decisions adr` keeps every file's stat data: the findings must still name the folder as it is now
    (they named the old one, which no longer exists, until a record's bytes changed)."""
    path, _ = record(repo, "Alpha")
    path.write_text(path.read_text().replace("status: open", "status: bogus", 1))
    commit_all(repo, "bogus record")
    time.sleep(2.2)
    assert f"decisions/{path.name}:4:" in run_gate(repo, "check", "--only", "records-immutable").stdout
    git(repo, "mv", "decisions", "adr")
    (repo / ".gate.yaml").write_text("records:\n  path: adr\n")
    git(repo, "add", ".gate.yaml")  # the rename is staged: the commit is judged by the configuration it records
    for _ in range(2):
        proc = run_gate(repo, "check", "--only", "records-immutable")
        assert proc.returncode == 1 and f"adr/{path.name}:4:" in proc.stdout and "decisions/" not in proc.stdout, \
            proc.stdout


@pytest.mark.parametrize("file, value", [
    ("records.json", [1]), ("records.json", {"read_ns": "x"}), ("records.json", None),
    ("records-entries.json", "entries"), ("records-entries.json", [1]), ("records-findings.json", [1]),
])
def test_a_cache_of_another_shape_is_computed_afresh(repo: Path, file: str, value: object) -> None:
    """Every cache file, and every entry in it, of a shape the gate did not write is passed over: the answer is
    the one without a cache, never a traceback."""
    path, _ = record(repo, "Alpha")
    path.write_text(path.read_text().replace("status: open", "status: bogus", 1))
    (repo / "decisions" / "empty-folder-neighbour.txt").write_text("not a record\n")
    time.sleep(2.2)
    first = run_gate(repo, "check", "--only", "records-immutable")
    assert first.returncode == 1, first.stdout + first.stderr
    cache = repo / ".git" / "gate" / "cache"
    kept = entries_kept.get(discover(repo, {}), "records")  # (authenticated entries of another shape: signed here)
    entries = entries_kept.get(discover(repo, {}), "records-entries")
    shapes: list[tuple[str, object]] = [(file, value)]
    if file == "records.json" and isinstance(value, dict):
        shapes = [(file, {**kept, **value})]
    if file == "records-entries.json" and value == "entries":  # each entry of another shape, one at a time
        [digest] = entries["entries"]
        bad_entries: list[object] = [None, 1, "x", [], {}, {"meta": 1, "lines": [], "problems": []}, {"broken": "x"},
                                     {"meta": {}, "lines": [[1, "x"]], "problems": []},
                                     {"meta": {}, "lines": [], "problems": [[1]]}]
        shapes = [(file, {**entries, "entries": {digest: bad}}) for bad in bad_entries]
    for name, shape in shapes:
        entries_kept.put(discover(repo, {}), name.removesuffix(".json"), shape)
        if name != "records-findings.json":
            (cache / "records-findings.json").unlink(missing_ok=True)  # so that the records are loaded
        proc = run_gate(repo, "check", "--only", "records-immutable")
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, first.stdout, first.stderr), shape

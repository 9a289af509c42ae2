"""`gate journal`: the hash-chained journal of every action, `--verify` and `--repair`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import flag_records, run_gate, run_processes

from gates.domain import journal
from gates.infra.git import discover


def _journal(repo: Path) -> Path:
    return repo / ".git" / "gate" / "journal.jsonl"


def _some_actions(repo: Path) -> None:
    assert run_gate(repo, "claim").returncode == 0
    assert run_gate(repo, "stamp").returncode == 0
    assert run_gate(repo, "release").returncode == 0
    (repo / ".gate.yaml").write_text("bogus: 1\n")
    assert run_gate(repo, "check").returncode == 3  # a flag
    (repo / ".gate.yaml").unlink()
    assert run_gate(repo, "flags", "--ack-all").returncode == 0


def test_every_action_is_journalled_and_the_chain_verifies(repo: Path) -> None:
    _some_actions(repo)
    entries = [json.loads(line) for line in _journal(repo).read_text().splitlines()]
    assert [e["action"] for e in entries] == [
        "claim-granted", "stamp", "claim-released", "flag-raised", "flags-acknowledged"]
    assert [e["seq"] for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0]["prev"] == "0" * 64 and all(b["prev"] == a["hash"] for a, b in zip(entries, entries[1:], strict=False))
    proc = run_gate(repo, "journal", "--verify")
    assert proc.returncode == 0 and proc.stdout == "journal intact: 5 entries, each chained to the one before\n"
    listing = run_gate(repo, "journal")
    assert listing.stdout.splitlines()[1].split()[2] == "stamp"


def _verify_fails(repo: Path, expected: str) -> None:
    proc = run_gate(repo, "journal", "--verify")
    assert proc.returncode == 1
    assert proc.stdout == f"journal broken: {expected}\n"
    assert "journal-broken" in [r["reason"] for r in flag_records(repo / ".git")]


def test_an_edited_entry_is_named(repo: Path) -> None:
    _some_actions(repo)
    lines = _journal(repo).read_text().splitlines()
    lines[1] = lines[1].replace('"stamp"', '"stomp"')
    _journal(repo).write_text("\n".join(lines) + "\n")
    _verify_fails(repo, "entry 2 at line 2 was edited (its hash does not match)")


def test_a_removed_entry_is_named(repo: Path) -> None:
    _some_actions(repo)
    lines = _journal(repo).read_text().splitlines()
    del lines[2]
    _journal(repo).write_text("\n".join(lines) + "\n")
    _verify_fails(repo, "entry 4 at line 3 does not follow entry 2 (one was removed, or they were reordered)")


def test_reordered_entries_are_named(repo: Path) -> None:
    _some_actions(repo)
    lines = _journal(repo).read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]
    _journal(repo).write_text("\n".join(lines) + "\n")
    _verify_fails(repo, "entry 3 at line 2 does not follow entry 1 (one was removed, or they were reordered)")


def test_a_truncated_journal_is_detected(repo: Path) -> None:
    _some_actions(repo)
    lines = _journal(repo).read_text().splitlines()
    _journal(repo).write_text("\n".join(lines[:3]) + "\n")
    _verify_fails(repo, "the journal ends at entry 3 but journal.head names entry 5: entries were cut from its end")


def test_a_torn_last_line_is_detected_and_appends_go_on(repo: Path) -> None:
    _some_actions(repo)
    data = _journal(repo).read_bytes()
    _journal(repo).write_bytes(data[:-20])
    _verify_fails(repo, "line 5 is not a journal entry (edited, or torn by a crash)")
    assert run_gate(repo, "claim").returncode == 0
    after = [json.loads(line) for line in _journal(repo).read_text().splitlines()[5:]]
    assert [(e["seq"], e["action"]) for e in after] == [(5, "flag-raised"), (6, "claim-granted")]
    assert after[0]["prev"] == json.loads(_journal(repo).read_text().splitlines()[3])["hash"]


def _cut_short_append(repo: Path) -> tuple[bytes, str]:
    """The journal as a crash leaves it when the append of its last entry stopped halfway: (bytes, that line)."""
    head = repo / ".git" / "gate" / "journal.head"
    _some_actions(repo)
    before_head = head.read_bytes()
    assert run_gate(repo, "claim").returncode == 0  # one more entry: the one the crash will cut short
    lines = _journal(repo).read_bytes().splitlines(keepends=True)
    half = lines[-1][: len(lines[-1]) // 2]
    _journal(repo).write_bytes(b"".join(lines[:-1]) + half)
    head.write_bytes(before_head)  # the writer died before journal.head named the entry
    return b"".join(lines[:-1]) + half, half.decode()


def test_an_append_cut_short_by_a_crash_is_not_damage(repo: Path) -> None:
    _, half = _cut_short_append(repo)
    proc = run_gate(repo, "journal", "--verify")
    assert proc.returncode == 0 and proc.stdout.startswith("journal intact: 5 entries")
    assert "1 append(s) a crash cut short before they were recorded (line 6)" in proc.stdout
    assert run_gate(repo, "claim").returncode == 0  # the retry: same sequence number, chained to entry 5
    lines = _journal(repo).read_text().splitlines()
    assert lines[5] == half and json.loads(lines[6])["seq"] == 6
    proc = run_gate(repo, "journal", "--verify")
    assert proc.returncode == 0 and proc.stdout.startswith("journal intact: 6 entries") and "(line 6)" in proc.stdout


@pytest.mark.parametrize("damage", ["head names it", "not how an entry begins", "no retry follows"])
def test_a_torn_line_that_is_not_a_cut_short_append_is_damage(repo: Path, damage: str) -> None:
    data, half = _cut_short_append(repo)
    if damage == "head names it":  # the append was acknowledged: a torn line now is damage after the fact
        (repo / ".git" / "gate" / "journal.head").write_text('{"seq": 6, "hash": "recorded"}\n')
        _verify_fails(repo, "line 6 is not a journal entry (edited, or torn by a crash)")
    elif damage == "not how an entry begins":
        _journal(repo).write_bytes(data.replace(half.encode(), b'{"seq": 99, ' + half.encode()[12:]))
        _verify_fails(repo, "line 6 is not a journal entry (edited, or torn by a crash)")
    else:  # a torn line in the middle, and the next entry does not retry it
        lines = _journal(repo).read_bytes().splitlines(keepends=True)
        _journal(repo).write_bytes(b"".join(lines[:3]) + half.encode() + b"\n" + b"".join(lines[3:5]))
        _verify_fails(repo, "line 4 is not a journal entry (edited, or torn by a crash)")


def test_repair_keeps_the_broken_journal_and_starts_a_chain_that_names_it(repo: Path) -> None:
    assert run_gate(repo, "journal", "--repair").stdout == "journal intact: nothing to repair\n"
    _some_actions(repo)
    data = _journal(repo).read_bytes()
    _journal(repo).write_bytes(data[:-20])
    proc = run_gate(repo, "journal", "--repair")
    assert proc.returncode == 0 and proc.stdout.startswith("journal restarted: the broken one is kept in ")
    [evidence] = [p for p in (repo / ".git" / "gate" / "lost+found").iterdir() if p.is_dir()]
    assert (evidence / "journal.jsonl").read_bytes() == data[:-20]
    assert (evidence / "journal.head").is_file()
    first = json.loads(_journal(repo).read_text().splitlines()[0])
    assert first["action"] == "journal-restarted" and first["details"]["evidence"] == str(evidence)
    assert first["details"]["problem"] == "line 5 is not a journal entry (edited, or torn by a crash)"
    assert run_gate(repo, "journal", "--verify").returncode == 0


APPENDER = """
import sys
from pathlib import Path
from gates.domain import journal
from gates.infra.git import discover
repo = discover(Path(sys.argv[1]), {})
for i in range(25):
    journal.append(repo, "test", {"writer": sys.argv[2], "i": i})
"""


@pytest.mark.slow
def test_sixteen_concurrent_appenders_leave_a_chain_that_verifies(repo: Path, tmp_path: Path) -> None:
    assert run_processes(tmp_path, APPENDER, [[str(repo), str(n)] for n in range(16)], timeout=120) == [0] * 16
    verdict = journal.verify(discover(repo, {}))
    assert verdict.ok and verdict.entries == 16 * 25, verdict

"""Sentinel flags: written for every failing run, coalesced, listed verbatim, acknowledged, never deleted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import call_gate, flag_records, git, handoff_text, run_gate

from gates.domain import flags
from gates.infra import schemas
from gates.infra.git import discover

NAME = re.compile(r"^\d{8}T\d{6}Z-[a-z][a-z+-]*-[0-9a-f]{8}\.json$")


def _break(repo: Path, item: str = "done") -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads=f"- [x] {item}"))


def test_a_violation_writes_a_flag_with_everything_the_next_session_needs(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check", "--only", "handoff-no-checked-items")
    assert proc.returncode == 1
    [record] = flag_records(repo / ".git")
    message = "HANDOFF.md:11: [handoff-no-checked-items] checked item 'done' — completed items move to ARCHIVE.md"
    assert record["message"] == message
    assert record["reason"] == "handoff-no-checked-items"
    assert record["count"] == 1
    assert record["worktree"] == str(repo.resolve())
    assert record["head"] == git(repo, "rev-parse", "HEAD")
    assert record["command"] == "gate check --only handoff-no-checked-items"
    assert record["exit_code"] == 1
    assert schemas.validate(schemas.load("flag"), record, {}) == []
    [path] = (repo / ".git" / "gate" / "flags").glob("*.json")
    assert NAME.match(path.name) and path.stem == record["id"]


def test_a_clean_run_writes_no_flag(repo: Path) -> None:
    assert run_gate(repo, "check").returncode == 0
    assert flag_records(repo / ".git") == []


def test_identical_repeats_coalesce_into_one_flag_with_a_count(repo: Path) -> None:
    _break(repo)
    for _ in range(3):
        assert run_gate(repo, "check").returncode == 1
    found = discover(repo, {})
    scope = flags.scope_of(found, [], None, repo / "HANDOFF.md")  # what `gate check` judged
    for _ in range(500):
        flags.raise_flag(found, "handoff-no-checked-items", flag_records(repo / ".git")[0]["message"],
                         command="gate check", exit_code=1, gate="handoff-no-checked-items", scope=scope)
    records = flag_records(repo / ".git")
    assert sorted((r["reason"], r["count"]) for r in records) == [("handoff-no-checked-items", 503)]
    _break(repo, "another")  # a different message is a different flag
    assert run_gate(repo, "check").returncode == 1
    assert sorted(r["count"] for r in flag_records(repo / ".git")) == [1, 503]


def test_concurrent_writers_coalesce_without_losing_a_count(repo: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor

    found = discover(repo, {})
    with ProcessPoolExecutor(max_workers=8) as pool:
        list(pool.map(_raise_many, [str(repo)] * 8))
    [record] = flag_records(repo / ".git")
    assert record["count"] == 8 * 25
    assert found.common_dir == (repo / ".git").resolve()


def _raise_many(repo_dir: str) -> None:
    found = discover(Path(repo_dir), {})
    for _ in range(25):
        flags.raise_flag(found, "io-error", "same message", command="gate test", exit_code=3)


def test_file_names_never_come_from_input_text(repo: Path) -> None:
    found = discover(repo, {})
    hostile = "../../../../etc/passwd\0\n\u202e/evil"
    flag_id = flags.raise_flag(found, "input-unreadable", hostile, command="gate check", exit_code=3)
    assert NAME.match(f"{flag_id}.json")
    assert [p.name for p in (repo / ".git" / "gate" / "flags").iterdir() if p.suffix == ".json"] == [f"{flag_id}.json"]
    with pytest.raises(ValueError):
        flags.raise_flag(found, "../escape", "x", command="gate", exit_code=1)


def test_flags_prints_every_flag_verbatim_oldest_first(repo: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timezone

    found = discover(repo, {})
    later = flags.raise_flag(found, "io-error", "second\n  indented line kept", command="gate x", exit_code=3,
                             now=datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc))
    earlier = flags.raise_flag(found, "config-invalid", "first", command="gate y", exit_code=3,
                               now=datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc))
    code, out, _ = call_gate(repo, "flags", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0
    assert out.index(earlier) < out.index(later)
    assert "\nfirst\n" in out and "\nsecond\n  indented line kept\n" in out
    code, out, _ = call_gate(repo, "flags", "--format", "json", capsys=capsys, monkeypatch=monkeypatch)
    assert [f["id"] for f in json.loads(out)["flags"]] == [earlier, later]


def test_ack_moves_flags_aside_and_never_deletes(repo: Path) -> None:
    found = discover(repo, {})
    one = flags.raise_flag(found, "io-error", "one", command="gate", exit_code=3)
    two = flags.raise_flag(found, "io-error", "two", command="gate", exit_code=3)
    proc = run_gate(repo, "flags", "--ack", one)
    assert proc.returncode == 0 and one in proc.stdout
    assert [r["id"] for r in flag_records(repo / ".git")] == [two]
    assert [r["id"] for r in flag_records(repo / ".git", "acked")] == [one]
    assert run_gate(repo, "flags", "--ack-all").returncode == 0
    assert flag_records(repo / ".git") == []
    assert sorted(r["id"] for r in flag_records(repo / ".git", "acked")) == sorted([one, two])
    assert run_gate(repo, "flags").stdout == "no unacknowledged flags\n"
    # The same failure after an acknowledgement is a new flag, not a count on the old one.
    again = flags.raise_flag(found, "io-error", "one", command="gate", exit_code=3)
    assert again != one and [r["count"] for r in flag_records(repo / ".git")] == [1]


@pytest.mark.parametrize("bad_id", ["nope", "../../etc/passwd", "20261130T080000Z-io-error-00000000"])
def test_ack_of_an_unknown_flag_is_a_usage_error(repo: Path, bad_id: str) -> None:
    flags.raise_flag(discover(repo, {}), "io-error", "x", command="gate", exit_code=3)
    proc = run_gate(repo, "flags", "--ack", bad_id)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gate: no such flag")
    assert len(flag_records(repo / ".git")) == 1


def test_an_unreadable_flag_is_shown_not_dropped(repo: Path) -> None:
    folder = repo / ".git" / "gate" / "flags"
    folder.mkdir(parents=True)
    (folder / "20261130T080000Z-io-error-0123abcd.json").write_text("{not json")
    (folder / ".tmp-someflag-abc").write_text("a writer's leftover")
    proc = run_gate(repo, "flags")
    assert proc.returncode == 0
    assert "[unreadable-flag]" in proc.stdout and "20261130T080000Z-io-error-0123abcd" in proc.stdout
    assert "leftover" not in proc.stdout
    assert (folder / ".tmp-someflag-abc").exists()


def test_when_a_flag_cannot_be_written_the_reason_goes_to_stderr_and_the_exit_stays_nonzero(
    repo: Path, tmp_path: Path
) -> None:
    _break(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / ".git" / "gate")  # a planted state dir
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert "could not write the handoff-no-checked-items flag" in proc.stderr
    assert "not a plain directory" in proc.stderr
    assert list(outside.iterdir()) == []


def test_internal_errors_are_exit_4_with_a_short_traceback_and_a_flag(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gates.checks import handoff_structure

    def broken(ctx: object) -> list[object]:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(handoff_structure, "check", broken)
    code, _, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 4
    assert err.startswith("gate: internal error")
    assert "ZeroDivisionError: boom" in err
    [record] = flag_records(repo / ".git")
    assert record["reason"] == "internal-error" and record["exit_code"] == 4
    assert record["message"] == "internal error: ZeroDivisionError: boom"

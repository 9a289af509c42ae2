"""`gate flags`: every flag listed verbatim, oldest first; `--ack` moves flags aside, never deletes.

How flags are written, coalesced and resolved: tests/domain/test_flags.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import GATE_BIN, call_gate, commit_all, flag_records, git, init_repo, run_gate
from helpers import brief_flags

from gates.domain import flags
from gates.infra.git import discover


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


def test_a_missing_hand_over_flag_ends_once_a_check_reads_it(tmp_path: Path) -> None:
    """Issue 27: `input-unreadable` raised by `gate check` before `gate init` (no HANDOFF.md) led every later brief
    until acknowledged; the next check that reads the configured hand-over resolves it. A brief's own
    input-unreadable (its hook input) is not a check's and stays."""
    repo = init_repo(tmp_path / "fresh")
    (repo / "README").write_text("x\n")
    commit_all(repo, "first")
    missing = run_gate(repo, "check")
    assert missing.returncode == 3 and "file not found" in missing.stderr
    assert GATE_BIN
    brief = subprocess.run([GATE_BIN, "brief", "--format", "claude"], cwd=repo, input="{not json", capture_output=True,
                           text=True, timeout=60)
    assert brief.returncode == 0
    assert sorted(r["command"].split()[1] for r in flag_records(repo / ".git")
                  if r["reason"] == "input-unreadable") == ["brief", "check"]
    assert run_gate(repo, "init").returncode == 0
    run_gate(repo, "check")  # reads it (and warns of the placeholder)
    left = [r for r in flag_records(repo / ".git") if r["reason"] == "input-unreadable"]
    assert [r["command"].split()[1] for r in left] == ["brief"]


def test_a_broken_gate_yaml_flag_ends_once_a_check_loads_the_configuration(repo: Path) -> None:
    """A new user's story: a broken .gate.yaml made the commit hook's check raise `config-invalid`; they fixed the
    file and the next check passed, but every brief still counted the flag (an event flag, left only by `--ack`). A
    check that loads the configuration resolves the flags of earlier checks that could not: the brief counts no flag
    (its line of problems resolved names it) and `gate flags` shows none."""
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / ".gate.yaml").write_text("handoff: [\n")
    (repo / "README").write_text("more\n")
    git(repo, "add", "README", ".gate.yaml")
    hook = subprocess.run(["git", "commit", "-q", "-m", "more"], cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert hook.returncode != 0 and "gate: .gate.yaml:1: invalid YAML" in hook.stderr, hook.stderr
    [raised] = flag_records(repo / ".git")
    assert (raised["reason"], raised["command"]) == ("config-invalid", "gate check")
    assert f"{raised['id']} [config-invalid]" in run_gate(repo, "flags").stdout
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    git(repo, "add", ".gate.yaml")
    passed = run_gate(repo, "check")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    section = brief_flags(repo)
    assert "No unacknowledged flags." in section and "[config-invalid]" not in section, section
    assert "resolved (config-invalid ×1)" in section, section
    assert run_gate(repo, "flags").stdout == "no unacknowledged flags\n"
    [resolved] = flag_records(repo / ".git", "resolved")
    assert (resolved["id"], resolved["resolved"]["command"]) == (raised["id"], "gate check")


def test_a_check_that_loads_the_configuration_ends_only_the_flags_about_it(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that loads the configuration ends the `config-invalid` flags of every run that could not load it (a
    check, a session's start hook, the doctor's remote probe: each flag says what it is about), and no other:
    `gate install-hooks --agent claude`'s, about a harness's file, stays; so do the doctor's own finding (a `doctor`
    flag, a clean doctor's to end) and a flag raised by a run that began after the passing check."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text("{not json")
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 3
    (repo / ".gate.yaml").write_text("handoff: [\n")
    assert run_gate(repo, "doctor").returncode == 1  # its config check: FIX
    assert run_gate(repo, "doctor", "--remote", "origin").returncode == 3
    assert GATE_BIN
    start = subprocess.run([GATE_BIN, "brief", "--format", "claude"], cwd=repo, capture_output=True, text=True,
                           input=json.dumps({"session_id": "s1", "hook_event_name": "SessionStart"}), timeout=60)
    assert start.returncode == 0 and "The gate cannot run here: .gate.yaml:1" in start.stdout
    assert run_gate(repo, "check").returncode == 3
    assert sorted((r["reason"], r["command"], r["count"]) for r in flag_records(repo / ".git")) == [
        ("config-invalid", "gate doctor --remote origin", 3),  # the start hook's and the check's, alike, counted in it
        ("config-invalid", "gate install-hooks --agent claude", 1), ("doctor", "gate doctor", 1)]
    (repo / ".gate.yaml").unlink()
    real = flags.resolve_event

    def meanwhile(*args: object, **kwargs: Any) -> list[str]:  # a check begun after this one could not load it
        flags.raise_flag(discover(repo, {}), "config-invalid", ".gate.yaml: raised meanwhile", command="gate check",
                         exit_code=3, about={"input": "configuration"})
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(flags, "resolve_event", meanwhile)
    code, _, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0, err
    left = {(r["reason"], r["command"]): r["message"] for r in flag_records(repo / ".git")}
    assert sorted(left) == [("config-invalid", "gate check"), ("config-invalid", "gate install-hooks --agent claude"),
                            ("doctor", "gate doctor")]
    assert left[("config-invalid", "gate check")] == ".gate.yaml: raised meanwhile"
    assert ".claude/settings.json: not valid JSON" in left[("config-invalid", "gate install-hooks --agent claude")]


def test_a_project_schema_flag_ends_only_when_handoff_structure_passes_with_it(repo: Path) -> None:
    """A `config-invalid` flag raised because the project schema (handoff.schema) could not be used is the schema's:
    a check that loads the configuration but skips handoff-structure, or judges another file, leaves it; a check of
    the hand-over whose handoff-structure passes with that schema ends it. The two are told apart by what the flag
    records, not by its text: a schema that is .gate.yaml itself fails with a message naming .gate.yaml."""
    (repo / ".gate.yaml").write_text("handoff:\n  schema: .gate.yaml\n")  # YAML, so no JSON schema
    unusable = run_gate(repo, "check")
    assert unusable.returncode == 3 and unusable.stderr.startswith("gate: .gate.yaml:1: invalid JSON"), unusable.stderr
    [raised] = flag_records(repo / ".git")
    assert run_gate(repo, "check", "--skip", "handoff-structure").returncode == 0  # the configuration loads
    assert [r["id"] for r in flag_records(repo / ".git")] == [raised["id"]]
    (repo / ".gate.yaml").write_text('{"handoff": {"schema": ".gate.yaml"}}\n')  # JSON: a schema asking nothing
    (repo / "other.md").write_text((repo / "HANDOFF.md").read_text())
    assert run_gate(repo, "check", "other.md").returncode == 0  # not the configured hand-over
    assert [r["id"] for r in flag_records(repo / ".git")] == [raised["id"]]
    passed = run_gate(repo, "check")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert flag_records(repo / ".git") == []
    assert [r["id"] for r in flag_records(repo / ".git", "resolved")] == [raised["id"]]


def test_a_flag_about_a_file_that_is_gone_is_resolved_by_the_next_brief(repo: Path) -> None:
    """Issue 27: `gate check scratch.md` of a scratch file left a flag about it that no check could ever resolve
    once the file was deleted; the next brief resolves it (and says nothing of it). A flag of the configured
    hand-over, whose file is there, stays."""
    scratch = repo / "scratch.md"
    scratch.write_text("# Scratch\n\n- [x] a checked item\n")
    assert run_gate(repo, "check", "scratch.md").returncode == 1
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "- [x] done here too\n")
    assert run_gate(repo, "check").returncode == 1
    handoff = str((repo / "HANDOFF.md").resolve())

    def judged(records: list[dict[str, object]]) -> list[list[str]]:
        return sorted(r["scope"]["files"] for r in records)  # type: ignore[index]

    before = judged(flag_records(repo / ".git"))
    assert [str(scratch.resolve())] in before and [handoff] in before
    scratch.unlink()
    brief = run_gate(repo, "brief")
    assert brief.returncode == 0, brief.stderr
    assert judged(flag_records(repo / ".git")) == [f for f in before if f == [handoff]]
    assert "scratch.md" not in brief.stdout.split("## 2.")[0]
    resolved = list((repo / ".git" / "gate" / "flags" / "resolved").glob("*.json"))
    assert len(resolved) == before.count([str(scratch.resolve())]) and all("scratch.md" in p.read_text()
                                                                         for p in resolved)


def test_a_flag_the_check_cannot_move_stops_no_check(repo: Path) -> None:
    """The disk of the state dir is full (RLIMIT_FSIZE stands in for it, in the child only) while the `config-invalid`
    flag of a since-mended .gate.yaml is open: the check that loads the configuration cannot move the flag to
    flags/resolved/. It says so and judges as it would have: the commit hook does not refuse a commit its gates pass
    for the bookkeeping of an old flag, which stays open for a later check."""
    import resource

    (repo / ".gate.yaml").write_text("handoff: [\n")
    assert run_gate(repo, "check").returncode == 3
    (repo / ".gate.yaml").unlink()
    [raised] = flag_records(repo / ".git")

    def full() -> None:  # any file write past 300 bytes fails with EFBIG: a flag moved to flags/resolved/ is more
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    assert GATE_BIN
    proc = subprocess.run([GATE_BIN, "check"], cwd=repo, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, preexec_fn=full)
    assert proc.returncode == 0 and proc.stdout.startswith("gate check: passed"), proc.stdout + proc.stderr
    assert "gate: could not resolve flags: cannot write" in proc.stderr and "Traceback" not in proc.stderr
    assert [r["id"] for r in flag_records(repo / ".git")] == [raised["id"]]
    assert run_gate(repo, "check").returncode == 0  # the disk has room again: the flag ends
    assert flag_records(repo / ".git") == []

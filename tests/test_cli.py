"""The `gate` command's contract: output shapes, selection of gates, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call_gate, flag_records, git, handoff_text, run_gate

from gates.checks import GATES
from gates.infra import schemas


def _break(repo: Path) -> None:
    text = handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done").replace("## Verified\n", "")
    (repo / "HANDOFF.md").write_text(text)


def test_text_output_is_one_line_per_finding_then_a_summary(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "HANDOFF.md:11: [handoff-no-checked-items] checked item 'done' — completed items move to ARCHIVE.md",
        "HANDOFF.md:15: [handoff-structure] missing section '## Verified' — add it before '## Assumed'",
        "gate check: failed: 2 errors (handoff-no-checked-items: 1, handoff-structure: 1; 9 gates on HANDOFF.md)",
    ]
    assert proc.stderr == ""


def test_json_output_follows_its_schema(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check", "--format", "json")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert schemas.validate(schemas.load("check-result"), document, {}) == []
    assert document["exit_code"] == 1 and document["ok"] is False
    assert document["counts"] == {"error": 2, "warning": 0}
    assert document["findings"][0] == {
        "path": "HANDOFF.md", "line": 11, "gate": "handoff-no-checked-items", "severity": "error",
        "message": "checked item 'done' — completed items move to ARCHIVE.md",
    }


def test_json_output_when_the_check_cannot_run(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("bogus: 1\n")
    proc = run_gate(repo, "check", "--format", "json")
    assert proc.returncode == 3
    document = json.loads(proc.stdout)
    assert schemas.validate(schemas.load("check-result"), document, {}) == []
    allowed = "append_only, archive, claims, closeout, fresh, gates, handoff, heartbeat, locks, mailbox, records, version"
    assert document["error"] == {"reason": "config-invalid",
                                 "message": f".gate.yaml:1: unknown key 'bogus' (allowed: {allowed})"}


def test_only_and_skip_select_gates(repo: Path) -> None:
    _break(repo)
    only = run_gate(repo, "check", "--only", "handoff-structure")
    assert only.returncode == 1 and "handoff-no-checked-items" not in only.stdout.splitlines()[0]
    everything = ",".join(GATES)
    skip = run_gate(repo, "check", "--skip", everything)
    assert skip.returncode == 0
    assert skip.stdout == "gate check: passed (0 gates on HANDOFF.md)\n"


def test_only_runs_a_gate_that_config_turned_off(repo: Path) -> None:
    _break(repo)
    (repo / ".gate.yaml").write_text("gates:\n  handoff-no-checked-items: false\n")
    plain = run_gate(repo, "check")
    assert "handoff-no-checked-items" not in plain.stdout
    named = run_gate(repo, "check", "--only", "handoff-no-checked-items")
    assert named.returncode == 1 and "[handoff-no-checked-items]" in named.stdout


@pytest.mark.parametrize("args", [["check", "--only", "nope"], ["check", "--format", "xml"], ["frobnicate"], [],
                                  ["schema", "nope"], ["flags", "--ack", "a", "--ack-all"]])
def test_usage_errors_are_exit_2_and_write_no_flag(repo: Path, args: list[str]) -> None:
    proc = run_gate(repo, *args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip()
    assert flag_records(repo / ".git") == []


def test_files_named_on_the_command_line_are_checked_instead(repo: Path) -> None:
    draft = repo / "drafts" / "NEXT.md"
    draft.parent.mkdir()
    draft.write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="  - [X] nested done"))
    proc = run_gate(repo / "drafts", "check", "NEXT.md")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("drafts/NEXT.md:11: [handoff-no-checked-items]")


def test_python_dash_m_gates_is_the_same_command(repo: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gates", "check"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("gate check: passed")
    version = subprocess.run([sys.executable, "-m", "gates", "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("handoff-gate ")


def test_schema_prints_each_shipped_schema(repo: Path) -> None:
    for name in schemas.NAMES:
        proc = run_gate(repo, "schema", name)
        assert proc.returncode == 0
        assert json.loads(proc.stdout) == schemas.load(name)


def test_config_prints_the_effective_config(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 42\n")
    proc = run_gate(repo, "config", "--format", "json")
    effective = json.loads(proc.stdout)
    assert effective["handoff"]["max_lines"] == 42
    assert effective["handoff"]["path"] == "HANDOFF.md"
    yaml_out = run_gate(repo, "config")
    assert yaml_out.stdout.startswith("# effective configuration (from .gate.yaml)\n")
    assert "  max_lines: 42\n" in yaml_out.stdout


def test_interrupt_is_exit_130_without_a_flag(repo: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from gates.checks import handoff_structure

    def interrupted(ctx: object) -> list[object]:
        raise KeyboardInterrupt

    monkeypatch.setattr(handoff_structure, "check", interrupted)
    code, _, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 130 and err == "gate: interrupted\n"
    assert flag_records(repo / ".git") == []


def test_in_process_and_subprocess_agree(repo: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _break(repo)
    code, out, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    proc = run_gate(repo, "check")
    assert (code, out, err) == (proc.returncode, proc.stdout, proc.stderr)


def test_the_command_table_names_every_command() -> None:
    from gates.cli import COMMANDS, build_parser

    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None and set(choices) == COMMANDS


def test_elsewhere_than_posix_the_command_fails_clearly(tmp_path: Path) -> None:
    # What a Windows user meets, as near as Linux can show it: no fcntl, os.name "nt".
    # (pathlib cannot be imported under a faked os.name, so the modules are imported first.)
    script = ("import os, sys; sys.modules['fcntl'] = None\n"
              "from gates.cli import main\nos.name = 'nt'\nsys.exit(main(['check']))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr == "gate: handoff-gate runs on Linux and macOS only (POSIX file semantics are required)\n"

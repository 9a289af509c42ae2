"""The `gate` command's contract (gates/cli.py, main.py): usage errors, exit codes, the error boundary, signals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call_gate, flag_records, run_gate


@pytest.mark.parametrize("args", [["check", "--only", "nope"], ["check", "--format", "xml"], ["frobnicate"], [],
                                  ["schema", "nope"], ["flags", "--ack", "a", "--ack-all"]])
def test_usage_errors_are_exit_2_and_write_no_flag(repo: Path, args: list[str]) -> None:
    proc = run_gate(repo, *args, process=True)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip()
    assert flag_records(repo / ".git") == []


def test_python_dash_m_gates_is_the_same_command(repo: Path) -> None:
    proc = subprocess.run([sys.executable, "-I", "-m", "gates", "check"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("gate check: passed")
    version = subprocess.run([sys.executable, "-I", "-m", "gates", "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("handoff-gate ")


def test_interrupt_is_exit_130_without_a_flag(repo: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from gates.checks import handoff_structure

    def interrupted(ctx: object) -> list[object]:
        raise KeyboardInterrupt

    monkeypatch.setattr(handoff_structure, "check", interrupted)
    code, _, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 130 and err == "gate: interrupted\n"
    assert flag_records(repo / ".git") == []


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


def test_outside_a_repository_one_stderr_line(tmp_path: Path) -> None:
    for argv in (["check"], ["brief"], ["claim"], ["stamp"], ["flags"]):
        proc = run_gate(tmp_path, *argv, process=True)
        assert proc.returncode == 3, argv
        assert len(proc.stderr.splitlines()) == 1, (argv, proc.stderr)
        assert proc.stderr.startswith(f"gate: not inside a git work tree ({tmp_path}): "), proc.stderr


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


def test_every_option_and_positional_has_help() -> None:
    """Issue 27: `gate X --help` explains every option and positional of every command."""
    import argparse

    from gates import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"gate {name} {'/'.join(action.option_strings) or action.dest}"
               for name, command in sub.choices.items() for action in command._actions
               if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS
               and not (action.help or "").strip()]
    assert missing == []
    assert len(sub.choices) == len(cli.COMMANDS)


@pytest.mark.parametrize(("argv", "said"), [
    (["chek"], "invalid choice: 'chek' — did you mean 'check'?"),
    (["check", "--formt", "json"], "unrecognized arguments: --formt (did you mean --format?)"),
    (["initt"], "did you mean 'init'?"),
])
def test_a_near_miss_names_what_was_meant(repo: Path, argv: list[str], said: str) -> None:
    proc = run_gate(repo, *argv, process=True)
    assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_init_help_says_it_never_overwrites(repo: Path) -> None:
    assert "never overwrites" in " ".join(run_gate(repo, "init", "--help", process=True).stdout.split())


def test_one_boundary_two_policies_the_same_bug_in_the_cli_the_stop_hook_and_the_start_hook(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: one error boundary (invocation.guarded) sorts a failure; the command line's policy exits 4 with a
    flag, the harness hooks' let-through policy exits 0, says why where the harness reads it, and flags it. The
    same bug (the close-out's one definition of closed out raising) meets all three."""
    import io
    import json

    from gates.domain import sessions

    def broken(*args: object, **kwargs: object) -> object:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(sessions, "closure", broken)
    code, out, err = call_gate(repo, "closeout", "--format", "text", capsys=capsys, monkeypatch=monkeypatch)
    assert (code, out) == (4, "") and err.startswith("gate: internal error (a bug in handoff-gate")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"session_id": "s-1", "stop_hook_active": False})))
    code, out, err = call_gate(repo, "closeout", "--format", "claude", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "stop unchecked: internal error: ZeroDivisionError: boom" in json.loads(out)["systemMessage"]
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"session_id": "s-1", "source": "startup"})))
    code, out, err = call_gate(repo, "brief", "--format", "claude", capsys=capsys, monkeypatch=monkeypatch)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and context == ("# Session brief\n\nThe gate cannot run here: internal error: ZeroDivisionError: "
                                     "boom\n")
    assert "ZeroDivisionError" in err
    records = flag_records(repo / ".git")
    assert sorted((r["reason"], r["count"]) for r in records) == [("closeout-missing", 1), ("internal-error", 2)]

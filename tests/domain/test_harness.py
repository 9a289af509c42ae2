"""Every harness format: the exact envelope (golden), valid against the shipped schema written from the harness's
docs, and a driver that runs the installed hook command the way the harness does (sh -c, JSON on stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GATE_BIN, git

from gates.domain import agents, harness
from gates.infra import validation


def _valid(name: str, document: object) -> None:
    schema = harness.schema(name)
    assert validation.check_schema(schema) is None
    assert validation.validate(schema, document, {}) == [], (name, document)


def test_golden_start_envelopes() -> None:
    assert harness.start_envelope("claude", "hi") == \
        '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hi"}}'
    assert harness.start_envelope("codex", "hi") == \
        '{"continue": true, "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hi"}}'
    assert harness.start_envelope("gemini", "hi") == '{"hookSpecificOutput": {"additionalContext": "hi"}}'
    assert harness.start_envelope("copilot", "hi") == '{"additionalContext": "hi"}'
    for fmt, name in harness.START_SCHEMA.items():
        _valid(name, json.loads(harness.start_envelope(fmt, "x" * 5000)))
    assert validation.validate(harness.schema("codex-session-start"), {"continue": True}, {})  # the shape Codex rejects
    assert validation.validate(harness.schema("claude-session-start"), json.loads(
        harness.start_envelope("claude", "x" * 10001)), {})  # over the cap


def test_golden_stop_envelopes() -> None:
    assert harness.block_envelope("claude", "do it") == '{"decision": "block", "reason": "do it"}'
    assert harness.block_envelope("codex", "do it") == '{"decision": "block", "reason": "do it"}'
    assert harness.block_envelope("gemini", "do it") == '{"decision": "deny", "reason": "do it"}'
    assert harness.block_envelope("copilot", "do it") == '{"decision": "block", "reason": "do it"}'
    assert harness.block_envelope("cursor", "do it") == '{"followup_message": "do it"}'
    assert json.loads(harness.block_envelope("codex", "  "))["reason"].strip()  # never an empty reason
    assert [harness.allow_envelope(f) for f in ("claude", "codex", "gemini", "copilot", "cursor")] == \
        ["", "{}", "{}", "{}", "{}"]
    for fmt, name in harness.STOP_SCHEMA.items():
        _valid(name, json.loads(harness.block_envelope(fmt, "step 1")))
        _valid(name, json.loads(harness.allow_envelope(fmt) or "{}"))
    bad = {"decision": "block", "reason": "x", "hookSpecificOutput": {"hookEventName": "Stop"}}
    assert validation.validate(harness.schema("claude-stop"), bad, {})
    assert validation.validate(harness.schema("codex-stop"), {"decision": "block", "reason": " "}, {})


def _stdin(data: bytes | None, **kw: object) -> harness.HookInput:
    read, write = os.pipe()
    if data is not None:
        os.write(write, data)
        os.close(write)
    with os.fdopen(read, "rb") as stream:
        try:
            return harness.read_stdin(stream, **kw)  # type: ignore[arg-type]
        finally:
            if data is None:
                os.close(write)


def test_stdin_is_read_without_blocking() -> None:
    assert _stdin(b'{"session_id": "a", "source": "compact"}').source == "compact"
    assert _stdin(b'\xef\xbb\xbf{"loop_count": 2, "status": "completed"}').loop_count == 2  # Cursor's BOM
    assert _stdin(b"").problem is None and not _stdin(b"").given
    started = time.monotonic()
    never = _stdin(None, seconds=0.3)  # a pipe nobody writes and nobody closes
    assert time.monotonic() - started < 2 and never.data == {} and "no input" in str(never.problem)
    assert "not JSON" in str(_stdin(b"{nope").problem)
    assert "not an object" in str(_stdin(b"[1]").problem)
    assert "cap" in str(_stdin(b" " * 70 + b"{}", limit=64).problem)
    assert _stdin(b'{"sessionId": "cop\\u202eilot"}').session == "cop\\u202eilot"  # Copilot's key, escaped


DEEP = b'{"a":' + b"[" * 20_000 + b"]" * 20_000 + b"}"  # past any parser's stack, and ending in `}`


def test_deeply_nested_input_is_not_json_whether_the_pipe_is_closed_or_kept_open() -> None:
    """The attack of adversarial review adv1, 08, at its reader: nesting that overflows the JSON parser was a
    RecursionError out of the probe that asks whether the input is complete, outside every guard."""
    assert "not JSON: invalid JSON: nested too deeply" in str(_stdin(DEEP).problem)
    read, write = os.pipe()
    os.write(write, DEEP)  # and the harness keeps the pipe open: the probe ends the read, not the time limit
    started = time.monotonic()
    try:
        with os.fdopen(read, "rb") as stream:
            kept_open = harness.read_stdin(stream, seconds=10)
    finally:
        os.close(write)
    assert time.monotonic() - started < 5 and "nested too deeply" in str(kept_open.problem), kept_open


@pytest.mark.parametrize("command", ["brief", "closeout"])
def test_deeply_nested_hook_input_still_exits_0_and_says_why(repo: Path, command: str) -> None:
    """The attack of adversarial review adv1, 08, end to end: the installed command exited 4 with a traceback and
    nothing on stdout. A harness format exits 0, hands over its envelope and flags why the input was unreadable."""
    before = (repo / "HANDOFF.md").read_bytes()
    proc = subprocess.run([str(GATE_BIN), command, "--format", "claude"], cwd=repo,
                          input=DEEP, capture_output=True, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == b"" or isinstance(json.loads(proc.stdout), dict)
    if command == "brief":
        context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "input could not be read: the input is not JSON: invalid JSON: nested too deeply" in context, context
    flagged = [json.loads(path.read_text()) for path in (repo / ".git" / "gate" / "flags").glob("*.json")]
    assert any(flag["reason"] == "input-unreadable" and "nested too deeply" in flag["message"] for flag in flagged)
    assert (repo / "HANDOFF.md").read_bytes() == before


@pytest.mark.parametrize("command", ["brief", "closeout"])
def test_a_hook_input_reader_that_raises_never_stops_the_hook(repo: Path, command: str,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The second half of adv1 08: the harness's input was read before the hook's boundary, so a reader that raised
    (any bug in it, whatever the input) ended the hook with a traceback, exit 4. It is read inside: the hook exits 0,
    hands over its envelope, and flags why its input could not be read."""
    from conftest import call_gate

    def broken(*args: object, **kwargs: object) -> harness.HookInput:
        raise RuntimeError("a reader's bug")

    monkeypatch.setattr(harness, "read_stdin", broken)
    code, out, err = call_gate(repo, command, "--format", "claude", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "Traceback" not in err, err
    if command == "brief":
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert ("input could not be read: stdin could not be read: internal error: RuntimeError: a reader's bug"
                in context), context
    flagged = [json.loads(path.read_text()) for path in (repo / ".git" / "gate" / "flags").glob("*.json")]
    assert any(flag["reason"] == "input-unreadable" and "a reader's bug" in flag["message"] for flag in flagged)


def test_one_event_time_from_both_of_copilots_inputs() -> None:
    """Copilot CLI gives its own hook the event time as milliseconds and the `.claude/settings.json` hook of the same
    stop as UTC text (both captured from 1.0.102): the two are one time; anything else is none."""
    own = harness.HookInput({"sessionId": "s", "timestamp": 1796302175685})
    claude = harness.HookInput({"session_id": "s", "timestamp": "2026-12-03T12:49:35.685Z"})
    assert own.event_ms == claude.event_ms == 1796302175685
    for odd in (True, -5, "2026-12-03T12:49:35", "yesterday", None, [1]):
        assert harness.HookInput({"timestamp": odd}).event_ms is None
    with open(os.devnull, "rb") as null:
        assert harness.read_stdin(null).data == {}
    class Closed:
        def fileno(self) -> int:
            raise ValueError("I/O operation on closed file")
    assert harness.read_stdin(Closed()).data == {}


def _sh(repo: Path, command: str, payload: object | None) -> subprocess.CompletedProcess[str]:
    """What a harness does: run the configured command through a shell, write the JSON, read stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith(("GIT_AUTHOR", "GIT_COMMITTER",
                                                                                         "GIT_CONFIG"))}
    return subprocess.run(["sh", "-c", command], cwd=repo, input=None if payload is None else json.dumps(payload),
                          capture_output=True, text=True, timeout=60, env=env)


START_INPUT: dict[str, dict[str, object]] = {
    "claude": {"session_id": "c-1", "transcript_path": "/tmp/t.jsonl", "cwd": "", "hook_event_name": "SessionStart",
               "source": "startup"},
    "codex": {"session_id": "x-1", "transcript_path": None, "cwd": "", "hook_event_name": "SessionStart",
              "source": "resume", "model": "gpt"},
    "gemini": {"session_id": "g-1", "transcript_path": "/tmp/g.json", "cwd": "", "hook_event_name": "SessionStart",
               "timestamp": "2026-01-01T00:00:00Z", "source": "startup"},
}
STOP_INPUT = {
    "claude": {"session_id": "c-1", "transcript_path": "/tmp/t.jsonl", "cwd": "", "hook_event_name": "Stop",
               "stop_hook_active": False},
    "codex": {"session_id": "x-1", "turn_id": "t1", "cwd": "", "hook_event_name": "Stop", "stop_hook_active": False,
              "last_assistant_message": "done"},
    "gemini": {"session_id": "g-1", "cwd": "", "hook_event_name": "AfterAgent", "stop_hook_active": False,
               "prompt": "p", "prompt_response": "r", "timestamp": "2026-01-01T00:00:00Z"},
    "copilot": {"timestamp": 1704614750000, "cwd": "", "sessionId": "p-1", "transcriptPath": "/tmp/p.jsonl",
                "stopReason": "end_turn"},
    "cursor": {"conversation_id": "k-1", "generation_id": "g", "status": "completed", "loop_count": 0,
               "hook_event_name": "stop"},
}


@pytest.mark.parametrize("fmt", sorted(START_INPUT))
def test_start_driver(repo: Path, fmt: str) -> None:
    payload = {**START_INPUT[fmt], "cwd": str(repo)}
    _valid("hook-input", payload)
    proc = _sh(repo, agents.command_line("brief", fmt), payload)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)  # stdout is exactly one JSON document, nothing else
    assert proc.stdout.count("\n") == 1
    _valid(harness.START_SCHEMA[fmt], document)
    context = document["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Last session: ") and "## 4. Hand-over" in context
    budget = harness.START_BUDGET[fmt]
    assert budget is not None and len(context) <= budget
    entries = [json.loads(line) for line in (repo / ".git" / "gate" / "journal.jsonl").read_text().splitlines()]
    assert entries[-1]["action"] == "session-brief"
    assert entries[-1]["details"] | {} == {**entries[-1]["details"], "harness": fmt,
                                           "session": payload["session_id"], "source": payload["source"]}


@pytest.mark.parametrize("payload", [None, "{broken", "[]"])
def test_start_driver_broken_input_still_briefs_and_flags(repo: Path, payload: str | None) -> None:
    command = agents.command_line("brief", "claude")
    feed: dict[str, object] = {"input": payload} if payload is not None else {"stdin": subprocess.DEVNULL}
    proc = subprocess.run(["sh", "-c", command], cwd=repo, capture_output=True, text=True, timeout=60,
                          **feed)  # type: ignore[call-overload]
    assert proc.returncode == 0
    assert "## 1. Flags" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    flagged = list((repo / ".git" / "gate" / "flags").glob("*-input-unreadable-*.json"))
    assert bool(flagged) == (payload is not None)


def test_compact_start_reinjects_the_handover(repo: Path) -> None:
    proc = _sh(repo, agents.command_line("brief", "claude"), {"session_id": "c-1", "source": "compact"})
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[1].startswith("The context was compacted")
    assert "### Current Target\nBuild the thing." in context


def test_codex_budget_cuts_the_handover_first_and_keeps_every_flag_reason(repo: Path) -> None:
    from gates.domain import flags
    from gates.infra.git import discover

    found = discover(repo, {})
    for i in range(40):
        flags.raise_flag(found, sorted(flags.EVENT_REASONS)[i % 10], f"problem {i} " + "y" * 400, command="gate",
                         exit_code=3)
    proc = _sh(repo, agents.command_line("brief", "codex"), {"session_id": "x", "source": "startup"})
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 6000 and "the full brief is in " in context and "### Current Target" not in context
    assert "40 unacknowledged flags for 10 reasons" in context and "From HANDOFF.md" in context
    assert all(f"- [{reason}] 4 flags" in context for reason in sorted(flags.EVENT_REASONS)[:10])


@pytest.mark.parametrize("fmt", sorted(STOP_INPUT))
def test_stop_driver_blocks_then_lets_through(repo: Path, fmt: str) -> None:
    (repo / "work.txt").write_text("work\n")
    git(repo, "add", "work.txt")
    git(repo, "commit", "-q", "--no-verify", "-m", "work that the hand-over does not describe")
    payload = {**STOP_INPUT[fmt], "cwd": str(repo)}
    command = agents.command_line("closeout", fmt)
    proc = _sh(repo, command, payload)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    _valid(harness.STOP_SCHEMA[fmt], document)
    reason = document.get("reason") or document.get("followup_message")
    assert "1 commit(s) after its Meta ref" in reason and "gate stamp" in reason
    assert document == json.loads(harness.block_envelope(fmt, reason))
    # close out as a session would, then the stop goes through with the harness's allow
    assert subprocess.run([sys.executable, "-m", "gates", "stamp"], cwd=repo, capture_output=True).returncode == 0
    git(repo, "add", "HANDOFF.md")
    git(repo, "commit", "-q", "--no-verify", "-m", "close-out")
    again = _sh(repo, command, {**payload, "stop_hook_active": True, "loop_count": 1} if fmt in ("claude", "cursor")
                else payload)
    assert again.returncode == 0 and again.stdout.strip() == harness.allow_envelope(fmt)

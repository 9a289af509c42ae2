"""Issue 25, class 4: a committed `handoff.schema` that takes exponential time (a ReDoS `pattern`, anyOf branches
that refer to one another) ends `gate check` within its bound with the one config error, instead of hanging every
commit: Python's `re` cannot be interrupted by a signal, so the schema is applied in a child interpreter."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_all, flag_records, git, handoff_text, run_gate

from gates.infra import validation

EVIL_TEXT = "a" * 41 + "!"  # ~2^41 steps for ^(a|a)*$ in Python's backtracking re: hours


def _redos() -> dict[str, Any]:
    return {"type": "object", "properties": {"sections": {"type": "array", "items": {
        "type": "object", "properties": {"items": {"type": "array", "items": {
            "type": "object", "properties": {"text": {"type": "string", "pattern": "^(a|a)*$"}}}}}}}}}


def _anyof_bomb(depth: int = 30) -> dict[str, Any]:
    """Each level is anyOf two branches that both go one level down and then fail at the end: 2^depth paths."""
    defs: dict[str, Any] = {f"d{depth}": {"type": "integer"}}
    for level in range(depth - 1, -1, -1):
        down = {"$ref": f"#/$defs/d{level + 1}"}
        defs[f"d{level}"] = {"anyOf": [{"allOf": [down, {"minLength": 0}]}, {"allOf": [down, {"maxLength": 10**9}]}]}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def _commit_hostile(repo: Path, schema: dict[str, Any]) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  schema: bomb.json\n")
    (repo / "bomb.json").write_text(json.dumps(schema))
    path = repo / "HANDOFF.md"
    path.write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads=f"- [ ] {EVIL_TEXT}"))
    commit_all(repo, "a hostile project schema")


def _snapshot(repo: Path) -> dict[str, bytes]:
    files = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(repo).parts}
    files["HEAD"] = git(repo, "rev-parse", "HEAD").encode()
    return files


@pytest.mark.parametrize("schema", [_redos(), _anyof_bomb()], ids=["redos-pattern", "anyof-bomb"])
def test_a_schema_that_takes_exponential_time_is_the_config_error_within_the_bound(
        repo: Path, schema: dict[str, Any]) -> None:
    _commit_hostile(repo, schema)
    before = _snapshot(repo)
    started = time.monotonic()
    proc = run_gate(repo, "check", timeout=120, env={**os.environ, "GATE_SCHEMA_SECONDS": "1"})
    took = time.monotonic() - started
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate: bomb.json: handoff.schema: checking the hand-over against "
                                                   "it took more than 1 s"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 60, took  # before: hours (the child is killed at the bound)
    assert "config-invalid" in [flag["reason"] for flag in flag_records(repo / ".git")]
    assert _snapshot(repo) == before


def test_the_bound_holds_in_process_and_leaves_no_child(tmp_path: Path) -> None:
    """`bounded` itself: the same hostile pattern, a short bound, an Unusable naming the bound, and the child that
    was still matching is gone (killed and reaped, not left spinning)."""
    started = time.monotonic()
    with pytest.raises(validation.Unusable, match=r"took more than 1 s"):
        validation.bounded(_redos(), {"sections": [{"items": [{"text": EVIL_TEXT}]}]}, {}, seconds=1)
    assert time.monotonic() - started < 30
    children = []  # this process's own: another test run on the machine may be in the middle of this very test
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                parent = int(handle.read().rpartition(b")")[2].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if parent == os.getpid() and b"gates.infra.validation import serve" in handle.read():
                    children.append(entry)
        except (OSError, ValueError, IndexError):
            continue
    assert children == [], children


def test_an_ordinary_schema_is_applied_as_before(tmp_path: Path) -> None:
    """The child answers what validation in the process answered: the same problems on the same lines."""
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}, "b": {"$ref": "#/$defs/n"}},
              "$defs": {"n": {"type": "integer"}}}
    instance = {"a": "y", "b": "two"}
    lines: dict[tuple[object, ...], int] = {("a",): 3, ("b",): 5}
    assert validation.bounded(schema, instance, lines) == validation.validate(schema, instance, lines) != []
    with pytest.raises(validation.Unusable, match=r"\$ref 'file:///x' names a document outside the schema"):
        validation.bounded({"$ref": "file:///x"}, {}, {})

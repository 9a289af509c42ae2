"""A committed `handoff.schema` whose `$ref` (or `$schema`) names something outside it: nothing is read, nothing is
fetched, nothing is quoted; the check ends with the one config error (exit 3, `config-invalid`, naming the key)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, call_gate, commit_all, flag_records, run_gate

CANARY = "sk-SCHEMA-REF-CANARY-4b1d"


def _with_schema(repo: Path, schema: dict[str, Any]) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  schema: strict.json\n")
    (repo / "strict.json").write_text(json.dumps(schema))
    commit_all(repo, "a project schema")


def _state_text(repo: Path) -> str:
    """Every byte the gate keeps under .git/gate (flags, journal, cache, brief), as text."""
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in (repo / ".git" / "gate").rglob("*") if p.is_file())


def _assert_config_error(proc_code: int, err: str, repo: Path) -> None:
    assert proc_code == 3, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate: strict.json: handoff.schema: "), err
    assert "Traceback" not in err
    assert "config-invalid" in [flag["reason"] for flag in flag_records(repo / ".git")]


def _outside_refs(tmp_path: Path) -> list[dict[str, object]]:
    secret = tmp_path / "outside" / "auth.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"OPENAI_API_KEY": CANARY, "properties": {"x": {"const": CANARY}}}))
    uri = secret.as_uri()
    return [
        {"properties": {"title": {"$ref": f"{uri}#/nope"}}},  # a pointer that misses: referencing quotes the document
        {"properties": {"title": {"$ref": uri}}},
        {"$ref": f"{uri}#/properties/x"},
        {"$id": secret.parent.as_uri() + "/", "properties": {"title": {"$ref": "auth.json"}}},  # relative to an $id
        {"properties": {"title": {"$ref": "../outside/auth.json"}}},  # relative to no base at all
        {"$defs": {"a": {"$dynamicAnchor": "a"}}, "properties": {"title": {"$dynamicRef": f"{uri}#a"}}},
        {"not": {"anyOf": [{"items": {"$ref": uri}}]}},  # deep inside, under a branch no hand-over reaches
    ]


def test_a_ref_to_a_file_outside_the_repository_is_never_read_or_quoted(repo: Path, tmp_path: Path) -> None:
    for schema in _outside_refs(tmp_path):
        _with_schema(repo, schema)
        proc = run_gate(repo, "check", timeout=60)
        _assert_config_error(proc.returncode, proc.stderr, repo)
        assert "names a document outside the schema" in proc.stderr, (schema, proc.stderr)
        brief = run_gate(repo, "brief", timeout=60)
        assert CANARY not in proc.stdout + proc.stderr + brief.stdout + brief.stderr, schema
        assert CANARY not in _state_text(repo), schema


def test_in_process_the_same_config_error(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _with_schema(repo, _outside_refs(tmp_path)[0])
    code, out, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    _assert_config_error(code, err, repo)
    assert CANARY not in out + err + _state_text(repo)


def test_a_ref_or_schema_url_is_never_fetched(repo: Path) -> None:
    """A listener on 127.0.0.1 that never answers: the check neither connects to it nor waits on it. Any connect
    would sit in the listener's accept queue after the gate exits; none is there."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/x.json"
        for schema in ({"$ref": url}, {"properties": {"title": {"$ref": url + "#/a"}}}, {"$schema": url},
                       {"$id": f"http://127.0.0.1:{listener.getsockname()[1]}/base/", "$ref": "other.json"}):
            _with_schema(repo, schema)
            proc = run_gate(repo, "check", timeout=60)  # a fetch would hang on the silent listener until this bound
            _assert_config_error(proc.returncode, proc.stderr, repo)
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()[0].close()  # a connection made by the check
            listener.setblocking(True)


def test_references_inside_the_schema_still_work(repo: Path) -> None:
    _with_schema(repo, {"$defs": {"short": {"type": "string", "maxLength": 3}},
                        "properties": {"title": {"$ref": "#/$defs/short"}}})
    proc = run_gate(repo, "check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "schema strict.json: title:" in proc.stdout + proc.stderr
    _with_schema(repo, {"$defs": {"any": {"type": "string"}}, "properties": {"title": {"$ref": "#/$defs/any"}},
                        "allOf": [{"$ref": "https://json-schema.org/draft/2020-12/schema"}]})  # a shipped metaschema
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_broken_or_looping_reference_is_the_config_error(repo: Path) -> None:
    for schema, why in (({"properties": {"title": {"$ref": "#/$defs/none"}}}, "points at nothing in the schema"),
                        ({"$ref": "#"}, "its references go round in a loop"),
                        ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
                         "its references go round in a loop"),
                        ({"$dynamicRef": "#nowhere"}, "names an anchor the schema does not have"),
                        ({"$schema": "urn:no-such-draft"}, "is not a JSON Schema draft jsonschema knows"),
                        ({"$schema": ["x"]}, "$schema is not a string")):
        _with_schema(repo, schema)
        proc = run_gate(repo, "check")
        _assert_config_error(proc.returncode, proc.stderr, repo)
        assert why in proc.stderr, (schema, proc.stderr)


def test_one_helper_makes_every_validator() -> None:
    """Only gates/infra/validation.py imports jsonschema or referencing, and it makes validators in one place
    (`_validator`, with a registry that retrieves nothing)."""
    imports = ("from jsonschema", "import jsonschema", "from referencing", "import referencing")
    for path in (ROOT / "gates").rglob("*.py"):
        if path != ROOT / "gates" / "infra" / "validation.py":
            assert not [line for line in path.read_text().splitlines() if line.strip().startswith(imports)], path
    text = (ROOT / "gates" / "infra" / "validation.py").read_text()
    assert text.count("cls(") == 1 and "cls(schema, format_checker=cls.FORMAT_CHECKER, registry=Registry())" in text

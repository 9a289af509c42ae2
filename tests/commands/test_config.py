"""`gate config` and `gate schema`: the effective configuration and the shipped schemas."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_gate

from gates.infra import schemas


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

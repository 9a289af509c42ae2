"""Renderers: the same check result as text or as JSON (schemas/check-result.schema.json)."""

from __future__ import annotations

import json
from collections import Counter

from gates import __version__
from gates.check import CheckResult
from gates.errors import GateError
from gates.findings import ERROR, WARNING


def summary(result: CheckResult) -> str:
    where = ", ".join(result.files)
    gates = f"{len(result.gates)} gate{'s' if len(result.gates) != 1 else ''}"
    if not result.findings:
        return f"gate check: passed ({gates} on {where})"
    counts = Counter(f.severity for f in result.findings)
    per_gate = Counter(f.gate for f in result.findings)
    verdict = "failed" if counts[ERROR] else "passed with warnings"
    parts = [f"{counts[ERROR]} error{'s' if counts[ERROR] != 1 else ''}"]
    if counts[WARNING]:
        parts.append(f"{counts[WARNING]} warning{'s' if counts[WARNING] != 1 else ''}")
    detail = ", ".join(f"{gate_id}: {n}" for gate_id, n in sorted(per_gate.items()))
    return f"gate check: {verdict}: {', '.join(parts)} ({detail}; {gates} on {where})"


def text(result: CheckResult) -> str:
    lines = [finding.render() for finding in result.findings]
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


def as_json(result: CheckResult | None, exit_code: int, error: GateError | None = None) -> str:
    findings = result.findings if result else []
    counts = Counter(f.severity for f in findings)
    document = {
        "version": 1,
        "tool": "handoff-gate",
        "tool_version": __version__,
        "command": "check",
        "exit_code": exit_code,
        "ok": exit_code == 0,
        "gates": result.gates if result else [],
        "files": result.files if result else [],
        "counts": {"error": counts[ERROR], "warning": counts[WARNING]},
        "findings": [f.to_json() for f in findings],
        "error": None if error is None else {"reason": error.reason, "message": error.render()},
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

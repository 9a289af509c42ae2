"""Records for the tests of the records-immutable and handoff-tables gates."""

from __future__ import annotations

from pathlib import Path

from conftest import run_gate


def record(repo: Path, title: str) -> tuple[Path, str]:
    proc = run_gate(repo, "record", "new", title)
    assert proc.returncode == 0, proc.stderr
    path = repo / proc.stdout.strip()
    record_id = path.read_text().splitlines()[1].removeprefix("id: ")
    assert path.name.startswith(record_id + "-")
    return path, record_id

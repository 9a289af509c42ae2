"""handoff-tables: the generated table regions match the records; `gate render` fixes them."""

from __future__ import annotations

from pathlib import Path

from conftest import run_gate
from records_helpers import record


def test_a_stale_table_is_detected_and_fixed_by_render(repo: Path) -> None:
    text = (repo / "HANDOFF.md").read_text().replace(
        "## Decisions\n", "## Decisions\n<!-- gate:table decisions -->\n_(none)_\n<!-- /gate:table -->\n")
    (repo / "HANDOFF.md").write_text(text)
    assert run_gate(repo, "check", "--only", "handoff-tables").returncode == 0
    _, record_id = record(repo, "A | pipe in the title")
    stale = run_gate(repo, "check", "--only", "handoff-tables")
    assert stale.returncode == 1
    assert "[handoff-tables] table 'decisions' is out of date (1 lines, 3 expected)" in stale.stdout
    assert stale.stdout.splitlines() == [
        "HANDOFF.md:14: [handoff-tables] table 'decisions' is out of date (1 lines, 3 expected): line 15 is '_(none)_', "
        "expected '| ID | Title | Status | Date |' — run `gate render` (`gate render --diff` shows all)",
        "gate check: failed: 1 error (handoff-tables: 1; 1 gate on HANDOFF.md in the work tree)",
    ]
    diff = run_gate(repo, "render", "--diff")
    assert f"+| {record_id} | A \\| pipe in the title | open |" in diff.stdout
    assert "_(none)_" in (repo / "HANDOFF.md").read_text()  # --diff writes nothing
    assert run_gate(repo, "render").returncode == 0
    assert run_gate(repo, "check", "--only", "handoff-tables").returncode == 0

"""`gate mailbox take`: print the work package, keep a copy, then clear the mailbox."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_gate


def test_mailbox_take_prints_and_clears(repo: Path) -> None:
    box = repo / "WORKPACKAGE.md"
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0  # no file: an empty mailbox
    box.write_text("# Work package\n\n## Goal\nShip.\n")
    bad = run_gate(repo, "check", "--only", "mailbox")
    assert bad.returncode == 1 and "it has no '## Plan' section" in bad.stdout
    assert bad.stdout.splitlines() == [
        *(f"WORKPACKAGE.md:1: [mailbox] neither the sentinel line ('No work package.') nor a work package: it has no "
          f"'## {section}' section — add it, or clear the file with `gate mailbox take`" for section in ("Plan", "Done when")),
        "gate check: failed: 2 errors (mailbox: 2; 1 gate on HANDOFF.md in the work tree)",
    ]
    package = "# Work package\n\n## Goal\nShip.\n\n## Plan\n1. do it\n\n## Done when\nshipped\n"
    box.write_text(package)
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0
    taken = run_gate(repo, "mailbox", "take")
    assert taken.returncode == 0 and taken.stdout == package
    assert box.read_text() == "No work package.\n"
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0
    assert run_gate(repo, "mailbox", "take").stdout == "the mailbox is empty: no work package\n"
    actions = [json.loads(line)["action"] for line in (repo / ".git/gate/journal.jsonl").read_text().splitlines()]
    assert actions == ["flag-raised", "flags-resolved", "mailbox-taken"]  # the mailbox flag resolved by its pass

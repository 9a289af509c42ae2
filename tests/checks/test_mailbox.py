"""mailbox: the work-package file is exactly its sentinel line, or a work package with every configured section.

More cases, each with its whole findings: tests/fixtures/mailbox/. Taking a package: tests/commands/test_mailbox.py.
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_gate

PASSED = "gate check: passed (1 gate on HANDOFF.md in the work tree)"


def test_no_file_the_sentinel_or_a_whole_package_pass_and_a_partial_one_is_named(repo: Path) -> None:
    box = repo / "WORKPACKAGE.md"
    assert run_gate(repo, "check", "--only", "mailbox").stdout.splitlines() == [PASSED]  # no file: an empty mailbox
    box.write_text("No work package.\n")
    assert run_gate(repo, "check", "--only", "mailbox").stdout.splitlines() == [PASSED]
    box.write_text("# Work package\n\n## Goal\nShip.\n\n## Plan\n1. do it\n")
    partial = run_gate(repo, "check", "--only", "mailbox")
    assert partial.returncode == 1
    assert partial.stdout.splitlines() == [
        "WORKPACKAGE.md:1: [mailbox] neither the sentinel line ('No work package.') nor a work package: it has no "
        "'## Done when' section — add it, or clear the file with `gate mailbox take`",
        "gate check: failed: 1 error (mailbox: 1; 1 gate on HANDOFF.md in the work tree)",
    ]
    box.write_text("# Work package\n\n## Goal\nShip.\n\n## Plan\n1. do it\n\n## Done when\nshipped\n")
    assert run_gate(repo, "check", "--only", "mailbox").stdout.splitlines() == [PASSED]


def test_the_configured_path_and_sections_are_the_ones_judged(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("mailbox:\n  path: INBOX.md\n  sections: [Goal]\n")
    (repo / "WORKPACKAGE.md").write_text("not a work package, and not the mailbox any more\n")
    (repo / "INBOX.md").write_text("# Work package\n\n## Goal\nShip.\n")
    assert run_gate(repo, "check", "--only", "mailbox").stdout.splitlines() == [PASSED]
    (repo / "INBOX.md").write_text("# Work package\n")
    proc = run_gate(repo, "check", "--only", "mailbox")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "INBOX.md:1: [mailbox] neither the sentinel line ('No work package.') nor a work package: it has no "
        "'## Goal' section — add it, or clear the file with `gate mailbox take`",
        "gate check: failed: 1 error (mailbox: 1; 1 gate on HANDOFF.md in the work tree)",
    ]

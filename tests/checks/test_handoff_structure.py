"""handoff-structure: messages a person can act on, each compared as a whole line (issue: true signals)."""

from __future__ import annotations

from pathlib import Path

from conftest import commit_all, git, init_repo, run_gate

STRUCTURE = "[handoff-structure"


def _structure_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if STRUCTURE in line]


def test_missing_sections_come_in_the_configured_order_each_with_where_it_goes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "HANDOFF.md").write_text("# Handoff\n")
    assert _structure_lines(run_gate(repo, "check").stdout) == [
        "HANDOFF.md:1: [handoff-structure] missing section '## Meta' — add it at the end, right after the title",
        "HANDOFF.md:1: [handoff-structure] missing section '## Current Target' — add it at the end, after '## Meta'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Open Threads' — add it at the end, after '## Current Target'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Decisions' — add it at the end, after '## Open Threads'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Dead Ends' — add it at the end, after '## Decisions'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Verified' — add it at the end, after '## Dead Ends'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Assumed' — add it at the end, after '## Verified'",
        "HANDOFF.md:1: [handoff-structure] missing section '## Key References' — add it at the end, after '## Assumed'",
    ]


def test_following_the_missing_section_advice_gives_a_file_in_order(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "README").write_text("x\n")
    head = commit_all(repo, "first")
    text = "# Handoff\n"
    (repo / "HANDOFF.md").write_text(text)
    for line in _structure_lines(run_gate(repo, "check").stdout):
        name = line.split("'## ", 1)[1].split("'", 1)[0]
        body = {"Meta": f"- ref: {head}\n- updated: 2026-12-01T08:00:00Z\n", "Current Target": "Ship it.\n"}.get(name, "")
        text += f"\n## {name}\n{body}"  # each at the end, in the order reported
    (repo / "HANDOFF.md").write_text(text)
    proc = run_gate(repo, "check", "--only", "handoff-structure")
    assert proc.returncode == 0 and _structure_lines(proc.stdout) == [], proc.stdout


def test_the_init_template_is_a_warning_until_replaced_and_a_violation_when_committed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "README").write_text("x\n")
    commit_all(repo, "first")
    assert run_gate(repo, "init").returncode == 0
    line = next(n for n, text in enumerate((repo / "HANDOFF.md").read_text().splitlines(), 1) if "gate:placeholder" in text)
    check = run_gate(repo, "check")
    assert check.returncode == 0
    assert (f"Not written yet: HANDOFF.md:{line} still holds `gate init`'s placeholder — write the real text there "
            "(a commit that carries it is refused).") in run_gate(repo, "brief").stdout.splitlines()
    assert _structure_lines(check.stdout) == [f"HANDOFF.md:{line}: [handoff-structure warning] placeholder text from "
                                              "`gate init` — replace it with the real text (and drop the marker)"]
    git(repo, "add", "-A")
    hook = run_gate(repo, "check")  # what the pre-commit hook sees: the hand-over is staged with the placeholder
    assert hook.returncode == 1
    assert _structure_lines(hook.stdout) == [f"HANDOFF.md:{line}: [handoff-structure] the commit being made carries the "
                                             "placeholder `gate init` wrote — write the real text in its place (and drop "
                                             "the marker) before committing the hand-over"]
    text = (repo / "HANDOFF.md").read_text().replace(
        "Replace this line with what is being worked on now, in one sentence. <!-- gate:placeholder -->", "Ship v1.")
    (repo / "HANDOFF.md").write_text(text)
    git(repo, "add", "-A")
    assert _structure_lines(run_gate(repo, "check").stdout) == []
    assert "Not written yet" not in run_gate(repo, "brief").stdout

"""`gate adopt`: an existing hand-over file of its own shape, taken under the gate as it is (issue 27).

The three files in tests/data/adopt/ have the shapes public hand-overs have: a `# Handoff` with its own section
names; no title at all, a preamble and section names with dashes; a long title, a preamble, `###` subsections,
tables and code fences. Each is adopted and then passes `gate check` as configured, with every line it had.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, call_gate, commit_all, git, run_gate

DATA = ROOT / "tests" / "data" / "adopt"
SHAPES = {  # file -> (title, sections after Meta, target)
    "task-and-steps.md": ("Handoff", ["Current Task", "Key Decisions", "Open Questions", "Verification", "Next Steps"],
                          "Current Task"),
    "no-title.md": ("Handoff", ["Checkpoint", "Completed", "External blocker — do not modify automatically",
                                "Next session — Stage D", "Do not"], "Next session — Stage D"),
    "long-title-subsections.md": ("Rebrand Handoff (old → New)",
                                  ["Current state", "Decisions (final — do not revisit without asking)",
                                   "How to run things", "Open TODOs and uncertainties"], "Current state"),
}


def _their_repo(tmp_path: Path, name: str) -> Path:
    repo = tmp_path / "theirs"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "HANDOFF.md").write_bytes((DATA / name).read_bytes())
    commit_all(repo, "their hand-over")
    return repo


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_an_adopted_hand_over_passes_as_configured_and_keeps_every_line(tmp_path: Path, name: str) -> None:
    repo = _their_repo(tmp_path, name)
    before = (repo / "HANDOFF.md").read_text().splitlines()
    assert run_gate(repo, "check").returncode != 0  # the defaults do not describe it
    adopted = run_gate(repo, "adopt")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    title, sections, target = SHAPES[name]
    assert f"wrote .gate.yaml: handoff.path HANDOFF.md, title '{title}'" in adopted.stdout
    assert f"target_section {target}" in adopted.stdout and "added a Meta section" in adopted.stdout
    after = (repo / "HANDOFF.md").read_text().splitlines()
    rest = iter(after)
    assert all(line in rest for line in before)  # in order: lines were added, none lost or changed
    assert f"- ref: {git(repo, 'rev-parse', 'HEAD')}" in after
    config = (repo / ".gate.yaml").read_text()
    for section in ["Meta", *sections]:
        assert f'    - "{section}"\n' in config
    check = run_gate(repo, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    commit_all(repo, "adopted")
    assert run_gate(repo, "check").returncode == 0


def test_a_file_without_a_title_gets_one_and_it_is_said(tmp_path: Path) -> None:
    repo = _their_repo(tmp_path, "no-title.md")
    adopted = run_gate(repo, "adopt")
    assert "HANDOFF.md: added the title '# Handoff' at the top" in adopted.stdout
    assert (repo / "HANDOFF.md").read_text().startswith("# Handoff\n\n**Active plan:**")


def test_a_meta_section_that_lacks_ref_gets_it_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _their_repo(tmp_path, "task-and-steps.md")
    text = (repo / "HANDOFF.md").read_text().replace("## Current Task", "## Meta\n- owner: kim\n\n## Current Task")
    (repo / "HANDOFF.md").write_text(text)
    code, out, _ = call_gate(repo, "adopt", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "HANDOFF.md: added ref and updated to its Meta section" in out
    assert "## Meta\n- ref: " in (repo / "HANDOFF.md").read_text() and "- owner: kim" in (repo / "HANDOFF.md").read_text()
    assert run_gate(repo, "check").returncode == 0


def _snapshot(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


@pytest.mark.parametrize(("change", "said"), [
    ("config", ".gate.yaml exists: gate adopt writes one only where there is none"),
    ("two titles", "2 level-1 headings (lines 1, 3)"),
    ("twice", "the section 'Verification' appears twice"),
])
def test_what_adopt_will_not_do_is_a_one_line_refusal_that_changes_nothing(tmp_path: Path, change: str,
                                                                          said: str) -> None:
    repo = _their_repo(tmp_path, "task-and-steps.md")
    text = (repo / "HANDOFF.md").read_text()
    if change == "config":
        (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 100\n")
    elif change == "two titles":
        (repo / "HANDOFF.md").write_text(text.replace("# Handoff\n", "# Handoff\n\n# Another\n", 1))
    else:
        (repo / "HANDOFF.md").write_text(text + "\n## Verification\n- again\n")
    before = _snapshot(repo)
    refused = run_gate(repo, "adopt")
    assert refused.returncode == 2 and said in refused.stderr, refused.stderr  # a slip of the hand: said, no flag
    assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
    assert _snapshot(repo) == before


def test_a_file_that_leads_out_of_the_repository_is_refused_unread(tmp_path: Path) -> None:
    repo = _their_repo(tmp_path, "task-and-steps.md")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\n## Current Task\n- sk-ADOPT-CANARY\n")
    (repo / "elsewhere.md").symlink_to(outside)
    before = _snapshot(repo)
    refused = run_gate(repo, "adopt", "elsewhere.md")
    assert refused.returncode == 3 and "resolves outside the repository" in refused.stderr, refused.stderr
    assert "CANARY" not in refused.stdout + refused.stderr and _snapshot(repo) == before
    assert outside.read_text().endswith("sk-ADOPT-CANARY\n")


def test_the_brief_quotes_the_adopted_sections_not_fixed_names(tmp_path: Path) -> None:
    """Issue 27: the brief quoted the target and a section called "Open Threads", which an adopted file lacks; it
    quotes the configured sections (handoff.brief_sections: gate adopt names every section but Meta and the target)."""
    repo = _their_repo(tmp_path, "task-and-steps.md")
    assert run_gate(repo, "adopt").returncode == 0
    brief = run_gate(repo, "brief").stdout
    quoted = brief.split("(text from the repository")[1].split("## 5.")[0]
    assert [line for line in quoted.splitlines() if line.startswith("### ")] == [
        "### Current Task", "### Key Decisions", "### Open Questions", "### Verification", "### Next Steps"]
    assert "- Decide how the runner is bundled." in quoted


def test_brief_sections_must_name_configured_sections(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  brief_sections:\n    - Open Threads\n    - Nowhere\n")
    proc = run_gate(repo, "check")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("gate: .gate.yaml:4: handoff.brief_sections[1] 'Nowhere' is not one of "
                                   "handoff.sections")


# ---- adversarial review adv1, 02: the gate's own writer never writes what the gate then refuses ------------------

def test_a_hand_over_with_no_section_to_brief_is_adopted_into_a_config_every_command_reads(tmp_path: Path) -> None:
    """The attack: `# Handoff / ## Meta / ## Now`. Adopt wrote `brief_sections:` with no item (null) and exited 0;
    from then on every command exited 3. It writes `brief_sections: []`, and reads back what it writes."""
    repo = tmp_path / "theirs"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "HANDOFF.md").write_text("# Handoff\n\n## Meta\n\n## Now\nBuild it.\n")
    assert run_gate(repo, "adopt", process=True).returncode == 0
    assert "  brief_sections: []" in (repo / ".gate.yaml").read_text()
    for argv in (["config"], ["brief"]):
        proc = run_gate(repo, *argv, process=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (argv, proc.stderr)


@pytest.mark.parametrize("where", ["title", "section"])
@pytest.mark.parametrize("character", ["\x7f", "\x85", "\x9b", "\u2028", "\u202e", "\ufffe", "\ufdd0"])
def test_a_heading_yaml_cannot_hold_as_written_is_refused_in_one_line_and_nothing_is_written(
        tmp_path: Path, where: str, character: str) -> None:
    """The attack: a title or section name with DEL, a C1 control, a line separator, a bidi override or a
    noncharacter. Adopt put it raw into a quoted scalar and exited 0, leaving a .gate.yaml every command refused
    (or one whose title no longer matched). Our choice: refused, as `gate record new` refuses such a title (a title
    is plain text; the gate shows these characters escaped everywhere): one line naming the file and line."""
    repo = tmp_path / "theirs"
    repo.mkdir()
    git(repo, "init", "-q")
    title, section = ("Hand" + character + "over", "Now") if where == "title" else ("Handoff", "N" + character + "ow")
    (repo / "HANDOFF.md").write_text(f"# {title}\n\n## Meta\n\n## {section}\nBuild it.\n\n## Later\n- x\n")
    before = _snapshot(tmp_path)
    proc = run_gate(repo, "adopt", process=True)
    line = 1 if where == "title" else 5
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"gate: HANDOFF.md:{line}: the heading "), proc.stderr
    assert _snapshot(tmp_path) == before  # no .gate.yaml, the hand-over untouched (no Meta added)

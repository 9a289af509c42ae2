"""`gate init`: the starting files, never an overwrite, and a check that passes right after."""

from __future__ import annotations

from pathlib import Path

from conftest import commit_all, git, init_repo, run_gate


def test_init_then_check_passes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / "code.py").write_text("print(1)\n")
    head = commit_all(repo)
    sub = repo / "deep" / "er"
    sub.mkdir(parents=True)
    proc = run_gate(sub, "init")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:-1] == ["wrote HANDOFF.md", "wrote ARCHIVE.md", "wrote .gate.yaml"]
    text = (repo / "HANDOFF.md").read_text()
    assert f"- ref: {head}\n" in text
    assert text.startswith("# Handoff\n")
    check = run_gate(repo, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    config = run_gate(repo, "config", "--format", "json")
    assert config.returncode == 0  # the commented .gate.yaml is valid


def test_init_never_overwrites(repo: Path) -> None:
    (repo / "ARCHIVE.md").write_text("my archive\n")
    before = (repo / "HANDOFF.md").read_bytes()
    proc = run_gate(repo, "init")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "skipped HANDOFF.md: it exists, left unchanged",
        "skipped ARCHIVE.md: it exists, left unchanged",
        "wrote .gate.yaml",
    ]
    assert (repo / "HANDOFF.md").read_bytes() == before
    assert (repo / "ARCHIVE.md").read_text() == "my archive\n"
    assert run_gate(repo, "init").stdout.count("skipped") == 3


def test_init_follows_the_configured_names(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / ".gate.yaml").write_text(
        "handoff:\n  path: docs/STATE.md\n  title: State\n  sections: [Meta, Now, Log]\n  target_section: Now\n"
        "archive:\n  path: docs/OLD.md\n"
    )
    commit_all(repo)
    proc = run_gate(repo, "init")
    assert proc.stdout.splitlines() == [
        "wrote docs/STATE.md", "wrote docs/OLD.md", "skipped .gate.yaml: it exists, left unchanged",
        "next: write the real Now in docs/STATE.md (a commit that carries the placeholder is refused), `gate stamp`, "
        "commit the files; `gate install-hooks` (or the pre-commit framework) judges every commit"]
    text = (repo / "docs" / "STATE.md").read_text()
    assert "# State\n" in text and "## Now\n" in text and "## Log\n" in text and "## Decisions" not in text
    assert run_gate(repo, "check").returncode == 0


def test_init_before_the_first_commit(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    proc = run_gate(repo, "init")
    assert proc.returncode == 0
    assert "no commit yet" in proc.stdout
    assert "- ref: 0000000\n" in (repo / "HANDOFF.md").read_text()
    first = run_gate(repo, "check")  # the first commit must be possible with the hook in place
    assert first.returncode == 0, first.stdout
    assert "[handoff-structure warning] this branch has no commit yet" in first.stdout
    commit_all(repo, "first")
    after = run_gate(repo, "check")
    assert after.returncode == 1
    assert "Meta ref 0000000 does not name a commit in this repository" in after.stdout
    assert git(repo, "status", "--porcelain") == ""


def test_init_says_what_comes_next_once_it_wrote_the_hand_over(tmp_path: Path) -> None:
    """A new user's finding: `gate adopt` ends with a next step and `gate init` said nothing after its file list. It
    says the next steps when it wrote the hand-over (with its placeholder target), and nothing more when it wrote none."""
    repo = init_repo(tmp_path / "p")
    (repo / "README").write_text("x\n")
    commit_all(repo, "first")
    first = run_gate(repo, "init")
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == (
        "next: write the real Current Target in HANDOFF.md (a commit that carries the placeholder is refused), "
        "`gate stamp`, commit the files; `gate install-hooks` (or the pre-commit framework) judges every commit")
    again = run_gate(repo, "init")
    assert again.returncode == 0 and "next:" not in again.stdout, again.stdout


def test_an_agent_install_says_to_commit_what_it_wrote(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "p")
    (repo / "README").write_text("x\n")
    commit_all(repo, "first")
    said = run_gate(repo, "install-hooks", "--agent", "claude", "--agent", "codex")
    assert said.returncode == 0 and said.stdout.splitlines()[-1] == (
        "next: commit .claude/settings.json, .claude/hooks/handoff-gate.sh, .codex/hooks.json: every clone then runs "
        "these hooks, where `gate` is on its PATH"), said.stdout
    local = run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall")
    assert local.returncode == 0 and "next:" not in local.stdout

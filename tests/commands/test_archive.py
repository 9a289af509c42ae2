"""`gate archive`, `gate record new` and `gate render`: checked items moved with their children, records, tables."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import GATE_BIN, call_gate, flag_records, git, handoff_text, run_gate, run_processes

from gates.infra import fsio

THREADS = """- [ ] open — next: x
- [x] done
  - child of done
  ```
  code of done
  ```
- [ ] parent — next: y
  - [X] checked child
    - grandchild
- [ ] last — next: z"""


def _with_threads(repo: Path, threads: str = THREADS) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads=threads))


def test_archive_moves_checked_items_with_their_children(repo: Path) -> None:
    _with_threads(repo)
    (repo / "ARCHIVE.md").write_text("# Archive\n\nolder entries\n")
    proc = run_gate(repo, "archive")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "moved HANDOFF.md:12-16 (Open Threads) to ARCHIVE.md: done",
        "moved HANDOFF.md:18-19 (Open Threads) to ARCHIVE.md: checked child",
    ]
    assert "## Open Threads\n- [ ] open — next: x\n- [ ] parent — next: y\n- [ ] last — next: z\n" in (
        repo / "HANDOFF.md").read_text()
    archived = (repo / "ARCHIVE.md").read_text()
    assert archived.startswith("# Archive\n\nolder entries\n\n## Archived ")
    assert archived.endswith("\n### Open Threads\n- [x] done\n  - child of done\n  ```\n  code of done\n  ```\n"
                             "- [X] checked child\n  - grandchild\n")
    assert run_gate(repo, "check").returncode == 0
    before = {p: (repo / p).read_bytes() for p in ("HANDOFF.md", "ARCHIVE.md")}
    again = run_gate(repo, "archive")
    assert again.stdout == "nothing to archive: no checked items\n"
    assert {p: (repo / p).read_bytes() for p in before} == before
    assert [e["action"] for e in map(json.loads, (repo / ".git/gate/journal.jsonl").read_text().splitlines())] == [
        "archive"]


def test_a_crash_between_the_two_writes_leaves_the_item_in_at_least_one_file(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_threads(repo)
    real = fsio.rewrite
    calls = []

    def crash_on_second(path: str, expected: bytes | None, data: bytes, **kwargs: object) -> None:
        calls.append(os.path.basename(path))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies between the archive write and the hand-over write
        real(path, expected, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("gates.domain.archive.fsio.rewrite", crash_on_second)
    code, _, _ = call_gate(repo, "archive", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 130 and calls == ["ARCHIVE.md", "HANDOFF.md"]
    assert "- [x] done" in (repo / "ARCHIVE.md").read_text()
    assert "- [x] done" in (repo / "HANDOFF.md").read_text()


def _install_hook(repo: Path, command: str) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec "{GATE_BIN}" {command}\n')
    hook.chmod(0o755)


def test_the_autofix_through_a_real_commit(repo: Path) -> None:
    _install_hook(repo, "check --only handoff-no-checked-items --fix")
    _with_threads(repo)
    git(repo, "add", "HANDOFF.md")
    first = subprocess.run(["git", "commit", "-q", "-m", "with done items"], cwd=repo, capture_output=True, text=True)
    assert first.returncode == 1
    assert "fixed: moved 2 checked item(s) to ARCHIVE.md" in first.stderr
    assert "autofix-applied" in [r["reason"] for r in flag_records(repo / ".git")]
    git(repo, "add", "HANDOFF.md", "ARCHIVE.md")
    git(repo, "commit", "-q", "-m", "with done items, archived")
    assert "- [x] done" in git(repo, "show", "HEAD:ARCHIVE.md")


CREATOR = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from gates.infra import config
from gates.commands.archive import new_record
from gates.infra.git import discover
repo = discover(Path(sys.argv[1]), {})
cfg = config.load(repo)
for i in range(125):
    new_record(repo, cfg, f"record {sys.argv[2]}-{i}", datetime.now(timezone.utc))
"""


@pytest.mark.slow
def test_a_thousand_records_created_concurrently_never_collide_and_render(repo: Path, tmp_path: Path) -> None:
    assert run_processes(tmp_path, CREATOR, [[str(repo), str(n)] for n in range(8)], timeout=300) == [0] * 8
    files = list((repo / "decisions").glob("*.md"))
    assert len(files) == 1000
    assert len({f.read_text().splitlines()[1] for f in files}) == 1000
    text = (repo / "HANDOFF.md").read_text().replace("## Decisions\n", "## Decisions\n<!-- gate:table decisions -->\n"
                                                      "<!-- /gate:table -->\n")
    (repo / "HANDOFF.md").write_text(text)
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 2000\n  max_bytes: 1000000\n")
    assert run_gate(repo, "render").stdout == "rendered 1 table(s): decisions\n"
    assert (repo / "HANDOFF.md").read_text().count("| open |") == 1000
    assert run_gate(repo, "check", "--only", "handoff-tables,records-immutable").returncode == 0


@pytest.mark.parametrize("character", ["\ufffe", "\uffff", "\ufdd0", "\U0001fffe"])
def test_a_record_title_with_a_noncharacter_is_refused_and_nothing_is_written(repo: Path, character: str) -> None:
    """The attack (adversarial review adv1, 02): `gate record new "Use <U+FFFE> here"` wrote a record whose front
    matter YAML refuses, so the next `gate check` found "not a record" (exit 1). A noncharacter is refused with the
    control and bidi characters, in one line, before anything is written."""
    proc = run_gate(repo, "record", "new", f"Use {character} here", process=True)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "noncharacter" in proc.stderr, proc.stderr
    assert not (repo / "decisions").exists()
    assert run_gate(repo, "check", process=True).returncode == 0

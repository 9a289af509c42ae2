"""What keeps a hook cheap, checked without timing anything: the no-change path and the caches.

Timings live in bench/ (see docs/performance.md); these tests check the mechanisms.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import git, handoff_text, run_gate

PROBE = """
import sys
from gates.cli import main
code = main(["check"])
heavy = sorted(m for m in ("jsonschema", "ruamel.yaml", "git", "pre_commit") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def _heavy_imports(repo: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=repo, capture_output=True, text=True)
    return next(line for line in proc.stdout.splitlines() if line.startswith("HEAVY="))


def test_the_no_change_path_imports_nothing_heavy(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    assert _heavy_imports(repo) == "HEAVY=jsonschema,ruamel.yaml"  # the first run parses and validates
    assert _heavy_imports(repo) == "HEAVY="  # nothing changed: replayed
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="Another target."))
    assert _heavy_imports(repo) == "HEAVY="  # a changed hand-over needs no config parsing again


def _answers(repo: Path) -> list[str]:
    return [run_gate(repo, "check", "--format", "json").stdout for _ in range(2)]


def test_deleting_the_cache_changes_no_answer(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    first = _answers(repo)
    assert len({*first}) == 1 and json.loads(first[0])["counts"]["error"] == 1
    cache = repo / ".git" / "gate" / "cache"
    assert any(p.name.startswith("check-") for p in cache.iterdir())
    shutil.rmtree(cache)
    assert _answers(repo) == first
    for entry in cache.iterdir():  # a corrupt cache is passed over, not trusted
        entry.write_text("{not json")
    assert _answers(repo) == first


def test_a_replayed_failure_still_raises_its_flag(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    for _ in range(3):
        assert run_gate(repo, "check").returncode == 1
    [flag] = [json.loads(p.read_text()) for p in (repo / ".git" / "gate" / "flags").glob("*.json")]
    assert flag["count"] == 3


def test_every_input_change_is_seen(repo: Path) -> None:
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    git(repo, "add", "ARCHIVE.md")
    git(repo, "commit", "-q", "-m", "archive")
    for _ in range(2):  # the second run is replayed
        assert run_gate(repo, "check", "--only", "append-only").returncode == 0
    (repo / "ARCHIVE.md").write_text("# Rewritten\n")
    git(repo, "add", "ARCHIVE.md")  # only the index changes: the replay must not hide it
    assert run_gate(repo, "check", "--only", "append-only").returncode == 1
    git(repo, "reset", "-q", "ARCHIVE.md")
    assert run_gate(repo, "check", "--only", "append-only").returncode == 0
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "- [x] done\n")  # a work-tree change
    assert run_gate(repo, "check", "--only", "handoff-no-checked-items").returncode == 1
    (repo / ".git" / "index.lock").write_text("")
    assert run_gate(repo, "check", "--only", "handoff-no-checked-items").returncode == 1  # full path, same verdict

"""Data-driven gate tests: tests/fixtures/<gate-id>/{pass,fail}/<case>.md.

A fail case lists its whole expected findings, rendered, in <case>.expected; a case may bring a
<case>.gate.yaml and files named <case>.<name> that are copied into the repository as <name>.
Placeholders: {HEAD}, {HEAD7}, {HEAD12}, {NOW} (a current UTC time), {NOWSTAMP} (the check's clock).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES, commit_all, init_repo

from gates.checks import runner as check
from gates.infra import config
from gates.infra.git import discover

CHECK_TIME = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)


def _cases(kind: str) -> list[tuple[str, Path]]:
    return [
        pytest.param(gate_dir.name, case, id=f"{gate_dir.name}/{kind}/{case.stem}")
        for gate_dir in sorted(FIXTURES.iterdir())
        for case in sorted((gate_dir / kind).glob("*.md"))
    ]


def _fill(text: str, head: str) -> str:
    return (
        text.replace("{HEAD12}", head[:12])
        .replace("{HEAD7}", head[:7])
        .replace("{HEAD}", head)
        .replace("{NOWSTAMP}", CHECK_TIME.strftime("%Y-%m-%dT%H:%M:%SZ"))
        .replace("{NOW}", "2026-11-30T11:00:00Z")
    )


def _run_case(tmp_path: Path, gate_id: str, case: Path) -> list[str]:
    repo_dir = init_repo(tmp_path / "repo")
    (repo_dir / "README").write_text("x\n")
    head = commit_all(repo_dir, "first")
    for extra in case.parent.glob(f"{case.stem}.*"):
        if extra.suffix not in (".md", ".expected"):
            target = ".gate.yaml" if extra.name.endswith(".gate.yaml") else extra.name[len(case.stem) + 1:]
            shutil.copy(extra, repo_dir / target)
    (repo_dir / "HANDOFF.md").write_text(_fill(case.read_text(), head))
    repo = discover(repo_dir, {})
    cfg = config.load(repo)
    result = check.run(repo, cfg, [gate_id], [], now=CHECK_TIME)
    return [f.render() for f in result.findings], head


@pytest.mark.parametrize(("gate_id", "case"), _cases("pass"))
def test_pass_cases_have_no_findings(tmp_path: Path, gate_id: str, case: Path) -> None:
    findings, _ = _run_case(tmp_path, gate_id, case)
    assert findings == []


@pytest.mark.parametrize(("gate_id", "case"), _cases("fail"))
def test_fail_cases_have_exactly_the_expected_findings(tmp_path: Path, gate_id: str, case: Path) -> None:
    findings, head = _run_case(tmp_path, gate_id, case)
    expected = _fill(case.with_suffix(".expected").read_text(), head).splitlines()
    assert findings == sorted(expected, key=_order)


def _order(rendered: str) -> tuple[str, int, str]:
    """As `gate check` orders findings: by file, line and gate; within those, as the gate reported them."""
    path, line, rest = rendered.split(":", 2)
    return path, int(line), rest.split("]", 1)[0]


def test_every_fail_case_has_its_expectation() -> None:
    for gate_dir in FIXTURES.iterdir():
        for case in (gate_dir / "fail").glob("*.md"):
            assert case.with_suffix(".expected").is_file(), case

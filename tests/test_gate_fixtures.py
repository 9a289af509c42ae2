"""Data-driven gate tests: tests/fixtures/<gate-id>/{pass,fail}/<case>.md.

Each case is the hand-over file `<case>.md`, checked by its gate alone (`runner.run(..., [gate-id])`)
in a fresh repository whose first commit holds one file, README, at a fixed check time.

- A pass case has no findings; a fail case lists its whole expected findings, rendered, in
  `<case>.expected` (the comparison is of the whole list, in `gate check`'s order).
- `<case>.gate.yaml` becomes `.gate.yaml`; any other `<case>.<name>` is copied into the work tree as
  `<name>` (untracked).
- `<case>.setup.yaml` (optional) describes the rest of the repository, in this order:

  ```yaml
  commits:          # commits made after the first one, in order; each maps a path to its text
    - ARCHIVE.md: "# Archive\\n"
    - {}            # an empty commit (the hand-over falls one commit behind)
  handoff: staged   # where <case>.md goes: worktree (the default: untracked), staged, or committed
  staged:           # written (null: deleted) and `git add`ed: the commit being made
    ARCHIVE.md: "# Rewritten\\n"
  files:            # written into the work tree, untracked (subfolders are made)
    decisions/D0001-x.md: "..."
  locks:            # empty lock files, by path inside the git dir, and the seconds they age before the
    index.lock: 2   # check (real seconds: the age counts from the ctime; pair it with `locks.threshold: 1s`)
  claim: other      # a linked worktree at {TMP}/other (branch `other`) claims the hand-over first
  remote: bare      # `origin` is a bare repository at {TMP}/remote.git holding the first commit, or
                    # `missing`: a file:// URL where there is none; the gate is judged as if
  push: HEAD        # HEAD were being pushed (what the pre-push hook passes for `git push`)
  ```

  `committed` commits the hand-over on its own after `commits`; `staged` adds it with the `staged`
  files. Paths are relative to the work tree (the git dir for `locks`) and may not leave it.

Placeholders, in the hand-over, `.expected`, `.setup.yaml` texts and copied files: {HEAD}, {HEAD7},
{HEAD12} (HEAD when the hand-over is written), {FIRST}, {FIRST7}, {FIRST12} (the first commit),
{NOW} (a current UTC time), {NOWSTAMP} (the check's clock), {TMP} (the folder the repository is in),
{HOST} (this machine's name, as a claim records it). In `.expected` only, {SECONDS} stands for any whole
number (a lock's age in seconds, which the clock moves): the line must match with it, and is shown with it.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, commit_all, git, init_repo
from ruamel.yaml import YAML

from gates.checks import runner as check
from gates.infra import config
from gates.infra.git import discover

CHECK_TIME = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
SECONDS = "{SECONDS}"
SETUP_KEYS = {"commits", "handoff", "staged", "files", "locks", "claim", "remote", "push"}


def _cases(kind: str) -> list[Any]:
    return [
        pytest.param(gate_dir.name, case, id=f"{gate_dir.name}/{kind}/{case.stem}")
        for gate_dir in sorted(FIXTURES.iterdir())
        for case in sorted((gate_dir / kind).glob("*.md"))
        if "." not in case.stem  # `<case>.<name>.md` is a file a case brings, not a case
    ]


class Filler:
    """The placeholders' values, as they become known."""

    def __init__(self, tmp: Path) -> None:
        self.values = {"{TMP}": str(tmp), "{NOWSTAMP}": CHECK_TIME.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "{NOW}": "2026-11-30T11:00:00Z", "{HOST}": os.uname().nodename}

    def commit(self, name: str, sha: str) -> None:
        self.values.update({f"{{{name}}}": sha, f"{{{name}7}}": sha[:7], f"{{{name}12}}": sha[:12]})

    def __call__(self, text: str) -> str:
        for key, value in self.values.items():
            text = text.replace(key, value)
        return text


def _inside(root: Path, rel: str) -> Path:
    path = (root / rel).resolve()
    assert path.is_relative_to(root.resolve()), f"{rel} leaves {root}"
    return path


def _write(root: Path, files: dict[str, str | None], fill: Filler) -> None:
    for rel, text in files.items():
        path = _inside(root, rel)
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(text))


def _setup(case: Path) -> dict[str, Any]:
    path = case.with_suffix(".setup.yaml")
    if not path.is_file():
        return {}
    setup = YAML(typ="safe").load(path.read_text()) or {}
    assert isinstance(setup, dict) and set(setup) <= SETUP_KEYS, f"{path}: keys are {sorted(SETUP_KEYS)}"
    assert setup.get("handoff", "worktree") in ("worktree", "staged", "committed"), path
    return setup


def _claim_from_another_worktree(repo_dir: Path, tmp: Path) -> None:
    from gates.domain import claims

    other = tmp / "other"
    git(repo_dir, "worktree", "add", "-q", "-b", "other", str(other))
    found = discover(other, {})
    holder = claims.holder_of(found, None)
    assert claims.claim(found, "HANDOFF.md", holder, None, None, CHECK_TIME).kind == "granted"


def _push(repo_dir: Path, tmp: Path, remote: str | None, push: str | None) -> list[Any] | None:
    from gates.domain.push import Update
    from gates.infra.gitnet import ZERO_OID

    if remote == "bare":
        bare = tmp / "remote.git"
        git(tmp, "init", "-q", "--bare", "--template=", str(bare))
        git(repo_dir, "remote", "add", "origin", f"file://{bare}")
        git(repo_dir, "push", "-q", "origin", f"{git(repo_dir, 'rev-list', '--max-parents=0', 'HEAD')}:refs/heads/main")
    elif remote == "missing":
        git(repo_dir, "remote", "add", "origin", f"file://{tmp / 'no-such-remote.git'}")
    else:
        assert remote is None, remote
    if push is None:
        return None
    assert push == "HEAD", push
    remote_oid = git(repo_dir, "rev-list", "--max-parents=0", "HEAD") if remote == "bare" else ZERO_OID
    return [Update("HEAD", git(repo_dir, "rev-parse", "HEAD"), "refs/heads/main", remote_oid)]


def _run_case(tmp_path: Path, gate_id: str, case: Path) -> tuple[list[str], Filler]:
    setup = _setup(case)
    repo_dir = init_repo(tmp_path / "repo")
    fill = Filler(tmp_path)
    (repo_dir / "README").write_text("x\n")
    fill.commit("FIRST", commit_all(repo_dir, "first"))
    for number, files in enumerate(setup.get("commits", []), start=1):
        _write(repo_dir, files, fill)
        commit_all(repo_dir, f"commit {number}")
    fill.commit("HEAD", git(repo_dir, "rev-parse", "HEAD"))
    for extra in case.parent.glob(f"{case.stem}.*"):
        if extra.suffix not in (".md", ".expected") and not extra.name.endswith(".setup.yaml"):
            target = ".gate.yaml" if extra.name.endswith(".gate.yaml") else extra.name[len(case.stem) + 1:]
            (repo_dir / target).write_text(fill(extra.read_text()))
    (repo_dir / "HANDOFF.md").write_text(fill(case.read_text()))
    where = setup.get("handoff", "worktree")
    if where == "committed":
        git(repo_dir, "add", "HANDOFF.md")
        git(repo_dir, "commit", "-q", "--no-verify", "-m", "handoff")
    _write(repo_dir, setup.get("files", {}), fill)
    staged = dict(setup.get("staged", {}))
    _write(repo_dir, staged, fill)
    for rel in [*staged, *(["HANDOFF.md"] if where == "staged" else [])]:
        git(repo_dir, "add", "-A", "--", rel)
    git_dir = repo_dir / ".git"
    ages = setup.get("locks", {})
    for rel in ages:
        lock = _inside(git_dir, rel)
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_bytes(b"")
    time.sleep(max(ages.values(), default=0))  # a lock's age counts from its ctime, which no call sets back
    if setup.get("claim") is not None:
        assert setup["claim"] == "other", case
        _claim_from_another_worktree(repo_dir, tmp_path)
    push = _push(repo_dir, tmp_path, setup.get("remote"), setup.get("push"))
    repo = discover(repo_dir, {})
    try:
        result = check.run(repo, config.load(repo), [gate_id], [], now=CHECK_TIME, push=push)
    finally:
        repo.drop_started()  # as an invocation's end does: no git the run started and never read outlives the test
    return [f.render() for f in result.findings], fill


@pytest.mark.parametrize(("gate_id", "case"), _cases("pass"))
def test_pass_cases_have_no_findings(tmp_path: Path, gate_id: str, case: Path) -> None:
    findings, _ = _run_case(tmp_path, gate_id, case)
    assert findings == []


@pytest.mark.parametrize(("gate_id", "case"), _cases("fail"))
def test_fail_cases_have_exactly_the_expected_findings(tmp_path: Path, gate_id: str, case: Path) -> None:
    findings, fill = _run_case(tmp_path, gate_id, case)
    expected = sorted(fill(case.with_suffix(".expected").read_text()).splitlines(), key=_order)
    # {SECONDS}, a lock's age, is the one part of a finding the clock moves: a line that matches is taken as equal
    findings = [want if SECONDS in want and re.fullmatch(_pattern(want), got) else got
                for got, want in zip(findings, expected, strict=False)] + findings[len(expected):]
    assert findings == expected


def _pattern(expected: str) -> str:
    return r"\d+".join(re.escape(part) for part in expected.split(SECONDS))


def _order(rendered: str) -> tuple[str, int, str]:
    """As `gate check` orders findings: by file, line and gate; within those, as the gate reported them."""
    path, line, rest = rendered.split(":", 2)
    return path, int(line), rest.split("]", 1)[0]


def test_every_fail_case_has_its_expectation() -> None:
    for gate_dir in FIXTURES.iterdir():
        for case in (gate_dir / "fail").glob("*.md"):
            assert case.with_suffix(".expected").is_file(), case


def test_every_gate_has_a_pass_and_a_fail_case() -> None:
    from gates.checks import CATALOG

    for gate_id in CATALOG:
        for kind in ("pass", "fail"):
            assert sorted((FIXTURES / gate_id / kind).glob("*.md")), f"no {kind} case for {gate_id}"

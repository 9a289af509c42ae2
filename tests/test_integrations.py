"""Where users work: the real pre-commit framework, end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, commit_all, git, init_repo, run_gate, write_target
from helpers import source_copy


def _copy_project(target: Path) -> str:
    source_copy(target)
    init_repo(target)
    return commit_all(target, "handoff-gate as it is now")


def _readme_rev() -> str:
    from gates import __version__

    snippet = (ROOT / "README.md").read_text().split("# .pre-commit-config.yaml", 1)[1].split("```", 1)[0]
    rev = next(line.split("rev:", 1)[1].split("#", 1)[0].strip() for line in snippet.splitlines() if "rev:" in line)
    assert rev == f"v{__version__}", "the README's pre-commit snippet names the release tag of this version"
    return rev


@pytest.mark.e2e
@pytest.mark.slow
def test_the_real_pre_commit_framework(tmp_path: Path) -> None:
    from pre_commit.clientlib import load_manifest

    hook_repo = tmp_path / "handoff-gate"
    sha = _copy_project(hook_repo)
    ids = [hook["id"] for hook in load_manifest(str(hook_repo / ".pre-commit-hooks.yaml"))]
    names = [hook["name"] for hook in load_manifest(str(hook_repo / ".pre-commit-hooks.yaml"))
             if "pre-commit" in hook["stages"]]  # handoff-claim-remote runs at push only
    project = init_repo(tmp_path / "project")
    (project / "code.py").write_text("print(1)\n")
    commit_all(project, "first")
    assert run_gate(project, "init").returncode == 0
    write_target(project)
    hooks = "\n".join(f"      - id: {hook_id}" for hook_id in ids)
    rev = _readme_rev()  # the README's snippet, at the tag it names: a release is tagged v<version>
    git(hook_repo, "tag", rev, sha)
    (project / ".pre-commit-config.yaml").write_text(f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n{hooks}\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    pre_commit = [sys.executable, "-m", "pre_commit"]
    install = subprocess.run([*pre_commit, "install"], cwd=project, env=env, capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    assert run_gate(project, "stamp").returncode == 0
    git(project, "add", "-A")
    clean = subprocess.run(["git", "commit", "-m", "adopt handoff-gate"], cwd=project, env=env, capture_output=True,
                           text=True, timeout=900)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    for name in names:
        assert f"{name}....." in clean.stderr, f"hook {name} did not run"
    text = (project / "HANDOFF.md").read_text().replace("## Decisions", "- [x] finished thing\n\n## Decisions")
    (project / "HANDOFF.md").write_text(text)
    assert run_gate(project, "stamp").returncode == 0
    git(project, "add", "HANDOFF.md")
    bad = subprocess.run(["git", "commit", "-m", "with a checked item"], cwd=project, env=env, capture_output=True,
                         text=True, timeout=600)
    assert bad.returncode != 0
    assert "[handoff-no-checked-items] checked item 'finished thing'" in bad.stderr
    assert "- [x] finished thing" in (project / "ARCHIVE.md").read_text()  # the fixer moved it

"""Where users work: the real pre-commit framework, CI formats, native hooks, `gate doctor`, and hook hygiene."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import ROOT, commit_all, git, handoff_text, init_repo, run_gate, write_target

from gates.checks import GATES
from gates.domain.hooks import ENTRY

OPT_IN = ("heartbeat", "handoff-claim-remote")  # gates off by default

DATA = Path(__file__).resolve().parent / "data"


def _break(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done\n- [ ] a, b: c"))


def test_github_annotations(repo: Path) -> None:
    _break(repo)
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("- [x] done", "- [x] 100% done, ok: yes"))
    proc = run_gate(repo, "check", "--format", "github")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == ("::error file=HANDOFF.md,line=11,title=handoff-no-checked-items::"
                                           "checked item '100%25 done, ok: yes' — completed items move to ARCHIVE.md")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    assert run_gate(repo, "check", env=env).stdout == proc.stdout


def test_sarif_is_valid_sarif_2_1_0(repo: Path) -> None:
    from jsonschema import Draft4Validator

    _break(repo)
    proc = run_gate(repo, "check", "--format", "sarif")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    schema = json.loads((DATA / "sarif-2.1.0.schema.json").read_text())
    errors = sorted(Draft4Validator(schema).iter_errors(document), key=str)
    assert errors == []
    run = document["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [g for g in GATES if g not in OPT_IN]
    assert all(rule["help"]["text"] and rule["shortDescription"]["text"] for rule in run["tool"]["driver"]["rules"])
    [result] = run["results"]
    assert result["ruleId"] == "handoff-no-checked-items" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "HANDOFF.md", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 11}}
    (repo / ".gate.yaml").write_text("bogus: 1\n")
    broken = json.loads(run_gate(repo, "check", "--format", "sarif").stdout)
    assert list(Draft4Validator(schema).iter_errors(broken)) == []
    assert broken["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_junit_is_one_testcase_per_gate(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check", "--format", "junit")
    suite = ElementTree.fromstring(proc.stdout.encode())
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [g for g in GATES if g not in OPT_IN]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["handoff-no-checked-items"] and suite.get("failures") == "1"


def _hook_text(repo: Path, name: str = "pre-commit") -> str:
    return (Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks")) / name).read_text()


def test_native_hook_blocks_a_bad_commit_and_runs_the_existing_hook(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text('#!/bin/sh\necho "the old hook ran" >> "$(git rev-parse --git-dir)/old-hook.log"\n')
    (hooks / "pre-commit").chmod(0o755)
    proc = run_gate(repo, "install-hooks")
    assert proc.returncode == 0
    assert "kept your pre-commit hook: it now runs first" in proc.stdout
    exec_line = _hook_text(repo).splitlines()[-1]
    interpreter, isolated, c, code, command = shlex.split(exec_line.removeprefix("exec "))
    assert Path(interpreter).is_absolute() and Path(interpreter).exists()
    assert (isolated, c, command) == ("-I", "-c", "check") and "gates.main" in code
    _break(repo)
    git(repo, "add", "HANDOFF.md")
    bad = subprocess.run(["git", "commit", "-q", "-m", "bad"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 1 and "[handoff-no-checked-items]" in bad.stderr
    assert (repo / ".git" / "old-hook.log").read_text() == "the old hook ran\n"
    git(repo, "checkout", "-q", "HEAD", "--", "HANDOFF.md")
    (repo / "other.txt").write_text("fine")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "good")
    assert (repo / ".git" / "old-hook.log").read_text().count("ran") == 2
    out = run_gate(repo, "install-hooks", "--uninstall")
    assert "your own hook is back" in out.stdout
    assert _hook_text(repo).startswith('#!/bin/sh\necho "the old hook ran"')


def test_native_hooks_respect_core_hooks_path_and_worktrees(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    assert run_gate(linked, "install-hooks", "--pre-push").returncode == 0
    assert (linked / ".githooks" / "pre-commit").is_file() and (linked / ".githooks" / "pre-push").is_file()
    _break(linked)
    git(linked, "add", "HANDOFF.md")
    assert subprocess.run(["git", "commit", "-q", "-m", "bad"], cwd=linked, capture_output=True).returncode == 1


def test_doctor_says_what_to_fix(repo: Path) -> None:
    proc = run_gate(repo, "doctor")
    assert proc.returncode == 1
    assert "FIX   no commit hook runs the gate" in proc.stdout
    assert proc.stdout.splitlines()[0].startswith("ok    git version ")
    assert "doctor" in [json.loads(p.read_text())["reason"] for p in (repo / ".git/gate/flags").glob("*.json")]
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / ".claude").mkdir()
    fixed = run_gate(repo, "doctor")
    assert fixed.returncode == 1 and "no SessionStart hook runs `gate brief --format claude`" in fixed.stdout
    (repo / ".claude" / "settings.json").write_text("{not json")
    broken = run_gate(repo, "doctor")
    assert broken.returncode == 1 and "FIX   .claude/settings.json cannot be read as JSON" in broken.stdout
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": ["a list, not a mapping"]}))
    assert "no SessionStart hook runs" in run_gate(repo, "doctor").stdout  # odd shapes count as no hook, no crash
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [
        {"matcher": "", "hooks": [{"type": "command", "command": "gate brief --format claude"}]}]}}))
    healthy = run_gate(repo, "doctor")
    assert healthy.returncode == 0, healthy.stdout
    hook = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks")) / "pre-commit"
    text = hook.read_text()
    hook.write_text(text.replace(" -I -c ", " -I -m gates ").replace(shlex.quote(ENTRY) + " ", ""))  # an older form
    assert "warn  native hook" in run_gate(repo, "doctor").stdout
    interpreter = shlex.split(text.splitlines()[-1])[1]
    hook.write_text(text.replace(interpreter, "/nonexistent/venv/bin/python"))
    gone = run_gate(repo, "doctor")
    assert gone.returncode == 1 and "/nonexistent/venv/bin/python, which is gone" in gone.stdout
    hook.write_text(text)
    (repo / ".git" / "index.lock").write_text("")
    os.utime(repo / ".git" / "index.lock", (0, 0))
    (repo / ".gate.yaml").write_text("locks:\n  threshold: 1s\n")
    time.sleep(1.2)
    stale = run_gate(repo, "doctor")
    assert stale.returncode == 1 and "FIX   stale git lock index.lock" in stale.stdout


def _copy_project(target: Path) -> str:
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    names = subprocess.run(listing, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, names):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
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

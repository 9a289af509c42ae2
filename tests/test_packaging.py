"""The package as users get it: hook manifest, ids that agree everywhere, schemas in a plain install."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, commit_all, handoff_text, init_repo
from helpers import source_copy

from gates import __version__
from gates.checks import GATES


def _manifest() -> list[dict[str, Any]]:
    # pre-commit's own loader: it validates the manifest against the framework's schema.
    from pre_commit.clientlib import load_manifest

    manifest: list[dict[str, Any]] = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    return manifest


def test_every_gate_has_a_hook_that_runs_exactly_check_only_id() -> None:
    hooks = {hook["id"]: hook for hook in _manifest()}
    assert set(hooks) == {"gate", *GATES}
    assert hooks["gate"]["entry"] == "gate check"
    for gate_id in GATES:
        fixer = " --fix" if gate_id == "handoff-no-checked-items" else ""  # a pre-commit fixer (issue 6)
        assert hooks[gate_id]["entry"] == f"gate check --only {gate_id}{fixer}"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False and hook["always_run"] is True
        assert hook["minimum_pre_commit_version"] == "3.2.0"
        assert set(hook["stages"]) <= {"pre-commit", "pre-merge-commit", "pre-push", "manual", "commit-msg"}


def test_ids_module_names_and_readme_agree() -> None:
    readme = (ROOT / "README.md").read_text()
    for gate_id, module in GATES.items():
        assert module.__name__ == f"gates.checks.{gate_id.replace('-', '_')}"
        assert module.__doc__ and module.__doc__.startswith(f"{gate_id}: ")
        assert f"`{gate_id}`" in readme, f"README.md names no gate `{gate_id}`: add its row to the gate table"
    assert "`gate`" in readme


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv"))
    assert f"\n{command}\n" in readme


@pytest.mark.slow
def test_a_plain_install_into_a_fresh_venv_finds_its_schemas(tmp_path: Path) -> None:
    source = source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(source)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import gates.infra.schemas as s; print(s.schema_path('config'))"],
        cwd=elsewhere, capture_output=True, text=True, check=True,
    )
    assert where.stdout.strip().startswith(str(venv))
    for name in ("config", "handoff", "flag", "check-result"):
        shown = subprocess.run([str(venv / "bin" / "gate"), "schema", name], cwd=elsewhere, capture_output=True, text=True)
        assert shown.returncode == 0 and json.loads(shown.stdout)["$schema"]
    repo = init_repo(tmp_path / "repo")
    (repo / "x").write_text("x")
    (repo / "HANDOFF.md").write_text(handoff_text(commit_all(repo)))
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 100\n")  # validated with the shipped schema
    check = subprocess.run([str(venv / "bin" / "gate"), "check"], cwd=repo, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    # The command is our plain script with the venv's interpreter by absolute path, not pip's
    # entry-point wrapper (which imports `re` before any of our code: ~6 ms on every commit).
    script = (venv / "bin" / "gate").read_text()
    first_line = script.splitlines()[0]
    assert first_line.startswith(f"#!{venv}/bin/python") and "from gates.main import launch" in script
    assert "import re" not in script
    again = subprocess.run([str(venv / "bin" / "gate"), "check"], cwd=repo, capture_output=True, text=True)
    assert (again.returncode, again.stdout) == (0, check.stdout)
    # A plain install's native hook starts Python without `site` and names the venv's site-packages itself.
    assert subprocess.run([str(venv / "bin" / "gate"), "install-hooks"], cwd=repo, capture_output=True).returncode == 0
    exec_line = (repo / ".git" / "hooks" / "pre-commit").read_text().splitlines()[-1]
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    words = shlex.split(exec_line)
    assert words[2:5] == ["-I", "-S", "-c"] and f'p = ["{site_packages}"]; ' in words[5], exec_line
    (repo / "more.txt").write_text("more")  # the hand-over and the config are recorded with it: CI must find them
    subprocess.run(["git", "add", "more.txt", "HANDOFF.md", ".gate.yaml"], cwd=repo, check=True)
    commit = subprocess.run(["git", "commit", "-q", "-m", "more"], cwd=repo, capture_output=True, text=True)
    assert commit.returncode == 0, commit.stdout + commit.stderr  # the hook's gate ran and passed
    # The environment rebuilt for another Python: the folder the hook names is gone, and it finds the gate through site.
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(hook.read_text().replace(str(site_packages), str(tmp_path / "gone" / "site-packages")))
    (repo / "again.txt").write_text("again")
    subprocess.run(["git", "add", "again.txt"], cwd=repo, check=True)
    commit = subprocess.run(["git", "commit", "-q", "-m", "again"], cwd=repo, capture_output=True, text=True)
    assert commit.returncode == 0, commit.stdout + commit.stderr
    (repo / "HANDOFF.md").write_text(handoff_text(commit_all(repo), threads="- [x] done"))
    subprocess.run(["git", "add", "HANDOFF.md"], cwd=repo, check=True)
    blocked = subprocess.run(["git", "commit", "-q", "-m", "checked item"], cwd=repo, capture_output=True, text=True)
    assert blocked.returncode == 1 and "[handoff-no-checked-items]" in blocked.stderr, blocked.stderr


@pytest.mark.slow
def test_the_readme_first_command_as_a_new_user_runs_it(tmp_path: Path) -> None:
    """Step 1 in a clone of this repository, step 2 in a project, one shell, a fresh HOME: gate is on PATH after."""
    block = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    steps = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(steps) == 2, block
    clone, project, home = tmp_path / "handoff-gate", tmp_path / "project", tmp_path / "home"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    for name in subprocess.run(["git", "diff", "--name-only", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split():  # this checkout's uncommitted state, as it will land
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, clone / name)
    home.mkdir()
    init_repo(project)
    (project / "code.py").write_text("print(1)\n")
    commit_all(project, "first")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(HOME=str(home), PATH=":".join(p for p in env["PATH"].split(":") if not p.startswith(sys.prefix)))
    script = f"set -e\ncd {clone}\n{steps[0]}\ncd {project}\n{steps[1]}\ngate --version\n"
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "gate check: passed with warnings" in proc.stdout and proc.stdout.rstrip().endswith(f"handoff-gate {__version__}")

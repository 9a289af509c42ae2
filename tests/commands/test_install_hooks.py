"""`gate install-hooks`: native git hooks that chain the existing ones and uninstall cleanly, and `--agent`:
merged into realistic existing files, idempotent, uninstalled to the original bytes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import GATE_BIN, git, run_gate
from helpers import break_with_punctuation, entries
from test_confinement import snapshot

from gates.domain import agents, harness
from gates.infra import validation

EXISTING = {
    "claude": ('{\n  "$schema": "https://json.schemastore.org/claude-code-settings.json",\n  "permissions": {\n'
               '    "allow": ["Bash(npm run test:*)"],\n    "deny": ["Read(./.env)"]\n  },\n  "hooks": {\n'
               '    "PreToolUse": [\n      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}\n'
               '    ],\n    "SessionStart": [\n      {"matcher": "startup", "hooks": [{"type": "command", '
               '"command": "echo hello"}]}\n    ]\n  },\n  "model": "opus"\n}\n'),
    "codex": ('{\n    "hooks": {\n        "Stop": [\n            {\n                "hooks": [\n                    '
              '{"type": "command", "command": "python3 check.py", "timeout": 30}\n                ]\n            }\n'
              '        ]\n    }\n}\n'),
    "gemini": ('{\n  "general": {"vimMode": true},\n  "hooks": {\n    "BeforeTool": [\n      {"matcher": "write_file", '
               '"hooks": [{"type": "command", "command": "./guard.sh", "name": "guard", "timeout": 5000}]}\n    ]\n  }\n}'),
    "copilot": ('{\n  "version": 1,\n  "hooks": {\n    "sessionStart": [{"type": "command", "bash": "./start.sh", '
                '"timeoutSec": 10}]\n  }\n}\n'),
    "cursor": ('{\n  "version": 1,\n  "hooks": {\n    "afterFileEdit": [{"command": "./format.sh"}],\n'
               '    "stop": [{"command": "./notify.sh"}]\n  }\n}\n'),
    "agents-md": "# Agents\n\nUse pnpm, not npm.\n",
}


CONFIG_SCHEMA = {"claude": "claude-settings", "codex": "codex-hooks", "gemini": "gemini-settings",
                 "copilot": "copilot-hooks", "cursor": "cursor-hooks"}


def _ours(agent: str, doc: dict[str, object]) -> list[tuple[str, str]]:
    return [(event, command) for event, _, _, command in agents._our_hooks(agent, doc)]


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_merge_twice_then_uninstall_to_the_original_bytes(repo: Path, agent: str) -> None:
    path = repo / agents.FILES[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXISTING[agent])
    original = path.read_bytes()
    first = run_gate(repo, "install-hooks", "--agent", agent)
    assert first.returncode == 0, first.stderr
    installed = path.read_bytes()
    assert installed != original
    if agent == "agents-md":
        text = installed.decode()
        assert text.startswith(EXISTING[agent]) and "run `gate brief`" in text and "gate closeout --format text" in text
    else:
        before, after = json.loads(original), json.loads(installed)
        schema = harness.schema(CONFIG_SCHEMA[agent])
        assert validation.validate(schema, after, {}) == []
        for key, value in before.items():  # unrelated keys kept
            if key != "hooks":
                assert after[key] == value
        for event, listed in before["hooks"].items():  # other hooks kept, first and in order
            assert after["hooks"][event][:len(listed)] == listed
        commands = _ours(agent, after)
        assert {c.split(" --format ")[1] for _, c in commands} == {agent}
        kinds = {c.split(" --format ")[0].split(" ")[-1] for _, c in commands}
        assert all(agents.is_portable(c) and str(Path(str(GATE_BIN)).parent) not in c for _, c in commands)  # no path here
        assert kinds == ({"closeout"} if agent == "cursor" else {"brief", "closeout"})
        if agent in ("claude", "codex"):
            start = [g for g in after["hooks"]["SessionStart"] if _ours(agent, {"hooks": {"SessionStart": [g]}})]
            assert start[0]["matcher"] == "startup|resume|clear|compact|fork"
    again = run_gate(repo, "install-hooks", "--agent", agent)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert path.read_bytes() == installed
    removed = run_gate(repo, "install-hooks", "--agent", agent, "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert path.read_bytes() == original


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_uninstall_without_the_record_removes_exactly_ours(repo: Path, agent: str) -> None:
    """A collaborator's clone has no record of the original bytes: only the gate's entries go."""
    path = repo / agents.FILES[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXISTING[agent])
    assert run_gate(repo, "install-hooks", "--agent", agent).returncode == 0
    for record in (repo / ".git" / "gate" / "agents").iterdir():
        record.unlink()
    assert run_gate(repo, "install-hooks", "--agent", agent, "--uninstall").returncode == 0
    if agent == "agents-md":
        assert path.read_text() == EXISTING[agent]
    else:
        assert json.loads(path.read_text()) == json.loads(EXISTING[agent])


@pytest.mark.parametrize("forged", [{"created_dirs": [7]}, {"original": 12}, {"original": "not base64!"},
                                    {"original": ["a"]}])
def test_a_forged_install_record_is_no_record_never_a_traceback(repo: Path, tmp_path: Path,
                                                                forged: dict[str, object]) -> None:
    """The attack (adversarial review adv1, 06): the records under .git/gate/agents/ are files in the git dir, which
    whoever shaped the repository can write. One whose `written` matches the file (anyone can compute it) and whose
    `created_dirs` or `original` has another type made `--uninstall` a TypeError (exit 4). A record with a field
    of another type is unreadable at its one reader: no record, so uninstall removes exactly the gate's hooks."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"x": 1}\n')
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    for path in (repo / ".git" / "gate" / "agents").glob("*.json"):
        record = json.loads(path.read_text())
        wanted = "original" in forged and record["original"] is not None or "original" not in forged
        path.write_text(json.dumps({**record, **forged} if wanted else record))
    outside = snapshot(tmp_path, [repo])
    proc = run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall", process=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert json.loads((repo / ".claude" / "settings.json").read_text()) == {"x": 1}  # the user's key kept
    assert not (repo / ".claude" / "hooks" / "handoff-gate.sh").exists()
    assert snapshot(tmp_path, [repo]) == outside


def test_new_files_are_created_and_removed_with_their_folders(repo: Path) -> None:
    proc = run_gate(repo, "install-hooks", "--agent", "claude,codex,gemini,copilot,cursor,agents-md")
    assert proc.returncode == 0, proc.stderr
    assert "trust them in /hooks" in proc.stdout  # Codex: project hooks must be reviewed and trusted
    assert "config.toml" in proc.stdout and not (repo / ".codex" / "config.toml").exists()
    assert "not judged again by the other" in proc.stdout  # Copilot beside .claude/settings.json
    for agent, name in CONFIG_SCHEMA.items():
        assert validation.validate(harness.schema(name), json.loads((repo / agents.FILES[agent]).read_text()), {}) == []
    doctor = run_gate(repo, "doctor", env={**os.environ, "PATH": f"{Path(str(GATE_BIN)).parent}:{os.environ['PATH']}"})
    for agent in agents.AGENTS:
        assert f"ok    {agents.FILES[agent]}" in doctor.stdout
    assert run_gate(repo, "install-hooks", "--agent", "claude,codex,gemini,copilot,cursor,agents-md",
                    "--uninstall").returncode == 0
    for folder in (".claude", ".codex", ".gemini", ".github", ".cursor"):
        assert not (repo / folder).exists()
    assert not (repo / "AGENTS.md").exists()


def test_a_planted_symlink_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".claude").symlink_to(outside)
    proc = run_gate(repo, "install-hooks", "--agent", "claude")
    assert proc.returncode == 3 and "refusing it: it resolves outside the repository" in proc.stderr
    assert list(outside.iterdir()) == []
    (repo / "AGENTS.md").symlink_to(repo / ".git" / "config")
    assert run_gate(repo, "install-hooks", "--agent", "agents-md").returncode == 3


def test_a_broken_file_is_never_clobbered_and_doctor_says_so(repo: Path) -> None:
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "hooks.json").write_text('{"version": 1, "hooks": {')
    proc = run_gate(repo, "install-hooks", "--agent", "cursor")
    assert proc.returncode == 3 and "not valid JSON" in proc.stderr
    assert (repo / ".cursor" / "hooks.json").read_text() == '{"version": 1, "hooks": {'
    assert "FIX   .cursor/hooks.json" in run_gate(repo, "doctor").stdout


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
    break_with_punctuation(repo)
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
    break_with_punctuation(linked)
    git(linked, "add", "HANDOFF.md")
    assert subprocess.run(["git", "commit", "-q", "-m", "bad"], cwd=linked, capture_output=True).returncode == 1


def _hooks(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks"))


def test_uninstall_removes_the_pre_push_hook_too_and_puts_chained_hooks_back(repo: Path) -> None:
    hooks = _hooks(repo)
    hooks.mkdir(parents=True, exist_ok=True)
    mine = b'#!/bin/sh\necho "my own pre-push"\n'
    (hooks / "pre-push").write_bytes(mine)
    (hooks / "pre-push").chmod(0o750)
    before = entries(hooks)
    assert run_gate(repo, "install-hooks", "--pre-push").returncode == 0
    assert sorted(os.listdir(hooks)) == ["pre-commit", "pre-push", "pre-push.pre-gate"]
    out = run_gate(repo, "install-hooks", "--uninstall")
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        f"removed {hooks / 'pre-commit'}",
        f"removed the handoff-gate pre-push hook; your own hook is back at {hooks / 'pre-push'}"]
    assert entries(hooks) == before
    assert run_gate(repo, "install-hooks", "--uninstall").stdout == f"no handoff-gate hook in {hooks}\n"


def test_uninstall_leaves_a_hook_that_is_not_ours(repo: Path) -> None:
    hooks = _hooks(repo)
    assert run_gate(repo, "install-hooks").returncode == 0
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0\n")  # written by the user after the install
    (hooks / "pre-push.pre-gate").write_text("#!/bin/sh\nexit 1\n")
    before = {name: (hooks / name).read_bytes() for name in ("pre-push", "pre-push.pre-gate")}
    out = run_gate(repo, "install-hooks", "--uninstall").stdout.splitlines()
    assert f"left your pre-push hook at {hooks / 'pre-push.pre-gate'}: {hooks / 'pre-push'} is not ours, so it stays " \
           "where it is" in out
    assert {name: (hooks / name).read_bytes() for name in before} == before and not (hooks / "pre-commit").exists()


# ---- a hooks folder other repositories share: a global core.hooksPath (issue 25) -------------------------

def _global_hooks(tmp_path: Path) -> Path:
    """A `core.hooksPath` in the user's global config (conftest points HOME and GIT_CONFIG_GLOBAL at a tmp home),
    with a hook of the user's in it: the attack's setting."""
    folder = Path(os.environ["HOME"]) / ".githooks"
    folder.mkdir()
    (folder / "post-commit").write_text("#!/bin/sh\nexit 0\n")
    (folder / "post-commit").chmod(0o755)
    git(tmp_path, "config", "--global", "core.hooksPath", str(folder))
    return folder


def _unrelated_commit(tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    """A commit, through git's hooks, in a repository that has nothing to do with the gate."""
    from conftest import init_repo

    other = init_repo(tmp_path / name)
    (other / "y").write_text("y\n")
    git(other, "add", "y")
    return subprocess.run(["git", "commit", "-q", "-m", "an unrelated repository"], cwd=other, capture_output=True,
                          text=True, timeout=60)


def test_a_global_hooks_path_is_refused_without_global(repo: Path, tmp_path: Path) -> None:
    """The attack: install-hooks in one repository wrote the user's global hook, and every other repository's
    commit failed. Now: one line naming the setting and its origin, the global folder unchanged, and an
    unrelated repository still commits."""
    folder = _global_hooks(tmp_path)
    before = entries(folder)
    for args in (["install-hooks"], ["install-hooks", "--pre-push"], ["install-hooks", "--uninstall"]):
        proc = run_gate(repo, *args)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and proc.stdout == "", proc.stderr
        assert "core.hooksPath" in lines[0] and f"file:{os.environ['HOME']}/.gitconfig" in lines[0], lines[0]
        assert "global config" in lines[0] and "pass --global" in lines[0]
        assert entries(folder) == before
    assert _unrelated_commit(tmp_path, "other").returncode == 0
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()  # not written where git would not run it either


def test_a_global_hooks_path_is_refused_in_process_too(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import call_gate

    folder = _global_hooks(tmp_path)
    before = entries(folder)
    code, out, err = call_gate(repo, "install-hooks", capsys=capsys, monkeypatch=monkeypatch)
    assert (code, out) == (3, "") and "pass --global" in err and len(err.splitlines()) == 1
    assert entries(folder) == before


def test_with_global_the_shared_hook_does_nothing_in_a_repository_without_a_gate_config(repo: Path, tmp_path: Path) -> None:
    folder = _global_hooks(tmp_path)
    before = entries(folder)
    assert run_gate(repo, "init").returncode == 0  # .gate.yaml: the repository is the gate's
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "gate config")
    proc = run_gate(repo, "install-hooks", "--global", "--pre-push")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"installed {folder / name} (for every repository that has a .gate.yaml)"
                                        for name in ("pre-commit", "pre-push")]
    assert _unrelated_commit(tmp_path, "other").returncode == 0  # no .gate.yaml there: the hook does nothing
    break_with_punctuation(repo)  # in the gate's repository the shared hook judges the commit
    git(repo, "add", "HANDOFF.md")
    bad = subprocess.run(["git", "commit", "-q", "-m", "bad"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "[handoff-no-checked-items]" in bad.stderr
    doctor = run_gate(repo, "doctor").stdout
    assert "ok    core.hooksPath is" in doctor and "runs only in repositories with a .gate.yaml" in doctor, doctor
    assert f"ok    native hook {folder / 'pre-commit'} runs the gate" in doctor, doctor
    assert run_gate(repo, "install-hooks", "--uninstall").returncode == 3  # removing is writing too
    assert run_gate(repo, "install-hooks", "--uninstall", "--global").returncode == 0
    assert entries(folder) == before


def test_doctor_says_when_the_hooks_folder_is_shared(repo: Path, tmp_path: Path) -> None:
    _global_hooks(tmp_path)
    doctor = run_gate(repo, "doctor").stdout
    line = next(line for line in doctor.splitlines() if "core.hooksPath" in line)
    assert line.startswith("warn  ") and "global config" in line and "--global" in line, line


def test_global_without_a_shared_folder_is_a_usage_error(repo: Path) -> None:
    proc = run_gate(repo, "install-hooks", "--global")
    assert proc.returncode == 2 and "is this repository's own" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (repo / ".git" / "hooks").exists()
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--global").returncode == 2
    assert not (repo / ".claude").exists()


def test_a_relative_global_hooks_path_names_each_repositorys_own_folder(repo: Path, tmp_path: Path) -> None:
    git(tmp_path, "config", "--global", "core.hooksPath", ".githooks")
    assert run_gate(repo, "install-hooks").returncode == 0
    assert (repo / ".githooks" / "pre-commit").is_file()
    assert _unrelated_commit(tmp_path, "other").returncode == 0


def test_a_hooks_folder_linked_outside_the_repository_is_refused_without_global(repo: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    (repo / ".git" / "hooks").mkdir(exist_ok=True)
    os.rmdir(repo / ".git" / "hooks")
    (repo / ".git" / "hooks").symlink_to(shared)
    proc = run_gate(repo, "install-hooks")
    assert proc.returncode == 3 and "resolves outside this repository" in proc.stderr and "--global" in proc.stderr
    assert list(shared.iterdir()) == []


def test_a_local_hooks_path_inside_the_repository_keeps_working(repo: Path, tmp_path: Path) -> None:
    _global_hooks(tmp_path)
    git(repo, "config", "core.hooksPath", ".githooks")  # the repository's own setting wins over the global one
    assert run_gate(repo, "install-hooks").returncode == 0
    assert (repo / ".githooks" / "pre-commit").is_file()
    assert not [line for line in run_gate(repo, "doctor").stdout.splitlines() if "core.hooksPath is" in line]


def test_an_agents_md_with_a_bom_keeps_it_through_install_and_uninstall(repo: Path) -> None:
    """A user's AGENTS.md saved with a UTF-8 BOM: the block is added and removed around the user's text, and the
    BOM stays (it was dropped with the text's decoding), also when the record of the first install no longer
    applies (the user edited the file since)."""
    user = b"\xef\xbb\xbf# Notes\n\nKeep the tests fast.\n"
    (repo / "AGENTS.md").write_bytes(user)
    assert run_gate(repo, "install-hooks", "--agent", "agents-md").returncode == 0
    installed = (repo / "AGENTS.md").read_bytes()
    assert installed.startswith(user) and b"gate brief" in installed
    (repo / "AGENTS.md").write_bytes(installed + b"\nA later note.\n")  # the install's record no longer applies
    assert run_gate(repo, "install-hooks", "--agent", "agents-md", "--uninstall").returncode == 0
    left = (repo / "AGENTS.md").read_bytes()
    assert left.startswith(user) and b"gate brief" not in left and left.endswith(b"A later note.\n"), left


def test_a_hooks_folder_in_the_work_tree_is_said_to_be_no_place_to_commit_the_hooks(repo: Path) -> None:
    """A new user's finding: with `core.hooksPath .husky` (a folder projects commit), `gate install-hooks` wrote a hook
    naming this machine's Python there and said nothing; once committed, every other clone's commits failed. The
    hooks are still written (they work here), with a note that they must not be committed; the git dir's own
    folder gets no note."""
    plain = run_gate(repo, "install-hooks")
    assert plain.returncode == 0 and "note:" not in plain.stdout, plain.stdout
    git(repo, "config", "core.hooksPath", ".husky")
    (repo / ".husky").mkdir()
    proc = run_gate(repo, "install-hooks")
    assert proc.returncode == 0, proc.stderr
    assert (f"note: {repo}/.husky is in the work tree (core.hooksPath), where a hook can be committed, and these "
            "hooks name this machine's Python: do not commit them (`.gitignore` them); each clone runs "
            "`gate install-hooks` itself") in proc.stdout, proc.stdout
    assert (repo / ".husky" / "pre-commit").is_file()

"""The committed harness configuration runs on every clone (issue 26): it names no path of the machine that
installed it, runs the gate installed anywhere else, and where there is none says "handoff-gate is not installed
here" in the harness's own document, exiting 0 (Gemini reads any other exit code as a deny). The hooks are run as
a harness runs them: the command string through a shell, the harness's JSON on stdin, in a second clone whose gate
lives in another environment, or in none."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GATE_BIN, ROOT, commit_all, git, handoff_text, init_repo, run_gate

from gates.domain import agents, harness
from gates.domain.hooks import ENTRY
from gates.infra import validation

HARNESSES = ("claude", "codex", "gemini", "copilot", "cursor")
START = {"claude": "SessionStart", "codex": "SessionStart", "gemini": "SessionStart", "copilot": "sessionStart"}
STOP = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent", "copilot": "agentStop", "cursor": "stop"}
GATE_DIR = Path(str(GATE_BIN)).parent
DEPENDENCIES = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "jsonschema").is_dir())


def _venv(path: Path, with_gate: bool = True) -> Path:
    """A virtual environment at `path` (another path than the one that installed the hooks); with the gate
    importable and its `gate` script when `with_gate`, else a Python that has no gate at all."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    if with_gate:
        site = next((path / "lib").glob("python*/site-packages"))
        (site / "handoff_gate_here.pth").write_text(f"{ROOT}\n{DEPENDENCIES}\n")
        script = (ROOT / "gates" / "_bin" / "gate").read_text().split("\n", 1)[1]
        (path / "bin" / "gate").write_text(f"#!{path / 'bin' / 'python'}\n{script}")
        (path / "bin" / "gate").chmod(0o755)
    return path / "bin"


def _python3(bin_dir: Path) -> None:
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to("python")


def _hooks(repo: Path, agent: str) -> dict[str, str]:
    """kind -> the command string of our hook in the committed file, as the harness reads it."""
    doc = json.loads((repo / agents.FILES[agent]).read_text())
    out = {}
    for event, _, _, command in agents._our_hooks(agent, doc):
        out["brief" if event == START.get(agent) else "closeout"] = command
    return out


def _context(document: dict[str, object]) -> object:
    """The context a start document hands the model: Copilot's at the top, the others' in hookSpecificOutput."""
    inner = document.get("hookSpecificOutput")
    return inner.get("additionalContext") if isinstance(inner, dict) else document.get("additionalContext")


def _as_the_harness(repo: Path, command: str, payload: dict[str, object], path: str) -> subprocess.CompletedProcess[str]:
    """The command run the way the four CLIs run a hook: through a shell, JSON on stdin, in the project folder."""
    env = {"PATH": path, "HOME": str(repo.parent / "home"), "LANG": "C.UTF-8", "CLAUDE_PROJECT_DIR": str(repo),
           "GEMINI_PROJECT_DIR": str(repo)}
    return subprocess.run(["/bin/sh", "-c", command], cwd=repo, input=json.dumps(payload), capture_output=True,
                          text=True, timeout=60, env=env)


def _configured_elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    """(repository A, its clone B): A wired for every harness by the test's own installation, committed."""
    a = init_repo(tmp_path / "a")
    (a / "README").write_text("hello\n")
    head = commit_all(a, "first")
    (a / "HANDOFF.md").write_text(handoff_text(head))
    commit_all(a, "handoff")
    proc = run_gate(a, "install-hooks", "--agent", "claude,codex,gemini,copilot,cursor,agents-md")
    assert proc.returncode == 0, proc.stderr
    commit_all(a, "wire the session loop")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(a), str(b))
    return a, b


def _work(repo: Path) -> None:
    (repo / "feature.py").write_text("x = 1\n")
    git(repo, "add", "feature.py")
    git(repo, "commit", "-q", "--no-verify", "-m", "add the feature")


def _system_path() -> str:
    return ":".join(p for p in ("/usr/bin", "/bin") if os.path.isdir(p))


def test_the_committed_files_are_the_same_bytes_from_two_installations(tmp_path: Path) -> None:
    """Two environments at two paths install into two repositories, and re-install into each other's: the bytes of
    every committed file agree, and none names either environment."""
    envs = [_venv(tmp_path / name) for name in ("env-one", "env-two")]
    written = []
    for n, bin_dir in enumerate(envs):
        repo = init_repo(tmp_path / f"repo-{n}")
        proc = subprocess.run([str(bin_dir / "python"), "-I", "-m", "gates", "install-hooks", "--agent",
                               "claude,codex,gemini,copilot,cursor,agents-md"], cwd=repo, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        written.append({agent: (repo / agents.FILES[agent]).read_bytes() for agent in agents.AGENTS})
        written[-1]["script"] = (repo / agents.SCRIPTS["claude"]).read_bytes()
    assert written[0] == written[1]
    for data in written[0].values():
        assert b"env-one" not in data and b"env-two" not in data and str(ROOT).encode() not in data
    stats = {agent: (tmp_path / "repo-0" / agents.FILES[agent]).stat() for agent in agents.AGENTS}
    again = subprocess.run([str(envs[1] / "python"), "-I", "-m", "gates", "install-hooks", "--agent",
                            "claude,codex,gemini,copilot,cursor,agents-md"], cwd=tmp_path / "repo-0",
                           capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout.count("already runs the gate, unchanged") == 6, again.stdout
    assert {agent: (tmp_path / "repo-0" / agents.FILES[agent]).read_bytes() for agent in agents.AGENTS} == \
        {agent: data for agent, data in written[0].items() if agent != "script"}
    assert "the hook program, unchanged" in again.stdout
    for agent, before in stats.items():  # not written again either: the same file, untouched
        after = (tmp_path / "repo-0" / agents.FILES[agent]).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), agent


@pytest.mark.parametrize("agent", HARNESSES)
def test_a_clone_runs_the_committed_hooks_with_the_gate_installed_elsewhere(tmp_path: Path, agent: str) -> None:
    _, b = _configured_elsewhere(tmp_path)
    path = f"{_venv(tmp_path / 'elsewhere')}:{_system_path()}"
    hooks = _hooks(b, agent)
    if agent in START:
        start = _as_the_harness(b, hooks["brief"], {"session_id": "s-1", "source": "startup"}, path)
        assert start.returncode == 0, start.stderr
        document = json.loads(start.stdout)
        assert validation.validate(harness.schema(harness.START_SCHEMA[agent]), document, {}) == []
        assert f"# Session brief: {b}" in _context(document)  # type: ignore[operator]
    _work(b)
    stop = _as_the_harness(b, hooks["closeout"], {"session_id": "s-1", "stop_hook_active": False}, path)
    assert stop.returncode == 0, stop.stderr
    document = json.loads(stop.stdout)
    assert validation.validate(harness.schema(harness.STOP_SCHEMA[agent]), document, {}) == []
    reason = document.get("reason") or document.get("followup_message")
    assert document.get("decision", "block") in ("block", "deny") and "add the feature" in reason, document
    journal = (b / ".git" / "gate" / "journal.jsonl").read_text()
    assert '"verdict": "block"' in journal.replace('":"', '": "')


def test_the_python_fallback_runs_the_installed_gate_when_no_gate_script_is_on_path(tmp_path: Path) -> None:
    _, b = _configured_elsewhere(tmp_path)
    bin_dir = _venv(tmp_path / "elsewhere")
    (bin_dir / "gate").unlink()
    _python3(bin_dir)
    start = _as_the_harness(b, _hooks(b, "claude")["brief"], {"session_id": "s", "source": "startup"},
                            f"{bin_dir}:{_system_path()}")
    assert start.returncode == 0 and "# Session brief:" in start.stdout, start.stdout + start.stderr


def _as_gemini_loads_it(command: str, env: dict[str, str]) -> str:
    """`command` after Gemini CLI's settings loader (0.61.0, envVarResolver): every `$NAME`, `${NAME}` and
    `${NAME:-default}` in a settings string is replaced by NAME's value in its environment, or by the default where
    there is one and NAME is unset; anything else is left as it was. It runs before the shell sees the command."""

    def resolve(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or ""
        if name in env:
            return env[name]
        return m.group(3) if m.group(3) is not None else m.group(0)

    return re.sub(r"\$(?:(\w+)|{([^}]+?)(?::-([^}]*))?})", resolve, command)


@pytest.mark.parametrize("exported", [{}, {name: "/tmp/evil dir" for name in "rtpdegsy"}], ids=["plain", "letters"])
def test_the_gemini_hooks_find_the_gate_after_gemini_resolves_its_settings(tmp_path: Path,
                                                                          exported: dict[str, str]) -> None:
    """Gemini CLI puts its environment into the command's `$PATH` (a literal list then, which the loop over PATH's
    folders no longer splits) and the default into `${p:-…}` before the shell runs it: measured in Gemini CLI
    0.61.0, where the installed gate was never found and every session was told it is not installed. An environment
    that exports the program's own one-letter names (`r`, `p`, …) must not rewrite it either."""
    _, b = _configured_elsewhere(tmp_path)
    path = f"{_venv(tmp_path / 'elsewhere')}:{_system_path()}"
    env = {"PATH": path, "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8", **exported}
    hooks = {kind: _as_gemini_loads_it(command, env) for kind, command in _hooks(b, "gemini").items()}
    start = _as_the_harness(b, hooks["brief"], {"session_id": "s-1", "source": "startup"}, path)
    assert start.returncode == 0 and f"# Session brief: {b}" in _context(json.loads(start.stdout)), start.stdout  # type: ignore[operator]
    _work(b)
    stop = _as_the_harness(b, hooks["closeout"], {"session_id": "s-1", "stop_hook_active": False}, path)
    assert json.loads(stop.stdout).get("decision") == "deny", stop.stdout


@pytest.mark.parametrize("agent", HARNESSES)
def test_without_the_gate_each_hook_says_so_once_and_never_blocks(tmp_path: Path, agent: str) -> None:
    """No gate on PATH, and a python3 that has none either: one line, in the harness's document, exit 0, never a
    deny or a block (Gemini re-prompted the model with exit 127's shell error until it crashed)."""
    _, b = _configured_elsewhere(tmp_path)
    path = f"{_venv(tmp_path / 'bare', with_gate=False)}:{_system_path()}"
    hooks = _hooks(b, agent)
    for kind, command in hooks.items():
        payloads: list[dict[str, object]] = ([{"session_id": "s", "source": "startup"}, {}] if kind == "brief" else
                    [{"session_id": "s", "stop_hook_active": False}, {"session_id": "s", "stop_hook_active": True}])
        for payload in payloads:
            proc = _as_the_harness(b, command, payload, path)
            assert proc.returncode == 0, proc.stderr
            document = json.loads(proc.stdout)
            schema = (harness.START_SCHEMA if kind == "brief" else harness.STOP_SCHEMA)[agent]
            assert validation.validate(harness.schema(schema), document, {}) == []
            assert "decision" not in document and "followup_message" not in document
            relayed = kind == "brief" and agent not in harness.NOTICE_FORMATS  # its model tells the user
            said = [document.get("systemMessage"), str(_context(document) or "").removesuffix(harness.RELAY) or None,
                    proc.stderr.strip() or None]
            assert {s for s in said if s} == {agents.NOT_INSTALLED[kind]}, (kind, document, proc.stderr)
            assert str(_context(document) or "").endswith(harness.RELAY) == relayed, document
            assert agents.NOT_INSTALLED[kind].startswith("handoff-gate is not installed here")
            assert agents.INSTALL_LINE in agents.NOT_INSTALLED[kind]
    assert not (b / ".git" / "gate" / "journal.jsonl").exists()


@pytest.mark.parametrize("broken", ["interpreter-gone", "exits-2", "exits-3"])
def test_a_gate_that_cannot_start_or_fails_never_denies(tmp_path: Path, broken: str) -> None:
    """A `gate` on PATH whose interpreter is gone (exit 127: a pipx venv after a Python upgrade) is passed over and the
    hook says the gate is not installed; one that fails with 2 or 3 still leaves the hook at 0 (Gemini denies on
    any code but 0 and 1, Claude Code blocks on 2)."""
    _, b = _configured_elsewhere(tmp_path)
    bin_dir = _venv(tmp_path / "bare", with_gate=False)
    program = {"interpreter-gone": f"#!{tmp_path / 'gone' / 'python'}\n", "exits-2": "#!/bin/sh\nexit 2\n",
               "exits-3": "#!/bin/sh\necho oops >&2\nexit 3\n"}[broken]
    (bin_dir / "gate").write_text(program)
    (bin_dir / "gate").chmod(0o755)
    for agent in ("gemini", "claude"):
        for kind, command in _hooks(b, agent).items():
            proc = _as_the_harness(b, command, {"session_id": "s", "stop_hook_active": False},
                                   f"{bin_dir}:{_system_path()}")
            assert proc.returncode == 0, (agent, kind, proc.returncode, proc.stderr)
            if broken == "interpreter-gone":
                assert agents.NOT_INSTALLED[kind] in proc.stdout, (agent, kind, proc.stdout)


def _canary_repository(b: Path, marker: Path) -> None:
    """What a hostile repository commits for the hook to find: a `gate` and a `python3` at its top and in bin/, and
    a gates/ package, each of which leaves `marker` behind when run."""
    program = f"#!/bin/sh\necho ran >> {marker}\necho '{{}}'\n"
    for name in ("gate", "bin/gate", "python3", "bin/python3"):
        (b / name).parent.mkdir(exist_ok=True)
        (b / name).write_text(program)
        (b / name).chmod(0o755)
    (b / "gates").mkdir()
    (b / "gates" / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('ran')\n")
    (b / "gates" / "main.py").write_text(f"open({str(marker)!r}, 'a').write('ran')\n")
    commit_all(b, "tools")


def _tree(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


@pytest.mark.parametrize("installed", [True, False])
def test_nothing_the_repository_commits_is_run_by_the_committed_hooks(tmp_path: Path, installed: bool) -> None:
    """The attack: PATH holds `.`, an empty entry, `bin` and the clone's own bin/ (absolute, and through a link from
    outside), before the real gate or none; the committed `gate`, `python3` and gates/ must never run."""
    _, b = _configured_elsewhere(tmp_path)
    marker = tmp_path / "ran"
    _canary_repository(b, marker)
    link = tmp_path / "link-into-the-clone"
    link.symlink_to(b / "bin")
    real = f"{_venv(tmp_path / 'elsewhere')}:" if installed else ""
    path = f".::bin:{b / 'bin'}:{link}:{real}{_system_path()}"
    before = _tree(b)
    for agent in HARNESSES:
        for kind, command in _hooks(b, agent).items():
            proc = _as_the_harness(b, command, {"session_id": "s", "source": "startup", "stop_hook_active": True},
                                   path)
            assert proc.returncode == 0, proc.stderr
            said = proc.stdout + proc.stderr
            assert ("Session brief" in said or kind == "closeout") if installed else "is not installed here" in said
    assert not marker.exists()
    assert _tree(b) == before


def test_claude_fork_cap_units_and_the_let_through_said_to_the_user(tmp_path: Path) -> None:
    _, b = _configured_elsewhere(tmp_path)
    path = f"{_venv(tmp_path / 'elsewhere')}:{_system_path()}"
    matcher = json.loads((b / agents.FILES["claude"]).read_text())["hooks"]["SessionStart"][0]["matcher"]
    assert all(re.fullmatch(matcher, source) for source in ("startup", "resume", "clear", "compact", "fork"))
    hooks = _hooks(b, "claude")
    forked = _as_the_harness(b, hooks["brief"], {"session_id": "f", "source": "fork"}, path)
    assert "# Session brief:" in json.loads(forked.stdout)["hookSpecificOutput"]["additionalContext"]
    # closeout.max_blocks 12: Claude Code would end the turn after 9 blocks, so the gate lets go after 8, and says so
    (b / ".gate.yaml").write_text("closeout:\n  max_blocks: 12\n")
    note = run_gate(b, "install-hooks", "--agent", "claude")
    assert "closeout.max_blocks is 12, but Claude Code ends a turn itself after 9" in note.stdout, note.stdout
    _work(b)
    outputs = [_as_the_harness(b, hooks["closeout"], {"session_id": "c", "stop_hook_active": n > 0}, path).stdout
               for n in range(9)]
    assert [json.loads(o).get("decision") for o in outputs[:8]] == ["block"] * 8
    let_through = json.loads(outputs[8])
    assert validation.validate(harness.schema("claude-stop"), let_through, {}) == []
    assert "decision" not in let_through and "capped at 8 for claude" in let_through["systemMessage"]
    assert list((b / ".git" / "gate" / "flags").glob("*-closeout-missing-*.json"))


@pytest.mark.parametrize("fallback", [False, True])
def test_the_stop_reason_names_a_gate_a_login_shell_can_run(tmp_path: Path, fallback: bool) -> None:
    """Codex's shell tool is a login shell: the folder that held `gate` on the hook's PATH is gone there. The reason
    names this very gate by a command that needs no PATH, and that command, run with no gate on PATH, works."""
    _, b = _configured_elsewhere(tmp_path)
    bin_dir = _venv(tmp_path / "elsewhere")
    if fallback:  # no `gate` script: the hook ran `python3 -I -c …`
        (bin_dir / "gate").unlink()
        _python3(bin_dir)
    _work(b)
    stop = _as_the_harness(b, _hooks(b, "codex")["closeout"], {"session_id": "s", "stop_hook_active": False},
                           f"{bin_dir}:{_system_path()}")
    reason = json.loads(stop.stdout)["reason"]
    named = re.search(r"Where your shell does not find `gate`, run `([^`]+)` in its place\.", reason)
    assert named, reason
    assert named.group(1) == (f"{bin_dir / 'python3'} -I -m gates" if fallback else str(bin_dir / "gate"))
    login = subprocess.run(["/bin/sh", "-c", f"{named.group(1)} closeout --format text"], cwd=b, capture_output=True,
                           text=True, timeout=60, env={"PATH": _system_path(), "HOME": str(tmp_path / "home")})
    assert login.returncode == 1 and "1. " in login.stdout, login.stdout + login.stderr


def test_copilot_session_start_hands_the_brief_to_the_model(tmp_path: Path) -> None:
    """Copilot CLI 1.0.102 delivers a sessionStart hook's `{"additionalContext": …}` (its reference says the output
    is ignored): the committed file runs `gate brief --format copilot` there, and the brief arrives in that shape."""
    _, b = _configured_elsewhere(tmp_path)
    listed = json.loads((b / agents.FILES["copilot"]).read_text())["hooks"]["sessionStart"]
    assert [set(entry) for entry in listed] == [{"type", "bash", "timeoutSec"}]
    payload = {"timestamp": 1704614400000, "cwd": str(b), "source": "new", "initialPrompt": "go"}
    start = _as_the_harness(b, listed[0]["bash"], payload, f"{_venv(tmp_path / 'elsewhere')}:{_system_path()}")
    assert start.returncode == 0 and start.stdout.count("\n") == 1, start.stderr
    document = json.loads(start.stdout)
    assert validation.validate(harness.schema("copilot-session-start"), document, {}) == []
    assert list(document) == ["additionalContext"] and "## 4. Hand-over" in document["additionalContext"]
    assert len(document["additionalContext"]) <= (harness.START_BUDGET["copilot"] or 0)
    journal = [json.loads(line) for line in (b / ".git" / "gate" / "journal.jsonl").read_text().splitlines()]
    assert journal[-1]["action"] == "session-brief" and journal[-1]["details"]["harness"] == "copilot"


def test_claude_brief_budget_counts_utf16_units(repo: Path) -> None:
    """Claude Code's 10,000 limit counts UTF-16 units: a brief of emoji (2 units each) within 9,000 characters was
    still spilled to a 2 KB preview."""
    text = (repo / "HANDOFF.md").read_text()
    (repo / "HANDOFF.md").write_text(text.replace("Build the thing.", "Build the thing. " + "\U0001f680" * 6000))
    proc = run_gate(repo, "brief", "--format", "claude")
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert harness.units("claude", context) <= (harness.START_BUDGET["claude"] or 0), harness.units("claude", context)
    assert "the full brief is in" in context  # cut to the budget, and said where the rest is
    codex = json.loads(run_gate(repo, "brief", "--format", "codex").stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(codex) <= (harness.START_BUDGET["codex"] or 0)


def test_codex_reads_the_stop_reason_without_xml_escapes(repo: Path) -> None:
    """Codex XML-escapes the reason (`&&` reached the model as `&amp;&amp;`): its reason says `then` instead."""
    _work(repo)
    proc = subprocess.run([str(GATE_BIN), "closeout", "--format", "codex"], cwd=repo, input='{"session_id": "x"}',
                          capture_output=True, text=True, timeout=60)
    reason = json.loads(proc.stdout)["reason"]
    assert not set("&<>") & set(reason), reason
    assert "`git add HANDOFF.md`, then `git commit -m" in reason
    claude = subprocess.run([str(GATE_BIN), "closeout", "--format", "claude"], cwd=repo, input='{"session_id": "y"}',
                            capture_output=True, text=True, timeout=60)
    assert "git add HANDOFF.md && git commit" in json.loads(claude.stdout)["reason"]  # the others keep the command


def test_agents_md_names_the_form_that_runs_without_gate_on_path(repo: Path) -> None:
    assert run_gate(repo, "install-hooks", "--agent", "agents-md").returncode == 0
    block = (repo / "AGENTS.md").read_text()
    assert "python3 -I -m gates" in block and "handoff-gate is not installed here" in block
    assert agents.INSTALL_LINE in block


def test_local_writes_this_machines_form_in_the_per_user_file_only(repo: Path) -> None:
    proc = run_gate(repo, "install-hooks", "--agent", "claude", "--local")
    assert proc.returncode == 0, proc.stderr
    assert "is not ignored by git" in proc.stdout
    local = json.loads((repo / agents.LOCAL_FILES["claude"]).read_text())
    commands = [c for _, _, _, c in agents._our_hooks("claude", local)]
    assert len(commands) == 2 and all(os.path.samefile(agents.interpreter_of(c), sys.executable) for c in commands)
    assert all(" -I " in c and ENTRY in c and not agents.is_portable(c) for c in commands)
    assert not (repo / agents.FILES["claude"]).exists()
    # both files would run the gate twice: the committed one is refused while the local one runs it, and back
    refused = run_gate(repo, "install-hooks", "--agent", "claude")
    assert refused.returncode == 3 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "--local --uninstall" in refused.stderr and not (repo / agents.FILES["claude"]).exists()
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--local", "--uninstall").returncode == 0
    assert not (repo / ".claude").exists()
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    shared = (repo / agents.FILES["claude"]).read_bytes()
    again = run_gate(repo, "install-hooks", "--agent", "claude", "--local")
    assert again.returncode == 3 and "--agent claude --uninstall" in again.stderr
    assert (repo / agents.FILES["claude"]).read_bytes() == shared and not (repo / agents.LOCAL_FILES["claude"]).exists()
    other = run_gate(repo, "install-hooks", "--agent", "codex", "--local")
    assert other.returncode == 2 and "no per-user project file" in other.stderr and not (repo / ".codex").exists()


def test_a_committed_per_user_file_is_said_to_name_this_machines_interpreter(repo: Path) -> None:
    """A new user's finding: `.claude/settings.local.json` (this machine's interpreter, by absolute path) committed
    went unremarked by `gate doctor`, though docs/agents.md promises a warning for hooks that name one machine's
    interpreter in a committed file. Untracked, it is as meant: ok."""
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--local").returncode == 0
    shown = agents.LOCAL_FILES["claude"]
    [line] = [line for line in run_gate(repo, "doctor").stdout.splitlines() if line[6:].startswith(shown)]
    assert line.startswith("ok    "), line
    git(repo, "add", "-f", shown)
    git(repo, "commit", "-q", "--no-verify", "-m", "commit the per-user file by mistake")
    [line] = [line for line in run_gate(repo, "doctor").stdout.splitlines() if line[6:].startswith(shown)]
    command = [c for _, _, _, c in agents._our_hooks("claude", json.loads((repo / shown).read_text()))][0]
    assert line.startswith(f"warn  {shown} is committed, though it is a per-user file: its hooks name this machine's "
                           f"interpreter ({agents.interpreter_of(command)}), which no other clone has — `git rm "
                           f"--cached {shown}`"), line


def test_doctor_says_when_the_committed_hooks_will_not_find_the_gate(repo: Path, tmp_path: Path) -> None:
    assert run_gate(repo, "install-hooks", "--agent", "gemini").returncode == 0
    bare = {**os.environ, "PATH": _system_path()}
    assert shutil.which("gate", path=bare["PATH"]) is None
    out = run_gate(repo, "doctor", env=bare).stdout
    assert "warn  .gemini/settings.json: its hooks run the `gate` on PATH" in out and "not installed here" in out
    found = run_gate(repo, "doctor", env={**os.environ, "PATH": f"{GATE_DIR}:{_system_path()}"}).stdout
    assert "ok    .gemini/settings.json: SessionStart runs `gate brief --format gemini`" in found
    assert f"(the `gate` on PATH: {GATE_DIR / 'gate'})" in found


def test_a_file_an_older_version_wrote_is_told_and_rewritten_portable(repo: Path) -> None:
    """What earlier versions committed: this machine's interpreter by absolute path. The doctor says no other clone
    can run it; a re-install puts the portable form in its place, each hook where it was, and the matcher they wrote
    gains `fork` (a matcher the user chose stays theirs)."""
    doc = {"hooks": {"SessionStart": [{"matcher": "startup|resume|clear|compact", "hooks": [
        {"type": "command", "command": agents.command_line("brief", "claude"), "timeout": 30}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo mine"},
                            {"type": "command", "command": agents.command_line("closeout", "claude"), "timeout": 60}]}]}}
    (repo / ".claude").mkdir()
    (repo / agents.FILES["claude"]).write_text(json.dumps(doc, indent=2) + "\n")
    path = f"{GATE_DIR}:{_system_path()}"
    told = run_gate(repo, "doctor", env={**os.environ, "PATH": path}).stdout
    assert "warn  .claude/settings.json: the hooks name this machine's interpreter" in told, told
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    after = json.loads((repo / agents.FILES["claude"]).read_text())
    assert [h["command"] for h in after["hooks"]["Stop"][0]["hooks"]] == ["echo mine", agents.short_line("closeout",
                                                                                                        "claude")]
    assert after["hooks"]["SessionStart"][0]["hooks"][0]["command"] == agents.short_line("brief", "claude")
    assert after["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact|fork"
    assert sys.executable not in (repo / agents.FILES["claude"]).read_text()
    assert "ok    .claude/settings.json" in run_gate(repo, "doctor", env={**os.environ, "PATH": path}).stdout
    after["hooks"]["SessionStart"][0]["matcher"] = "startup"
    (repo / agents.FILES["claude"]).write_text(json.dumps(after, indent=2) + "\n")
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    assert json.loads((repo / agents.FILES["claude"]).read_text())["hooks"]["SessionStart"][0]["matcher"] == "startup"


# ---- Claude Code quotes the hook's command to the model on every block: a short one, its program in a file ------

SCRIPT = agents.SCRIPTS["claude"]


def test_the_command_claude_quotes_on_a_block_is_short_and_says_nothing_false(tmp_path: Path) -> None:
    """Claude Code 2.1.332 tells the model `Stop hook blocking error from command: "<command>": <reason>`: the 1.2 KB
    program with its "not installed here, so this stop was not checked" reached the model on every block, the gate
    installed or not. The committed command is a short line; the program and its notice are in SCRIPT."""
    _, b = _configured_elsewhere(tmp_path)
    hooks = _hooks(b, "claude")
    stop = hooks["closeout"]  # the one a block quotes
    assert len(stop) < 200 and "not installed" not in stop and "missing" not in stop and SCRIPT in stop, stop
    assert "not installed" not in hooks["brief"] and SCRIPT in hooks["brief"]  # never quoted with a block
    assert (b / SCRIPT).read_bytes() == agents.script_text("claude")  # committed, so the clone has it
    assert agents.NOT_INSTALLED["closeout"].encode() in (b / SCRIPT).read_bytes()


@pytest.mark.parametrize("planted", ["missing", "link", "fifo"])
def test_the_short_command_does_nothing_and_exits_0_without_a_script_of_its_own(tmp_path: Path, planted: str) -> None:
    """`sh FILE` exits 2 for a missing FILE (dash), which Claude Code reads as a block; a link or a FIFO there (a
    clone's own) is not run either, and a FIFO does not hang the hook. The start hook says the loop is not running
    (loud at every session start: a clone whose script was never committed is told); the stop hook is silent."""
    _, b = _configured_elsewhere(tmp_path)
    marker = tmp_path / "ran"
    (b / SCRIPT).unlink()
    if planted == "link":
        (tmp_path / "evil.sh").write_text(f"echo ran > {marker}\n")
        (b / SCRIPT).symlink_to(tmp_path / "evil.sh")
    elif planted == "fifo":
        os.mkfifo(b / SCRIPT)
    path = f"{_venv(tmp_path / 'elsewhere')}:{_system_path()}"
    _work(b)
    hooks = _hooks(b, "claude")
    stop = _as_the_harness(b, hooks["closeout"], {"session_id": "s", "stop_hook_active": False}, path)
    assert (stop.returncode, stop.stdout) == (0, ""), stop.stderr
    start = _as_the_harness(b, hooks["brief"], {"session_id": "s", "source": "startup"}, path)
    document = json.loads(start.stdout)
    assert start.returncode == 0 and validation.validate(harness.schema(harness.START_SCHEMA["claude"]), document, {}) == []
    said = agents.SCRIPT_MISSING.format(script=SCRIPT, fmt="claude")
    assert _context(document) == said and document.get("systemMessage") == said
    assert not marker.exists()


def test_uninstall_removes_the_script_and_reinstall_is_idempotent(repo: Path) -> None:
    (repo / ".claude").mkdir()
    (repo / agents.FILES["claude"]).write_text('{"model": "mine"}\n')
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    stat = (repo / SCRIPT).stat()
    again = run_gate(repo, "install-hooks", "--agent", "claude")
    assert "the hook program, unchanged" in again.stdout and "already runs the gate, unchanged" in again.stdout
    assert ((repo / SCRIPT).stat().st_ino, (repo / SCRIPT).stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    (repo / SCRIPT).unlink()  # gone: a re-install puts it back
    assert "wrote " + SCRIPT in run_gate(repo, "install-hooks", "--agent", "claude").stdout
    gone = run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall")
    assert gone.returncode == 0 and f"removed {SCRIPT}" in gone.stdout, gone.stdout
    assert not (repo / ".claude" / "hooks").exists()
    assert (repo / agents.FILES["claude"]).read_text() == '{"model": "mine"}\n'
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall").returncode == 0
    assert not (repo / ".claude" / "hooks").exists()
    fresh = run_gate(repo, "install-hooks", "--agent", "claude")  # no .claude/ at all before: none after
    assert fresh.returncode == 0
    shutil.rmtree(repo / ".claude")
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall").returncode == 0
    assert not (repo / ".claude").exists()


def test_uninstall_keeps_a_script_changed_since(repo: Path) -> None:
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    (repo / SCRIPT).write_text("#!/bin/sh\necho mine\n")
    gone = run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall")
    assert gone.returncode == 0 and "left as it is" in gone.stdout
    assert (repo / SCRIPT).read_text() == "#!/bin/sh\necho mine\n"
    assert not (repo / agents.FILES["claude"]).exists()


def _hostile_script(repo: Path, marker: Path, planted: str) -> None:
    (repo / ".claude" / "hooks").mkdir(parents=True, exist_ok=True)
    program = f"#!/bin/sh\necho ran >> {marker}\n"
    if planted == "foreign":
        (repo / SCRIPT).write_text(program)
    elif planted == "link":
        (repo / "elsewhere.sh").write_text(program)
        (repo / SCRIPT).symlink_to("../../elsewhere.sh")
    else:
        os.mkfifo(repo / SCRIPT)


def _entries_of(repo: Path) -> dict[Path, tuple[int, object]]:
    """Every work-tree entry's mode and content (a link's target; a FIFO is never opened)."""
    return {p: (os.lstat(p).st_mode, os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else b"")
            for p in sorted(repo.rglob("*")) if ".git" not in p.relative_to(repo).parts}


@pytest.mark.parametrize("planted", ["foreign", "link", "fifo"])
def test_a_script_the_repository_commits_is_refused_not_run_not_overwritten(repo: Path, tmp_path: Path,
                                                                            planted: str) -> None:
    """The attack: a repository commits its own program at SCRIPT (a file, a link to one, a FIFO). The installer
    refuses in one line naming it, writes nothing, runs nothing; uninstall removes nothing of it."""
    marker = tmp_path / "ran"
    _hostile_script(repo, marker, planted)
    before = _entries_of(repo)
    for argv in (("install-hooks", "--agent", "claude"), ("install-hooks", "--agent", "claude", "--uninstall")):
        proc = run_gate(repo, *argv)
        assert proc.returncode in ((0, 3) if "--uninstall" in argv else (3,)), proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) <= 1
        if proc.returncode:
            assert SCRIPT in proc.stderr and "refusing it" in proc.stderr, proc.stderr
    assert _entries_of(repo) == before and not marker.exists()
    assert not (repo / agents.FILES["claude"]).exists()


@pytest.mark.parametrize("planted", ["foreign", "link", "fifo", "missing"])
def test_doctor_reports_a_script_that_is_not_ours(tmp_path: Path, planted: str) -> None:
    """A clone whose committed settings run SCRIPT, and SCRIPT is not the gate's bytes (or a link, a FIFO, gone):
    the doctor says FIX naming it, and runs nothing."""
    _, b = _configured_elsewhere(tmp_path)
    marker = tmp_path / "ran"
    (b / SCRIPT).unlink()
    if planted != "missing":
        _hostile_script(b, marker, planted)
    out = run_gate(b, "doctor", env={**os.environ, "PATH": f"{GATE_DIR}:{_system_path()}"}).stdout
    line = next((x for x in out.splitlines() if SCRIPT in x), "")
    assert line.startswith("FIX") and ".claude/settings.json" in line, out
    assert not marker.exists()
    (b / SCRIPT).unlink(missing_ok=True)
    assert run_gate(b, "install-hooks", "--agent", "claude").returncode == 0
    out = run_gate(b, "doctor", env={**os.environ, "PATH": f"{GATE_DIR}:{_system_path()}"}).stdout
    assert "ok    .claude/settings.json" in out and SCRIPT not in out, out


def test_doctor_warns_about_the_inline_program_an_earlier_version_committed(repo: Path) -> None:
    """A .claude/settings.json holding the whole program (what earlier versions wrote) still runs, but Claude Code
    quotes it with every block: the doctor says so, and a re-install writes the short form and the script."""
    doc = {"hooks": {"SessionStart": [{"matcher": agents.ALL_SOURCES, "hooks": [
        {"type": "command", "command": agents.portable_line("brief", "claude"), "timeout": 30}]}],
        "Stop": [{"hooks": [{"type": "command", "command": agents.portable_line("closeout", "claude"), "timeout": 60}]}]}}
    (repo / ".claude").mkdir()
    (repo / agents.FILES["claude"]).write_text(json.dumps(doc, indent=2) + "\n")
    env = {**os.environ, "PATH": f"{GATE_DIR}:{_system_path()}"}
    told = run_gate(repo, "doctor", env=env).stdout
    assert "warn  .claude/settings.json: the hooks hold the whole hook program" in told, told
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    assert [c for _, _, _, c in agents._our_hooks("claude", json.loads((repo / agents.FILES["claude"]).read_text()))] == \
        [agents.short_line("brief", "claude"), agents.short_line("closeout", "claude")]
    assert (repo / SCRIPT).read_bytes() == agents.script_text("claude")
    assert "ok    .claude/settings.json" in run_gate(repo, "doctor", env=env).stdout

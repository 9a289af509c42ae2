"""The session loop inside the real agent CLIs (issue 26): Claude Code, Codex CLI, Gemini CLI and Copilot CLI, each
installed from npm at a pinned version into a cache outside the checkout, run headless and offline against a
scripted model API on 127.0.0.1 (harness_mock.py), in a fresh clone of a repository whose harness config was
committed in another clone.

With the gate on PATH: the brief reaches the model, a stop without close-out is blocked and its reason comes back as
the next prompt, after `closeout.max_blocks` blocks the stop is let through and a `closeout-missing` flag raised, and
a close-out the model does through the CLI's own shell tool passes. With no gate on PATH: the model and the user are
told "handoff-gate is not installed here" once, the CLI exits on its own (no wedge), and nothing crashes.

Marked `harness` and `slow`: `pytest -m harness` runs them (a few minutes); a CLI that cannot be installed (no npm,
no registry) skips its tests and says why. The cache is $HANDOFF_GATE_HARNESS_CACHE, else
~/.cache/handoff-gate/harness (read when this module is imported, before the tests' own HOME is set).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import GATE_BIN, commit_all, git, init_repo, run_gate, write_target
from harness_mock import CLOSE, STOP_REASON, WORK, MockModel, Turn

from gates.domain.agents import NOT_INSTALLED
from gates.domain.harness import NOTICE_FORMATS, RELAY

pytestmark = [pytest.mark.harness, pytest.mark.slow]

CACHE = Path(os.environ.get("HANDOFF_GATE_HARNESS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "handoff-gate" / "harness")
MARKER = "Add a greeting file to the demo (MARKER-TARGET-5521)."  # the Current Target: only the brief carries it
PROMPT = "Add the greeting file, then stop."
RUN_TIMEOUT = 240  # seconds a CLI session may take (each takes seconds to tens of seconds here)
INSTALL_TIMEOUT = 600


@dataclass(frozen=True)
class Cli:
    package: str
    version: str  # the version the loop was measured in (docs/agents.md)
    program: str

    @property
    def folder(self) -> Path:
        return CACHE / f"{self.package.strip('@').replace('/', '-')}-{self.version}"

    @property
    def binary(self) -> Path:
        return self.folder / "node_modules" / ".bin" / self.program


CLIS = {
    "claude": Cli("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Cli("@openai/codex", "0.171.0", "codex"),
    "gemini": Cli("@google/gemini-cli", "0.61.0", "gemini"),
    "copilot": Cli("@github/copilot", "1.0.102", "copilot"),
}
# Where the CLI's own output shows the user the not-installed notice (a hook's `systemMessage`) in a headless run:
# Claude Code's event stream (plain `claude -p` prints the result alone) and Gemini's output do; `codex exec` prints
# "hook: Stop Completed" and no message, `copilot -p` neither a hook's output nor its stderr (the model is told in
# every one; the interactive Codex screen shows it: test_the_codex_screen_tells_the_user_the_gate_is_not_installed).
SHOWS_NOTICE = {"claude": True, "codex": False, "gemini": True, "copilot": False}
_INSTALLED: dict[str, str] = {}  # name -> "" (ready) or why it cannot be installed


def _answers(binary: Path, env: dict[str, str]) -> bool:
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def installed(name: str, home: Path) -> Path:
    """The CLI's program, installed into the cache on first use (npm, the pinned version); skips when it cannot be."""
    cli = CLIS[name]
    if name not in _INSTALLED:
        env = {**os.environ, "HOME": str(home)}
        why = ""
        if not _answers(cli.binary, env):
            npm = shutil.which("npm")
            if npm is None:
                why = "npm is not on PATH"
            else:
                cli.folder.mkdir(parents=True, exist_ok=True)
                argv = ["nice", "-n", "10", npm, "install", "--prefix", str(cli.folder), "--no-save", "--no-fund",
                        "--no-audit", "--loglevel", "error", f"{cli.package}@{cli.version}"]
                npm_env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_cache": str(CACHE / "npm")}
                try:
                    proc = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                          stdin=subprocess.DEVNULL, env=npm_env)
                    said = [line for line in (proc.stdout + proc.stderr).splitlines()
                            if line.strip() and "complete log of this run" not in line][:2] or [f"exit {proc.returncode}"]
                    why = "" if proc.returncode == 0 and _answers(cli.binary, env) else f"npm install failed: {' '.join(said)}"
                except subprocess.TimeoutExpired:
                    why = f"npm install did not finish in {INSTALL_TIMEOUT} s"
        _INSTALLED[name] = why
    if _INSTALLED[name]:
        pytest.skip(f"{cli.package}@{cli.version} cannot be installed into {cli.folder}: {_INSTALLED[name]}")
    return cli.binary


# ---- the repositories: configured in one clone, run in another -------------------------------------------------

def configured(tmp_path: Path, agent: str) -> Path:
    """Repository A: gate init, a Current Target, `gate install-hooks --agent AGENT`, committed and closed out."""
    a = init_repo(tmp_path / "a")
    (a / "README.md").write_text("# demo\n")
    commit_all(a, "initial")
    assert run_gate(a, "init").returncode == 0
    write_target(a, MARKER)
    assert run_gate(a, "stamp").returncode == 0
    commit_all(a, "close-out: baseline")
    proc = run_gate(a, "install-hooks", "--agent", agent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    commit_all(a, f"wire the {agent} hooks")
    assert run_gate(a, "stamp").returncode == 0
    commit_all(a, "close-out: hooks wired")
    return a


def fresh_clone(a: Path, dest: Path) -> Path:
    git(a.parent, "clone", "-q", str(a), str(dest))
    return dest


def system_path() -> str:
    """The folders a session needs (node, git, the shell's tools), none holding a gate."""
    node = shutil.which("node")
    folders = [str(Path(node).parent)] if node else []
    return ":".join(dict.fromkeys([*folders, *(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if os.path.isdir(p))]))


def gate_folder(tmp_path: Path) -> Path:
    """A folder outside every clone with only `gate` in it: the gate installed on this machine."""
    folder = tmp_path / "gate-bin"
    folder.mkdir()
    assert GATE_BIN, "the gate console script is not installed"
    (folder / "gate").symlink_to(GATE_BIN)
    return folder


# ---- one session of a CLI --------------------------------------------------------------------------------------

@dataclass
class Session:
    returncode: int | str
    output: str  # stdout and stderr
    turns: list[Turn]

    @property
    def reasons(self) -> list[Turn]:
        """The turns whose prompt is the gate's stop reason."""
        return [t for t in self.turns if not t.after_tool and STOP_REASON in t.last_prompt]


def _home(tmp_path: Path, name: str, url: str) -> Path:
    home = tmp_path / "home"
    if home.exists():
        return home
    home.mkdir()
    if name == "codex":  # a private CODEX_HOME whose only provider is the mock
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(
            'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
            'check_for_update_on_startup = false\n\n[model_providers.mock]\nname = "mock"\n'
            f'base_url = "{url}/v1"\nwire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n'
            "[analytics]\nenabled = false\n")
    if name == "gemini":  # API-key auth (a base URL alone selects a "gateway" auth that headless mode refuses)
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}, "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "model": {"name": "gemini-2.5-flash"}}))
    return home


def _argv(name: str, binary: Path, trust: bool = True) -> list[str]:
    if name == "claude":
        return [str(binary), "-p", PROMPT, "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"]
    if name == "codex":  # --trust: the folder; the hook entries' own review is the user's step (docs/agents.md)
        return [str(binary), "exec", "--trust", "--dangerously-bypass-hook-trust", PROMPT]
    if name == "gemini":
        return [str(binary), "--yolo", "-p", PROMPT]
    return [str(binary), "--allow-all-tools", *(["--trust-folder"] if trust else []), "-p", PROMPT]


def _env(name: str, home: Path, url: str, path: str, trust: bool = True) -> dict[str, str]:
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"]}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))})
    if name == "claude":
        env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "mock-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"})
    elif name == "codex":
        env.update({"CODEX_HOME": str(home / ".codex")})
    elif name == "gemini":
        env.update({"GEMINI_CLI_HOME": str(home), "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "mock-key"})
        if trust:
            env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    else:
        env.update({"COPILOT_HOME": str(home / ".copilot"), "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_TYPE": "openai",
                    "COPILOT_PROVIDER_BASE_URL": f"{url}/v1", "COPILOT_PROVIDER_WIRE_API": "responses",
                    "COPILOT_PROVIDER_API_KEY": "mock-key", "COPILOT_MODEL": "gpt-5", "COPILOT_AUTO_UPDATE": "false"})
    return env


def session(name: str, repo: Path, tmp_path: Path, script: str, *, with_gate: bool, trust: bool = True) -> Session:
    """One headless session of CLI `name` in `repo`, its model the mock playing `script`, bounded in time; with
    `trust`, the folder trusted for this session (Codex's --trust, Gemini's variable, Copilot's --trust-folder)."""
    home_for_install = tmp_path / "npm-home"
    home_for_install.mkdir(exist_ok=True)
    binary = installed(name, home_for_install)
    path = system_path()
    if with_gate:
        path = f"{gate_folder(tmp_path) if not (tmp_path / 'gate-bin').exists() else tmp_path / 'gate-bin'}:{path}"
    else:
        probe = subprocess.run(["/bin/sh", "-c", "command -v gate || python3 -I -c 'import gates' 2>/dev/null && echo gates"],
                               capture_output=True, text=True, env={"PATH": path})
        if probe.stdout.strip():
            pytest.skip(f"a gate is installed in this machine's system folders ({probe.stdout.strip()}): no clone here lacks one")
    with MockModel(script) as mock:
        home = _home(tmp_path, name, mock.url)
        argv = ["nice", "-n", "10", *_argv(name, binary, trust)]
        try:
            proc = subprocess.run(argv, cwd=repo, env=_env(name, home, mock.url, path, trust), capture_output=True,
                                  text=True,
                                  timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
            code: int | str = proc.returncode
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = "timeout", f"{exc.stdout!r} {exc.stderr!r}"
        return Session(code, output, list(mock.turns))


def verdicts(repo: Path, agent: str) -> list[str]:
    """The close-out verdicts the gate journalled for `agent`'s stops, in order."""
    proc = run_gate(repo, "journal", "--format", "json")
    out = []
    for line in proc.stdout.splitlines():
        entry = json.loads(line)
        details = entry.get("details") or {}
        if entry.get("action") == "closeout" and details.get("harness") == agent:
            out.append(details["verdict"])
    return out


def open_flags(repo: Path) -> str:
    return run_gate(repo, "flags").stdout


# ---- the tests ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("agent", list(CLIS))
def test_brief_block_loop_guard_and_flag_on_a_fresh_clone(tmp_path: Path, agent: str) -> None:
    """The model works and never closes out: briefed, blocked with the reason as its next prompt, let through after
    the bound, flagged."""
    b = fresh_clone(configured(tmp_path, agent), tmp_path / "b")
    run = session(agent, b, tmp_path, "work", with_gate=True)
    assert run.returncode == 0, run.output[-3000:]
    assert run.turns, f"the CLI asked the mock nothing: {run.output[-2000:]}"
    first = run.turns[0].text
    assert "# Session brief" in first and MARKER in first, f"no brief in the first request: {first[:2000]}"
    assert verdicts(b, agent) == ["block", "block", "block", "let-through"], run.output[-2000:]
    assert len(run.reasons) == 3, [t.last_prompt[:300] for t in run.turns]
    assert "[closeout-missing]" in open_flags(b)
    assert "WORK-COMMITTED" in "\n".join(t.text for t in run.turns)  # the work ran through the CLI's shell
    # Claude Code quotes the hook's command with each block ("Stop hook blocking error from command: …"): with the
    # gate installed and judging the stop, nothing the model reads may say it is not installed
    assert not [t for t in run.turns if "is not installed here" in t.text], [t.last_prompt[:600] for t in run.reasons]


@pytest.mark.parametrize("agent", list(CLIS))
def test_a_close_out_through_the_agents_shell_passes(tmp_path: Path, agent: str) -> None:
    """Blocked once, the model does what the reason says through the CLI's shell tool; the next stop passes."""
    b = fresh_clone(configured(tmp_path, agent), tmp_path / "b")
    run = session(agent, b, tmp_path, "obey", with_gate=True)
    assert run.returncode == 0, run.output[-3000:]
    assert verdicts(b, agent) == ["block", "done"], [t.reply for t in run.turns]
    assert [t.reply["value"] for t in run.turns if t.reply["kind"] == "shell"] == [WORK, CLOSE]
    assert "close-out: greeting added" in git(b, "log", "--format=%s", "-1")
    assert "[closeout-missing]" not in open_flags(b)


@pytest.mark.parametrize("agent", list(CLIS))
def test_a_clone_without_the_gate_is_told_once_and_not_wedged(tmp_path: Path, agent: str) -> None:
    """No gate on PATH in the clone: one "not installed here" line reaches the model and the user, no stop is
    blocked, the CLI exits by itself, nothing crashes."""
    b = fresh_clone(configured(tmp_path, agent), tmp_path / "b")
    run = session(agent, b, tmp_path, "work", with_gate=False)
    assert run.returncode == 0, run.output[-3000:]
    assert run.turns, f"the CLI asked the mock nothing: {run.output[-2000:]}"
    assert run.turns[0].text.count(NOT_INSTALLED["brief"]) == 1, run.turns[0].text[:3000]
    # a CLI that shows no hook message to the user on any screen (Copilot) has its model asked to say the line
    assert (RELAY.strip() in run.turns[0].text) == (agent not in NOTICE_FORMATS), agent
    assert not run.reasons and len(run.turns) <= 3, [t.last_prompt[:300] for t in run.turns]
    assert "Traceback" not in run.output
    assert ("handoff-gate is not installed here" in run.output) == SHOWS_NOTICE[agent], run.output[-3000:]
    assert verdicts(b, agent) == []


def test_copilot_with_the_claude_hooks_installed_too_is_blocked_and_flagged_once(tmp_path: Path) -> None:
    """Copilot CLI runs the hooks of `.claude/settings.json` beside its own for every start and stop (issue 26: one
    session was blocked 6 times and flagged twice). With both installed, the session is blocked `closeout.max_blocks`
    times, let through once with one `closeout-missing` flag, and the model reads the brief once."""
    b = fresh_clone(configured(tmp_path, "claude,copilot"), tmp_path / "b")
    run = session("copilot", b, tmp_path, "work", with_gate=True)
    assert run.returncode == 0, run.output[-3000:]
    assert run.turns, f"the CLI asked the mock nothing: {run.output[-2000:]}"
    assert run.turns[0].text.count("# Session brief") == 1 and MARKER in run.turns[0].text, run.turns[0].text[:3000]
    entries = [json.loads(line) for line in (b / ".git" / "gate" / "journal.jsonl").read_text().splitlines()]
    briefs = [e["details"]["harness"] for e in entries if e.get("action") == "session-brief"]
    assert sorted(briefs) == ["claude", "copilot"]  # both hooks ran: the model is given Copilot's envelope alone
    closeouts = [e["details"]["verdict"] for e in entries if e.get("action") == "closeout"]
    assert closeouts == ["block", "block", "block", "let-through"], run.output[-2000:]
    assert len(run.reasons) == 3, [t.last_prompt[:300] for t in run.turns]
    assert len(list((b / ".git" / "gate" / "flags").glob("*-closeout-missing-*.json"))) == 1, open_flags(b)


def test_copilot_with_the_claude_hooks_installed_too_closes_out_once(tmp_path: Path) -> None:
    """Both files installed, a close-out through Copilot's shell after the first block: one block, one `done`,
    judged once each (the Claude hook's twin runs say nothing and journal nothing)."""
    b = fresh_clone(configured(tmp_path, "claude,copilot"), tmp_path / "b")
    run = session("copilot", b, tmp_path, "obey", with_gate=True)
    assert run.returncode == 0, run.output[-3000:]
    entries = [json.loads(line) for line in (b / ".git" / "gate" / "journal.jsonl").read_text().splitlines()]
    assert [e["details"]["verdict"] for e in entries if e.get("action") == "closeout"] == ["block", "done"]
    assert [t.reply["value"] for t in run.turns if t.reply["kind"] == "shell"] == [WORK, CLOSE]
    assert not list((b / ".git" / "gate" / "flags").glob("*-closeout-missing-*.json"))


# the variable each CLI's shell sets, which gates/domain/loopwatch.py reads (None: it sets none the gate knows)
LOOP_VARIABLE = {"claude": "CLAUDECODE", "codex": "CODEX_THREAD_ID", "gemini": "GEMINI_CLI", "copilot": None}
# Gemini CLI 0.61.0 runs every shell command with git's hooks turned off (core.hooksPath set empty through
# GIT_CONFIG_COUNT/KEY/VALUE, global and system config /dev/null): no git hook runs for its commits
HOOKS_OFF = {"claude": False, "codex": False, "gemini": True, "copilot": False}


@pytest.mark.parametrize("agent", list(CLIS))
def test_a_loop_that_did_not_run_is_told_by_the_agents_commit(tmp_path: Path, agent: str) -> None:
    """Issue 26: the harness hooks could not run (no gate on the harness's PATH) but this clone's git hook does: the
    agent's commit, made in the CLI's own shell, carries the warning that the session loop is not running. It
    holds the variables loopwatch reads to what the real CLI sets (Copilot sets none, so it is never judged), and
    measures which CLI's shell runs git hooks at all (Gemini's does not: its commits are judged at the stop and
    in CI only, docs/agents.md)."""
    from gates.domain import loopwatch

    b = fresh_clone(configured(tmp_path, agent), tmp_path / "b")
    assert run_gate(b, "install-hooks").returncode == 0  # the native hook names this machine's interpreter
    run = session(agent, b, tmp_path, "watch", with_gate=False)
    assert run.returncode == 0, run.output[-3000:]
    told = "\n".join(t.text for t in run.turns if t.after_tool)
    assert "ENV-NAMES-END" in told, told[-3000:]
    listed = told[:told.rindex("ENV-NAMES-END")].split("WORK-COMMITTED")[-1].split()  # the output, not the command
    variable = LOOP_VARIABLE[agent]
    assert (variable in listed) if variable else not {v[0] for v in loopwatch.HARNESSES} & set(listed), listed
    assert ("HOOKS-OFF" in listed) == HOOKS_OFF[agent], listed
    warned = "but the session loop is not running for it" in told
    assert warned == (variable is not None and not HOOKS_OFF[agent]), told[-3000:]


def _trust_recorded(agent: str, home: Path, folder: Path) -> None:
    """What the CLI's own folder-trust prompt leaves in the user's config (measured): the folder trusted there."""
    if agent == "gemini":
        (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(folder.resolve()): "TRUST_FOLDER"}))
    else:
        (home / ".copilot").mkdir(parents=True, exist_ok=True)
        (home / ".copilot" / "config.json").write_text(
            "// User settings belong in settings.json.\n" + json.dumps({"trustedFolders": [str(folder.resolve())]}))


@pytest.mark.parametrize("recorded", [True, False])
@pytest.mark.parametrize("agent", ["gemini", "copilot"])
def test_the_doctor_says_what_the_cli_does_with_the_folders_trust(tmp_path: Path, agent: str, recorded: bool) -> None:
    """Issue 26: started with no per-session trust (no variable, no flag), the CLI runs the project's hooks exactly
    when the user's config trusts the folder, and `gate doctor` reads that config to the same verdict."""
    b = fresh_clone(configured(tmp_path, agent), tmp_path / "b")
    home = _home(tmp_path, agent, "http://127.0.0.1:9")  # the session's home (no URL in these two CLIs' files)
    (home / f".{agent}").mkdir(exist_ok=True)  # a user who has run the CLI here (else the doctor says: not used yet)
    if recorded:
        _trust_recorded(agent, home, b)
    env = {key: value for key, value in os.environ.items() if key not in ("GEMINI_CLI_TRUST_WORKSPACE",
                                                                           "COPILOT_ALLOW_ALL")}
    env.update({"HOME": str(home), "GEMINI_CLI_HOME": str(home)} if agent == "gemini" else
               {"HOME": str(home), "COPILOT_HOME": str(home / ".copilot")})
    name = {"gemini": "Gemini CLI", "copilot": "GitHub Copilot CLI"}[agent]
    said = [line for line in run_gate(b, "doctor", env=env).stdout.splitlines() if name in line
            and ("trusted" in line or "skip" in line or "not load" in line)]
    run = session(agent, b, tmp_path, "plain", with_gate=True, trust=False)
    briefed = bool(run.turns) and "# Session brief" in run.turns[0].text
    assert briefed == recorded, run.output[-2000:]
    assert len(said) == 1 and said[0].startswith("ok " if recorded else "warn "), said


def _screen(session_name: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-t", session_name, "-p", "-J", "-S", "-300"], capture_output=True,
                          text=True).stdout


def _wait_for(session_name: str, words: str, seconds: float = 40) -> str:
    import time

    deadline = time.monotonic() + seconds
    screen = _screen(session_name)
    while words not in screen and time.monotonic() < deadline:
        time.sleep(0.5)
        screen = _screen(session_name)
    return screen


def test_the_codex_screen_tells_the_user_the_gate_is_not_installed(tmp_path: Path) -> None:
    """Issue 26: `codex exec` shows the user no hook message, but the interactive Codex (the TUI a person runs, under
    tmux here) shows both: at the first prompt the start hook's line, at the stop the close-out's. The folder and
    the hooks are trusted on screen as a user does once."""
    import time

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the interactive screen cannot be driven")
    binary = installed("codex", tmp_path / "npm-home")
    b = fresh_clone(configured(tmp_path, "codex"), tmp_path / "b")
    name = f"gate-codex-{os.getpid()}"
    with MockModel("plain") as mock:
        home = _home(tmp_path, "codex", mock.url)
        env = " ".join(f"{k}={v}" for k, v in {"HOME": home, "CODEX_HOME": home / ".codex", "TERM": "xterm-256color",
                                                "PATH": system_path()}.items())
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50",
                        f"cd {b} && env -i {env} {binary} --disable daemon_auto_start; sleep 30"], check=True)
        try:
            if "Trust this folder" in _wait_for(name, "Trust this folder"):
                subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
            if "Hooks need review" in _wait_for(name, "Hooks need review"):
                # 2. Trust all and continue. On a busy machine a Down sent as the choice is drawn was lost once, and
                # Enter then took the first choice (the hooks' review): Enter goes once the choice is seen to move.
                time.sleep(1)  # the choice takes keys a moment after it is drawn, as the composer below does
                for _ in range(3):
                    subprocess.run(["tmux", "send-keys", "-t", name, "Down"], check=True)
                    if "› 2. Trust all" in _wait_for(name, "› 2. Trust all", 5):
                        break
                else:
                    pytest.fail("the hooks' choice never moved to 2. Trust all:\n" + _screen(name)[-3000:])
                subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
            _wait_for(name, "Ask Codex")
            time.sleep(1)  # the composer takes keys a moment after it is drawn
            subprocess.run(["tmux", "send-keys", "-t", name, "-l", "Say hello"], check=True)
            time.sleep(1)  # typed text and Enter in one burst reads as a paste: the prompt would stay in the composer
            subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
            screen = _wait_for(name, "so this stop was not checked")
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
            for pid_file in (home / ".codex" / "app-server-daemon").glob("*.pid"):
                try:
                    os.kill(int(pid_file.read_text().strip()), 15)
                except (ValueError, OSError):
                    pass
    said = [line for line in screen.splitlines() if "Hook" in line and "handoff-gate is not installed here" in line]
    assert len(said) == 2, screen[-3000:]
    assert "not installed here: install it" in said[0] and "so this stop was not checked" in said[1], said
    assert "until then no brief is given" in " ".join(screen.split()), screen[-3000:]  # its wrapped rest
    assert verdicts(b, "codex") == []

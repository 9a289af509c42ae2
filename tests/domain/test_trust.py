"""`gate doctor` says in plain words when a wired harness will skip the project's hooks (issue 26): Codex's folder
and hook trust read from the user's config.toml (a fake $HOME written by each test), Gemini's and Copilot's folder
trust where this environment decides it, Claude Code's and Gemini's launch folder; "cannot tell", never ok, where
the trust cannot be read. The user's file is read as hostile input: never echoed, never waited on, never followed
out of its folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import call_gate, commit_all, run_gate

from gates.domain import agents
from gates.infra.git import discover

TOO = "whether each still matches cannot be told"
# Python 3.10 has no TOML reader: there Codex's config.toml is "cannot tell" (the last test of this file holds that).
TOML = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 has no TOML reader")


def _wire(repo: Path, agent: str) -> None:
    assert run_gate(repo, "install-hooks", "--agent", agent).returncode == 0
    commit_all(repo, f"wire {agent}")


def _doctor(repo: Path, cwd: Path | None = None, **env: str) -> list[str]:
    proc = run_gate(cwd or repo, "doctor", env={**os.environ, **env}, timeout=30)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def _about(lines: list[str], word: str) -> list[str]:
    return [line for line in lines if word in line and "hooks run the `gate` on PATH" not in line
            and "runs `gate brief` at session start" not in line and "SessionStart" not in line]


def _codex_config(home: Path, repo: Path, *, folder: str | None = "trusted", entries: tuple[str, ...] = (
        "session_start", "stop"), extra: str = "") -> Path:
    """~/.codex/config.toml as Codex writes it once the folder and the hooks were trusted in its TUI."""
    lines = ['model = "gpt-5"', extra]
    if folder:
        lines += [f'[projects."{repo}"]', f'trust_level = "{folder}"']
    for event in entries:
        lines += [f'[hooks.state."{repo}/.codex/hooks.json:{event}:0:0"]', 'trusted_hash = "sha256:0123abcd"']
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])  # conftest's own, per test


@TOML
def test_codex_untrusted_folder_and_no_config_are_said_to_skip_the_hooks(repo: Path, home: Path) -> None:
    _wire(repo, "codex")
    (home / ".codex").mkdir()  # Codex has run here
    [line] = _about(_doctor(repo), "Codex")
    assert line.startswith("warn  Codex will skip this project's hooks: there is no ~/.codex/config.toml"), line
    _codex_config(home, repo, folder=None, entries=())
    [line] = _about(_doctor(repo), "Codex")
    assert "this folder is not trusted in ~/.codex/config.toml — start `codex` at the top of the work tree" in line
    _codex_config(home, repo, folder="untrusted")
    [line] = _about(_doctor(repo), "Codex")
    assert "this folder is marked untrusted in ~/.codex/config.toml" in line


@TOML
@pytest.mark.parametrize("spelling", [("session_start", "stop"), ("SessionStart", "Stop")])
def test_codex_trusted_entries_are_cannot_tell_never_ok(repo: Path, home: Path, spelling: tuple[str, str]) -> None:
    """Every entry has a trust recorded: Codex's hash of the entry cannot be checked here, so the doctor says it
    cannot tell (a warning), and why a re-install or an upgrade matters."""
    _wire(repo, "codex")
    config = _codex_config(home, repo, entries=spelling)
    os.utime(config, (os.stat(repo / ".codex" / "hooks.json").st_mtime + 60,) * 2)  # trusted after the last change
    [line] = _about(_doctor(repo), "Codex")
    assert line.startswith("warn  Codex: the folder is trusted and a trust is recorded for each of the 2 hooks of "
                           ".codex/hooks.json, but " + TOO), line
    assert "any change since (a re-install, an upgrade, a timeout edit) un-trusts it silently; after such a change, " \
           "review them again (/hooks)" in line
    assert not any(line.startswith("ok") and "Codex" in line for line in _doctor(repo))


@TOML
def test_codex_an_entry_without_trust_or_changed_since_is_said(repo: Path, home: Path) -> None:
    _wire(repo, "codex")
    _codex_config(home, repo, entries=("session_start",))
    [line] = _about(_doctor(repo), "Codex")
    assert ("warn  Codex will skip 1 of the 2 hooks of .codex/hooks.json, silently: no trust is recorded for Stop — "
            "start `codex`") in line, line
    config = _codex_config(home, repo)
    os.utime(config, (1_000_000_000, 1_000_000_000))  # Codex last wrote it long before the re-install
    [line] = _about(_doctor(repo), "Codex")
    assert TOO in line and ".codex/hooks.json changed after Codex last wrote its config: start `codex`" in line


@TOML
def test_codex_hooks_switched_off_and_codex_home_are_read(repo: Path, home: Path, tmp_path: Path) -> None:
    _wire(repo, "codex")
    _codex_config(home, repo, extra="[features]\nhooks = false")
    assert "warn  Codex runs no hook at all: `[features] hooks = false` in ~/.codex/config.toml" in _doctor(repo)
    elsewhere = tmp_path / "codex-home"
    elsewhere.mkdir()
    _codex_config(elsewhere, repo, folder=None, entries=())
    (elsewhere / ".codex" / "config.toml").rename(elsewhere / "config.toml")
    [line] = _about(_doctor(repo, CODEX_HOME=str(elsewhere)), "Codex")
    assert "this folder is not trusted in $CODEX_HOME/config.toml" in line, line


def test_the_users_config_is_never_echoed(repo: Path, home: Path) -> None:
    """Names and yes/no only: the API key, the model, other projects' paths and the hashes stay in the file."""
    _wire(repo, "codex")
    _codex_config(home, repo, extra='api_key = "sk-SECRET-4242"\n[projects."/home/other/private-project"]\n'
                                     'trust_level = "trusted"')
    out = "\n".join(_doctor(repo))
    for secret in ("sk-SECRET-4242", "private-project", "gpt-5", "0123abcd"):
        assert secret not in out
    flags = "".join(p.read_text() for p in (repo / ".git" / "gate" / "flags").rglob("*.json")) \
        if (repo / ".git" / "gate" / "flags").is_dir() else ""
    assert "SECRET" not in flags


@TOML
def test_a_config_link_out_of_home_is_not_followed_and_one_inside_is(repo: Path, home: Path, tmp_path: Path) -> None:
    """The attack: ~/.codex/config.toml made a link to a file elsewhere that claims every trust. It is not read (and
    not changed); the same link to a dotfiles folder inside $HOME is the user's own and is read."""
    _wire(repo, "codex")
    outside = tmp_path / "outside"
    outside.mkdir()
    _codex_config(outside, repo)
    target = outside / ".codex" / "config.toml"
    before = target.read_bytes(), target.stat().st_mtime_ns
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").symlink_to(target)
    [line] = _about(_doctor(repo), "Codex")
    assert line == ("warn  Codex: cannot tell whether it trusts this folder and its hooks: ~/.codex/config.toml is a "
                    "link out of its folder: not followed"), line
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before
    dotfiles = home / "dotfiles"
    _codex_config(dotfiles, repo)
    (home / ".codex" / "config.toml").unlink()
    (home / ".codex" / "config.toml").symlink_to(dotfiles / ".codex" / "config.toml")
    [line] = _about(_doctor(repo), "Codex")
    assert TOO in line, line


@pytest.mark.parametrize("kind", ["fifo", pytest.param("not-toml", marks=TOML), "huge",
                                  pytest.param("deep", marks=TOML)])
def test_a_config_that_cannot_be_read_is_cannot_tell(repo: Path, home: Path, kind: str) -> None:
    """`deep` is the attack of adversarial review adv1, 04: TOML nested 100,000 deep overflowed tomllib's stack (a
    RecursionError, a traceback, exit 4); it is invalid TOML like any other, and the file is left as it was."""
    _wire(repo, "codex")
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(config)  # a reader that opened it would wait forever
    elif kind == "not-toml":
        config.write_text("[projects\nthis is = = not toml\n")
    elif kind == "deep":
        config.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    else:
        with open(config, "wb") as handle:
            handle.truncate(2 << 20)
    before = config.read_bytes() if kind == "deep" else None
    [line] = _about(_doctor(repo), "Codex")
    assert line.startswith("warn  Codex: cannot tell whether it trusts this folder and its hooks: ~/.codex/config.toml ")
    assert {"fifo": "cannot be read (a FIFO, not a regular file)", "not-toml": "is not valid TOML",
            "huge": "is over 1,048,576 bytes: not read", "deep": "is not valid TOML"}[kind] in line, line
    assert before is None or config.read_bytes() == before


@pytest.mark.parametrize("agent, variable", [("gemini", "GEMINI_CLI_TRUST_WORKSPACE"), ("copilot", "COPILOT_ALLOW_ALL")])
def test_gemini_and_copilot_with_no_trust_recorded_are_said_to_skip_and_the_variable_trusts(
        repo: Path, home: Path, agent: str, variable: str) -> None:
    _wire(repo, agent)
    (home / f".{agent}").mkdir()  # the harness has run here
    name = {"gemini": "Gemini CLI", "copilot": "GitHub Copilot CLI"}[agent]
    [line] = _about(_doctor(repo), name)
    assert line.startswith(f"warn  {name} will ") and ("skip" in line or "not load" in line), line
    [line] = _about(_doctor(repo, None, **{variable: "true"}), f"{name}:")
    assert line.startswith(f"ok    {name}: {variable}=true trusts the folder for a session started from this "
                           "environment"), line


def _gemini_rules(home: Path, rules: dict[str, str], text: str | None = None) -> None:
    path = home / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else "// written by gemini\n" + json.dumps(rules))


@pytest.mark.parametrize("case, verdict", [
    ("folder", "ok    Gemini CLI: this folder is trusted in ~/.gemini/trustedFolders.json (TRUST_FOLDER)"),
    ("parent-rule", "ok    Gemini CLI: this folder is trusted in ~/.gemini/trustedFolders.json (TRUST_PARENT)"),
    ("above", "ok    Gemini CLI: this folder is trusted in ~/.gemini/trustedFolders.json (TRUST_FOLDER)"),
    ("distrusted-inside", "warn  Gemini CLI will not load this project's hooks: this folder is marked DO_NOT_TRUST"),
    ("elsewhere", "warn  Gemini CLI will not load this project's hooks: this folder is not trusted in"),
    ("broken", "warn  Gemini CLI: cannot tell whether this folder is trusted: ~/.gemini/trustedFolders.json is not a "
               "JSON object"),
])
def test_gemini_folder_trust_is_read_as_gemini_reads_it(repo: Path, home: Path, tmp_path: Path, case: str,
                                                        verdict: str) -> None:
    """Measured in Gemini CLI 0.61.0 (tests/test_harness_clis.py holds the doctor to what the CLI does): the longest
    rule whose folder holds the work tree decides; TRUST_PARENT names a path whose parent is trusted."""
    _wire(repo, "gemini")
    top = str(repo.resolve())
    rules = {"folder": {top: "TRUST_FOLDER"}, "parent-rule": {f"{top}/README": "TRUST_PARENT"},
             "above": {str(repo.resolve().parent): "TRUST_FOLDER"},
             "distrusted-inside": {str(repo.resolve().parent): "TRUST_FOLDER", top: "DO_NOT_TRUST"},
             "elsewhere": {str(tmp_path / "other"): "TRUST_FOLDER"}, "broken": {}}[case]
    _gemini_rules(home, rules, "[1, 2]" if case == "broken" else None)
    [line] = _about(_doctor(repo), "Gemini CLI")
    assert line.startswith(verdict), line
    assert top not in line.replace(f"({top})", "")  # the file's rules are never echoed


def test_gemini_with_folder_trust_switched_off_or_distrusted_by_the_environment(repo: Path, home: Path) -> None:
    _wire(repo, "gemini")
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text('{"security": {"folderTrust": {"enabled": false}}} // off\n')
    [line] = _about(_doctor(repo), "Gemini CLI")
    assert line.startswith("ok    Gemini CLI: folder trust is off in ~/.gemini/settings.json"), line
    [line] = _about(_doctor(repo, None, GEMINI_CLI_TRUST_WORKSPACE="false"), "Gemini CLI")
    assert line == ("warn  Gemini CLI runs none of this project's hooks from this environment: "
                    "GEMINI_CLI_TRUST_WORKSPACE=false distrusts every folder"), line


@pytest.mark.parametrize("where, trusted", [("config.json", True), ("settings.json", False)])
def test_copilot_folder_trust_is_its_config_json_trusted_folders(repo: Path, home: Path, where: str,
                                                                 trusted: bool) -> None:
    """Measured in Copilot CLI 1.0.102: a folder (or one above it) in `trustedFolders` of ~/.copilot/config.json runs
    the project's hooks headless; the same list in settings.json does not."""
    _wire(repo, "copilot")
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    (home / ".copilot" / where).write_text("// User settings belong in settings.json.\n/* managed */\n"
                                          + json.dumps({"trustedFolders": [str(repo.resolve().parent)]}))
    [line] = _about(_doctor(repo), "GitHub Copilot CLI")
    if trusted:
        assert line.startswith("ok    GitHub Copilot CLI: this folder is trusted in ~/.copilot/config.json"), line
    else:  # settings.json holds the list; there is no config.json
        assert line.startswith("warn  GitHub Copilot CLI will skip this project's hooks, silently, unless started "
                               "with `--trust-folder`: there is no ~/.copilot/config.json, so no folder is trusted"), \
            line


@pytest.mark.parametrize("listed, verdict", [
    (["/elsewhere"], "warn  GitHub Copilot CLI will skip this project's hooks, silently, unless started with "
                     "`--trust-folder`: this folder is not in the trustedFolders of ~/.copilot/config.json"),
    ("oops", "warn  GitHub Copilot CLI: cannot tell whether this folder is trusted: the trustedFolders of "
             "~/.copilot/config.json is not a list"),
])
def test_copilot_a_list_without_the_folder_or_not_a_list(repo: Path, home: Path, listed: object, verdict: str) -> None:
    _wire(repo, "copilot")
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    (home / ".copilot" / "config.json").write_text(json.dumps({"trustedFolders": listed}))
    [line] = _about(_doctor(repo), "GitHub Copilot CLI")
    assert line.startswith(verdict), line


def test_claude_and_gemini_started_in_a_subdirectory_run_nothing(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process too: the doctor run from a subdirectory says that a harness started there runs no hook; the names
    it quotes (the folder's, with a control character in it) are shown escaped."""
    _wire(repo, "claude")
    _wire(repo, "gemini")
    sub = repo / "src" / "deep\x1b[31m"
    sub.mkdir(parents=True)
    code, out, _ = call_gate(sub, "doctor", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1 and "FIX   no commit hook runs the gate" in out, out  # no git hook here: the one FIX
    for name in ("Claude Code", "Gemini CLI"):
        assert (f"warn  {name} started here (src/deep\\u001b[31m/) reads no project settings, so none of its hooks "
                f"runs: start it at the top of the work tree ({os.path.realpath(repo)})") in out.splitlines(), out
    assert "\x1b" not in out
    assert "started here" not in "\n".join(_doctor(repo))  # at the top: nothing to say of the launch folder
    (Path(os.environ["HOME"]) / ".claude").mkdir()  # Claude Code has run here
    [line] = _about(_doctor(repo), "Claude Code:")
    assert line.startswith("warn  Claude Code: started at the top of the work tree it runs these hooks") and \
        "cannot be told" in line


@pytest.mark.machine  # a git whose paths cannot be followed: doubt for every lock scan while it runs
def test_nothing_is_said_of_a_harness_not_wired_here(repo: Path, home: Path) -> None:
    _codex_config(home, repo, folder="untrusted")
    lines = _doctor(repo)
    assert not [line for line in lines if any(name in line for name in ("Codex", "Gemini", "Copilot", "trusted"))]
    assert agents.wired(discover(repo), "codex") == []


@TOML
def test_names_quoted_from_the_repositorys_file_are_shown_escaped(repo: Path, home: Path) -> None:
    """A hostile .codex/hooks.json files the gate's hook under an event named with a terminal escape and a bidi
    override: the doctor names it, escaped, and cut short."""
    import json

    _wire(repo, "codex")
    path = repo / ".codex" / "hooks.json"
    doc = json.loads(path.read_text())
    doc["hooks"]["Stop\x1b[2J\u202e" + "x" * 100] = doc["hooks"].pop("Stop")
    path.write_text(json.dumps(doc))
    _codex_config(home, repo, entries=("session_start",))
    [line] = _about(_doctor(repo), "Codex will skip")
    assert "no trust is recorded for Stop\\u001b[2J\\u202exxx" in line and "…" in line, line
    assert "\x1b" not in line and "\u202e" not in line


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="Python 3.11 and later read TOML")
def test_without_a_toml_reader_codex_trust_is_cannot_tell(repo: Path, home: Path) -> None:
    """Python 3.10 (the oldest this supports) has no tomllib: the doctor says so, never ok and never a guess."""
    _wire(repo, "codex")
    _codex_config(home, repo)
    [line] = _about(_doctor(repo), "Codex")
    assert line.startswith("warn") and "cannot be read: this Python has no TOML reader (3.11 or newer has one)" in line


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "copilot"])
def test_a_harness_never_run_here_is_said_once_as_not_used_never_warned(repo: Path, home: Path, agent: str) -> None:
    """A new user's finding: with every harness wired, a teammate who uses one of them got a warning for each of the
    others on every `gate doctor` (no trust recorded, where the harness had never run). A harness whose state folder
    is not there has never run as this user: one ok line says so; once it has, its trust is judged as before."""
    _wire(repo, agent)
    name = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "copilot": "GitHub Copilot CLI"}[agent]
    [line] = _about(_doctor(repo), name)
    assert line == (f"ok    {name}: not used on this machine yet (no ~/.{agent}); once it has run, the doctor says "
                    "whether it runs this project's hooks"), line
    (home / f".{agent}").mkdir()
    [line] = _about(_doctor(repo), name)
    assert line.startswith("warn  "), line

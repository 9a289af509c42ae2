"""`gate doctor`: will each harness wired here run the project's hooks at all? (issue 26)

A harness that does not trust the project, or was started below the top of the work tree, skips the hooks and
says nothing. What the measured facts (docs/agents.md#a-loop-that-did-not-run) let the doctor tell:

- Codex runs project hooks only when the folder is trusted (`[projects."<top>"] trust_level = "trusted"` in
  `$CODEX_HOME/config.toml`, default `~/.codex/`) and each hook entry is (`[hooks.state."<top>/.codex/hooks.json:
  <event>:<group>:<handler>"] trusted_hash`). The hash covers the entry as it was reviewed, and how Codex computes
  it is not known here: a recorded trust is "cannot tell whether it still matches", never ok.
- Gemini CLI and Copilot CLI load project hooks only in a trusted folder. Where they keep that is not among the
  measured facts, so only the variables that trust it for a session started from this environment are read
  (`GEMINI_CLI_TRUST_WORKSPACE=true`, `COPILOT_ALLOW_ALL=true`); otherwise: cannot tell.
- Claude Code (and Gemini) read the project's settings only from the folder they were started in; an interactive
  Claude Code session runs their hooks only after its folder-trust prompt (stored where the facts do not say:
  cannot tell). Run from a subdirectory, the doctor says that a harness started there runs nothing.

The one file read is the user's own Codex config: at most CONFIG_CAP bytes of a regular file (a FIFO or device is
refused before it is opened), through a link only while the link stays within the folder it belongs to ($HOME,
or $CODEX_HOME when set). Nothing of it is shown but yes/no and the names of the gate's own entries.
"""

from __future__ import annotations

import os

from gates.domain import agents
from gates.infra import fsio, paths
from gates.infra.git import Repo
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

OK, WARN = "ok", "warn"
CONFIG_CAP = 1 << 20
NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "copilot": "GitHub Copilot CLI"}
REVIEW = "start `codex` at the top of the work tree and trust the folder, then its hooks (/hooks: trust all)"


def checks(repo: Repo, environ: Mapping[str, str], cwd: str) -> list[tuple[str, str]]:
    """(status, message) for each harness whose project file here runs the gate's hooks."""
    top = os.path.realpath(repo.toplevel)
    below = _below_top(top, cwd)
    out = []
    for agent in NAMES:
        positions = agents.wired(repo, agent)
        if not positions:
            continue
        name = NAMES[agent]
        if below and agent in ("claude", "gemini"):
            out.append((WARN, f"{name} started here ({below}/) reads no project settings, so none of its hooks runs: "
                              f"start it at the top of the work tree ({top})"))
        if agent in BY_VARIABLE:
            out += _by_variable(agent, environ)
        else:
            out += _claude() if agent == "claude" else _codex(repo, environ, positions)
    return out


def _below_top(top: str, cwd: str) -> str:
    """The folder `cwd` relative to the top of the work tree when it lies below it, else ''."""
    here = os.path.realpath(cwd)
    return os.path.relpath(here, top) if here != top and paths.within(here, top) else ""


def _claude() -> list[tuple[str, str]]:
    return [(WARN, "Claude Code: started at the top of the work tree it runs these hooks (`claude -p` asks nothing); "
                   "an interactive session runs them only after its folder-trust prompt was accepted, and whether it "
                   "was here cannot be told")]


# Gemini CLI and Copilot CLI: the variable that trusts the folder for a session started from this environment, and
# what to say when it is not set (where they keep a folder's trust is not among the measured facts).
BY_VARIABLE = {
    "gemini": ("GEMINI_CLI_TRUST_WORKSPACE", "it loads the project's hooks only in a trusted one (an untrusted headless "
               "run exits 55; `--skip-trust` runs with none, silently): trust it once in an interactive `gemini` here"),
    "copilot": ("COPILOT_ALLOW_ALL", "in one that is not it runs no project hook and says nothing: start it with "
                "`--trust-folder`"),
}


def _by_variable(agent: str, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    variable, otherwise = BY_VARIABLE[agent]
    name = NAMES[agent]
    if environ.get(variable) == "true":
        return [(OK, f"{name}: {variable}=true trusts the folder for a session started from this environment (one "
                     "started elsewhere may not be)")]
    return [(WARN, f"{name}: cannot tell whether this folder is trusted, and {otherwise}, or set {variable}=true")]


def _codex(repo: Repo, environ: Mapping[str, str], positions: list[tuple[str, int, int]]) -> list[tuple[str, str]]:
    home = environ.get("HOME") or os.path.expanduser("~")
    codex_home = environ.get("CODEX_HOME") or os.path.join(home, ".codex")
    config = os.path.join(codex_home, "config.toml")
    shown = "$CODEX_HOME/config.toml" if environ.get("CODEX_HOME") else "~/.codex/config.toml"
    data = _user_file(config, [home, codex_home])
    if data is None:
        return [(WARN, f"Codex will skip this project's hooks: there is no {shown}, so it trusts neither this folder "
                       f"nor its hooks — {REVIEW}")]
    if isinstance(data, str):
        return [(WARN, f"Codex: cannot tell whether it trusts this folder and its hooks: {shown} {data}")]
    parsed = _toml(data)
    if isinstance(parsed, str):
        return [(WARN, f"Codex: cannot tell whether it trusts this folder and its hooks: {shown} {parsed}")]
    tops = list(dict.fromkeys((str(repo.toplevel), os.path.realpath(repo.toplevel))))
    out = []
    features = parsed.get("features")
    if isinstance(features, dict) and features.get("hooks") is False:
        out.append((WARN, f"Codex runs no hook at all: `[features] hooks = false` in {shown}"))
    folder = _folder_trust(parsed, tops)
    if folder != "trusted":
        out.append((WARN, f"Codex will skip this project's hooks: this folder is {folder} in {shown} — {REVIEW}"))
        return out
    missing = [event for event, group, handler in positions if not _entry_trusted(parsed, tops, event, group, handler)]
    if missing:
        events = ", ".join(excerpt(event, 40) for event in sorted(set(missing)))
        out.append((WARN, f"Codex will skip {len(missing)} of the {len(positions)} hooks of .codex/hooks.json, "
                          f"silently: no trust is recorded for {events} — {REVIEW}"))
        return out
    changed = _newer(repo.path(agents.FILES["codex"]), config)
    out.append((WARN, f"Codex: the folder is trusted and a trust is recorded for each of the {len(positions)} hooks of "
                      ".codex/hooks.json, but whether each still matches cannot be told: Codex trusts a hash of the "
                      "entry as it was reviewed, and any change since (a re-install, an upgrade, a timeout edit) "
                      "un-trusts it silently"
                      + (" — .codex/hooks.json changed after Codex last wrote its config: " + REVIEW if changed
                         else "; after such a change, review them again (/hooks)")))
    return out


def _user_file(path: str, roots: list[str]) -> bytes | str | None:
    """The bytes of the user's config file at `path`, None when there is none, or why it is not read (a link out of
    every root, not a regular file, over CONFIG_CAP, unreadable)."""
    if not os.path.lexists(path):
        return None
    real = os.path.realpath(path)
    if not any(paths.within(real, os.path.realpath(root)) for root in roots):
        return "is a link out of its folder: not followed"
    try:
        data = fsio.read_regular(real, CONFIG_CAP)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if len(data) > CONFIG_CAP:
        return f"is over {CONFIG_CAP:,} bytes: not read"
    return data


def _toml(data: bytes) -> dict[str, Any] | str:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return "cannot be read: this Python has no TOML reader (3.11 or newer has one)"
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "is not valid TOML (Codex cannot read it either)"


def _folder_trust(parsed: dict[str, Any], tops: list[str]) -> str:
    """'trusted', or how the folder stands otherwise, as the doctor says it."""
    projects = parsed.get("projects")
    for top in tops:
        entry = projects.get(top) if isinstance(projects, dict) else None
        if isinstance(entry, dict):
            level = entry.get("trust_level")
            return "trusted" if level == "trusted" else "marked untrusted" if level == "untrusted" else "not trusted"
    return "not trusted"


def _entry_trusted(parsed: dict[str, Any], tops: list[str], event: str, group: int, handler: int) -> bool:
    """Whether a trusted hash is recorded for our hook at (event, group, handler) of .codex/hooks.json. The event is
    matched whatever its spelling in the key (`SessionStart`, `session_start`)."""
    hooks = parsed.get("hooks")
    table = hooks.get("state") if isinstance(hooks, dict) else None
    wanted = (_spelling(event), str(group), str(handler))
    for key, value in table.items() if isinstance(table, dict) else []:
        for top in tops:
            prefix = f"{top}/{agents.FILES['codex']}:"
            if not isinstance(key, str) or not key.startswith(prefix):
                continue
            parts = key[len(prefix):].rsplit(":", 2)
            if len(parts) == 3 and (_spelling(parts[0]), parts[1], parts[2]) == wanted:
                trusted = value.get("trusted_hash") if isinstance(value, dict) else None
                if isinstance(trusted, str) and trusted.strip():
                    return True
    return False


def _spelling(event: str) -> str:
    return event.lower().replace("_", "").replace("-", "")


def _newer(path: str, than: str) -> bool:
    try:
        return os.lstat(path).st_mtime > os.stat(than).st_mtime
    except OSError:
        return False

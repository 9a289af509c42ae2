"""`gate doctor`: will each harness wired here run the project's hooks at all? (issue 26)

A harness that does not trust the project, or was started below the top of the work tree, skips the hooks and
says nothing. What the doctor reads of each harness and what it can tell from it, measured in each CLI, is
docs/agents.md#a-loop-that-did-not-run; Codex's trusted hash cannot be checked here, so a recorded trust is
"cannot tell whether it still matches", never ok. The user's config is hostile input (docs/security.md): at most
CONFIG_CAP bytes of a regular file, through a link only within its own folder ($HOME, or the harness's home
variable), and nothing of it is shown but yes/no, a trust level and the names of the gate's own entries.
"""

import os

from gates.domain import agents
from gates.infra import fsio, jsonio, paths
from gates.infra.git import Repo
from gates.infra.text import Pattern, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

OK, WARN = "ok", "warn"
CONFIG_CAP = 1 << 20
NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "copilot": "GitHub Copilot CLI"}
REVIEW = "start `codex` at the top of the work tree and trust the folder, then its hooks (/hooks: trust all)"


def checks(repo: Repo, environ: "Mapping[str, str]", cwd: str) -> list[tuple[str, str]]:
    """(status, message) for each harness whose project file here runs the gate's hooks."""
    top, here = os.path.realpath(repo.toplevel), os.path.realpath(cwd)
    below = os.path.relpath(here, top) if here != top and paths.within(here, top) else ""  # the folder below the top
    out = []
    for agent, name in NAMES.items():
        positions = agents.wired(repo, agent)
        if not positions:
            continue
        if below and agent in ("claude", "gemini"):
            out.append((WARN, f"{name} started here ({below}/) reads no project settings, so none of its hooks runs: "
                              f"start it at the top of the work tree ({top})"))
        decided = _by_variable(agent, environ) if agent in BY_VARIABLE else []
        unused = None if decided else _unused(agent, environ)
        if decided or unused is not None:  # the environment decides, or this user never ran it here: no file asked
            out += decided or [(OK, str(unused))]
        elif agent == "claude":
            out.append((WARN, "Claude Code: started at the top of the work tree it runs these hooks (`claude -p` asks "
                              "nothing); an interactive session runs them only after its folder-trust prompt was "
                              "accepted, and whether it was here cannot be told"))
        elif agent == "codex":
            out += _codex(repo, environ, positions)
        else:
            out += _gemini(repo, environ) if agent == "gemini" else _copilot(repo, environ)
    return out


# Where each harness keeps its user's state: (the variable that moves it, the folder in $HOME); Gemini CLI's variable
# names the home that holds its folder. A harness that has run as this user has made it.
HOMES = {"claude": ("CLAUDE_CONFIG_DIR", ".claude"), "codex": ("CODEX_HOME", ".codex"),
         "gemini": ("GEMINI_CLI_HOME", ".gemini"), "copilot": ("COPILOT_HOME", ".copilot")}


def _unused(agent: str, environ: "Mapping[str, str]") -> str | None:
    """A line saying `agent` has never run as this user on this machine (its state folder is not there), or None.
    A teammate who uses one harness is not warned about the others on every doctor."""
    variable, folder = HOMES[agent]
    own = environ.get(variable)
    home = environ.get("HOME") or os.path.expanduser("~")
    if own and agent != "gemini":
        where, shown = own, f"${variable}"
    else:
        where, shown = os.path.join(own or home, folder), f"${variable}/{folder}" if own else f"~/{folder}"
    if os.path.lexists(where):
        return None
    return (f"{NAMES[agent]}: not used on this machine yet (no {shown}); once it has run, the doctor says whether it "
            "runs this project's hooks")


# Gemini CLI and Copilot CLI: the variable that trusts the folder for a session started from this environment
BY_VARIABLE = {"gemini": "GEMINI_CLI_TRUST_WORKSPACE", "copilot": "COPILOT_ALLOW_ALL"}
GEMINI_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")
GEMINI_HOW = ("trust it once in an interactive `gemini` at the top of the work tree, or set "
              "GEMINI_CLI_TRUST_WORKSPACE=true")
COPILOT_HOW = "start it with `--trust-folder`, accept its folder-trust prompt, or set COPILOT_ALLOW_ALL=true"


def _by_variable(agent: str, environ: "Mapping[str, str]") -> list[tuple[str, str]]:
    """What this environment decides, before any file (Gemini CLI 0.61.0: GEMINI_RESTRICTED_MODE=true or
    GEMINI_CLI_TRUST_WORKSPACE=false distrust every folder, =true trusts); [] when it decides nothing."""
    name, variable = NAMES[agent], BY_VARIABLE[agent]
    restricted = environ.get("GEMINI_RESTRICTED_MODE") == "true"
    if agent == "gemini" and (restricted or environ.get(variable) == "false"):
        distrust = "GEMINI_RESTRICTED_MODE=true" if restricted else "GEMINI_CLI_TRUST_WORKSPACE=false"
        return [(WARN, f"{name} runs none of this project's hooks from this environment: {distrust} distrusts every "
                       "folder")]
    if environ.get(variable) == "true":
        return [(OK, f"{name}: {variable}=true trusts the folder for a session started from this environment "
                     "(one started elsewhere may not be)")]
    return []


def _gemini(repo: Repo, environ: "Mapping[str, str]") -> list[tuple[str, str]]:
    """Gemini CLI 0.61.0, after the variables: `security.folderTrust.enabled: false` in the user's settings trusts
    every folder, else the longest rule of `trustedFolders.json` whose folder holds this one (TRUST_PARENT names a
    path whose parent is trusted); none is untrusted: a headless run exits 55."""
    name = NAMES["gemini"]
    home = environ.get("GEMINI_CLI_HOME") or environ.get("HOME") or os.path.expanduser("~")
    settings = _config(os.path.join(home, ".gemini", "settings.json"), [home])
    security = settings.get("security") if isinstance(settings, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return [(OK, f"{name}: folder trust is off in ~/.gemini/settings.json (security.folderTrust.enabled: false), "
                     "so it loads the project's hooks in every folder")]
    given = environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    path = given or os.path.join(home, ".gemini", "trustedFolders.json")
    shown = "$GEMINI_CLI_TRUSTED_FOLDERS_PATH" if given else "~/.gemini/trustedFolders.json"
    rules = _config(path, [home] + ([os.path.dirname(given)] if given else []),
                    invalid="is not a JSON object (Gemini CLI refuses to start)")
    if rules is None:
        return [(WARN, f"{name} will not load this project's hooks: there is no {shown}, so no folder is trusted (a "
                       f"headless run exits 55) — {GEMINI_HOW}")]
    if isinstance(rules, str):
        return [(WARN, f"{name}: cannot tell whether this folder is trusted: {shown} {rules}")]
    top = os.path.realpath(repo.toplevel)
    holding = [(rule, level) for rule, level in rules.items()
               if level in GEMINI_LEVELS and isinstance(rule, str) and os.path.isabs(rule)
               and paths.within(top, os.path.realpath(os.path.dirname(rule) if level == "TRUST_PARENT" else rule))]
    level = max(holding, key=lambda held: len(held[0]))[1] if holding else None  # the first of the longest rules
    if level is not None and level != "DO_NOT_TRUST":
        return [(OK, f"{name}: this folder is trusted in {shown} ({level})")]
    how = "marked DO_NOT_TRUST" if level is not None else "not trusted"
    return [(WARN, f"{name} will not load this project's hooks: this folder is {how} in {shown} (a headless run "
                   f"exits 55) — {GEMINI_HOW}")]


def _copilot(repo: Repo, environ: "Mapping[str, str]") -> list[tuple[str, str]]:
    """GitHub Copilot CLI 1.0.102, after the variable: the folder or one above it in the `trustedFolders` of
    `$COPILOT_HOME/config.json`; `--trust-folder` trusts it for one session. Untrusted, it runs no project hook."""
    name = NAMES["copilot"]
    path, shown, roots = _home_config(environ, "COPILOT_HOME", ".copilot", "config.json")
    parsed = _config(path, roots)
    if parsed is None:
        return [(WARN, f"{name} will skip this project's hooks, silently, unless started with `--trust-folder`: "
                       f"there is no {shown}, so no folder is trusted — {COPILOT_HOW}")]
    if isinstance(parsed, str):
        return [(WARN, f"{name}: cannot tell whether this folder is trusted: {shown} {parsed}")]
    listed = parsed.get("trustedFolders")
    if listed is not None and not isinstance(listed, list):
        return [(WARN, f"{name}: cannot tell whether this folder is trusted: the trustedFolders of {shown} is not a "
                       "list")]
    top = os.path.realpath(repo.toplevel)
    if isinstance(listed, list) and any(isinstance(folder, str) and os.path.isabs(folder)
                                        and paths.within(top, os.path.realpath(folder)) for folder in listed):
        return [(OK, f"{name}: this folder is trusted in {shown} (trustedFolders; a session started with "
                     "`--trust-folder` is trusted anyway)")]
    return [(WARN, f"{name} will skip this project's hooks, silently, unless started with `--trust-folder`: this "
                   f"folder is not in the trustedFolders of {shown} — {COPILOT_HOW}")]


# What `_jsonc` drops: a `//` comment to the end of its line (the newline stays), a `/* */` one to its end or the end
# of the text. A string is matched first and kept whole (group 1, escapes and all), so no `//` in one starts a comment.
_COMMENT = Pattern(r'(?s)("(?:\\.|[^"\\])*"?)|//[^\n]*|/\*(?:.*?\*/|.*)')


def _jsonc(data: bytes) -> "Any":
    """JSON with `//` and `/* */` comments (what Gemini CLI and Copilot CLI write and read), or None."""
    try:
        return jsonio.load_json(_COMMENT.sub(r"\1", data.decode("utf-8")))
    except (UnicodeDecodeError, jsonio.DataError):
        return None


def _codex(repo: Repo, environ: "Mapping[str, str]", positions: list[tuple[str, int, int]]) -> list[tuple[str, str]]:
    config, shown, roots = _home_config(environ, "CODEX_HOME", ".codex", "config.toml")
    parsed = _config(config, roots, toml=True)
    if parsed is None:
        return [(WARN, f"Codex will skip this project's hooks: there is no {shown}, so it trusts neither this folder "
                       f"nor its hooks — {REVIEW}")]
    if isinstance(parsed, str):  # why it is not read, or not valid
        return [(WARN, f"Codex: cannot tell whether it trusts this folder and its hooks: {shown} {parsed}")]
    tops = list(dict.fromkeys((str(repo.toplevel), os.path.realpath(repo.toplevel))))
    features = parsed.get("features")
    hooks_off = isinstance(features, dict) and features.get("hooks") is False
    off = [(WARN, f"Codex runs no hook at all: `[features] hooks = false` in {shown}")] if hooks_off else []
    folder = _folder_trust(parsed, tops)
    if folder != "trusted":
        return off + [(WARN, f"Codex will skip this project's hooks: this folder is {folder} in {shown} — {REVIEW}")]
    missing = [event for event, group, handler in positions if not _entry_trusted(parsed, tops, event, group, handler)]
    if missing:
        events = ", ".join(excerpt(event, 40) for event in sorted(set(missing)))
        return off + [(WARN, f"Codex will skip {len(missing)} of the {len(positions)} hooks of .codex/hooks.json, "
                             f"silently: no trust is recorded for {events} — {REVIEW}")]
    changed = _newer(repo.path(agents.FILES["codex"]), config)
    return off + [(WARN, f"Codex: the folder is trusted and a trust is recorded for each of the {len(positions)} hooks "
                         "of .codex/hooks.json, but whether each still matches cannot be told: Codex trusts a hash of "
                         "the entry as it was reviewed, and any change since (a re-install, an upgrade, a timeout edit) "
                         "un-trusts it silently"
                         + (" — .codex/hooks.json changed after Codex last wrote its config: " + REVIEW if changed
                            else "; after such a change, review them again (/hooks)"))]


def _home_config(environ: "Mapping[str, str]", variable: str, folder: str, name: str) -> tuple[str, str, list[str]]:
    """(path, as shown, the folders a link may lead into) of a harness's config file `name` in `$variable`, else in
    ~/`folder`."""
    home = environ.get("HOME") or os.path.expanduser("~")
    own = environ.get(variable)
    where = own or os.path.join(home, folder)
    return os.path.join(where, name), f"${variable}/{name}" if own else f"~/{folder}/{name}", [home, where]


def _config(path: str, roots: list[str], invalid: str = "is not a JSON object",
            toml: bool = False) -> "dict[str, Any] | str | None":
    """The object in the user's config file at `path` (JSON with comments, or TOML), None when there is none, or why
    it is not read (a link out of every root, not a regular file, over CONFIG_CAP, unreadable; `invalid`: no object)."""
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
    if toml:
        return _toml(data)
    parsed = _jsonc(data)
    return parsed if isinstance(parsed, dict) else invalid


def _toml(data: bytes) -> "dict[str, Any] | str":
    try:
        return jsonio.load_toml(data.decode("utf-8"))
    except jsonio.DataError as exc:
        if exc.message == jsonio.NO_TOML:
            return exc.message
    except UnicodeDecodeError:
        pass
    return "is not valid TOML (Codex cannot read it either)"


def _folder_trust(parsed: "dict[str, Any]", tops: list[str]) -> str:
    """'trusted', or how the folder stands otherwise, as the doctor says it."""
    projects = parsed.get("projects")
    for top in tops:
        entry = projects.get(top) if isinstance(projects, dict) else None
        if isinstance(entry, dict):
            level = entry.get("trust_level")
            return "trusted" if level == "trusted" else "marked untrusted" if level == "untrusted" else "not trusted"
    return "not trusted"


def _entry_trusted(parsed: "dict[str, Any]", tops: list[str], event: str, group: int, handler: int) -> bool:
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

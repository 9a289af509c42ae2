"""`gate install-hooks --agent NAME`: wire the session loop into an agent harness's project configuration.

Each harness gets a start hook running `gate brief --format NAME` (every source, `compact` included)
where its start hook can take context, and a stop hook running `gate closeout --format NAME`, both by
this interpreter's absolute path in isolated mode, as the native git hooks are (hooks.py). `agents-md`
keeps a marked block in AGENTS.md for harnesses without hooks.

The files are in the work tree, often committed, and may be symlinks an attacker planted: every path
is confined to the work tree (paths.confined) and must be a file of its own at exactly that path (no
symlink at it or on its way, in the tree or not, no other hard link: `own_path`), for the installer, the
uninstaller and the doctor alike; it is written with fsio.write_atomic, which follows no link. Existing files are
merged, never clobbered: unrelated keys, other hooks and their order stay; a second run writes
nothing. The bytes a file had before the first install are kept in the state dir, so `--uninstall`
puts them back exactly when nothing else changed since; otherwise it removes only our entries.
"""

from __future__ import annotations

import os
import stat
import sys

from gates.domain import hooks
from gates.infra import dataio, fsio, jsonio, paths, state
from gates.infra.digest import sha256
from gates.infra.errors import CANNOT_RUN, GateError
from gates.infra.git import Repo
from gates.infra.text import Pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

AGENTS = ("claude", "codex", "gemini", "copilot", "cursor", "agents-md")
FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "copilot": ".github/hooks/handoff-gate.json",
    "cursor": ".cursor/hooks.json",
    "agents-md": "AGENTS.md",
}
MAX_BYTES = 1 << 20
ALL_SOURCES = "startup|resume|clear|compact"
BEGIN = "<!-- handoff-gate:begin (kept by `gate install-hooks --agent agents-md`; remove with --uninstall) -->"
END = "<!-- handoff-gate:end -->"
AGENTS_BLOCK = f"""{BEGIN}
## Session loop (handoff-gate)

1. First, before anything else: run `gate brief` and read all of it. It says what the last session left
   undone, whether the hand-over agrees with git, and which flags need you.
2. Last, before you stop: run `gate closeout --format text`. Until it exits 0, do the steps it prints
   (describe the work in the hand-over, `gate stamp`, commit the hand-over), then run it again.
{END}
"""


def command_line(kind: str, fmt: str) -> str:
    """`<python> -I [-S] -c '…' brief --format X` (hooks.command): no shim, nothing from the repository."""
    return f"{hooks.command()} {kind} --format {fmt}"


def is_ours(command: object, kind: str | None = None) -> bool:
    if not isinstance(command, str) or not any(entry in command for entry in hooks.ENTRIES):
        return False
    kinds = (kind,) if kind else ("brief", "closeout")
    return any(f" {k} --format " in command for k in kinds)


def interpreter_of(command: str) -> str:
    import shlex  # only a command to judge needs it (its `re` costs every other run)

    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    return words[0] if words else ""


# ---- what each harness gets: (event, the entry to add, the key of its command, the kind) -------------------

def _entries(agent: str) -> list[tuple[str, dict[str, Any], str]]:
    """(event, entry, kind). For claude, codex and gemini an entry is a matcher group holding one hook."""
    brief, stop = command_line("brief", agent), command_line("closeout", agent)
    if agent in ("claude", "codex"):
        return [("SessionStart", {"matcher": ALL_SOURCES, "hooks": [{"type": "command", "command": brief, "timeout": 30}]},
                 "brief"),
                ("Stop", {"hooks": [{"type": "command", "command": stop, "timeout": 60}]}, "closeout")]
    if agent == "gemini":  # lifecycle matchers are exact strings: no matcher runs for every source
        return [("SessionStart", {"hooks": [{"type": "command", "name": "handoff-gate-brief", "command": brief,
                                             "timeout": 30000, "description": "handoff-gate: the session brief"}]},
                 "brief"),
                ("AfterAgent", {"hooks": [{"type": "command", "name": "handoff-gate-closeout", "command": stop,
                                           "timeout": 60000, "description": "handoff-gate: the close-out check"}]},
                 "closeout")]
    if agent == "copilot":  # sessionStart output is ignored: the brief comes from AGENTS.md
        return [("agentStop", {"type": "command", "bash": stop, "timeoutSec": 60}, "closeout")]
    if agent == "cursor":  # sessionStart is rejected by some versions ("Unknown hook type"): stop only
        return [("stop", {"command": stop, "loop_limit": 5}, "closeout")]
    raise ValueError(agent)


def _grouped(agent: str) -> bool:
    return agent in ("claude", "codex", "gemini")


def _command_of(agent: str, entry: dict[str, Any]) -> str | None:
    value = entry.get("bash") if agent == "copilot" else entry.get("command")
    return value if isinstance(value, str) else None


def _merge(agent: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with our entries present exactly once, each where it was (replaced) or appended."""
    doc = jsonio.loads(jsonio.dumps(doc))
    if agent in ("copilot", "cursor"):
        doc.setdefault("version", 1)
    table = doc.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise GateError(f"{FILES[agent]}: `hooks` is not an object: fix it by hand first", reason="config-invalid")
    for event, entry, kind in _entries(agent):
        listed = table.setdefault(event, [])
        if not isinstance(listed, list):
            raise GateError(f"{FILES[agent]}: `hooks.{event}` is not a list: fix it by hand first", reason="config-invalid")
        if not _replace(agent, listed, entry, kind):
            listed.append(entry)
    return doc


def _replace(agent: str, listed: list[Any], entry: dict[str, Any], kind: str) -> bool:
    """Put `entry` in place of our existing one of `kind`; False when there is none."""
    for at, item in enumerate(listed):
        if not isinstance(item, dict):
            continue
        if _grouped(agent):
            inner = item.get("hooks")
            for n, hook in enumerate(inner if isinstance(inner, list) else []):
                if isinstance(hook, dict) and is_ours(hook.get("command"), kind):
                    inner[n] = entry["hooks"][0]  # type: ignore[index]
                    return True
        elif is_ours(_command_of(agent, item), kind):
            listed[at] = entry
            return True
    return False


def _strip(agent: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` without our entries; lists, groups and the hooks table they leave empty go too."""
    doc = jsonio.loads(jsonio.dumps(doc))
    table = doc.get("hooks")
    if not isinstance(table, dict):
        return doc
    for event in [e for e, _, _ in _entries(agent)]:
        listed = table.get(event)
        if not isinstance(listed, list):
            continue
        kept = []
        for item in listed:
            if _grouped(agent) and isinstance(item, dict) and isinstance(item.get("hooks"), list):
                inner = [h for h in item["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
                if not inner and item["hooks"]:
                    continue
                item["hooks"] = inner
            elif not _grouped(agent) and isinstance(item, dict) and is_ours(_command_of(agent, item)):
                continue
            kept.append(item)
        if kept:
            table[event] = kept
        else:
            del table[event]
    if not table:
        del doc["hooks"]
    if agent in ("copilot", "cursor") and doc == {"version": 1}:
        return {}
    return doc


_INDENT = Pattern(r"\n([ \t]+)\S")  # the first indented line of a settings file


def _dump(doc: dict[str, Any], like: str | None) -> bytes:
    """JSON laid out as the file was (its indent, its final newline), two spaces for a new file."""
    indent: int | str = 2
    if like:
        found = _INDENT.search(like)
        if found:
            indent = found.group(1) if "\t" in found.group(1) else len(found.group(1))
    text = jsonio.dumps(doc, indent=indent, ensure_ascii=False)
    return (text + ("\n" if like is None or like.endswith("\n") else "")).encode("utf-8")


# ---- AGENTS.md -------------------------------------------------------------------------------------------

def _with_block(text: str) -> str:
    if BEGIN in text:
        start = text.index(BEGIN)
        end = text.find(END, start)
        if end < 0:
            raise GateError(f"AGENTS.md has `{BEGIN[:30]}…` without its end marker: fix it by hand",
                            reason="config-invalid")
        end += len(END) + (1 if text[end + len(END):end + len(END) + 1] == "\n" else 0)
        return text[:start] + AGENTS_BLOCK + text[end:]
    return text + ("\n" if text else "") + AGENTS_BLOCK  # one newline before, removed again by _without_block


def _without_block(text: str) -> str:
    if BEGIN not in text:
        return text
    start = text.index(BEGIN)
    end = text.find(END, start)
    if end < 0:
        return text
    end += len(END) + (1 if text[end + len(END):end + len(END) + 1] == "\n" else 0)
    before = text[:start]
    if before.endswith("\n") and not text[end:]:
        before = before[:-1]
    return before + text[end:]


# ---- files -----------------------------------------------------------------------------------------------

class _File:
    """A harness's configuration file, at its own path: every read, write and removal goes to exactly the
    file named, never through a link (see `own_path`)."""

    def __init__(self, repo: Repo, agent: str) -> None:
        self.repo, self.agent, self.shown = repo, agent, FILES[agent]
        self.path = own_path(repo, self.shown)

    def read(self) -> bytes | None:
        if not os.path.lexists(self.path):
            return None
        data = fsio.read_bytes_capped(self.path, MAX_BYTES, self.shown)
        if isinstance(data, int):
            raise GateError(f"{data:,} bytes, over the {MAX_BYTES:,}-byte cap: not merged", reason="input-unreadable",
                            path=self.shown)
        return data

    def parse(self, data: bytes | None) -> dict[str, Any]:
        if data is None or not data.strip():
            return {}
        try:
            doc = dataio.load_json(fsio.decode_text(data, self.shown))
        except dataio.DataError as exc:
            raise GateError(f"not valid JSON ({exc}): fix it or move it aside; it was left as it is",
                            reason="config-invalid", path=self.shown) from None
        if not isinstance(doc, dict):
            raise GateError("not a JSON object: it was left as it is", reason="config-invalid", path=self.shown)
        return doc

    def missing_dirs(self) -> list[str]:
        out, folder = [], os.path.dirname(self.path)
        while not os.path.lexists(folder) and folder != self.repo.toplevel:
            out.append(folder)
            folder = os.path.dirname(folder)
        return out

    def write(self, data: bytes, expected: bytes | None) -> None:
        """A compare-and-swap of what `read` gave (None: there was no file)."""
        fsio.rewrite(self.path, expected, data, shown=self.shown, who="gate install-hooks", parents=True)


def own_path(repo: Repo, shown: str) -> str:
    """The path of the work-tree file `shown` when it is a file of its own there (or not there yet), else a
    one-line refusal naming it.

    Confined like every path (paths.confined), and more: it must resolve to itself, so no component of it is
    a symlink (a committed `.claude/settings.json -> ../package.json` would have the installer rewrite
    package.json while it says .claude/settings.json, in the tree or not), and what is there must be a
    regular file with no other hard link (the same inode under another name). fsio then opens exactly this
    path, following no link, so one swapped in after this check is refused too.
    """
    lexical = _unlinked(repo, shown)
    try:
        info = os.lstat(lexical)
    except FileNotFoundError:
        return lexical
    if not stat.S_ISREG(info.st_mode):
        raise GateError("refusing it: not a regular file", code=CANNOT_RUN, reason="input-unreadable", path=shown)
    if info.st_nlink > 1:
        raise GateError(f"refusing it: it has {info.st_nlink - 1} other hard link(s), so it is another file too: the gate "
                        "writes only the file it names — copy it to a file of its own", code=CANNOT_RUN,
                        reason="input-unreadable", path=shown)
    return lexical


def _unlinked(repo: Repo, shown: str) -> str:
    """The path of `shown` in the work tree when it is confined and resolves to itself: no symlink on it."""
    lexical = repo.path(shown)
    real = paths.confined(repo, lexical, shown, reason="input-unreadable")
    if real != os.path.join(str(repo.toplevel), *shown.split("/")):
        parts = shown.split("/")
        link = next(("/".join(parts[:n]) for n in range(1, len(parts) + 1) if os.path.islink(repo.path("/".join(parts[:n])))),
                    shown)
        raise GateError(f"refusing it: {link} is a symlink (to {os.path.relpath(real, repo.toplevel)}): the gate writes "
                        "only the file it names — replace the link by a regular file", code=CANNOT_RUN,
                        reason="input-unreadable", path=shown)
    return lexical


def _record_path(repo: Repo, agent: str) -> str:
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, os.path.join(lay.root, "agents"))
    key = sha256(f"{repo.toplevel}\0{FILES[agent]}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(folder, f"{key}.json")


def _read_record(repo: Repo, agent: str) -> dict[str, Any] | None:
    data = fsio.read_state_file(_record_path(repo, agent), MAX_BYTES * 2)
    if not data:
        return None
    try:
        record = dataio.load_json(data.decode("utf-8"))
    except (dataio.DataError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("path") == FILES[agent] else None


def _digest(data: bytes | None) -> str | None:
    return sha256(data).hexdigest() if data is not None else None


def install(repo: Repo, agent: str) -> list[str]:
    target = _File(repo, agent)
    before = target.read()
    if agent == "agents-md":
        text = fsio.decode_text(before, target.shown) if before else ""
        after = _with_block(text).encode("utf-8")
    else:
        doc = target.parse(before)
        merged = _merge(agent, doc)
        after = before if merged == doc and before is not None else _dump(merged, before.decode("utf-8") if before else None)
    if after == before:
        return [f"{target.shown}: already runs the gate, unchanged", *_notes(repo, agent)]
    record = _read_record(repo, agent)
    if record is None or record.get("written") != _digest(before):
        import base64

        record = {"path": target.shown, "original": base64.b64encode(before).decode() if before is not None else None,
                  "created_dirs": [os.path.relpath(d, repo.toplevel) for d in target.missing_dirs()]}
    record["written"] = _digest(after)
    target.write(after, before)
    state.write(repo, _record_path(repo, agent), (jsonio.dumps(record) + "\n").encode())
    return [f"{'updated' if before is not None else 'wrote'} {target.shown}: {_what(agent)}", *_notes(repo, agent)]


def uninstall(repo: Repo, agent: str) -> list[str]:
    target = _File(repo, agent)
    current = target.read()
    record = _read_record(repo, agent)
    record_path = _record_path(repo, agent)
    # A link here (planted, or the user's own) was refused by _File: nothing is deleted or written through it.
    ours = record is not None and current is not None and record.get("written") == _digest(current)
    if ours and record is not None:
        original = record.get("original")
        if original is None:
            os.unlink(target.path)
            for folder in record.get("created_dirs") or []:
                _rmdir_if_empty(repo, folder)
            said = f"removed {target.shown} (the gate had created it)"
        else:
            import base64

            target.write(base64.b64decode(original), current)
            said = f"restored {target.shown} to its bytes before `gate install-hooks --agent {agent}`"
        os.unlink(record_path)
        return [said]
    if current is None:
        return [f"{target.shown}: not there, nothing to remove"]
    if agent == "agents-md":
        text = fsio.decode_text(current, target.shown)
        stripped = _without_block(text)
        after = stripped.encode("utf-8") if stripped != text else current
        empty = not stripped
    else:
        doc = target.parse(current)
        result = _strip(agent, doc)
        after = current if result == doc else _dump(result, current.decode("utf-8"))
        empty = not result
    if after == current:
        return [f"{target.shown}: no handoff-gate hook in it, unchanged"]
    if empty:
        os.unlink(target.path)
        said = f"removed {target.shown}: nothing but the gate's hooks was in it"
    else:
        target.write(after, current)
        said = f"removed the handoff-gate hooks from {target.shown}; everything else is kept"
    if record is not None:
        os.unlink(record_path)
    return [said]


def _rmdir_if_empty(repo: Repo, relative: str) -> None:
    try:
        folder = _unlinked(repo, relative)  # a folder the gate made, not one a link now stands for
    except GateError:
        return
    try:
        os.rmdir(folder)
    except OSError:
        pass  # not empty, or gone: left as it is


def _what(agent: str) -> str:
    return {
        "claude": "SessionStart (every source) runs `gate brief --format claude`, Stop runs `gate closeout --format claude`",
        "codex": "SessionStart (every source) runs `gate brief --format codex`, Stop runs `gate closeout --format codex`",
        "gemini": "SessionStart runs `gate brief --format gemini`, AfterAgent runs `gate closeout --format gemini`",
        "copilot": "agentStop runs `gate closeout --format copilot`",
        "cursor": "stop runs `gate closeout --format cursor`",
        "agents-md": "a marked block tells an agent to run `gate brief` first and `gate closeout --format text` last",
    }[agent]


def _notes(repo: Repo, agent: str) -> list[str]:
    notes = []
    if agent == "codex":
        notes.append("note: Codex runs project hooks only after you review and trust them: start `codex` here and "
                     "trust them in /hooks (older versions also need `[features] codex_hooks = true` in "
                     "~/.codex/config.toml, which the gate does not edit)")
    if agent in ("copilot", "claude") and _has_ours(repo, "claude") and _has_ours(repo, "copilot"):
        notes.append("note: Copilot CLI also runs the hooks in .claude/settings.json; a stop judged by one of them is "
                     "not judged again by the other within seconds, so a session is blocked once per stop")
    if agent in ("copilot", "cursor"):
        notes.append(f"note: {agent}'s session-start hook cannot hand the brief to the model: "
                     "`gate install-hooks --agent agents-md` tells it to run `gate brief` first")
    return notes


def _has_ours(repo: Repo, agent: str) -> bool:
    try:
        doc = _File(repo, agent).parse(_File(repo, agent).read())
    except GateError:
        return False
    return bool(_our_commands(agent, doc))


def _our_commands(agent: str, doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(event, command) of every hook of ours in a harness's parsed configuration."""
    found: list[tuple[str, str]] = []
    table = doc.get("hooks")
    for event, listed in (table.items() if isinstance(table, dict) else []):
        for item in listed if isinstance(listed, list) else []:
            if not isinstance(item, dict):
                continue
            inner = item.get("hooks") if _grouped(agent) else [item]
            for hook in inner if isinstance(inner, list) else []:
                command = _command_of(agent, hook) if isinstance(hook, dict) else None
                if command and is_ours(command):
                    found.append((str(event), command))
    return found


def run(repo: Repo, agents: list[str], uninstall_them: bool) -> list[str]:
    act: Callable[[Repo, str], list[str]] = uninstall if uninstall_them else install
    said = []
    for agent in dict.fromkeys(agents):
        try:
            said += act(repo, agent)
        except GateError as exc:
            raise GateError(f"{agent}: {exc.render()}", code=CANNOT_RUN, reason=exc.reason) from None
    return said


def doctor(repo: Repo) -> list[tuple[str, str]]:
    """(status, message) for each harness wired here: its file parses, its hooks run a working interpreter."""
    out = []
    for agent in AGENTS:
        shown = FILES[agent]
        if not os.path.lexists(repo.path(shown)):
            continue
        try:
            target = _File(repo, agent)
            data = target.read()
            if agent == "agents-md":
                if data is not None and BEGIN.encode() in data:
                    out.append(("ok", f"{shown} tells agents to run `gate brief` first and `gate closeout` last"))
                continue
            doc = target.parse(data)
        except GateError as exc:
            cannot = "" if exc.message.startswith("refusing it:") else " (the harness cannot read it either)"
            out.append(("FIX", f"{exc.render()}{cannot}" if exc.path else f"{shown}: {exc.render()}{cannot}"))
            continue
        commands = _our_commands(agent, doc)
        if not commands:
            continue
        wanted = {kind for _, _, kind in _entries(agent)}
        have = {kind for kind in ("brief", "closeout") if any(is_ours(c, kind) for _, c in commands)}
        gone = sorted({interpreter_of(c) for _, c in commands if not os.access(interpreter_of(c), os.X_OK)})
        if gone:
            out.append(("FIX", f"{shown}: the hooks run {', '.join(gone) or 'no interpreter'}, which is gone: "
                               f"`gate install-hooks --agent {agent}` from the environment the gate is installed in"))
        elif wanted - have:
            out.append(("FIX", f"{shown}: no hook runs `gate {'/'.join(sorted(wanted - have))}`: "
                               f"`gate install-hooks --agent {agent}`"))
        elif any(interpreter_of(c) != sys.executable for _, c in commands):
            out.append(("warn", f"{shown}: the hooks were written by another installation of the gate: "
                                f"`gate install-hooks --agent {agent}` rewrites them for this one"))
        else:
            out.append(("ok", f"{shown}: {_what(agent)}"))
    return out

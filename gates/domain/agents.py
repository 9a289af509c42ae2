"""`gate install-hooks --agent NAME`: wire the session loop into an agent harness's project configuration
(docs/agents.md: what each harness gets, and why).

The committed files run on every clone, so their hooks name no path of this machine: each runs the portable
program (`portable_line`; Claude Code, which quotes a blocking hook's command to the model, runs it from SCRIPTS
through `short_line`). `--local` (a per-user file) names this interpreter instead (`command_line`); one file or
the other runs the gate, never both. Every file is written at exactly its own path (`own_path`, docs/security.md)
and merged, never clobbered; the bytes it had before the first install are kept in the state dir, so
`--uninstall` puts them back when nothing else changed since.
"""

import os
import stat
import sys

from gates.domain import hooks
from gates.infra import fsio, jsonio, paths, state
from gates.infra.digest import sha256
from gates.infra.errors import CANNOT_RUN, USAGE, GateError
from gates.infra.git import Repo
from gates.infra.text import Pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeGuard

AGENTS = ("claude", "codex", "gemini", "copilot", "cursor", "agents-md")
LOCAL_FILES = {"claude": ".claude/settings.local.json"}  # per-user project files, never committed
FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "copilot": ".github/hooks/handoff-gate.json",
    "cursor": ".cursor/hooks.json",
    "agents-md": "AGENTS.md",
}
# The hook program the committed hooks run from a file of its own where the harness quotes the hook's command to the
# model on every block (Claude Code 2.1.332): the command stays a short line that says nothing.
SCRIPTS = {"claude": ".claude/hooks/handoff-gate.sh"}
GROUPED = ("claude", "codex", "gemini")  # whose events list matcher groups, each holding hooks
MAX_BYTES = 1 << 20
ALL_SOURCES = "startup|resume|clear|compact|fork"
EARLIER_SOURCES = ("startup|resume|clear|compact",)  # what earlier versions wrote: widened to ALL_SOURCES on re-install
# handoff-gate is installed from a clone (it is not on PyPI): the README's Quick start says how
INSTALL_LINE = ("install it as the Quick start of the handoff-gate README says (a virtual environment of its own, gate "
                "linked into ~/.local/bin)")
NAME = "handoff-gate"  # $0 of the portable hook's shell
NOT_INSTALLED = {
    "brief": f"handoff-gate is not installed here: {INSTALL_LINE}, so that gate is on PATH outside this repository, "
             "then start a new session; until then no brief is given and the close-out is not checked.",
    "closeout": f"handoff-gate is not installed here, so this stop was not checked: {INSTALL_LINE}, so that gate is "
                "on PATH outside this repository.",
}
BEGIN = "<!-- handoff-gate:begin (kept by `gate install-hooks --agent agents-md`; remove with --uninstall) -->"
END = "<!-- handoff-gate:end -->"
AGENTS_BLOCK = f"""{BEGIN}
## Session loop (handoff-gate)

`gate` is the one on your shell's PATH; where there is none (a login shell rebuilds PATH, and a virtual
environment's folder is gone from it), run `python3 -I -m gates` in its place. When neither runs, tell the user
"handoff-gate is not installed here: {INSTALL_LINE}" and go on without these two steps.

1. First, before anything else: run `gate brief` and read all of it. It says what the last session left
   undone, whether the hand-over agrees with git, and which flags need you.
2. Last, before you stop: run `gate closeout --format text`. Until it exits 0, do the steps it prints
   (describe the work in the hand-over, `gate stamp`, commit the hand-over), then run it again.
{END}
"""


def command_line(kind: str, fmt: str) -> str:
    """`<python> -I [-S] -c '…' brief --format X` (hooks.command): no shim, nothing from the repository. This
    machine's form, for a per-user file (`--local`)."""
    return f"{hooks.command()} {kind} --format {fmt}"


# The portable hook's program, run by /bin/sh (POSIX) with `kind --format fmt` as "$@" (docs/security.md: the
# committed harness hooks run no program the repository commits). It looks for the gate only in PATH folders that
# are absolute and, resolved, outside the repository (the first folder up holding a `.git`); none left: /dev/null,
# never the empty PATH that means the current folder. Its exit code is 0 or 1 (Gemini reads any other as a deny,
# Claude Code 2 as a block); a `gate` exiting 126 or 127 (its interpreter gone) is passed over. Gemini CLI 0.61.0
# rewrites `$NAME`, `${NAME}` and `${NAME:-default}` in its settings strings: so every variable is read as `${x#}`
# and no `${…:-…}` appears.
_FIND = ('set -f; IFS=:; r=$(pwd -P); t=${r#}; while [ -n "${t#}" ] && [ ! -e "${t#}/.git" ]; do t=${t%/*}; done; '
         '[ -n "${t#}" ] && r=${t#}; p=; for d in ${PATH#}; do case ${d#} in /*) e=$(cd -P "${d#}" 2>/dev/null && pwd -P) || '
         'continue; case ${e#}/ in "${r#}"/*) ;; *) p=${p#}${p:+:}${d#};; esac;; esac; done; unset IFS; set +f; '
         '[ -n "${p#}" ] || p=/dev/null; PATH=${p#}; if g=$(command -v gate); then "${g#}" "$@"; s=$?; case ${s#} in 126|127) ;; '
         '*) exit $((s < 2 ? s : 0));; esac; fi; '
         'if y=$(command -v python3) && "${y#}" -I -c "import gates.main" 2>/dev/null; then '
         f'"${{y#}}" -I -c "{hooks.ENTRY}" "$@"; s=$?; exit $((s < 2 ? s : 0)); fi; ')


def portable_line(kind: str, fmt: str) -> str:
    """`/bin/sh -c '…' handoff-gate KIND --format FMT`: the committed form, the same bytes on every machine; where no
    gate is found it prints NOT_INSTALLED[kind] in `fmt`'s document and exits 0 (no harness reads that as a deny)."""
    return f"/bin/sh -c '{_FIND}{_say_not_installed(kind, fmt)}; exit 0' {NAME} {kind} --format {fmt}"


def _say_not_installed(kind: str, fmt: str, message: str | None = None) -> str:
    """The `echo`s of `message` (NOT_INSTALLED[kind]) in `fmt`'s document: to stdout, and to stderr where the harness
    wants it."""
    from gates.domain import harness

    out, err = harness.missing_envelope(kind, fmt, message or NOT_INSTALLED[kind])
    return f"echo {_sh_double(out)}" + (f"; echo {_sh_double(err)} >&2" if err else "")


def _sh_double(text: str) -> str:
    """`text` in sh double quotes; it holds nothing sh would expand there, nor a quote that ends the program."""
    if any(c in text for c in "$`\\'\n!"):
        raise ValueError(f"not for the portable hook: {text!r}")
    return '"' + text.replace('"', '\\"') + '"'


SCRIPT_MISSING = ("handoff-gate is wired here but its hook script {script} is missing from this clone (or not a plain "
                  "file), so no brief is given and no stop is checked: run gate install-hooks --agent {fmt} and "
                  "commit the script")


def short_line(kind: str, fmt: str) -> str:
    """`/bin/sh -c '…' handoff-gate KIND --format FMT` that runs SCRIPTS[fmt] (script_text) from the project folder
    the harness names (`$CLAUDE_PROJECT_DIR`, else the working folder). No regular file of its own there: the start
    hook says so (SCRIPT_MISSING) and the stop hook does nothing; both exit 0 (`sh` on a missing file exits 2,
    which Claude Code reads as a block)."""
    missing = "exit 0"
    if kind == "brief":  # the start hook is never quoted with a block: it says the loop is not running here
        missing = f"{{ {_say_not_installed(kind, fmt, SCRIPT_MISSING.format(script=SCRIPTS[fmt], fmt=fmt))}; exit 0; }}"
    return (f"/bin/sh -c 'f=${{CLAUDE_PROJECT_DIR:-.}}/{SCRIPTS[fmt]}; [ -f \"$f\" ] && [ ! -h \"$f\" ] || {missing}; "
            f"exec /bin/sh \"$f\" \"$@\"' {NAME} {kind} --format {fmt}")


def script_text(fmt: str) -> bytes:
    """The bytes of SCRIPTS[fmt]: the portable program (`_FIND`), then the not-installed notice of the kind in "$1"
    in `fmt`'s document, exit 0. The same bytes from every installation; `gate doctor` holds the file to them."""
    cases = "\n".join(f"{kind}) {_say_not_installed(kind, fmt)};;" for kind in ("brief", "closeout"))
    return (f"#!/bin/sh\n# handoff-gate's hook program, written by `gate install-hooks --agent {fmt}` and run by the "
            f"hooks in {FILES[fmt]}:\n# `gate doctor` checks it is these bytes; `gate install-hooks --agent {fmt} "
            f"--uninstall` removes it.\n{_FIND.rstrip()}\ncase ${{1#}} in\n{cases}\nesac\nexit 0\n"
            ).encode()


def is_portable(command: str) -> bool:
    return command.startswith("/bin/sh -c '") and f"' {NAME} " in command


def is_ours(command: object, kind: str | None = None) -> bool:
    """Whether `command` runs the gate (its program, or a SCRIPTS file through `short_line`) for `kind`, or either."""
    if not isinstance(command, str):
        return False
    runs_gate = any(entry in command for entry in hooks.ENTRIES) or (
        is_portable(command) and any(f"/{script}; " in command for script in SCRIPTS.values()))
    return runs_gate and any(f" {k} --format " in command for k in ((kind,) if kind else ("brief", "closeout")))


def interpreter_of(command: str) -> str:
    import shlex  # only a command to judge needs it (its `re` costs every other run)

    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    return words[0] if words else ""


# ---- what each harness gets: (event, the entry to add, the kind) ----------------------------------------------

def _entries(agent: str, local: bool = False) -> "list[tuple[str, dict[str, Any], str]]":
    """(event, entry, kind). For claude, codex and gemini an entry is a matcher group holding one hook. `local`: this
    machine's absolute form, for a per-user file."""
    line = command_line if local else short_line if agent in SCRIPTS else portable_line
    stop = line("closeout", agent)
    brief = line("brief", agent) if agent in ("claude", "codex", "gemini", "copilot") else ""
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
    if agent == "copilot":  # sessionStart's {"additionalContext": …} reaches the model (measured; its docs say not)
        return [("sessionStart", {"type": "command", "bash": brief, "timeoutSec": 30}, "brief"),
                ("agentStop", {"type": "command", "bash": stop, "timeoutSec": 60}, "closeout")]
    if agent == "cursor":  # sessionStart is rejected by some versions ("Unknown hook type"): stop only
        return [("stop", {"command": stop, "loop_limit": 5}, "closeout")]
    raise ValueError(agent)


def _command_of(agent: str, hook: object) -> str | None:
    if not isinstance(hook, dict):
        return None
    value = hook.get("bash" if agent == "copilot" else "command")
    return value if isinstance(value, str) else None


def _hooks_of(agent: str, item: object) -> "list[Any]":
    """The hooks of an entry in an event's list: a matcher group's `hooks`, or the entry itself; none when it is not
    an object, or a group's `hooks` is not a list (the harness would run none of them)."""
    if not isinstance(item, dict):
        return []
    inner = item.get("hooks") if agent in GROUPED else [item]
    return inner if isinstance(inner, list) else []


def _merge(agent: str, doc: "dict[str, Any]", local: bool = False) -> "dict[str, Any]":
    """`doc` with our entries present exactly once, each where it was (replaced) or appended."""
    doc = jsonio.loads(jsonio.dumps(doc))
    if agent in ("copilot", "cursor"):
        doc.setdefault("version", 1)
    table = doc.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise GateError(f"{FILES[agent]}: `hooks` is not an object: fix it by hand first", reason="config-invalid")
    for event, entry, kind in _entries(agent, local):
        listed = table.setdefault(event, [])
        if not isinstance(listed, list):
            raise GateError(f"{FILES[agent]}: `hooks.{event}` is not a list: fix it by hand first", reason="config-invalid")
        if not _replace(agent, listed, entry, kind):
            listed.append(entry)
    return doc


def _replace(agent: str, listed: "list[Any]", entry: "dict[str, Any]", kind: str) -> bool:
    """Put `entry` in place of our existing one of `kind`; False when there is none."""
    for at, item in enumerate(listed):
        inner = _hooks_of(agent, item)
        for n, hook in enumerate(inner):
            if not is_ours(_command_of(agent, hook), kind):
                continue
            if agent not in GROUPED:
                listed[at] = entry
            else:
                inner[n] = entry["hooks"][0]
                if item.get("matcher") in EARLIER_SOURCES and len(inner) == 1 and "matcher" in entry:
                    item["matcher"] = entry["matcher"]  # the group is ours alone; a matcher of the user's stays
            return True
    return False


def _strip(agent: str, doc: "dict[str, Any]") -> "dict[str, Any]":
    """`doc` without our entries; lists, groups and the hooks table they leave empty go too."""
    doc = jsonio.loads(jsonio.dumps(doc))
    table = doc.get("hooks")
    if not isinstance(table, dict):
        return doc
    for event, _, _ in _entries(agent):
        listed = table.get(event)
        if not isinstance(listed, list):
            continue
        kept = []
        for item in listed:
            held = _hooks_of(agent, item)
            inner = [hook for hook in held if not is_ours(_command_of(agent, hook))]
            if held and not inner:
                continue  # the entry, or its matcher group, held nothing but ours
            if agent in GROUPED and held:
                item["hooks"] = inner
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


def _dump(doc: "dict[str, Any]", like: str | None) -> bytes:
    """JSON laid out as the file was (its indent, its final newline), two spaces for a new file."""
    found = _INDENT.search(like) if like else None
    lead = found.group(1) if found else "  "
    indent: int | str = lead if "\t" in lead else len(lead)
    text = jsonio.dumps(doc, indent=indent, ensure_ascii=False)
    return (text + ("\n" if like is None or like.endswith("\n") else "")).encode("utf-8")


# ---- AGENTS.md -------------------------------------------------------------------------------------------

def _with_block(text: str) -> str:
    before, begin, rest = text.partition(BEGIN)
    if not begin:
        return text + ("\n" if text else "") + AGENTS_BLOCK  # one newline before, removed again by _without_block
    _, end, after = rest.partition(END)
    if not end:
        raise GateError(f"AGENTS.md has `{BEGIN[:30]}…` without its end marker: fix it by hand", reason="config-invalid")
    return before + AGENTS_BLOCK + after.removeprefix("\n")


def _without_block(text: str) -> str:
    before, begin, rest = text.partition(BEGIN)
    _, end, after = rest.partition(END)
    if not (begin and end):
        return text
    after = after.removeprefix("\n")
    if before.endswith("\n") and not after:
        before = before[:-1]
    return before + after


# ---- files -----------------------------------------------------------------------------------------------

class _File:
    """A harness's configuration file, at its own path: every read, write and removal goes to exactly the
    file named, never through a link (see `own_path`)."""

    def __init__(self, repo: Repo, agent: str, local: bool = False, shown: str | None = None) -> None:
        if local and agent not in LOCAL_FILES:
            raise GateError(f"--local: {agent} has no per-user project file (only Claude Code has one, "
                            f"{LOCAL_FILES['claude']}): commit {FILES[agent]}, whose hooks run on every clone",
                            code=USAGE, reason="config-invalid")
        self.repo, self.shown = repo, shown or (LOCAL_FILES if local else FILES)[agent]
        self.path = own_path(repo, self.shown)

    def read(self) -> bytes | None:
        if not os.path.lexists(self.path):
            return None
        data = fsio.read_bytes_capped(self.path, MAX_BYTES, self.shown)
        if isinstance(data, int):
            raise GateError(f"{data:,} bytes, over the {MAX_BYTES:,}-byte cap: not merged", reason="input-unreadable",
                            path=self.shown)
        return data

    def parse(self, data: bytes | None) -> "dict[str, Any]":
        if data is None or not data.strip():
            return {}
        try:
            doc = jsonio.load_json(fsio.decode_text(data, self.shown))
        except jsonio.DataError as exc:
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
    one-line refusal: confined, no symlink at it or on its way (a committed `.claude/settings.json ->
    ../package.json` would have package.json rewritten), a regular file with no other hard link. fsio then follows
    no link, so one swapped in after this check is refused too (docs/security.md)."""
    lexical = _unlinked(repo, shown)
    try:
        info = os.lstat(lexical)
    except FileNotFoundError:
        return lexical
    if not stat.S_ISREG(info.st_mode):
        raise _refused(shown, "not a regular file")
    if info.st_nlink > 1:
        raise _refused(shown, f"it has {info.st_nlink - 1} other hard link(s), so it is another file too: the gate "
                              "writes only the file it names — copy it to a file of its own")
    return lexical


def _unlinked(repo: Repo, shown: str) -> str:
    """The path of `shown` in the work tree when it is confined and resolves to itself: no symlink on it."""
    lexical = repo.path(shown)
    real = paths.confined(repo, lexical, shown, reason="input-unreadable")
    parts = shown.split("/")
    if real != os.path.join(str(repo.toplevel), *parts):
        link = next(("/".join(parts[:n]) for n in range(1, len(parts) + 1) if os.path.islink(repo.path("/".join(parts[:n])))),
                    shown)
        raise _refused(shown, f"{link} is a symlink (to {os.path.relpath(real, repo.toplevel)}): the gate writes only "
                              "the file it names — replace the link by a regular file")
    return lexical


def _refused(shown: str, why: str, reason: str = "input-unreadable") -> GateError:
    return GateError(f"refusing it: {why}", code=CANNOT_RUN, reason=reason, path=shown)


def _record_path(repo: Repo, shown: str) -> str:
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, os.path.join(lay.root, "agents"))
    key = sha256(f"{repo.toplevel}\0{shown}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(folder, f"{key}.json")


def _read_record(repo: Repo, shown: str) -> "dict[str, Any] | None":
    """The gate's record of what it wrote at `shown`, or None: none, or one it cannot use (the git dir is hostile
    input: a record planted or edited there, with a field of another type, is unreadable, so no record)."""
    data = fsio.read_state_file(_record_path(repo, shown), MAX_BYTES * 2)
    if not data:
        return None
    try:
        record = jsonio.load_json(data.decode("utf-8"))
    except (jsonio.DataError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("path") == shown and _record_fields(record) else None


def _record_fields(record: "dict[str, Any]") -> bool:
    """Whether each field the gate computes with has its type: `written` null or a SHA-256 in hex, `original` null
    or base64, `created_dirs` absent, null or a list of strings."""
    import base64

    written, original, dirs = record.get("written"), record.get("original"), record.get("created_dirs")
    if written is not None and not (isinstance(written, str) and len(written) == 64
                                    and all(c in "0123456789abcdef" for c in written)):
        return False
    if dirs is not None and not (isinstance(dirs, list) and all(isinstance(d, str) for d in dirs)):
        return False
    if original is None:
        return True
    try:
        return isinstance(original, str) and base64.b64decode(original, validate=True) is not None
    except ValueError:  # binascii.Error, or a character that is not ASCII
        return False


def _wrote(record: "dict[str, Any] | None", data: bytes | None) -> "TypeGuard[dict[str, Any]]":
    """Whether `record` says the gate's last write left `data` (None: no file) there."""
    return record is not None and record.get("written") == (sha256(data).hexdigest() if data is not None else None)


def install(repo: Repo, agent: str, local: bool = False) -> list[str]:
    target = _File(repo, agent, local)
    _one_of_them(repo, agent, local)
    script = _Script(repo, agent) if agent in SCRIPTS and not local else None
    if script and script.foreign:  # refused before anything is written
        raise _refused(SCRIPTS[agent], f"not the hook program `gate install-hooks --agent {agent}` writes, and the "
                       f"hooks in {FILES[agent]} would run it — look at what it does, move it aside, then run this again",
                       reason="config-invalid")
    before = target.read()
    if agent == "agents-md":
        text = fsio.decode_text(before, target.shown) if before else ""
        after = _bom(before) + _with_block(text).encode("utf-8")
    else:
        doc = target.parse(before)
        merged = _merge(agent, doc, local)
        after = before if merged == doc and before is not None else _dump(merged, before.decode("utf-8") if before else None)
    said = [script.install()] if script else []
    if after == before:
        return [*said, f"{target.shown}: already runs the gate, unchanged", *_notes(repo, agent, local)]
    _put(repo, target, before, after)
    return [*said, f"{'updated' if before is not None else 'wrote'} {target.shown}: {_what(agent)}",
            *_notes(repo, agent, local)]


def _bom(data: bytes | None) -> bytes:
    """The UTF-8 BOM `data` begins with, kept when its text is written back (decode_text drops it), or b""."""
    return fsio.BOM if data and data.startswith(fsio.BOM) else b""


def _put(repo: Repo, target: _File, before: bytes | None, after: bytes) -> None:
    """Writes `after` where `before` was, keeping the bytes the file had before the first install (the record)."""
    record = _read_record(repo, target.shown)
    if not _wrote(record, before):
        import base64

        record = {"path": target.shown, "original": base64.b64encode(before).decode() if before is not None else None,
                  "created_dirs": [os.path.relpath(d, repo.toplevel) for d in target.missing_dirs()]}
    record["written"] = sha256(after).hexdigest()
    target.write(after, before)
    state.write(repo, _record_path(repo, target.shown), (jsonio.dumps(record) + "\n").encode())


class _Script:
    """SCRIPTS[agent], the program the harness's hooks run, at its own path (`own_path`). Bytes that are neither ours
    (script_text) nor what an earlier install wrote (its record) are `foreign`: never run, overwritten or removed."""

    def __init__(self, repo: Repo, agent: str) -> None:
        self.repo, self.ours = repo, script_text(agent)
        self.file = _File(repo, agent, shown=SCRIPTS[agent])
        self.current = self.file.read()
        self.record = _read_record(repo, self.file.shown)
        self.foreign = self.current not in (None, self.ours) and not _wrote(self.record, self.current)
        self.folders: list[str] = []

    def install(self) -> str:
        if self.current == self.ours:
            return f"{self.file.shown}: the hook program, unchanged"
        _put(self.repo, self.file, self.current, self.ours)
        return f"{'updated' if self.current is not None else 'wrote'} {self.file.shown}: the hook program they run"

    def uninstall(self) -> str | None:
        if self.current is None:
            return None
        if self.foreign:
            return f"{self.file.shown}: not the gate's hook program (changed since), left as it is"
        os.unlink(self.file.path)
        self.folders = (self.record or {}).get("created_dirs") or [os.path.dirname(self.file.shown)]
        for folder in self.folders:
            _rmdir_if_empty(self.repo, folder)
        if self.record is not None:
            os.unlink(_record_path(self.repo, self.file.shown))
        return f"removed {self.file.shown}"


def _one_of_them(repo: Repo, agent: str, local: bool) -> None:
    """Refuses to wire a harness's per-user file when its committed one runs the gate already, and the other way
    round: the harness runs the hooks of both, so every brief and every stop would come twice."""
    if agent not in LOCAL_FILES or not _ours_in(repo, agent, not local):
        return
    other = (FILES if local else LOCAL_FILES)[agent]
    undo = f"gate install-hooks --agent {agent}{'' if local else ' --local'} --uninstall"
    raise GateError(f"{other} runs the gate already, and {agent} would run both: remove it first (`{undo}`), or keep "
                    "it", code=CANNOT_RUN, reason="config-invalid", path=(LOCAL_FILES if local else FILES)[agent])


def uninstall(repo: Repo, agent: str, local: bool = False) -> list[str]:
    target = _File(repo, agent, local)
    script = _Script(repo, agent) if agent in SCRIPTS and not local else None
    said = script.uninstall() if script else None
    out = ([said] if said else []) + _uninstall(repo, agent, target)
    for folder in script.folders if script else []:  # the ones the settings file kept: gone with it now, when the gate made them
        _rmdir_if_empty(repo, folder)
    return out


def _uninstall(repo: Repo, agent: str, target: _File) -> list[str]:
    current = target.read()
    record = _read_record(repo, target.shown)
    record_path = _record_path(repo, target.shown)
    # A link here (planted, or the user's own) was refused by _File: nothing is deleted or written through it.
    if current is not None and _wrote(record, current):
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
        after = _bom(current) + stripped.encode("utf-8") if stripped != text else current
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
        os.rmdir(_unlinked(repo, relative))  # a folder the gate made, not one a link now stands for
    except (GateError, OSError):
        pass  # a link on its way, not empty, or gone: left as it is


def _what(agent: str) -> str:
    """What the gate wired, said from the entries themselves (a matcher is ALL_SOURCES: every source)."""
    if agent == "agents-md":
        return "a marked block tells an agent to run `gate brief` first and `gate closeout --format text` last"
    return ", ".join(f"{event}{' (every source)' if 'matcher' in entry else ''} runs `gate {kind} --format {agent}`"
                     for event, entry, kind in _entries(agent))


def _notes(repo: Repo, agent: str, local: bool = False) -> list[str]:
    notes = []
    if local and repo.git("check-ignore", "-q", "--", LOCAL_FILES[agent]).returncode != 0:
        notes.append(f"note: {LOCAL_FILES[agent]} is not ignored by git: add it to .gitignore (it names this machine's "
                     "interpreter, and a clone elsewhere cannot run it)")
    if agent == "claude":
        notes += _bound_notes(repo)
    if agent == "codex":
        notes.append("note: Codex runs project hooks only after you review and trust them: start `codex` here and "
                     "trust them in /hooks (older versions also need `[features] codex_hooks = true` in "
                     "~/.codex/config.toml, which the gate does not edit)")
    if agent in ("copilot", "claude") and _ours_in(repo, "claude") and _ours_in(repo, "copilot"):
        notes.append("note: Copilot CLI also runs the hooks in .claude/settings.json; a stop judged by one of them is "
                     "not judged again by the other within seconds, so a session is blocked once per stop; the brief "
                     "runs twice, but the model reads it once (Copilot CLI takes only its own hook's document)")
    if agent == "cursor":
        notes.append(f"note: {agent}'s session-start hook cannot hand the brief to the model: "
                     "`gate install-hooks --agent agents-md` tells it to run `gate brief` first")
    return notes


def _bound_notes(repo: Repo) -> list[str]:
    from gates.domain import harness
    from gates.infra import config

    try:
        bound = int(config.load(repo).section("closeout")["max_blocks"])
    except (GateError, KeyError, TypeError, ValueError):
        return []  # `gate check` and `gate doctor` say what is wrong with the configuration
    if harness.block_bound("claude", bound) == bound:
        return []
    return [f"note: closeout.max_blocks is {bound}, but Claude Code ends a turn itself after {harness.BLOCK_CAP['claude']} "
            f"blocked stops: for Claude the gate lets the stop through after {harness.block_bound('claude', bound)} and "
            "raises the closeout-missing flag"]


def _ours_in(repo: Repo, agent: str, local: bool = False) -> list[tuple[str, int, int, str]]:
    """`_our_hooks` of the harness's file; none when it is missing, unreadable or a link (the doctor says so)."""
    try:
        target = _File(repo, agent, local)
        return _our_hooks(agent, target.parse(target.read()))
    except GateError:
        return []


def wired(repo: Repo, agent: str) -> list[tuple[str, int, int]]:
    """(event, group, handler) of each hook of ours in the harness's project file and its per-user one (`_ours_in`)."""
    return [(event, group, handler) for local in ((False, True) if agent in LOCAL_FILES else (False,))
            for event, group, handler, _ in _ours_in(repo, agent, local)]


def _our_hooks(agent: str, doc: "dict[str, Any]") -> list[tuple[str, int, int, str]]:
    """(event, group, handler, command) of every hook of ours in a harness's parsed configuration: its positions as
    the harness numbers them (a group's in the event's list, the hook's in the group; 0 without groups)."""
    found: list[tuple[str, int, int, str]] = []
    table = doc.get("hooks")
    for event, listed in (table.items() if isinstance(table, dict) else []):
        for group, item in enumerate(listed if isinstance(listed, list) else []):
            for handler, hook in enumerate(_hooks_of(agent, item)):
                command = _command_of(agent, hook)
                if command and is_ours(command):
                    found.append((str(event), group, handler, command))
    return found


def run(repo: Repo, agents: list[str], uninstall_them: bool, local: bool = False) -> list[str]:
    act: Callable[[Repo, str, bool], list[str]] = uninstall if uninstall_them else install
    said = []
    for agent in dict.fromkeys(agents):
        try:
            said += act(repo, agent, local)
        except GateError as exc:
            raise GateError(f"{agent}: {exc.render()}", code=exc.code if exc.code == USAGE else CANNOT_RUN,
                            reason=exc.reason) from None
    if not uninstall_them and not local:  # the committed form is written to be committed: say so
        files = [name for agent in dict.fromkeys(agents) for name in (FILES[agent], SCRIPTS.get(agent)) if name]
        said.append(f"next: commit {', '.join(files)}: every clone then runs these hooks, where `gate` is on its PATH")
    return said


def doctor(repo: Repo) -> list[tuple[str, str]]:
    """(status, message) for each harness wired here: its file parses, its hooks can run here."""
    out = []
    for agent, local in [(a, False) for a in AGENTS] + [(a, True) for a in LOCAL_FILES]:
        shown = (LOCAL_FILES if local else FILES)[agent]
        if not os.path.lexists(repo.path(shown)):
            continue
        try:
            target = _File(repo, agent, local)
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
        commands = [command for _, _, _, command in _our_hooks(agent, doc)]
        if commands:
            out.append(_judged(repo, agent, local, shown, commands))
    return out


def _judged(repo: Repo, agent: str, local: bool, shown: str, commands: list[str]) -> tuple[str, str]:
    """What the doctor says of one file's hooks of ours."""
    again = f"gate install-hooks --agent {agent}{' --local' if local else ''}"
    wanted = {kind for _, _, kind in _entries(agent)}
    have = {kind for kind in ("brief", "closeout") if any(is_ours(c, kind) for c in commands)}
    fixed = [c for c in commands if not is_portable(c)]
    gone = sorted({interpreter_of(c) for c in fixed if not os.access(interpreter_of(c), os.X_OK)})
    if gone:
        return ("FIX", f"{shown}: the hooks run {', '.join(gone) or 'no interpreter'}, which is gone: "
                       f"`{again}` from the environment the gate is installed in")
    if wanted - have:
        return ("FIX", f"{shown}: no hook runs `gate {'/'.join(sorted(wanted - have))}`: `{again}`")
    if agent in SCRIPTS and not local:
        run_script = [c for c in commands if f"/{SCRIPTS[agent]}; " in c]
        if run_script and (wrong := _script_wrong(repo, agent, shown, again)):
            return ("FIX", wrong)
        if len(run_script) < len(commands) - len(fixed):  # some hooks hold the program itself
            return ("warn", f"{shown}: the hooks hold the whole hook program, which Claude Code quotes to the model on "
                            f"every blocked stop: `{again}` writes the short form that runs {SCRIPTS[agent]}")
    if fixed and local and _tracked(repo, shown):
        return ("warn", f"{shown} is committed, though it is a per-user file: its hooks name this machine's interpreter "
                        f"({interpreter_of(fixed[0])}), which no other clone has — `git rm --cached {shown}` and add it "
                        f"to .gitignore; `gate install-hooks --agent {agent}` writes the portable form every clone runs")
    if fixed and not local:
        return ("warn", f"{shown}: the hooks name this machine's interpreter ({interpreter_of(fixed[0])}), which no other "
                        f"clone has: `{again}` writes the portable form every clone runs (or `--local` for yours alone)")
    if any(interpreter_of(c) != sys.executable for c in fixed):
        return ("warn", f"{shown}: the hooks were written by another installation of the gate: `{again}` rewrites them "
                        "for this one")
    if len(fixed) < len(commands):
        found = findable(repo)
        if found is None:
            return ("warn", f"{shown}: its hooks run the `gate` on PATH (outside this repository), and this PATH has "
                            f"none: they will say handoff-gate is not installed here — put `gate` on PATH "
                            f"({INSTALL_LINE.removeprefix('install it ')})")
        return ("ok", f"{shown}: {_what(agent)} (the `gate` on PATH: {found})")
    return ("ok", f"{shown}: {_what(agent)}")


def _tracked(repo: Repo, shown: str) -> bool:
    """Whether git tracks `shown` (the index holds it): a per-user file committed goes to every clone. A git that
    cannot answer raises (the doctor says so), never reads as "not tracked"."""
    return bool(repo.ask("ls-files", "-z", "--", shown).stdout)


def _script_wrong(repo: Repo, agent: str, shown: str, again: str) -> str | None:
    """What is wrong with the hook program the hooks in `shown` run, for the doctor; None when it is ours."""
    try:
        script = _Script(repo, agent)
    except GateError as exc:
        return f"{exc.render()}: the hooks in {shown} run it — remove it, then `{again}`"
    if script.current is None:
        return f"{SCRIPTS[agent]}: missing, so the hooks in {shown} do nothing: `{again}` writes it"
    if script.current != script.ours:
        return (f"{SCRIPTS[agent]}: not the hook program `{again}` writes (its bytes differ), and the hooks in {shown} "
                f"run it — look at what it does, move it aside, then `{again}`")
    return None


def findable(repo: Repo) -> str | None:
    """The `gate` the portable hooks would run from the top of this work tree with this PATH: the first in an
    absolute PATH folder that lies, resolved, outside the repository; None when there is none."""
    top = os.path.realpath(repo.toplevel)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder.startswith("/") and os.path.isdir(folder) and not paths.within(os.path.realpath(folder), top):
            candidate = os.path.join(folder, "gate")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None

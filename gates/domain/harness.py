"""Agent harnesses: what each one passes on stdin, and the exact envelopes it reads back on stdout.

A hook's stdin is read without ever blocking a session: nothing is read from a terminal, at most
MAX_INPUT bytes are read, and the read gives up after INPUT_SECONDS (a harness that never writes
or never closes the pipe). Input that is missing or broken is not an error: the hook goes on with
what it has, and the caller flags why (`input-unreadable`).

Each harness's envelopes, budgets and caps are taken from its own documentation or schema and measured in its
CLI: docs/agents.md has them, harness by harness, with the sources.
"""

import os
import select
import sys
import time

from gates.infra import jsonio
from gates.infra.plain import NamedTuple
from gates.infra.text import clean, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_INPUT = 1 << 20
INPUT_SECONDS = 2.0

# Formats of `gate brief`: (envelope, character budget of the context). None: plain text or the json document.
START_BUDGET: dict[str, int | None] = {"text": None, "json": None, "claude": 9000, "codex": 6000, "gemini": 9000,
                                       "copilot": 9000}
START_FORMATS = tuple(START_BUDGET)
HOOK_START_FORMATS = ("claude", "codex", "gemini", "copilot")
STOP_FORMATS = ("text", "claude", "codex", "gemini", "copilot", "cursor")
UTF16_BUDGET = ("claude",)  # whose context limit counts UTF-16 units, not characters
BLOCK_CAP = {"claude": 9}  # consecutive blocked stops after which the harness itself ends the turn


class HookInput(NamedTuple):
    """What a harness passed on stdin (the fields this gate uses), and why it could not be read, if it could not."""

    data: "dict[str, Any]"
    problem: str | None = None
    given: bool = False  # some input arrived

    @property
    def session(self) -> str | None:
        """The session id (Claude, Codex, Gemini, Cursor: `session_id`; Copilot: `sessionId`), sanitised."""
        for key in ("session_id", "sessionId", "conversation_id"):
            value = self.data.get(key)
            if isinstance(value, str) and value.strip():
                return excerpt(value.strip(), 128)
        return None

    @property
    def source(self) -> str | None:
        """Why the session started: startup, resume, clear, compact (Gemini's `trigger` too)."""
        for key in ("source", "trigger"):
            value = self.data.get(key)
            if isinstance(value, str) and value:
                return excerpt(value, 40)
        return None

    @property
    def stop_hook_active(self) -> bool | None:
        value = self.data.get("stop_hook_active", self.data.get("stopHookActive"))
        return value if isinstance(value, bool) else None

    @property
    def event_ms(self) -> int | None:
        """When the harness says the event happened, in milliseconds since the epoch: Copilot CLI passes one
        `timestamp` per event to every hook it runs for it, a number to its own hooks and UTC text (`…T12:49:35.685Z`)
        to the hooks of `.claude/settings.json`. None when there is none (Claude Code, Codex and Gemini pass none)."""
        value = self.data.get("timestamp")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if not isinstance(value, str) or not value.endswith("Z"):
            return None
        from gates.infra import clock

        when = clock.parse_utc(value, zoned=True)
        return None if when is None else round(when.timestamp() * 1000)

    @property
    def loop_count(self) -> int | None:
        value = self.data.get("loop_count")
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_stdin(stream: "Any" = None, limit: int = MAX_INPUT, seconds: float = INPUT_SECONDS) -> HookInput:
    """The hook's JSON input, never blocking: a terminal, a closed or absent stdin and /dev/null give none."""
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        if os.isatty(fd):
            return HookInput({})
    except (AttributeError, OSError, ValueError):
        return HookInput({})
    raw, timed_out, error = _read_bounded(fd, limit, seconds)
    if error is not None:
        return HookInput({}, f"stdin could not be read: {error}")
    if len(raw) > limit:
        return HookInput({}, f"the input is over the {limit:,}-byte cap and was not read", True)
    if not raw.strip():
        return HookInput({}, "no input arrived within the time limit" if timed_out else None)
    try:
        data = jsonio.load_json(raw.decode("utf-8", "replace").lstrip("\ufeff"))  # Cursor's has been seen with a BOM
    except jsonio.DataError as exc:
        cut = " (cut off: the sender did not finish within the time limit)" if timed_out else ""
        return HookInput({}, f"the input is not JSON{cut}: {excerpt(str(exc), 120)}", True)
    if not isinstance(data, dict):
        return HookInput({}, f"the input is JSON but not an object ({type(data).__name__})", True)
    return HookInput(data, None, True)


def _read_bounded(fd: int, limit: int, seconds: float) -> tuple[bytes, bool, str | None]:
    """Up to `limit` + 1 bytes, until end of file, a complete JSON object, or the deadline: (bytes, timed out, error)."""
    deadline = time.monotonic() + seconds
    raw = b""
    while len(raw) <= limit:
        left = deadline - time.monotonic()
        if left <= 0:
            return raw, True, None
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError) as exc:
            return raw, False, str(exc)
        if not ready:
            return raw, True, None
        try:
            chunk = os.read(fd, min(1 << 16, limit + 1 - len(raw)))
        except BlockingIOError:
            continue
        except OSError as exc:
            return raw, False, exc.strerror or str(exc)
        if not chunk:
            break
        raw += chunk
        if chunk.rstrip().endswith(b"}") and _complete(raw):
            break  # a harness that keeps the pipe open after writing
    return raw, False, None


def _complete(raw: bytes) -> bool:
    """Whether `raw` is a whole JSON document (read_stdin then says whether it is one the gate takes)."""
    try:
        jsonio.load_json(raw.decode("utf-8", "replace").lstrip("\ufeff"))
    except jsonio.DataError as exc:
        return exc.message != jsonio.INVALID_JSON  # parsed to its end, and refused for what it holds
    return True


# ---- session start ---------------------------------------------------------------------------------------

def unreadable_input(command: str, fmt: str, problem: str, then: str) -> str:
    """The notice for a hook input that could not be read: which command, which harness, why, what it did instead."""
    return f"gate {command} --format {fmt}: the harness's hook input was unreadable ({problem}); {then}"


def start_envelope(fmt: str, context: str) -> str:
    """The exact document a harness's session-start hook reads context from; the context `clean`ed (what the agent
    reads holds no raw control, bidi, zero-width, separator or tag character, whoever built it)."""
    context = clean(context)
    start = {"hookEventName": "SessionStart", "additionalContext": context}
    documents: dict[str, dict[str, Any]] = {"claude": {"hookSpecificOutput": start},
                                            "codex": {"continue": True, "hookSpecificOutput": start},
                                            "gemini": {"hookSpecificOutput": {"additionalContext": context}},
                                            "copilot": {"additionalContext": context}}
    if fmt not in documents:
        raise ValueError(fmt)
    return jsonio.dumps(documents[fmt], ensure_ascii=False)


def units(fmt: str, text: str) -> int:
    """The length of `text` as `fmt`'s context limit counts it: UTF-16 units for Claude Code (a character past
    U+FFFF, an emoji, counts 2), characters elsewhere."""
    if fmt in UTF16_BUDGET:
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text)


def within(fmt: str, budget: int, fit: "Callable[[int], str]") -> str:
    """`fit(limit)` (a text of at most `limit` characters) for the largest limit whose text is within `budget` in
    `fmt`'s units: each try lowers the limit by what the last one was over (each character counts 1 or 2 units)."""
    limit = budget
    text = fit(limit)
    for _ in range(8):
        over = units(fmt, text) - budget
        if over <= 0:
            break
        limit = max(0, limit - over)
        text = fit(limit)
    return text


def missing_envelope(kind: str, fmt: str, message: str) -> tuple[str, str | None]:
    """(stdout, stderr) of a hook that cannot find the gate: `message` where the harness shows it to the model and
    the user, in a document it reads as neither a deny nor a block (the hook then exits 0)."""
    if kind == "brief" and fmt in NOTICE_FORMATS:
        document = jsonio.loads(start_envelope(fmt, message))
        document["systemMessage"] = message
        return jsonio.dumps(document, ensure_ascii=False), None
    if kind == "brief":  # no systemMessage here: the model is the one who can tell the user
        return start_envelope(fmt, message + RELAY), message
    return allow_envelope(fmt, message), None if fmt in NOTICE_FORMATS else message


# ---- stop ------------------------------------------------------------------------------------------------

NOTICE_FORMATS = ("claude", "codex", "gemini")  # whose stop output may carry a `systemMessage` shown to the user
# To the model of a harness that shows a hook's output to the user nowhere (Copilot CLI 1.0.102, measured on both
# its screens): the not-installed line reaches the user through it
RELAY = (" This harness shows hook messages to nobody but you: tell the user this line, in these words, in your "
         "first reply.")


def block_bound(fmt: str, configured: int) -> int:
    """How many consecutive stops `gate closeout --format fmt` blocks: `configured`, below the harness's own cap
    (Claude Code ends the turn after 9 blocks, and the gate's let-through and flag would never come)."""
    cap = BLOCK_CAP.get(fmt)
    return configured if cap is None else min(configured, cap - 1)


def _codex_words(reason: str) -> str:
    """`reason` as Codex should pass it: it XML-escapes the reason (`&&` reaches the model as `&amp;&amp;`), so
    `a && b` in a code span reads `a`, then `b`, and a lone `&`, `<` or `>` becomes its full-width twin."""
    reason = reason.replace(" && ", "`, then `")
    return reason.replace("&", "\uff06").replace("<", "\uff1c").replace(">", "\uff1e")


def block_envelope(fmt: str, reason: str) -> str:
    """What keeps a harness's agent working, with `reason` as its next instruction."""
    reason = clean(reason.strip()) or "Finish the session's close-out: run `gate closeout --format text` and do what it says."
    if fmt == "cursor":
        return jsonio.dumps({"followup_message": reason}, ensure_ascii=False)
    if fmt not in ("claude", "codex", "copilot", "gemini"):
        raise ValueError(fmt)
    if fmt == "codex":
        reason = _codex_words(reason)
    decision = "deny" if fmt == "gemini" else "block"  # Gemini CLI's word for a block is a deny
    return jsonio.dumps({"decision": decision, "reason": reason}, ensure_ascii=False)


def allow_envelope(fmt: str, notice: str | None = None) -> str:
    """What lets a harness's agent stop: nothing for Claude Code, `{}` where a JSON document is expected; with a
    `notice`, a `systemMessage` the user is shown, where the harness has one."""
    if notice and fmt in NOTICE_FORMATS:
        return jsonio.dumps({"systemMessage": clean(notice)}, ensure_ascii=False)
    if fmt == "claude":
        return ""
    if fmt in ("codex", "gemini", "copilot", "cursor"):
        return "{}"
    raise ValueError(fmt)


def schema(name: str) -> "dict[str, Any]":
    """A shipped schema of a harness document (schemas/harness/NAME.schema.json), written from its documentation."""
    from gates.infra import schemas

    return schemas.load(f"harness/{name}")


START_SCHEMA = {fmt: f"{fmt}-session-start" for fmt in HOOK_START_FORMATS}
STOP_SCHEMA = {"claude": "claude-stop", "codex": "codex-stop", "gemini": "gemini-after-agent",
               "copilot": "copilot-agent-stop", "cursor": "cursor-stop"}

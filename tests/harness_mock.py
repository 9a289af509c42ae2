"""A scripted model API on 127.0.0.1 for the tests in the real agent CLIs (test_harness_clis.py).

One server speaks the three wire formats the four CLIs use: Anthropic's Messages API (Claude Code), OpenAI's
Responses API (Codex CLI, and Copilot CLI in its offline BYOK mode) and Gemini's generateContent (Gemini CLI),
each streamed as server-sent events. Every request is recorded, reduced to what the tests ask about (a `Turn`).

The model is a script, chosen per run, that answers from the conversation alone (no counters: a CLI's side
requests, retries and title generation cannot shift it):
  plain    : always "All done." (never touches the shell)
  work     : first, one shell call that commits work but never closes out; after it, "Work committed."
  obey     : as work, and when the last prompt is the gate's stop reason, one shell call doing the close-out
  watch    : as work, its shell call also listing the names of the harness's variables its shell was given
             (and whether its git runs hooks)
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORK = "echo hello > greeting.txt && git add greeting.txt && git commit -qm 'add greeting' && echo WORK-COMMITTED"
CLOSE = ("gate check && gate stamp && git add HANDOFF.md && git commit -qm 'close-out: greeting added' "
         "&& gate closeout --format text; echo CLOSE-OUT-EXIT=$?")
# the names (never the values) of the variables a harness's shell sets that gates/domain/loopwatch.py may read, and
# HOOKS-OFF when the shell's git is told to run no hooks (a `core.hooksPath` given through GIT_CONFIG_KEY_n)
ENV_NAMES = ("; env | grep -E '^(CLAUDECODE|CODEX_[A-Z_]*|GEMINI_[A-Z_]*|COPILOT_[A-Z_]*)=' | cut -d= -f1 | sort "
             "| tr '\\n' ' '; env | grep -qE '^GIT_CONFIG_KEY_[0-9]+=core.hooksPath$' && echo HOOKS-OFF; "
             "echo ENV-NAMES-END")
STOP_REASON = "close-out is not done"  # words of the gate's block reason (Codex gets them XML-safe, still these)


@dataclass
class Turn:
    """One main-loop request of a CLI: the whole request text, the text of its last prompt, and the reply."""

    api: str
    text: str
    last_prompt: str
    after_tool: bool
    calls: int
    reply: dict[str, Any] = field(default_factory=dict)


def _texts(value: Any) -> list[str]:
    """Every string inside a JSON value, depth first (the request text the model would read)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def decide(script: str, turn: Turn) -> tuple[str, str]:
    """("shell", command) or ("text", words): what the scripted model does next."""
    if script in ("work", "obey") and turn.calls == 0:
        return "shell", WORK
    if script == "watch" and turn.calls == 0:
        return "shell", WORK + ENV_NAMES
    if script == "obey" and not turn.after_tool and STOP_REASON in turn.last_prompt:
        return "shell", CLOSE
    return "text", "Work committed." if turn.after_tool else "All done."


# ---- the three wire formats: (is it a main-loop request, its Turn) and the reply's events -------------------

def _anthropic_turn(body: dict[str, Any]) -> Turn | None:
    if not any(isinstance(t, dict) and t.get("name") == "Bash" for t in body.get("tools") or []):
        return None  # a side request (a title, a topic): no tools offered
    messages = body.get("messages") or []
    calls = sum(1 for m in messages if m.get("role") == "assistant" for b in m.get("content") or []
                if isinstance(b, dict) and b.get("type") == "tool_use")
    last = messages[-1] if messages else {}
    content = last.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    after_tool = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    return Turn("anthropic", "\n".join(_texts([body.get("system"), messages])), "\n".join(_texts(blocks)), after_tool, calls)


def _anthropic_events(body: dict[str, Any], action: tuple[str, str], n: int) -> list[tuple[str | None, dict[str, Any]]]:
    kind, value = action
    if kind == "shell":
        block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_mock{n:06d}", "name": "Bash", "input": {}}
        arguments = json.dumps({"command": value, "description": "mock"})
        delta: dict[str, Any] = {"type": "input_json_delta", "partial_json": arguments}
    else:
        block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": value}
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {"id": f"msg_mock{n:06d}", "type": "message", "role": "assistant", "model": body.get("model", "mock"),
               "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    return [("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 5},
                               "delta": {"stop_reason": "tool_use" if kind == "shell" else "end_turn", "stop_sequence": None}}),
            ("message_stop", {"type": "message_stop"})]


def _responses_turn(body: dict[str, Any]) -> Turn | None:
    items = body.get("input")
    if not isinstance(items, list):
        return None
    calls = sum(1 for i in items if isinstance(i, dict) and i.get("type") in ("function_call", "local_shell_call"))
    last = items[-1] if items else {}
    after_tool = isinstance(last, dict) and last.get("type") in ("function_call_output", "local_shell_call_output")
    prompt = "\n".join(_texts(last.get("content"))) if isinstance(last, dict) else ""
    return Turn("responses", "\n".join(_texts([body.get("instructions"), items])), prompt, after_tool, calls)


def _responses_item(body: dict[str, Any], action: tuple[str, str], n: int) -> dict[str, Any]:
    kind, value = action
    if kind == "text":
        return {"type": "message", "role": "assistant", "id": f"msg_{n}", "status": "completed",
                "content": [{"type": "output_text", "text": value, "annotations": []}]}
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if "exec_command" in names:  # Codex CLI: not a login shell, whose profile would rebuild PATH
        name, arguments = "exec_command", {"cmd": value, "login": False, "yield_time_ms": 60000}
    else:  # Copilot CLI's shell tool
        name, arguments = "bash", {"command": value, "description": "mock", "mode": "sync", "initial_wait": 60}
    return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name, "arguments": json.dumps(arguments)}


def _responses_events(item: dict[str, Any], n: int) -> list[tuple[str | None, dict[str, Any]]]:
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    done = {"id": f"resp_{n}", "output": [item], "usage": usage}
    events: list[tuple[str | None, dict[str, Any]]] = [("response.created", {"response": {"id": f"resp_{n}"}}),
                                                       ("response.output_item.added", {"output_index": 0, "item": item}),
                                                       ("response.output_item.done", {"output_index": 0, "item": item}),
                                                       ("response.completed", {"response": done})]
    return [(name, {"type": name, **data}) for name, data in events]


def _gemini_turn(body: dict[str, Any]) -> Turn | None:
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema") or config.get("responseSchema"):
        return None  # a side request (the next-speaker check, the model router)
    contents = body.get("contents") or []
    parts = [p for c in contents for p in c.get("parts") or [] if isinstance(p, dict)]
    last = [p for p in (contents[-1].get("parts") or []) if isinstance(p, dict)] if contents else []
    return Turn("gemini", "\n".join(_texts([body.get("systemInstruction"), contents])),
                "\n".join(p.get("text", "") for p in last), any("functionResponse" in p for p in last),
                sum(1 for p in parts if "functionCall" in p))


def _gemini_chunk(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}


class MockModel:
    """The server, in a thread of the test process, on an ephemeral port of 127.0.0.1; `script` picks the model."""

    def __init__(self, script: str = "plain") -> None:
        self.script = script
        self.turns: list[Turn] = []
        self.other: list[str] = []  # paths of the requests that were not main-loop turns
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> MockModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def take(self, turn: Turn) -> tuple[str, str]:
        with self.lock:
            action = decide(self.script, turn)
            turn.reply = {"kind": action[0], "value": action[1]}
            self.turns.append(turn)
            return action


def _handler(mock: MockModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, data: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[tuple[str | None, dict[str, Any]]]) -> None:
            self._send(200, b"".join((f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
                                     for name, data in events), "text/event-stream")

        def do_GET(self) -> None:  # model lists
            with mock.lock:
                mock.other.append("GET " + self.path)
            self._send(200, json.dumps({"object": "list", "data": [{"id": "mock-model", "object": "model", "type": "model"}],
                                        "models": [{"name": "models/mock-model"}], "has_more": False}).encode())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            path = self.path.split("?", 1)[0]
            n = len(mock.turns) + len(mock.other)
            turn: Turn | None = None
            if path.endswith("/v1/messages") and (turn := _anthropic_turn(body)):
                self._sse(_anthropic_events(body, mock.take(turn), n))
            elif path.endswith("/v1/messages"):
                self._sse(_anthropic_events(body, ("text", "mock side reply"), n))
            elif path.endswith("/responses") and (turn := _responses_turn(body)):
                self._sse(_responses_events(_responses_item(body, mock.take(turn), n), n))
            elif ":countTokens" in path:
                self._send(200, b'{"totalTokens": 100}')
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                turn = _gemini_turn(body)
                if turn is None:
                    side = {"reasoning": "mock", "next_speaker": "user", "model_choice": "flash", "complexity_score": 1}
                    parts: list[dict[str, Any]] = [{"text": json.dumps(side)}]
                else:
                    kind, value = mock.take(turn)
                    parts = [{"functionCall": {"name": "run_shell_command", "args": {"command": value, "description": "mock"}}}
                             if kind == "shell" else {"text": value}]
                if ":streamGenerateContent" in path:
                    self._sse([(None, _gemini_chunk(parts))])
                else:
                    self._send(200, json.dumps(_gemini_chunk(parts)).encode())
            else:
                with mock.lock:
                    mock.other.append("POST " + self.path)
                self._send(404, b'{"error": {"code": 404, "message": "mock: not found"}}')
                return
            if turn is None:
                with mock.lock:
                    mock.other.append("POST " + self.path)

    return Handler

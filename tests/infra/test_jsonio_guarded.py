"""Every parse of hostile or external input goes through one guarded reader (adversarial review adv1: 04, 07, 08).

A parser's own overflow (RecursionError, MemoryError) is not a ValueError: a raw `json.loads`, `tomllib.loads` or
ruamel parse of a file or of a harness's stdin let it out as a traceback (the doctor's `.claude/settings.json`, the
user's Codex `config.toml`, the stop hook's input probe). The readers are `jsonio.load_json`, `jsonio.load_toml` and
`dataio.load_yaml`, each run under `jsonio.guard`; any other parse is of the gate's own documents, listed here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from gates.infra import dataio, jsonio

PACKAGE = Path(__file__).resolve().parents[2] / "gates"
RAW = re.compile(r"\b(?:json|jsonio)\.loads\(|\btomllib\.loads?\(|\byaml\.parse\(|\bYAML\(")

# (file, the line's text holding the call): parses of what the gate itself made or ships, never of hostile input.
OWN = {
    ("infra/config.py", "jsonio.loads(_DEFAULTS_JSON)"),  # the shipped defaults
    ("infra/schemas.py", "jsonio.loads(schema_bytes(name)"),  # a shipped schema
    ("infra/surfaces.py", 'json.loads("\\n".join(lines))'),  # the development tool's own schema file
    ("infra/cache.py", "jsonio.loads(body.decode"),  # only once the entry is authenticated by the user's key
    ("infra/validation.py", "json.loads(sys.argv[1])"),  # the parent's sys.path, handed to its child
    ("infra/validation.py", "jsonio.loads(proc.stdout"),  # the child's answer, written by the gate's own code
    ("infra/validation.py", "jsonio.loads(request.decode"),  # the parent's request, data load_json or YAML took
    ("domain/agents.py", "jsonio.loads(jsonio.dumps(doc))"),  # a copy of a document already read
    ("domain/harness.py", "jsonio.loads(start_envelope("),  # the gate's own envelope
    ("infra/jsonio.py", "json.loads(text, object_pairs_hook"),  # jsonio.loads's fallback: the same parse
    ("infra/jsonio.py", "tomllib.loads(text)"),  # load_toml itself
    ("infra/dataio.py", 'YAML(typ="safe", pure=True)'),  # load_yaml itself
    ("infra/dataio.py", "yaml.parse(text)"),
    ("commands/config.py", 'YAML(typ="safe", pure=True)'),  # `gate config` dumps the effective config: no parse
}


def test_no_parser_runs_on_input_outside_the_guarded_readers() -> None:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for line in path.read_text().splitlines():
            if RAW.search(line) and not line.lstrip().startswith(("#", "def ", '"""')):
                relative = path.relative_to(PACKAGE).as_posix()
                allowed = [text for name, text in OWN if name == relative and text in line]
                assert allowed, f"{relative}: a parse outside the guarded readers: {line.strip()}"
                found.add((relative, allowed[0]))
    assert found == OWN  # each entry of the list still stands for a call (a stale one would hide a new call)


@pytest.mark.parametrize("reader, text", [
    (jsonio.load_json, "[" * 100_000),
    (jsonio.load_json, '{"a":' * 100_000),
    pytest.param(jsonio.load_toml, "a = " + "[" * 100_000, marks=pytest.mark.skipif(
        sys.version_info < (3, 11), reason="Python 3.10 has no TOML reader")),
    (dataio.load_yaml, "[" * 100_000),
    (dataio.load_yaml, "a: " + "{b: " * 100_000),
])
def test_deep_nesting_is_a_data_error_of_every_reader(reader: object, text: str) -> None:
    with pytest.raises(jsonio.DataError) as caught:
        reader(text)  # type: ignore[operator]
    assert "\n" not in caught.value.message


def test_the_guard_turns_a_parsers_overflow_into_a_data_error() -> None:
    def exhausted() -> None:
        raise MemoryError

    def overflowed() -> None:
        raise RecursionError

    for parse, said in ((exhausted, "invalid TOML: too large to parse"), (overflowed, "invalid TOML: nested too deeply")):
        with pytest.raises(jsonio.DataError) as caught:
            jsonio.guard("TOML", parse)
        assert caught.value.message == said

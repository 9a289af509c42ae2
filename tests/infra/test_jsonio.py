"""The JSON door gives `json`'s own answers and errors (gates/infra/jsonio.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import bare_python, imported_by
from hypothesis import given, settings
from hypothesis import strategies as st

from gates.infra import jsonio
from gates.infra.jsonio import DataError, load_json

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
DATA = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(DATA, st.booleans(), st.booleans(), st.sampled_from([None, (",", ":"), (", ", ": ")]))
def test_dumps_is_json_dumps(value: Any, sort_keys: bool, ensure_ascii: bool,
                             separators: tuple[str, str] | None) -> None:
    expected = json.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators)
    assert jsonio.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators) == expected
    for indent in (0, 2):
        assert jsonio.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) \
            == json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


@settings(max_examples=300, deadline=None)
@given(DATA, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_loads_is_json_loads(value: Any, space: str) -> None:
    text = space + json.dumps(value) + space
    assert jsonio.loads(text) == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]",:0123456789.eE+-tfnrulasNaIiy \n\\u', max_size=30))
def test_any_text_is_read_or_refused_as_json_does(text: str) -> None:
    try:
        expected: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as caught:
            jsonio.loads(text)
        assert (caught.value.msg, caught.value.lineno, caught.value.colno) == (exc.msg, exc.lineno, exc.colno)
    else:
        got = jsonio.loads(text)
        assert json.dumps(got) == json.dumps(expected)  # NaN != NaN: compare the texts


def test_hooks_reach_the_scanner() -> None:
    seen: list[list[tuple[str, Any]]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen.append(items)
        return dict(items)

    assert jsonio.loads('{"a": 1.5, "b": 2}', object_pairs_hook=pairs, parse_float=str, parse_int=str) \
        == {"a": "1.5", "b": "2"}
    assert seen == [[("a", "1.5"), ("b", "2")]]


def test_refusals_keep_their_words_and_lines() -> None:
    with pytest.raises(DataError) as caught:
        load_json('{\n"a": 1,\n"a": 2}')
    assert caught.value.message == "duplicate key 'a'"
    with pytest.raises(DataError) as caught:
        load_json('{\n"a": 1\n"b": 2}')  # a missing comma: every Python stops at line 3
    assert (caught.value.message, caught.value.line) == (jsonio.INVALID_JSON, 3)
    with pytest.raises(DataError) as caught:  # a trailing comma: 3.13 stops at the comma, earlier ones after it
        load_json('{\n"a": 1,\n}')
    assert caught.value.message == jsonio.INVALID_JSON and caught.value.line in (2, 3)
    with pytest.raises(DataError, match="NaN is not allowed"):
        load_json("[NaN]")
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsonio.dumps({"a": {1, 2}})


def test_reading_and_writing_on_one_line_load_neither_json_nor_re() -> None:
    """What a passing commit reads and writes (its caches) goes through the C scanner and encoder; an indented
    document (flags, manifests, claim records: failure and print paths) is json's own."""
    code = ("from gates.infra import jsonio\n"
            "assert jsonio.loads(jsonio.dumps({'a': [1, 2.5, None, 'x\u00e9']}, ensure_ascii=False))['a'][3] == 'x\u00e9'\n")
    assert imported_by(code, ("json", "re")) == []
    indented = code + "assert jsonio.loads(jsonio.dumps({'a': [{}, [], {'b': 1}]}, indent=2))['a'][2] == {'b': 1}"
    assert imported_by(indented, ("json",)) == ["json"]


def test_a_document_that_does_not_parse_is_refused_as_json_refuses_it_in_a_fresh_process() -> None:
    """Before `json` is loaded (a hook's check), the C scanner cannot even build its own error."""
    probe = ("from gates.infra import jsonio\n"
             "for text in ('{not json', '[1,', '', '1 2'):\n"
             "    try:\n        jsonio.loads(text)\n"
             "    except ValueError as exc:\n        print(type(exc).__name__, exc.lineno, exc.colno)\n")
    out = bare_python(probe).stdout
    assert out.splitlines() == ["JSONDecodeError 1 2", "JSONDecodeError 1 4", "JSONDecodeError 1 1",
                                "JSONDecodeError 1 3"]

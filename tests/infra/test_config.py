"""The config's durations (gates/infra/config.py), read with string methods, agree with the pattern they were."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gates.infra.config import MAX_DURATION, parse_duration
from gates.infra.errors import GateError

DURATION = re.compile(r"^(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,7})s)?$")


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="0123456789\u0663\u00b2dhmsDHMx \t\n", max_size=24))
@example("1d2h30m15s")
@example("1234567d")
@example("1234567s")
@example("12345678s")
@example("0s")
@example("\u0663m")
@example("5m5m")
@example("1h\n")
def test_durations_read_as_the_pattern_reads_them(text: str) -> None:
    from gates.infra.config import duration_parts

    shown = text.strip().lower()  # as parse_duration reads it (then no newline is left for `$` to pass over)
    match = DURATION.match(shown)
    assert duration_parts(shown) == (list(match.groups()) if match else None)
    try:
        got = parse_duration(text, "locks.threshold")
    except GateError:
        got = None
    shaped = DURATION.match(text.strip().lower()) if text else None
    if got is not None:
        assert shaped and any(shaped.groups())
        assert got.total_seconds() == sum(int(part or 0) * unit for part, unit in
                                          zip(shaped.groups(), (86400, 3600, 60, 1), strict=True))


def test_a_duration_is_more_than_nothing_and_at_most_thirty_days() -> None:
    assert parse_duration(" 1H30m ", "x").total_seconds() == 5400
    assert parse_duration("30d", "x") == MAX_DURATION
    for text in ("", "0s", "31d", "15", "m", "1.5h", "-1m"):
        with pytest.raises(GateError):
            parse_duration(text, "locks.threshold")

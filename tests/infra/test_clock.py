"""The one clock (gates/infra/clock.py): the one text form of a time and the one parser."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gates.infra import clock


def test_utc_text_and_parse_round_trip() -> None:
    when = datetime(2026, 1, 31, 12, 0, 5, tzinfo=timezone.utc)
    assert clock.utc_text(when) == "2026-01-31T12:00:05Z"
    assert clock.name_text(when) == "20260131T120005Z"
    assert clock.parse_utc(clock.utc_text(when)) == when
    fine = when + timedelta(microseconds=250)
    assert clock.utc_text_fine(fine) == "2026-01-31T12:00:05.000250Z"
    assert clock.utc_text_fine(when) == "2026-01-31T12:00:05Z"
    assert clock.parse_utc(clock.utc_text_fine(fine)) == fine  # a claim's TTL is kept to the microsecond


def test_parse_utc_says_none_to_what_is_not_a_time() -> None:
    for text in ("", "yesterday", None, 12, "2026-13-01T00:00:00Z", ["2026-01-01"]):
        assert clock.parse_utc(text) is None, text
    naive = clock.parse_utc("2026-01-31T12:00:00")
    assert naive is not None and naive.tzinfo is None
    assert clock.parse_utc("2026-01-31T12:00:00", zoned=True) is None
    assert clock.parse_utc("2026-01-31T12:00:00+00:00", zoned=True) == datetime(2026, 1, 31, 12, tzinfo=timezone.utc)


"""UTC time: the one clock, the one text form (`2026-01-31T12:00:00Z`) and the one parser.

Every record, flag, manifest and Meta line writes time as `utc_text`; claims write sub-second
times (`utc_text_fine`) so that a TTL is neither cut short nor stretched to whole seconds. Every
message shows a time in the one form, to the second: `shown` turns a recorded time into it.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime as datetime
    from datetime import timedelta as timedelta
    from datetime import timezone as timezone
else:
    try:  # the C types that `datetime` itself re-exports, without running its Python half (~5 ms)
        from _datetime import datetime, timedelta, timezone  # noqa: F401 (timedelta: for the modules above)
    except ImportError:  # an interpreter without the accelerator
        from datetime import datetime, timedelta, timezone  # noqa: F401

TEXT = "%Y-%m-%dT%H:%M:%SZ"
FINE = "%Y-%m-%dT%H:%M:%S.%fZ"
NAME = "%Y%m%dT%H%M%SZ"  # in file names and ids: sorts as time does, no `:` or `-`
DATE = "%Y-%m-%d"
NAME_PATTERN = r"\d{8}T\d{6}Z"  # a regular expression matching what NAME writes, for the ids that start with it


def now() -> "datetime":
    return datetime.now(timezone.utc)


def utc_text(when: "datetime") -> str:
    """`when` to the second, as `YYYY-MM-DDTHH:MM:SSZ`."""
    return when.strftime(TEXT)


def utc_text_fine(when: "datetime") -> str:
    """`when` with its fraction of a second when it has one (`…SS.ffffffZ`), else as `utc_text`."""
    return when.strftime(FINE if when.microsecond else TEXT)


def shown(recorded: object) -> str:
    """A recorded time as every message shows it, `YYYY-MM-DDTHH:MM:SSZ` (a sub-second or offset one included);
    what is not a zoned time is shown as it is (records are hostile input: the caller excerpts it)."""
    when = parse_utc(recorded, zoned=True)
    try:
        return str(recorded) if when is None else utc_text(when.astimezone(timezone.utc))
    except (OverflowError, ValueError):  # year 1 with an offset ahead of UTC: before the first time there is
        return str(recorded)


def name_text(when: "datetime") -> str:
    """`when` to the second for a file name or an id, as `YYYYMMDDTHHMMSSZ`."""
    return when.strftime(NAME)


def date_text(when: "datetime") -> str:
    """The UTC day of `when`, as `YYYY-MM-DD` (a record's date, an archive block's heading)."""
    return when.strftime(DATE)


def at(seconds: float) -> "datetime":
    """A POSIX timestamp (an mtime) as a UTC time."""
    return datetime.fromtimestamp(seconds, timezone.utc)


def parse_utc(text: object, *, zoned: bool = False) -> "datetime | None":
    """What `datetime.fromisoformat` reads, with `Z` read as `+00:00`; None when it is not a time.

    With `zoned`, a time that names no offset is None as well. Any value is accepted (it is read as
    `str(text)`): records are hostile input, and a wrong type is simply not a time.
    """
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return None if zoned and when.tzinfo is None else when

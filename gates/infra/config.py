"""The effective configuration: the embedded defaults, overlaid by an optional `.gate.yaml`.

The file is data described by `schemas/config.schema.json`. It is parsed and validated once per content (a cache
keyed by its hash): the YAML reader and the validator are imported only on a miss, never by a commit whose
`.gate.yaml` was seen before.
"""

from __future__ import annotations

import os

from gates.infra import fsio, jsonio, paths, schemas
from gates.infra.catalog import CATALOG
from gates.infra.clock import timedelta
from gates.infra.errors import CANNOT_RUN, USAGE, GateError
from gates.infra.git import Repo
from gates.infra.text import excerpt, unsafe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIG_NAME = ".gate.yaml"
MAX_CONFIG_BYTES = 1 << 20

DEFAULTS: dict[str, Any] = {
    "version": 1,
    "handoff": {
        "path": "HANDOFF.md",
        "title": "Handoff",
        "sections": [
            "Meta",
            "Current Target",
            "Open Threads",
            "Decisions",
            "Dead Ends",
            "Verified",
            "Assumed",
            "Key References",
        ],
        "meta_section": "Meta",
        "target_section": "Current Target",
        "brief_sections": ["Open Threads"],
        "schema": None,
        "max_lines": 600,
        "max_bytes": 65536,
        "max_item_chars": 600,
    },
    "archive": {"path": "ARCHIVE.md"},
    "append_only": {"files": ["ARCHIVE.md"]},
    "records": {"path": "decisions", "prefix": "D"},
    "mailbox": {"path": "WORKPACKAGE.md", "sentinel": "No work package.", "sections": ["Goal", "Plan", "Done when"]},
    "heartbeat": {"journal": None},
    "claims": {"require": False, "ttl": None, "remote": None, "remote_timeout": "20s", "offline_push": "refuse"},
    "locks": {"quarantine": True, "threshold": "15m", "deep": False},
    "fresh": {"max_behind": 3, "fresh_days": 7, "strict": False},
    "closeout": {"max_blocks": 3},
    "gates": {gate.id: gate.on for gate in CATALOG.values()},  # the catalog says which run by default
}


class Config(dict):  # type: ignore[type-arg]
    """The effective config as plain data, plus where it came from."""

    source: str | None = None
    raw: bytes | None = None  # the bytes of .gate.yaml this config was made from (None: no file)
    handoff_named: str = "HANDOFF.md"  # handoff.path as written, a link not followed: what a commit names it by

    def section(self, name: str) -> dict[str, Any]:
        value = self[name]
        assert isinstance(value, dict)
        return value


def _bad(message: str, shown: str, line: int | None) -> GateError:
    return GateError(message, code=CANNOT_RUN, reason="config-invalid", path=shown, line=line)


_DEFAULTS_JSON = jsonio.dumps(DEFAULTS)

# Every key that names a file or folder: resolved and confined at load, then kept in canonical form.
PATH_KEYS = (("handoff", "path"), ("handoff", "schema"), ("archive", "path"), ("records", "path"),
             ("mailbox", "path"), ("heartbeat", "journal"), ("append_only", "files"))


def load(repo: Repo) -> Config:
    config = Config(jsonio.loads(_DEFAULTS_JSON))  # a fresh copy (copy.deepcopy costs an import on every commit)
    path = repo.path(CONFIG_NAME)
    if os.path.lexists(path):
        _read(repo, config, path)
    _confine(repo, config)
    return config


def _read(repo: Repo, config: Config, path: str) -> None:
    shown = CONFIG_NAME
    real, why = paths.resolve(repo, path)
    if why:
        raise _bad(f"refusing it: it {why}", shown, None)
    data = fsio.read_bytes_capped(real, MAX_CONFIG_BYTES, shown)
    if isinstance(data, int):
        raise _bad(f"config file is {data:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte cap", shown, None)
    config.raw = data
    from gates.infra import cache

    entry = f"config-{cache.key(data, schemas.identity('config'))[:40]}"
    hit = cache.get(repo, entry)
    config.source = shown
    if isinstance(hit, dict):  # this very file was parsed and validated before
        _overlay(config, hit)
        return
    parsed = _parse_and_validate(data, shown)
    _overlay(config, parsed[0])
    _check_sections(config, parsed[1], shown)
    _check_durations(config, parsed[1], shown)
    cache.put(repo, entry, parsed[0])


def _confine(repo: Repo, config: Config) -> None:
    """Each configured path as the canonical repository-relative path it names; one that leads out is refused.

    Judged on every load (the cache holds only what the file says, never what the disk looks like now).
    """
    import posixpath

    config.handoff_named = posixpath.normpath(config.section("handoff")["path"])
    for section, key in PATH_KEYS:
        value = config.section(section)[key]
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        canon = [_canonical(repo, config, (section, key, i) if isinstance(value, list) else (section, key), item)
                 for i, item in enumerate(items)]
        config.section(section)[key] = canon if isinstance(value, list) else canon[0]


def _canonical(repo: Repo, config: Config, where: tuple[object, ...], relative: str) -> str:
    text, why = paths.canonical(repo, relative.rstrip("/") if len(relative) > 1 else relative) if not unsafe(relative) \
        else (relative, "holds a control, bidi, zero-width, separator or tag character")
    if why is None:
        return text
    label = ".".join(str(part) for part in where[:2]) + (f"[{where[2]}]" if len(where) > 2 else "")
    if config.source is None or _line_of(config, where) is None:  # the default value: the file itself is the problem
        raise _bad(f"refusing it: it {why} (a symlink? the gate reads and writes only files inside the work tree; "
                   f"{label} names it by default)", excerpt(relative), None)
    raise _bad(f"{label} '{excerpt(relative)}' {why}: refused", config.source, _line_of(config, where))


def _line_of(config: Config, where: tuple[object, ...]) -> int | None:
    from gates.infra import dataio

    if config.raw is None:
        return None
    try:
        _, lines = dataio.load_yaml(fsio.decode_text(config.raw, CONFIG_NAME))
    except (GateError, dataio.DataError):
        return None
    return lines.get(where) or lines.get(where[:2]) or lines.get(where[:1])


def _parse_and_validate(data: bytes, shown: str) -> tuple[dict[str, Any], dict[tuple[object, ...], int]]:
    from gates.infra import dataio, validation

    try:
        text = fsio.decode_text(data, shown)
        parsed, lines = dataio.load_yaml(text)
    except GateError as exc:
        raise _bad(exc.message, shown, exc.line) from None
    except dataio.DataError as exc:
        raise _bad(exc.message, shown, exc.line or None) from None
    if parsed is None:
        parsed = {}
    problems = validation.validate(schemas.load("config"), parsed, lines)
    if problems:
        line, message = problems[0]
        more = "".join(f"; line {n}: {m}" for n, m in problems[1:])
        raise _bad(f"{message}{more}", shown, line)
    assert isinstance(parsed, dict)
    return parsed, lines


def _overlay(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _overlay(base[key], value)
        else:
            base[key] = value


def _check_sections(config: Config, lines: dict[tuple[object, ...], int], shown: str) -> None:
    handoff = config.section("handoff")
    names = [name.casefold() for name in handoff["sections"]]
    for key in ("meta_section", "target_section"):
        if handoff[key].casefold() not in names:
            line = lines.get(("handoff", key)) or lines.get(("handoff", "sections"))
            raise _bad(f"handoff.{key} '{handoff[key]}' is not one of handoff.sections", shown, line)
    if ("handoff", "brief_sections") not in lines:
        return  # the default, [Open Threads]: quoted where the file has it, passed over where it has not
    for at, name in enumerate(handoff["brief_sections"]):
        if name.casefold() not in names:
            line = lines.get(("handoff", "brief_sections", at)) or lines.get(("handoff", "brief_sections"))
            raise _bad(f"handoff.brief_sections[{at}] '{name}' is not one of handoff.sections", shown, line)


# A duration's parts, each optional and in this order: 1 to N decimal digits and the unit's letter. Read with string
# methods (a check meets a duration whenever a lock file is there, as on every `git commit -a`); held by
# tests/infra/test_config.py to the pattern it was, `^(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,7})s)?$`.
_DURATION_UNITS = (("d", 6), ("h", 6), ("m", 6), ("s", 7))
MAX_DURATION = timedelta(days=30)


def duration_parts(text: str) -> list[str | None] | None:
    """The digits of each part of `1d2h30m15s` (None where a part is absent), or None when `text` is not of that
    shape: what the pattern above matches, group by group."""
    parts: list[str | None] = []
    at = 0
    for unit, width in _DURATION_UNITS:
        end = at
        while end < len(text) and text[end].isdecimal():
            end += 1
        if at < end <= at + width and text[end:end + 1] == unit:
            parts.append(text[at:end])
            at = end + 1
        else:
            parts.append(None)
    return parts if at == len(text) else None


def parse_duration(text: str, label: str) -> timedelta:
    """`90s`, `15m`, `2h`, `1d`, `1h30m`: more than nothing, at most 30 days. `label` names the setting."""
    parts = duration_parts(text.strip().lower()) if text else None
    if not parts or not any(parts):
        raise GateError(f"{label} {text[:40]!r}: expected a duration like 90s, 15m, 2h, 1d or 1h30m",
                        code=USAGE, reason="usage")
    days, hours, minutes, seconds = (int(part or 0) for part in parts)
    duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if not timedelta(0) < duration <= MAX_DURATION:
        raise GateError(f"{label} {text}: must be more than 0 and at most 30d", code=USAGE, reason="usage")
    return duration


def _check_durations(config: Config, lines: dict[tuple[object, ...], int], shown: str) -> None:
    for section, key in (("claims", "ttl"), ("claims", "remote_timeout"), ("locks", "threshold")):
        value = config.section(section)[key]
        if value is not None:
            try:
                parse_duration(value, f"{section}.{key}")
            except GateError as exc:
                raise _bad(exc.message, shown, lines.get((section, key))) from None

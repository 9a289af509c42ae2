"""The effective configuration: the embedded defaults, overlaid by an optional `.gate.yaml`.

The file is data described by `schemas/config.schema.json`. It is parsed and validated once per content (a cache
keyed by its hash): the YAML reader and the validator are imported only on a miss, never by a commit whose
`.gate.yaml` was seen before.
"""

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

DEFAULTS: "dict[str, Any]" = {
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
    schema_named: str | None = None  # handoff.schema as written, a link not followed
    named_paths: tuple[str, ...] = ()  # the configured paths as written (PATH_KEYS) but the hand-over's, confined

    def section(self, name: str) -> "dict[str, Any]":
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
    """The configuration: the work tree's `.gate.yaml` over the defaults."""
    path = repo.path(CONFIG_NAME)
    data: bytes | int | None = None
    if os.path.lexists(path):
        real, why = paths.resolve(repo, path)
        if why:
            raise _bad(f"refusing it: it {why}", CONFIG_NAME, None)
        data = fsio.read_bytes_capped(real, MAX_CONFIG_BYTES, CONFIG_NAME)
    return _made(repo, data)


def _made(repo: Repo, data: bytes | int | None, confine: bool = True) -> Config:
    """The defaults, overlaid by the `.gate.yaml` of these bytes (its size, over the cap; None: no file); its paths
    resolved and confined unless `confine` is false (the text as written)."""
    config = Config(jsonio.loads(_DEFAULTS_JSON))  # a fresh copy (copy.deepcopy costs an import on every commit)
    if data is not None:
        _read(repo, config, data)
    if confine:
        _confine(repo, config)
    return config


MAX_HOPS = 256  # links met resolving one configured path: past this, no checkout is asked to reproduce them


def recorded_inputs(repo: Repo, config: Config) -> tuple[list[str], str]:
    """(what a commit must record as the work tree holds it for the configuration to read the same in a clone,
    repository-relative: every link met on the way to each configured path (a link is a file of its own in a commit),
    and the files `.gate.yaml` and the project schema themselves; the one `.gate.yaml` is read from). GateError when
    a configured path is reached through a link no clone would reproduce (out of the work tree and back, past
    MAX_HOPS, or another way than the gate reads it)."""
    found: list[str] = []
    read = ""
    for name in dict.fromkeys((CONFIG_NAME, *config.named_paths)):
        links, last = _way(repo, name)
        found += links
        if name in (CONFIG_NAME, config.schema_named):
            found.append(last)
        read = read or last
    return list(dict.fromkeys(found)), read


def _way(repo: Repo, name: str) -> tuple[list[str], str]:
    """(the links met resolving `name` in the work tree, each where it lies, its folders resolved; the file it leads
    to), repository-relative: what a checkout must reproduce for `name` to read the same."""
    top, links = repo.toplevel, []  # type: str, list[str]
    at, pending = top, name.split("/")
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        step = os.path.dirname(at) if part == ".." else os.path.join(at, part)
        if not paths.within(step, top):
            raise _bad("a link on the way to it leads out of the work tree: a clone elsewhere would not read it",
                       excerpt(name), None)
        if part != ".." and os.path.islink(step):
            if len(links) == MAX_HOPS:
                raise _bad(f"more than {MAX_HOPS} links on the way to it", excerpt(name), None)
            links.append(step)
            target = os.readlink(step)
            at, pending = ("/" if target.startswith("/") else at), [*target.split("/"), *pending]
            continue
        at = step
    if links and at != paths.real_from(repo.path(name), top, top):  # (a loop, or a part read otherwise than the system)
        raise _bad("the links on the way to it cannot be followed as the gate reads it", excerpt(name), None)
    return [paths.below(path, top).replace(os.sep, "/") for path in links], paths.below(at, top).replace(os.sep, "/")


def verify_recorded(repo: Repo, config: Config) -> None:
    """A commit being made is judged by the work tree's configuration (`config`) only when it is the one the commit
    records, which CI will judge it by: each of `recorded_inputs` as the index holds it. Else the check cannot judge
    the commit as CI will, and says what to do (exit 3, config-invalid). A `.gate.yaml` whose difference configures
    nothing (a commented copy left untracked, an edit of its comments) is none."""
    inputs, read = recorded_inputs(repo, config)
    if inputs == [CONFIG_NAME] and config.raw is not None and _same_text(repo, CONFIG_NAME, config.raw):
        return  # the common case: a plain `.gate.yaml`, read as the index holds it (no other process asked)
    entries = repo.index_entries(inputs)
    for name in inputs:
        why, advice = _unrecorded(repo, name, entries.get(name, []), config if name == read else None)
        if why and not (name == CONFIG_NAME and why != "in conflict" and _same_effect(repo, config, entries.get(name))):
            if os.path.basename(repo.env.get("GIT_INDEX_FILE", "")).startswith("next-index-"):
                advice = "this commit takes only the paths it names: name it too, or commit it apart"  # `commit PATH`
            raise _bad(f"{why}, so this commit records another configuration than the one the gate reads (CI judges "
                       f"the commit by the one it records): {advice}", excerpt(name), None)


def _unrecorded(repo: Repo, name: str, entries: list[tuple[str, str, str, str]],
                config: Config | None) -> tuple[str, str]:
    """(how the work tree's `name` differs from the index's, or ""; what makes them one), judged on the raw bytes, line
    ends aside (a CRLF checkout is no change). `config`: the configuration read from this very file, whose bytes it
    holds."""
    import stat

    from gates.infra.text import shell_path

    quoted = shell_path(name) if name.isprintable() else excerpt(name)  # (a name no shell line can hold: shown)
    full = repo.path(name)
    try:
        info: os.stat_result | None = os.lstat(full)
    except OSError:
        info = None
    staged = [entry for entry in entries if entry[3] == "0"]
    if entries and not staged:
        return "in conflict", f"resolve it, then `git add {quoted}`"
    if not staged:
        if info is not None and paths.nested(repo, name):
            return "in another repository (a submodule?)", "keep the configuration in this repository's own files"
        return ("", "") if info is None else ("not staged", f"`git add {quoted}`, or move it out of the work tree")
    tag, mode, _, _ = staged[0]
    if info is None:
        if tag == "S":
            return "left out of this sparse checkout", "check it out, so that the gate reads what the commit records"
        return "deleted without staging it", f"`git rm {quoted}`, or `git restore {quoted}`"
    if stat.S_ISLNK(info.st_mode):
        same = mode == "120000" and repo.index_blob(name, 4096) == os.fsencode(os.readlink(full))
    elif stat.S_ISREG(info.st_mode) and mode in ("100644", "100755"):
        data = config.raw if config is not None and config.raw is not None \
            else fsio.read_bytes_capped(full, MAX_CONFIG_BYTES, name)
        same = not isinstance(data, bytes) or _same_text(repo, name, data)  # (over the cap: its reader says so)
    else:
        same = False
    return ("", "") if same else ("changed without staging it", f"`git add {quoted}`, or `git restore {quoted}`")


def _same_text(repo: Repo, name: str, data: bytes) -> bool:
    """Whether the index's `name` is `data`, line ends aside (a CRLF checkout is no change)."""
    staged = repo.index_blob(name, MAX_CONFIG_BYTES)
    return staged is not None and len(staged) <= MAX_CONFIG_BYTES and fsio.same_text(staged, data)


def _same_effect(repo: Repo, config: Config, entries: list[tuple[str, str, str, str]] | None) -> bool:
    """Whether the `.gate.yaml` the index holds (none: the defaults) configures what `config` does."""
    staged = [entry for entry in entries or [] if entry[3] == "0"]
    if staged and staged[0][1] not in ("100644", "100755"):
        return False
    data = repo.index_blob(CONFIG_NAME, MAX_CONFIG_BYTES) if staged else None
    try:  # compared as written: resolved, both would lean on the work tree's links, which the commit may not record
        recorded = _made(repo, data if data is None or len(data) <= MAX_CONFIG_BYTES else len(data), confine=False)
        return recorded == _made(repo, config.raw, confine=False)
    except GateError:
        return False


def _read(repo: Repo, config: Config, data: bytes | int) -> None:
    """Overlay `config` with the `.gate.yaml` of these bytes (its size, when over the cap)."""
    shown = CONFIG_NAME
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
    parsed = parse_and_validate(data, shown)
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
    schema = config.section("handoff")["schema"]
    config.schema_named = posixpath.normpath(schema) if isinstance(schema, str) and not unsafe(schema) else None
    named: list[str] = []
    for section, key in PATH_KEYS:
        value = config.section(section)[key]
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        if (section, key) != ("handoff", "path"):  # (the hand-over is read as the index holds it at its name)
            named += [posixpath.normpath(item) for item in items]
        canon = [_canonical(repo, config, (section, key, i) if isinstance(value, list) else (section, key), item)
                 for i, item in enumerate(items)]
        config.section(section)[key] = canon if isinstance(value, list) else canon[0]
    config.named_paths = tuple(named)


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


def parse_and_validate(data: bytes, shown: str) -> "tuple[dict[str, Any], dict[tuple[object, ...], int]]":
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


def _overlay(base: "dict[str, Any]", extra: "dict[str, Any]") -> None:
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

"""Records: one Markdown file per long-lived record (a decision, a thread), with YAML front matter.

The front matter (`schemas/record.schema.json`) carries id, title, status (open, closed,
superseded), date, and `superseded_by` / `supersedes`. Ids are made of a prefix, the UTC time and
48 random bits, and a record file is created with link(), so ids cannot collide across clones,
branches or concurrent writers.
"""

from __future__ import annotations

import os
import stat
import time

from gates.infra import dataio, fsio, paths, schemas
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.digest import sha256
from gates.infra.errors import USAGE, GateError
from gates.infra.git import Repo
from gates.infra.text import Pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_RECORD_BYTES = 1 << 20
FINAL = ("closed", "superseded")
_SLUG = Pattern(r"[^a-z0-9]+")


class Record:
    def __init__(self, shown: str, meta: dict[str, Any], lines: dict[tuple[object, ...], int] | list[list[Any]],
                 checked: list[tuple[int, str]] | None = None) -> None:
        self.shown = shown
        self.meta = meta
        self._lines = lines  # as parsed, or as cached: [*key path, line] lists, made a dict when first asked
        self.checked = checked  # schema problems, once computed

    @property
    def lines(self) -> dict[tuple[object, ...], int]:
        """The line of each front-matter key path, in the file."""
        if isinstance(self._lines, list):
            self._lines = {tuple(item[:-1]): item[-1] for item in self._lines}
        return self._lines

    @property
    def status(self) -> str:
        return str(self.meta.get("status", ""))


class RecordError(Exception):
    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.message, self.line = message, line


def parse(data: bytes, shown: str) -> Record:
    """A record's front matter as data, with lines; RecordError when it has none or it is not YAML data."""
    try:
        text = fsio.decode_text(data, shown)
    except GateError as exc:
        raise RecordError(exc.message, exc.line or 1) from None
    lines = fsio.split_lines(text)
    if not lines or lines[0].strip() != "---":
        raise RecordError("no front matter: a record starts with a '---' line")
    end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() in ("---", "...")), None)
    if end is None:
        raise RecordError("front matter is not closed by a '---' line")
    try:
        meta, where = dataio.load_yaml("\n".join(lines[1:end]))
    except dataio.DataError as exc:
        raise RecordError(exc.message, exc.line + 1 if exc.line else 1) from None
    if not isinstance(meta, dict):
        raise RecordError("front matter must be a mapping of keys", 2)
    return Record(shown, meta, {path: line + 1 for path, line in where.items()})


def problems(record: Record) -> list[tuple[int, str]]:
    """Where the front matter breaks the record schema, as (line, message)."""
    if record.checked is None:
        record.checked = schemas.validate(schemas.load("record"), record.meta, record.lines)
    return record.checked


def folder(repo: Repo, config: Config) -> tuple[str, str]:
    relative: str = config.section("records")["path"].rstrip("/")
    return repo.path(relative), relative


def load_all(repo: Repo, config: Config) -> tuple[list[Record], list[tuple[str, int, str]]]:
    """Every record in the work tree, and (path, line, message) for each file that is not one.

    Parsed and validated records are cached by content hash. A file whose inode, size, mtime and
    ctime are those it had when the cache last read it is taken to hold the content it had then,
    unless it changed within RACY_NS of that read (git trusts its index's stat data the same way):
    an unchanged folder of records costs a listing, not a read and a hash of each. Deleting the
    cache changes no answer.
    """
    from gates.infra import cache

    directory, relative = folder(repo, config)
    try:
        dir_fd = fsio.open_dir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    except OSError as exc:
        raise GateError(f"cannot open the records folder: {exc.strerror}", reason="input-unreadable",
                        path=relative) from None
    try:
        return _load_folder(repo, directory, relative, dir_fd, cache)
    finally:
        os.close(dir_fd)


RACY_NS = 2_000_000_000  # a file changed this close to the cache's read may have changed again unseen


def _load_folder(repo: Repo, directory: str, relative: str, dir_fd: int,
                 cache: Any) -> tuple[list[Record], list[tuple[str, int, str]]]:
    schema_key = cache.key(schemas.schema_bytes("record"))[:16]
    old = cache.get(repo, "records") or {}
    same_schema = old.get("schema") == schema_key
    known: dict[str, Any] = old.get("entries", {}) if same_schema else {}
    seen: dict[str, Any] = old.get("files", {}) if same_schema else {}
    trusted_before = int(old.get("read_ns") or 0) - RACY_NS
    read_ns = time.time_ns()
    entries: dict[str, Any] = {}
    files: dict[str, list[int | str]] = {}
    records, broken = [], []
    fresh = False  # a file was read: the next check may trust it, once it is older than RACY_NS
    with os.scandir(dir_fd) as listing:
        names = sorted(entry.name for entry in listing if entry.name.endswith(".md"))
    for name in names:
        shown = f"{relative}/{name}"
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed since the listing
        if stat.S_ISLNK(info.st_mode):
            real, why = paths.resolve(repo, os.path.join(directory, name))
            if why:  # never read, never quoted
                broken.append((shown, 1, f"a symlink that {why}: not read"))
                continue
            digest = _digest_of(fsio.read_bytes_capped(real, MAX_RECORD_BYTES, shown), shown, broken, known, entries)
        else:
            mark = [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
            before = seen.get(name)
            if stat.S_ISREG(info.st_mode) and before and before[:4] == mark and before[4] in known \
                    and max(info.st_mtime_ns, info.st_ctime_ns) < trusted_before:
                digest = str(before[4])
                entries[digest] = known[digest]
            else:
                data = fsio.read_bytes_capped(name, MAX_RECORD_BYTES, shown, dir_fd=dir_fd)
                digest = _digest_of(data, shown, broken, known, entries)
                fresh = True
            if digest is not None:
                files[name] = [*mark, digest]
        if digest is None:
            continue
        entry = entries[digest]
        if "broken" in entry:
            broken.append((shown, entry["broken"][0], entry["broken"][1]))
        else:
            records.append(Record(shown, entry["meta"], entry["lines"], [tuple(p) for p in entry["problems"]]))
    if fresh or entries.keys() != known.keys() or files != seen:
        cache.put(repo, "records", {"schema": schema_key, "read_ns": read_ns, "files": files, "entries": entries})
    return records, broken


def _digest_of(data: bytes | int, shown: str, broken: list[tuple[str, int, str]], known: dict[str, Any],
               entries: dict[str, Any]) -> str | None:
    """The content hash of a record file read now (its entry parsed unless known), or None when it is too big."""
    if isinstance(data, int):
        broken.append((shown, 1, f"{data:,} bytes, over the {MAX_RECORD_BYTES:,}-byte cap"))
        return None
    digest = sha256(data).hexdigest()
    entries[digest] = known.get(digest) or _entry(data, shown)
    return digest


def _entry(data: bytes, shown: str) -> dict[str, Any]:
    try:
        record = parse(data, shown)
    except RecordError as exc:
        return {"broken": [exc.line, exc.message]}
    return {"meta": record.meta, "lines": [[*key, line] for key, line in record.lines.items()],
            "problems": [list(p) for p in problems(record)]}


def slug(title: str) -> str:
    return _SLUG.sub("-", title.lower()).strip("-")[:50] or "record"


def new(repo: Repo, config: Config, title: str, now: datetime) -> str:
    title = " ".join(title.split())
    if not title or len(title) > 200 or dataio.unsafe_text(title):
        raise GateError("a record title is 1-200 characters of plain text (no control, NUL or bidi characters)",
                        code=USAGE, reason="usage")
    directory, _ = folder(repo, config)
    prefix = config.section("records")["prefix"]
    for _ in range(10):
        record_id = f"{prefix}-{now:%Y%m%dT%H%M%SZ}-{os.urandom(6).hex()}"
        path = os.path.join(directory, f"{record_id}-{slug(title)}.md")
        body = (f"---\nid: {record_id}\ntitle: {_quote(title)}\nstatus: open\ndate: {now:%Y-%m-%d}\n---\n\n"
                f"# {title}\n\n## Context\n\n## Decision\n\n## Consequences\n")
        if fsio.write_atomic(path, body.encode("utf-8"), exclusive=True, parents=True):
            from gates.domain import journal  # only a new record is journalled; a check never loads it

            journal.append(repo, "record-created", {"id": record_id, "path": repo.relpath(path)}, now)
            return path
    raise GateError(f"could not find a free record id in {directory}", reason="io-error")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

"""Records: one Markdown file per long-lived record (a decision, a thread), with YAML front matter.

The front matter (`schemas/record.schema.json`) carries id, title, status (open, closed,
superseded), date, and `superseded_by` / `supersedes`. Ids are made of a prefix, the UTC time and
48 random bits, and a record file is created with link(), so ids cannot collide across clones,
branches or concurrent writers.
"""

import os
import stat
import time

from gates.infra import fsio, paths, schemas
from gates.infra.config import Config
from gates.infra.digest import sha256
from gates.infra.errors import GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_RECORD_BYTES = 1 << 20
FINAL = ("closed", "superseded")


class Record:
    def __init__(self, shown: str, meta: "dict[str, Any]", lines: "dict[tuple[object, ...], int] | list[list[Any]]",
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
    """A record's front matter as data, with lines; RecordError when it has none or it is not YAML data. (The YAML
    reader is imported here: an unchanged records folder is judged from the cache without it.)"""
    from gates.infra import dataio

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
        from gates.infra import validation

        record.checked = validation.validate(schemas.load("record"), record.meta, record.lines)
    return record.checked


def folder(repo: Repo, config: Config) -> tuple[str, str]:
    relative: str = config.section("records")["path"].rstrip("/")
    return repo.path(relative), relative


def load_all(repo: Repo, config: Config) -> tuple[list[Record], list[tuple[str, int, str]]]:
    """Every record in the work tree, and (path, line, message) for each file that is not one."""
    return scan(repo, config).load()


RACY_NS = 2_000_000_000  # a file changed this close to the cache's read may have changed again unseen


class Scan:
    """The records folder as listed now: each file's content hash, and its records when they are asked for.

    A file whose inode, size, mtime and ctime are those it had when the cache last read it is taken
    to hold the content it had then, unless it changed within RACY_NS of that read (git trusts its
    index's stat data the same way): an unchanged folder costs a listing and a stat of each file,
    not a read and a hash of each. `key` is a hash of every file's name and content (and of the
    record schema and the gate's version): two scans with one key hold the same records, so what
    is computed from the records alone may be kept under it. Parsed records are cached by content
    hash and read only when asked for. Deleting the cache changes no answer.
    """

    def __init__(self, repo: Repo, directory: str, relative: str, names: list[str], digests: list[str | None],
                 unread: dict[int, tuple[int, str]], fresh: "dict[str, Any]", known: "dict[str, Any] | None",
                 schema_key: str) -> None:
        self.repo, self.directory, self.relative = repo, directory, relative
        self.names = names  # the record files listed, in order
        self.digests = digests  # the content hash of each, or None when it was not read (see `unread`)
        self.unread = unread  # by index: (line, message) of a file that was not read
        self.fresh = fresh  # the entries of the files read now, by content hash
        self.known = known  # the cached entries, once read
        self.schema_key = schema_key
        self.consistent = True  # false when a file read for its entry no longer held the content listed
        self._loaded: tuple[list[Record], list[tuple[str, int, str]]] | None = None
        # (An empty folder is quick to judge: nothing is kept for it.)
        self._key = _key_of(schema_key, relative, names, digests, unread) if names else None

    @property
    def key(self) -> str | None:
        """The hash of the folder's content as listed; None once a read has shown it changing under the scan."""
        return self._key if self.consistent else None

    def load(self) -> tuple[list[Record], list[tuple[str, int, str]]]:
        """The records, and (path, line, message) for each file that is not one, read once per scan."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    def _load(self) -> tuple[list[Record], list[tuple[str, int, str]]]:
        from gates.infra import cache

        wanted = {digest for digest in self.digests if digest is not None}
        known = self.known
        if known is None:
            known = _known(self.repo, self.schema_key) if wanted - self.fresh.keys() else {}
        entries = {**{d: known[d] for d in wanted if d in known}, **self.fresh}
        records, broken = [], []
        for index, (name, digest) in enumerate(zip(self.names, self.digests, strict=True)):
            shown = f"{self.relative}/{name}"
            why = self.unread.get(index)
            if digest is not None and digest not in entries:  # its entry is gone from the cache: read it again
                data = fsio.read_bytes_capped(os.path.join(self.directory, name), MAX_RECORD_BYTES, shown)
                if isinstance(data, int) or sha256(data).hexdigest() != digest:
                    self.consistent = False  # changed since the listing: judged as it is now, kept under no key
                    pending: dict[str, tuple[bytes, str]] = {}
                    digest, why = _read_entry(data, shown, pending)
                    entries.update({d: _entry(*item) for d, item in pending.items()})
                else:
                    entries[digest] = _entry(data, shown)
            if digest is None:
                if why is not None:
                    broken.append((shown, *why))
                continue
            entry = entries[digest]
            if "broken" in entry:
                broken.append((shown, entry["broken"][0], entry["broken"][1]))
            else:
                records.append(Record(shown, entry["meta"], entry["lines"], [tuple(p) for p in entry["problems"]]))
        if entries.keys() - known.keys():
            cache.put(self.repo, ENTRIES, {"schema": self.schema_key, "entries": {d: entries[d] for d in wanted
                                                                                  if d in entries}})
        return records, broken


ENTRIES = "records-entries"  # parsed records by content hash; "records" holds the stat data of the last listing


def scan(repo: Repo, config: Config) -> Scan:
    """The records folder as it is now (see Scan); an absent folder holds no records."""
    from gates.infra import cache

    directory, relative = folder(repo, config)
    schema_key = cache.key(schemas.identity("record"))[:16]
    try:
        dir_fd = fsio.open_dir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return Scan(repo, directory, relative, [], [], {}, {}, {}, schema_key)
    except OSError as exc:
        raise GateError(f"cannot open the records folder: {exc.strerror}", reason="input-unreadable",
                        path=relative) from None
    try:
        return _scan_folder(repo, directory, relative, dir_fd, schema_key, cache)
    finally:
        os.close(dir_fd)


def _scan_folder(repo: Repo, directory: str, relative: str, dir_fd: int, schema_key: str, cache: "Any") -> Scan:
    old = cache.get(repo, "records")
    # The listing is kept for one folder, by one schema: any other listing (or one of another shape) is none.
    if not isinstance(old, dict) or old.get("schema") != schema_key or old.get("folder") != directory \
            or type(old.get("read_ns")) is not int or not isinstance(old.get("files"), dict):
        old = {}
    seen: dict[str, Any] = old.get("files", {})
    trusted_before = old["read_ns"] - RACY_NS if old else 0
    read_ns = time.time_ns()
    files: dict[str, list[int | str]] = {}
    listed: list[str] = []
    digests: list[str | None] = []
    unread: dict[int, tuple[int, str]] = {}
    pending: dict[str, tuple[bytes, str]] = {}  # the files read now, by content hash
    names = sorted([name for name in os.listdir(dir_fd) if name.endswith(".md")])  # (names only: no entry objects)
    lstat, regular = os.stat, stat.S_ISREG
    for name in names:
        try:
            info = lstat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed since the listing
        before = seen.get(name)
        # Most files of a large folder are unchanged: their stat data are those kept, and older than the read.
        if before is not None and regular(info.st_mode) and type(before) is list and len(before) == 6 \
                and before[0] == info.st_ino and before[1] == info.st_size and before[2] == info.st_mtime_ns \
                and before[3] == info.st_ctime_ns and before[4] == info.st_dev and type(before[5]) is str \
                and info.st_mtime_ns < trusted_before and info.st_ctime_ns < trusted_before:
            files[name] = before
            listed.append(name)
            digests.append(before[5])
            continue
        shown = f"{relative}/{name}"
        if stat.S_ISLNK(info.st_mode):
            real, why = paths.resolve(repo, os.path.join(directory, name))
            if why:  # never read, never quoted
                unread[len(listed)] = (1, f"a symlink that {why}: not read")
                digest, broken = None, None
            else:
                digest, broken = _read_entry(fsio.read_bytes_capped(real, MAX_RECORD_BYTES, shown), shown, pending)
        else:
            data = fsio.read_bytes_capped(name, MAX_RECORD_BYTES, shown, dir_fd=dir_fd)
            digest, broken = _read_entry(data, shown, pending)
            if digest is not None:
                files[name] = [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_dev, digest]
        if digest is None and broken is not None:
            unread[len(listed)] = broken
        listed.append(name)
        digests.append(digest)
    # A file read now: the next check may trust it, once it is older than RACY_NS. Its entry is parsed unless
    # the cache has its content's already.
    known = _known(repo, schema_key) if pending else None
    fresh = {digest: (known or {}).get(digest) or _entry(data, shown) for digest, (data, shown) in pending.items()}
    if pending or files != seen or len(old) != 4:  # (an earlier version's listing held more)
        cache.put(repo, "records", {"schema": schema_key, "folder": directory, "read_ns": read_ns, "files": files})
    return Scan(repo, directory, relative, listed, digests, unread, fresh, known, schema_key)


def _key_of(schema_key: str, relative: str, names: list[str], digests: list[str | None],
            unread: dict[int, tuple[int, str]]) -> str:
    """A hash of a listing: the name and content hash of every file, and why any was not read."""
    from gates.infra import cache

    return cache.key(schema_key.encode(), relative.encode("utf-8", "surrogateescape"),
                     "\0".join(names).encode("utf-8", "surrogateescape"),
                     "\0".join(digest or "" for digest in digests).encode(),
                     repr(sorted(unread.items())).encode("utf-8", "surrogateescape"))


def _known(repo: Repo, schema_key: str) -> "dict[str, Any]":
    """The cached entries of parsed records, by content hash (none when they were made for another schema)."""
    from gates.infra import cache

    kept = cache.get(repo, ENTRIES)
    entries = kept.get("entries") if isinstance(kept, dict) and kept.get("schema") == schema_key else None
    if not isinstance(entries, dict):
        return {}
    return {digest: entry for digest, entry in entries.items() if _entry_shape(entry)}  # any other: read again


def _entry_shape(entry: object) -> bool:
    """Whether a cached entry is one `_entry` writes: {"broken": [line, message]}, or the front matter as a
    mapping, each key path's line (`[*path, line]`), and the schema problems as [line, message] pairs."""
    if not isinstance(entry, dict):
        return False
    if "broken" in entry:
        broken = entry["broken"]
        return len(entry) == 1 and isinstance(broken, list) and len(broken) == 2 and type(broken[0]) is int \
            and isinstance(broken[1], str)
    lines, problems = entry.get("lines"), entry.get("problems")
    return len(entry) == 3 and isinstance(entry.get("meta"), dict) and isinstance(lines, list) \
        and all(isinstance(item, list) and item and type(item[-1]) is int for item in lines) \
        and isinstance(problems, list) and all(isinstance(p, list) and len(p) == 2 and type(p[0]) is int
                                               and isinstance(p[1], str) for p in problems)


def _read_entry(data: bytes | int, shown: str,
                pending: dict[str, tuple[bytes, str]]) -> tuple[str | None, tuple[int, str] | None]:
    """The content hash of a record file read now (kept in `pending` to be parsed), or None and why it was not
    read: it is over the cap."""
    if isinstance(data, int):
        return None, (1, f"{data:,} bytes, over the {MAX_RECORD_BYTES:,}-byte cap")
    digest = sha256(data).hexdigest()
    pending.setdefault(digest, (data, shown))
    return digest, None


def _entry(data: bytes, shown: str) -> "dict[str, Any]":
    try:
        record = parse(data, shown)
    except RecordError as exc:
        return {"broken": [exc.line, exc.message]}
    return {"meta": record.meta, "lines": [[*key, line] for key, line in record.lines.items()],
            "problems": [list(p) for p in problems(record)]}

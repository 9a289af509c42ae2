"""A rebuildable cache under `<git-common-dir>/gate/cache/`: it only accelerates, it is never the truth.

Entries are keyed by a hash of everything their answer depends on (content, schema, version),
so a stale entry is never found; deleting the folder changes no answer. A cache that cannot be
read or written is passed over: the answer is then computed as if it had never existed.

Entries named after a content hash (one per `.gate.yaml` ever seen, one per folder and argument
list of `gate check`) would pile up, so each write removes the ones untouched for PRUNE_AFTER:
a cache entry is not evidence, and a removed one is rebuilt the next time it is needed.

Every entry is authenticated: its first line is an HMAC-SHA256 tag of the entry's name, its content and this clone
(the common dir's path, device and inode), under a key that lives outside the repository, in the user's state dir
(`$XDG_STATE_HOME/handoff-gate/cache.key`, else `~/.local/state/handoff-gate/cache.key`: 32 random bytes, 0600,
created with link() on first use). An entry whose tag does not verify (forged, written by an older version, by
another user, or carried in a copied `.git`) is passed over and the answer computed again. No key (no usable HOME,
a key file that is not the user's own 0600 file, or one inside the repository): no cache at all, never a cache
that is trusted unauthenticated.
"""

import os
import stat
import time

from gates import __version__
from gates.infra import fsio, jsonio, state
from gates.infra.digest import Hmac, same_tag, sha256
from gates.infra.errors import GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_ENTRY_BYTES = 64 << 20
PRUNE_AFTER = 30 * 86400.0
PRUNED = ("config-", "quick-")  # quick-: verdict records of older versions, no longer written


KEY_FILE = "cache.key"
_KEY_TEXT = 65  # 64 hex digits and a newline
_TAG = 64  # an entry's first line: the hex HMAC-SHA256 tag


def key(*parts: bytes) -> str:
    """A hash of `parts` (and of this version): what names an entry, or what a kept answer depends on."""
    digest = sha256(__version__.encode())
    _feed(digest, parts)
    return digest.hexdigest()


def _feed(digest: "Any", parts: tuple[bytes, ...]) -> None:
    for part in parts:  # each one length-prefixed: no two lists of parts feed the same bytes
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)


def get(repo: Repo, name: str) -> "Any":
    """The value kept under `name`, or None: none kept, unreadable, or not authenticated by this user's key for
    this clone (a forged or copied entry is never trusted)."""
    secret = _secret(repo)
    if secret is None:
        return None
    path = os.path.join(state.layout(repo).cache, f"{name}.json")
    try:
        data = fsio.read_state_file(path, MAX_ENTRY_BYTES)
        if data is None or data[_TAG:_TAG + 1] != b"\n":
            return None
        body = data[_TAG + 1:]
        if not same_tag(data[:_TAG], _tag(secret, repo, f"{name}.json", body)):
            return None
        return jsonio.loads(body.decode("utf-8"))
    except (GateError, ValueError, OSError):  # UnicodeDecodeError and json's errors are ValueErrors
        return None


def _tag(secret: bytes, repo: Repo, filename: str, body: bytes) -> bytes:
    mac = Hmac(secret)
    _feed(mac, (b"handoff-gate cache entry", _clone(repo), filename.encode("utf-8", "surrogateescape"), body))
    return mac.hexdigest().encode()


def _clone(repo: Repo) -> bytes:
    """This clone, as a tag binds an entry to it: the common dir's path, device and inode (a copied `.git`, even put
    back at the same path, is another inode)."""
    if "cache-clone" not in repo.memo:
        info = os.stat(repo.common_dir)
        repo.memo["cache-clone"] = f"{repo.common_dir}\0{info.st_dev}\0{info.st_ino}".encode("utf-8", "surrogateescape")
    found: bytes = repo.memo["cache-clone"]
    return found


_SECRETS: dict[str, bytes | None] = {}  # by the key file's folder: read (or made) once a process


_KEY_DIRS: dict[tuple[str, str], str | None] = {}  # by ($XDG_STATE_HOME, $HOME): resolved once a process


def key_dir() -> str | None:
    """The folder of the user's cache key: `$XDG_STATE_HOME/handoff-gate`, else `$HOME/.local/state/handoff-gate`
    (None without an absolute HOME). The user's own environment, like PATH: its symlinks are followed."""
    asked = (os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME", ""))
    if asked not in _KEY_DIRS:
        base, home = asked
        if not os.path.isabs(base):
            base = os.path.join(home, ".local", "state") if os.path.isabs(home) else ""
        _KEY_DIRS[asked] = os.path.realpath(os.path.join(base, "handoff-gate")) if base else None
    return _KEY_DIRS[asked]


def _secret(repo: Repo) -> bytes | None:
    """The user's cache key, or None: then nothing is read from the cache or written to it."""
    folder = key_dir()
    if folder is None:
        return None
    for inside in (repo.toplevel, repo.git_dir, repo.common_dir):  # a key the repository (or a copy) carries is none
        if folder == inside or folder.startswith(inside.rstrip(os.sep) + os.sep):
            return None
    if folder not in _SECRETS:
        _SECRETS[folder] = _load_key(folder)
    return _SECRETS[folder]


def _load_key(folder: str) -> bytes | None:
    path = os.path.join(folder, KEY_FILE)
    try:
        return _read_key(folder, path)
    except FileNotFoundError:
        pass
    except (GateError, OSError, ValueError):
        return None  # not the user's own key file: no cache (it is never replaced: it may be evidence)
    try:
        fd = fsio.open_dir(folder, create=True, mode=0o700)
        os.close(fd)
        fsio.write_atomic(path, os.urandom(32).hex().encode() + b"\n", exclusive=True, mode=0o600)
        return _read_key(folder, path)  # ours, or the one another process linked there first
    except (GateError, OSError, ValueError):
        return None  # an unwritable HOME: no cache


def _read_key(folder: str, path: str) -> bytes:
    """The key in `path`: a regular file with one name, the user's own, readable by nobody else, in a folder
    nobody else can write. FileNotFoundError when there is none; ValueError when the file is not such a key."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise ValueError(folder)
    data = fsio.read_state_file(path, _KEY_TEXT)  # a symlink, FIFO or hard link there: refused (GateError)
    if data is None:
        raise FileNotFoundError(path)
    info = os.stat(path, follow_symlinks=False)
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or len(data) != _KEY_TEXT or data[-1:] != b"\n":
        raise ValueError(path)
    return bytes.fromhex(data[:-1].decode("ascii"))  # (not hex: a ValueError, UnicodeDecodeError included)


def memo(repo: Repo, name: str, key: "Callable[[], str | None]", compute: "Callable[[], Any]",
         valid: "Callable[[Any], bool]") -> "Any":
    """What `compute()` returns, kept under `name` with `key()`, a hash of everything it depends on: asked again
    with the same key, the value kept is given back (when `valid` accepts it) instead of computing it again.
    Only the last key is kept. A None key, or one that changed while computing (its input was seen to change),
    is never kept. Deleting the entry changes no answer."""
    asked = key()
    if asked is not None:
        kept = get(repo, name)
        if isinstance(kept, dict) and kept.get("key") == asked and valid(kept.get("value")):
            return kept["value"]
    value = compute()
    if asked is not None and key() == asked:
        put(repo, name, {"key": asked, "value": value})
    return value


def put(repo: Repo, name: str, value: "Any") -> None:
    try:
        data = jsonio.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return
    put_raw(repo, f"{name}.json", data)


def put_raw(repo: Repo, filename: str, data: bytes) -> None:
    """Keep `data` as the entry `filename`, under its tag (without the user's key, nothing is kept)."""
    secret = _secret(repo)
    if secret is None:
        return
    lay = state.layout(repo)
    try:
        folder = state.ensure_dir(lay, lay.cache)
        state.write(repo, os.path.join(folder, filename), _tag(secret, repo, filename, data) + b"\n" + data)
        _prune(folder, keep=filename)
    except (GateError, OSError):
        pass  # an unwritable cache only costs speed; problems with the state dir surface through flags


def _prune(folder: str, keep: str) -> None:
    cutoff = time.time() - PRUNE_AFTER
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name != keep and entry.name.startswith(PRUNED) and entry.is_file(follow_symlinks=False) \
                    and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)

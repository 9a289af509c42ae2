"""A rebuildable cache under `<git-common-dir>/gate/cache/`: it only accelerates, it is never the truth.

Entries are keyed by a hash of everything their answer depends on (content, schema, version),
so a stale entry is never found; deleting the folder changes no answer. A cache that cannot be
read or written is passed over: the answer is then computed as if it had never existed.

Entries named after a content hash (one per `.gate.yaml` ever seen, one per folder and argument
list of `gate check`) would pile up, so each write removes the ones untouched for PRUNE_AFTER:
a cache entry is not evidence, and a removed one is rebuilt the next time it is needed.
"""

from __future__ import annotations

import os
import time

from gates import __version__
from gates.infra import fsio, jsonio, state
from gates.infra.digest import sha256
from gates.infra.errors import GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_ENTRY_BYTES = 64 << 20
PRUNE_AFTER = 30 * 86400.0
PRUNED = ("config-", "quick-")  # quick-: verdict records of older versions, no longer written


def key(*parts: bytes) -> str:
    digest = sha256(__version__.encode())
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def get(repo: Repo, name: str) -> Any:
    path = os.path.join(state.layout(repo).cache, f"{name}.json")
    try:
        data = fsio.read_state_file(path, MAX_ENTRY_BYTES)
        return None if data is None else jsonio.loads(data.decode("utf-8"))
    except (GateError, ValueError, OSError):  # UnicodeDecodeError and json's errors are ValueErrors
        return None


def memo(repo: Repo, name: str, key: Callable[[], str | None], compute: Callable[[], Any],
         valid: Callable[[Any], bool]) -> Any:
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


def put(repo: Repo, name: str, value: Any) -> None:
    try:
        data = jsonio.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return
    put_raw(repo, f"{name}.json", data)


def put_raw(repo: Repo, filename: str, data: bytes) -> None:
    lay = state.layout(repo)
    try:
        folder = state.ensure_dir(lay, lay.cache)
        state.write(repo, os.path.join(folder, filename), data)
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

"""A rebuildable cache under `<git-common-dir>/gate/cache/`: it only accelerates, it is never the truth.

Entries are keyed by a hash of everything their answer depends on (content, schema, version),
so a stale entry is never found; deleting the folder changes no answer. A cache that cannot be
read or written is passed over: the answer is then computed as if it had never existed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gates import __version__, fsio, state
from gates.errors import GateError
from gates.git import Repo

MAX_ENTRY_BYTES = 64 << 20


def key(*parts: bytes) -> str:
    digest = hashlib.sha256(__version__.encode())
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def get(repo: Repo, name: str) -> Any:
    path = state.layout(repo).cache / f"{name}.json"
    try:
        data = fsio.read_state_file(path, MAX_ENTRY_BYTES)
        return None if data is None else json.loads(data)
    except (GateError, ValueError, OSError):
        return None


def put(repo: Repo, name: str, value: Any) -> None:
    lay = state.layout(repo)
    try:
        folder = state.ensure_dir(lay, lay.cache)
        state.write(repo, folder / f"{name}.json", json.dumps(value, separators=(",", ":")).encode())
    except (GateError, OSError, TypeError, ValueError):
        pass  # an unwritable cache only costs speed; problems with the state dir surface through flags

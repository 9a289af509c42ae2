"""The JSON Schemas shipped inside the package: where they are, their bytes, their identity in a cache key.

Applying a schema is gates/infra/validation.py: a check whose inputs are cached (an unchanged
`.gate.yaml`, an unchanged records folder) never imports it.
"""

import os

from gates.infra import jsonio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAMES = ("config", "handoff", "flag", "check-result", "record", "remote-claim")


def schema_dir() -> str:
    """gates/schemas/, beside the package's modules (in a checkout, the link to the top-level schemas/)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas")


def schema_path(name: str) -> str:
    """The file of a shipped schema: one of NAMES, or `harness/NAME` (a harness document's, schemas/harness/)."""
    folder, _, base = name.rpartition("/")
    if not (name in NAMES or folder == "harness" and base.replace("-", "").isalnum() and base.isascii()):
        raise KeyError(name)
    return os.path.join(schema_dir(), f"{name}.schema.json")


_READ: dict[str, bytes] = {}
_LOADED: "dict[str, dict[str, Any]]" = {}


def schema_bytes(name: str) -> bytes:
    """The shipped schema's bytes (read once a run): a part of every cache key that depends on it."""
    if name not in _READ:
        with open(schema_path(name), "rb") as handle:
            _READ[name] = handle.read()
    return _READ[name]


def identity(name: str) -> bytes:
    """The shipped schema as a part of a cache key: its file's device, inode, size and times, as git tells an
    unchanged file by its stat data. Any write or reinstall changes them; hashing the bytes instead (7 KB for the
    config's) cost more than the rest of a cached config load."""
    info = os.stat(schema_path(name))
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}".encode()


def load(name: str) -> "dict[str, Any]":
    if name not in _LOADED:
        _LOADED[name] = jsonio.loads(schema_bytes(name).decode("utf-8"))
    return _LOADED[name]

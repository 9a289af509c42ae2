"""SHA-256, the one digest of the product (flag ids, markers, cache keys, record and journal hashes).

hashlib loads OpenSSL (about 8 ms, half the cost of starting Python) on every `gate check`;
the interpreter's own SHA-256 module gives the same digest for a tenth of that. Python 3.12
renamed it `_sha2`; hashlib is the fallback where neither is built.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import _Hash as Hash

try:
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment,no-redef,unused-ignore]


def sha256(data: bytes = b"") -> Hash:
    """A SHA-256 hash object, fed `data` (update() feeds it more)."""
    found: Hash = _sha256(data)
    return found

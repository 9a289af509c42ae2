"""SHA-256, the one digest of the product (flag ids, markers, cache keys, record and journal hashes), and HMAC-SHA256
on it (the tag that authenticates a cache entry).

hashlib loads OpenSSL (about 8 ms, half the cost of starting Python) on every `gate check`;
the interpreter's own SHA-256 module gives the same digest for a tenth of that. Python 3.12
renamed it `_sha2`; hashlib is the fallback where neither is built.
"""

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


def sha256(data: bytes = b"") -> "Hash":
    """A SHA-256 hash object, fed `data` (update() feeds it more)."""
    found: Hash = _sha256(data)
    return found


_INNER = int.from_bytes(b"\x36" * 64, "big")  # HMAC's pads (RFC 2104), one SHA-256 block each, as numbers to XOR
_OUTER = int.from_bytes(b"\x5c" * 64, "big")


class Hmac:
    """HMAC-SHA256 (RFC 2104) built on the SHA-256 above: the `hmac` module would load hashlib and OpenSSL.
    Fed with update(), like a hash; hexdigest() gives the tag."""

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # SHA-256's block
            key = sha256(key).digest()
        number = int.from_bytes(key.ljust(64, b"\0"), "big")
        self._inner = sha256((number ^ _INNER).to_bytes(64, "big"))
        self._outer = (number ^ _OUTER).to_bytes(64, "big")

    def update(self, data: bytes) -> None:
        self._inner.update(data)

    def hexdigest(self) -> str:
        return sha256(self._outer + self._inner.digest()).hexdigest()


def same_tag(a: bytes, b: bytes) -> bool:
    """Whether two tags are equal, in time that does not depend on where they differ."""
    from _operator import _compare_digest  # what hmac.compare_digest is, without hashlib

    return _compare_digest(a, b)

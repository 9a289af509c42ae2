"""The work-package mailbox: its file is either exactly its sentinel line or a work package with its sections.

A work package carries an execution plan from one session to the next; `gate mailbox take`
prints it and clears the file to the sentinel line. The mailbox never loses a package: before
anything is delivered, a copy is written (atomically, fsynced) to
`<git-common-dir>/gate/mailbox/<utc>-<random>.md` and kept; the package is then written to the
output and flushed; only then is the file cleared, and only if it still holds what was delivered.
A closed pipe, a full disk or a SIGKILL at any moment leaves the package in the file, in the
output, or in the kept copy. A missing file is an empty mailbox.
"""

import os

from gates.domain import handoff
from gates.infra import clock, fsio, state
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.digest import sha256
from gates.infra.errors import GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from gates.domain import journal

ID = "mailbox"
MAX_BYTES = 1 << 20


def read(repo: Repo, config: Config) -> tuple[str, bytes | None]:
    relative = config.section("mailbox")["path"]
    path = repo.path(relative)
    if not os.path.lexists(path):
        return relative, None
    data = fsio.read_bytes_capped(path, MAX_BYTES, relative)
    if isinstance(data, int):
        raise GateError(f"{data:,} bytes, over the {MAX_BYTES:,}-byte cap", reason="input-unreadable", path=relative)
    return relative, data


def is_empty(data: bytes | None, sentinel: str, shown: str) -> bool:
    return data is None or handoff.Source.decode(data, shown).lines == [sentinel]


class Taken(NamedTuple):
    shown: str
    copy: str  # the kept copy: never removed by the gate
    cleared: bool  # False: the file changed while the package was delivered, and was left as it is
    journal_error: "journal.NotJournalled | None"


def take(repo: Repo, config: Config, now: datetime, deliver: "Callable[[str], None]") -> Taken | None:
    """Keep a copy, `deliver` the package (it must raise when the output fails), then clear the file.

    None when the mailbox is empty. Takers are serialised by a lock of their own, so one package is
    delivered once; the journal's lock is not held while the output is written."""
    cfg = config.section("mailbox")
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, os.path.join(lay.root, "mailbox"))
    with fsio.locked(folder):
        shown, data = read(repo, config)
        if is_empty(data, cfg["sentinel"], shown):
            return None
        assert data is not None
        text = fsio.decode_text(data, shown)
        copy = _keep(repo, folder, data, now)
        try:
            deliver(text)
        except (GateError, OSError) as exc:
            detail = exc.render() if isinstance(exc, GateError) else exc.strerror or str(exc)
            raise GateError(f"the work package was not delivered ({detail}): it is still in {shown}, and a copy is "
                            f"kept in {copy}", reason="io-error") from None
        cleared = True
        try:  # a compare-and-swap: a new package written meanwhile is left for the next take
            fsio.rewrite(repo.path(cfg["path"]), data, (cfg["sentinel"] + "\n").encode("utf-8"), shown=shown,
                         who="gate mailbox take")
        except fsio.Changed:
            cleared = False
        except GateError as exc:
            raise GateError(f"the work package was delivered (a copy is kept in {copy}), but {shown} could not "
                            f"be cleared: {exc.message}", reason=exc.reason) from None
    from gates.domain import journal

    try:
        journal.append(repo, "mailbox-taken", {"path": shown, "bytes": len(data), "sha256": sha256(data).hexdigest(),
                                               "copy": copy, "cleared": cleared}, now)
    except journal.NotJournalled as exc:
        return Taken(shown, copy, cleared, exc)
    return Taken(shown, copy, cleared, None)


def _keep(repo: Repo, folder: str, data: bytes, now: datetime) -> str:
    """A durable copy of the package under a fresh name: it is on disk before anything else happens."""
    for _ in range(100):
        copy = os.path.join(folder, f"{clock.name_text(now)}-{os.urandom(6).hex()}.md")
        try:
            if state.write(repo, copy, data, exclusive=True):
                return copy
        except GateError as exc:
            raise GateError(f"not taken: a copy of the work package could not be kept, so nothing was delivered "
                            f"or cleared: {exc.message}", reason=exc.reason) from None
    raise GateError(f"not taken: no free name for a copy in {folder}", reason="io-error")

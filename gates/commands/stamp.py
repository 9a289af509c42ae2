"""`gate stamp`: the close-out's stamp of Meta ref and updated."""

from __future__ import annotations

from gates.commands import invocation
from gates.commands.invocation import Run
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    pass


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--expect", metavar="SHA256", help="refuse unless the file still has this content hash")


def run(args: argparse.Namespace, run: Run) -> int:
    return _stamp(args, run)


def _stamp(args: argparse.Namespace, run: Run) -> int:
    from gates.domain import stamp

    stamp.check_expect(args.expect)  # before the repository is even looked at
    shown, digest, not_journalled, notes = stamp.stamp(run.repo(), run.config(), invocation.now(), args.expect)
    said = f"stamped {shown}: ref {run.repo().head}, sha256 {digest}"
    run.done.append(said)
    print(said)  # the new hash, whatever failed after the write: a caller is never told the file is unchanged
    for note in notes:
        print(f"  {note}")
    if not_journalled is not None:
        raise not_journalled
    return OK

"""`gate doctor`: check the wiring and the environment, and say what to fix."""

from __future__ import annotations

from gates.commands.invocation import Invocation
from gates.infra.errors import OK, VIOLATION

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    pass


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--fix", action="store_true", help="first move temp files of killed writers into lost+found "
                        "(with a manifest; nothing is deleted)")
    parser.add_argument("--remote", nargs="?", const="", metavar="NAME", help="also probe this git remote for claims "
                        "(default: claims.remote): reachable, accepts refs/gate/ pushes, round-trip time")


def run(args: argparse.Namespace, run: Invocation) -> int:
    return _doctor(args, run)


def _doctor(args: argparse.Namespace, run: Invocation) -> int:
    from gates.domain import doctor

    if args.fix:
        for line in doctor.fix(run.repo()):
            print(line)
    checks = doctor.run(run.repo())
    if args.remote is not None:  # issue 18: probe the claims remote
        from gates.commands import _remote
        from gates.domain import remote_doctor

        name = _remote.required_name(args, run)
        checks += remote_doctor.probe(run.repo(), run.config(), name)
    for check in checks:
        print(f"{check.status:4}  {check.message}")
    needed = [c.message for c in checks if c.status == doctor.FIX]
    if needed:
        run.fail("doctor", "gate doctor: needs fixing:\n" + "\n".join(needed))
        return VIOLATION
    return OK

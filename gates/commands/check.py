"""`gate check`: run the enabled gates on the hand-over file, render the result, flag the failures."""

import os
import sys

from gates.commands import CONFIGURATION, HIDDEN, Invocation, flagged, ids, passing
from gates.infra import clock
from gates.infra.errors import OK, USAGE, VIOLATION, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from gates.infra.findings import CheckResult
    from gates.infra.git import Repo


FORMATS = ("text", "json", "github", "sarif", "junit")  # the renderers of gates/infra/report.py, held equal by its test
SETTLED = ("config-invalid", "input-unreadable")  # the event flags a check can find the cause of gone


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    from gates.checks import GATES

    parser.epilog = "gate ids (for --only and --skip): " + ", ".join(GATES)
    parser.add_argument("--only", type=ids, default=[], metavar="ID[,ID]", help="run only these gates")
    parser.add_argument("--skip", type=ids, default=[], metavar="ID[,ID]", help="do not run these gates")
    parser.add_argument("--format", choices=FORMATS,
                       default="github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text",
                       help="default: github when GITHUB_ACTIONS=true, else text")
    parser.add_argument("--fix", action="store_true", help="let every chosen gate that can mend what it finds mend "
                       "it first (docs/gates.md), then exit 1 if anything changed (stage the files again)")
    parser.add_argument("--range", metavar="BASE..HEAD", help="judge every commit of this range (for CI on a pull request)")
    parser.add_argument("--remote", action="store_true", help="push time: also judge the push against the remote "
                       "claim (handoff-claim-remote; needs claims.remote)")
    parser.add_argument("--pre-push", action="store_true", help=HIDDEN)  # git's pre-push lines on stdin
    parser.add_argument("files", nargs="*", metavar="FILE", help="hand-over files to check instead of the configured one")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    try:
        waiting, gate_ids = _configured(run, args)
        result, fixed = _run_gates(run, args, gate_ids)
        result.fixed = [line for _, line in fixed]
    except GateError as exc:
        if exc.code != USAGE:
            sys.stdout.write(_render(args.format, None, exc.code, exc))
        raise
    code = VIOLATION if result.errors or fixed else OK
    if fixed and args.format in ("text", "github"):
        print("\n".join(line for _, line in fixed))
    sys.stdout.write(_render(args.format, result, code, None))
    watched = bool(fixed or result.errors) and _watched()  # only a run with something to flag asks
    for gate_id, line in fixed:  # resolved when that gate next passes: the fix was staged
        if not watched:
            run.fail("autofix-applied", line, gate=gate_id)
    from gates.checks import flag_reason

    for gate_id in result.gates:
        lines = [f.render() for f in result.errors if f.gate == gate_id]
        if lines and not watched:
            run.fail(flag_reason(gate_id), "\n".join(lines), gate=gate_id)
    passed = passing(result, {fixer for fixer, _ in fixed})
    for gate_id in passed:
        run.passes(gate_id)  # write_flags resolves its open flags in this worktree and scope
    from gates.infra.findings import ENVIRONMENT

    lines = [f.render() for f in result.errors if f.gate == ENVIRONMENT]
    if lines and not watched:
        run.fail("io-error", "\n".join(lines))  # a killed writer's temp file staged for the commit
    for reason, message in result.events:
        run.notice(reason, message)
    if waiting and result.files and not args.files and not args.range:  # the configured hand-over, as it is now
        _read_again(run, waiting, "handoff-structure" in passed)
    return code


def _watched() -> bool:
    """Whether a person runs this check at a terminal (stdin and stdout are one, and no CI says otherwise: `CI` set
    to anything but empty, 0 or false): they read its findings now, so they leave no flag. A hook (git gives it no
    terminal on stdin; the pre-commit framework reads its output), CI and an agent's tool call (its harness's
    variable is set, even in a terminal of its own: gates/domain/loopwatch.py) leave flags, for the next session
    to hear of. A passing watched check still resolves flags: what it judged holds."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false") or not (os.isatty(0) and os.isatty(1)):
        return False
    from gates.domain.loopwatch import HARNESSES  # an agent's shell may give it a terminal: the model is no person

    return not any(os.environ.get(harness[0]) for harness in HARNESSES)


def _at_push(args: "argparse.Namespace", gate_ids: list[str]) -> bool:
    """Whether this check judges a push (issue 18): asked for, or the pre-commit framework's pre-push stage
    (PRE_COMMIT_TO_REF) with the remote claim's gate among those chosen."""
    return bool(args.remote or args.pre_push or "handoff-claim-remote" in args.only
                or "handoff-claim-remote" in gate_ids and os.environ.get("PRE_COMMIT_TO_REF"))


def _configured(run: Invocation, args: "argparse.Namespace") -> "tuple[set[str], list[str]]":
    """Load the configuration and choose the gates; for a check that may judge the commit being made (no files, no
    range, no push), refuse a configuration the commit records otherwise (checks.runner.verify_config); then list
    the flags folder (a check's one listdir of it): which of SETTLED have flags open, so that a check with none never
    loads the flags module. This check could use the configuration: the `config-invalid` flags of earlier runs that
    could not (their `about` is CONFIGURATION: Invocation.config) end now. Returns those and the chosen gates."""
    from gates.checks import runner

    config = run.config()
    gate_ids = runner.select(config, args.only, args.skip)
    if not (args.files or args.range or _at_push(args, gate_ids)):
        try:
            runner.verify_config(run.repo(), config)
        except GateError as exc:
            if exc.reason == "config-invalid":
                exc.about = CONFIGURATION
            raise
    waiting = flagged(run.repo(), SETTLED)
    if "config-invalid" in waiting:
        run.settle("config-invalid", about=[CONFIGURATION])
    return waiting, gate_ids


def _schema(path: str) -> dict[str, str | None]:
    """What a check's `config-invalid` flag is about when it could not use the project schema at `path`
    (handoff.schema): a later check whose handoff-structure passes with it ends the flag."""
    return {"input": "handoff.schema", "path": path}


def _read_again(run: Invocation, waiting: set[str], structure_passed: bool) -> None:
    """A check that read the configured hand-over ends the `input-unreadable` flags an earlier check raised for it
    (missing before `gate init`, unreadable), and, when handoff-structure passed with the project schema, the
    `config-invalid` flags of earlier checks that could not use that schema: their cause is gone. `waiting`: what
    _configured found open."""
    if "input-unreadable" in waiting:
        run.settle("input-unreadable", raised_by="gate check")
    schema = run.config().section("handoff")["schema"]
    if "config-invalid" in waiting and schema and structure_passed:
        run.settle("config-invalid", about=[_schema(schema)])


def _run_gates(run: Invocation, args: "argparse.Namespace",
               gate_ids: list[str]) -> "tuple[CheckResult, list[tuple[str, str]]]":
    """Run the chosen gates on the state as it is now: every check judges afresh, nothing is replayed."""
    from gates.checks import runner as check
    from gates.domain import changes

    repo, config = run.repo(), run.config()
    files = [os.path.abspath(f) for f in args.files]
    for given, path in zip(args.files, files, strict=True):  # a slip of the hand: said now, nothing to flag
        if not os.path.lexists(path):
            raise GateError(f"{given}: no such file — name an existing hand-over file, or none to check the "
                            "configured one", code=USAGE, reason="usage")
    fixed = check.fix(repo, config, gate_ids, clock.now()) if args.fix else []  # what pre-commit fixers do
    push = None
    if _at_push(args, gate_ids):
        from gates.domain import push as pushed

        push = pushed.updates(repo, sys.stdin if args.pre_push else None, os.environ)
        if "handoff-claim-remote" not in gate_ids and "handoff-claim-remote" not in args.skip:
            gate_ids.append("handoff-claim-remote")
    try:
        result = check.run(repo, config, gate_ids, files, range_spec=args.range, push=push, fixed=bool(fixed))
    except GateError as exc:  # the project schema could not be used: its flag says which, for the check that can
        schema = config.section("handoff")["schema"]
        if exc.reason == "config-invalid" and schema and exc.path == schema:
            exc.about = _schema(schema)
        raise
    scope = changes.scope_of(repo, files, args.range, repo.path(config.section("handoff")["path"]), result.situation)
    run.judged(scope)
    if args.format in ("text", "github") and not fixed:
        for line in _unsettled(repo, result, scope):
            print(line)
    return result, fixed


# A passing check of one situation leaves a flag of the other open: that other, and what settles it
OTHER = {"commit": ("work tree", "run `gate check` with nothing staged"),
         "work tree": ("commit", "stage the fix and run `gate check`, or commit")}


def _unsettled(repo: "Repo", result: "CheckResult", scope: "dict[str, Any]") -> list[str]:
    """A note for each gate that passed here with a flag still open from a check of the other situation (the
    hook's check of the commit, a check of the work tree): a pass of one says nothing of the other. One listdir
    when no flag is open at all."""
    if result.situation not in OTHER:
        return []
    from gates.infra import state

    try:
        if not os.listdir(state.layout(repo).flags_open):
            return []
    except OSError:
        return []
    from gates.domain.changes import SITUATIONS, open_markers
    from gates.infra.catalog import CATALOG

    other, how = OTHER[result.situation]
    there = SITUATIONS[other] + (" (a hook's)" if other == "commit" else "")
    failed = {finding.gate for finding in result.errors}
    passed = [gate for gate in result.gates if gate not in failed and gate not in result.unjudged
              and CATALOG[gate].situated]  # a gate keyed without a situation settles its flags here and now
    return [f"gate check: note: {gate} has a flag open from a check of {there}; this check of "
            f"{SITUATIONS[result.situation]} does not settle it — {how}"
            for gate in open_markers(repo, passed, {**scope, "situation": other})]


def _render(fmt: str, result: "Any", code: int, error: GateError | None) -> str:
    if fmt == "text":  # every commit's format: the module of the others is not loaded for it
        from gates.infra.findings import text

        return text(result)
    from gates.infra.report import RENDERERS

    def describe(gate_id: str) -> str:  # SARIF's rule descriptions: the gate's docstring
        from gates.checks import GATES

        return GATES[gate_id].__doc__ or ""

    return str(RENDERERS[fmt](result, code, error, describe))

"""What the harness hooks' commands (`gate brief`, `gate closeout`) share: the hook's input, read inside the one
error boundary, and the gates judged as `gate check` judges them. Off the check path: a commit never loads it."""

from gates.commands import Invocation, guarded, passing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gates.domain.harness import HookInput
    from gates.infra.findings import CheckResult


def hook_input() -> "HookInput":
    """A harness's hook input, read inside the boundary: whatever the reader raises, the hook is judged without its
    input (the `problem` says why), never stopped: a start or stop hook must never wedge a session."""
    from gates.domain import harness

    hook, failure = guarded(harness.read_stdin)
    if hook is not None:
        return hook
    assert failure is not None
    return harness.HookInput({}, f"stdin could not be read: {failure.message}")


def judge_now(run: Invocation, skip: tuple[str, ...] = ()) -> "CheckResult":
    """The enabled gates' judgement of the state as it is now, as a plain `gate check` makes it (the configuration a
    commit would record verified first): what the close-out and the brief know of the gates. Recorded as a check's
    is: what it judged, the gates that passed (their open flags here resolve: Invocation.resolve_passed, or at the
    end), the events its gates raised. It raises what the check would (GitFailed, a GateError). `skip`: gates not
    run (the brief leaves git-stale-locks, which moves a stale lock aside, to its own section: it only reads)."""
    from gates.checks import runner
    from gates.domain import changes

    repo, config = run.repo(), run.config()
    runner.verify_config(repo, config)  # what is staged is judged as CI will judge it
    result = runner.run(repo, config, runner.select(config, [], list(skip)), [])
    run.judged(changes.scope_of(repo, [], None, repo.path(config.section("handoff")["path"]), result.situation))
    for gate in passing(result):
        run.passes(gate)
    for reason, message in result.events:
        run.notice(reason, message)
    return result

"""`gate doctor --remote`: can the remote carry claims? Reachable, accepts a push under refs/gate/, how full, how fast."""

from __future__ import annotations

import time

from gates.domain import remote
from gates.domain.doctor import FIX, OK, WARN, Check
from gates.infra import clock, gitnet
from gates.infra.config import Config
from gates.infra.errors import GateError
from gates.infra.git import Repo


def probe(repo: Repo, config: Config, name: str) -> list[Check]:
    try:
        target = remote.connect(repo, name, remote.timeout_of(config))
    except GateError as exc:
        return [Check(FIX, f"remote {name}: {exc.render()}")]
    out = []
    started = time.monotonic()
    try:
        refs = gitnet.ls_remote(target.work, target.url, ["refs/gate/*"])
    except gitnet.Unreachable as exc:
        return [Check(FIX, f"remote {name} ({target.url}) cannot be reached: {exc.render()} — `gate claim` is denied "
                           "while it is (or `gate claim --offline`)")]
    rtt = time.monotonic() - started
    counts = {ns: sum(1 for ref in refs if ref.startswith(ns + "/")) for ns in (remote.CLAIMS, remote.FENCES, remote.FLAGS)}
    out.append(Check(OK, f"remote {name} ({target.url}) reachable: ls-remote round trip {rtt * 1000:.0f} ms"))
    out.append(Check(OK, f"remote {name} holds {len(refs)} ref(s) under refs/gate/ ({counts[remote.CLAIMS]} claims, "
                         f"{counts[remote.FENCES]} fences, {counts[remote.FLAGS]} flag refs)"))
    now = clock.now()
    ref = f"{remote.PROBES}/{remote.clone_id(repo)}-{int(now.timestamp())}"
    oid = gitnet.make_commit(target.work, {"probe": b"handoff-gate doctor probe\n"}, "gate doctor probe",
                          when=int(now.timestamp()))
    started = time.monotonic()
    try:
        created = gitnet.push_refs(target.work, target.url, [(ref, oid, None)])
        push_time = time.monotonic() - started
        if not created.ok:
            hidden = any("hidden ref" in status for status in created.status.values())
            out.append(Check(FIX, f"remote {name} refuses a push of {ref}: {created.message or created.status} — "
                                  "claims cannot be taken there " + (
                                      "(it hides refs/gate/: transfer.hideRefs or receive.hideRefs)" if hidden else
                                      "(a host whose hooks allow only heads and tags?)")))
            return out
        out.extend(_advertised(target, name, ref, oid))
        deleted = gitnet.push_refs(target.work, target.url, [(ref, None, oid)])
        if not deleted.ok:
            out.append(Check(FIX, f"remote {name} took {ref} but refused to delete it ({deleted.message}): remove it "
                                  "by hand; releases would fail the same way"))
        else:
            out.append(Check(OK, f"remote {name} accepts a create-only push under refs/gate/ and its leased delete "
                                 f"({push_time * 1000:.0f} ms per push)"))
        # As an acquisition does: a claim and a fence ref in one push (there, a remote that hides those very
        # namespaces from its push side shows), then both deleted. `gate claims --remote` lists keys only.
        pair = [f"{space}/{remote.PROBE_PREFIX}{ref.rpartition('/')[2]}" for space in (remote.CLAIMS, remote.FENCES)]
        atomic = gitnet.push_refs(target.work, target.url, [(pair[0], oid, None), (pair[1], oid, None)])
        if atomic.ok:
            gitnet.push_refs(target.work, target.url, [(pair[0], None, oid), (pair[1], None, oid)])
            out.append(Check(OK, f"remote {name} applies --atomic pushes (an acquisition moves the claim and its fence "
                                 "together)"))
        else:
            # A ref receive-pack refuses as hidden does not stop the others of an --atomic push (git 2.39): remove
            # what was made.
            made: list[tuple[str, str | None, str | None]] = [
                (made_ref, None, oid) for made_ref, status in atomic.status.items() if not status.startswith("!")]
            if made:
                gitnet.push_refs(target.work, target.url, made)
            why = " (it hides refs/gate/ claims or fences: transfer.hideRefs or receive.hideRefs)" if any(
                "hidden ref" in status for status in atomic.status.values()) else ""
            out.append(Check(FIX, f"remote {name} refuses an --atomic push of {pair[0]} and {pair[1]} "
                                  f"({atomic.message}){why}: claims cannot be taken"))
    except gitnet.Unreachable as exc:
        out.append(Check(FIX, f"remote {name}: the probe push got no answer: {exc.render()}"))
    out.extend(_claim_readable(repo, config, target, name))
    out.append(Check(WARN, "refs/gate/ refs are not fetched by a plain clone or fetch (refs/heads/* only) and branch "
                           "rules do not protect them: anyone who can push can delete or rewrite a claim"))
    return out


def _advertised(target: remote.Remote, name: str, ref: str, oid: str) -> list[Check]:
    """After our own successful push of `ref`, the remote's fetch side must list it: else its claims read as unknown."""
    if gitnet.ls_remote(target.work, target.url, [ref]).get(ref) == oid:
        return [Check(OK, f"remote {name} lists what was pushed under refs/gate/ (ls-remote shows the probe)")]
    return [Check(FIX, f"remote {name} took a push of {ref} but its ls-remote does not list it: it hides refs/gate/ "
                       "from fetches (uploadpack.hideRefs or transfer.hideRefs) — every claim there reads as unknown "
                       "and `gate claim` and the pre-push gate refuse; let the remote advertise refs/gate/")]


def _claim_readable(repo: Repo, config: Config, target: remote.Remote, name: str) -> list[Check]:
    """The configured hand-over's own claim: readable, and not hidden from fetches (hideRefs may name it alone)."""
    state_rel = config.section("handoff")["path"]
    try:
        seen = remote.read(target, remote.key_for(repo, state_rel))
    except remote.Hidden as exc:
        return [Check(FIX, exc.render())]
    except GateError as exc:
        return [Check(FIX, f"remote {name}: the claim on {state_rel} cannot be read: {exc.render()}")]
    if seen.problem:
        return [Check(FIX, f"{seen.problem} — `gate release --force --reason TEXT` removes a broken claim ref")]
    held = "free" if seen.record is None else "claimed"
    return [Check(OK, f"remote {name}: the claim on {state_rel} reads as {held} (fence {seen.fence})")]

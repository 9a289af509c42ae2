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
            out.append(Check(FIX, f"remote {name} refuses a push of {ref}: {created.message or created.status} — "
                                  "claims cannot be taken there (a host whose hooks allow only heads and tags?)"))
            return out
        deleted = gitnet.push_refs(target.work, target.url, [(ref, None, oid)])
        if not deleted.ok:
            out.append(Check(FIX, f"remote {name} took {ref} but refused to delete it ({deleted.message}): remove it "
                                  "by hand; releases would fail the same way"))
        else:
            out.append(Check(OK, f"remote {name} accepts a create-only push under refs/gate/ and its leased delete "
                                 f"({push_time * 1000:.0f} ms per push)"))
        atomic = gitnet.push_refs(target.work, target.url, [(ref, oid, None), (ref + "-b", oid, None)])
        if atomic.ok:
            gitnet.push_refs(target.work, target.url, [(ref, None, oid), (ref + "-b", None, oid)])
            out.append(Check(OK, f"remote {name} applies --atomic pushes (an acquisition moves the claim and its fence "
                                 "together)"))
        else:
            out.append(Check(FIX, f"remote {name} refuses an --atomic push ({atomic.message}): claims cannot be taken"))
    except gitnet.Unreachable as exc:
        out.append(Check(FIX, f"remote {name}: the probe push got no answer: {exc.render()}"))
    out.append(Check(WARN, "refs/gate/ refs are not fetched by a plain clone or fetch (refs/heads/* only) and branch "
                           "rules do not protect them: anyone who can push can delete or rewrite a claim"))
    return out

"""Renderers: the same check result as text or as JSON (schemas/check-result.schema.json).

Every renderer's output is `text.clean`ed (a JSON or SARIF document string by string, before it is
encoded), so no finding, path or error can carry a raw control, bidi or tag character to a CI log.
"""

from gates import __version__
from gates.infra import jsonio
from gates.infra.errors import GateError
from gates.infra.findings import ENVIRONMENT, ERROR, WARNING, CheckResult, summary, tally, text
from gates.infra.text import clean, clean_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable


def as_json(result: CheckResult | None, exit_code: int, error: GateError | None = None) -> str:
    findings = result.findings if result else []
    counts = tally(f.severity for f in findings)
    document = {
        "version": 1,
        "tool": "handoff-gate",
        "tool_version": __version__,
        "command": "check",
        "exit_code": exit_code,
        "ok": exit_code == 0,
        "gates": result.gates if result else [],
        "files": result.files if result else [],
        "counts": {"error": counts.get(ERROR, 0), "warning": counts.get(WARNING, 0)},
        "findings": [f.to_json() for f in findings],
        "error": None if error is None else {"reason": error.reason, "message": error.render()},
    }
    return jsonio.dumps(clean_tree(document), indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(result: CheckResult | None, error: GateError | None = None) -> str:
    """GitHub Actions workflow commands: an annotation on the offending line of each finding."""
    lines = []
    for f in result.findings if result else []:
        kind = "error" if f.severity == ERROR else "warning"
        lines.append(f"::{kind} file={_escape_property(f.path)},line={f.line},title={_escape_property(f.gate)}::"
                     f"{_escape_data(f.message)}")
    if error is not None:
        lines.append(f"::error title=handoff-gate::{_escape_data(error.render())}")
    if result is not None:
        lines.append(summary(result))
    return clean("\n".join(lines) + "\n")


ENVIRONMENT_SUMMARY = "The gate's own environment: its state dir, and temp files a killed writer left"
ENVIRONMENT_HELP = ("A state dir that commands which write would refuse (a symlink, not a directory, writable by "
                    "every user) is a warning; a temp file of a killed writer (.tmp-<name>-<12 hex digits>) is a "
                    "warning where it lies and an error when a commit adds it. `gate doctor` says what to fix; "
                    "`gate doctor --fix` moves temp files to lost+found.")


def _rule(gate_id: str, describe: "Callable[[str], str]") -> dict[str, object]:
    from gates.infra.catalog import CATALOG

    if gate_id == ENVIRONMENT:
        return {"id": gate_id, "name": "GateEnvironment", "shortDescription": {"text": ENVIRONMENT_SUMMARY},
                "fullDescription": {"text": ENVIRONMENT_HELP}, "help": {"text": ENVIRONMENT_HELP},
                "defaultConfiguration": {"level": "warning"}}
    doc = describe(gate_id).strip()
    return {
        "id": gate_id,
        "name": "".join(part.capitalize() for part in gate_id.split("-")),
        "shortDescription": {"text": CATALOG[gate_id].summary},
        "fullDescription": {"text": doc},
        "help": {"text": f"{doc}\n\nRun `gate check --only {gate_id}` to see it locally."},
        "defaultConfiguration": {"level": "error"},
    }


def _gate_ids(result: CheckResult | None) -> list[str]:
    """The gates run, then the environment's id when it has findings (it is no gate, so never in `gates`)."""
    gates = list(result.gates) if result else []
    if result and any(f.gate == ENVIRONMENT for f in result.findings) and ENVIRONMENT not in gates:
        gates.append(ENVIRONMENT)
    return gates


def _uri(path: str) -> dict[str, str]:
    from urllib.parse import quote

    if path.startswith("/"):
        return {"uri": "file://" + quote(path)}
    return {"uri": quote(path), "uriBaseId": "%SRCROOT%"}


def sarif(result: CheckResult | None, exit_code: int, error: GateError | None = None,
          describe: "Callable[[str], str]" = lambda gate_id: "") -> str:
    """SARIF 2.1.0: one rule per gate, one result per finding; `describe` gives a gate's full description."""
    gates = _gate_ids(result)
    index = {gate_id: i for i, gate_id in enumerate(gates)}
    results = [{
        "ruleId": f.gate,
        "ruleIndex": index[f.gate],
        "level": "error" if f.severity == ERROR else "warning",
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {"artifactLocation": _uri(f.path), "region": {"startLine": f.line}}}],
    } for f in (result.findings if result else []) if f.gate in index]
    invocation: dict[str, object] = {"executionSuccessful": error is None, "exitCode": exit_code}
    if error is not None:
        invocation["toolExecutionNotifications"] = [{"level": "error", "message": {"text": error.render()}}]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            # No informationUri: handoff-gate has no public page to point at (it is not on PyPI); SARIF makes it optional
            "tool": {"driver": {"name": "handoff-gate", "version": __version__,
                                "rules": [_rule(gate_id, describe) for gate_id in gates]}},
            "invocations": [invocation],
            "results": results,
        }],
    }
    return jsonio.dumps(clean_tree(document), indent=2, ensure_ascii=False) + "\n"


def junit(result: CheckResult | None, error: GateError | None = None) -> str:
    """JUnit XML: one test case per gate; a gate with errors fails, with its findings as the text."""
    from xml.etree import ElementTree

    gates = _gate_ids(result)
    suite = ElementTree.Element("testsuite", name="handoff-gate", tests=str(len(gates) + (error is not None)))
    failures = 0
    for gate_id in gates:
        case = ElementTree.SubElement(suite, "testcase", classname="handoff-gate", name=gate_id)
        found = [f for f in (result.findings if result else []) if f.gate == gate_id]
        errors = [f for f in found if f.severity == ERROR]
        if errors:
            failures += 1
            failure = ElementTree.SubElement(case, "failure", message=f"{len(errors)} violation(s)", type=gate_id)
            failure.text = "\n".join(f.render() for f in errors)
        warnings = [f for f in found if f.severity != ERROR]
        if warnings:
            ElementTree.SubElement(case, "system-out").text = "\n".join(f.render() for f in warnings)
    if error is not None:
        case = ElementTree.SubElement(suite, "testcase", classname="handoff-gate", name="gate")
        ElementTree.SubElement(case, "error", message=error.render(), type=error.reason).text = error.render()
    suite.set("failures", str(failures))
    suite.set("errors", "1" if error is not None else "0")
    return clean(ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n")


# The renderers by name, as `gate check --format NAME` chooses one: (result, exit code, error, describe) -> text.
# A new format is one function above and one line here; --format's choices are this table's keys.
RENDERERS: "dict[str, Callable[[CheckResult | None, int, GateError | None, Callable[[str], str]], str]]" = {
    "text": lambda result, code, error, describe: text(result),
    "json": lambda result, code, error, describe: as_json(result, code, error),
    "github": lambda result, code, error, describe: github(result, error),
    "sarif": sarif,
    "junit": lambda result, code, error, describe: junit(result, error),
}

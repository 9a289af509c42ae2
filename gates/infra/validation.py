"""Validation against a JSON Schema that reports the nearest line of the document.

jsonschema is imported only when something is validated: it is the slowest import we have. The schemas the package
ships are gates/infra/schemas.py's. A schema the repository commits (`handoff.schema`) is hostile input, checked
and applied by `bounded` in a child interpreter with a time and a memory bound (docs/security.md).
"""

import os

from gates.infra import jsonio
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable


class Unusable(Exception):
    """A schema that cannot be used as it is: not a JSON Schema, or a reference in it cannot be followed. The message
    names the schema's own text only (a short, sanitised excerpt), never a document it points at."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _validator(schema: "dict[str, Any]") -> "Any":
    """The one way a validator is made: for `schema`'s draft, checking formats, with a registry of its own that
    retrieves nothing, so a `$ref` resolves only inside `schema` or to the metaschemas jsonschema ships: its default
    registry would open any URI a committed schema names (docs/security.md)."""
    from jsonschema import validators
    from referencing import Registry

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise Unusable("$schema is not a string")
    cls = validators.validator_for(schema, default=None) if dialect else validators.validator_for(schema)
    if cls is None:  # jsonschema would warn and use the latest draft ("will raise an error in the future")
        raise Unusable(f"$schema '{excerpt(str(dialect), 120)}' is not a JSON Schema draft jsonschema knows")
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=Registry())


def check_schema(schema: "dict[str, Any]") -> str | None:
    """None when `schema` is a valid JSON Schema whose every reference resolves without retrieving anything, else
    why not (a short, sanitised excerpt that quotes no referenced document)."""
    try:
        validator = _validator(schema)
        meta = _validator(validator.META_SCHEMA)  # the metaschema's own references: the shipped metaschemas
        for error in meta.iter_errors(schema):
            return f"not a valid JSON Schema: {_short(error)}"
        _follow(validator, schema)
    except Unusable as exc:
        return exc.message
    except RecursionError:
        return "its references go round in a loop"
    return None


def _follow(validator: "Any", schema: "dict[str, Any]") -> None:
    """Resolve every `$ref`, `$dynamicRef` and `$recursiveRef` of `schema` now, whether or not a document reaches
    it: a reference that cannot be followed is refused up front, the same on every input."""
    import referencing.jsonschema
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped,unused-ignore]
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    spec = referencing.jsonschema.specification_with(validator.ID_OF(validator.META_SCHEMA) or "urn:unknown-dialect",
                                                     default=referencing.Specification.OPAQUE)
    resource = spec.create_resource(schema)
    resolver = REGISTRY.combine(Registry()).resolver_with_root(resource)
    pending = [(resolver, resource)]
    while pending:
        resolver, resource = pending.pop()
        contents = resource.contents
        if isinstance(contents, dict):
            for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
                ref = contents.get(keyword)
                if isinstance(ref, str):
                    try:
                        resolver.lookup(ref)  # a lookup in the registry, which retrieves nothing
                    except Unresolvable as exc:
                        raise _unresolvable(exc, keyword, ref) from None
                elif keyword in contents:
                    raise Unusable(f"{keyword} is not a string")
        pending.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())


def _unresolvable(exc: Exception, keyword: str = "$ref", ref: str | None = None) -> Unusable:
    """Why a reference did not resolve, from the reference alone: referencing's own message can quote the whole
    document it looked in."""
    from referencing import exceptions

    cause = getattr(exc, "_wrapped", exc)  # jsonschema wraps referencing's error while validating
    shown = excerpt(ref if ref is not None else str(getattr(cause, "ref", "")), 120)
    if isinstance(cause, exceptions.PointerToNowhere):
        why = "points at nothing in the schema"
    elif isinstance(cause, (exceptions.NoSuchAnchor, exceptions.InvalidAnchor)):
        why = "names an anchor the schema does not have"
    else:  # a document that is not in the registry: retrieving it is never tried
        why = ("names a document outside the schema, which is never fetched or read (only references inside the "
               "schema, such as '#/$defs/name', and the JSON Schema metaschemas are followed)")
    return Unusable(f"{keyword} '{shown}' {why}")


BOUND_SECONDS = 10.0  # what checking a repository's own schema may take (a normal one takes ~0.1 s)
BOUND_BYTES = 1 << 30  # the address space its interpreter may use
_CHILD = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); from gates.infra.validation import serve; "
          "sys.stdout.buffer.write(serve(sys.stdin.buffer.read()))")


def bounded(schema: "dict[str, Any]", instance: "Any", lines: dict[tuple[object, ...], int],
            seconds: float | None = None) -> list[tuple[int, str]]:
    """`check_schema` and then `validate` for a schema the repository commits, in a child interpreter (`-I -S`,
    run in `/`, importing only from this process's absolute sys.path) that is killed after `seconds` (the user's
    GATE_SCHEMA_SECONDS, else BOUND_SECONDS) and may use at most BOUND_BYTES of memory. Raises Unusable when the
    schema is not usable, or took too long or too much."""
    import subprocess
    import sys

    if seconds is None:
        asked = os.environ.get("GATE_SCHEMA_SECONDS", "")
        try:
            seconds = float(asked) if asked else BOUND_SECONDS
        except ValueError:
            seconds = -1.0
        if not 0 < seconds < 86400:
            raise Unusable(f"GATE_SCHEMA_SECONDS is '{excerpt(asked, 40)}', not a number of seconds above 0")

    request = jsonio.dumps({"schema": schema, "instance": instance,
                            "lines": [[list(path), line] for path, line in lines.items()]}).encode()
    # Where gates itself was imported from first (an editable install finds it through a hook that -S leaves out)
    found = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))]
    found += [entry for entry in sys.path if os.path.isabs(entry)]
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD, jsonio.dumps(found)], input=request,
                              capture_output=True, cwd="/", env={}, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise Unusable(f"checking the hand-over against it took more than {seconds:g} s (a `pattern` with nested "
                       "repetition, or anyOf/oneOf branches that refer to one another, take exponential time): "
                       "simplify the schema") from None
    except OSError as exc:
        raise Unusable(f"it could not be checked: the interpreter {sys.executable} did not start "
                       f"({exc.strerror or exc})") from None
    try:
        answer = jsonio.loads(proc.stdout.decode("utf-8")) if proc.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = "it ran out of memory" if said and said[-1].startswith("MemoryError") else (
            f"the checking interpreter exited {proc.returncode}" + (f": {excerpt(said[-1], 160)}" if said else ""))
        raise Unusable(f"it could not be checked ({why})")
    if answer.get("unusable") is not None:
        raise Unusable(str(answer["unusable"]))
    return [(int(line), str(message)) for line, message in answer.get("problems", [])]


def serve(request: bytes) -> bytes:
    """The child's half of `bounded`: the request's schema checked and its instance validated, as JSON."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (BOUND_BYTES, BOUND_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # a bound the platform does not offer: the time bound still holds
    asked = jsonio.loads(request.decode("utf-8"))
    lines = {tuple(path): line for path, line in asked["lines"]}
    try:
        problem = check_schema(asked["schema"])
        answer: dict[str, Any] = ({"unusable": problem} if problem
                                  else {"problems": validate(asked["schema"], asked["instance"], lines)})
    except Unusable as exc:
        answer = {"unusable": exc.message}
    return jsonio.dumps(answer).encode()


def _short(error: "Any") -> str:
    return excerpt(str(error.message), 160)


def validate(schema: "dict[str, Any]", instance: "Any", lines: dict[tuple[object, ...], int]) -> list[tuple[int, str]]:
    """Every way `instance` breaks `schema`, as (line, message), in line order. A schema that cannot be used (a
    reference that does not resolve, one that loops) raises Unusable."""
    from referencing.exceptions import Unresolvable

    problems: list[tuple[int, str]] = []
    try:
        for error in _validator(schema).iter_errors(instance):
            problems.extend(_describe(error, lines))
    except Unresolvable as exc:
        raise _unresolvable(exc) from None
    except RecursionError:
        raise Unusable("its references go round in a loop") from None
    return sorted(set(problems))


def _describe(error: "Any", lines: dict[tuple[object, ...], int]) -> "Iterable[tuple[int, str]]":
    if error.validator in ("oneOf", "anyOf") and error.context:
        # "not valid under any of the given schemas" helps nobody: say what the closest branch wanted.
        specific = [e for e in error.context if e.validator != "type"] or list(error.context)
        yield from _describe(specific[0], lines)
        return
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        for key in error.instance:
            if key not in allowed:
                where = excerpt(_dotted((*path, key)), 120)
                yield _nearest((*path, key), lines), f"unknown key '{where}'{_suggest(key, allowed)}"
        return
    where = excerpt(_dotted(path) or "(top level)", 120)
    message = _short(error)  # jsonschema quotes the value: a short, sanitised excerpt only
    if error.validator == "pattern" and "description" in error.schema:
        message = f"'{excerpt(str(error.instance))}' is not {error.schema['description']}"
    yield _nearest(path, lines), f"{where}: {message}"


def _dotted(path: tuple[object, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _nearest(path: tuple[object, ...], lines: dict[tuple[object, ...], int]) -> int:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


def _suggest(key: str, allowed: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(sorted(allowed))})"

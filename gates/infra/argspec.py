"""A command's arguments as its `add_arguments` declares them, collected without argparse (see Spec).

gates/cli.py hands a plain invocation to Spec and everything else to argparse; tests/test_plain_argv.py
holds the two to the same answers.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Spec:
    """A command's arguments as its `add_arguments` declares them, collected without argparse.

    It parses only the plain invocation (`gate check --only ID FILE...`, `gate brief --format
    claude`): exact option names, a value that is allowed and converts, positionals in one run,
    at most one option of an exclusive group. Whatever else (help, an abbreviation, a bad value,
    a second run of positionals, a form it does not know) is left to argparse, so every message and
    every refusal is argparse's own. A hook's `gate check` skips building a parser, and importing
    argparse (with shutil, which it pulls in), on every commit.
    """

    def __init__(self) -> None:
        self.options: dict[str, tuple[str, dict[str, Any], int]] = {}  # name -> (dest, declaration, group)
        self.defaults: dict[str, Any] = {}
        self.positional: str | None = None
        self.plain = True  # every declaration was one this class understands
        self.epilog: str | None = None
        self.groups = 0

    def add_argument(self, *names: str, _group: int = 0, **kwargs: "Any") -> None:
        action, nargs = kwargs.get("action", "store"), kwargs.get("nargs")
        if action not in ("store", "store_true") or nargs not in (None, "*", "?") or kwargs.get("required"):
            self.plain = False
            return
        if not names[0].startswith("-"):
            if nargs != "*" or self.positional is not None:
                self.plain = False
            self.positional = names[0]
            self.defaults[names[0]] = []
            return
        if nargs == "*":
            self.plain = False
            return
        dest = kwargs.get("dest") or names[-1].lstrip("-").replace("-", "_")
        self.defaults[dest] = kwargs.get("default", False if action == "store_true" else None)
        for name in names:
            self.options[name] = (dest, kwargs, _group)

    def add_mutually_exclusive_group(self, **kwargs: "Any") -> "Group":
        if kwargs.get("required"):
            self.plain = False
        self.groups += 1
        return Group(self, self.groups)

    def parse(self, argv: list[str]) -> "dict[str, Any] | None":
        values = dict(self.defaults)
        rest: list[str] = []
        state = "before"  # positionals: before their run, in it, after it (argparse takes one run)
        chosen: dict[int, str] = {}  # exclusive group -> the option given
        words = list(argv)
        at = 0
        while at < len(words):
            word = words[at]
            at += 1
            if word == "--" or word.startswith("-") and word != "-":
                name, eq, given = word.partition("=")
                value: str | None = given
                if name not in self.options:
                    return None
                dest, kwargs, group = self.options[name]
                if group and chosen.setdefault(group, dest) != dest:
                    return None  # two of an exclusive group: argparse says so
                if kwargs.get("action") == "store_true":
                    if eq:
                        return None
                    values[dest] = True
                else:
                    if not eq and kwargs.get("nargs") == "?":
                        taken = at < len(words) and not words[at].startswith("-")
                        value, at = (words[at], at + 1) if taken else (kwargs.get("const"), at)
                    elif not eq:
                        if at >= len(words) or words[at].startswith("-"):
                            return None
                        value, at = words[at], at + 1
                    try:
                        values[dest] = kwargs["type"](value) if "type" in kwargs and value is not None else value
                    except Exception:
                        return None
                    if "choices" in kwargs and values[dest] not in kwargs["choices"]:
                        return None
                state = "after" if state == "in" else state
            elif self.positional is None or state == "after":
                return None
            else:
                state = "in"
                rest.append(word)
        if self.positional is not None:
            values[self.positional] = rest
        return values


class Group:
    """An exclusive group of a Spec: its options are the spec's, marked with the group."""

    def __init__(self, spec: Spec, number: int) -> None:
        self.spec = spec
        self.number = number

    def add_argument(self, *names: str, **kwargs: "Any") -> None:
        self.spec.add_argument(*names, _group=self.number, **kwargs)

"""The run-time NamedTuple gives typing.NamedTuple's answers (gates/infra/plain.py).

No `from __future__ import annotations` here, as in the package: on Python 3.14 the classes below then reach the
metaclass as the package's do, their annotations behind an annotate function (PEP 649)."""

import typing
from typing import Any

import pytest
from conftest import ROOT, imported_by

from gates.infra import plain


class Typed(typing.NamedTuple):
    """A point."""

    x: int
    y: str = "why"
    z: tuple[int, ...] = ()

    def shown(self) -> str:
        return f"{self.x}{self.y}"


class Plain(plain.NamedTuple):
    """A point."""

    x: int
    y: str = "why"
    z: tuple[int, ...] = ()

    def shown(self) -> str:
        return f"{self.x}{self.y}"


@pytest.mark.parametrize("args, named", [((1,), {}), ((1, "a"), {}), ((1,), {"z": (2,)}), ((), {"x": 3, "y": "b"}),
                                         ((1, "a", (4,)), {})])
def test_made_compared_and_shown_as_typing_makes_them(args: tuple[object, ...], named: dict[str, object]) -> None:
    typed, ours = Typed(*args, **named), Plain(*args, **named)  # type: ignore[arg-type]
    assert tuple(typed) == tuple(ours) and tuple.__eq__(ours, typed) and hash(ours) == hash(typed)
    assert repr(ours) == repr(typed).replace("Typed", "Plain")
    assert ours._asdict() == typed._asdict() and tuple(ours._fields) == tuple(typed._fields)
    assert ours._field_defaults == typed._field_defaults
    assert (ours.x, ours.y, ours.z, ours.shown()) == (typed.x, typed.y, typed.z, typed.shown())
    assert Plain.__doc__ == "A point."


@pytest.mark.parametrize("args, named", [((), {}), ((1, "a", (), 4), {}), ((1,), {"x": 2}), ((1,), {"w": 2})])
def test_refused_as_typing_refuses_them(args: tuple[object, ...], named: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        Typed(*args, **named)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Plain(*args, **named)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["__annotate__", "__annotate_func__"])
def test_a_class_body_that_holds_an_annotate_function_gives_its_fields(key: str) -> None:
    """From Python 3.14 a class body of a module without `from __future__ import annotations` holds no
    `__annotations__`: an annotate function instead (the two names annotationlib looks under). Its fields were
    read from `__annotations__` alone: none, and the first record made was refused."""
    def annotate(fmt: int) -> dict[str, object]:
        if fmt != 1:  # the VALUE format: a compiled annotate function supports no other one
            raise NotImplementedError
        return {"x": int, "y": str, "z": tuple[int, ...]}

    declared: Any = type(plain.NamedTuple)  # the metaclass at run time (the type checker sees typing's class)
    made = declared("Plain", (plain.NamedTuple,), {"__module__": __name__, "__qualname__": "Plain", "__doc__": "A point.",
                                                  key: annotate, "y": "why", "z": ()})
    assert (made._fields, made._field_defaults) == (Typed._fields, Typed._field_defaults)
    assert made(1, z=(2,)) == Typed(1, z=(2,)) and repr(made(1)) == repr(Typed(1)).replace("Typed", "Plain")
    assert key not in vars(made) and made.__doc__ == "A point."


def test_fields_are_read_only() -> None:
    point = Plain(1)
    with pytest.raises(AttributeError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.other = 2  # type: ignore[attr-defined]


def test_the_package_uses_nothing_of_typings_api_that_the_plain_class_leaves_out() -> None:
    """The type checker sees typing.NamedTuple: a `_replace` or `_make` would pass it and fail at run time."""
    missing = ("._replace(", "._make(", "pickle", "__match_args__", "__getnewargs__")
    uses = [f"{path.relative_to(ROOT)}: {name}" for path in sorted((ROOT / "gates").rglob("*.py"))
            if path.name != "plain.py" for name in missing if name in path.read_text()]
    assert uses == []


def test_loads_neither_typing_nor_collections() -> None:
    code = ("from gates.infra.plain import NamedTuple\n"
            "class P(NamedTuple):\n    a: int\n    b: int = 2\n"
            "assert P(1) == (1, 2) and P(1).b == 2")
    assert imported_by(code, ("typing", "collections")) == []

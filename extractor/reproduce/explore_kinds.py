# Explore's kinds of trigger: what a search may set to make a check raise, each a class that says how its slots
# are named, which values it offers for a name, where its values go in a try, how a program shows them and how a
# fix that changes one is said. KINDS is the one place a new kind plugs in. The standard library only (runs in the
# runtime, beside child.py).
from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import os
import time
from collections.abc import Iterator
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import explore_choices, explore_source, explore_values
else:  # run beside child.py in a runtime, from its folder
    explore_choices = importlib.import_module("explore_choices")
    explore_source = importlib.import_module("explore_source")
    explore_values = importlib.import_module("explore_values")
Call = explore_values.Call
Src = explore_values.Src
Value = explore_values.Value
Choices = explore_choices.Choices
Offer = tuple[str, list[Value]]  # a slot, with the values to try there


@dataclasses.dataclass(frozen=True)
class Trial:
    """What one try is given, each part name -> value (a sub-config as a Call): the built class's arguments, the
    called function's, the environment's variables."""

    arguments: dict[str, Value] = dataclasses.field(default_factory=dict)
    call: dict[str, Value] = dataclasses.field(default_factory=dict)
    environment: dict[str, Value] = dataclasses.field(default_factory=dict)


class Kind:
    """A kind of trigger: the slots it names (`prefix` + a name, `name.inner` for a sub-config's argument), the part
    of a Trial its values go in, the values it offers, and how a program and a fix say them."""

    prefix = ""
    part = "arguments"
    called = False  # whether its values matter only when the method is called (not when building raises)

    def annotations(self, choices: Choices) -> dict[str, Any]:
        """Its names with their types (a sub-config's class is read from them)."""
        return {}

    def offers(self, choices: Choices, name: str, annotated: dict[str, Any], deadline: float) -> list[Offer]:
        """The slots a name the search hints at stands for in this kind, each with its values."""
        return []

    def extra(self, choices: Choices, annotated: dict[str, Any], seen: set[str]) -> list[Offer]:
        """Slots no hinted name stands for (`seen`: the names offered already, added to)."""
        return []

    def path(self, slot: str) -> list[str]:
        """A slot as the keys it sets: [name] or [name, inner] (a sub-config's argument)."""
        return slot.removeprefix(self.prefix).split(".")

    def shortened(self, values: dict[str, Value], required: set[str]) -> list[str]:
        """Its slots a found program may do without (each tried left at its default)."""
        return []

    def shown(self, values: dict[str, Value], *, direct: bool) -> dict[str, str]:
        """Its values as the arguments a program reports, slot -> source (`direct`: a function called, no class)."""
        return {f"{self.prefix}{name}": value.source() for name, value in values.items()}

    @contextlib.contextmanager
    def around(self, values: dict[str, Value], bindings: explore_values.Bindings) -> Iterator[None]:
        """What holds while a try with these values runs, besides the build and the call."""
        yield

    def preamble(self, values: dict[str, Value]) -> list[list[ast.stmt]]:
        """The blocks a program runs first for these values (before it imports the package)."""
        return []

    def change(self, slot: str, choice: Value | None) -> str:
        """A fix in words: `set tensor_parallel_size=2`, `leave parallel_config.x at its default`."""
        name = slot.removeprefix(self.prefix)
        return f"leave {name} at its default" if choice is None else f"set {name}={choice.source()}"


class Field(Kind):
    """An argument of the class built (`name`), or of a sub-config it takes (`name.inner`); a keyword the class
    does not take that a validator looks for in what it is given."""

    def annotations(self, choices: Choices) -> dict[str, Any]:
        return explore_values.fields(choices.target.holder)

    def offers(self, choices: Choices, name: str, annotated: dict[str, Any], deadline: float) -> list[Offer]:
        out: list[Offer] = []
        holder, _, inner = name.partition(".")
        if inner and holder in annotated and not inner.count("."):
            owner = explore_values.config_class(annotated[holder])
            sub = explore_values.fields(owner) if owner is not None else {}
            if inner in sub:
                out.append((name, choices.choices(sub[inner], inner, deadline, owner=owner)))
        if name in annotated:
            out.append((name, choices.choices(annotated[name], name, deadline, owner=choices.target.cls)))
        return out

    def extra(self, choices: Choices, annotated: dict[str, Any], seen: set[str]) -> list[Offer]:
        # `"normalize" in values`: a removed parameter a validator refuses, passed as any value.
        out: list[Offer] = []
        tests = choices.target.parsed if choices.target.holder is not None else {}
        for node in explore_source.in_tests(tests, ast.Compare):
            key = node.left.value if isinstance(node.left, ast.Constant) else None
            looked = isinstance(node.ops[0], (ast.In, ast.NotIn)) and isinstance(key, str) and key.isidentifier()
            if looked and key not in annotated and key not in seen:
                seen.add(str(key))
                out.append((str(key), [Src("True"), Src("1"), Src("'x'")]))
        return out

    def shortened(self, values: dict[str, Value], required: set[str]) -> list[str]:
        out: list[str] = []
        for name, value in values.items():
            if isinstance(value, Call):
                out += [f"{name}.{inner}" for inner in value.arguments]
            if name not in required:
                out.append(name)
        return out


class Parameter(Kind):
    """A parameter of the method called (`call.name`), or an argument of a config it takes (`call.name.inner`)."""

    prefix = "call."
    part = "call"
    called = True

    def annotations(self, choices: Choices) -> dict[str, Any]:
        return choices.parameters()

    def offers(self, choices: Choices, name: str, annotated: dict[str, Any], deadline: float) -> list[Offer]:
        out: list[Offer] = []
        holder, _, inner = name.partition(".")
        if inner and holder in annotated and not inner.count("."):
            owner = choices.config_of(annotated[holder], holder)
            sub = explore_values.fields(owner) if owner is not None else {}
            if inner in sub:
                out.append((f"call.{name}", choices.choices(sub[inner], inner, deadline, owner=owner)))
        if name in annotated:
            out.append((f"call.{name}", choices.choices(annotated[name], name, deadline, owner=choices.target.cls)))
        return out

    def shortened(self, values: dict[str, Value], required: set[str]) -> list[str]:
        return [f"call.{name}" for name in values if name not in required]

    def shown(self, values: dict[str, Value], *, direct: bool) -> dict[str, str]:
        # (a function's parameters are no config's fields: no flags stand for a method's)
        return super().shown(values, direct=direct) if direct else {}


class Environment(Kind):
    """A variable of the environment the raise's function reads (`env.NAME`: `envs.X`, `os.environ`), set while
    the try runs, and by the program before it imports the package, as a shell would."""

    prefix = "env."
    part = "environment"

    def offers(self, choices: Choices, name: str, annotated: dict[str, Any], deadline: float) -> list[Offer]:
        return [(name, [Src("'1'"), Src("'0'")])] if name.startswith(self.prefix) else []

    def path(self, slot: str) -> list[str]:
        return [slot.removeprefix(self.prefix)]

    @contextlib.contextmanager
    def around(self, values: dict[str, Value], bindings: explore_values.Bindings) -> Iterator[None]:
        environment = {name: bindings.value(value) for name, value in values.items()}
        before = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def preamble(self, values: dict[str, Value]) -> list[list[ast.stmt]]:
        if not values:
            return []
        target = ast.Attribute(ast.Name("os", ast.Load()), "environ", ast.Load())
        assigned: list[ast.stmt] = [
            ast.Assign([ast.Subscript(target, ast.Constant(name), ast.Store())], value.node())
            for name, value in sorted(values.items())
        ]
        return [[ast.Import([ast.alias("os")])], assigned]

    def change(self, slot: str, choice: Value | None) -> str:
        variable = slot.removeprefix(self.prefix)
        return f"unset {variable} in the environment" if choice is None else f"set {variable}={choice.source()}"


FIELD, PARAMETER, ENVIRONMENT = Field(), Parameter(), Environment()
# Every kind of trigger, in the order a name is offered as each and a program reports their values. A new kind is
# a class above and its place here (and in SHORTENED when a found program may do without its values).
KINDS: tuple[Kind, ...] = (FIELD, ENVIRONMENT, PARAMETER)
SHORTENED: tuple[Kind, ...] = (PARAMETER, FIELD)  # in turn (the environment a search set is kept as found)


def kind_of(slot: str) -> Kind:
    """The kind a slot is of: the one whose prefix it starts with (the longest: a plain name is a Field's)."""
    return max((kind for kind in KINDS if slot.startswith(kind.prefix)), key=lambda kind: len(kind.prefix))


def values_of(trial: Trial, kind: Kind) -> dict[str, Value]:
    """A kind's part of a try."""
    values: dict[str, Value] = getattr(trial, kind.part)
    return values


def setting(trial: Trial, slot: str) -> Value | None:
    """What a try sets a slot to (None: left at its default)."""
    kind = kind_of(slot)
    path = kind.path(slot)
    current = values_of(trial, kind).get(path[0])
    if len(path) == 1:
        return current
    return current.arguments.get(path[1]) if isinstance(current, Call) else None


def settled(choices: Choices, trial: Trial, slot: str, choice: Value | None) -> Trial:
    """A try with one slot set (None: left at its default). A sub-config not given yet is built from its setup
    (the same try, when its class cannot be told)."""
    kind = kind_of(slot)
    values = dict(values_of(trial, kind))
    path = kind.path(slot)
    if len(path) == 1:
        if choice is None:
            values.pop(path[0], None)
        else:
            values[path[0]] = choice
        return dataclasses.replace(trial, **{kind.part: values})
    holder, inner = path[0], path[1]
    current = values.get(holder)
    if not isinstance(current, Call):
        owner = choices.config_of(kind.annotations(choices).get(holder), holder)
        if owner is None:
            return trial
        current = Call(owner.__name__, choices.setup(owner, time.monotonic() + explore_choices.TRY_SECONDS))
    sub = dict(current.arguments)
    if choice is None:
        sub.pop(inner, None)
    else:
        sub[inner] = choice
    values[holder] = Call(current.name, sub)
    return dataclasses.replace(trial, **{kind.part: values})

# Explore's choices: the values a search tries for an argument, by what its annotation allows (one table, a row
# per kind of type), those the catalog's conditions compare the field with first; and the arguments with which a
# class builds at all (its setup). Each build is one watched try (a time limit, a tracer). The standard library
# only (runs in the runtime, beside child.py).
from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import enum
import functools
import importlib
import inspect
import itertools
import re
import signal
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import explore_models, explore_source, explore_target, explore_values
else:  # run beside child.py in a runtime, from its folder
    explore_models = importlib.import_module("explore_models")
    explore_source = importlib.import_module("explore_source")
    explore_target = importlib.import_module("explore_target")
    explore_values = importlib.import_module("explore_values")
Call = explore_values.Call
Src = explore_values.Src
Value = explore_values.Value

TRY_SECONDS = 3  # one try's time limit (a try that reaches for the network is stopped)
_SETUP_TRIES = 300  # tries to find arguments a class builds with
_NUMBERS = [0, 1, 2, -1, 3, 4, 8, 16, 1024, 4096]


class Stop(Exception):
    """A try ran out of time."""


def _alarm(signum: int, frame: Any) -> None:
    raise Stop


@contextlib.contextmanager
def watched(tracer: Any) -> Iterator[None]:
    """One try: traced by `tracer`, stopped (`Stop`) past its time limit."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TRY_SECONDS)
    sys.settrace(tracer)  # (None: a try not traced)
    try:
        yield
    finally:
        sys.settrace(None)
        signal.alarm(0)


@dataclasses.dataclass(frozen=True)
class _Asked:
    """An argument's type, as a row of the table reads it, with the name it goes by and how deep in a list."""

    kind: Any
    origin: Any
    args: tuple[Any, ...]
    name: str
    deadline: float
    depth: int


class Choices:
    """What a search may try: for each argument of the class built or the function called, the values its type
    allows; for each class, the arguments it builds with. Classes used are bound in the search's bindings."""

    def __init__(
        self,
        target: explore_target.Target,
        spec: explore_target.Spec,
        bindings: explore_values.Bindings,
        budget: explore_target.Budget,
    ) -> None:
        self.target = target
        self.bindings = bindings
        self.budget = budget
        self.vocabulary = spec.vocabulary
        self.constants = [Src(text) for text in spec.constants]
        # The constants the function writes (`{"all", "none"}`), after those of the conditions.
        known = {c.text for c in self.constants}
        written = explore_source.constants_in(target.file, target.line)
        self.constants += [Src(t) for t in written if t not in known]
        parsed, namespace = target.parsed, bindings.namespace
        self.compared = {
            name: [Src(text) for text in texts]
            for name, texts in explore_source.compared_with(parsed, namespace).items()
        }
        looked = [Src(text) for text in explore_source.looked_for(parsed, namespace)]
        self.constants += [c for c in looked if c not in self.constants]
        self.setups: dict[type, dict[str, Value]] = {}
        self.said = ""  # what the last build raised

    def parameters(self) -> dict[str, Any]:
        """The parameters of what is called with the searched ones (the method, the module's function), by name."""
        if self.target.callee is None:
            return {}
        annotated = explore_values.hints(self.target.callee)
        return {
            name: annotated.get(name, Any)
            for name, p in inspect.signature(self.target.callee).parameters.items()
            if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    def required(self, deadline: float) -> dict[str, list[Value]]:
        """The parameters what is called cannot be called without, each with its values."""
        if self.target.callee is None:
            return {}
        out = {}
        for name, parameter in inspect.signature(self.target.callee).parameters.items():
            if (
                name != "self"
                and parameter.default is inspect.Parameter.empty
                and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
            ):
                out[name] = self.choices(self.parameters()[name], name, deadline) or [Src("None")]
        return out

    def choices(self, kind: Any, name: str, deadline: float, depth: int = 0, owner: type | None = None) -> list[Value]:
        """The values to try for an argument of this type, as source: those the catalog's conditions compare
        this field with first."""
        out: list[Value] = []
        known = [Src(text) for text in self.vocabulary.get(f"{owner.__name__}.{name}", [])] if owner else []
        known += self.compared.get(name, [])
        # Last, for a text: the texts the catalog compares any field of its class with (`'ngram'`, a method's
        # name, may be what a `model` takes too).
        texts = str in typing.get_args(kind) or kind is str
        prefix = f"{owner.__name__}." if owner else "\0"
        tail = [Src(t) for key, values in self.vocabulary.items() if key.startswith(prefix) for t in values]
        tail = tail if texts else []
        for value in [*known, *self.by_type(kind, name, deadline, depth), *(t for t in tail if t.text[:1] in "'\"")]:
            if value not in out:
                out.append(value)
        return out[:40]

    def by_type(self, kind: Any, name: str, deadline: float, depth: int) -> list[Value]:
        """The values a type allows: those of the first row of _BY_TYPE that reads it."""
        asked = _Asked(kind, typing.get_origin(kind), typing.get_args(kind), name, deadline, depth)
        for reads, offer in _BY_TYPE:
            if reads(asked):
                return offer(self, asked)
        raise AssertionError("the table's last row reads every type")

    def numbers(self) -> list[int | float]:
        """The numbers the conditions and the function name."""
        return [n for c in self.constants if (n := explore_values.number(c.text)) is not None]

    def strings(self) -> list[Src]:
        """The texts the conditions and the function name."""
        return [c for c in self.constants if c.text[:1] in "'\""]

    def bare(self, cls: type) -> bool:
        """Whether a class builds with no arguments (a library's config object: `PretrainedConfig()`)."""
        try:
            with watched(None):
                cls()
        except BaseException:
            return False
        self.bindings.note(cls)
        return True

    @functools.cache  # noqa: B019 (one search, one Choices)
    def package_configs(self) -> list[type]:
        """A few config classes of the raise's package that build with no arguments: what a function that takes
        any config (`config: ConfigT`, `cls: type[...]`) is given."""
        module = self.target.module
        package = module.__name__.rpartition(".")[0] or module.__name__
        found = {
            value
            for loaded in list(sys.modules.values())
            if getattr(loaded, "__name__", "").startswith(f"{package}.")
            for value in vars(loaded).values()
            if inspect.isclass(value)
            and explore_values.config_class(value) is value
            and value.__module__.startswith(f"{package}.")
        }
        out: list[type] = []
        for config in sorted(found, key=lambda c: (c.__name__, c.__module__)):
            if len(out) >= 3:
                break
            if not explore_values.required(config) and self.bare(config):
                out.append(config)
        return out

    def config_of(self, kind: Any, name: str) -> type | None:
        """The sub-config class an argument takes: from its annotation, or from its name when it has none."""
        config = explore_values.config_class(kind)
        if config is None and (kind is Any or kind is None or isinstance(kind, str)):
            config = explore_values.config_class(
                explore_values.lookup(explore_values.camel(name), self.target.module.__name__.partition(".")[0])
            )
        if config is not None:
            self.bindings.bind(config)
        return config

    def setup(self, cls: type, deadline: float) -> dict[str, Value]:
        """Arguments with which a class builds at all (none, most often; a model folder for one that needs a
        model; a device where the platform is not known; several, where its own checks call for them): one
        argument at a time, a change kept when more of the class's own code runs."""
        if cls in self.setups:
            return self.setups[cls]
        self.bindings.bind(cls)
        arguments = explore_values.fields(cls)
        current: dict[str, Value] = {}  # the arguments without a default: their first value
        for name in explore_values.required(cls):
            values = self.choices(arguments.get(name, Any), name, deadline, owner=cls) if name in arguments else []
            current[name] = values[0] if values else Src("None")
        self.setups[cls] = current
        best = self._builds(cls, current)
        said = self.said
        candidates: list[tuple[str, Value]] = []
        for name, kind in arguments.items():
            for choice in self.choices(kind, name, deadline, owner=cls):
                candidates.append((name, choice))
                if isinstance(choice, Call):  # a sub-config: each of its Literal-valued arguments in turn
                    for inner, inner_kind in explore_values.fields(self.bindings.namespace[choice.name]).items():
                        if typing.get_origin(inner_kind) is typing.Literal:
                            candidates += [
                                (name, Call(choice.name, {**choice.arguments, inner: value}))
                                for value in self.choices(inner_kind, inner, deadline)
                            ]
        tries = 0
        improved = True
        while not best[0] and improved:
            improved = False
            for name, choice in named_first(candidates, said):
                if self.budget.over(deadline) or tries > _SETUP_TRIES:
                    return current
                if current.get(name) == choice:
                    continue
                tries += 1
                trial = {**current, name: choice}
                self.said = ""
                scored = self._builds(cls, trial)
                if scored > best:  # kept; the next pass starts with what its error names
                    current, best, improved, said = trial, scored, True, self.said
                    self.setups[cls] = current
                    break
        return current

    def _builds(self, cls: type, arguments: dict[str, Value]) -> tuple[bool, int]:
        """Whether a class builds with these arguments, and how many lines of its own file ran trying."""
        files = {inspect.getsourcefile(klass) for klass in cls.__mro__ if klass.__module__ == cls.__module__}
        ran: set[tuple[str, int]] = set()

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                ran.add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
            return local if frame.f_code.co_filename in files else None

        try:
            with watched(tracer):
                cls(**{k: self.bindings.value(v) for k, v in arguments.items()})
            return True, len(ran)
        except BaseException as error:
            self.said = str(error)
            return False, len(ran)


def named_first(items: list[tuple[str, Any]], said: str, *, only: bool = False) -> list[tuple[str, Any]]:
    """Slots whose name the last error names first (`num_speculative_tokens must be provided ...`, or as its
    initials: `tp_size` for `tensor_parallel_size`); with `only`, those alone."""
    words = set(re.findall(r"\w+", said))

    def named(slot: str) -> bool:
        name = slot.rpartition(".")[2]
        parts = name.split("_")
        return name in words or (len(parts) > 2 and "".join(p[:1] for p in parts[:-1]) + "_" + parts[-1] in words)

    if only:
        return [item for item in items if named(item[0])]
    return sorted(items, key=lambda item: not named(item[0]))


# The values each kind of type allows, as rows (reads, offers), the first row that reads a type answers for it;
# a new kind of type is one row here.
def _nothing(choices: Choices, asked: _Asked) -> list[Value]:
    return [Src("None")]


def _inner(choices: Choices, asked: _Asked) -> list[Value]:  # Annotated[X, ...]: X's
    return choices.by_type(asked.args[0], asked.name, asked.deadline, asked.depth)


def _bound(choices: Choices, asked: _Asked) -> list[Value]:  # a TypeVar: its bound's, or any value
    return choices.by_type(asked.kind.__bound__ or Any, asked.name, asked.deadline, asked.depth)


def _classes(choices: Choices, asked: _Asked) -> list[Value]:  # type[...]: the package's configs
    return [choices.bindings.constant(config) for config in choices.package_configs()]


def _union(choices: Choices, asked: _Asked) -> list[Value]:
    inner = [
        c
        for a in asked.args
        if a is not type(None)
        for c in choices.by_type(a, asked.name, asked.deadline, asked.depth)
    ]
    return inner + ([Src("None")] if type(None) in asked.args else [])


def _literal(choices: Choices, asked: _Asked) -> list[Value]:
    return [choices.bindings.constant(a) for a in asked.args]


def _bool(choices: Choices, asked: _Asked) -> list[Value]:
    return [Src("True"), Src("False")]


def _int(choices: Choices, asked: _Asked) -> list[Value]:  # the numbers named and their neighbours, a few more
    around = [n for value in choices.numbers() for n in _around(value) if isinstance(n, int)]
    return [Src(repr(n)) for n in [*around, *_NUMBERS]]


def _float(choices: Choices, asked: _Asked) -> list[Value]:
    around = [float(n) for value in choices.numbers() for n in _around(value)]
    return [Src(repr(n)) for n in [*around, 0.0, 1.0, 0.5, -1.0, 2.0]]


def _str(choices: Choices, asked: _Asked) -> list[Value]:
    name = asked.name
    folders = ("model" in name or "tokenizer" in name) and not name.endswith("_type")  # (`model_type`: no)
    model = [Src(folder) for folder in explore_models.TINY_MODELS] if folders else []
    # A function given a config and a name (`get_field(cls, name)`) may want a name of its fields.
    configs = choices.package_configs()[:1] if choices.target.cls is None else []
    named = [Src(repr(f)) for c in configs for f in explore_values.fields(c)][:5]
    return [*model, *choices.strings(), Src("'x'"), Src("''"), *named]


def _enum(choices: Choices, asked: _Asked) -> list[Value]:  # (and a name that is none: a validator may read one)
    return [*(choices.bindings.constant(member) for member in asked.kind), Src("'x'")]


def _collection(choices: Choices, asked: _Asked) -> list[Value]:
    kind, origin, depth = asked.kind, asked.origin, asked.depth
    element = asked.args[0] if asked.args else Any
    inner = choices.by_type(element, asked.name, asked.deadline, depth + 1)[:10] if depth < 2 else []
    empty = {list: "[]", tuple: "()", set: "set()", frozenset: "frozenset()"}.get(origin or kind, "[]")
    opened, closed = {tuple: ("(", ",)")}.get(origin or kind, ("[", "]"))
    plain = [v for v in inner if isinstance(v, Src)]
    pairs = [Src(f"[{a.text}, {b.text}]") for a, b in itertools.pairwise(plain)][:6]
    return [Src(empty), *(Src(f"{opened}{v.text}{closed}") for v in plain), *pairs]


def _mapping(choices: Choices, asked: _Asked) -> list[Value]:
    keyed = [Src(f"{{{c.text}: {v}}}") for c in choices.strings()[:4] for v in ("1", "'x'")]  # (`.get("device")`)
    return [Src("{}"), *(c for c in choices.constants if c.text.startswith("{")), *keyed, Src("{'x': 1}")]


def _other(choices: Choices, asked: _Asked) -> list[Value]:
    """A sub-config (by its annotation, or by its name where it has none), another class built bare, or anything:
    a few values, and a config of the package built bare (first for a parameter named a config)."""
    kind, name, depth = asked.kind, asked.name, asked.depth
    config = choices.config_of(kind, name)  # (not annotated, or `X = Any` outside type checks: by its name)
    if config is not None and depth < 1:
        return [Call(config.__name__, choices.setup(config, asked.deadline))]
    if inspect.isclass(kind) and kind is not Any and choices.bare(kind):
        return [Call(kind.__name__, {})]
    anything: list[Value] = [*choices.constants, Src("None"), Src("1"), Src("'x'"), Src("True")]
    if kind is Any and depth < 1:
        configs: list[Value] = [Call(config.__name__, {}) for config in choices.package_configs()]
        return [*configs, *anything] if "config" in name.split("_") else [*anything, *configs]
    return anything


def _around(value: int | float) -> list[int | float]:
    step = 1 if isinstance(value, int) else 0.5
    return [value, value + step, value - step]


_COLLECTIONS = (list, tuple, set, frozenset)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_BY_TYPE: tuple[tuple[Callable[[_Asked], bool], Callable[[Choices, _Asked], list[Value]]], ...] = (
    (lambda a: a.kind is type(None) or a.kind is None, _nothing),
    (lambda a: a.origin is typing.Annotated, _inner),
    (lambda a: isinstance(a.kind, typing.TypeVar), _bound),
    (lambda a: a.origin is type or a.kind is type, _classes),
    (lambda a: a.origin in (typing.Union, types.UnionType), _union),
    (lambda a: a.origin is typing.Literal, _literal),
    (lambda a: a.kind is bool, _bool),
    (lambda a: a.kind is int, _int),
    (lambda a: a.kind is float, _float),
    (lambda a: a.kind is str, _str),
    (lambda a: inspect.isclass(a.kind) and issubclass(a.kind, enum.Enum), _enum),
    (lambda a: a.origin in _COLLECTIONS or a.kind in (list, tuple, set), _collection),
    (lambda a: a.origin in _MAPPINGS or a.kind is dict, _mapping),
    (lambda a: True, _other),
)

# Explore's target: a search's spec as the extractor sends it, read as data the search may act on (Spec), what it
# names in the runtime (Target: the module, the class built, the function that raises, the raise's path as the
# runtime's source writes it), and the tries it may spend (Budget). The standard library only (runs in the runtime).
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import time
import traceback
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import explore_source, explore_values, programs
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")
    explore_source = importlib.import_module("explore_source")
    explore_values = importlib.import_module("explore_values")

_TRIES = 800  # tries of one search (not counting those that find arguments a class builds with)


@dataclasses.dataclass(frozen=True)
class Step:
    """A condition on the raise's path: its line, its test (the catalog's text), whether the raise needs it true."""

    line: int
    test: str
    want: bool


@dataclasses.dataclass(frozen=True)
class Spec:
    """What the runtime's search needs for a record (see verify._spec), read as data: where it raises, the path to
    it, what its conditions read and compare with."""

    module: str  # a module of the package
    cls: str | None  # the class built (None: the raise's function, a function of the module, is called)
    method: str | None  # the method that holds the check (None: building the class raises)
    function: str  # the name of the raise's function
    file: str  # the raise's file, below the package's folder's parent
    line: int  # the raise's line
    path: tuple[Step, ...]
    names: tuple[str, ...]  # the fields and parameters the conditions read
    words: str  # of its conditions and its message
    constants: tuple[str, ...]  # the values the conditions name, as source
    vocabulary: dict[str, list[str]]  # "Class.field" -> the values the catalog compares it with, as source
    base: dict[str, str]  # arguments found on paper, as source
    tries: int = _TRIES
    budget: float = 5  # seconds, a guard

    @classmethod
    def read(cls, data: dict[str, Any], roots: list[str]) -> Spec:
        """A spec as data the search may act on: its module one of the package's (a dotted path), its class, method
        and function names, its target a path inside the package, its texts values programs.expression allows (the
        others left out); programs.Refused otherwise."""
        module = programs.module_path(str(data["module"]))
        if module.partition(".")[0] not in {os.path.basename(root) for root in roots}:
            raise programs.Refused(f"{module} is not a module of the package")
        for key in ("cls", "method", "function"):
            if data.get(key) is not None and not programs.is_name(data[key]):
                raise programs.Refused(f"the {key} {data[key]!r} is not a Python name")
        target = str(data["target"][0])
        if os.path.isabs(target) or ".." in target.split("/"):
            raise programs.Refused(f"{target!r} is not a path inside the package")
        return cls(
            module=module,
            cls=data.get("cls") or None,
            method=data.get("method"),
            function=data["function"],
            file=target,
            line=int(data["target"][1]),
            path=tuple(Step(int(line), test, bool(want)) for line, test, want in data["path"]),
            names=tuple(name for name in data.get("names") or [] if _named(name)),
            words=str(data.get("words") or ""),
            constants=tuple(text for text in data.get("constants") or [] if _allowed(text)),
            vocabulary={
                key: [text for text in values if _allowed(text)]
                for key, values in (data.get("vocabulary") or {}).items()
            },
            base={name: text for name, text in (data.get("base") or {}).items() if _named(name) and _allowed(text)},
            tries=int(data.get("tries") or _TRIES),
            budget=float(data.get("budget") or 5),
        )


def _allowed(text: object) -> bool:
    try:
        programs.expression(str(text))
    except programs.Refused:
        return False
    return isinstance(text, str)


def _named(name: object) -> bool:
    return isinstance(name, str) and all(programs.is_name(part) for part in name.split("."))


@dataclasses.dataclass
class Budget:
    """The tries a search may make: a count, so that a run finds what the last one found; its time, as a guard."""

    limit: int
    tries: int = 0

    def over(self, deadline: float) -> bool:
        """Whether the search has had its tries, or, as a guard, its time."""
        return self.tries >= self.limit or time.monotonic() > deadline

    def more(self, count: int) -> None:
        """Tries of their own for what comes next (the program made short, its fixes)."""
        self.limit = self.tries + count


class Target:
    """What one search reaches for in the runtime: the module, the class built and the method that holds the check
    (or the function called directly), the raise's file and line, and its path's tests as the runtime's own source
    writes them (the catalog's text only where the source has none, evaluated as data: see explore_source)."""

    def __init__(self, spec: Spec, roots: list[str]) -> None:
        self.module = importlib.import_module(spec.module)
        self.cls: type | None = getattr(self.module, spec.cls) if spec.cls else None
        self.method = spec.method if self.cls is not None else None
        self.function = spec.function
        # What is called with the searched parameters: the method, the module's function, or nothing.
        self.callee: Any = (
            getattr(self.module, self.function) if self.cls is None
            else getattr(self.cls, self.method) if self.method is not None else None
        )  # fmt: skip
        # The class built before the call (None: a function, or a static or class method: called on the class).
        unbound = self.cls is not None and explore_values.unbound(self.cls, self.method)
        self.holder = self.cls if self.cls is not None and not unbound else None
        self.file = explore_source.located(spec.file, roots)
        self.line = spec.line
        self.path = spec.path
        self.roots = roots
        self.parsed = {step.line: explore_source.operands(self.file, step.line, step.test) for step in self.path}
        self.steps = [step.line for step in self.path] + [self.line]  # (the raise's own line last)
        self.spans = explore_source.path_spans(self.file, self.steps)

    @property
    def name(self) -> str:
        """The name a program imports it by: the class's, or the function's."""
        return self.cls.__name__ if self.cls is not None else self.function

    def raised_here(self, error: BaseException | None) -> bool:
        """Whether an error (or one it wraps) was raised at the target: its innermost frame in the package."""
        if error is None:
            return False
        for inner in (*wrapped(error), error):
            frames = [f for f in _frames(inner) if any(f.filename.startswith(root + os.sep) for root in self.roots)]
            if frames and frames[-1].filename == self.file and frames[-1].lineno == self.line:
                return True
        return False


def _frames(error: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(error.__traceback__))


def wrapped(error: BaseException) -> list[BaseException]:
    """What an error wraps: pydantic's ValidationError holds the errors its validators raised; a cause."""
    inner: list[BaseException] = []
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        with contextlib.suppress(Exception):
            found = [(e.get("ctx") or {}).get("error") for e in errors()]
            inner += [e for e in found if isinstance(e, BaseException)]
    if error.__cause__ is not None:
        inner.append(error.__cause__)
    return inner

"""An independent checker: run each raise's message with stand-in values and compare `str(exc)` with its record.

For every site the scanner found in a file, the checker finds the raise statement, runs the simple
statements that precede it on its way from the function body (assignments, `+=`, `x.append(...)`;
compound statements are skipped, but for the first or the last branch of an `if`, in two passes) with every unknown name
bound to a stand-in, builds the exception the way Python would (the builtin class, or a plain
`Exception` subclass for a class the codebase does not give its own `__init__`/`__str__`), and checks
that the record's `messagePattern` fullmatches `str(exc)`, for plain values, values holding quotes,
newlines, braces and `%`, and numbers; and that each placeholder's group gives back its value.
Nothing here imports the extractor's template code: it only reads the records.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import errno
import gc
import itertools
import operator
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType, SimpleNamespace
from typing import Any, SupportsIndex

from extractor.model.records import Site, SkippedSite

_SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in [
        "str",
        "repr",
        "int",
        "float",
        "len",
        "type",
        "list",
        "tuple",
        "dict",
        "set",
        "frozenset",
        "sorted",
        "min",
        "max",
        "sum",
        "any",
        "all",
        "bool",
        "hex",
        "oct",
        "bin",
        "ord",
        "chr",
        "format",
        "isinstance",
        "issubclass",
        "enumerate",
        "zip",
        "map",
        "filter",
        "reversed",
        "abs",
        "round",
        "hash",
        "iter",
        "next",
        "callable",
        "divmod",
        "bytes",
        "bytearray",
        "ascii",
        "slice",
        "object",
        "getattr",
        "hasattr",
        "True",
        "False",
        "None",
    ]
}
_SAFE_BUILTINS.update(
    {name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, BaseException)}
)
_NAMED = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__forward_arg__"})
# A translation call gives back its text in the source language, as when no catalog is installed.
_TRANSLATIONS = {name: (lambda text: text) for name in ("_", "gettext", "gettext_lazy", "ugettext", "lazy_gettext")}
_MODULES = {**_TRANSLATIONS, "errno": errno, "os": SimpleNamespace(path=os.path, sep=os.sep, linesep=os.linesep)}


class Text(str):
    """A stand-in string: any attribute, item or call of it is a stand-in too."""

    def __getattr__(self, name: str) -> Text:
        if name.startswith("__") and name not in _NAMED:
            raise AttributeError(name)
        return Text(f"{self}_{name.strip('_')}")

    def __call__(self, *args: object, **kwargs: object) -> Text:
        return Text(f"{self}_c")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int | slice):
            return str.__getitem__(self, key)
        return Text(f"{self}_i")

    def __mul__(self, count: SupportsIndex) -> str:
        # `size * 1024**3` with a text for a number: a gigabyte string, which a test run must not build.
        if operator.index(count) * len(self) > 1_000_000:
            raise MemoryError("a stand-in text repeated past a million characters")
        return str.__mul__(self, count)

    __rmul__ = __mul__


class Number(int):
    """A stand-in number."""

    def __getattr__(self, name: str) -> Number:
        if name.startswith("__") and name not in _NAMED:
            raise AttributeError(name)
        return Number(int(self) + 1)

    def __call__(self, *args: object, **kwargs: object) -> Number:
        return Number(int(self) + 2)

    def __getitem__(self, key: object) -> Number:
        return Number(int(self) + 3)

    def __iter__(self) -> Iterator[Number]:
        raise TypeError("a number is not iterable")


def _plain(name: str) -> Any:
    return Text(f"{name}1")


def _tricky(name: str) -> Any:
    return Text(f"{name}'q\"\n{{}}%s")


def _number(name: str) -> Any:
    return Number(7 + len(name))


VARIANTS = {"plain": _plain, "tricky": _tricky, "number": _number}


class _Names(dict[str, Any]):
    def __init__(self, make: Any) -> None:
        super().__init__()
        self.make = make
        self.failed: set[str] = set()

    def __missing__(self, name: str) -> Any:
        if name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        if name in _MODULES:
            return _MODULES[name]
        value = self[name] = self.make(name)
        return value


@dataclass
class Tally:
    """What the checker found over a body of code."""

    raises: int = 0
    accounted: int = 0  # raise statements that are a record or a named skip
    records: int = 0
    evaluable: int = 0
    fullmatch: int = 0
    values_checked: int = 0
    values_right: int = 0
    not_evaluable: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("raises", "accounted", "records", "evaluable", "fullmatch", "values_checked", "values_right"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.not_evaluable.update(other.not_evaluable)
        self.failures += other.failures


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector while many parsed trees are alive: they hold no cycles that need it, and
    each full collection would walk all of them (it halves the real codebases' check)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def statements(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.AST]]:
    """Every statement, exception handler and match case under `tree`, each with its parent. A statement
    only ever sits in a list of statements, handlers or cases (never inside an expression), so this finds
    every `raise` and `class` and the way down to each, without visiting the expressions (`ast.walk`
    would, at ten times the cost)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                        yield child, node
                        todo.append(child)


def own_classes(trees: list[ast.Module]) -> set[str]:
    """Names of the classes a codebase defines with their own `__init__`, `__str__` or `__repr__`."""
    return {
        node.name
        for tree in trees
        for node, _ in statements(tree)
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(item, ast.FunctionDef) and item.name in ("__init__", "__str__", "__repr__", "__new__")
            for item in node.body
        )
    }


def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    """The parent of each statement, handler and match case (all `_before` climbs through from a raise)."""
    return {id(child): node for child, node in statements(tree)}


def _before(raise_: ast.Raise, parents: dict[int, ast.AST], *, enter_ifs: str) -> Iterator[ast.stmt]:
    """The simple statements run before the raise on its way down from the function body, in order."""
    path: list[ast.AST] = [raise_]
    node: ast.AST = raise_
    while id(node) in parents and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        node = parents[id(node)]
        path.append(node)
    path.reverse()
    for outer, inner in itertools.pairwise(path):
        for body in ("body", "orelse", "finalbody", "handlers"):
            statements = getattr(outer, body, None)
            if isinstance(statements, list) and inner in statements:
                for statement in statements[: statements.index(inner)]:
                    yield from _simple(statement, enter_ifs=enter_ifs)


def _simple(statement: ast.stmt, *, enter_ifs: str) -> Iterator[ast.stmt]:
    """The statement if simple; an `if`'s first or last branch when `enter_ifs` says so."""
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr):
        yield statement
    elif enter_ifs and isinstance(statement, ast.If):
        for inner in statement.body if enter_ifs == "body" else statement.orelse:
            yield from _simple(inner, enter_ifs=enter_ifs)


def _class_named(name: str, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()) -> type | None:
    """The class `name` is in a module whose own classes are `classes`: one of them (made for real from its
    base, when that is a single name: the builtin it derives from decides its `str()`), a builtin, or None."""
    node = classes.get(name)
    if node is not None:
        if name in seen or len(node.bases) != 1 or not isinstance(node.bases[0], ast.Name):
            return type(name, (Exception,), {})
        base = _class_named(node.bases[0].id, classes, seen | {name}) or Exception
        try:
            return type(name, (base,), {})
        except TypeError:  # not a class one can derive from
            return type(name, (Exception,), {})
    known = getattr(builtins, name, None)
    return known if isinstance(known, type) and issubclass(known, BaseException) else None


def _exception(
    node: ast.Raise, names: _Names, own: set[str], codes: _Codes, classes: dict[str, ast.ClassDef]
) -> BaseException | str:
    """Build the raised exception with stand-ins, or say why it cannot be. `classes` are the module's own."""
    exc = node.exc
    assert exc is not None
    if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Attribute) and exc.func.attr == "with_traceback":
        exc = exc.func.value
    if isinstance(exc, ast.Call) and any(isinstance(arg, ast.Starred) for arg in exc.args):
        return "unpacked arguments"
    used = {n.id for n in ast.walk(exc) if isinstance(n, ast.Name)}
    if used & names.failed:
        return "a statement before it cannot run with stand-ins"
    target = exc.func if isinstance(exc, ast.Call) else exc
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    if name in own:
        return "a class with its own constructor or __str__"
    known = getattr(builtins, name or "", None)
    cls = _class_named(name, classes) if name else None
    cls = cls if cls is not None else type(str(name), (Exception,), {})
    if not isinstance(exc, ast.Call):
        return cls()
    if exc.keywords and cls is not known:
        return "keyword arguments to an unknown constructor"
    names["__cls__"] = cls
    try:
        code = codes.get(id(exc))
        if code is None:
            call = ast.Call(func=ast.Name("__cls__", ast.Load()), args=exc.args, keywords=exc.keywords)
            expression = ast.fix_missing_locations(ast.Expression(ast.copy_location(call, exc)))
            code = codes[id(exc)] = compile(expression, "<raise>", "eval")
        value = eval(code, {"__builtins__": _SAFE_BUILTINS}, names)
    except Exception as error:
        return f"cannot evaluate: {type(error).__name__}"
    return value if isinstance(value, BaseException) else "not an exception"


# Code compiled from a file's nodes, by node id (while the file's tree lives): each site runs the same
# statements once per stand-in variant and pass, and the module's constants before each of its sites.
_Codes = dict[int, CodeType]


def _run(statements: list[ast.stmt], names: _Names, codes: _Codes) -> None:
    for statement in statements:
        try:
            code = codes.get(id(statement))
            if code is None:
                module = ast.fix_missing_locations(ast.Module([statement], type_ignores=[]))
                code = codes[id(statement)] = compile(module, "<before>", "exec")
            exec(code, {"__builtins__": _SAFE_BUILTINS}, names)
        except Exception:  # what it would have bound or changed is unknown from here on
            names.failed |= _changed(statement)


def _no_value(site: Site, start: int) -> bool:
    """Tell whether a placeholder has no value to compare: it may not print on this path (an optional
    item, another branch), or it sits inside a string the class prints with `repr` (an element of the
    tuple several arguments print as, a KeyError's argument), where its value is printed escaped."""
    if {"optional-items", "one-of-branches"} & set(site.extraction.warnings):  # maybe not printed on this path
        return True
    if "args-not-formatted" not in site.extraction.warnings and site.errorClass != "KeyError":
        return False
    whole_element = site.errorMessage[max(0, start - 2) : start] in ("(", ", ")
    return not whole_element and not (start == 0 and site.errorMessage[:1] == "{")


def _changed(statement: ast.stmt) -> set[str]:
    """The names a statement binds, or (a call, an augmented assignment) may change in place."""
    if isinstance(statement, ast.Expr | ast.AugAssign):
        return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _placeholder_value(text: str, names: _Names) -> str | None:
    if text.startswith("{{"):  # `{ {...} }`: a dict or set display is the expression
        text = "{ " + text[1:]
    try:
        return str(eval("f" + repr(text), {"__builtins__": _SAFE_BUILTINS}, names))
    except Exception:
        return None


def check_file(
    source: str,
    sites: list[Site],
    skipped: list[SkippedSite],
    own: set[str],
    label: str = "",
    tree: ast.Module | None = None,
) -> Tally:
    """Compare every site of one file with what Python prints; count its raise statements. `tree` is the
    source's, if already parsed."""
    tally = Tally()
    tree = ast.parse(source) if tree is None else tree
    lines = source.splitlines()
    raises = {}
    for node, _ in statements(tree):
        if isinstance(node, ast.Raise):
            column = len(lines[node.lineno - 1].encode()[: node.col_offset].decode())
            raises[(node.lineno, column)] = node
    tally.raises = len(raises)
    tally.accounted = len(sites) + len(skipped)
    parents = _parents(tree)
    codes: _Codes = {}
    # The module's own assignments of literals run first: the names a function reads from its module.
    classes = {statement.name: statement for statement in tree.body if isinstance(statement, ast.ClassDef)}
    constants: list[ast.stmt] = [
        statement
        for statement in tree.body
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
    ]
    for site in sites:
        tally.records += 1
        node = raises[(site.lineNumber, site.extraction.column)]
        outcome = _check_site(site, node, parents, own, constants, codes, classes)
        if isinstance(outcome, str):
            tally.not_evaluable[outcome] += 1
            continue
        tally.evaluable += 1
        matched, checked, right, failure = outcome
        tally.fullmatch += matched
        tally.values_checked += checked
        tally.values_right += right
        if failure:
            tally.failures.append(f"{label}:{site.lineNumber}: {failure}")
    return tally


def _check_site(
    site: Site,
    node: ast.Raise,
    parents: dict[int, ast.AST],
    own: set[str],
    module_constants: list[ast.stmt],
    codes: _Codes,
    classes: dict[str, ast.ClassDef],
) -> str | tuple[bool, int, int, str]:
    pattern = re.compile(site.messagePattern, re.S)
    evaluated = 0
    reason = ""
    checked = right = 0
    for variant, make in VARIANTS.items():
        for enter_ifs in ("orelse", "body"):
            names = _Names(make)
            _run(module_constants, names, codes)
            _run(list(_before(node, parents, enter_ifs=enter_ifs)), names, codes)
            exc = _exception(node, names, own, codes, classes)
            if isinstance(exc, str):
                reason = exc
                continue
            try:
                rendered = str(exc)
            except Exception as error:
                reason = f"str() fails: {type(error).__name__}"
                continue
            evaluated += 1
            found = pattern.fullmatch(rendered)
            if found is None:
                return False, checked, right, f"{site.errorMessage!r} !~ {rendered!r} ({variant})"
            if variant != "plain" or enter_ifs != "orelse":
                continue
            placeholders = site.extraction.placeholders
            run = ""  # what a run of touching placeholders printed so far (`{a}{b}`: one value, split anywhere)
            for index, placeholder in enumerate(placeholders):
                touching = (index and placeholders[index - 1].end == placeholder.start) or (
                    index + 1 < len(placeholders) and placeholders[index + 1].start == placeholder.end
                )
                value = found.group(placeholder.group)
                if touching:
                    printed = _placeholder_value(site.errorMessage[placeholder.start : placeholder.end], names)
                    run += printed if printed is not None else ""
                    end = placeholders[index + 1].start if index + 1 < len(placeholders) else len(site.errorMessage)
                    follow = site.errorMessage[placeholder.end : end]
                    if follow and follow in run + follow[:-1]:
                        break  # the run's text holds the text after it: every later split is a guess
                    if follow:
                        run = ""
                    continue
                if value is None or placeholder.debug or _no_value(site, placeholder.start):
                    continue
                expected = _placeholder_value(site.errorMessage[placeholder.start : placeholder.end], names)
                if expected is None:
                    continue
                end = placeholders[index + 1].start if index + 1 < len(placeholders) else len(site.errorMessage)
                follow = site.errorMessage[placeholder.end : end]
                if follow and follow in expected + follow[:-1]:
                    # The value holds the text after it: the split here, and so every later one, is a
                    # guess no pattern can avoid, not a defect.
                    break
                checked += 1
                right += value == expected
    if not evaluated:
        return reason or "cannot evaluate"
    failure = "" if checked == right else f"{site.errorMessage!r}: a placeholder's value is not what it printed"
    return True, checked, right, failure


def check_tree(files: dict[str, str]) -> Tally:
    """Scan every file of a codebase (path -> source) with every class in scope and check its records."""
    from extractor.scanning.scan import Scanned, ScanOptions, scan

    with collector_paused():
        trees = {}
        for path, source in files.items():
            try:
                trees[path] = ast.parse(source)
            except (SyntaxError, ValueError):
                continue
        own = own_classes(list(trees.values()))
        tally = Tally()
        for path in sorted(trees):
            result = scan(files[path].encode(), options=ScanOptions(exceptions=("*",)))
            if not isinstance(result, Scanned):
                continue
            tally.add(check_file(files[path], list(result.sites), list(result.skipped), own, path, trees[path]))
        # Freed before the collector wakes up, or its first collection would walk every tree still alive.
        trees.clear()
    return tally

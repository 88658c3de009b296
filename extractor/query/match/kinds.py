# Kinds: what a placeholder can print, read from what the catalog knows of it, and whether a paste's value is
# such a text.
#
# A template `sliding window {sliding_window}` explains "sliding window attention" only if its placeholder can
# print "attention"; the function's parameter is `sliding_window: int`, so it cannot. The kind of a placeholder
# comes from, in order: its format spec (`:d`, `:.2f`), its expression (`len(...)`, arithmetic on numbers), and
# the annotation of what it reads (a config field the catalog resolved, or a parameter of the raising function
# as its source shows it), with its conversion (`!r` of a str is a quoted text). What none of these tells is
# ANY. Both matchers read kinds alike: `ValueKind.to_json` is what the site's script reads, and the checks below are
# written in regular expressions both sides run alike (tests/test_find_parity.py).
from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extractor.model.records import CatalogLine, Placeholder

__all__ = [
    "KIND_STOPS",
    "KIND_TEXTS",
    "MAX_ENDS",
    "NONE_TOO",
    "SENTENCE",
    "Shape",
    "ValueKind",
    "fits",
    "fitting",
    "fitting_end",
    "kinds_of",
    "swallows",
]


class Shape(StrEnum):
    """What a placeholder's text looks like."""

    ANY = "any"
    INT = "int"  # digits, a sign (`-1`), `_` or `,` between them (`:,`)
    NUMBER = "number"  # an int or a float as Python prints one (`0.5`, `1e-05`, `inf`, `nan`)
    BOOL = "bool"
    QUOTED = "quoted"  # the repr of a str: in quotes
    CHOICE = "choice"  # one of a Literal's choices


# The texts each shape fullmatches (besides `None` for an Optional), as Python's `re` and JavaScript read alike.
KIND_TEXTS: dict[str, str] = {
    Shape.INT: r"[+-]?[0-9](?:[0-9_,]*[0-9])?",
    Shape.NUMBER: r"[+-]?(?:(?:[0-9](?:[0-9_,]*[0-9])?(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?|inf|nan)",
    Shape.BOOL: r"True|False",
    Shape.QUOTED: r"'[^'\n]*'|\"[^\"\n]*\"",
}
# Where a message's last value of a known kind may end before its line does (`num_videos=1', 'type': ...`): before
# one of these characters, at one of the first MAX_ENDS such places.
KIND_STOPS = " \t,;:.'\")]}`*"
MAX_ENDS = 32
# The shapes whose placeholder may print `None` even where its annotation does not say Optional.
NONE_TOO = [Shape.INT, Shape.NUMBER, Shape.BOOL]
# A sentence's end and the start of the next: a value of no known kind standing between two literal rows may
# not hold one (it would swallow a sentence of another message).
SENTENCE = r"[.!?][ \t\n\r]+[A-Z]"

_TEXTS = {shape: re.compile(text) for shape, text in KIND_TEXTS.items()}
_SENTENCE = re.compile(SENTENCE)


@dataclass(frozen=True, slots=True)
class ValueKind:
    """What one placeholder can print: a shape, whether `None` too, and a Literal's choices as printed."""

    shape: Shape = Shape.ANY
    none: bool = False
    choices: tuple[str, ...] = ()

    def to_json(self) -> list[Any]:
        return [str(self.shape), self.none, list(self.choices)]


ANY = ValueKind()


def fits(kind: ValueKind, value: str) -> bool:
    """Whether a placeholder of this kind can print `value` (as the paste shows it, stripped); any but a str's
    may print `None` (annotations leave Optional out often enough)."""
    if kind.shape is Shape.ANY or (value == "None" and (kind.none or kind.shape in NONE_TOO)):
        return True
    if kind.shape is Shape.CHOICE:
        return value in kind.choices
    return _TEXTS[kind.shape].fullmatch(value) is not None


def fitting(kind: ValueKind, value: str) -> str | None:
    """The longest start of a message's last value (up to its line's end) that a placeholder of this kind can
    print and after which the message can end: the value whole, or up to one of its first MAX_ENDS KIND_STOPS."""
    if kind.shape is Shape.ANY or fits(kind, value):
        return value
    ends: list[int] = []
    for at, char in enumerate(value):
        if char in KIND_STOPS:
            ends.append(at)
            if len(ends) == MAX_ENDS:
                break
    for end in reversed(ends):
        if end and fits(kind, value[:end]):
            return value[:end]
    return None


def fitting_end(kind: ValueKind, value: str) -> str | None:
    """The longest end of a message's first value (from where its line's text may start it) that a placeholder
    of this kind can print: the value whole, or from after one of its last MAX_ENDS KIND_STOPS (`Value error,
    2048/2048 transfers failed`)."""
    if kind.shape is Shape.ANY or fits(kind, value):
        return value
    starts: list[int] = []
    for at in range(len(value) - 1, -1, -1):
        if value[at] in KIND_STOPS:
            starts.append(at + 1)
            if len(starts) == MAX_ENDS:
                break
    for start in reversed(starts):
        if start < len(value) and fits(kind, value[start:]):
            return value[start:]
    return None


def swallows(value: str) -> bool:
    """Whether a value holds a sentence's end and the next one's start."""
    return _SENTENCE.search(value) is not None


def kinds_of(line: CatalogLine) -> tuple[ValueKind, ...]:
    """Each placeholder's kind, in message order."""
    extraction = line.extraction
    annotations: dict[str, str] = {}
    for ref in extraction.fields:  # (the config fields the catalog resolved, by the expression that reads them)
        if ref.resolved and ref.annotation:
            annotations.setdefault(ref.expression, ref.annotation)
    parameters = _parameters(line.record.sourceCode, extraction.function)
    return tuple(_kind(p, annotations, parameters) for p in extraction.placeholders)


def _kind(placeholder: Placeholder, annotations: dict[str, str], parameters: dict[str, str]) -> ValueKind:
    if placeholder.debug or placeholder.conversion == "a":
        return ANY
    spec = placeholder.formatSpec or ""
    if spec and ("{" in spec or spec[-1:] not in "dfeEgG%,_0123456789"):
        return ANY  # (a nested spec, hex, a string's alignment: not told here)
    if spec[-1:] == "d":
        return ValueKind(Shape.INT)
    if spec[-1:] in ("f", "e", "E", "g", "G", "%"):
        return ValueKind(Shape.NUMBER)
    try:
        tree = ast.parse(placeholder.expression, mode="eval").body
    except SyntaxError:
        return ANY
    shape = _expression(tree)
    if shape is not None:
        return ValueKind(shape)
    annotation = annotations.get(placeholder.expression)
    if annotation is None and isinstance(tree, ast.Name):
        annotation = parameters.get(tree.id)
    if annotation is None:
        return ANY
    kind = _annotated(annotation, repr if placeholder.conversion == "r" else str)
    if spec and kind.shape not in (Shape.INT, Shape.NUMBER):
        return ANY
    return kind


def _expression(tree: ast.expr) -> Shape | None:
    """The shape an expression prints as, when its form tells: `len(x)`, a number, arithmetic on numbers."""
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "len":
        return Shape.INT
    if isinstance(tree, ast.Constant) and type(tree.value) in (int, float):
        return Shape.INT if type(tree.value) is int else Shape.NUMBER
    if isinstance(tree, ast.BinOp):
        if isinstance(tree.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Pow)):  # (no str or list has them)
            return Shape.NUMBER
        if isinstance(tree.op, (ast.Add, ast.Mult)):
            sides = (_expression(tree.left), _expression(tree.right))
            if all(side in (Shape.INT, Shape.NUMBER) for side in sides):
                return Shape.NUMBER
    return None


_OPTIONAL = re.compile(r"^(?:Optional\[(.*)\]|(.*?)\s*\|\s*None|None\s*\|\s*(.*))$", re.S)


def _annotated(annotation: str, shown: Callable[[object], str] = str) -> ValueKind:
    """The kind an annotation's value prints as (`int`, `float | None`, `Literal["a", "b"]`), shown by `str` or
    (a `!r` conversion) `repr`: a str's repr is a text in quotes, a Literal's choices their reprs. A list's is
    not told (a user retyping `['A']` often leaves the brackets out)."""
    text = annotation.strip().strip("'\"")
    none = False
    optional = _OPTIONAL.match(text)
    if optional is not None:
        text = next(part for part in optional.groups() if part is not None).strip()
        none = True
    bare = text.rpartition(".")[2] if text.replace(".", "").isidentifier() else text
    if bare == "int":  # (an int, a float and a bool print alike by str and repr)
        return ValueKind(Shape.INT, none)
    if bare == "float":
        return ValueKind(Shape.NUMBER, none)
    if bare == "bool":
        return ValueKind(Shape.BOOL, none)
    literal = re.match(r"(?:typing\.)?Literal\[(.*)\]$", text, re.S)
    if literal is not None:
        try:
            values = ast.literal_eval(f"[{literal[1]}]")
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return ANY
        if values and all(isinstance(v, (str, int, bool)) or v is None for v in values):
            choices = tuple(shown(v) for v in values if v is not None)
            return ValueKind(Shape.CHOICE, none or None in values, choices)
    if bare == "str" and shown is repr:
        return ValueKind(Shape.QUOTED, none)
    return ANY


def _parameters(source: str, function: str) -> dict[str, str]:
    """The annotations of the raising function's parameters, as its source shows them (the record's
    surrounding lines hold its `def`), of the parameters not assigned again before the raise."""
    name = function.rpartition(".")[2]
    if not name or not source:
        return {}
    lines = source.split("\n")
    header = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*[\[(]")
    start = next((k for k, text in enumerate(lines) if header.match(text)), None)
    if start is None:
        return {}
    for end in range(start + 1, min(start + 40, len(lines)) + 1):
        text = textwrap.dedent("\n".join(lines[start:end]))
        try:
            tree = ast.parse(text + "\n    pass\n")
        except SyntaxError:
            continue
        defined = tree.body[0]
        if not isinstance(defined, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return {}
        arguments = defined.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        body = "\n".join(lines[end:])
        return {
            argument.arg: ast.unparse(argument.annotation)
            for argument in every
            if argument.annotation is not None
            and not re.search(rf"(?<![\w.]){re.escape(argument.arg)}\s*(?:[-+*/|&]?=(?!=)|:[^=\n]*=)", body)
        }
    return {}

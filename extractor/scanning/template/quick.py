# Quick: the commonest message expressions read without libcst, into the parts libcst's reading gives them.
"""A mirror of `cst`'s reading for the shapes most messages have, read from the text and Python's tree: it
spares a process libcst's import (a quarter of a second). Each function returns None (or leaves a shape)
where libcst must read the expression; tests/test_template.py holds what they give to what libcst's gives."""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from extractor.model.kinds import MessageKind
from extractor.scanning.source import node_source
from extractor.scanning.template.pattern import Hole, Part
from extractor.scanning.template.reading import TRANSLATORS, Reading, Unsupported, bare, render_text

__all__ = ["literal_parts", "literals", "not_text", "operation"]

# The commonest messages, read without libcst: string literals (implicitly concatenated, blanks between), each
# on one line, no bytes or triple quotes; an f-string's fields hold no backslash, comment or field in their
# spec, and no blank around their expression; a name or an attribute alone. Anything else is libcst's.
_TOKEN = re.compile(
    r"""(?P<prefix>(?i:fr|rf|[rfu])?)(?:"(?P<double>(?:[^"\\\n]|\\[^\n])*)"|'(?P<single>(?:[^'\\\n]|\\[^\n])*)')"""
    r"[ \t\n]*"
)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
# Where a field's expression may end, at its own bracket depth, and what may not be in it.
_BRACE = re.compile(r"[{}]")
_FIELD_STOP = re.compile(r"[][(){}'\"\\#!=:<>]")


def literal_parts(reading: Reading, source: str) -> list[Part] | None:
    """The parts a message of the commonest shapes (above) is, read as `cst` reads a string literal and an
    f-string from libcst's tree; None for any other shape."""
    read = literals(source, joins=bool(reading.joins))
    if read is None:
        return None
    found, kinds = read
    reading.kinds |= kinds
    return found


def literals(source: str, *, joins: bool) -> tuple[list[Part], set[MessageKind]] | None:
    """The parts and kinds of string literals of the commonest shapes, or None. With `joins` (lists whose
    items are known), a field that may join one is left to libcst (`cst._Reader._join`)."""
    text = source.strip()
    if not text or '"""' in text or "'''" in text:
        return None
    found: list[Part] = []
    kinds: set[MessageKind] = set()
    position = 0
    while position < len(text):
        token = _TOKEN.match(text, position)
        if token is None:
            return None
        body = token["double"] if token["double"] is not None else token["single"]
        prefix = token["prefix"].lower()
        if "f" in prefix:
            kinds.add(MessageKind.FSTRING)
            fields = _fields(body, is_raw="r" in prefix, joins=joins)
            if fields is None:
                return None
            found += fields
        else:
            kinds.add(MessageKind.LITERAL)
            found.append(render_text(body, is_raw="r" in prefix, fstring=False))
        position = token.end()  # (past the blanks before the next literal)
    return found, kinds


# What no reading of libcst's turns into text (`cst.parts` says `Unsupported`): no string, `+`, `%` or
# conditional at the top, and no call but one of a function that is neither a translation nor `.join` or
# `.format` (below).
_NOT_TEXT = (
    ast.Name, ast.Attribute, ast.Subscript, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp,
    ast.DictComp, ast.GeneratorExp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Lambda, ast.Await,
)  # fmt: skip


def not_text(source: str) -> str | None:
    """The source of an expression that is not text (a name, a list, a subscript, a comparison, a number,
    ...) as libcst's code for it would be; None for any other, or where libcst must say."""
    code = bare(source)
    if code is None or _DOTTED.fullmatch(code):  # (a name or an attribute: no parse needed)
        return code
    top = _expression(code)
    if top is None:
        return None
    if isinstance(top, ast.Call):
        function = top.func
        if isinstance(function, ast.Name) and function.id in TRANSLATORS:
            return None
        return None if isinstance(function, ast.Attribute) and function.attr in ("join", "format") else code
    if isinstance(top, ast.BinOp):
        return None if isinstance(top.op, ast.Add | ast.Mod) else code
    if isinstance(top, _NOT_TEXT) or (isinstance(top, ast.Constant) and not isinstance(top.value, str)):
        return code
    return None


@lru_cache(maxsize=256)
def _expression(code: str) -> ast.expr | None:
    """Python's tree of an expression (None if it is none), the parentheses around it left out, as libcst
    reads it (`cst.expression_tree`). (Cached: a message that is no quick literal is parsed by both readings below.)"""
    try:
        return ast.parse(f"({code}\n)", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


class _Decline(Exception):
    """A shape the quick reading of an operation leaves to libcst."""


def operation(reading: Reading, source: str) -> list[Part] | str | None:
    """The parts `cst.parts` gives `A + B` with text on either side, or `A if c else B`, read from Python's
    tree of the expression and the quick reading of its string literals; its code (as libcst's,
    `cst.bare_code`) where `cst.parts` says `Unsupported` (what is read is no text: the caller makes it a
    placeholder); None where libcst must read it: a `%` or `.format` of a literal, a `.join`, a
    translation, a literal the quick reading leaves, parentheses around it all, a comment. The reading is
    changed as libcst's reading would change it, or not at all for None."""
    code = source.strip()
    if "#" in code or "\r" in code:
        return None
    top = _expression(code)
    if not isinstance(top, ast.BinOp | ast.IfExp):
        return None
    reader = _OperationReader(Reading(reading.joins), code)  # (a decline leaves no trace)
    if reader.segment(top) != code:  # (in parentheses of its own: libcst's code for it leaves them out)
        return None
    try:
        found: list[Part] | str = reader.parts(top)
    except _Decline:
        return None
    except Unsupported:
        found = code
    reading.merge(reader.reading)
    return found


class _OperationReader:
    """`cst.parts` over Python's tree of `code` (see `operation`), into a reading of its own."""

    def __init__(self, reading: Reading, code: str) -> None:
        self.reading = reading
        self.lines = f"({code}".split("\n")  # (as `_expression` parsed it)

    def parts(self, node: ast.expr) -> list[Part]:
        if isinstance(node, ast.Call):
            self._no_text_call(node)
            raise Unsupported
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            raise Unsupported
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            read = literals(self.segment(node), joins=bool(self.reading.joins))
            if read is None:
                raise _Decline
            found, kinds = read
            self.reading.kinds |= kinds
            return found
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add) and (self._is_text(node.left) or self._is_text(node.right)):
                self.reading.kinds.add(MessageKind.CONCAT)
                return self._operand(node.left) + self._operand(node.right)
            if isinstance(node.op, ast.Mod) and self._is_literal(node.left):
                raise _Decline
            raise Unsupported
        if isinstance(node, ast.IfExp):
            return self.reading.either(self.parts(node.body), self.parts(node.orelse))
        raise Unsupported

    def _operand(self, node: ast.expr) -> list[Part]:
        try:
            return self.parts(node)
        except Unsupported:
            # Its code as libcst's without the node's own parentheses: Python's tree leaves them out of its
            # positions, but for a tuple's and a generator's.
            if isinstance(node, ast.Tuple | ast.GeneratorExp):
                raise _Decline from None
            return [Hole(self.segment(node))]

    @staticmethod
    def _no_text_call(node: ast.Call) -> None:
        """Decline the calls libcst may read as text: a translation, `.join` and `.format`."""
        function = node.func
        if (isinstance(function, ast.Name) and function.id in TRANSLATORS) or (
            isinstance(function, ast.Attribute) and function.attr in ("join", "format")
        ):
            raise _Decline

    def _is_text(self, node: ast.expr) -> bool:  # (`cst._is_text`)
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)):
            return True
        if isinstance(node, ast.Call):
            self._no_text_call(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._is_text(node.left) or self._is_text(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self._is_literal(node.left)
        return False

    def _is_literal(self, node: ast.expr) -> bool:  # (`cst.is_literal`)
        if isinstance(node, ast.Call):
            self._no_text_call(node)
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    def segment(self, node: ast.expr) -> str:
        return node_source(node, self.lines, lambda line: self.lines[line - 1].encode())


def _fields(body: str, *, is_raw: bool, joins: bool) -> list[Part] | None:
    """An f-string's text and fields, or None where libcst must read them (see `literals`)."""
    if "\\N" in body:  # `\N{NAME}` is an escape, not a field
        return None
    out: list[Part] = []
    start = index = 0
    while (brace := _BRACE.search(body, index)) is not None:
        index = brace.start()
        if body.startswith(body[index] * 2, index):  # `{{` or `}}`
            index += 2
            continue
        if body[index] == "}":
            return None
        field = _field(body, index + 1, joins)
        if field is None:
            return None
        hole, end = field
        out.append(render_text(body[start:index], is_raw=is_raw, fstring=True))
        out.append(hole)
        start = index = end
    out.append(render_text(body[start:], is_raw=is_raw, fstring=True))
    return out


def _field(body: str, start: int, joins: bool) -> tuple[Hole, int] | None:
    """The placeholder of the field whose expression starts at `start` and the index past its `}`: an
    expression (strings of the other quote and brackets in it), then `=`, `!c`, `:spec` as written."""
    depth = 0
    index = start
    while True:
        stop = _FIELD_STOP.search(body, index)
        if stop is None:
            return None
        index, char = stop.start(), stop.group()
        if char in "'\"":  # a string in the expression (the f-string's own quote would have ended it)
            if body.startswith(char * 3, index):
                return None
            close = body.find(char, index + 1)
            if close < 0:
                return None
            index = close + 1
        elif char in "([{":  # (a brace here opens a set or a dict: the field's own `{` is behind)
            depth += 1
            index += 1
        elif char in ")]" or (char == "}" and depth):
            depth -= 1
            index += 1
            if depth < 0:
                return None
        elif char in "\\#":
            return None
        elif depth:  # `!`, `=`, `:`, `<` or `>` inside brackets
            index += 1
        else:
            break
    expression = body[start:index]
    if not expression or expression != expression.strip() or (joins and "join" in expression):
        return None
    debug = conversion = spec = None
    if body[index] == "=":
        if index + 1 >= len(body) or body[index + 1] not in "!:}":
            return None  # `==` or `=x`: an operator, libcst's to read
        debug = expression + "="
        index += 1
    if body[index] == "!":
        conversion = body[index + 1 : index + 2]
        if conversion not in ("r", "s", "a") or body[index + 2 : index + 3] not in (":", "}"):
            return None
        index += 2
    if body[index] == ":":
        close = body.find("}", index + 1)
        spec = body[index + 1 : close]
        if close < 0 or not spec or "{" in spec:
            return None
        index = close
    if body[index] != "}":
        return None
    verbatim = body[start - 1 : index + 1]
    return Hole(expression, conversion=conversion, spec=spec, debug=debug, verbatim=verbatim), index + 1

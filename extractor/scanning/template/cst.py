# CST: a message expression read from libcst's tree (the shapes the quick reading leaves) into template parts.
"""libcst costs a quarter of a second to import, and most messages are read without it (`quick`): this
module imports it, and is itself imported inside the functions that read what the quick reading leaves."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from functools import lru_cache
from typing import TypeGuard

import libcst as cst

from extractor.model.kinds import MessageKind
from extractor.scanning.template.pattern import Hole, Part, optional
from extractor.scanning.template.reading import TRANSLATORS, Reading, Unsupported, bare, render_text

__all__ = ["bare_code", "expression_tree", "flatten", "is_display", "is_int", "is_literal", "literal_value", "parts"]

_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?"
    r"(?P<type>[diouxXeEfFgGcrsa%])"
)


@lru_cache(maxsize=4096)
def expression_tree(source: str) -> cst.BaseExpression | None:
    """libcst's tree of an expression's source, or None where libcst cannot parse it."""
    try:
        return cst.parse_expression("(" + source + "\n)")
    except Exception:  # libcst raises several exception types for text it cannot parse
        return None


def parts(reading: Reading, node: cst.BaseExpression) -> list[Part]:
    """The template parts of an expression that is text, what it met noted in `reading`; `Unsupported`
    for any other."""
    return _Reader(reading).parts(node)


def _code(node: cst.CSTNode) -> str:
    return _empty_module().code_for_node(node)


@lru_cache(maxsize=1)
def _empty_module() -> cst.Module:
    return cst.Module(body=[])


def bare_code(node: cst.BaseExpression) -> str:
    """Return the source of an expression without the parentheses that wrap it."""
    return _code(node.with_changes(lpar=[], rpar=[])) if node.lpar else _code(node)


def flatten(source: str) -> str:
    """The source of an expression as `bare_code` gives it (as written where it cannot be parsed)."""
    if (code := bare(source)) is not None:
        return code
    node = expression_tree(source)
    return bare_code(node) if node is not None else source.strip()


def _prefix(start: str) -> str:
    return start.rstrip("'\"").lower()


class _Reader:
    """Turns one libcst expression into template parts, noting in its reading what shapes it met."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading

    def parts(self, node: cst.BaseExpression) -> list[Part]:
        # `quick._OperationReader.parts` reads `+` and conditionals as this does, from Python's tree: a change
        # of what a shape gives here is a change there too (tests/test_template.py holds one to the other).
        joined = self._join(node)
        if joined is not None:
            return joined
        translated = _translated(node)
        if translated is not None:
            self.reading.warn("translated-message")
            return self.parts(translated)
        if isinstance(node, cst.SimpleString):
            return [self._simple(node)]
        if isinstance(node, cst.FormattedString):
            return self._fstring(node)
        if isinstance(node, cst.ConcatenatedString):
            return [part for piece in _pieces(node) for part in self.parts(piece)]
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Add) and (_is_text(node.left) or _is_text(node.right)):
                self.reading.kinds.add(MessageKind.CONCAT)
                return self._operand(node.left) + self._operand(node.right)
            if isinstance(node.operator, cst.Modulo) and is_literal(node.left):
                self.reading.kinds.add(MessageKind.PERCENT)
                return self._percent(node.left, node.right)
        if isinstance(node, cst.IfExp):
            return self.reading.either(self.parts(node.body), self.parts(node.orelse))
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "format"
            and is_literal(node.func.value)
        ):
            self.reading.kinds.add(MessageKind.FORMAT)
            return self._format(node.func.value, node.args)
        raise Unsupported

    def _join(self, node: cst.BaseExpression) -> list[Part] | None:
        """`SEP.join(items)` over a list whose items are known (filled before the raise), else None."""
        joins = self.reading.joins
        if not (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "join"
            and is_literal(node.func.value)
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value in joins
            and not node.args[0].star
        ):
            return None
        separator = literal_value(node.func.value)
        head, items = joins[node.args[0].value.value]
        entries: list[tuple[list[Part], bool]] = []
        if head is not None:  # a list of unknown strings: maybe empty
            entries.append(([Hole(f"{bare_code(node.func.value)}.join({flatten(head)})")], False))
        inner = Reading(joins)
        for source, certain in items:
            item = expression_tree(source)
            if item is None:
                return None
            try:
                entries.append((parts(inner, item), certain))
            except Unsupported:
                return None  # an item that is not a string shape: the join stays one placeholder
        self.reading.merge(inner)
        if all(certain for _, certain in entries):
            out: list[Part] = []
            for index, (item_parts, _) in enumerate(entries):
                out += [separator, *item_parts] if index else item_parts
            return out
        out = []
        for index, (item_parts, certain) in enumerate(entries):
            if index:
                out += optional([separator], True)
            out += optional(item_parts, not certain)
        self.reading.warn("optional-items")
        return out

    def _operand(self, node: cst.BaseExpression) -> list[Part]:
        try:
            return self.parts(node)
        except Unsupported:
            return [Hole(bare_code(node))]

    def _simple(self, node: cst.SimpleString) -> str:
        if "b" in node.prefix.lower():
            raise Unsupported
        self.reading.kinds.add(MessageKind.LITERAL)
        is_raw = "r" in node.prefix.lower()
        return render_text(node.raw_value, is_raw=is_raw, fstring=False)

    def _fstring(self, node: cst.FormattedString) -> list[Part]:
        self.reading.kinds.add(MessageKind.FSTRING)
        is_raw = "r" in _prefix(node.start)
        out: list[Part] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(render_text(part.value, is_raw=is_raw, fstring=True))
                continue
            assert isinstance(part, cst.FormattedStringExpression)
            if part.conversion is None and part.format_spec is None and part.equal is None:
                joined = self._join(part.expression)
                if joined is not None:
                    out += joined
                    continue
            expression = _code(part.expression)
            spec = "".join(_code(p) for p in part.format_spec) if part.format_spec is not None else None
            debug = None
            if part.equal is not None:
                debug = (
                    _code(part.whitespace_before_expression)
                    + expression
                    + _code(part.whitespace_after_expression)
                    + _code(part.equal)
                )
            out.append(
                Hole(
                    expression,
                    conversion=part.conversion,
                    spec=spec,
                    debug=debug,
                    verbatim=_code(part),
                )
            )
        return out

    def _percent(self, left: cst.BaseExpression, right: cst.BaseExpression) -> list[Part]:
        fmt = literal_value(left)
        items: list[cst.BaseExpression] | None = None
        mapping: dict[str, cst.BaseExpression] | None = None
        if isinstance(right, cst.Tuple):
            items = [el.value for el in right.elements if isinstance(el, cst.Element)]
        elif isinstance(right, cst.Dict):
            mapping = {
                literal_value(el.key): el.value
                for el in right.elements
                if isinstance(el, cst.DictElement) and is_literal(el.key)
            }
        specs = [m for m in _PERCENT.finditer(fmt) if m.group("type") != "%"]
        if items is None and mapping is None and len(specs) == 1:
            items = [right]
        right_code = bare_code(right)
        out: list[Part] = []
        position = 0
        index = 0
        for match in _PERCENT.finditer(fmt):
            out.append(fmt[position : match.start()])
            position = match.end()
            kind = match.group("type")
            if kind == "%":
                out.append("%")
                continue
            key = match.group("key")
            if key is not None:
                expression = bare_code(mapping[key]) if mapping and key in mapping else f"{right_code}[{key!r}]"
            elif items is not None and index < len(items):
                expression = bare_code(items[index])
            else:
                expression = f"{right_code}[{index}]"
            index += 1
            conversion = kind if kind in "ra" else None
            out.append(Hole(expression, conversion=conversion, spec=_percent_spec(match)))
        out.append(fmt[position:])
        return out

    def _format(self, left: cst.BaseExpression, args: Sequence[cst.Arg]) -> list[Part]:
        fmt = literal_value(left)
        # The positional arguments up to the first `*iterable`, and its items after them (when it is the last
        # positional argument); the keywords, and a lone `**mapping`'s items.
        given = [a for a in args if a.keyword is None and a.star != "**"]
        stars = [index for index, a in enumerate(given) if a.star == "*"]
        positional = [bare_code(a.value) for a in given[: stars[0] if stars else None]]
        unpacked = _atom(given[stars[0]].value) if stars == [len(given) - 1] else None
        keywords = {a.keyword.value: bare_code(a.value) for a in args if a.keyword is not None}
        mappings = [_atom(a.value) for a in args if a.star == "**"]
        out: list[Part] = []
        auto = 0
        try:
            fields = list(string.Formatter().parse(fmt))
        except ValueError:
            raise Unsupported from None
        for literal, name, spec, conversion in fields:
            out.append(literal)
            if name is None:
                continue
            head = re.match(r"[^.\[]*", name)
            first = head.group() if head else ""
            rest = name[len(first) :]
            if first == "":
                first, auto = str(auto), auto + 1
            if first.isdigit():
                index = int(first)
                if index < len(positional):
                    base = positional[index]
                elif unpacked is not None:
                    base = f"{unpacked}[{index - len(positional)}]"
                else:
                    base, rest = name, ""
            elif first in keywords:
                base = keywords[first]
            else:
                base = f"{mappings[0]}[{first!r}]" if len(mappings) == 1 else first
            out.append(Hole(base + rest, conversion=conversion, spec=spec or None))
        return out


def _atom(node: cst.BaseExpression) -> str:
    """An expression's code, in parentheses unless it is a name, an attribute, a call or a subscript (so that
    `[0]` or `.name` after it applies to all of it)."""
    code = bare_code(node)
    return code if isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript) else f"({code})"


def _percent_spec(match: re.Match[str]) -> str | None:
    """The format spec that prints a `%` conversion as `%` does (`%-8s` is `<8`, `%5d` is `5d`)."""
    kind = match.group("type")
    flags = match.group("flags") or ""
    width = match.group("width") or ""
    if width == "*":
        width = ""
    align = "<" if "-" in flags else (">" if width and kind in "rsa" else "")
    sign = "+" if "+" in flags else (" " if " " in flags else "")
    alternate = "#" if "#" in flags and kind not in "rsa" else ""
    zero = "0" if "0" in flags and "-" not in flags and kind not in "rsac" else ""
    precision = "." + match.group("prec") if match.group("prec") and match.group("prec") != "*" else ""
    code = "" if kind in "rsa" else ("d" if kind in "iu" else kind)
    spec = align + sign + alternate + zero + width + precision + code
    return spec or None


def _translated(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The string a translation call (`_("...")`, `gettext("...")`) wraps: its source-language text."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in TRANSLATORS
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
        and is_literal(node.args[0].value)
    ):
        return node.args[0].value
    return None


def is_literal(node: cst.BaseExpression) -> bool:
    """Tell whether a node is a plain (non-f, non-bytes) string literal, possibly concatenated."""
    if _translated(node) is not None:
        return True
    if isinstance(node, cst.SimpleString):
        return "b" not in node.prefix.lower()
    if isinstance(node, cst.ConcatenatedString):
        return all(is_literal(piece) for piece in _pieces(node))
    return False


def is_int(node: cst.BaseExpression | None) -> TypeGuard[cst.Integer]:
    """Tell whether a node is an int literal."""
    return isinstance(node, cst.Integer)


def is_display(node: cst.BaseExpression | None) -> TypeGuard[cst.Tuple | cst.List]:
    """Tell whether a node is a tuple or a list display."""
    return isinstance(node, (cst.Tuple, cst.List))


def _pieces(node: cst.ConcatenatedString) -> list[cst.BaseExpression]:
    """The strings of an implicit concatenation, in order, without recursion (it may have thousands)."""
    out: list[cst.BaseExpression] = []
    current: cst.BaseExpression = node
    while isinstance(current, cst.ConcatenatedString):
        out.append(current.left)
        current = current.right
    out.append(current)
    return out


def _is_text(node: cst.BaseExpression) -> bool:
    """Tell whether a node certainly evaluates to a str we can read (so `+` is concatenation)."""
    if isinstance(node, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
        return True
    if _translated(node) is not None:
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _is_text(node.left) or _is_text(node.right)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return is_literal(node.left)
    return False


def literal_value(node: cst.BaseExpression) -> str:
    """The text of a plain string literal (`is_literal`); `Unsupported` for any other node."""
    translated = _translated(node)
    if translated is not None:
        return literal_value(translated)
    if isinstance(node, cst.SimpleString):
        return render_text(node.raw_value, is_raw="r" in node.prefix.lower(), fstring=False)
    if isinstance(node, cst.ConcatenatedString):
        return "".join(literal_value(piece) for piece in _pieces(node))
    raise Unsupported

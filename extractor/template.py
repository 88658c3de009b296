# Template: a raise's message expression (libcst) -> message template, placeholders and regex pattern.
from __future__ import annotations

import ast
import re
import string
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, cast

import libcst as cst

from extractor.models import MessageKind, Placeholder, construct

__all__ = ["Template", "message_template", "pattern_for"]

# Only the characters that mean something in a Python regex are escaped, so a literal message without
# them is its own pattern (as in the reference records).
_REGEX_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")
_ESCAPE = re.compile(
    r"\\N\{[^}]*\}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\[0-7]{1,3}|\\\r\n|\\.|\\\n|\{\{|\}\}",
    re.S,
)
_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?"
    r"(?P<type>[diouxXeEfFgGcrsa%])"
)
_EMPTY_MODULE = cst.Module(body=[])


@dataclass(frozen=True)
class _Hole:
    """A placeholder before it is placed in the message."""

    expression: str
    conversion: str | None = None
    spec: str | None = None
    debug: str | None = None  # the literal `expr=` text a debug placeholder prints before its value
    verbatim: str | None = None  # the `{...}` exactly as written in an f-string

    def text(self) -> str:
        if self.verbatim is not None:
            return self.verbatim
        conversion = f"!{self.conversion}" if self.conversion else ""
        spec = f":{self.spec}" if self.spec else ""
        return "{" + self.expression + conversion + spec + "}"


_Part = str | _Hole
Conversion = Literal["r", "s", "a"] | None


@dataclass(frozen=True)
class Template:
    """A message template: what `str(exc)` prints, with `{...}` where run-time values go."""

    message: str
    pattern: str
    placeholders: tuple[Placeholder, ...]
    kind: MessageKind
    warnings: tuple[str, ...] = field(default=())


def _escape(text: str) -> str:
    return _REGEX_SPECIAL.sub(r"\\\1", text)


def _code(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


def _bare_code(node: cst.BaseExpression) -> str:
    """Return the source of an expression without the parentheses that wrap it."""
    return _code(node.with_changes(lpar=[], rpar=[])) if node.lpar else _code(node)


def pattern_for(parts: Sequence[_Part]) -> tuple[str, str, tuple[Placeholder, ...]]:
    """Lay out parts as (message, regex, placeholders); each placeholder is one capture group."""
    message: list[str] = []
    pattern: list[str] = []
    placeholders: list[Placeholder] = []
    offset = 0
    for part in _merge(parts):
        if isinstance(part, str):
            message.append(part)
            pattern.append(_escape(part))
            offset += len(part)
            continue
        text = part.text()
        group = f"p{len(placeholders)}"
        placeholders.append(
            construct(
                Placeholder,
                expression=part.expression,
                conversion=cast(Conversion, part.conversion),
                formatSpec=part.spec,
                debug=part.debug is not None,
                start=offset,
                end=offset + len(text),
                group=group,
            )
        )
        message.append(text)
        pattern.append(_escape(part.debug or "") + f"(?P<{group}>.*?)")
        offset += len(text)
    return "".join(message), "".join(pattern), tuple(placeholders)


def _merge(parts: Sequence[_Part]) -> list[_Part]:
    merged: list[_Part] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    return merged


def _render_text(raw: str, *, is_raw: bool, fstring: bool) -> str:
    """Render the literal text of a string (part) as Python does at run time."""

    def one(match: re.Match[str]) -> str:
        token = match.group()
        if token in ("{{", "}}"):
            return token[0] if fstring else token
        if is_raw:
            return token
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value: str = ast.literal_eval('"' + token + '"')
            except (SyntaxError, ValueError):
                return token
        return value

    return _ESCAPE.sub(one, raw)


def _prefix(start: str) -> str:
    return start.rstrip("'\"").lower()


class _Unsupported(Exception):
    """The expression is not a string the extractor can read statically."""


class _Builder:
    """Turns one libcst expression into template parts, remembering what shapes it met."""

    def __init__(self) -> None:
        self.kinds: set[MessageKind] = set()
        self.warnings: list[str] = []

    def parts(self, node: cst.BaseExpression) -> list[_Part]:
        if isinstance(node, cst.SimpleString):
            return [self._simple(node)]
        if isinstance(node, cst.FormattedString):
            return self._fstring(node)
        if isinstance(node, cst.ConcatenatedString):
            return self.parts(node.left) + self.parts(node.right)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Add) and (_is_text(node.left) or _is_text(node.right)):
                self.kinds.add(MessageKind.CONCAT)
                return self._operand(node.left) + self._operand(node.right)
            if isinstance(node.operator, cst.Modulo) and _is_literal(node.left):
                self.kinds.add(MessageKind.PERCENT)
                return self._percent(node.left, node.right)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "format"
            and _is_literal(node.func.value)
        ):
            self.kinds.add(MessageKind.FORMAT)
            return self._format(node.func.value, node.args)
        raise _Unsupported

    def _operand(self, node: cst.BaseExpression) -> list[_Part]:
        try:
            return self.parts(node)
        except _Unsupported:
            return [_Hole(_bare_code(node))]

    def _simple(self, node: cst.SimpleString) -> str:
        if "b" in node.prefix.lower():
            raise _Unsupported
        self.kinds.add(MessageKind.LITERAL)
        is_raw = "r" in node.prefix.lower()
        return _render_text(node.raw_value, is_raw=is_raw, fstring=False)

    def _fstring(self, node: cst.FormattedString) -> list[_Part]:
        self.kinds.add(MessageKind.FSTRING)
        is_raw = "r" in _prefix(node.start)
        out: list[_Part] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(_render_text(part.value, is_raw=is_raw, fstring=True))
                continue
            assert isinstance(part, cst.FormattedStringExpression)
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
                _Hole(
                    expression,
                    conversion=part.conversion,
                    spec=spec,
                    debug=debug,
                    verbatim=_code(part),
                )
            )
        return out

    def _percent(self, left: cst.BaseExpression, right: cst.BaseExpression) -> list[_Part]:
        fmt = _literal_value(left)
        items: list[cst.BaseExpression] | None = None
        mapping: dict[str, cst.BaseExpression] | None = None
        if isinstance(right, cst.Tuple):
            items = [el.value for el in right.elements if isinstance(el, cst.Element)]
        elif isinstance(right, cst.Dict):
            mapping = {
                _literal_value(el.key): el.value
                for el in right.elements
                if isinstance(el, cst.DictElement) and _is_literal(el.key)
            }
        specs = [m for m in _PERCENT.finditer(fmt) if m.group("type") != "%"]
        if items is None and mapping is None and len(specs) == 1:
            items = [right]
        right_code = _bare_code(right)
        out: list[_Part] = []
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
                expression = _bare_code(mapping[key]) if mapping and key in mapping else f"{right_code}[{key!r}]"
            elif items is not None and index < len(items):
                expression = _bare_code(items[index])
            else:
                expression = f"{right_code}[{index}]"
            index += 1
            conversion = kind if kind in "ra" else None
            spec = None
            if kind not in "rsa":
                spec = (match.group("flags") or "") + (match.group("width") or "")
                if match.group("prec"):
                    spec += "." + match.group("prec")
                spec += "d" if kind in "iu" else kind
            out.append(_Hole(expression, conversion=conversion, spec=spec))
        out.append(fmt[position:])
        return out

    def _format(self, left: cst.BaseExpression, args: Sequence[cst.Arg]) -> list[_Part]:
        fmt = _literal_value(left)
        positional = [_bare_code(a.value) for a in args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: _bare_code(a.value) for a in args if a.keyword is not None}
        out: list[_Part] = []
        auto = 0
        try:
            fields = list(string.Formatter().parse(fmt))
        except ValueError:
            raise _Unsupported from None
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
                base = positional[index] if index < len(positional) else name
            else:
                base = keywords.get(first, first)
            out.append(_Hole(base + rest, conversion=conversion, spec=spec or None))
        return out


def _is_literal(node: cst.BaseExpression) -> bool:
    """Tell whether a node is a plain (non-f, non-bytes) string literal, possibly concatenated."""
    if isinstance(node, cst.SimpleString):
        return "b" not in node.prefix.lower()
    if isinstance(node, cst.ConcatenatedString):
        return _is_literal(node.left) and _is_literal(node.right)
    return False


def _is_text(node: cst.BaseExpression) -> bool:
    """Tell whether a node certainly evaluates to a str we can read (so `+` is concatenation)."""
    if isinstance(node, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _is_text(node.left) or _is_text(node.right)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return _is_literal(node.left)
    return False


def _literal_value(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.SimpleString):
        return _render_text(node.raw_value, is_raw="r" in node.prefix.lower(), fstring=False)
    if isinstance(node, cst.ConcatenatedString):
        return _literal_value(node.left) + _literal_value(node.right)
    raise _Unsupported


@lru_cache(maxsize=4096)
def _parse(source: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression("(" + source + "\n)")
    except Exception:  # libcst raises several exception types for text it cannot parse
        return None


def _element_parts(builder: _Builder, source: str) -> list[_Part]:
    """Render one argument of a multi-argument raise as `repr` would show it inside a tuple."""
    node = _parse(source)
    if node is not None and _is_literal(node):
        return [repr(_literal_value(node))]
    if node is not None:
        try:
            inner = builder.parts(node)
        except _Unsupported:
            pass
        else:
            return ["'", *inner, "'"]
    return [_Hole(_flatten(source), conversion="r")]


def _flatten(source: str) -> str:
    node = _parse(source)
    return _bare_code(node) if node is not None else source.strip()


def message_template(
    args: Sequence[str] = (),
    *,
    variable: str | None = None,
    pieces: Sequence[str] = (),
) -> Template:
    """Build the template of a raise from the source of its arguments.

    `args` are the sources of the positional arguments of the exception; `variable` names the variable
    the single argument is, with `pieces` the sources of what was assigned (then `+=`-ed) to it when
    that is known on every path, or nothing when it is not.
    """
    builder = _Builder()
    kind: MessageKind
    parts: list[_Part]
    if variable is not None:
        sources = list(pieces)
        kind = MessageKind.VARIABLE
        if not sources:
            parts = [_Hole(variable)]
        else:
            parts = []
            for source in sources:
                parts += _single(builder, source)
    elif not args:
        return Template("", "", (), MessageKind.EMPTY)
    elif len(args) == 1:
        parts = _single(builder, args[0])
        kind = _kind_of(builder.kinds)
    else:
        parts = ["("]
        for index, source in enumerate(args):
            if index:
                parts.append(", ")
            parts += _element_parts(builder, source)
        parts.append(")")
        builder.warnings.append("args-not-formatted")
        kind = _kind_of(builder.kinds)
    message, pattern, placeholders = pattern_for(parts)
    return Template(message, pattern, placeholders, kind, tuple(builder.warnings))


def _single(builder: _Builder, source: str) -> list[_Part]:
    node = _parse(source)
    if node is None:
        builder.warnings.append("unparsable-message")
        return [_Hole(source.strip())]
    try:
        return builder.parts(node)
    except _Unsupported:
        builder.kinds.add(MessageKind.DYNAMIC)
        return [_Hole(_bare_code(node))]


def _kind_of(kinds: set[MessageKind]) -> MessageKind:
    for kind in (
        MessageKind.DYNAMIC,
        MessageKind.FORMAT,
        MessageKind.PERCENT,
        MessageKind.CONCAT,
        MessageKind.FSTRING,
        MessageKind.LITERAL,
    ):
        if kind in kinds:
            return kind
    return MessageKind.DYNAMIC

# Template: a raise's message expression (libcst) -> message template, placeholders and regex pattern.
# libcst costs a quarter of a second to import, and most messages are read without it (`_quick_read`,
# `_quick_other`, `_quick_operation`): it is imported the first time `_parse` needs it, which every other
# function reading a libcst node comes after.
from __future__ import annotations

import ast
import contextlib
import itertools
import re
import string
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, cast

from extractor.model.kinds import MessageKind, builtin_exception
from extractor.model.scanned import Placeholder
from extractor.scanning.source import node_source

if TYPE_CHECKING:
    import libcst as cst

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
_GROUP = re.compile(r"\(\?P<p\d+>")


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


@dataclass(frozen=True)
class _Raw:
    """Text of the message whose regex is not its plain escape (a quote either way, an optional item)."""

    text: str
    regex: str
    # For the `|B)` that ends `A if c else B`: B's parts, so that a repr around it escapes them too.
    alternative: tuple[_Part, ...] | None = None


_Part = str | _Hole | _Raw
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
    return _empty_module().code_for_node(node)


@lru_cache(maxsize=1)
def _empty_module() -> cst.Module:
    return cst.Module(body=[])


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
        if isinstance(part, str | _Raw):
            text = part if isinstance(part, str) else part.text
            message.append(text)
            pattern.append(_escape(part) if isinstance(part, str) else part.regex)
            offset += len(text)
            continue
        text = part.text()
        group = f"p{len(placeholders)}"
        placeholders.append(
            Placeholder(
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
        width = _width(part.spec)
        pattern.append(_escape(part.debug or "") + (f"(?P<{group}>.{{{width},}}?)" if width else f"(?P<{group}>.*?)"))
        offset += len(text)
    return "".join(message), "".join(pattern), tuple(placeholders)


_SPEC_WIDTH = re.compile(r"(?:.?[<>=^])?[+\- ]?z?#?0?(?P<width>\d+)")


def _width(spec: str | None) -> int:
    """The least number of characters a format spec prints (its width), 0 when unknown."""
    if not spec or "{" in spec:
        return 0
    found = _SPEC_WIDTH.match(spec)
    return int(found["width"]) if found else 0


def adjacent(placeholders: Sequence[Placeholder]) -> bool:
    """Tell whether two placeholders touch (no literal text between them to split their values)."""
    return any(a.end == b.start for a, b in itertools.pairwise(placeholders))


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

    def __init__(self, joins: Mapping[str, Joined] | None = None) -> None:
        self.kinds: set[MessageKind] = set()
        self.warnings: list[str] = []
        self.joins = joins or {}

    def parts(self, node: cst.BaseExpression) -> list[_Part]:
        # `_OperationReader.parts` reads `+` and conditionals as this does, from Python's tree: a change of
        # what a shape gives here is a change there too (tests/test_template.py holds one to the other).
        joined = self._join(node)
        if joined is not None:
            return joined
        translated = _translated(node)
        if translated is not None:
            self._warn("translated-message")
            return self.parts(translated)
        if isinstance(node, cst.SimpleString):
            return [self._simple(node)]
        if isinstance(node, cst.FormattedString):
            return self._fstring(node)
        if isinstance(node, cst.ConcatenatedString):
            return [part for piece in _pieces(node) for part in self.parts(piece)]
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Add) and (_is_text(node.left) or _is_text(node.right)):
                self.kinds.add(MessageKind.CONCAT)
                return self._operand(node.left) + self._operand(node.right)
            if isinstance(node.operator, cst.Modulo) and _is_literal(node.left):
                self.kinds.add(MessageKind.PERCENT)
                return self._percent(node.left, node.right)
        if isinstance(node, cst.IfExp):
            return self.either(self.parts(node.body), self.parts(node.orelse))
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "format"
            and _is_literal(node.func.value)
        ):
            self.kinds.add(MessageKind.FORMAT)
            return self._format(node.func.value, node.args)
        raise _Unsupported

    def either(self, first: list[_Part], second: list[_Part]) -> list[_Part]:
        """`A if c else B` of two strings, given the parts of each: the message shows A, the pattern
        accepts either (B's values are not captured)."""
        _, other, _ = pattern_for(second)
        other = _GROUP.sub("(?:", other)
        self._warn("one-of-branches")
        return [_Raw("", "(?:"), *first, _Raw("", f"|{other})", tuple(second))]

    def _warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def _join(self, node: cst.BaseExpression) -> list[_Part] | None:
        """`SEP.join(items)` over a list whose items are known (filled before the raise), else None."""
        if not (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "join"
            and _is_literal(node.func.value)
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value in self.joins
            and not node.args[0].star
        ):
            return None
        separator = _literal_value(node.func.value)
        head, items = self.joins[node.args[0].value.value]
        entries: list[tuple[list[_Part], bool]] = []
        if head is not None:  # a list of unknown strings: maybe empty
            entries.append(([_Hole(f"{_bare_code(node.func.value)}.join({_flatten(head)})")], False))
        inner = _Builder(self.joins)
        for source, certain in items:
            item = _parse(source)
            if item is None:
                return None
            try:
                entries.append((inner.parts(item), certain))
            except _Unsupported:
                return None  # an item that is not a string shape: the join stays one placeholder
        self.kinds |= inner.kinds
        for warning in inner.warnings:
            self._warn(warning)
        if all(certain for _, certain in entries):
            out: list[_Part] = []
            for index, (parts, _) in enumerate(entries):
                out += [separator, *parts] if index else parts
            return out
        out = []
        for index, (parts, certain) in enumerate(entries):
            if index:
                out += _optional([separator], True)
            out += _optional(parts, not certain)
        self._warn("optional-items")
        return out

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
            out.append(_Hole(expression, conversion=conversion, spec=_percent_spec(match)))
        out.append(fmt[position:])
        return out

    def _format(self, left: cst.BaseExpression, args: Sequence[cst.Arg]) -> list[_Part]:
        fmt = _literal_value(left)
        # The positional arguments up to the first `*iterable`, and its items after them (when it is the last
        # positional argument); the keywords, and a lone `**mapping`'s items.
        given = [a for a in args if a.keyword is None and a.star != "**"]
        stars = [index for index, a in enumerate(given) if a.star == "*"]
        positional = [_bare_code(a.value) for a in given[: stars[0] if stars else None]]
        unpacked = _atom(given[stars[0]].value) if stars == [len(given) - 1] else None
        keywords = {a.keyword.value: _bare_code(a.value) for a in args if a.keyword is not None}
        mappings = [_atom(a.value) for a in args if a.star == "**"]
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
            out.append(_Hole(base + rest, conversion=conversion, spec=spec or None))
        return out


def _atom(node: cst.BaseExpression) -> str:
    """An expression's code, in parentheses unless it is a name, an attribute, a call or a subscript (so that
    `[0]` or `.name` after it applies to all of it)."""
    code = _bare_code(node)
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
        and node.func.value in _TRANSLATORS
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
        and _is_literal(node.args[0].value)
    ):
        return node.args[0].value
    return None


_TRANSLATORS = frozenset({"_", "gettext", "gettext_lazy", "ugettext", "ugettext_lazy", "lazy_gettext", "_l", "N_"})


def _is_literal(node: cst.BaseExpression) -> bool:
    """Tell whether a node is a plain (non-f, non-bytes) string literal, possibly concatenated."""
    if _translated(node) is not None:
        return True
    if isinstance(node, cst.SimpleString):
        return "b" not in node.prefix.lower()
    if isinstance(node, cst.ConcatenatedString):
        return all(_is_literal(piece) for piece in _pieces(node))
    return False


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
        return _is_literal(node.left)
    return False


def _literal_value(node: cst.BaseExpression) -> str:
    translated = _translated(node)
    if translated is not None:
        return _literal_value(translated)
    if isinstance(node, cst.SimpleString):
        return _render_text(node.raw_value, is_raw="r" in node.prefix.lower(), fstring=False)
    if isinstance(node, cst.ConcatenatedString):
        return "".join(_literal_value(piece) for piece in _pieces(node))
    raise _Unsupported


@lru_cache(maxsize=4096)
def _parse(source: str) -> cst.BaseExpression | None:
    global cst
    import libcst as cst  # (once: see the top of the module)

    try:
        return cst.parse_expression("(" + source + "\n)")
    except Exception:  # libcst raises several exception types for text it cannot parse
        return None


def _element_parts(builder: _Builder, source: str) -> list[_Part]:
    """Render one argument as `repr` shows it (inside the tuple of a multi-argument raise, or alone
    where the class prints the repr of its argument): a string takes the quotes repr would give it."""
    quick = _quick_read(source, joins=bool(builder.joins))
    if quick is not None:
        parts, kinds = quick
        if kinds == {MessageKind.LITERAL}:  # plain literals: their text
            return [repr("".join(cast(list[str], parts)))]
        builder.kinds |= kinds
        return _quoted(parts)
    if (code := _quick_other(source)) is not None:
        return [_Hole(code, conversion="r")]
    operation = _quick_operation(builder, source)
    if isinstance(operation, str):
        return [_Hole(operation, conversion="r")]
    if operation is not None:
        return _quoted(operation)
    node = _parse(source)
    if node is not None and _is_literal(node):
        return [repr(_literal_value(node))]
    if node is not None:
        try:
            inner = builder.parts(node)
        except _Unsupported:
            pass
        else:
            return _quoted(inner)
    return [_Hole(_flatten(source), conversion="r")]


def _quoted(parts: Sequence[_Part]) -> list[_Part]:
    """The parts of a string shown by `repr`: text escaped as repr escapes it, between the quotes repr
    picks for the text (a placeholder's value may hold quotes too, so the pattern accepts either)."""
    text = "".join(part for part in parts if isinstance(part, str))
    quote = '"' if "'" in text and '"' not in text else "'"
    return [_Raw(quote, "['\"]"), *_escaped(parts, quote), _Raw(quote, "['\"]")]


def _escaped(parts: Sequence[_Part], quote: str) -> list[_Part]:
    """The text of parts escaped as `repr` escapes it between `quote`s: every literal character, the other
    branch of an `A if c else B` too (a placeholder's value is printed as it comes)."""
    out: list[_Part] = []
    for part in parts:
        if isinstance(part, _Raw) and part.alternative is not None:
            _, other, _ = pattern_for(_escaped(part.alternative, quote))
            out.append(_Raw(part.text, f"|{_GROUP.sub('(?:', other)})"))
        elif not isinstance(part, str):
            out.append(part)
        else:
            for char in part:
                if char in "'\"":
                    out.append(_Raw("\\" + char if char == quote else char, f"\\\\?{char}"))
                else:
                    out.append(repr(char)[1:-1])
    return out


# Builtin classes whose `str()` is not the plain `str()` of their argument(s).
_OS_ERRORS = frozenset(
    {
        "OSError", "IOError", "EnvironmentError", "FileNotFoundError", "FileExistsError", "PermissionError",
        "IsADirectoryError", "NotADirectoryError", "ConnectionError", "BrokenPipeError", "ConnectionAbortedError",
        "ConnectionRefusedError", "ConnectionResetError", "ChildProcessError", "InterruptedError",
        "ProcessLookupError", "TimeoutError", "BlockingIOError",
    }
)  # fmt: skip
_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
_GROUPS = frozenset({"ExceptionGroup", "BaseExceptionGroup"})


def _class_parts(builder: _Builder, error_class: str | None, args: Sequence[str]) -> list[_Part] | None:
    """The rendering of a builtin class whose `__str__` differs from the plain one, or None."""
    if error_class == "KeyError" and len(args) == 1:
        parts = _element_parts(builder, args[0])
        if len(parts) == 1 and isinstance(parts[0], _Hole):
            builder.kinds.add(MessageKind.DYNAMIC)
        elif not builder.kinds:
            builder.kinds.add(MessageKind.LITERAL)
        return parts
    if error_class in _OS_ERRORS and 2 <= len(args) <= 5:
        # errno and strerror print as they are, None too; a None filename is no filename. BlockingIOError's
        # third argument is the characters written, which it does not print.
        parts = ["[Errno ", *_str_parts(builder, args[0]), "] ", *_str_parts(builder, args[1])]
        if len(args) >= 3 and not _none(args[2]) and error_class != "BlockingIOError":
            parts += _maybe_none(builder, ": ", args[2])
            if len(args) == 5 and not _none(args[4]):
                parts += _maybe_none(builder, " -> ", args[4])
        return parts
    if error_class in ("UnicodeDecodeError", "UnicodeEncodeError") and len(args) == 5:
        # One byte (character) or a range, which only the values decide: the pattern accepts both.
        encoding, _, start, end, reason = args
        decode = error_class == "UnicodeDecodeError"
        verb, noun = ("decode", "bytes") if decode else ("encode", "characters")
        one = r"byte 0x[0-9a-f]{2}" if decode else r"character '\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})'"
        return [
            "'", *_str_parts(builder, encoding), f"' codec can't {verb} ",
            _Raw("", f"(?:{one} in position \\d+|"),
            f"{noun} in position ", *_str_parts(builder, start), "-", _Hole(f"{_flatten(end)} - 1"),
            _Raw("", ")"),
            ": ", *_str_parts(builder, reason),
        ]  # fmt: skip
    if error_class in _GROUPS and len(args) == 2:  # `message (N sub-exceptions)`
        count: list[_Part] = [_Hole(f"len({_flatten(args[1])})"), " sub-exception", _Raw("s", "s?")]
        return [*_str_parts(builder, args[0]), " (", *count, ")"]
    if error_class in _SYNTAX_ERRORS and len(args) >= 2:
        # The message, then `(file, line N)` from the details (a sequence of 4 to 6), only with 2 arguments.
        if len(args) > 2:
            return _str_parts(builder, args[0])
        details = _parse(args[1])
        if not isinstance(details, (cst.Tuple, cst.List)) or not 4 <= len(details.elements) <= 6:
            return [*_str_parts(builder, args[0]), _Raw("", r"(?: \(.*\))?")]  # details known at run time
        # A file name prints if it is a string, a line if it is an int: what only the values decide is optional.
        filename, lineno = (_bare_code(element.value) for element in details.elements[:2])
        parts = _str_parts(builder, args[0])
        file: list[_Part] | None = None
        known_file = _parse(filename)
        if known_file is not None and _is_literal(known_file):  # printed as its last path component
            file = [_literal_value(known_file).rpartition("/")[2]]
        elif filename != "None":
            file = [_Hole(f"os.path.basename({filename})")]
        line = ["line ", *_str_parts(builder, lineno)] if lineno != "None" else None
        sure_file = file is not None and not isinstance(file[0], _Hole)
        sure_line = line is not None and isinstance(_parse(lineno), cst.Integer)
        if file is None or line is None:
            shown = file or line
            if shown is None:
                return parts
            sure = sure_file if file else sure_line
            return [*parts, *_optional([" (", *shown, ")"], not sure)]
        if sure_file:
            return [*parts, " (", *file, *_optional([", ", *line], not sure_line), ")"]
        if sure_line:
            return [*parts, " (", *_optional([*file, ", "], True), *line, ")"]
        # Either, both or neither: `, ` only after a file name, `line N` right after `(` otherwise.
        inner = [*_optional(file, True), _Raw("", r"(?:(?:(?<=\()|"), ", ", _Raw("", ")"), *line, _Raw("", ")?")]
        return [*parts, *_optional([" (", *inner, ")"], True)]
    return None


def _optional(parts: list[_Part], optional: bool) -> list[_Part]:
    """Parts that the pattern lets be absent (the message keeps them), when `optional`."""
    return [_Raw("", "(?:"), *parts, _Raw("", ")?")] if optional else parts


def _maybe_none(builder: _Builder, before: str, source: str) -> list[_Part]:
    """`before` and the repr of an argument that is left out when it is None: always there for a literal,
    optional for anything else (a variable may hold None)."""
    node = _parse(source)
    return _optional([before, *_element_parts(builder, source)], node is None or not _is_literal(node))


def _str_parts(builder: _Builder, source: str) -> list[_Part]:
    """What `str()` of an argument prints: a number as written, a string's text, else a placeholder."""
    node = _parse(source)
    if isinstance(node, cst.Integer):
        return [str(ast.literal_eval(node.value))]
    if _none(source):
        return ["None"]
    return _single(builder, source)


def _none(source: str) -> bool:
    return source.strip() == "None"


def _flatten(source: str) -> str:
    if (code := _bare(source)) is not None:
        return code
    node = _parse(source)
    return _bare_code(node) if node is not None else source.strip()


# The items a list joined into the message holds: where it started when not a list display (its own
# items unknown), then each item's source and whether it is there on every path.
Joined = tuple[str | None, Sequence[tuple[str, bool]]]


def message_template(
    args: Sequence[str] = (),
    *,
    variable: str | None = None,
    pieces: Sequence[str] = (),
    keywords: Sequence[str] = (),
    joins: Mapping[str, Joined] | None = None,
    error_class: str | None = None,
) -> Template:
    """Build the template of a raise from the source of its arguments.

    `args` are the sources of the positional arguments of the exception; `variable` names the variable
    the single argument is, with `pieces` the sources of what was assigned (then `+=`-ed) to it when
    that is known on every path, or nothing when it is not. `keywords` are the keyword arguments
    (`name=value`), `joins` the lists joined into the message whose items are known, and `error_class`
    the raised class's name, for the builtins that print their arguments their own way.
    """
    builder = _Builder(joins)
    kind: MessageKind
    parts: list[_Part]
    known = builtin_exception(error_class)
    if keywords and known is None and not args and variable is None:
        # A message passed only by keyword: who knows what an unknown constructor prints from it.
        builder.warnings.append("keyword-arguments")
        parts = [_Hole(", ".join(keywords))]
        kind = MessageKind.DYNAMIC
    elif variable is not None:
        sources = list(pieces)
        kind = MessageKind.VARIABLE
        if not sources:
            parts = [_Hole(variable, conversion="r" if error_class == "KeyError" else None)]
        elif error_class == "KeyError" and len(sources) == 1:  # the repr of what was assigned, text or not
            parts = _element_parts(builder, sources[0])
        else:
            parts = []
            for source in sources:
                parts += _single(builder, source)
            if error_class == "KeyError":  # text: `+=` made it
                parts = _quoted(parts)
    elif not args and error_class in _SYNTAX_ERRORS:  # its message is None, printed as such
        return Template("None", "None", (), MessageKind.LITERAL, tuple(builder.warnings))
    elif not args:
        return Template("", "", (), MessageKind.EMPTY, tuple(builder.warnings))
    elif (special := _class_parts(builder, error_class, args)) is not None:
        parts = special
        kind = _kind_of(builder.kinds)
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
    if adjacent(placeholders):
        builder.warnings.append("adjacent-placeholders")
    return Template(message, pattern, placeholders, kind, tuple(builder.warnings))


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


def _quick_parts(builder: _Builder, source: str) -> list[_Part] | None:
    """The parts `_single` gives a message of the commonest shapes (above), read as `_Builder._simple` and
    `_fstring` read them from libcst's tree; None for any other shape."""
    read = _quick_read(source, joins=bool(builder.joins))
    if read is None:
        return None
    parts, kinds = read
    builder.kinds |= kinds
    return parts


def _quick_read(source: str, *, joins: bool) -> tuple[list[_Part], set[MessageKind]] | None:
    """The parts and kinds of string literals of the commonest shapes, or None. With `joins` (lists whose
    items are known), a field that may join one is left to libcst (`_Builder._join`)."""
    text = source.strip()
    if not text or '"""' in text or "'''" in text:
        return None
    parts: list[_Part] = []
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
            fields = _quick_fields(body, is_raw="r" in prefix, joins=joins)
            if fields is None:
                return None
            parts += fields
        else:
            kinds.add(MessageKind.LITERAL)
            parts.append(_render_text(body, is_raw="r" in prefix, fstring=False))
        position = token.end()  # (past the blanks before the next literal)
    return parts, kinds


# What no reading of libcst's turns into text (`_Builder.parts` says `_Unsupported`): no string, `+`, `%` or
# conditional at the top, and no call but one of a function that is neither a translation nor `.join` or
# `.format` (below).
_NOT_TEXT = (
    ast.Name, ast.Attribute, ast.Subscript, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp,
    ast.DictComp, ast.GeneratorExp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Lambda, ast.Await,
)  # fmt: skip


def _quick_other(source: str) -> str | None:
    """The source of an expression that is not text (a name, a list, a subscript, a comparison, a number,
    ...) as libcst's code for it would be; None for any other, or where libcst must say."""
    code = _bare(source)
    if code is None or _DOTTED.fullmatch(code):  # (a name or an attribute: no parse needed)
        return code
    top = _expression(code)
    if top is None:
        return None
    if isinstance(top, ast.Call):
        function = top.func
        if isinstance(function, ast.Name) and function.id in _TRANSLATORS:
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
    reads it (`_parse`). (Cached: a message that is no quick literal is parsed by both readings below.)"""
    try:
        return ast.parse(f"({code}\n)", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


class _Decline(Exception):
    """A shape the quick reading of an operation leaves to libcst."""


def _quick_operation(builder: _Builder, source: str) -> list[_Part] | str | None:
    """The parts `_Builder.parts` gives `A + B` with text on either side, or `A if c else B`, read from
    Python's tree of the expression and the quick reading of its string literals; its code (as libcst's,
    `_bare_code`) where `_Builder.parts` says `_Unsupported` (what is read is no text: the caller makes it
    a placeholder); None where libcst must read it: a `%` or `.format` of a literal, a `.join`, a
    translation, a literal the quick reading leaves, parentheses around it all, a comment. The builder is
    changed as libcst's reading would change it, or not at all for None."""
    code = source.strip()
    if "#" in code or "\r" in code:
        return None
    top = _expression(code)
    if not isinstance(top, ast.BinOp | ast.IfExp):
        return None
    reader = _OperationReader(_Builder(builder.joins), code)  # (a decline leaves no trace)
    if reader.segment(top) != code:  # (in parentheses of its own: libcst's code for it leaves them out)
        return None
    try:
        parts: list[_Part] | str = reader.parts(top)
    except _Decline:
        return None
    except _Unsupported:
        parts = code
    reader.merge_into(builder)
    return parts


class _OperationReader:
    """`_Builder.parts` over Python's tree of `code` (see _quick_operation), into a builder of its own."""

    def __init__(self, builder: _Builder, code: str) -> None:
        self.builder = builder
        self.lines = f"({code}".split("\n")  # (as `_expression` parsed it)

    def merge_into(self, builder: _Builder) -> None:
        builder.kinds |= self.builder.kinds
        for warning in self.builder.warnings:
            builder._warn(warning)

    def parts(self, node: ast.expr) -> list[_Part]:
        if isinstance(node, ast.Call):
            self._no_text_call(node)
            raise _Unsupported
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            raise _Unsupported
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            read = _quick_read(self.segment(node), joins=bool(self.builder.joins))
            if read is None:
                raise _Decline
            parts, kinds = read
            self.builder.kinds |= kinds
            return parts
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add) and (self._is_text(node.left) or self._is_text(node.right)):
                self.builder.kinds.add(MessageKind.CONCAT)
                return self._operand(node.left) + self._operand(node.right)
            if isinstance(node.op, ast.Mod) and self._is_literal(node.left):
                raise _Decline
            raise _Unsupported
        if isinstance(node, ast.IfExp):
            return self.builder.either(self.parts(node.body), self.parts(node.orelse))
        raise _Unsupported

    def _operand(self, node: ast.expr) -> list[_Part]:
        try:
            return self.parts(node)
        except _Unsupported:
            # Its code as libcst's without the node's own parentheses: Python's tree leaves them out of its
            # positions, but for a tuple's and a generator's.
            if isinstance(node, ast.Tuple | ast.GeneratorExp):
                raise _Decline from None
            return [_Hole(self.segment(node))]

    @staticmethod
    def _no_text_call(node: ast.Call) -> None:
        """Decline the calls libcst may read as text: a translation, `.join` and `.format`."""
        function = node.func
        if (isinstance(function, ast.Name) and function.id in _TRANSLATORS) or (
            isinstance(function, ast.Attribute) and function.attr in ("join", "format")
        ):
            raise _Decline

    def _is_text(self, node: ast.expr) -> bool:  # (`_is_text`)
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)):
            return True
        if isinstance(node, ast.Call):
            self._no_text_call(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._is_text(node.left) or self._is_text(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self._is_literal(node.left)
        return False

    def _is_literal(self, node: ast.expr) -> bool:  # (`_is_literal`)
        if isinstance(node, ast.Call):
            self._no_text_call(node)
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    def segment(self, node: ast.expr) -> str:
        return node_source(node, self.lines, lambda line: self.lines[line - 1].encode())


def _bare(source: str) -> str | None:
    """The source of an expression without the blanks around it, as libcst's code for it without its own
    parentheses (`_bare_code`): None if it starts with one (it may or may not be the expression's), or if
    it may hold a comment (libcst leaves one that ends the text out)."""
    code = source.strip()
    return None if code.startswith("(") or "#" in code else code


def _quick_fields(body: str, *, is_raw: bool, joins: bool) -> list[_Part] | None:
    """An f-string's text and fields, or None where libcst must read them (see `_quick_parts`)."""
    if "\\N" in body:  # `\N{NAME}` is an escape, not a field
        return None
    out: list[_Part] = []
    start = index = 0
    while (brace := _BRACE.search(body, index)) is not None:
        index = brace.start()
        if body.startswith(body[index] * 2, index):  # `{{` or `}}`
            index += 2
            continue
        if body[index] == "}":
            return None
        field = _quick_field(body, index + 1, joins)
        if field is None:
            return None
        hole, end = field
        out.append(_render_text(body[start:index], is_raw=is_raw, fstring=True))
        out.append(hole)
        start = index = end
    out.append(_render_text(body[start:], is_raw=is_raw, fstring=True))
    return out


def _quick_field(body: str, start: int, joins: bool) -> tuple[_Hole, int] | None:
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
    return _Hole(expression, conversion=conversion, spec=spec, debug=debug, verbatim=verbatim), index + 1


def _single(builder: _Builder, source: str) -> list[_Part]:
    quick = _quick_parts(builder, source)
    if quick is not None:
        return quick
    if (code := _quick_other(source)) is not None:  # its value, read at run time
        builder.kinds.add(MessageKind.DYNAMIC)
        return [_Hole(code)]
    operation = _quick_operation(builder, source)
    if isinstance(operation, str):
        builder.kinds.add(MessageKind.DYNAMIC)
        return [_Hole(operation)]
    if operation is not None:
        return operation
    node = _parse(source)
    if node is None:
        with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = ast.literal_eval(source.strip())  # too deep for libcst, as thousands of literals are
            if isinstance(value, str):
                builder.kinds.add(MessageKind.LITERAL)
                return [value]
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

# Pattern: a template's parts (text, placeholders, regex of its own) laid out as message, regex and placeholders.
from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from extractor.model.scanned import ScannedPlaceholder

__all__ = ["Hole", "Part", "Raw", "adjacent", "one_of", "optional", "pattern_for", "quoted"]

# Only the characters that mean something in a Python regex are escaped, so a literal message without
# them is its own pattern (as in the reference records).
_REGEX_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")
_GROUP = re.compile(r"\(\?P<p\d+>")


@dataclass(frozen=True)
class Hole:
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
class Raw:
    """Text of the message whose regex is not its plain escape (a quote either way, an optional item)."""

    text: str
    regex: str
    # For the `|B)` that ends `A if c else B`: B's parts, so that a repr around it escapes them too.
    alternative: tuple[Part, ...] | None = None


Part = str | Hole | Raw
_Conversion = Literal["r", "s", "a"] | None


def _escape(text: str) -> str:
    return _REGEX_SPECIAL.sub(r"\\\1", text)


def pattern_for(parts: Sequence[Part]) -> tuple[str, str, tuple[ScannedPlaceholder, ...]]:
    """Lay out parts as (message, regex, placeholders); each placeholder is one capture group."""
    message: list[str] = []
    pattern: list[str] = []
    placeholders: list[ScannedPlaceholder] = []
    offset = 0
    for part in _merge(parts):
        if isinstance(part, str | Raw):
            text = part if isinstance(part, str) else part.text
            message.append(text)
            pattern.append(_escape(part) if isinstance(part, str) else part.regex)
            offset += len(text)
            continue
        text = part.text()
        group = f"p{len(placeholders)}"
        placeholders.append(
            ScannedPlaceholder(
                expression=part.expression,
                conversion=cast(_Conversion, part.conversion),
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


def adjacent(placeholders: Sequence[ScannedPlaceholder]) -> bool:
    """Tell whether two placeholders touch (no literal text between them to split their values)."""
    return any(a.end == b.start for a, b in itertools.pairwise(placeholders))


def _merge(parts: Sequence[Part]) -> list[Part]:
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    return merged


def one_of(first: list[Part], second: list[Part]) -> list[Part]:
    """`A if c else B` of two strings, given the parts of each: the message shows A, the pattern accepts
    either (B's values are not captured)."""
    _, other, _ = pattern_for(second)
    other = _GROUP.sub("(?:", other)
    return [Raw("", "(?:"), *first, Raw("", f"|{other})", tuple(second))]


def optional(parts: list[Part], optional: bool) -> list[Part]:
    """Parts that the pattern lets be absent (the message keeps them), when `optional`."""
    return [Raw("", "(?:"), *parts, Raw("", ")?")] if optional else parts


def quoted(parts: Sequence[Part]) -> list[Part]:
    """The parts of a string shown by `repr`: text escaped as repr escapes it, between the quotes repr
    picks for the text (a placeholder's value may hold quotes too, so the pattern accepts either)."""
    text = "".join(part for part in parts if isinstance(part, str))
    quote = '"' if "'" in text and '"' not in text else "'"
    return [Raw(quote, "['\"]"), *_escaped(parts, quote), Raw(quote, "['\"]")]


def _escaped(parts: Sequence[Part], quote: str) -> list[Part]:
    """The text of parts escaped as `repr` escapes it between `quote`s: every literal character, the other
    branch of an `A if c else B` too (a placeholder's value is printed as it comes)."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, Raw) and part.alternative is not None:
            _, other, _ = pattern_for(_escaped(part.alternative, quote))
            out.append(Raw(part.text, f"|{_GROUP.sub('(?:', other)})"))
        elif not isinstance(part, str):
            out.append(part)
        else:
            for char in part:
                if char in "'\"":
                    out.append(Raw("\\" + char if char == quote else char, f"\\\\?{char}"))
                else:
                    out.append(repr(char)[1:-1])
    return out

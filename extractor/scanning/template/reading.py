# Reading: what both readings of a message share (what one found, a literal's text, the expression no text).
from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Mapping, Sequence

from extractor.model.kinds import MessageKind
from extractor.scanning.template.pattern import Part, one_of

__all__ = ["TRANSLATORS", "Joined", "Reading", "Unsupported", "bare", "render_text"]

# The items a list joined into the message holds: where it started when not a list display (its own
# items unknown), then each item's source and whether it is there on every path.
Joined = tuple[str | None, Sequence[tuple[str, bool]]]

# The calls whose one string argument is a message's source-language text (`_("...")`, `gettext("...")`).
TRANSLATORS = frozenset({"_", "gettext", "gettext_lazy", "ugettext", "ugettext_lazy", "lazy_gettext", "_l", "N_"})

_ESCAPE = re.compile(
    r"\\N\{[^}]*\}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\[0-7]{1,3}|\\\r\n|\\.|\\\n|\{\{|\}\}",
    re.S,
)


class Unsupported(Exception):
    """The expression is not a string the extractor can read statically."""


class Reading:
    """What reading one message found, whichever reader read it: the shapes it met and its warnings; with
    the lists joined into it whose items are known."""

    def __init__(self, joins: Mapping[str, Joined] | None = None) -> None:
        self.kinds: set[MessageKind] = set()
        self.warnings: list[str] = []
        self.joins = joins or {}

    def warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def merge(self, other: Reading) -> None:
        """Take in what a reading of a part of the message found."""
        self.kinds |= other.kinds
        for warning in other.warnings:
            self.warn(warning)

    def either(self, first: list[Part], second: list[Part]) -> list[Part]:
        """`A if c else B` of two strings, given the parts of each (see `one_of`)."""
        self.warn("one-of-branches")
        return one_of(first, second)


def render_text(raw: str, *, is_raw: bool, fstring: bool) -> str:
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


def bare(source: str) -> str | None:
    """The source of an expression without the blanks around it, as libcst's code for it without its own
    parentheses (`cst.bare_code`): None if it starts with one (it may or may not be the expression's), or
    if it may hold a comment (libcst leaves one that ends the text out)."""
    code = source.strip()
    return None if code.startswith("(") or "#" in code else code

# Site lexer: a Pygments lexer for Python that reads a token per regex match, for highlighting thousands of windows.
from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterator
from functools import cache
from typing import ClassVar

from pygments.lexer import Lexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    _TokenType,
)

__all__ = ["FastPythonLexer"]

# Pygments' own PythonLexer tries its rules one after another (about 30 regexes a token), which makes a
# site of a whole package's 100,000 lines of source windows take many seconds. This one matches one
# alternation per token and gives the same token types for what a page shows: keywords, names of
# builtins, exceptions, functions, classes and decorators, strings, comments, numbers and operators.
# Windows start anywhere in a file; a window that starts inside a string is read as code, as
# Pygments would read it.
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\f\r]+|\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>(?:[rRbBuUfFtT]{1,2})?(?:\"\"\"(?:\\.|[^\\])*?(?:\"\"\"|\Z)|'''(?:\\.|[^\\])*?(?:'''|\Z)
        |"(?:\\.|[^"\\\n])*(?:"|$)|'(?:\\.|[^'\\\n])*(?:'|$)))
  | (?P<number>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+
        |(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)
  | (?P<name>[^\W\d]\w*)
  | (?P<decorator>@[^\W\d][\w.]*)
  | (?P<op>\*\*=?|//=?|<<=?|>>=?|->|:=|[-+*/%&|^~<>=!@]=?)
  | (?P<punct>[()\[\]{},;.:\\])
  | (?P<other>.)
    """,
    re.VERBOSE | re.MULTILINE | re.DOTALL,
)

_CONSTANTS = frozenset({"True", "False", "None"})
_WORD_OPERATORS = frozenset({"and", "or", "not", "in", "is"})
_NAMESPACE = frozenset({"import", "from"})
_KEYWORDS = frozenset(keyword.kwlist) - _CONSTANTS - _WORD_OPERATORS
_PSEUDO = frozenset({"self", "cls"})
_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)
_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_")) - _EXCEPTIONS - _CONSTANTS


# A name's type depends on the token before it only after these; else on the name alone (_name, memoized).
_AFTER = {".": Name, "def": Name.Function, "class": Name.Class}


@cache
def _name(word: str) -> _TokenType:
    if word in _KEYWORDS:
        return Keyword.Namespace if word in _NAMESPACE else Keyword
    if word in _CONSTANTS:
        return Keyword.Constant
    if word in _WORD_OPERATORS:
        return Operator.Word
    if word in _PSEUDO:
        return Name.Builtin.Pseudo
    if word in _EXCEPTIONS:
        return Name.Exception
    if word in _BUILTINS:
        return Name.Builtin
    return Name


_STRING_TYPES = {'"""': String.Doc, "'''": String.Doc, '"': String.Double, "'": String.Single}
_SIMPLE = {
    "ws": Text,  # Pygments styles Whitespace for a visible-whitespace filter; a page shows plain blanks
    "comment": Comment.Single,
    "number": Number,
    "decorator": Name.Decorator,
    "op": Operator,
    "punct": Punctuation,
    "other": Text,
}


class FastPythonLexer(Lexer):  # type: ignore[misc]
    """Lex Python source one regex match per token."""

    name = "Python (fast)"
    aliases: ClassVar[list[str]] = ["python-fast"]
    filenames: ClassVar[list[str]] = []

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        previous = ""
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            value = match.group()
            if kind == "ws":
                yield match.start(), Text, value
            elif kind == "name":
                yield match.start(), _AFTER.get(previous) or _name(value), value
                previous = value
            elif kind == "string":
                body = value.lstrip("rRbBuUfFtT")
                yield match.start(), _STRING_TYPES.get(body[:3], _STRING_TYPES[body[0]]), value
                previous = value
            else:
                assert kind is not None
                yield match.start(), _SIMPLE[kind], value
                previous = value

# Kinds: the scan's and the records' enumerations, and pieces, without pydantic (a worker process scans
# without importing it, and an extraction writes its catalog without it).
from __future__ import annotations

import builtins
from enum import StrEnum
from typing import NamedTuple

__all__ = ["ConditionKind", "ErrorType", "MessageKind", "Piece", "builtin_exception"]


def builtin_exception(name: str | None) -> type[BaseException] | None:
    """The builtin exception class of that name, or None."""
    value = getattr(builtins, name or "", None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


class ErrorType(StrEnum):
    """A coarse family of errors, decided by the raised class alone (the table in docs/record-format.md)."""

    VALIDATION = "validation"
    UNSUPPORTED = "unsupported"
    LOOKUP = "lookup"
    STATE = "state"
    IO = "io"
    DEPENDENCY = "dependency"
    TIMEOUT = "timeout"
    RESOURCE = "resource"
    INTERNAL = "internal"
    OTHER = "other"


class MessageKind(StrEnum):
    """How the message argument of a raise is written in the source."""

    LITERAL = "literal"
    FSTRING = "fstring"
    CONCAT = "concat"
    PERCENT = "percent"
    FORMAT = "format"
    VARIABLE = "variable"
    DYNAMIC = "dynamic"
    EMPTY = "empty"


class ConditionKind(StrEnum):
    """The compound statement (or branch of one) that encloses a raise."""

    IF = "if"
    ELIF = "elif"
    ELSE = "else"
    WHILE = "while"
    FOR = "for"
    WITH = "with"
    TRY = "try"
    EXCEPT = "except"
    FINALLY = "finally"
    MATCH_CASE = "match-case"


class Piece(NamedTuple):
    """A def or class (lines start..end) whose sites depend on its own text and the classes around it.

    A tuple (a JSON array in the cache), not a model: a file has dozens, a package tens of thousands.
    """

    hash: str
    start: int
    end: int
    first: str  # the piece's first line, to find where it may start in a new version of the file
    last: str  # its last line: most places that start like the piece are ruled out without hashing
    scope: tuple[str, ...]  # the classes it sits in, outermost first

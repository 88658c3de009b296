# Source: a file's bytes as the scanner reads them (the prefilter, decoding, lines, source windows).
from __future__ import annotations

import codecs
import io
import re
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

__all__ = [
    "ANY_EXCEPTION",
    "LONG_LINE",
    "ScanOptions",
    "bounded",
    "could_hold",
    "declares_encoding",
    "decode",
    "lines_with_raise",
    "node_source",
    "split_lines",
    "window",
]

ANY_EXCEPTION = "*"
_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ScanOptions:
    """The options that decide what a file's sites are (and so key a cache of them)."""

    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18

    @property
    def any_exception(self) -> bool:
        return ANY_EXCEPTION in self.exceptions


def could_hold(data: bytes, options: ScanOptions) -> bool:
    """Tell cheaply whether a file's bytes can hold a raise in scope (the text prefilter).

    A raise of class C needs the word `raise` and C's name in the text; an encoding other than UTF-8
    could hide them, so a file that declares one is always parsed.
    """
    if b"raise" not in data:
        return declares_encoding(data)
    if options.any_exception:
        return True
    return any(name.encode() in data for name in options.exceptions) or declares_encoding(data)


# PEP 263 as tokenize applies it: a comment on line 1, or on line 2 after a blank or comment line 1,
# whatever their length; lines end at b"\n", as tokenize reads them.
# (match() anchors the patterns where a line starts.)
_COOKIE = re.compile(rb"[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
_BLANK = re.compile(rb"[ \t\f]*(?:[#\r\n]|$)")


def declares_encoding(data: bytes) -> bool:
    """Tell whether source bytes declare their encoding (a PEP 263 coding line), after any UTF-8 BOM."""
    start = 3 if data.startswith(codecs.BOM_UTF8) else 0
    end = data.find(b"\n", start)
    first = len(data) if end < 0 else end + 1
    if _COOKIE.match(data, start, first):
        return True
    if end < 0 or not _BLANK.match(data, start, first):
        return False
    second = data.find(b"\n", first)
    return _COOKIE.match(data, first, len(data) if second < 0 else second + 1) is not None


def decode(data: bytes) -> str:
    """Decode source bytes as Python does: BOM, then PEP 263 coding line, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def split_lines(text: str) -> list[str]:
    """Split source into lines as Python counts them (\\r\\n, \\r or \\n), without a last empty one."""
    lines = text.split("\n") if "\r" not in text else _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# The characters a window keeps of one line (vLLM's longest line has 324): a record must not repeat a
# whole minified or generated line, or one line holding thousands of raises would make a catalog
# thousands of times the size of its source.
LONG_LINE = 1000


def node_source(
    node: ast.expr | ast.stmt | ast.pattern | ast.keyword, lines: Sequence[str], line_bytes: Callable[[int], bytes]
) -> str:
    """The exact source of a node, from the lines it was parsed from (`line_bytes(n)`: line n, 1-based,
    encoded: Python's tree counts columns in UTF-8 bytes)."""
    start, end = node.lineno, node.end_lineno or node.lineno
    col, end_col = node.col_offset, node.end_col_offset or 0
    if start == end:
        return line_bytes(start)[col:end_col].decode()
    first = line_bytes(start)[col:].decode()
    middle = lines[start : end - 1]
    last = line_bytes(end)[:end_col].decode()
    return "\n".join([first, *middle, last])


def window(lines: Sequence[str], line: int, context: int, column: int = 0) -> tuple[int, int, str]:
    """Return the 1-based bounds and text of the source window around a line, clipped to the file.

    A line longer than LONG_LINE characters is cut, and says where and by how much: the raise's own
    line keeps LONG_LINE characters from `column` (where the raise starts), the others their start.
    """
    start = max(1, line - context)
    end = min(len(lines), line + context)
    kept = lines[start - 1 : end]
    if any(len(text) > LONG_LINE for text in kept):
        kept = [_cut(text, column if number == line else 0) for number, text in enumerate(kept, start)]
    return start, end, "\n".join(kept)


def bounded(text: str) -> str:
    """Source text a record copies (a condition's test, a function's name, a cause): at most LONG_LINE
    characters, saying how many were cut, as a window's lines do; copied into every record under it, a whole
    generated expression would make the catalog many times the size of its source."""
    return _cut(text, 0)


def _cut(text: str, keep_from: int) -> str:
    if len(text) <= LONG_LINE:
        return text
    begin = max(0, min(keep_from, len(text) - LONG_LINE))
    stop = begin + LONG_LINE
    head = f"[...{begin} characters cut...]" if begin else ""
    tail = f"[...{len(text) - stop} characters cut...]" if stop < len(text) else ""
    return head + text[begin:stop] + tail


def lines_with_raise(source: str, lines: Sequence[str]) -> list[int]:
    """The numbers of the lines of `source` (split as `lines`) that mention `raise`, in order."""
    if "\r" in source:
        return [number for number, line in enumerate(lines, start=1) if "raise" in line]
    found: list[int] = []
    line, counted = 1, 0
    at = source.find("raise")
    while at >= 0:  # the newlines between two mentions are counted by str.count, not line by line
        line += source.count("\n", counted, at)
        counted = at
        if not found or found[-1] != line:
            found.append(line)
        at = source.find("raise", at + 5)
    return found

# Markdown: text and code set into a Markdown page so that it reads as written, whatever it holds.
"""Text that a page shows as written (a message, a path): what Markdown would take for syntax is escaped,
and line breaks (any of them: a table row or a list item is one line) become spaces."""

from __future__ import annotations

import os
import re
from urllib.parse import quote

__all__ = ["code", "fence", "image", "inline_code", "is_web_address", "link", "text"]

_SYNTAX = "|*_`<>[]~&$"  # ($: GitHub reads `$...$` as mathematics)
_TICKS = re.compile(r"`+")


def _ticks(value: str, at_least: int) -> str:
    """A run of backticks longer than any in `value`, and at least `at_least` long."""
    return "`" * max(at_least, max(map(len, _TICKS.findall(value)), default=0) + 1)


def _one_line(value: str) -> str:
    return " ".join(value.splitlines())  # \n, \r\n, \r, and the rarer breaks splitlines knows


def text(value: str) -> str:
    """Inline text: emphasis, code, links, HTML, strikethrough, entities, mathematics and table pipes shown as
    typed."""
    value = _one_line(value.replace("\\", "\\\\"))
    for char in _SYNTAX:
        value = value.replace(char, "\\" + char)
    return value


def code(value: str, *, cell: bool = True) -> str:
    """An inline code span holding `value` (backticks in it included), fit for a table cell (its pipes
    escaped, which a table reads inside code too); with `cell` false, for a line of text, as it is."""
    value = _one_line(value)
    ticks = _ticks(value, 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    span = f"{ticks}{pad}{value}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def inline_code(value: str) -> str:
    """`code` for a line of text, outside any table: its pipes as they are."""
    return code(value, cell=False)


def fence(value: str, language: str = "text") -> list[str]:
    """A fenced block holding `value`, its fence longer than any run of backticks in it."""
    ticks = _ticks(value, 3)
    return [f"{ticks}{language}", value, ticks]


# What a link's address keeps as it is; anything else (a space, a parenthesis, a table's pipe, a quote) is
# percent-encoded, so that the address cannot end the link, the table row or the page's syntax early.
_ADDRESS_SAFE = ":/?#@!$&*+,;=%-._~"


def is_web_address(address: str) -> bool:
    """Whether an address may be a link's: a web one. Anything else (a doctored catalog's `javascript:`,
    which runs script when clicked) is shown, never linked, in Markdown and in the site's pages."""
    return address.startswith(("https://", "http://"))


def link(label: str, address: str) -> str:
    """A link showing `label` as written, to `address` if it is a web address; else only the label."""
    if not is_web_address(address):
        return text(label)
    # (`surrogatepass`: a lone surrogate a doctored catalog holds is percent-encoded too, never an error)
    return f"[{text(label)}]({quote(address, safe=_ADDRESS_SAFE, errors='surrogatepass')})"


# What an image's path keeps as it is: a file's path, where `?`, `#` and `%` are characters of its name,
# not a query, a fragment or an escape (a space or a parenthesis is percent-encoded too).
_PATH_SAFE = "/:._-~"


def image(alt: str, path: str) -> str:
    """An image showing the file at `path` (relative to the page, or absolute), `alt` its text; a path's
    name that is not UTF-8 (`--output` given in bytes) is percent-encoded byte for byte, as it is on disk."""
    return f"![{text(alt)}]({quote(os.fsencode(path), safe=_PATH_SAFE)})"

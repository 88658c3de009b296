# Highlight: a record's source window as highlighted HTML lines (Pygments, with the site's own lexer), and the
# stylesheet that colours them readably.
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from html import escape
from pathlib import Path
from typing import Any

from markupsafe import Markup

from extractor.model.records import CatalogLine, Record

STYLE = "default"


@dataclass
class Highlighter:
    """Highlights source windows, lexing each run of lines a file's windows cover once, in context."""

    # (file, line number, the line's text) -> its HTML: a line over LONG_LINE characters is cut around each
    # record's own raise, so two records on one long line hold two texts of it, each shown as its record has it.
    lines: dict[tuple[str, int, str], str] = field(default_factory=dict)
    # The HTML of the short tokens met so far, by token type and text: most tokens are names, operators and
    # blanks that recur all over a package's source.
    fragments: dict[Any, dict[str, str]] = field(default_factory=dict)

    def add(self, catalog: Iterable[CatalogLine]) -> None:
        by_file: dict[str, dict[int, str]] = {}
        apart: list[Record] = []  # records whose window holds a line another record's holds otherwise
        for line in catalog:
            record = line.record
            texts = by_file.setdefault(record.filePath, {})
            own = list(zip(window_numbers(record), record.sourceCode.split("\n"), strict=True))
            if any(texts.setdefault(number, text) != text for number, text in own):
                apart.append(record)
        for path, texts in by_file.items():
            numbers = sorted(texts)
            start = 0
            for i in range(1, len(numbers) + 1):
                if i == len(numbers) or numbers[i] != numbers[i - 1] + 1:
                    self._lex(path, [(n, texts[n]) for n in numbers[start:i]])
                    start = i
        for record in apart:  # (lexed on their own: rarely more than the records on one generated line)
            self._lex(record.filePath, list(zip(window_numbers(record), record.sourceCode.split("\n"), strict=True)))

    def _lex(self, path: str, run: list[tuple[int, str]]) -> None:
        html = highlight(path, "\n".join(text for _, text in run), self.fragments)
        for (number, text), markup in zip(run, html, strict=True):
            self.lines.setdefault((path, number, text), markup)

    def window(self, record: Record, marked: range) -> Markup:
        """The record's source window as HTML, a span per line carrying its number, the marked lines flagged.

        Its lines are those its `sourceCode` holds, numbered from `sourceCodeStart` (as `add` took them):
        a record whose `sourceCodeEnd` says otherwise (the model does not tie them) is shown as it is."""
        out = []
        for n, text in zip(window_numbers(record), record.sourceCode.split("\n"), strict=True):
            css = "line raise" if n in marked else "line"
            out.append(f'<span id="L{n}" class="{css}" data-n="{n}">{self.lines[(record.filePath, n, text)]}</span>')
        return Markup("".join(out))


def window_numbers(record: Record) -> range:
    """The numbers of the lines of a record's source window: one per line its `sourceCode` holds."""
    return range(record.sourceCodeStart, record.sourceCodeStart + record.sourceCode.count("\n") + 1)


@cache
def _lexer(suffix: str) -> Any:
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    if suffix in (".py", ".pyi"):
        from extractor.publish.site.lexer import FastPythonLexer

        return FastPythonLexer()
    try:
        return get_lexer_for_filename(f"x{suffix}", stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


@cache
def style() -> Any:
    from pygments.styles import get_style_by_name

    return get_style_by_name(STYLE)


@cache
def css_class(token_type: Any) -> str:
    """Pygments' short CSS class of a token type, or "" where the style gives it no look of its own."""
    from pygments.token import STANDARD_TYPES

    if not any(style().style_for_token(token_type).values()):
        return ""
    while token_type not in STANDARD_TYPES:
        token_type = token_type.parent
    return str(STANDARD_TYPES[token_type])


def highlight(path: str, text: str, fragments: dict[Any, dict[str, str]] | None = None) -> list[str]:
    """Highlight `text` as the file `path` holds it, and return one line of HTML per line of text; `fragments`
    keeps the HTML of the short tokens met, for the next texts of its owner (a Highlighter's)."""
    if fragments is None:
        fragments = {}
    lines: list[str] = []
    parts: list[str] = []
    for _, token_type, value in _lexer(Path(path).suffix).get_tokens_unprocessed(text):
        if value == "\n":
            lines.append("".join(parts))
            parts = []
            continue
        of_type = fragments.get(token_type)
        if of_type is None:
            of_type = fragments[token_type] = {}
        html = of_type.get(value)
        if html is None:
            if "\n" in value:
                first, *rest = value.split("\n")
                parts.append(_fragment(token_type, first))
                for part in rest:
                    lines.append("".join(parts))
                    parts = [_fragment(token_type, part)]
                continue
            html = _fragment(token_type, value)
            if len(value) <= _FRAGMENT_CACHED:
                of_type[value] = html
        parts.append(html)
    lines.append("".join(parts))
    want = text.count("\n") + 1
    return lines[:want] + ["" for _ in range(want - len(lines))]


_FRAGMENT_CACHED = 64  # characters of the longest token whose HTML is kept


def _fragment(token_type: Any, value: str) -> str:
    """A token (a part of one line) as HTML: a span of its class, or bare text where its class has no look."""
    if not value:
        return ""
    css = css_class(token_type)
    return f'<span class="{css}">{escape(value, False)}</span>' if css else escape(value, False)

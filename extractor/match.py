# Match: a rendered error (or a log) -> the catalog records whose patterns explain it, with the values.
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from extractor.models import CatalogLine, Placeholder

__all__ = ["Match", "MatchResult", "Matcher", "literal_pieces"]

# `ValueError: ...`, `vllm.errors.ConfigError: ...`: the exception class that prefixes a printed error.
_CLASS_PREFIX = re.compile(r"(?<![\w.])(?P<cls>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Warning))(?::\s?|$)")
_OPTIONAL = frozenset({"optional-items", "one-of-branches"})
_SEPARATORS = " \t\n.,;:|-"
_ERROR_LEVEL = re.compile(r"^\W{0,3}(?:\(\w[^)]*\)\s*)?(?:ERROR|CRITICAL|FATAL)\b")


@dataclass(frozen=True)
class Match:
    """One record that explains an input, with the value each placeholder took."""

    line: CatalogLine
    values: dict[str, str]
    coverage: int  # characters of the input covered by the template's literal text

    def to_json(self) -> dict[str, Any]:
        record = self.line.record
        return {
            "id": record.id,
            "slug": record.slug,
            "filePath": record.filePath,
            "lineNumber": record.lineNumber,
            "githubUrl": record.githubUrl,
            "errorMessage": record.errorMessage,
            "values": self.values,
        }


@dataclass(frozen=True)
class MatchResult:
    """What one input yielded: whether it looks like an error, and its best matches."""

    input: str
    is_error: bool
    matches: tuple[Match, ...] = field(default=())

    @property
    def holds_message(self) -> bool:
        return self.is_error or bool(self.matches)


def literal_pieces(line: CatalogLine) -> list[str]:
    """Split a template into its literal text, dropping the placeholders."""
    message = line.record.errorMessage
    pieces, position = [], 0
    for placeholder in line.extraction.placeholders:
        pieces.append(message[position : placeholder.start])
        position = placeholder.end
    pieces.append(message[position:])
    return [piece for piece in pieces if piece]


@dataclass
class _Entry:
    line: CatalogLine
    coverage: int
    source: str
    compiled: tuple[re.Pattern[str], re.Pattern[str]] | None = None

    def patterns(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """Compile on first use: (the whole message, the message ending the input)."""
        if self.compiled is None:
            self.compiled = (re.compile(self.source, re.S), re.compile(f"(?:{self.source})\\s*\\Z", re.S))
        return self.compiled


class Matcher:
    """Finds the records whose patterns match a text, trying only those whose longest literal is in it."""

    def __init__(self, lines: Iterable[CatalogLine]) -> None:
        self.entries: list[_Entry] = []
        self.placeholder_only: dict[str, list[int]] = {}
        self.automaton = ahocorasick.Automaton()
        keys: dict[str, list[int]] = {}
        for line in lines:
            pieces = literal_pieces(line)
            index = len(self.entries)
            self.entries.append(_Entry(line, sum(len(p) for p in pieces), line.record.messagePattern))
            if pieces:
                # A template with parts that may not print (a list item not appended, another branch):
                # its longest literal may be missing from a rendering, so each literal is a key, without
                # the separators and punctuation it may share with a part that did not print.
                optional = _OPTIONAL & set(line.extraction.warnings)
                for key in {p.strip(_SEPARATORS) or p for p in pieces} if optional else [max(pieces, key=len)]:
                    keys.setdefault(key, []).append(index)
            else:
                self.placeholder_only.setdefault(line.record.errorClass, []).append(index)
        for key, indexes in keys.items():
            self.automaton.add_word(key, indexes)
        if keys:
            self.automaton.make_automaton()
        self._indexed = bool(keys)

    def candidates(self, text: str) -> set[int]:
        if not self._indexed:
            return set()
        found: set[int] = set()
        for _, indexes in self.automaton.iter(text):
            found.update(indexes)
        return found

    def match(self, text: str) -> MatchResult:
        """Match one input (a message, a log line or a whole text) against the catalog."""
        stripped = text.rstrip("\r\n")
        prefix = _CLASS_PREFIX.search(stripped)
        error_class = prefix["cls"].rpartition(".")[2] if prefix else None
        message = stripped[prefix.end() :] if prefix else stripped
        is_error = prefix is not None or bool(_ERROR_LEVEL.match(stripped))
        found = self._try(self.candidates(stripped), message, stripped)
        if not found and error_class is not None:
            found = self._try(self.placeholder_only.get(error_class, []), message, None)
        if not found:
            return MatchResult(stripped, is_error)
        rank = [(m.line.record.errorClass == error_class, m.coverage) for m in found]
        best = max(rank)
        top = [m for m, r in zip(found, rank, strict=True) if r == best]
        top.sort(key=lambda m: (m.line.record.filePath, m.line.record.lineNumber, m.line.record.id))
        return MatchResult(stripped, is_error, tuple(top))

    def _try(self, indexes: Iterable[int], message: str, text: str | None) -> list[Match]:
        out = []
        for index in sorted(indexes):
            entry = self.entries[index]
            whole, ending = entry.patterns()
            found = whole.fullmatch(message)
            if found is None and text is not None:
                found = ending.search(text)
            if found is None:
                continue
            out.append(Match(entry.line, _values(entry.line, found), entry.coverage))
        return out


def _values(line: CatalogLine, found: re.Match[str]) -> dict[str, str]:
    """The text each placeholder took; placeholders with no text between them (`{a}{b}`) could split
    their text anywhere, so the run is one value, under the run's template text."""
    message = line.record.errorMessage
    values: dict[str, str] = {}
    run: list[Placeholder] = []
    for placeholder in [*line.extraction.placeholders, None]:
        if placeholder is not None and (not run or run[-1].end == placeholder.start):
            run.append(placeholder)
            continue
        if len(run) == 1 and found.group(run[0].group) is not None:
            values.setdefault(run[0].expression, found.group(run[0].group))
        elif run and all(found.group(p.group) is not None for p in run):
            values.setdefault(
                message[run[0].start : run[-1].end], found.string[found.start(run[0].group) : found.end(run[-1].group)]
            )
        run = [placeholder] if placeholder is not None else []
    return values


def match_all(matcher: Matcher, inputs: Sequence[str], *, log: bool) -> list[MatchResult]:
    """Match every input; from a log, keep only lines that matched or look like errors."""
    results = [matcher.match(text) for text in inputs]
    return [r for r in results if r.holds_message] if log else results

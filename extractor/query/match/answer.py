# Answer: what matching one input answers (each template that explains it, with its values), as JSON or text.
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from extractor.query.match.pattern import CATCH_ALL, MatchTemplate, RaisePlace

__all__ = ["MIN_SCORE", "How", "Match", "MatchResult"]

MIN_SCORE = 0.5  # share of the input's characters a confident answer's literal text must explain


class How(StrEnum):
    """How an input met its template: as printed, once cleaned, as a cut prefix, or as the raise's source."""

    EXACT = "exact"
    NORMALIZED = "normalized"
    PARTIAL = "partial"
    SOURCE = "source"


_HOW_RANK = {How.EXACT: 3, How.NORMALIZED: 3, How.SOURCE: 2, How.PARTIAL: 1}


@dataclass(frozen=True, slots=True)
class Match:
    """One template that explains an input, with the value each placeholder took and how it matched."""

    template: MatchTemplate
    values: dict[str, str]
    how: How
    score: float  # share of the input's characters the template's literal text explains
    normalized: tuple[str, ...] = ()
    error_class: str | None = None
    literal: int = 0  # characters of the template's literal text the input shows (optional parts may not print)
    # The whole message after the input's `SomeError: ` is a rendering of the template, from fixed text on,
    # with as much literal text as a cut paste must show (the matcher's MIN_PARTIAL), and the classes agree:
    # long values (a list of choices, a traceback) then do not make it less certain.
    anchored: bool = False

    @property
    def confident(self) -> bool:
        enough = not self.template.catch_all and self.literal >= CATCH_ALL
        return enough and (self.score >= MIN_SCORE or self.anchored)

    @property
    def site(self) -> RaisePlace:
        """The site in the newest catalog given (the first in file order there)."""
        return self.template.newest()

    def rank(self) -> tuple[bool, bool, bool, int, bool, int]:
        return (
            self.confident,
            self.template.errorClass == self.error_class,
            # A template that explains the text to its end (even cut) beats one with text left after it.
            "trailing-text" not in self.normalized,
            _HOW_RANK[self.how],
            "period" not in self.normalized,  # a template met as printed beats one that needed a period added
            self.literal,
        )

    def releases(self) -> list[str]:
        return list(self.template.releases)

    def to_json(self, *, sites: bool = True) -> dict[str, Any]:
        site = self.site
        document: dict[str, Any] = {
            "id": site.id,
            "slug": site.slug,
            "filePath": site.filePath,
            "lineNumber": site.lineNumber,
            "githubUrl": site.githubUrl,
            "errorMessage": self.template.errorMessage,
            "values": self.values,
            "how": str(self.how),
            "partial": self.how is How.PARTIAL,
            "score": round(self.score, 3),
            "normalized": list(self.normalized),
        }
        releases = self.releases()
        if releases:
            document["releases"] = releases
        if sites and (releases or len(self.template.places()) > 1):  # every place, when there is another
            document["sites"] = [
                {"releases": list(s.releases), "filePath": s.filePath, "lineNumber": s.lineNumber, "id": s.id}
                for s in self.template.places()
            ]
        return document


@dataclass(frozen=True)
class MatchResult:
    """What one input yielded: whether it looks like an error, its confident matches, else its weak ones."""

    input: str
    is_error: bool
    matches: tuple[Match, ...] = field(default=())
    weak: tuple[Match, ...] = field(default=())
    # The class of a message Python itself prints (`No module named 'x'`): why its answers are weak ones.
    python: str | None = None

    @property
    def holds_message(self) -> bool:
        return self.is_error or bool(self.matches)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"input": self.input, "matches": [m.to_json() for m in self.matches]}
        if self.weak:
            document["weak"] = [m.to_json(sites=False) for m in self.weak]
        if self.python is not None:
            document["python"] = self.python_note
        return document

    @property
    def python_note(self) -> str:
        return f"Python itself prints this {self.python}: the raise may be the interpreter's"

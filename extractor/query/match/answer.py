# Answer: what matching one input answers (each template that explains it, with its values), as JSON or text.
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from extractor.query.match.background import Elsewhere
from extractor.query.match.pattern import CATCH_ALL, MatchTemplate, RaisePlace
from extractor.util.progress import one_line

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["MIN_SCORE", "How", "Match", "MatchResult", "Searched"]

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
    sure: bool | None = None  # what the finder decided (see find.py); None (a `raise` line's source): decided here
    info: float = 0.0  # bits the literal words shown weigh (see find.py)
    bits: float | None = None  # the evidence for this template over the best other explanation (score.py)
    text: str = ""  # the message as it stands in the input

    @property
    def confident(self) -> bool:
        if self.sure is not None:
            return self.sure
        enough = not self.template.catch_all and self.literal >= CATCH_ALL
        return enough and self.score >= MIN_SCORE

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
            "bits": None if self.bits is None else round(self.bits, 1),
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

    def to_text(self, *, weak: bool = False, note: str | None = None) -> str:
        """Show the match in lines: where, the values, in which releases, the link, and the record's history."""
        site, kind = self.site, "weak " if weak else ""
        where = one_line(f"{site.filePath}:{site.lineNumber}", limit=None)  # (a file's name may hold a line break)
        # (the evidence in whole bits, rounded down as the site rounds it)
        evidence = "" if self.bits is None else f", {math.floor(self.bits)} bits"
        lines = [f"  -> {where}  {site.slug}  [{site.id}]  ({kind}{self.how}{evidence})"]
        # (an expression written over several lines shown on one, its spaces squeezed)
        values = ", ".join(f"{' '.join(k.split())} = {v}" for k, v in self.values.items())
        if values:
            lines.append(f"     {one_line(values, limit=None)}")
        releases = self.releases()
        if len(releases) > 1:
            lines.append(f"     in {len(releases)} releases: {releases[0]} .. {releases[-1]}")
        lines.append(f"     {site.githubUrl}")
        if note is not None:
            lines.append(f"     history: {one_line(note, limit=None)}")
        return "\n".join(lines)


class Searched(Protocol):
    """Which catalogs, in which scope, an answer comes from (the match index's Provenance)."""

    def to_json(self) -> Any: ...
    def to_text(self) -> str: ...


@dataclass(frozen=True)
class Said:
    """A background message (background.py) that explains the input, with the values the input shows for it."""

    elsewhere: Elsewhere
    values: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {**self.elsewhere.to_json(), "values": self.values}


@dataclass(frozen=True)
class MatchResult:
    """What one input yielded: whether it looks like an error, its confident matches, else its weak ones."""

    input: str
    is_error: bool
    matches: tuple[Match, ...] = field(default=())
    weak: tuple[Match, ...] = field(default=())
    # Who else prints the text (Python itself, argparse, a library): the catalog's answers to it are weak ones.
    elsewhere: tuple[Said, ...] = field(default=())

    @property
    def holds_message(self) -> bool:
        return self.is_error or bool(self.matches)

    def render(
        self,
        *,
        format: str,
        notes: Callable[[str], str | None] | None = None,
        source: Searched | None = None,
        explain: Sequence[str] = (),
    ) -> str:
        """Render the answers as a line of JSON or as text; `notes` gives a record's history note by its id
        (when a history was given); `source` says which catalogs and scope were searched (JSON `catalogs`,
        the text's last line but one); `explain`, the command line that explains a record, but its last word:
        the text ends with it, for the first record found."""
        if format == "json":
            import orjson  # (matching alone never needs it)

            document = self.to_json(notes) | ({} if source is None else {"catalogs": source.to_json()})
            return orjson.dumps(document).decode() + "\n"
        text = self.to_text(notes) + ("" if source is None else f"  {source.to_text()}\n")
        if explain and self.matches:
            import shlex

            text += f"  next: {shlex.join([*explain, self.matches[0].site.slug])}\n"
        return text

    def to_json(self, notes: Callable[[str], str | None] | None = None) -> dict[str, Any]:
        matches = [m.to_json() for m in self.matches]
        if notes is not None:  # a history was given: each confident match says its record's, or null
            matches = [{**m, "history": notes(m["id"])} for m in matches]
        document: dict[str, Any] = {"input": self.input, "matches": matches}
        if self.weak:
            document["weak"] = [m.to_json(sites=False) for m in self.weak]
        if self.elsewhere:
            document["elsewhere"] = [said.to_json() for said in self.elsewhere]
        return document

    @property
    def answered(self) -> bool:
        """Whether it has anything to show beside the input: a match, a weak one, or who else prints it."""
        return bool(self.matches or self.weak or self.elsewhere)

    def to_text(self, notes: Callable[[str], str | None] | None = None) -> str:
        """Show the input, whether any record raised it, then each match, confident ones first."""
        lines = [self.input]
        if not self.matches:
            lines.append("  no matching record" + (" (only weak ones, below)" if self.weak else ""))
        for said in self.elsewhere:
            lines.append(f"  {said.elsewhere.words(said.values)}: {said.elsewhere.errorMessage}")
        for match in (*self.matches, *self.weak):
            note = notes(match.site.id) if notes is not None else None
            lines.append(match.to_text(weak=match not in self.matches, note=note))
        return "\n".join(lines) + "\n"


def log_summary(lines: int, answered: int, weakly: int) -> str:
    """The last line of a log's answers as text, which show only the lines answered: how many lines were
    read, how many a record answered with confidence, and how many only weakly."""
    said = f"{lines} line{'' if lines == 1 else 's'}, {answered} answered"
    return said + (f", {weakly} only weakly" if weakly else "") + "\n"

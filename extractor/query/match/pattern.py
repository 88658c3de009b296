# Pattern: the templates as the matcher holds them (every site of each, in every catalog), their patterns read.
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import re2

from extractor.errors import CatalogError
from extractor.query.match.kinds import ValueKind, kinds_of
from extractor.util.progress import warn

if TYPE_CHECKING:  # pydantic's import is a good part of a quick `match`: the models are only read here
    from extractor.model.records import CatalogLine

__all__ = [
    "CATCH_ALL",
    "MatchTemplate",
    "RaisePlace",
    "Row",
    "read_pattern",
    "templates_of",
    "templates_of_rows",
]

# A template with less literal text than this is a catch-all (`f"{what}: {detail}"`, `f"Invalid {x}"`): it
# can be shown as a weak answer, never a confident one. `scripts/recall.py --threshold-table` shows recall
# and false matches on real vLLM texts for thresholds from 4 to 30 (README).
CATCH_ALL = 12
_GROUP = re.compile(r"\(\?P<(\w+)>\.\*\?\)")
_COUNT = re.compile(r"\{\d+(?:,\d*)?\}\??")


class RaisePlace(NamedTuple):
    """Where catalogs hold a template: the record there, and the catalogs (releases) that hold it there."""

    releases: tuple[str, ...]
    filePath: str
    lineNumber: int
    id: str
    slug: str
    githubUrl: str
    function: str


@dataclass(slots=True)
class MatchTemplate:
    """One message template with every site, in every catalog given, that raises it."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    groups: tuple[tuple[str, str], ...]  # (capture group, placeholder expression), in message order
    messageSource: str | None
    sites: list[RaisePlace]
    releases: list[str] = field(default_factory=list)  # the labels of the catalogs holding it, in their order
    pieces: tuple[str, ...] = ()  # literal text around the placeholders, len(groups) + 1 of them
    literal: int = 0
    # Each placeholder's text in the template, and whether it starts right where the one before ends
    # (`{a}{b}`): such a run could split its text anywhere, so it gives one value.
    texts: tuple[str, ...] = ()
    touching: tuple[bool, ...] = ()
    kinds: tuple[ValueKind, ...] = ()  # what each placeholder can print (see kinds.py), in message order
    top: RaisePlace | None = None

    def __post_init__(self) -> None:
        runs, names, plain = read_pattern(self.messagePattern)
        if plain and tuple(names) == tuple(g for g, _ in self.groups):
            self.pieces = tuple(runs)
        else:  # quotes either way, optional parts, alternatives (or a hand-made pattern): no prefix matching
            self.pieces = ()
        self.literal = sum(map(len, self.pieces or self.fragments()))
        if len(self.touching) != len(self.groups):  # made by hand, not from a catalog line: none touch
            self.texts = tuple(f"{{{expression}}}" for _, expression in self.groups)
            self.touching = (False,) * len(self.groups)
        if len(self.kinds) != len(self.groups):
            self.kinds = (ValueKind(),) * len(self.groups)

    def fragments(self) -> tuple[str, ...]:
        """The literal runs of the pattern: its pieces, or for a pattern with other syntax (a quote either
        way, optional parts, alternatives) the text between it (each alternative a fragment of its own)."""
        if self.pieces:
            return self.pieces
        return tuple(run for run in read_pattern(self.messagePattern)[0] if run)

    @property
    def catch_all(self) -> bool:
        return self.literal < CATCH_ALL

    def newest(self) -> RaisePlace:
        """The site in the newest catalog holding the template (the first in file order there), found once."""
        if self.top is None:
            held = [s for s in self.places() if not self.releases or self.releases[-1] in s.releases]
            self.top = min(held, key=lambda s: (s.filePath, s.lineNumber))
        return self.top

    def places(self) -> list[RaisePlace]:
        """The sites, made from the plain rows a stored index holds on first use (most are never used)."""
        if self.sites and type(self.sites[0]) is tuple:
            self.sites = [RaisePlace._make(row) for row in self.sites]
        return self.sites

    def __getstate__(self) -> tuple[Any, ...]:
        rows = [tuple(site) for site in self.sites]  # plain tuples load several times faster than NamedTuples
        fields = (self.errorClass, self.errorMessage, self.messagePattern, self.groups, self.messageSource)
        return (*fields, rows, self.releases, self.pieces, self.literal, self.texts, self.touching, self.kinds)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.errorClass, self.errorMessage, self.messagePattern, self.groups, self.messageSource) = state[:5]
        self.sites, self.releases, self.pieces, self.literal, self.texts, self.touching, self.kinds = state[5:]
        self.top = None


def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.dot_nl = True
    options.log_errors = False
    return re2.compile(pattern, options)


def read_pattern(pattern: str) -> tuple[list[str], list[str], bool]:
    """Read a messagePattern as literal runs between its syntax: the runs (escapes undone), the names of its
    `(?P<name>.*?)` groups in order, and whether nothing else is syntax (`plain`: then the runs are the text
    around those groups, one more than them). A literal character a quantifier makes optional (`\\\\?`,
    `x*`) is no part of a run, as a rendering need not show it; a character class (`['"]`) ends a run."""
    runs: list[str] = []
    names: list[str] = []
    run: list[str] = []
    plain = True
    position, end = 0, len(pattern)
    while position < end:
        char = pattern[position]
        group = _GROUP.match(pattern, position) if char == "(" else None
        if group is not None:
            runs.append("".join(run))
            run, position = [], group.end()
            names.append(group[1])
            continue
        escaped_class = char == "\\" and pattern[position + 1 : position + 2].isalnum()  # `\\d`, `\\s`, `\\b`
        plain = plain and char not in "()|[.^$?*+" and not escaped_class
        if char == "\\" and position + 1 < end and not pattern[position + 1].isalnum():
            run.append(pattern[position + 1])  # an escaped character stands for itself
            position += 2
            continue
        counted = _COUNT.match(pattern, position) if char == "{" else None
        if char in "?*+" or counted is not None:  # the atom before is optional or repeated: not needed text
            plain = False
            if run:
                run.pop()
            position = counted.end() if counted is not None else position + 1
            if counted is None and pattern[position : position + 1] in ("?", "+"):  # lazy or possessive
                position += 1
        elif char == "[":  # a class, to its closing bracket (one right after `[` or `[^` is inside it)
            close = position + 1
            close += pattern[close : close + 1] == "^"
            close += pattern[close : close + 1] == "]"
            while close < end and pattern[close] != "]":
                close += 2 if pattern[close] == "\\" else 1
            position = close + 1
        elif char in "()|.^$" or char == "\\":  # groups, alternatives, anchors, any character, `\\d`-like classes
            position += 1
            if char == "(" and pattern[position : position + 1] == "?":  # `(?:`, `(?P<name>`, `(?=`...
                inner = re.match(r"\?(?:P<\w+>|[:=!]|<[=!])", pattern[position:])
                position += inner.end() if inner else 1
            elif char == "\\":
                position += 1
        else:
            run.append(char)
            position += 1
            continue
        runs.append("".join(run))
        run = []
    runs.append("".join(run))
    if not plain:
        runs = [text for text in runs if text]
    return runs, names, plain


class Row(NamedTuple):
    """What an index reads of a catalog line: its template and where it is raised."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    placeholders: tuple[tuple[str, str, int, int], ...]  # (group, expression, start, end) in message order
    messageSource: str | None
    place: tuple[str, int, str, str, str, str]  # a RaisePlace's fields after its releases
    kinds: tuple[ValueKind, ...]  # what each placeholder can print, in message order

    @classmethod
    def of(cls, line: CatalogLine) -> Row:
        """The row of a validated line."""
        record, extraction = line.record, line.extraction
        return cls(
            record.errorClass,
            record.errorMessage,
            record.messagePattern,
            tuple((p.group, p.expression, p.start, p.end) for p in extraction.placeholders),
            extraction.messageSource,
            (record.filePath, record.lineNumber, record.id, record.slug, record.githubUrl, extraction.function),
            kinds_of(line),
        )


def templates_of(lines: Iterable[CatalogLine], *, release: str = "", origin: str = "") -> list[MatchTemplate]:
    """Group catalog lines by template (class and pattern), checking each pattern compiles with its groups.

    `origin` names the catalog file in errors, with the line's number.
    """
    return templates_of_rows(map(Row.of, lines), release=release, origin=origin)


def templates_of_rows(rows: Iterable[Row], *, release: str = "", origin: str = "") -> list[MatchTemplate]:
    """`templates_of`, over what it reads of each line."""
    by_key: dict[tuple[str, str], MatchTemplate] = {}
    too_large: set[tuple[str, str]] = set()
    for number, row in enumerate(rows, start=1):
        key = (row.errorClass, row.messagePattern)
        if key in too_large:
            continue
        template = by_key.get(key)
        if template is None:
            held = row.placeholders
            groups = tuple((group, expression) for group, expression, _, _ in held)
            template = MatchTemplate(
                row.errorClass, row.errorMessage, row.messagePattern, groups, row.messageSource, []
            )
            template.texts = tuple(row.errorMessage[start:end] for _, _, start, end in held)
            template.touching = tuple(bool(k) and held[k - 1][3] == p[2] for k, p in enumerate(held))
            template.kinds = row.kinds
            if not _check(template, where=f"{origin or 'catalog'}:{number}"):
                too_large.add(key)
                continue
            by_key[key] = template
        if release and template.releases[-1:] != [release]:
            template.releases.append(release)
        template.sites.append(RaisePlace((release,) if release else (), *row.place))
    return list(by_key.values())


def _check(template: MatchTemplate, *, where: str) -> bool:
    """Refuse a template whose pattern is no pattern a catalog holds; False (said in a warning) for one
    that is, but too large for a linear-time engine's memory (a message of a megabyte in one raise):
    matching goes on without it, as the catalog is the extractor's own. (Matching runs no pattern, see
    find.py; a catalog's patterns are what users match rendered messages with, so each must run on RE2.)"""
    try:
        compiled = _compiled(f"(?:{template.messagePattern})")
    except re2.error as error:
        try:
            re.compile(template.messagePattern)
        except re.error as python_error:
            raise CatalogError(f"{where}: messagePattern does not compile: {python_error}") from None
        detail = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        if "pattern too large" in str(detail):
            warn(
                f"{where}: a messagePattern of {len(template.messagePattern):,} characters is too large for the "
                "linear-time matcher: matching goes on without that record"
            )
            return False
        raise CatalogError(f"{where}: messagePattern uses what a linear-time matcher cannot run: {detail}") from None
    names = compiled.groupindex  # (made anew at each look: once, or a pattern of N groups costs N²)
    unknown = [group for group, _ in template.groups if group not in names]
    if unknown:
        raise CatalogError(f"{where}: messagePattern has no group named {unknown[0]!r} (a placeholder names it)")
    return True

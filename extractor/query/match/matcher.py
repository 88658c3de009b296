# Matcher: a rendered error (or a log line) -> the templates of one or many catalogs that explain it, with values.
from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from extractor.query.match import normalize
from extractor.query.match.answer import How, Match, MatchResult, Said
from extractor.query.match.background import Elsewhere, background, libraries
from extractor.query.match.find import MAX_LINE, Finder
from extractor.query.match.locate import Hit
from extractor.query.match.paste import Paste, bare_of
from extractor.query.match.pattern import MatchTemplate, templates_of
from extractor.query.match.prefilter import Prefilter

if TYPE_CHECKING:  # pydantic's import is a good part of a quick `match`: the models are only read here
    from extractor.model.records import CatalogLine

__all__ = ["MAX_LINE", "Matcher", "match_lines"]  # (MAX_LINE: find.py's, read here by the command line)

# A log line at an error's level (what a log's other lines are matched for), and a `raise` pasted from the source.
_ERROR_LEVEL = re.compile(r"^\W{0,3}(?:\(\w[^)]*\)\s*)?(?:ERROR|CRITICAL|FATAL)\b")
_RAISE = re.compile(r"^\s*raise\s+(?P<cls>[\w.]+)\s*\((?P<arg>.*)\)\s*(?:from\s+\w+)?\s*$", re.S)
# What a printed class (normalize.CLASS_PREFIX, find's CLASS_AT) shows in a line's skeleton: its last word and
# a colon, or its last word at the line's end. A log line showing neither, nor one of the two above, is matched
# only for what one of the catalog's templates may explain (see prefilter.py).
_CLASS_ENDS = ("error", "exception", "exit", "warning")


class Matcher:
    """Finds the templates that explain a text, wherever it stands in it (see `find`), weighed against the
    messages others print (background.py)."""

    def __init__(self, templates: Sequence[MatchTemplate]) -> None:
        self.templates = list(templates)
        self.background: list[Elsewhere]
        self.background, self.background_templates = background_templates(self.templates)
        self.by_source: dict[str, list[int]] = {}
        for index, template in enumerate(self.templates):
            if template.messageSource:
                self.by_source.setdefault(_squash(template.messageSource), []).append(index)
        libraries = [elsewhere.library for elsewhere in self.background]
        self.finder = Finder(self.templates, self.background_templates, libraries)
        self._prefilter: Prefilter | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_prefilter": None}  # (made again on first use: cheaper than read back)

    @classmethod
    def of_lines(cls, lines: Iterable[CatalogLine], *, origin: str = "") -> Matcher:
        return cls(templates_of(lines, origin=origin))

    def to_json(self) -> dict[str, Any]:
        """What the site's script needs, beside find_constants.js, to answer a paste as `match` does (see
        find.js): the finder's tables, and who prints each background message (`[library, version, class,
        message, the number of its placeholder naming the command or -1]`, for search.js's words)."""
        return self.finder.to_json() | {
            "background": [
                [e.library, e.version, e.errorClass, e.errorMessage, _prog(template)]
                for e, template in zip(self.background, self.background_templates, strict=True)
            ]
        }

    def quiet(self, text: str) -> bool:
        """Whether matching `text` as a log line would find no message in it (`MatchResult.holds_message`), told
        without matching it: one pass over a line that holds none of the templates' literal text (prefilter.py)."""
        line = text.rstrip("\r\n")
        if len(text) > MAX_LINE or _ERROR_LEVEL.match(line) or _RAISE.match(line):
            return False
        if self._prefilter is None:
            loud = tuple(f"{end}:" for end in _CLASS_ENDS)
            own = self.finder.own  # (the background's texts alone make no line one to show: see `match`)
            programs, catch_all = self.finder.programs[:own], self.finder.catch_all[:own]
            self._prefilter = Prefilter(programs, catch_all, loud=loud, loud_ends=_CLASS_ENDS)
        return self._prefilter.quiet(line)

    def match(self, text: str) -> MatchResult:
        """Match one input (a message, a log line, a paste, a `raise` line) against the templates."""
        stripped = text.rstrip("\r\n")[:MAX_LINE]
        prefix = normalize.CLASS_PREFIX.search(stripped)
        is_error = prefix is not None or bool(_ERROR_LEVEL.match(stripped))
        source = _RAISE.match(stripped)
        if source:
            found = [
                Match(template, {}, How.SOURCE, 1.0, (), template.errorClass, template.literal)
                for template in (self.templates[i] for i in self.by_source.get(_squash(source["arg"]), []))
                if template.errorClass == source["cls"].rpartition(".")[2]
            ]
            confident, weak = _best(found)
        else:
            answer = self.finder.answer(text)  # (what the site's search answers too)
            confident = tuple(self._made(hit, answer.paste) for hit in answer.confident)
            weak = tuple(self._made(hit, answer.paste) for hit in answer.weak)
            elsewhere = tuple(self._said(hit) for hit in answer.elsewhere)
            if elsewhere:  # (said beside the answers; a log shows the line only for a class, a level or a match)
                return MatchResult(stripped, is_error or bool(confident), confident, weak, elsewhere)
        return MatchResult(stripped, is_error or bool(confident), confident, weak)

    def _made(self, hit: Hit, paste: Paste) -> Match:
        template = self.templates[hit.template]
        steps = list(paste.steps)
        if hit.cut and paste.text.startswith("...", hit.end):
            steps.append("ellipsis")
        if hit.period:
            steps.append("period")
        if hit.typo:
            steps.append("typo")
        if not hit.exact and not steps and not hit.cut:
            steps.append(self.finder.difference(hit, paste))
        how = How.PARTIAL if hit.cut else How.EXACT if hit.exact and not steps else How.NORMALIZED
        values = _values(template, hit)
        span = max(1, bisect_left(paste.where, hit.end) - bisect_left(paste.where, hit.start))  # (spaces aside)
        score = min(1.0, hit.literal / span)
        shown = hit.shown_class
        text = paste.text[hit.start : hit.end]
        return Match(
            template,
            values,
            how,
            score,
            tuple(steps),
            shown,
            hit.literal,
            sure=hit.confident,
            info=hit.info,
            bits=hit.bits,
            text=text,
        )

    def _said(self, hit: Hit) -> Said:
        """A background message's hit as `match` shows it: who prints the text, and its values."""
        elsewhere = self.background[hit.template - self.finder.own]
        return Said(elsewhere, _values(self.background_templates[hit.template - self.finder.own], hit))


COPY_MIN = 20  # skeleton characters of literal text a library's template and the catalog's must share whole


def background_templates(templates: Sequence[MatchTemplate]) -> tuple[list[Elsewhere], list[MatchTemplate]]:
    """Who else prints what (background.py), as templates `match` weighs the catalog's `templates` against: what
    the interpreter and argparse print, and the libraries' raises that share a literal run of COPY_MIN characters
    or more whole with one of the catalog's (one's run stands whole in one of the other's): a copy, which alone
    can tell a paste of the catalog's message from the library's. No sites."""
    ours = {run for template in templates for run in _long_runs(template.fragments())}
    theirs = [_long_runs(held.pieces) for held in libraries()]
    copies: set[int] = set()
    if ours:  # a run of the catalog's whole inside a library's
        inside = _automaton(ours)
        copies |= {k for k, runs in enumerate(theirs) if any(next(inside.iter(run), None) for run in runs)}
    if ours and any(theirs):  # a library's run whole inside one of the catalog's
        around = _automaton({run for runs in theirs for run in runs})
        shown = {run for text in ours for _, run in around.iter(text)}
        copies |= {k for k, runs in enumerate(theirs) if shown.intersection(runs)}
    chosen = [*background(), *(libraries()[k] for k in sorted(copies))]
    out = [MatchTemplate(held.elsewhere.errorClass, held.elsewhere.errorMessage, held.pattern, held.groups, None, [])
           for held in chosen]  # fmt: skip
    return [held.elsewhere for held in chosen], out


def _long_runs(pieces: Iterable[str]) -> list[str]:
    """Literal runs in skeleton form, those of COPY_MIN characters or more."""
    return [bare for bare in map(bare_of, pieces) if len(bare) >= COPY_MIN]


def _automaton(texts: Iterable[str]) -> Any:
    """An Aho-Corasick automaton finding each of the texts, each its own value."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for text in texts:
        automaton.add_word(text, text)
    automaton.make_automaton()
    return automaton


def _prog(template: MatchTemplate) -> int:
    """The number of a background template's placeholder naming the command (argparse's `{prog}`), else -1."""
    return next((k for k, (_, name) in enumerate(template.groups) if name == "prog"), -1)


def _values(template: MatchTemplate, hit: Hit) -> dict[str, str]:
    """What the paste shows for each placeholder of the hit's template, by its expression (a run of touching
    placeholders by the run's text)."""
    values: dict[str, str] = {}
    for groups, value in hit.values:
        if not groups:
            continue
        key = template.groups[groups[0]][1] if len(groups) == 1 else "".join(template.texts[g] for g in groups)
        values.setdefault(key, value)
    return values


def _best(found: Sequence[Match]) -> tuple[tuple[Match, ...], tuple[Match, ...]]:
    """The best-ranked matches: as (confident, ()) or, when none is confident, ((), weak)."""
    if not found:
        return (), ()
    best = max(m.rank() for m in found)
    top = _in_file_order(m for m in found if m.rank() == best)
    return (top, ()) if top[0].confident else ((), top)


def _squash(source: str) -> str:
    return re.sub(r"\s+", "", source).replace("'", '"')


def _in_file_order(matches: Iterable[Match]) -> tuple[Match, ...]:
    return tuple(sorted(matches, key=lambda m: (m.site.filePath, m.site.lineNumber, m.site.id)))


def match_lines(matcher: Matcher, inputs: Iterable[str], *, log: bool) -> Iterator[MatchResult]:
    """Match inputs as they come; from a log, yield only lines that matched or look like errors."""
    for text in inputs:
        if log and matcher.quiet(text):
            continue
        result = matcher.match(text)
        if not log or result.holds_message:
            yield result

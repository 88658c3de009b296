# Matcher: a rendered error (or a log line) -> the templates of one or many catalogs that explain it, with values.
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import ahocorasick

from extractor.query.match import normalize
from extractor.query.match.answer import How, Match, MatchResult
from extractor.query.match.pattern import MatchTemplate, squeezed, templates_of

if TYPE_CHECKING:  # pydantic's import is a good part of a quick `match`: the models are only read here
    from extractor.model.records import CatalogLine

__all__ = ["MAX_CANDIDATES", "MAX_LINE", "MIN_PARTIAL", "Matcher", "match_lines"]

# Literal characters a cut paste must show to match as a prefix (unless it shows all the template has).
MIN_PARTIAL = 40
MAX_LINE = 16_384  # characters of one input looked at: the work per line is bounded whatever the log holds
MAX_CANDIDATES = 64  # templates tried per variant of a line, those sharing most literal text first
_MIN_KEY = 4  # literal fragments shorter than this do not select candidates
_CUT_KEY = 24  # the start of a longer fragment is a key of its own
# A log line at an error's level (what a log's other lines are matched for), and a `raise` pasted from the source.
_ERROR_LEVEL = re.compile(r"^\W{0,3}(?:\(\w[^)]*\)\s*)?(?:ERROR|CRITICAL|FATAL)\b")
_RAISE = re.compile(r"^\s*raise\s+(?P<cls>[\w.]+)\s*\((?P<arg>.*)\)\s*(?:from\s+\w+)?\s*$", re.S)


class Matcher:
    """Finds the templates that explain a text, trying only those that share literal text with it."""

    def __init__(self, templates: Sequence[MatchTemplate]) -> None:
        self.templates = list(templates)
        self.by_class: dict[str, list[int]] = {}
        self.by_source: dict[str, list[int]] = {}
        self.automaton = ahocorasick.Automaton()
        keys: dict[str, list[int]] = {}
        for index, template in enumerate(self.templates):
            fragments = {p for p in template.fragments() if len(p.strip()) >= _MIN_KEY}
            fragments |= {squeezed(p) for p in fragments if "  " in p}  # (a paste's spaces may be squeezed)
            # A cut paste ends inside some piece: its start still selects the template.
            fragments |= {p[:_CUT_KEY] for p in fragments if len(p) > _CUT_KEY}
            for fragment in fragments:
                keys.setdefault(fragment, []).append(index)
            if not fragments:
                self.by_class.setdefault(template.errorClass, []).append(index)
            if template.messageSource:
                self.by_source.setdefault(_squash(template.messageSource), []).append(index)
        for key, indexes in keys.items():
            self.automaton.add_word(key, (len(key), tuple(indexes)))
        if keys:
            self.automaton.make_automaton()
        self._indexed = bool(keys)

    @classmethod
    def of_lines(cls, lines: Iterable[CatalogLine], *, origin: str = "") -> Matcher:
        return cls(templates_of(lines, origin=origin))

    def candidates(self, text: str) -> list[int]:
        """The templates sharing most literal text with `text`, at most MAX_CANDIDATES of them."""
        if not self._indexed:
            return []
        shared: dict[int, int] = {}
        seen: set[int] = set()  # a fragment counts once however often the text repeats it
        for _, (length, indexes) in self.automaton.iter(text):
            if id(indexes) in seen:
                continue
            seen.add(id(indexes))
            for index in indexes:
                shared[index] = shared.get(index, 0) + length
        ranked = sorted(shared, key=lambda i: (-shared[i], i))
        return ranked[:MAX_CANDIDATES]

    def match(self, text: str) -> MatchResult:
        """Match one input (a message, a log line, a paste, a `raise` line) against the templates."""
        stripped = text.rstrip("\r\n")[:MAX_LINE]
        prefix = normalize.CLASS_PREFIX.search(stripped)
        is_error = prefix is not None or bool(_ERROR_LEVEL.match(stripped))
        source = _RAISE.match(stripped)
        base: normalize.Variant | None = None  # the paste cleaned, once it is
        if source:
            found = [
                Match(template, {}, How.SOURCE, 1.0, (), template.errorClass, template.literal)
                for template in (self.templates[i] for i in self.by_source.get(_squash(source["arg"]), []))
                if template.errorClass == source["cls"].rpartition(".")[2]
            ]
            confident, weak = _best(found)
        elif len(errors := normalize.pydantic_errors(stripped)) > 1:  # `N validation errors for X`: each
            confident, weak = (), ()
            for error in errors:
                one, other = _best(self._found([normalize.Variant(error.strip(), ("pydantic",))]))
                confident, weak = confident + one, weak + other
            weak = () if confident else weak
        else:
            base = normalize.cleaned(stripped)
            # A message may hold what reads as an HTML entity (`&amp;`): as typed, last.
            typed = [normalize.cleaned(stripped, entities=False)] if "html" in base.steps else []
            confident, weak = _best(self._found(chain(normalize.variants(base), *map(normalize.variants, typed))))
            if "\n" in base.text:
                # Several lines: each error they hold, on its own, when the whole answered nothing, when
                # they hold several errors (a cause, then what it caused: each is answered, in order), or
                # when a value took lines a message of one line cannot hold (the log that followed it), or
                # text was left after the message.
                segments = normalize.segments(base.text)
                unsure = any(_spills(m) or "trailing-text" in m.normalized for m in confident)
                if not confident or len(segments) > 1 or unsure:
                    each = self._segments(segments, base.steps)
                    if each or not confident:
                        confident, weak = each, (() if each else weak)
        python = (
            normalize.python_prints((base if base is not None else normalize.cleaned(stripped)).text)
            if confident or weak
            else None
        )
        if python is not None and all(m.template.errorClass == python for m in (*confident, *weak)):
            confident, weak = (), _in_file_order((*confident, *weak))
            return MatchResult(stripped, True, confident, weak, python)
        if not confident and len(text) > MAX_LINE:  # a long paste's error is often at its end
            tail = normalize.cleaned(text.rstrip("\r\n")[-MAX_LINE:])
            each = self._segments(normalize.segments(tail.text), (*tail.steps, "tail")) if "\n" in tail.text else ()
            confident, weak = (each, ()) if each else (confident, weak)
        return MatchResult(stripped, is_error or bool(confident), confident, weak)

    def _segments(self, segments: list[tuple[str, str]], steps: tuple[str, ...]) -> tuple[Match, ...]:
        """The confident matches of each error of a text of several lines, in the order they come."""
        confident: tuple[Match, ...] = ()
        for texts in segments:
            tried = (normalize.Variant(text, (*steps, "segment")) for text in texts)
            one, _ = _best(self._found(v for variant in tried for v in normalize.variants(variant)))
            confident += tuple(m for m in one if all(m.template is not c.template for c in confident))
        return confident

    def _found(self, variants: Iterable[normalize.Variant]) -> list[Match]:
        """Each template once, at its best over the variants; stop at the first variant answered with confidence."""
        found: dict[int, Match] = {}  # by id() of the template
        for variant in variants:
            for match in self._try(variant):
                key = id(match.template)
                if key not in found or match.rank() > found[key].rank():
                    found[key] = match
            # A match that left text after it is a last resort: a variant met whole (a wrapper's message) wins.
            if any(m.confident and "trailing-text" not in m.normalized for m in found.values()):
                break
        return list(found.values())

    def _try(self, variant: normalize.Variant) -> list[Match]:
        text = variant.text
        prefix = normalize.CLASS_PREFIX.search(text)
        error_class = prefix["cls"].rpartition(".")[2] if prefix else None
        # What follows `SomeError: `, wherever it is: a log prefix or a title's `[Bug]: ` may come first.
        message = text[prefix.end() :] if prefix else None
        indexes = self.candidates(text)
        if error_class is not None:
            indexes += self.by_class.get(error_class, [])
        # The text every literal piece is looked for in (see _one), made once for all the candidates.
        bare = squeezed(text.replace("`", "") if "`" in text else text)
        out: list[Match] = []
        for index in indexes:
            template = self.templates[index]
            match = self._one(template, text, bare, message, variant.steps, error_class)
            if match is not None:
                out.append(match)
        return out

    def _one(
        self,
        template: MatchTemplate,
        text: str,
        bare: str,
        message: str | None,
        steps: tuple[str, ...],
        error_class: str | None,
    ) -> Match | None:
        if not template.messagePattern and (message if message is not None else text).strip():
            return None  # a raise with no message prints none: `SomeError: text` is not it
        # Every literal piece (give or take backticks, a final period and runs of spaces) must be in `bare` for a whole
        # match: checking that first spares compiling the patterns of most candidates.
        whole = not template.pieces or all(piece in bare for piece in template.needed)
        period = _with_period(template, message if message is not None else text)
        subjects = ((message, (), True), (text, (), False), (period, ("period",), message is not None))
        best: Match | None = None
        for subject, added, of_message in subjects if whole else ():
            if subject is None:
                continue
            regex = template.regex()
            found = regex.fullmatch(subject) if subject is message else regex.search(subject)
            if found is None:
                continue
            match = self._made(template, found, (*steps, *added), error_class, of_message=of_message)
            if best is None or (match.confident, match.score) > (best.confident, best.score):
                best = match
        if best is None and whole and template.pieces and template.pieces[-1].strip() and "ellipsis" not in steps:
            # Text after the whole message, on its line (a closing backtick, `</code>`, "Any idea?"): where
            # the template ends in its own text, that text says where the message ends. After `SomeError: `,
            # the message must start right there. Lines after it are the segments' (see `match`); what
            # comes before a cut (`...`) is the start of a longer message.
            subject = message if message is not None else text
            found = template.open_regex().search(subject)
            if found is not None and (message is None or found.start() == 0) and "\n" not in subject[found.end() :]:
                best = self._made(template, found, (*steps, "trailing-text"), error_class, of_message=True)
        if best is not None:
            return best
        if template.pieces and not template.catch_all:
            return _prefix(template, message if message is not None else text, steps, error_class)
        return None

    @staticmethod
    def _made(
        template: MatchTemplate, found: Any, all_steps: tuple[str, ...], error_class: str | None, *, of_message: bool
    ) -> Match:
        """The match a found rendering of the template makes."""
        span = found.end() - found.start()
        if "`" in template.errorMessage and found.group().count("`") < template.errorMessage.count("`"):
            all_steps = (*all_steps, "backticks")
        how = How.NORMALIZED if all_steps else How.EXACT
        if "ellipsis" in all_steps and _ends_in_value(template):  # the cut fell inside the last value
            how = How.PARTIAL
        literal = template.literal if template.pieces else min(template.literal, span - _captured(template, found))
        score = min(1.0, literal / span) if span else 0.0
        anchored = of_message and found.start() == 0 and error_class == template.errorClass
        anchored = anchored and literal >= MIN_PARTIAL and _fixed_start(template, found)
        return Match(template, _values(template, found), how, score, all_steps, error_class, literal, anchored)


def _values(template: MatchTemplate, found: Any) -> dict[str, str]:
    """The text each placeholder took (none for a part that did not print); a run of touching placeholders
    (`{a}{b}`) is one value, under the run's template text."""
    values: dict[str, str] = {}
    count = len(template.groups)
    run: list[int] = []
    for k in range(count + 1):
        if k < count and run and template.touching[k]:
            run.append(k)
            continue
        names = [template.groups[i][0] for i in run]
        if len(run) == 1 and (value := found.group(names[0])) is not None:
            values.setdefault(template.groups[run[0]][1], value)
        elif len(run) > 1 and all(found.group(name) is not None for name in names):
            index = found.re.groupindex
            text = "".join(template.texts[i] for i in run)
            values.setdefault(text, found.string[found.span(index[names[0]])[0] : found.span(index[names[-1]])[1]])
        run = [k] if k < count else []
    return values


def _captured(template: MatchTemplate, found: Any) -> int:
    """The characters the placeholders' groups took (the rest of the match is the template's own text)."""
    index = found.re.groupindex
    spans = (found.span(index[name]) for name, _ in template.groups)
    return sum(end - start for start, end in spans if start >= 0)


def _fixed_start(template: MatchTemplate, found: Any) -> bool:
    """Whether the match starts with the template's own text, not with a value."""
    index = found.re.groupindex
    starts = [start for name, _ in template.groups if (start := found.span(index[name])[0]) >= 0]
    return bool(min(starts, default=found.end()) > found.start())


def _spills(match: Match) -> bool:
    """Whether a value took a line break that the template's own text never shows: the lines after the
    message (a log, another error) went into it."""
    return "\n" not in match.template.errorMessage and any("\n" in value for value in match.values.values())


def _ends_in_value(template: MatchTemplate) -> bool:
    """Whether a rendering of the template ends in a value (give or take a final period)."""
    return bool(template.pieces) and len(template.pieces) > 1 and not template.pieces[-1].rstrip(".").strip()


def _best(found: Sequence[Match]) -> tuple[tuple[Match, ...], tuple[Match, ...]]:
    """The best-ranked matches: as (confident, ()) or, when none is confident, ((), weak)."""
    if not found:
        return (), ()
    best = max(m.rank() for m in found)
    top = _in_file_order(m for m in found if m.rank() == best)
    return (top, ()) if top[0].confident else ((), top)


def _with_period(template: MatchTemplate, text: str) -> str | None:
    return text + "." if template.errorMessage.endswith(".") and not text.endswith(".") else None


def _prefix(template: MatchTemplate, text: str, steps: tuple[str, ...], error_class: str | None) -> Match | None:
    """Match `text` as a cut rendering: each literal found in turn, leftmost, the cut inside one of them
    or inside a value. Leftmost search cannot backtrack: the work is linear in the text per piece."""
    pieces, groups = template.pieces, template.groups
    start = text.find(pieces[0]) if pieces[0] else 0
    if start < 0:  # the cut fell inside the first literal (after whatever text came before the message)
        at = _cut_in(pieces[0], text)
        if at is None:
            return None
        shown = len(text) - at
        return Match(template, {}, How.PARTIAL, shown / len(text), steps, error_class, shown)
    values: dict[str, str] = {}
    position, literal = start + len(pieces[0]), len(pieces[0])
    for (_, expression), piece in zip(groups, pieces[1:], strict=True):
        if position >= len(text):
            break
        found = text.find(piece, position) if piece else position
        if found < 0:  # the cut fell in this value or in the literal after it
            first = max(position, len(text) - len(piece))
            cut = next((k for k in range(first, len(text)) if piece.startswith(text[k:])), len(text))
            values.setdefault(expression, text[position:cut])
            literal += len(text) - cut
            position = len(text)
            break
        values.setdefault(expression, text[position:found])
        position, literal = found + len(piece), literal + len(piece)
    else:
        return None  # the whole template was there: a full match would have said so
    if position < len(text) or literal < min(MIN_PARTIAL, template.literal):
        return None
    span = len(text) - start
    return Match(template, values, How.PARTIAL, min(1.0, literal / span), steps, error_class, literal)


def _cut_in(piece: str, text: str) -> int | None:
    """Where `text` ends with a start of `piece` at least MIN_PARTIAL characters long (and shorter than
    it), if it does: the position that start begins at."""
    if len(piece) <= MIN_PARTIAL:
        return None
    key = piece[:MIN_PARTIAL]
    at = text.find(key, max(0, len(text) - len(piece) + 1))  # only the text's last len(piece) - 1 characters
    while at >= 0:
        if piece.startswith(text[at:]):
            return at
        at = text.find(key, at + 1)
    return None


def _squash(source: str) -> str:
    return re.sub(r"\s+", "", source).replace("'", '"')


def _in_file_order(matches: Iterable[Match]) -> tuple[Match, ...]:
    return tuple(sorted(matches, key=lambda m: (m.site.filePath, m.site.lineNumber, m.site.id)))


def match_lines(matcher: Matcher, inputs: Iterable[str], *, log: bool) -> Iterator[MatchResult]:
    """Match inputs as they come; from a log, yield only lines that matched or look like errors."""
    for text in inputs:
        result = matcher.match(text)
        if not log or result.holds_message:
            yield result

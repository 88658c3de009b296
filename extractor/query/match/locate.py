# Locate: where a template's literal text stands in a paste, wherever it stands, and what it explains there.
#
# A template's programs (see programs.py) are looked for in the paste's skeleton (see paste.py): each literal
# row with a plain substring search, in order (no regex engine: the work is linear in the paste for each
# template tried), starting at every place the first one stands; the message may stand anywhere in the paste,
# inside prose, a title, a quote or another error. A paste cut short, a final period left out and a typo in
# a long literal row are read too, each said in the hit.
from __future__ import annotations

import builtins
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from extractor.query.match.kinds import Shape, ValueKind, fits, fitting, fitting_end, swallows
from extractor.query.match.paste import Paste, unescape
from extractor.query.match.programs import TYPO_MIN, Program

__all__ = [
    "BUILTIN_BASES",
    "CLASS_AT",
    "CLASS_BEFORE",
    "CLOSERS",
    "CLOSERS_NO_PERIOD",
    "SPACES",
    "Hit",
    "best_hit",
    "difference",
    "levenshtein",
    "may_print",
    "typed_at",
]

MIN_CUT = 16  # skeleton characters of a template's first literal a paste cut inside it must show
MAX_STARTS = 16  # places the first literal is tried at
TYPO_LONG = 40  # and for two
TYPO_TRIES = 4  # places each half of a row is tried at
MIN_SENTENCE = 12  # skeleton characters of a row's first sentences a paste that quotes only them shows
DIVERGE = 6  # skeleton characters of a literal row that, seen in the value before it, mean the text departs
TYPO_EDGE = 2  # characters at each end of a row that a typo leaves as written
TYPO_COST = 2  # literal characters an edit costs (those on both sides of it)
CLASS_WINDOW = 200  # characters before a message its class is looked for in
# Regular expressions both sides run alike (Python's `re` and JavaScript's, with no flag: no `^`, `$` or `.`,
# whose lines differ, and no `\s`, `\d` or `\w`, whose characters differ; tests/test_find_parity.py checks).
_NAME = r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*"  # a class's module path, `vllm.errors.`
_CLASS = r"(?:[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
# A printed error's class right before its message, at the text's end (`ValueError: `, `vllm.errors.ConfigError:`).
CLASS_BEFORE = r"(?<![A-Za-z0-9_.])" + _NAME + "(" + _CLASS + r"):[ \t]*(?![\s\S])"
# A printed error's class and what follows it up to its message (`ValueError: `; alone on its line, no message).
CLASS_AT = r"(?<![A-Za-z0-9_.])(" + _NAME + _CLASS + r")(?::[ \t]*|[ \t]*(?![^\n]))"
# Whitespace runs, as the template's literal text is compared with the paste's (`[ \t\n\r\f\v]`: str.split's
# would take more).
SPACES = r"[ \t\n\r\f\v]+"
# What ends the text a message's first value may start after (a title's tag, a log's `name:`, a quote).
LEAD_STOPS = [": ", "\uff1a", "] ", "> ", ' "', " '", '("', "('", "\t"]
# What ends a message's last value: pydantic's `[type=...]`, the next line of a traceback.
TAIL_STOPS = [" [type=", "\nTraceback (most recent call last)", "\nThe above exception", "\nDuring handling of"]
OPENERS = {"'": "'", '"': '"', "(": ")", "[": "]", "`": "`"}
# What may follow the first sentences of a message a paste quotes: a closing quote, bracket or emphasis; and,
# where the quote left the sentence's period out, only a closing mark.
CLOSERS = "'\"`)]*"
CLOSERS_NO_PERIOD = "'\"`)*"

_CLASS_BEFORE = re.compile(CLASS_BEFORE)
# A traceback's last source line that raises a class around a message made elsewhere (`raise RuntimeError(error)`):
# the class the message then shows is that wrapper's, not the class of the raise that wrote the text.
_DOTTED = r"[A-Za-z_][A-Za-z0-9_.]*"
REWRAP = r"raise[ \t]+" + _DOTTED + r"\([ \t]*" + _DOTTED + r"[ \t]*\)(?:[ \t]+from[ \t]+[A-Za-z0-9_.]+)?[ \t]*$"
_REWRAP = re.compile(REWRAP)
_CLASS_AT = re.compile(CLASS_AT)
_WHITESPACE = re.compile(SPACES)
_DIGITS = re.compile(r"[0-9]+")
# Each builtin exception class's bases (what a printed class it may stand for), as Python itself has them.
BUILTIN_BASES = {
    cls.__name__: [base.__name__ for base in cls.__mro__[1:] if issubclass(base, BaseException)]
    for cls in (getattr(builtins, name) for name in dir(builtins))
    if isinstance(cls, type) and issubclass(cls, BaseException)
}


@dataclass(slots=True)
class Hit:
    """Where one program of one template stands in a paste, and what it explains there."""

    template: int
    program: int
    spans: list[tuple[int, int]]  # skeleton spans of the literal rows shown, in order
    start: int  # where the message starts and ends in the plain text
    end: int
    values: list[tuple[tuple[int, ...], str]]
    holes: list[tuple[int, int]]  # skeleton spans the holes took
    literal: int
    info: float
    cut: bool = False
    period: bool = False
    exact: bool = True
    typo: bool = False
    agrees: bool = False  # the class shown before the message is the template's own
    verbatim: bool = False  # its literal text stands as the template writes it (letter case), whitespace aside
    spaced: bool = False  # and with spaces where the template has them
    open_end: bool = False  # cut inside a value: nothing shows the text after it goes on as the template does
    shown_class: str | None = None
    confident: bool = False
    bits: float = 0.0  # the evidence for the template over the best other explanation (see score.py)
    demoted: bool = False
    # The message starts or ends inside a sentence (no class printed before it), or a value of no known kind
    # holds a sentence of its own: what the template explains is part of another text, at most a weak answer.
    inside: bool = False


class _Way(NamedTuple):
    """One way of printing of one template, tried on a paste: the template's number and class, the program's
    number and the program."""

    template: int
    cls: str
    number: int
    program: Program
    kinds: Sequence[ValueKind]


def best_hit(
    index: int, cls: str, programs: Sequence[Program], paste: Paste, kinds: Sequence[ValueKind] = ()
) -> Hit | None:
    """Where template `index` (raising `cls`, printing as one of `programs`, its placeholders of `kinds`) stands
    in the paste: its best place and way of printing, as written, else with a typo in its literal text; None when
    it stands nowhere."""
    if not programs:  # a raise with no message: the class alone, nothing after it
        hit = _whole_message(index, -1, cls, (), paste)
        return hit if hit is not None and not hit.values[0][1] else None
    best: Hit | None = None
    for near in (False, True):  # as written; else with a typo in its literal text
        for number, program in enumerate(programs):
            hit = _place(_Way(index, cls, number, program, kinds), paste, near=near)
            if hit is not None and (best is None or _better(hit, best)):
                best = hit
        if best is not None:
            break
    return best


def shown_classes(text: str) -> Iterator[str]:
    """The classes a paste shows as printed errors do (`ValueError: `, a class alone on its line), without
    their module path."""
    for found in _CLASS_AT.finditer(text):
        yield found[1].rpartition(".")[2]


def _place(way: _Way, paste: Paste, *, near: bool) -> Hit | None:
    """Where the program stands in the paste: at the first place its first literal row stands from which
    the others follow (with a typo each, when `near`) and that stands on its own (not inside a sentence: see
    Hit.inside), else the first such place, else as a cut paste of it."""
    program = way.program
    items = program.items
    literals = [k for k, item in enumerate(items) if isinstance(item, str)]
    if not literals:
        return _whole_message(way.template, way.number, way.cls, items[0], paste)
    first = literals[0]
    head = str(items[first])
    text = program.texts[first]
    fallback: Hit | None = None
    for at, end, typo in _occurrences(paste.bare, head, 0, near=near):  # (typo: the edits it needed)
        if first > 0 and _in_class_prefix(paste.text, paste.at(at)):
            continue  # a value first: its text is not the `:` of the class that prints it
        if not _starts_word(paste, at, head, spaced=first > 0 and text[:1].isspace(), free=first > 0):
            continue
        hit = _forward(way, paste, literals, (at, end), typo, near=near)
        if hit is not None and not hit.inside:
            return hit
        fallback = fallback or hit  # (a place inside a sentence, unless one further on stands on its own)
    if fallback is not None:
        return fallback
    if near:
        return None
    if len(literals) == 1 and head.endswith(".") and len(head) > 1:  # a final period dropped
        short = head[:-1]
        for at, end, _ in _occurrences(paste.bare, short, 0, near=False):
            if _starts_word(paste, at, short, free=first > 0) and _ends_message(paste, end):
                return _made(way, paste, [(at, end)], period=True)
    return _cut_first(way, paste, head, first)


def _forward(
    way: _Way,
    paste: Paste,
    literals: list[int],
    head: tuple[int, int],
    typo: int,
    *,
    near: bool,
) -> Hit | None:
    program = way.program
    items = program.items
    at = head[0]
    if not _clear(paste, at, str(items[literals[0]])) or (
        len(literals) > 1 and not _fits(paste, head, program, literals[0], ends=False)
    ):
        return None
    spans = [head]
    position = head[1]
    last = literals[-1]
    for k in literals[1:]:
        row = str(items[k])
        ends = k == last and k == len(items) - 1  # the message ends in this row's text
        places = _occurrences(paste.bare, row, position, near=near)
        found = next((o for o in places if _fits(paste, o[:2], program, k, ends=ends)), None)
        if found is not None:
            spans.append(found[:2])
            typo += found[2]
            position = found[1]
            continue
        if ends and row.endswith(".") and len(row) > 1 and not near:  # a final period dropped
            short = row[:-1]
            for start, end, _ in _occurrences(paste.bare, short, position, near=False):
                if _ends_message(paste, end):
                    return _made(way, paste, [*spans, (start, end)], period=True)
        if ends and row == "." and not near:  # the message's last value, then its final period, left out
            dropped = _made(way, paste, spans, period=True, typo=typo)
            if dropped is not None:
                return dropped
        return _cut(way, paste, spans, position, k, typo)
    if last == len(items) - 1 and not _ends_word(paste, spans[-1][1], str(items[last])):
        return None
    return _made(way, paste, spans, typo=typo)


def _cut(
    way: _Way,
    paste: Paste,
    spans: list[tuple[int, int]],
    position: int,
    k: int,
    typo: int,
) -> Hit | None:
    """The paste stops (at its end or at `...`) inside the value before row `k` or inside that row; or it
    stops after a sentence of that row (a quote of the message's first sentences)."""
    program = way.program
    row = str(program.items[k])
    bare = paste.bare
    cut = next((c for c in paste.cuts if c >= position), None)
    if cut is not None and not _breaks(paste.text, paste.at(position), paste.at(cut)):
        shown = 0
        for length in range(min(len(row) - 1, cut - position), 0, -1):
            if bare.startswith(row[:length], cut - length):
                shown = length
                break
        # (the row starting in the value, then departing from it, is another text)
        if bare.find(row[:DIVERGE], position, cut - shown) >= 0:
            pass
        elif shown:
            return _made(way, paste, [*spans, (cut - shown, cut)], cut=cut, typo=typo)
        else:
            return _made(way, paste, spans, cut=cut, open_end=True, typo=typo)
    sentence = _sentence(paste, program, k, position, sum(b - a for a, b in spans))
    if sentence is not None:
        return _made(way, paste, [*spans, sentence], cut=sentence[1], typo=typo)
    return None


def _cut_first(way: _Way, paste: Paste, head: str, first: int) -> Hit | None:
    """The paste stops inside the template's first literal row, after MIN_CUT characters of it at least
    (at its end, at `...`, or after a sentence of the row)."""
    program = way.program
    bare = paste.bare
    key = head[:MIN_CUT]
    if len(head) <= MIN_CUT:
        return None
    for cut in paste.cuts:
        at = bare.rfind(key, 0, cut)
        while at >= 0 and cut - at < len(head):
            if bare.startswith(head[: cut - at], at) and _starts_word(paste, at, head, free=first > 0):
                return _made(way, paste, [(at, cut)], cut=cut)
            at = bare.rfind(key, 0, at)
    sentence = _sentence(paste, program, first, 0)
    if sentence is not None and sentence[1] - sentence[0] >= MIN_CUT:
        return _made(way, paste, [sentence], cut=sentence[1])
    return None


def _whole_message(index: int, number: int, cls: str, groups: str | tuple[int, ...], paste: Paste) -> Hit | None:
    """A template with no literal text (`raise ValueError(msg)`): the message after its class, weakly."""
    for found in _CLASS_AT.finditer(paste.text):
        if found[1].rpartition(".")[2] == cls:
            start = found.end()
            end = _line_end(paste.text, start)
            value = paste.text[start:end].strip()
            assert isinstance(groups, tuple)
            return Hit(index, number, [], start, end, [(groups, value)], [], 0, 0.0, shown_class=cls)
    return None


def difference(program: Program, hit: Hit, paste: Paste) -> str:
    """What sets the literal text a hit shows apart from the template's, besides what `plain` undid and
    whitespace: backticks, quote marks, or letter case."""
    rows = [k for k, item in enumerate(program.items) if isinstance(item, str)]
    shown = [_WHITESPACE.sub("", paste.text[paste.at(a) : paste.at(b - 1) + 1]) for a, b in hit.spans if b > a]
    written = [_WHITESPACE.sub("", program.texts[k]).strip("`") for k in rows[: len(shown)]]
    if sum(t.count("`") for t in shown) != sum(t.count("`") for t in written):
        return "backticks"
    if [t.lower() for t in shown] == [t.lower() for t in written]:
        return "case"
    return "quotes"


def _made(
    way: _Way,
    paste: Paste,
    spans: list[tuple[int, int]],
    *,
    cut: int | None = None,
    period: bool = False,
    typo: int = 0,
    open_end: bool = False,
) -> Hit | None:
    """The hit the literal spans make: the message's bounds, its values, its class, what it shows."""
    program = way.program
    items, text = program.items, paste.text
    literal_rows = [k for k, item in enumerate(items) if isinstance(item, str)]
    first_at = paste.at(spans[0][0])
    last_end = paste.at(spans[-1][1] - 1) + 1 if spans[-1][1] > spans[-1][0] else paste.at(spans[-1][0])
    start = first_at
    if literal_rows[0] > 0:  # a value first: it starts after what ends the text before it on its line
        start = _lead_start(text, first_at)
    printable, shown = _shown_class(text, start, way.cls)
    if not printable:
        return None
    end = last_end
    quoted = start > 0 and text[start - 1] in "'\""  # the message stands in a string literal: its escapes
    holes: list[tuple[int, int]] = []
    values: list[tuple[tuple[int, ...], str]] = []
    rows_shown = len(spans)
    # The message starts inside a sentence: no class before it, its first literal text after a word.
    inside = shown is None and literal_rows[0] == 0 and _goes_on_before(text, start)
    for k, item in enumerate(items):
        if isinstance(item, str):
            continue
        row_before = sum(1 for r in literal_rows if r < k)  # literal rows before this hole
        # The value before a final period the paste left out (see _forward), or the last item: the message's last.
        dropped = period and cut is None and row_before == rows_shown and k == len(items) - 2 and items[-1] == "."
        last = k == len(items) - 1 or dropped
        whole = True  # (the value as printed, not cut short by the paste)
        if row_before == 0:
            a, b = start, first_at
        elif row_before < rows_shown:
            a = paste.at(spans[row_before - 1][1] - 1) + 1
            b = paste.at(spans[row_before][0])
        elif row_before > rows_shown or (cut is not None and spans[-1][1] >= cut):
            break  # past where the paste was cut
        elif cut is not None:
            a, b, whole = last_end, paste.at(cut), False
        elif last:  # the message's last value: to where the message ends
            a = last_end
            b = end = max(end, _tail_end(text, a, start))
        else:
            break
        kind = way.kinds[item[0]] if len(item) == 1 and way.kinds else None
        value = text[a:b].strip()
        if kind is not None and whole and last and row_before == rows_shown:
            shown_value = fitting(kind, value)  # (the message may end before its line does)
            if shown_value is None:
                return None
            if shown_value != value:
                b = end = text.index(shown_value, a) + len(shown_value)
                value = shown_value
        elif kind is not None and row_before == 0:
            shown_value = fitting_end(kind, value)  # (the message may start after its line's text does)
            if shown_value is None:
                return None
            if shown_value != value:
                a = start = text.rindex(shown_value, a, b)
                value = shown_value
                printable, shown = _shown_class(text, start, way.cls)
                if not printable:
                    return None
        hole = (_skeleton_index(paste, a), _skeleton_index(paste, b))
        holes.append(hole)
        whole = whole and not any(hole[0] <= c < hole[1] for c in paste.cuts[:-1])  # (`got 2048....`)
        if dropped and not whole:
            return None  # (a last value cut at `...` is a cut, not a final period left out)
        value = unescape(value) if quoted else value
        if whole and kind is not None and not fits(kind, value):
            return None  # a value its placeholder cannot print: not this template, here
        if 0 < row_before < len(literal_rows) and _loose(kind, program, k) and swallows(value):
            inside = True  # (a value between two literal rows, of no known kind and not quoted, holds a sentence)
            if dropped:
                return None  # (nor can a last value whose final period was left out: the text goes on)
        values.append((item, value))
    if cut is not None:
        end = max(end, paste.at(cut))
    elif shown is None and literal_rows[-1] == len(items) - 1 and not period:
        inside = inside or _goes_on_after(text, end, program.texts[literal_rows[-1]])
    literal = sum(b - a for a, b in spans) - TYPO_COST * typo
    info = 0.0
    for number_shown, (row, (a, b)) in enumerate(zip(literal_rows, spans, strict=False)):
        whole = cut is None or number_shown < len(spans) - 1 or open_end  # (a row with a typo is whole)
        for word_end, weight in program.words[row]:
            if whole or word_end <= b - a:
                info += weight
    verbatim = all(  # the literal text as the template writes it (give or take a quote either way)
        _same(text[paste.at(a) : paste.at(b - 1) + 1], program.texts[row])
        for row, (a, b) in zip(literal_rows, spans, strict=False)
        if b > a
    )
    exact = not paste.steps and not period and not typo and verbatim
    spaced = (
        verbatim
        and all(  # and spaced as written (where two templates differ only in that)
            _spaced(text[paste.at(a) : paste.at(b - 1) + 1]) == _spaced(program.texts[row].strip(" \t\n`"))
            for row, (a, b) in zip(literal_rows, spans, strict=False)
            if b > a
        )
    )
    return Hit(
        way.template, way.number, list(spans), start, end, values, holes, literal, info,
        cut=cut is not None, period=period, exact=exact, shown_class=shown, typo=typo > 0, open_end=open_end,
        agrees=shown == way.cls, verbatim=verbatim, spaced=spaced, inside=inside,
    )  # fmt: skip


def _loose(kind: ValueKind | None, program: Program, k: int) -> bool:
    """Whether the value of hole `k` is of no known kind and not in quotes the template writes around it."""
    if kind is not None and kind.shape is not Shape.ANY:
        return False
    before = program.texts[k - 1].rstrip() if k > 0 else ""
    return not (before and before[-1] in "'\"`")


def _goes_on_before(text: str, start: int) -> bool:
    """Whether the text before a message on its line goes on into it: it ends in a word (`...
    together with sliding window attention`), not at a line's start, a colon, a quote, a bracket or a sentence's
    end."""
    if "A" <= text[start : start + 1] <= "Z":
        return False  # (a sentence's start: `400 As of transformers v4.44, ...`)
    line = text.rfind("\n", 0, start) + 1
    before = text[line:start].rstrip(" \t")
    return bool(before) and _is_word(before[-1])


def _goes_on_after(text: str, end: int, written: str) -> bool:
    """Whether the text after a message that ends in a word goes on with another word on its line (`... is
    not supported for pooling models`): the template explains the start of a longer sentence."""
    if not written.rstrip() or not _is_word(written.rstrip()[-1]):
        return False
    after = text[end : _line_end(text, end)].lstrip(" \t")
    return bool(after) and _is_word(after[0])


def _skeleton_index(paste: Paste, position: int) -> int:
    return bisect_left(paste.where, position)


def _clear(paste: Paste, at: int, row: str) -> bool:
    """Whether a literal row found at `at` keeps clear of a cut's `...` (unless it writes one itself)."""
    if len(paste.cuts) == 1 or "..." in row:
        return True
    end = at + len(row)
    return not any(cut < end and at < cut + 3 for cut in paste.cuts[:-1])


def _same(shown: str, written: str) -> bool:
    """Whether a literal row stands in the paste as the template writes it: the same characters, letter case
    kept, whatever whitespace came between them (a run of spaces, a wrap at any column) and a quote either way."""
    return _WHITESPACE.sub("", shown).replace('"', "'") == _WHITESPACE.sub("", written).strip("`").replace('"', "'")


def _spaced(text: str) -> str:
    """Text with each run of whitespace made one space, quotes either way made one."""
    return _WHITESPACE.sub(" ", text).replace('"', "'")


def _breaks(text: str, start: int, end: int) -> bool:
    """Whether a value from `start` to `end` would cross what ends a message: a blank line, a traceback's
    next part."""
    return text.find("\n\n", start, end) >= 0 or any(text.find(stop, start, end) >= 0 for stop in TAIL_STOPS)


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _starts_word(paste: Paste, at: int, row: str, *, spaced: bool = False, free: bool = False) -> bool:
    """Whether literal text starting at skeleton position `at` meets the paste at a word's start: where
    the message starts with it (not `free`, after a value) and its first character is a word's, or where
    the template has a space before it (`spaced`)."""
    if not spaced and (free or not _is_word(row[0])):
        return True
    before = paste.at(at) - 1
    return before < 0 or not _is_word(paste.text[before])


def _ends_word(paste: Paste, end: int, row: str, *, spaced: bool = False, free: bool = False) -> bool:
    """Whether literal text ending before skeleton position `end` meets the paste at a word's end: where
    the message ends with it (not `free`, a value after it) and its last character is a word's, or where
    the template has a space after it (`spaced`)."""
    if not row or (not spaced and (free or not _is_word(row[-1]))):
        return True
    after = paste.at(end - 1) + 1
    return after >= len(paste.text) or not _is_word(paste.text[after])


def _occurrences(bare: str, row: str, start: int, *, near: bool) -> Iterator[tuple[int, int, int]]:
    """Where `row` stands in the skeleton from `start`: its first MAX_STARTS places as written; then, when
    `near`, places where it stands with a typo or two (a character left out, added or changed, two swapped), found from
    either half of it standing as written."""
    found, tries = bare.find(row, start), 0
    while found >= 0 and tries < MAX_STARTS:
        yield found, found + len(row), 0
        found, tries = bare.find(row, found + 1), tries + 1
    if not near or len(row) < TYPO_MIN:
        return
    budget = 1 if len(row) < TYPO_LONG else 2
    half = len(row) // 2
    starts: list[int] = []
    left, right = row[:half], row[half:]
    found, tries = bare.find(left, start), 0
    while found >= 0 and tries < TYPO_TRIES:
        starts.append(found)
        found, tries = bare.find(left, found + 1), tries + 1
    found, tries = bare.find(right, start), 0
    while found >= 0 and tries < TYPO_TRIES:
        starts += [found - half + shift for shift in range(-budget, budget + 1) if found - half + shift >= start]
        found, tries = bare.find(right, found + 1), tries + 1
    best: dict[int, tuple[int, int]] = {}
    for begin in sorted(set(starts)):
        for end, distance in typed_at(bare, row, begin, budget):
            if begin not in best or distance < best[begin][1]:
                best[begin] = (end, distance)
    for begin in sorted(best):
        yield begin, best[begin][0], best[begin][1]


def typed_at(bare: str, row: str, begin: int, budget: int) -> Iterator[tuple[int, int]]:
    """Where `row` ends when it stands at skeleton position `begin` with a typo or two (up to `budget` edits),
    its length give or take the edits first, and the edits each end needs."""
    for shift in sorted(range(-budget, budget + 1), key=abs):
        end = begin + len(row) + shift
        if end > len(bare) or end <= begin:
            continue
        if bare[begin : begin + TYPO_EDGE] != row[:TYPO_EDGE] or bare[end - TYPO_EDGE : end] != row[-TYPO_EDGE:]:
            continue  # a typo falls inside the row: its edges stand as written
        if _DIGITS.findall(bare, begin, end) != _DIGITS.findall(row):
            continue  # and its numbers (`MXFP4` is no typo of `MXFP8`)
        distance = levenshtein(bare[begin:end], row, budget)
        if 0 < distance <= budget:
            yield end, distance


def levenshtein(a: str, b: str, limit: int) -> int:
    """The edit distance of two texts (characters left out, added, changed, or two swapped: the optimal string
    alignment distance), or limit + 1 when above it."""
    from rapidfuzz.distance import OSA

    return OSA.distance(a, b, score_cutoff=limit)


def _sentence(paste: Paste, program: Program, k: int, position: int, shown: int = 0) -> tuple[int, int] | None:
    """Where the paste shows the first sentences of literal row `k` (up to a period in it, or up to that
    period left out) from `position`, and then ends (see `_ends_quote`): the longest such start. With the
    `shown` literal characters before it, MIN_SENTENCE characters at least."""
    row = str(program.items[k])
    end = row.rfind(".", 0, len(row) - 1)
    while end >= 0 and shown + end + 1 >= MIN_SENTENCE:
        for start in (row[: end + 1], row[:end]):
            if shown + len(start) < MIN_SENTENCE or not start:
                continue
            spaced = program.texts[k][:1].isspace()
            for at, stop, _ in _occurrences(paste.bare, start, position, near=False):
                if paste.bare.find(row[:DIVERGE], position, at) >= 0:
                    break  # the row starts in the value before, then departs from it: another text
                if _starts_word(paste, at, row, spaced=spaced, free=k > 0) and _ends_quote(paste, stop, start):
                    return at, stop
        end = row.rfind(".", 0, end)
    return None


def _ends_message(paste: Paste, stop: int) -> bool:
    """Whether a message whose final period was left out ends at skeleton position `stop`: what follows on
    its line is nothing or punctuation, not a word going on with the sentence."""
    after = paste.text[paste.at(stop - 1) + 1 :].lstrip(" \t")
    return not after or not _is_word(after[0])


def _ends_quote(paste: Paste, stop: int, start: str) -> bool:
    """Whether the text a paste shows ends at skeleton position `stop` (after `start`, what it shows of a
    row): what follows is nothing, a closing quote, bracket or emphasis, or a blank line (not a sentence that
    goes on as the template does not); where the period was left out, only a closing mark."""
    if _is_word(start[-1]) and not _ends_word(paste, stop, start):
        return False
    after = paste.text[paste.at(stop - 1) + 1 :].lstrip(" \t")
    if not start.endswith("."):
        return after[:1] != "" and after[0] in CLOSERS_NO_PERIOD
    return not after.strip() or after[0] in CLOSERS or after.startswith("\n\n")


def _fits(paste: Paste, span: tuple[int, int], program: Program, k: int, *, ends: bool) -> bool:
    """Whether literal row `k`, found at skeleton span `span` after a value, meets the paste at word
    boundaries where the template has a space around it, and where the message ends with it (`ends`)."""
    row, text = str(program.items[k]), program.texts[k]
    at, end = span
    if not _clear(paste, at, row):
        return False
    if not _starts_word(paste, at, row, spaced=text[:1].isspace(), free=k > 0):
        return False
    return _ends_word(paste, end, row) if ends else _ends_word(paste, end, row, spaced=text[-1:].isspace(), free=True)


def _in_class_prefix(text: str, position: int) -> bool:
    line = text.rfind("\n", 0, position) + 1
    return any(found.start() < position < found.end() for found in _CLASS_AT.finditer(text, line, position + 2))


def _lead_start(text: str, first: int) -> int:
    """Where a message that starts with a value starts: after what ends the text before it on its line."""
    line = text.rfind("\n", 0, first) + 1
    best = line
    for stop in LEAD_STOPS:
        at = text.rfind(stop, line, first)
        if at >= 0:
            best = max(best, at + len(stop))
    found = _class_end_before(text, line, first)
    return max(best, found)


def _class_end_before(text: str, line: int, first: int) -> int:
    end = line
    for found in _CLASS_AT.finditer(text, line, first):
        end = found.end()
    return end


def may_print(record_class: str, shown: str) -> bool:
    """Whether a record raising `record_class` may print as `shown`: the same class, or a subclass of it
    (a class the builtins do not name may derive from any)."""
    if record_class == shown:
        return True
    bases = BUILTIN_BASES.get(record_class)
    return bases is None or shown in bases


def _class_before(text: str, start: int) -> str | None:
    """The class a printed error shows right before its message (`ValueError: `), if any."""
    found = _CLASS_BEFORE.search(text[max(0, start - CLASS_WINDOW) : start])
    return found[1].rpartition(".")[2] if found else None


def _shown_class(text: str, start: int, cls: str) -> tuple[bool, str | None]:
    """Whether a template raising `cls` may print the message starting at `start`, by the class shown before it,
    and that class (None when none is shown, or when it is a wrapper's: see _rewrapped)."""
    shown = _class_before(text, start)
    if shown is None or may_print(cls, shown):
        return True, shown
    return _rewrapped(text, start), None


def _rewrapped(text: str, start: int) -> bool:
    """Whether the line before the message's is a traceback's `raise SomeError(name)`: the message was made
    elsewhere, and the class in front of it is the wrapper's."""
    line = text.rfind("\n", 0, start)
    if line < 0:
        return False
    return _REWRAP.search(text, text.rfind("\n", 0, line) + 1, line) is not None


def _tail_end(text: str, position: int, start: int) -> int:
    """Where a message's last value ends: its line's end (a quote's closing mark when the message was
    quoted), or a stop such as pydantic's `[type=...]`."""
    end = _line_end(text, position)
    for stop in TAIL_STOPS:
        at = text.find(stop, position, end + len(stop))
        if at >= 0:
            end = min(end, at)
    before = text[start - 1] if start > 0 else ""
    closer = OPENERS.get(before)
    if closer is not None:
        at = text.rfind(closer, position, end)
        if at >= 0:
            end = at
    return end


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def _better(hit: Hit, other: Hit) -> bool:
    """Of two places (or ways of printing) of one template, the one that shows more of its literal text, else
    the one the paste shows whole."""
    return (hit.literal, not hit.cut, hit.info, -hit.start) > (other.literal, not other.cut, other.info, -other.start)

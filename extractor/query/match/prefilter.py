# Prefilter: the lines of a log that cannot hold a message `match` shows, told by one Aho-Corasick pass over
# each line's skeleton, where matching them costs a hundred times more.
#
# A line is shown when it looks like an error (a class, an error level, a `raise`), when Python prints its
# message itself, or when a template explains it with confidence. The first two show words of their own; the
# last needs MIN_LIT characters and CONFIDENT_BITS bits of a template's literal text, shown as locate.py shows
# it: the literal rows from the first on, each whole (as written, or with a typo: then one half as written),
# up to the row that reaches both, which may also stop early (a final period left out, a quoted sentence, a
# cut paste's end). Each way a template prints that could reach them gets a gate: for each of those rows,
# the texts of which one must stand in the skeleton (a cut row's start only where the paste stops right
# after it). The rarest row's texts go into the automaton; the others are checked only when it finds one.
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from extractor.query.match.locate import MIN_CUT, TYPO_LONG, typed_at
from extractor.query.match.paste import UNDONE, bare_of, cuts_of
from extractor.query.match.programs import TYPO_MIN, Program
from extractor.query.match.score import CONFIDENT_BITS, MIN_LIT

__all__ = ["Prefilter"]

_EPSILON = 1e-9  # (word weights are summed in another order than a hit sums them)
_KEY = 12  # characters of a text the automaton holds (the rest is checked where it stands: a small one is fast)
_LOUD = object()  # what the automaton holds for a text that makes a line one to match whatever it holds


@dataclass(frozen=True, slots=True)
class _Row:
    """How a confident hit may show one literal row (`row`, in skeleton form) in a paste's skeleton (`texts`:
    one of these stands in it): its start `start` anywhere; the whole row with up to `typos` edits (a long row,
    found from its half `left` or `right` as locate's `_occurrences` finds it); or its start `head`, and
    perhaps more of it, up to where the paste stops ("": not so)."""

    row: str
    start: str
    typos: int
    left: str
    right: str
    head: str
    texts: tuple[str, ...]

    @classmethod
    def of(cls, row: str, start: int, *, typos: int = 0, cut: int = 0) -> _Row:
        half = len(row) // 2
        left, right = (row[:half], row[half:]) if typos else ("", "")
        head = row[:cut] if cut else ""
        return cls(row, row[:start], typos, left, right, head, tuple(t for t in (row[:start], left, right, head) if t))

    def shown(self, bare: str) -> bool:
        """Whether the skeleton shows the row in one of its ways."""
        if self.start in bare:
            return True
        for text in self.texts[1:]:
            at = bare.find(text)
            while at >= 0:
                if self.shown_at(bare, at, text):
                    return True
                at = bare.find(text, at + 1)
        return False

    def shown_at(self, bare: str, begin: int, text: str) -> bool:
        """Whether the skeleton shows the row in a way that shows `text` (one of `texts`) at `begin`."""
        if text == self.start:
            return True
        if text == self.left and self._typed(bare, (begin,)):
            return True
        if text == self.right:
            begins = range(begin - len(self.left) - self.typos, begin - len(self.left) + self.typos + 1)
            if self._typed(bare, begins):
                return True
        return text == self.head and self._stops(bare, begin)

    def _typed(self, bare: str, begins: Iterable[int]) -> bool:
        """Whether the row stands at one of `begins` with a typo or two (as `_occurrences` reads it: its first
        and last two characters as written)."""
        for begin in begins:
            end = begin + len(self.row)
            if begin < 0 or not bare.startswith(self.row[:2], begin):
                continue
            if bare.find(self.row[-2:], max(0, end - self.typos - 2), end + self.typos) < 0:
                continue
            if next(typed_at(bare, self.row, begin, self.typos), None) is not None:
                return True
        return False

    def _stops(self, bare: str, begin: int) -> bool:
        """Whether the row's start found at `begin` runs to where the paste stops, `head` and perhaps more of it
        (not the whole row)."""
        least = len(self.head)
        return any(
            begin + least <= cut < begin + len(self.row) and self.row.startswith(bare[begin:cut])
            for cut in cuts_of(bare)
        )


@dataclass(frozen=True, slots=True)
class _Gate:
    """What a paste's skeleton must show for one way of printing of one template to be a confident answer."""

    trigger: _Row  # the row whose texts the automaton holds
    others: tuple[_Row, ...]

    def open(self, bare: str, begin: int, text: str) -> bool:
        """Whether the skeleton shows every row, the trigger's text `text` standing at `begin`."""
        return self.trigger.shown_at(bare, begin, text) and all(row.shown(bare) for row in self.others)


class Prefilter:
    """The gates of every template's ways of printing that could be a confident answer, in one automaton with
    the texts that make a line one to match whatever else it holds (`loud`; what `plain` undoes), and those that
    do so at its end (`loud_ends`)."""

    def __init__(
        self,
        programs: Sequence[Sequence[Program]],
        catch_all: Sequence[bool],
        *,
        loud: Iterable[str],
        loud_ends: tuple[str, ...],
    ) -> None:
        import ahocorasick

        self._loud_ends = loud_ends
        entries: dict[str, Any] = {text: _LOUD for text in (*UNDONE, *loud)}
        for template, ways in enumerate(programs):
            if catch_all[template]:
                continue  # (never a confident answer)
            for program in ways:
                gate = _gate(program)
                if gate is None:
                    continue
                for text in dict.fromkeys(gate.trigger.texts):
                    held = entries.setdefault(text[:_KEY], [])
                    if held is not _LOUD:
                        held.append((gate, text))
        self._automaton = ahocorasick.Automaton()
        for key, entry in entries.items():
            self._automaton.add_word(key, (len(key), entry if entry is _LOUD else tuple(entry)))
        self._automaton.make_automaton()

    def quiet(self, line: str) -> bool:
        """Whether matching a line (its line break stripped, MAX_LINE characters at most) can show nothing: it
        shows nothing loud and no template could explain it with confidence."""
        if "\r" in line or "\n" in line:
            return False  # (`plain` reads it as several lines)
        bare = bare_of(line)
        if bare.endswith(self._loud_ends):
            return False
        for found, (length, entry) in self._automaton.iter(bare):
            if entry is _LOUD:
                return False
            begin = found - length + 1
            for gate, text in entry:
                if bare.startswith(text, begin) and gate.open(bare, begin, text):
                    return False
        return True


def _gate(program: Program) -> _Gate | None:
    """The rows a confident hit of the program shows (see the module's comment), or None when none can be."""
    literal, info = 0, 0.0
    rows: list[_Row] = []
    texts = [(item, words) for item, words in zip(program.items, program.words, strict=True) if isinstance(item, str)]
    for number, (row, words) in enumerate(texts):
        before, weighed = literal, info
        literal += len(row)
        info += sum(weight for _, weight in words)
        if literal < MIN_LIT or info < CONFIDENT_BITS - _EPSILON:
            rows.append(_Row.of(row, len(row), typos=_typos(row)))
            continue
        # The row that makes the hit confident: its start, as much of it as that needs, may be all it shows.
        need = max(1, MIN_LIT - before, _words_needed(words, CONFIDENT_BITS - _EPSILON - weighed))
        rows.append(_last(row, need, first=number == 0, final=number == len(texts) - 1))
        trigger = max(range(len(rows)), key=lambda k: (min(map(len, rows[k].texts)), k))
        return _Gate(rows[trigger], (*rows[:trigger], *rows[trigger + 1 :]))
    return None


def _typos(row: str) -> int:
    """The edits a row shown whole may hold (locate's `_occurrences`)."""
    return 0 if len(row) < TYPO_MIN else 1 if len(row) < TYPO_LONG else 2


def _last(row: str, need: int, *, first: bool, final: bool) -> _Row:
    """How a hit's last row may show, `need` characters of its start at least: whole (as written, or with a
    typo); its start up to its final period, when it is the program's last; its first sentences (locate's
    `_sentence`); or its start up to where the paste stops (locate's `_cut`, or `_cut_first` for the first)."""
    starts = [len(row)]
    if final and row.endswith(".") and len(row) - 1 >= need:
        starts.append(len(row) - 1)
    least = max(need, MIN_CUT) if first else need  # (`_cut_first` shows MIN_CUT characters of a first row)
    end = row.rfind(".", 0, len(row) - 1)
    while end >= 0:
        starts += [length for length in (end, end + 1) if length >= least]
        end = row.rfind(".", 0, end)
    start = min(starts)
    cut = least if least < min(start, len(row)) else 0  # (else no cut shows enough, or the start says as much)
    return _Row.of(row, start, typos=_typos(row), cut=cut)


def _words_needed(words: tuple[tuple[int, float], ...], wanted: float) -> int:
    """How many characters of a row's start show words weighing `wanted` bits (0 when none are wanted)."""
    if wanted <= 0:
        return 0
    for end, weight in words:
        wanted -= weight
        if wanted <= 0:
            return end
    return 0  # (the row's words weigh less: the row is needed whole, which MIN_LIT or its length says)

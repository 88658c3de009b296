# Rewording: the pairs of old and new checks whose messages are alike, best first, one to one (numpy).
"""`diff` imports this module only when it has unpaired checks of one file and class on both sides: numpy
and rapidfuzz's cdist are imported with it."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Indel
from rapidfuzz.process import cdist

from extractor.query.similarity import ACROSS_FUNCTIONS, CUTOFF, MIN_SHARE, WITHIN_FUNCTION, words

__all__ = ["best_pairs"]


class Alike(Protocol):
    """What pairing reads of a check: its message template, function and line."""

    @property
    def message(self) -> str: ...
    @property
    def function(self) -> str: ...
    @property
    def line(self) -> int: ...


_Item = TypeVar("_Item", bound=Alike)
_NO_WORD = (-1, 0)  # the one token of a message without words: it scores 1.0 against another such


def best_pairs(old: list[_Item], new: list[_Item]) -> list[tuple[_Item, _Item]]:
    """Pair the old and new checks of one file and class whose templates are similar enough (see
    WITHIN_FUNCTION): greedily, the best pair first."""
    return _Group(old, new).pairs()


# Rewordings pair within one file and class, so each such group is paired on its own: greedily, the best
# pair first (score, then old line, new line, old and new position), one to one. Scores come from
# rapidfuzz's cdist (compiled, some 30 ns a pair), a chunk of old checks against their candidates at a time:
# in a group of up to _DENSE_CELLS pairs every new check is a candidate; in a larger one, the new checks
# that share one of the old checks' rarest words (prefix filtering, see _Group._index). Each old check keeps
# only its best few candidates (_GROWTH times more each time another check takes them all and they are
# scored again), so memory stays linear in the checks and the work is at most the group's pairs at
# compiled speed, never a sorted list of every pair that could score.
_DENSE_CELLS = 1 << 24
_CHUNK_CELLS = 1 << 20
_CHUNK_ROWS = 64  # old checks scored together in a large group (against the union of their candidates)
_KEPT = 16  # candidates an old check keeps at first
_GROWTH = 4  # times as many it keeps each time other checks took all it kept
_Ints = npt.NDArray[np.int64]
_Floats = npt.NDArray[np.float64]


@dataclass
class _Candidates:
    """An old check's best candidates not known to be taken, best first, and how many were asked for."""

    columns: _Ints
    scores: _Floats
    more: bool  # whether other candidates scored enough but were left out
    limit: int
    at: int = 0


class _Group(Generic[_Item]):
    """The unpaired checks of one file and class, old and new, their messages' words as numbers."""

    def __init__(self, old: list[_Item], new: list[_Item]) -> None:
        self.old, self.new = old, new
        vocabulary: dict[str, int] = {}
        self.a = [[vocabulary.setdefault(w, len(vocabulary)) for w in words(x.message)] for x in old]
        self.b = [[vocabulary.setdefault(w, len(vocabulary)) for w in words(x.message)] for x in new]
        functions: dict[str, int] = {}
        self.a_function = [functions.setdefault(x.function, len(functions)) for x in old]
        self.b_function = np.array([functions.setdefault(x.function, len(functions)) for x in new])
        self.b_line = np.array([x.line for x in new], dtype=np.int64)
        self.columns = np.arange(len(new), dtype=np.int64)
        self.postings: dict[tuple[int, int], _Ints] | None = None
        if len(old) * len(new) > _DENSE_CELLS:
            self._index()

    def _index(self) -> None:
        """Index the new checks by the rarest words of their messages (prefix filtering): a pair that can
        score WITHIN_FUNCTION or more shares at least t * (la + lb) / 2 words, which the rarest
        |a| - ceil(|a| / 3) + 1 words of each side then always share (for t = 0.5 the other side has at least
        |a| / 3 words). A word's k-th occurrence in a message is a token of its own, as the score counts
        repeated words. A new check outside an old one's candidates cannot score enough with it."""
        a_tokens = [_tokens(words) for words in self.a]
        b_tokens = [_tokens(words) for words in self.b]
        frequency = Counter(token for side in (a_tokens, b_tokens) for tokens in side for token in tokens)

        def prefix(tokens: list[tuple[int, int]]) -> list[tuple[int, int]]:
            if not tokens:
                return [_NO_WORD]
            rarest = sorted(tokens, key=lambda token: (frequency[token], token))
            return rarest[: len(tokens) - math.ceil(len(tokens) * MIN_SHARE - 1e-9) + 1]

        self.a_prefix = [prefix(tokens) for tokens in a_tokens]
        postings: dict[tuple[int, int], list[int]] = {}
        for position, tokens in enumerate(b_tokens):
            for token in prefix(tokens):
                postings.setdefault(token, []).append(position)
        self.postings = {token: np.array(found, dtype=np.int64) for token, found in postings.items()}

    def _candidates(self, rows: Sequence[int]) -> _Ints:
        """The new checks any of these old ones could pair with: every one, or in a large group those
        sharing a prefix token with one of them."""
        if self.postings is None:
            return self.columns
        tokens = {token for row in rows for token in self.a_prefix[row] if token in self.postings}
        if not tokens:
            return self.columns[:0]
        found = np.zeros(len(self.b), dtype=np.bool_)
        for token in tokens:
            found[self.postings[token]] = True
        return np.flatnonzero(found).astype(np.int64)

    def _scores(self, rows: Sequence[int], columns: _Ints) -> _Floats:
        choices = self.b if len(columns) == len(self.b) else [self.b[j] for j in columns]
        return cdist(
            [self.a[row] for row in rows],
            choices,
            scorer=Indel.normalized_similarity,
            dtype=np.float64,
            score_cutoff=CUTOFF,
        )

    def _best(self, row: int, columns: _Ints, scores: _Floats, limit: int) -> _Candidates:
        """An old check's `limit` best candidates among `columns` (scored `scores`), best first."""
        keep = scores >= WITHIN_FUNCTION
        keep &= (self.b_function[columns] == self.a_function[row]) | (scores >= ACROSS_FUNCTIONS)
        columns, scores = columns[keep], scores[keep]
        count = len(columns)
        if count > limit:  # the `limit` best scores, ties with the last one included, then sorted
            keep = scores >= np.partition(scores, count - limit)[count - limit]
            columns, scores = columns[keep], scores[keep]
        order = np.lexsort((columns, self.b_line[columns], -scores))[:limit]
        return _Candidates(columns[order], scores[order], count > limit, limit)

    def _first(self) -> Iterator[_Candidates]:
        """Every old check's best candidates, in order, scored a chunk of old checks at a time."""
        step = _CHUNK_ROWS if self.postings is not None else max(1, _CHUNK_CELLS // len(self.b))
        for start in range(0, len(self.a), step):
            rows = range(start, min(start + step, len(self.a)))
            columns = self._candidates(rows)
            scores = self._scores(rows, columns) if len(columns) else np.zeros((len(rows), 0))
            for row, row_scores in zip(rows, scores, strict=True):
                yield self._best(row, columns, row_scores, _KEPT)

    def _next(self, row: int, candidates: _Candidates, taken: npt.NDArray[np.bool_]) -> _Candidates | None:
        """Move an old check on to its best candidate not taken; None if it has none left."""
        rest = np.flatnonzero(~taken[candidates.columns[candidates.at :]])
        if len(rest):
            candidates.at += int(rest[0])
            return candidates
        if not candidates.more:
            return None
        columns = self._candidates([row])
        columns = columns[~taken[columns]]
        if not len(columns):
            return None
        limit = _GROWTH * candidates.limit
        found = self._best(row, columns, self._scores([row], columns)[0], limit)
        return found if len(found.columns) else None

    def pairs(self) -> list[tuple[_Item, _Item]]:
        """Pair greedily, the best pair first: each old check waits in a heap with its best candidate, which
        is taken or not when it comes out (if it is, the check waits again with its next)."""
        lists = list(self._first())
        taken = np.zeros(len(self.b), dtype=np.bool_)

        def entry(row: int, candidates: _Candidates) -> tuple[float, int, int, int, int]:
            column = int(candidates.columns[candidates.at])
            score = -float(candidates.scores[candidates.at])
            return (score, self.old[row].line, int(self.b_line[column]), row, column)

        heap = [entry(row, candidates) for row, candidates in enumerate(lists) if len(candidates.columns)]
        heapq.heapify(heap)
        out: list[tuple[_Item, _Item]] = []
        while heap and len(out) < len(self.b):
            _, _, _, row, column = heapq.heappop(heap)
            if not taken[column]:
                taken[column] = True
                out.append((self.old[row], self.new[column]))
                continue
            following = self._next(row, lists[row], taken)
            if following is not None:
                lists[row] = following
                heapq.heappush(heap, entry(row, following))
        return out


def _tokens(words: list[int]) -> list[tuple[int, int]]:
    """A message's words as tokens: each word with the number of times it occurred before in the message."""
    seen: Counter[int] = Counter()
    out = []
    for word in words:
        out.append((word, seen[word]))
        seen[word] += 1
    return out

# Similarity: how alike two message templates are, by the words they share (what `diff` pairs rewordings by).
from __future__ import annotations

import difflib
import re

from rapidfuzz.distance import Indel

__all__ = ["ACROSS_FUNCTIONS", "CUTOFF", "MIN_SHARE", "WITHIN_FUNCTION", "similarity", "word_runs", "words"]

# Reworded pairs: word-level similarity (rapidfuzz Indel on word lists: 2*common/(len a + len b)).
# Within one function 0.5 pairs a check whose message was rewritten around the same words, and one that was
# cut to half its length; across two functions a pair must share far more, because a function like
# VllmConfig.__post_init__ holds many unrelated "... requires ..." checks (docs/contributing/design.md: pairing).
WITHIN_FUNCTION = 0.5
ACROSS_FUNCTIONS = 0.85
_WORD = re.compile(r"\w+")
# The least share of its words a message must have in common with another to score WITHIN_FUNCTION:
# 2m / (la + lb) >= 1/2 with lb >= m gives m >= la / 3.
MIN_SHARE = WITHIN_FUNCTION / (2 - WITHIN_FUNCTION)
# Scores below this are not computed exactly (rapidfuzz says 0): a little below WITHIN_FUNCTION, which is then
# applied to the exact score.
CUTOFF = WITHIN_FUNCTION - 1e-6


def words(message: str) -> list[str]:
    return _WORD.findall(message.lower())


def similarity(old: str, new: str) -> float:
    """Score two message templates by the words they share, in order (0 to 1)."""
    return float(Indel.normalized_similarity(words(old), words(new)))


# Word lists whose product is above this are not aligned word by word (SequenceMatcher is quadratic in
# repeated words: a reworded 200 kB message took a minute): their middle, past the words both begin and end
# with, is one change.
_ALIGNED = 250_000


def word_runs(old: str, new: str) -> list[tuple[bool, str, str]]:
    """Two messages as runs of words, (same, old words, new words): the same on both sides, or what the old
    one had and the new one has instead (either may be empty). The words both begin and end with are one run
    each; the middle is aligned word by word when it is small enough (see _ALIGNED), else one change: a
    bounded cost for any message, as the JSON diff has."""
    a, b = old.split(), new.split()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    runs: list[tuple[bool, str, str]] = []
    if head:
        runs.append((True, " ".join(a[:head]), " ".join(b[:head])))
    if len(middle_a) * len(middle_b) <= _ALIGNED:
        matcher = difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            runs.append((op == "equal", " ".join(middle_a[i1:i2]), " ".join(middle_b[j1:j2])))
    elif middle_a or middle_b:
        runs.append((False, " ".join(middle_a), " ".join(middle_b)))
    if tail:
        runs.append((True, " ".join(a[len(a) - tail :]), " ".join(b[len(b) - tail :])))
    return runs

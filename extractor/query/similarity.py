# Similarity: how alike two message templates are, by the words they share (what `diff` pairs rewordings by).
from __future__ import annotations

import re

from rapidfuzz.distance import Indel

__all__ = ["ACROSS_FUNCTIONS", "CUTOFF", "MIN_SHARE", "WITHIN_FUNCTION", "similarity", "words"]

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

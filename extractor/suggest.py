# Suggest: the known names nearest a mistyped one, for "did you mean ...?" hints.
from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz.distance import Indel

__all__ = ["close_to", "nearest"]


def nearest(word: str, names: Iterable[str]) -> list[str]:
    """Order `names` by likeness to `word` (case folded), most alike first, then by name."""
    folded = word.casefold()
    return sorted(set(names), key=lambda name: (-Indel.normalized_similarity(folded, name.casefold()), name))


def close_to(word: str, names: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The name most like `word`, if it is alike enough to be what was meant (a typo), else None."""
    ranked = nearest(word, names)
    if ranked and Indel.normalized_similarity(word.casefold(), ranked[0].casefold()) >= cutoff:
        return ranked[0]
    return None

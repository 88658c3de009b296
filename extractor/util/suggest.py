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
    """The name most like `word`, if it is alike enough to be what was meant (a typo), else None; a word
    that only one name begins with (`hist` for history) is that name cut short."""
    ranked = nearest(word, names)
    begun = [name for name in ranked if len(word) >= 2 and name.casefold().startswith(word.casefold())]
    if len(begun) == 1:
        return begun[0]
    if ranked and Indel.normalized_similarity(word.casefold(), ranked[0].casefold()) >= cutoff:
        return ranked[0]
    return None

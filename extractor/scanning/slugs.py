# Slugs: a message template's literal words, made into the stem of its record's slug.
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["slug_stem"]

SLUG_LIMIT = 50


def slug_stem(message: str, placeholders: Iterable[tuple[int, int]], error_class: str) -> str:
    """Make the slug stem: the message's literal words (placeholders' spans left out), ASCII,
    lowercased, cut at a word boundary; the class's name when there are none."""
    literal = []
    position = 0
    for start, end in placeholders:
        literal.append(message[position:start])
        position = end
    literal.append(message[position:])
    text = " ".join(literal)
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = [w for w in re.split(r"[^a-z0-9]+", ascii_text.lower()) if w]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_LIMIT:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:SLUG_LIMIT]
    return slug or error_class.lower()

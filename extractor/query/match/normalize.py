# Normalize: what a paste's printed error says of itself (its class), and what Python takes for whitespace.
from __future__ import annotations

import re

__all__ = ["CLASS_PREFIX", "WHITESPACE"]

# An exception class as a printed error names it (`ValueError`, `vllm.errors.ConfigError`, bare `Exception`),
# the module path apart; and the class that prefixes a printed error, `ValueError: ...`.
_CLASS = r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
CLASS_PREFIX = re.compile(_CLASS + r"(?::\s?|$)")

# What Python takes for whitespace (`str.isspace`, `str.strip`, `re`'s `\s`), as the body of a character class
# both Python's `re` and JavaScript read alike (JavaScript's `\s` and `trim` leave out \x1c-\x1f and \x85, and
# take \ufeff): tests/test_find_parity.py checks it against every character.
WHITESPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

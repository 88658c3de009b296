# Chains: the attribute chains and names an expression reads (`self.a.b`), as the scan records them.
from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["chains", "reads"]

_STRING = re.compile(r"""(?:[rRbBuUfF]{0,2})(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""", re.S)
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)(\s*\()?")
# Bare names that are no field: keywords, self, and Python's builtins (str, len, isinstance, Exception...).
# A local that shadows a builtin (`{format=}`) is dropped too: it could not be set from outside anyway.
_SKIP_NAMES = set(keyword.kwlist) | {"self", "cls"} | {name for name in dir(builtins) if not name.startswith("_")}


def reads(texts: Iterable[str]) -> list[str]:
    """The chains a record reads: those of its conditions' tests, then of its placeholders, once each."""
    return list(dict.fromkeys(chain for text in texts for chain in chains(text)))


@lru_cache(maxsize=8192)
def chains(expression: str) -> tuple[str, ...]:
    """List the attribute chains and bare names an expression reads, without the methods it calls."""
    text = _STRING.sub('""', expression)
    found = []
    for match in _CHAIN.finditer(text):
        chain = re.sub(r"\s+", "", match.group(1))
        parts = chain.split(".")
        if match.group(2):  # a call: the object it is called on is read, not the method
            parts = parts[:-1]
        if not parts or parts[0] in keyword.kwlist:
            continue
        if len(parts) == 1 and parts[0] in _SKIP_NAMES:
            continue
        found.append(".".join(parts))
    return tuple(found)

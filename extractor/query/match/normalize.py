# Normalize: what a paste's printed error says of itself (its class; whether Python prints such a message itself).
from __future__ import annotations

import re

__all__ = ["CLASS_PREFIX", "PYTHON_OWN", "WHITESPACE", "python_prints"]

# An exception class as a printed error names it (`ValueError`, `vllm.errors.ConfigError`, bare `Exception`),
# the module path apart; and the class that prefixes a printed error, `ValueError: ...`.
_CLASS = r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
CLASS_PREFIX = re.compile(_CLASS + r"(?::\s?|$)")

# What Python takes for whitespace (`str.isspace`, `str.strip`, `re`'s `\s`), as the body of a character class
# both Python's `re` and JavaScript read alike (JavaScript's `\s` and `trim` leave out \x1c-\x1f and \x85, and
# take \ufeff): tests/test_find_parity.py checks it against every character.
WHITESPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_WORD = f"[^{WHITESPACE}]+"  # (`\S+`, as both read it)


# Messages the interpreter prints itself, by class: a template that prints the same (a re-raise written to
# look like Python's own) cannot tell that paste from Python's, so its answer is a weak one.
PYTHON_OWN: dict[str, str] = {
    cls: "|".join(f"(?:{pattern})" for pattern in patterns)
    for cls, patterns in {
        "ModuleNotFoundError": [r"No module named '[^']+'"],
        "ImportError": [r"No module named '[^']+'", r"cannot import name '[^']+' from '[^']+'(?: \([^\n]*\))?"],
        "AttributeError": [
            r"(?:partially initialized )?module '[^']+' has no attribute '[^']+'[^\n]*",
            r"'[^']+' object has no attribute '[^']+'[^\n]*",
            r"type object '[^']+' has no attribute '[^']+'",
        ],
        "NameError": [r"name '[^']+' is not defined[^\n]*"],
        "IndexError": [r"(?:list|tuple|string|range object) index out of range"],
        "ZeroDivisionError": [r"(?:integer |float )?division(?: or modulo)? by zero"],
        "RecursionError": [r"maximum recursion depth exceeded[^\n]*"],
        "TypeError": [
            _WORD + r"\(\) takes (?:from )?[0-9]+ (?:to [0-9]+ )?positional arguments? but [0-9]+ (?:were|was) given",
            _WORD + r"\(\) got an unexpected keyword argument '[^']+'",
            _WORD + r"\(\) missing [0-9]+ required (?:positional|keyword-only) arguments?: [^\n]*",
            r"unsupported operand type\(s\) for [^\n]*",
            r"'[^']+' object is not (?:callable|subscriptable|iterable)",
        ],
        "ValueError": [
            r"invalid literal for int\(\) with base [0-9]+: [^\n]*",
            r"(?:too many|not enough) values to unpack[^\n]*",
            r"(?:max|min)\(\) (?:arg|iterable argument) is an empty sequence",
        ],
    }.items()
}  # (as pattern texts that Python's `re` and JavaScript read alike, `.` spelled `[^\n]` and `\d` `[0-9]`: the
# site's script reads them too)
_PYTHON_OWN = {cls: re.compile(pattern) for cls, pattern in PYTHON_OWN.items()}


def python_prints(shown: str | None, message: str) -> str | None:
    """If a message as it stands in a paste (its first line), printed under the class `shown` (or any, when
    the paste shows none), is one the interpreter prints itself, its class."""
    message = message.strip().split("\n", 1)[0].strip()
    for name, own in _PYTHON_OWN.items():
        if (shown is None or shown == name) and message and own.fullmatch(message) is not None:
            return name
    return None

# Normalize: what a paste's printed error says of itself (its class; whether Python prints such a message itself).
from __future__ import annotations

import re

__all__ = ["CLASS_PREFIX", "PYTHON_OWN", "python_prints"]

# An exception class as a printed error names it (`ValueError`, `vllm.errors.ConfigError`, bare `Exception`),
# the module path apart; and the class that prefixes a printed error, `ValueError: ...`.
_CLASS = r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
CLASS_PREFIX = re.compile(_CLASS + r"(?::\s?|$)")


# Messages the interpreter prints itself, by class: a template that prints the same (a re-raise written to
# look like Python's own) cannot tell that paste from Python's, so its answer is a weak one.
PYTHON_OWN: dict[str, str] = {
    cls: "|".join(f"(?:{pattern})" for pattern in patterns)
    for cls, patterns in {
        "ModuleNotFoundError": [r"No module named '[^']+'"],
        "ImportError": [r"No module named '[^']+'", r"cannot import name '[^']+' from '[^']+'(?: \(.*\))?"],
        "AttributeError": [
            r"(?:partially initialized )?module '[^']+' has no attribute '[^']+'.*",
            r"'[^']+' object has no attribute '[^']+'.*",
            r"type object '[^']+' has no attribute '[^']+'",
        ],
        "NameError": [r"name '[^']+' is not defined.*"],
        "IndexError": [r"(?:list|tuple|string|range object) index out of range"],
        "ZeroDivisionError": [r"(?:integer |float )?division(?: or modulo)? by zero"],
        "RecursionError": [r"maximum recursion depth exceeded.*"],
        "TypeError": [
            r"\S+\(\) takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given",
            r"\S+\(\) got an unexpected keyword argument '[^']+'",
            r"\S+\(\) missing \d+ required (?:positional|keyword-only) arguments?: .*",
            r"unsupported operand type\(s\) for .*",
            r"'[^']+' object is not (?:callable|subscriptable|iterable)",
        ],
        "ValueError": [
            r"invalid literal for int\(\) with base \d+: .*",
            r"(?:too many|not enough) values to unpack.*",
            r"(?:max|min)\(\) (?:arg|iterable argument) is an empty sequence",
        ],
    }.items()
}  # (as pattern texts that Python's `re` and JavaScript read alike: the site's script reads them too)
_PYTHON_OWN = {cls: re.compile(pattern) for cls, pattern in PYTHON_OWN.items()}


def python_prints(shown: str | None, message: str) -> str | None:
    """If a message as it stands in a paste (its first line), printed under the class `shown` (or any, when
    the paste shows none), is one the interpreter prints itself, its class."""
    message = message.strip().split("\n", 1)[0].strip()
    for name, own in _PYTHON_OWN.items():
        if (shown is None or shown == name) and message and own.fullmatch(message) is not None:
            return name
    return None

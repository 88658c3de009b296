# Paste: a paste made plain (what terminals, HTML and editors did to it undone) and read as its skeleton.
#
# The skeleton is the text without whitespace, backticks and backslashes, `"` read as `'`, ASCII letters in
# lower case: templates are compared with a paste on it (see find.py), so runs of spaces, a wrap at any
# column, markdown's lost backticks and a JSON string's escapes all meet the template as printed.
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "CHARACTERS",
    "CLASS_SHOWN_IN",
    "ENTITIES",
    "GAPS",
    "MOJIBAKE",
    "UNDONE",
    "Paste",
    "bare_of",
    "cuts_of",
    "plain",
    "skeleton",
    "unescape",
    "without_line_prefix",
]

# Characters editors, chat clients and web pages put for plain ones (and their UTF-8 read as Windows-1252).
CHARACTERS = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"',
    "\u201e": '"', "\u2033": '"', "\u00a0": " ", "\u202f": " ", "\u2007": " ", "\u2009": " ", "\u200a": " ",
    "\u3000": " ", "\u2026": "...", "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "",
}  # fmt: skip
MOJIBAKE = [
    ("\u00e2\u20ac\u2122", "'"), ("\u00e2\u20ac\u02dc", "'"), ("\u00e2\u20ac\u0153", '"'), ("\u00e2\u20ac\ufffd", '"'),
    ("\u00e2\u20ac\u00a6", "..."), ("\u00e2\u20ac", '"'),
]  # fmt: skip
ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'", "nbsp": " "}
# Regular expressions both sides run alike (Python's `re` and JavaScript's, with no flag: see locate.py).
ANSI = r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]"
ENTITY = r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,6});"
PREFIX_MAX = 80  # characters of a line its prefix may take
ESCAPE = r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[\\'\"/ntr])"
ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
# A class's name in a line's common start: that start is no prefix (the lines are a message's, or a traceback's).
CLASS_SHOWN_IN = r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Warning)(?::|(?![\s\S]))"
# What the skeleton leaves out: whitespace, backticks, backslashes (an escaped line break's letter with its own).
GAPS = r"(?:[ \t\n\r\f\v`]|\\[ntr]?)+"

# What `plain` undoes, as it stands in a skeleton: a text without a line break whose skeleton holds none of
# these is plain already (`plain` returns it as it is, with no step).
UNDONE = ("\x1b", "^[", "&", "\u00e2\u20ac", *CHARACTERS)

_ANSI = re.compile(ANSI)
_ENTITY = re.compile(ENTITY)
_DIGIT = re.compile(r"[0-9]")
_CLASS_SHOWN_IN = re.compile(CLASS_SHOWN_IN)
_ESCAPE = re.compile(ESCAPE)


def plain(text: str, *, entities: bool = True) -> tuple[str, tuple[str, ...]]:
    """The paste with what terminals, HTML (unless not `entities`) and editors did to it undone, and the
    steps that were needed."""
    steps: list[str] = []
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text or "^[" in text:
        undone = _ANSI.sub("", text)
        if undone != text:
            text = undone
            steps.append("ansi")
    if entities and "&" in text:
        undone = _ENTITY.sub(_entity, text)
        if undone != text:
            text = undone
            steps.append("html")
    if "\n" in text and (unprefixed := without_line_prefix(text)) is not None:
        text = unprefixed
        steps.append("line-prefix")
    typed = text
    if "\u00e2\u20ac" in typed:
        for bad, good in MOJIBAKE:
            typed = typed.replace(bad, good)
    typed = "".join(CHARACTERS.get(c, c) for c in typed) if any(c in CHARACTERS for c in typed) else typed
    if typed != text:
        text = typed
        steps.append("characters")
    return text, tuple(steps)


def without_line_prefix(text: str) -> str | None:
    """The text without what starts each of its lines the same way, give or take digits (a process tag, a
    time stamp, a quote mark: `(EngineCore_DP0 pid=1) `, `2025-01-02 12:34:56,789 - vllm - ERROR - `, `> `),
    up to a space; None when the lines share no such start (indentation and a class name are not one)."""
    lines = text.split("\n")
    shown = [line for line in lines if line.strip()]
    if len(shown) < 2:
        return None
    shapes = [_DIGIT.sub("0", line[:PREFIX_MAX]) for line in shown]
    first, last = min(shapes), max(shapes)  # what all share, the first and the last in order share
    common = 0
    while common < len(first) and common < len(last) and first[common] == last[common]:
        common += 1
    cut = first.rfind(" ", 0, common) + 1
    if not first[:cut].strip() or _CLASS_SHOWN_IN.search(first[:cut]):
        return None
    return "\n".join(line[cut:] if line.strip() else line for line in lines)


def unescape(text: str) -> str:
    """A value as the string literal that quoted it (JSON's, a repr's) stands for: its escapes undone."""
    if "\\" not in text:
        return text
    out = _ESCAPE.sub(_unescaped, text)
    if "\\u" in text:  # a JSON surrogate pair is one character
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def _unescaped(found: re.Match[str]) -> str:
    escape = found[1]
    if escape[0] in "ux":
        return chr(int(escape[1:], 16))
    return ESCAPES.get(escape, escape)


def _entity(found: re.Match[str]) -> str:
    name = found[1]
    if name[0] == "#":
        code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
        return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else found[0]
    return ENTITIES.get(name, found[0])


def skeleton(text: str) -> tuple[str, list[int]]:
    """The text without whitespace, backticks and backslashes (a backslash's `n`, `t` or `r` with it: an
    escaped line break), `"` read as `'`, ASCII letters in lower case; and where each character kept stands
    in `text`."""
    out: list[str] = []
    where: list[int] = []
    position = 0
    for gap in _GAPS.finditer(text):
        if gap.start() > position:
            out.append(text[position : gap.start()])
            where.extend(range(position, gap.start()))
        position = gap.end()
    if position < len(text):
        out.append(text[position:])
        where.extend(range(position, len(text)))
    return "".join(out).translate(_KEPT), where


_GAPS = re.compile(GAPS)
_KEPT = str.maketrans({'"': "'", **{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}})


def bare_of(text: str) -> str:
    """The text's skeleton alone (see `skeleton`), without where each of its characters stands."""
    if text.isascii() and text.isprintable() and "\\" not in text:  # (its only whitespace is spaces)
        return text.replace(" ", "").replace("`", "").replace('"', "'").lower()
    return _GAPS.sub("", text).translate(_KEPT)


def cuts_of(bare: str) -> list[int]:
    """Where the text a cut paste shows may stop in its skeleton: at each `...`, and at its end."""
    cuts: list[int] = []
    at = bare.find("...")
    while at >= 0:
        cuts.append(at)
        at = bare.find("...", at + 3)
    cuts.append(len(bare))
    return cuts


@dataclass(slots=True)
class Paste:
    """A paste read for matching: its plain text, its skeleton, and where a cut paste may end."""

    text: str
    steps: tuple[str, ...]
    bare: str = ""
    where: list[int] = field(default_factory=list)
    cuts: list[int] = field(default_factory=list)  # skeleton positions the shown text may stop at

    @classmethod
    def of(cls, text: str, *, entities: bool = True) -> Paste:
        text, steps = plain(text, entities=entities)
        bare, where = skeleton(text)
        return cls(text, steps, bare, where, cuts_of(bare))

    def at(self, index: int) -> int:
        """Where skeleton position `index` stands in the text (its end, for one past the last)."""
        return self.where[index] if index < len(self.where) else len(self.text)

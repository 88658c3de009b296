# Find: where templates' literal text stands in a paste, wherever it stands, and how much that text says.
#
# The one definition of matching that `match` and the site's search share: the site's script
# (publish/site/assets/static/find.js) follows this module step by step, reading its tables from `SHARED`
# (written into the page), and tests/test_site.py checks both give the same first answer on a corpus.
#
# A paste is made plain (ANSI escapes, HTML entities, curly quotes and odd spaces undone) and read as its
# *skeleton*: its characters without whitespace, backticks and backslashes, `"` read as `'`. A template is
# read from its pattern as one or more *programs* (its optional parts and alternatives spelled out), each a
# row of literal text and holes, and compared on the skeleton too: so runs of spaces, a wrap at any column
# (inside a word or between words), markdown's lost backticks and a JSON string's escapes all meet the
# template as printed. Each literal row is looked for with a plain substring search, in order (no regex
# engine: the work is linear in the paste for each template tried), starting at every place the first one
# stands; the message may stand anywhere in the paste, inside prose, a title, a quote or another error.
#
# What a match is worth is how much it explains with literal text and how rare that text is among all the
# templates given: each word of a template weighs log2(templates / templates with that word) bits (common
# English words weigh at most one), and a match is confident when the words it shows weigh INFO_MIN bits.
from __future__ import annotations

import builtins
import math
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extractor.query.match.pattern import MatchTemplate

__all__ = ["INFO_MIN", "SHARED", "Finder", "Hit", "Paste", "Program", "plain", "programs_of", "skeleton"]

INFO_MIN = 18.0  # bits the literal words a paste shows must weigh for a confident answer
MIN_LIT = 10  # skeleton characters (spaces aside) of literal text a confident answer shows
MIN_CUT = 16  # skeleton characters of a template's first literal a paste cut inside it must show
KEY = 16  # a literal's first characters (MIN_CUT: a cut paste shows them): a key that selects the template
MIN_KEY = 4  # shorter literals select nothing
MAX_STARTS = 16  # places the first literal is tried at
MAX_PROGRAMS = 16  # ways one template may print (optional parts spelled out), beyond which they are holes
COMMON_WEIGHT = 1.0  # what a common English word weighs at most
CLASS_WEIGHT = 4.0  # what the class shown before a message weighs at most
MAX_WEAK = 5
INFO_UNIQUE = 8.0  # bits enough for an answer no other template's text competes with
TYPO_MIN = 16  # skeleton characters a literal row needs for a typo in it to be forgiven
TYPO_LONG = 40  # and for two
TYPO_TRIES = 4  # places each half of a row is tried at
MIN_SENTENCE = 12  # skeleton characters of a row's first sentences a paste that quotes only them shows
DIVERGE = 6  # skeleton characters of a literal row that, seen in the value before it, mean the text departs

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
# Regular expressions both sides run alike (Python's `re` and JavaScript's, no flags beyond these).
ANSI = r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]"
ENTITY = r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,6});"
_NAME = r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*"  # a class's module path, `vllm.errors.`
_CLASS = r"(?:[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
# A printed error's class right before its message (`ValueError: `, `vllm.errors.ConfigError:`).
CLASS_BEFORE = (
    r"(?:^|[^A-Za-z0-9_.])" + _NAME + "(" + _CLASS + r"):[ \t]*(?![\s\S])"
)  # (the text's end, as both read it)
# A printed error's class and what follows it up to its message (`ValueError: `; alone on its line, no message).
CLASS_AT = r"(?:^|(?<=[^A-Za-z0-9_.]))(" + _NAME + _CLASS + r")(?::[ \t]*|[ \t]*$)"
# What ends the text a message's first value may start after (a title's tag, a log's `name:`, a quote).
LEAD_STOPS = [": ", "\uff1a", "] ", "> ", ' "', " '", '("', "('", "\t"]
# What ends a message's last value: pydantic's `[type=...]`, the next line of a traceback.
TAIL_STOPS = [" [type=", "\nTraceback (most recent call last)", "\nThe above exception", "\nDuring handling of"]
PREFIX_MAX = 80  # characters of a line its prefix may take
ESCAPE = r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[\\'\"/ntr])"
ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
OPENERS = {"'": "'", '"': '"', "(": ")", "[": "]", "`": "`"}
# Words so common in any text that showing them says little which template printed it.
COMMON = sorted(
    """a about after all an and any are as at be been but by can cannot could did do does for from got has have if
    in into is it its may more must no not of on one only or other please should so such than that the then there
    these this to try use used using was were when which will with you your value values error errors invalid type
    set supported support found given expected none true false""".split()  # noqa: SIM905 (a list of words, read as such)
)
WORD = re.compile(r"[A-Za-z0-9_]+")

SHARED: dict[str, Any] = {
    "INFO_MIN": INFO_MIN,
    "INFO_UNIQUE": INFO_UNIQUE,
    "MIN_LIT": MIN_LIT,
    "MIN_CUT": MIN_CUT,
    "KEY": KEY,
    "MIN_KEY": MIN_KEY,
    "MAX_STARTS": MAX_STARTS,
    "MAX_WEAK": MAX_WEAK,
    "DIVERGE": DIVERGE,
    "TYPO_MIN": TYPO_MIN,
    "TYPO_LONG": TYPO_LONG,
    "TYPO_TRIES": TYPO_TRIES,
    "MIN_SENTENCE": MIN_SENTENCE,
    "CHARACTERS": CHARACTERS,
    "MOJIBAKE": MOJIBAKE,
    "ENTITIES": ENTITIES,
    "ANSI": ANSI,
    "ENTITY": ENTITY,
    "CLASS_BEFORE": CLASS_BEFORE,
    "CLASS_AT": CLASS_AT,
    "LEAD_STOPS": LEAD_STOPS,
    "TAIL_STOPS": TAIL_STOPS,
    "OPENERS": OPENERS,
    "PREFIX_MAX": PREFIX_MAX,
    "ESCAPE": ESCAPE,
    "ESCAPES": ESCAPES,
}  # fmt: skip (BUILTIN_BASES joins it below)

_ANSI = re.compile(ANSI)
_ENTITY = re.compile(ENTITY)
_CLASS_BEFORE = re.compile(CLASS_BEFORE)
_DIGIT = re.compile(r"[0-9]")
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
_DIGITS = re.compile(r"[0-9]+")
_CLASS_SHOWN_IN = re.compile(r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Warning)(?::|$)")
_ESCAPE = re.compile(ESCAPE)
# Each builtin exception class's bases (what a printed class it may stand for), as Python itself has them.
BUILTIN_BASES = {
    cls.__name__: [base.__name__ for base in cls.__mro__[1:] if issubclass(base, BaseException)]
    for cls in (getattr(builtins, name) for name in dir(builtins))
    if isinstance(cls, type) and issubclass(cls, BaseException)
}
SHARED["BUILTIN_BASES"] = BUILTIN_BASES


# ---------------------------------------------------------------------------------------------- the paste


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


_GAPS = re.compile(r"(?:[ \t\n\r\f\v`]|\\[ntr]?)+")  # what the skeleton leaves out
_KEPT = str.maketrans({'"': "'", **{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}})


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
        cuts: list[int] = []
        at = bare.find("...")
        while at >= 0:
            cuts.append(at)
            at = bare.find("...", at + 3)
        cuts.append(len(bare))
        return cls(text, steps, bare, where, cuts)

    def at(self, index: int) -> int:
        """Where skeleton position `index` stands in the text (its end, for one past the last)."""
        return self.where[index] if index < len(self.where) else len(self.text)


# ------------------------------------------------------------------------------------------- the templates


@dataclass(frozen=True, slots=True)
class Program:
    """One way a template prints: literal rows (skeleton text) and holes (the template's groups they hold)."""

    items: tuple[str | tuple[int, ...], ...]
    texts: tuple[str, ...]  # each literal row as the template writes it ("" for a hole)
    words: tuple[tuple[tuple[int, float], ...], ...]  # each literal's words: (skeleton end, weight)

    def to_json(self) -> list[Any]:
        return [
            [item, text, [list(w) for w in words]] if isinstance(item, str) else list(item)
            for item, text, words in zip(self.items, self.texts, self.words, strict=True)
        ]


def programs_of(template: MatchTemplate) -> list[list[tuple[str | None, str | int | None]]]:
    """The template's pattern as rows of ("lit", text) and ("hole", group index or None), one per way it prints."""
    names = {group: number for number, (group, _) in enumerate(template.groups)}
    try:
        tree, _ = _sequence(template.messagePattern, 0)
    except (IndexError, ValueError):
        tree = [("hole", None)]
    rows = _spelled(tree)
    if rows is None:
        rows = _spelled(_collapsed(tree)) or [[("hole", None)]]
    return [[(kind, names.get(value) if kind == "hole" else value) for kind, value in row] for row in rows]


def _sequence(pattern: str, position: int) -> tuple[list[Any], int]:
    """Read a pattern from `position` up to an unmatched `)` or its end: a list of alternatives is one
    ("alt", [sequences]) node; literals are ("lit", char), holes ("hole", group name or None)."""
    branches: list[list[Any]] = [[]]
    end = len(pattern)
    while position < end:
        char = pattern[position]
        if char == ")":
            break
        if char == "|":
            branches.append([])
            position += 1
            continue
        node, position = _atom(pattern, position)
        quantifier = pattern[position : position + 1]
        counted = re.match(r"\{\d+(?:,\d*)?\}", pattern[position:]) if quantifier == "{" else None
        if quantifier in ("?", "*", "+") or counted:
            position += counted.end() if counted else 1
            if pattern[position : position + 1] in ("?", "+"):
                position += 1
            if quantifier == "?" and _blank(node):
                node = ("alt", [[]])  # an optional space: the skeleton has none either way
            elif quantifier == "?":
                node = ("alt", [[], [node]])  # (absent first: a row that prints the same keeps that text)
            elif node != ("lit", " "):
                node = ("hole", None)
        branches[-1].append(node)
    tree = branches[0] if len(branches) == 1 else [("alt", branches)]
    return tree, position


def _blank(node: Any) -> bool:
    """Whether a node prints only whitespace (or nothing)."""
    if node[0] == "lit":
        return str(node[1]).isspace()
    if node[0] == "alt":
        return all(all(_blank(inner) for inner in branch) for branch in node[1])
    return False


def _atom(pattern: str, position: int) -> tuple[Any, int]:
    char = pattern[position]
    if char == "(":
        named = re.match(r"\(\?P<(\w+)>\.\*\??\)", pattern[position:])
        if named:
            return ("hole", named[1]), position + named.end()
        inner = re.match(r"\((?:\?(?:P<\w+>|:|=|!|<=|<!))?", pattern[position:])
        assert inner is not None
        tree, after = _sequence(pattern, position + inner.end())
        if pattern[after : after + 1] != ")":
            raise ValueError("unbalanced")
        if inner[0] in ("(?=", "(?!", "(?<=", "(?<!"):
            return ("alt", [[]]), after + 1
        return ("alt", [tree]), after + 1
    if char == "[":
        close = position + 1
        close += pattern[close : close + 1] == "^"
        close += pattern[close : close + 1] == "]"
        while pattern[close] != "]":
            close += 2 if pattern[close] == "\\" else 1
        body = pattern[position + 1 : close].replace("\\", "")
        return (("lit", "'") if body and set(body) <= {"'", '"'} else ("hole", None)), close + 1
    if char == "\\":
        escaped = pattern[position + 1]
        if escaped == "s":
            return ("lit", " "), position + 2
        if escaped in "bBAZ":
            return ("alt", [[]]), position + 2
        if escaped.isalnum():
            return ("hole", None), position + 2
        return ("lit", escaped), position + 2
    if char == ".":
        return ("hole", None), position + 1
    if char in "^$":
        return ("alt", [[]]), position + 1
    return ("lit", char), position + 1


def _spelled(tree: list[Any]) -> list[list[tuple[str, Any]]] | None:
    """Every flat row a tree prints (alternatives spelled out), None beyond MAX_PROGRAMS of them."""
    rows: list[list[tuple[str, Any]]] = [[]]
    for node in tree:
        if node[0] != "alt":
            for row in rows:
                row.append(node)
            continue
        options: list[list[tuple[str, Any]]] = []
        for branch in node[1]:
            spelled = _spelled(branch)
            if spelled is None:
                return None
            options += spelled
        rows = [row + option for row in rows for option in options]
        if len(rows) > MAX_PROGRAMS:
            return None
    return rows


def _collapsed(tree: list[Any]) -> list[Any]:
    """The tree with each choice of several ways made a hole (its literal text unknown)."""
    return [("hole", None) if node[0] == "alt" and len(node[1]) > 1 else node for node in tree]


Rows = list[list[tuple[str | None, str | int | None]]]  # what programs_of reads of a template


def compile_programs(rows: Rows, weigh: dict[str, float]) -> list[Program]:
    """A template's programs (its rows, as programs_of read them): literal rows in skeleton form with their
    words weighed, holes merged."""
    out: list[Program] = []
    seen: set[tuple[Any, ...]] = set()
    for row in rows:
        items: list[str | tuple[int, ...]] = []
        texts: list[str] = []
        for kind, value in row:
            if kind == "lit":
                if items and isinstance(items[-1], str):
                    texts[-1] += str(value)
                    items[-1] = ""
                else:
                    items.append("")
                    texts.append(str(value))
            else:
                groups = () if value is None else (int(value),)
                if items and isinstance(items[-1], tuple):
                    items[-1] = items[-1] + groups
                else:
                    items.append(groups)
                    texts.append("")
        # Literal rows in skeleton form; one that is only spaces joins the holes around it.
        merged: list[str | tuple[int, ...]] = []
        merged_texts: list[str] = []
        words: list[tuple[tuple[int, float], ...]] = []
        for item, text in zip(items, texts, strict=True):
            weighed: tuple[tuple[int, float], ...] = ()
            if isinstance(item, str):
                item, where = skeleton(text)
                weighed = _weighed(text, where, weigh)
                if not item:
                    item = ()
                    text = ""
            if isinstance(item, tuple) and merged and isinstance(merged[-1], tuple):
                merged[-1] = merged[-1] + item
                continue
            merged.append(item)
            merged_texts.append(text)
            words.append(weighed)
        key = tuple(merged)
        if key in seen or not merged:
            continue
        seen.add(key)
        out.append(Program(tuple(merged), tuple(merged_texts), tuple(words)))
    return out


def words_of(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(text)]


def _weighed(text: str, where: list[int], weigh: dict[str, float]) -> tuple[tuple[int, float], ...]:
    """Each word of a literal row (`where`: its skeleton's places in it): where it ends in the skeleton, and
    its weight."""
    return tuple((bisect_left(where, found.end()), weigh.get(found[0].lower(), 0.0)) for found in WORD.finditer(text))


def weights(templates: Sequence[Rows]) -> dict[str, float]:
    """Each word's weight: log2 of how many templates (their rows) there are over how many show the word (at
    least 500 templates are counted, so a small catalog does not make every word rare), common words at most
    one."""
    documents: dict[str, int] = {}
    for rows in templates:
        for word in set(words_of(_literal_text(rows))):
            documents[word] = documents.get(word, 0) + 1
    total = max(len(templates), 500)
    common = set(COMMON)
    out: dict[str, float] = {}
    for word, count in documents.items():
        weight = math.log2(total / count)
        out[word] = round(min(weight, COMMON_WEIGHT) if word in common else weight, 3)
    return out


def class_weights(classes: Sequence[str]) -> dict[str, float]:
    """What showing each class says: log2 of how many templates there are over how many raise it."""
    counts: dict[str, int] = {}
    for name in classes:
        counts[name] = counts.get(name, 0) + 1
    total = len(classes)  # (no floor here: a class most templates of a small catalog raise says little)
    return {name: round(min(CLASS_WEIGHT, math.log2(total / count)), 3) for name, count in counts.items()}


def _literal_text(rows: Rows) -> str:
    """A template's literal text, every way it prints, a hole read as a space."""
    return " ".join("".join(str(value) if kind == "lit" else " " for kind, value in row) for row in rows)


def keys_of(programs: Sequence[Program]) -> list[str]:
    """The texts whose presence in a paste's skeleton makes the template worth trying: each literal row's
    first KEY characters (a cut paste shows a row's start), and a long row's last ones (a typo may fall in
    its start)."""
    rows = [item for p in programs for item in p.items if isinstance(item, str) and len(item) >= MIN_KEY]
    return sorted({row[:KEY] for row in rows} | {row[-KEY:] for row in rows if len(row) >= TYPO_MIN})


# ----------------------------------------------------------------------------------------------- matching


@dataclass(slots=True)
class Hit:
    """Where one program of one template stands in a paste, and what it explains there."""

    template: int
    program: int
    spans: list[tuple[int, int]]  # skeleton spans of the literal rows shown, in order
    start: int  # where the message starts and ends in the plain text
    end: int
    values: list[tuple[tuple[int, ...], str]]
    holes: list[tuple[int, int]]  # skeleton spans the holes took
    literal: int
    info: float
    cut: bool = False
    period: bool = False
    exact: bool = True
    typo: bool = False
    agrees: bool = False  # the class shown before the message is the template's own
    verbatim: bool = False  # its literal text stands as the template writes it (letter case), whitespace aside
    spaced: bool = False  # and with spaces where the template has them
    open_end: bool = False  # cut inside a value: nothing shows the text after it goes on as the template does
    shown_class: str | None = None
    confident: bool = False
    demoted: bool = False


class Finder:
    """Templates compiled to programs, with the words' weights and the keys that select them."""

    def __init__(self, templates: Sequence[MatchTemplate]) -> None:
        rows = [programs_of(t) for t in templates]  # (each pattern read once)
        self.weigh = weights(rows)
        self.programs = [compile_programs(read, self.weigh) for read in rows]
        self.classes = [t.errorClass for t in templates]
        self.class_weight = class_weights(self.classes)
        self.catch_all = [t.catch_all for t in templates]
        self.keys = [keys_of(programs) for programs in self.programs]  # each template's
        self.keyless_by_class: dict[str, list[int]] = {}
        for index, keys in enumerate(self.keys):
            if not keys:
                self.keyless_by_class.setdefault(self.classes[index], []).append(index)
        self._automaton: Any = None

    def automaton(self) -> Any:
        """An Aho-Corasick automaton of every template's keys, each naming the templates that have it."""
        if self._automaton is None and any(self.keys):
            import ahocorasick

            having: dict[str, list[int]] = {}
            for index, keys in enumerate(self.keys):
                for key in keys:
                    having.setdefault(key, []).append(index)
            automaton = ahocorasick.Automaton()
            for key, indexes in having.items():
                automaton.add_word(key, tuple(indexes))
            automaton.make_automaton()
            self._automaton = automaton
        return self._automaton

    def __getstate__(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in ("weigh", "programs", "classes", "class_weight", "catch_all", "keys", "keyless_by_class")
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._automaton = None

    def to_json(self) -> dict[str, Any]:
        """The tables the site's script (find.js) reads: the shared constants, and each template's class,
        whether it is a catch-all, its programs and its keys."""
        return {
            "shared": SHARED,
            "classes": self.classes,
            "catchAll": self.catch_all,
            "classWeight": self.class_weight,
            "programs": [[program.to_json() for program in programs] for programs in self.programs],
            "keys": self.keys,
        }

    def candidates(self, paste: Paste) -> list[int]:
        """Every template one of whose keys the paste's skeleton shows, and those with no key of the class
        the paste names; in template order."""
        found: set[int] = set()
        automaton = self.automaton()
        if automaton is not None and paste.bare:
            for _, indexes in automaton.iter(paste.bare):
                found.update(indexes)
        for shown in _CLASS_AT.finditer(paste.text):
            found.update(self.keyless_by_class.get(shown[1].rpartition(".")[2], ()))
        return sorted(found)

    def find(self, paste: Paste) -> list[Hit]:
        """Every template that explains part of the paste (its best place each), ranked: confident ones in
        the order they stand (a message quoted inside another first), then weak ones by literal text shown.
        When none is confident, literal text with a typo in it is looked for too."""
        return ranked(self._pass(paste, self.candidates(paste)))

    def _pass(self, paste: Paste, candidates: list[int]) -> list[Hit]:
        hits: list[Hit] = []
        for index in candidates:
            if not self.programs[index]:  # a raise with no message: the class alone, nothing after it
                hit = self._whole_message(index, -1, paste)
                if hit is not None and not hit.values[0][1]:
                    hits.append(hit)
                continue
            best: Hit | None = None
            for near in (False, True):  # as written; else with a typo in its literal text
                for number, program in enumerate(self.programs[index]):
                    hit = self._place(index, number, program, paste, near=near)
                    if hit is not None and (best is None or _better(hit, best)):
                        best = hit
                if best is not None:
                    break
            if best is not None:
                hits.append(best)
        _demote(hits)
        standing = [hit for hit in hits if not hit.demoted and not self.catch_all[hit.template]]
        for hit in standing:
            if hit.shown_class is not None:  # the class shown says as much as a word as rare
                hit.info += self.class_weight.get(hit.shown_class, 0.0)
        for hit in standing:
            if hit.literal < MIN_LIT:
                continue
            alone = not hit.open_end and not any(
                o is not hit and o.literal >= hit.literal and o.start < hit.end and hit.start < o.end for o in standing
            )
            hit.confident = hit.info >= INFO_MIN or (alone and hit.info >= INFO_UNIQUE)
        return hits

    def _place(self, index: int, number: int, program: Program, paste: Paste, *, near: bool) -> Hit | None:
        """Where the program stands in the paste: at the first place its first literal row stands from which
        the others follow (with a typo each, when `near`), else as a cut paste of it."""
        items = program.items
        literals = [k for k, item in enumerate(items) if isinstance(item, str)]
        if not literals:
            return self._whole_message(index, number, paste)
        first = literals[0]
        head = str(items[first])
        text = program.texts[first]
        for at, end, typo in _occurrences(paste.bare, head, 0, near=near):  # (typo: the edits it needed)
            if first > 0 and _in_class_prefix(paste.text, paste.at(at)):
                continue  # a value first: its text is not the `:` of the class that prints it
            if not _starts_word(paste, at, head, spaced=first > 0 and text[:1].isspace(), free=first > 0):
                continue
            hit = self._forward(index, number, program, paste, literals, (at, end), typo, near=near)
            if hit is not None:
                return hit
        if near:
            return None
        if len(literals) == 1 and head.endswith(".") and len(head) > 1:  # a final period dropped
            short = head[:-1]
            for at, end, _ in _occurrences(paste.bare, short, 0, near=False):
                if _starts_word(paste, at, short, free=first > 0) and _ends_message(paste, end):
                    return self._made(index, number, program, paste, [(at, end)], period=True)
        return self._cut_first(index, number, program, paste, head, first)

    def _forward(
        self,
        index: int,
        number: int,
        program: Program,
        paste: Paste,
        literals: list[int],
        head: tuple[int, int],
        typo: int,
        *,
        near: bool,
    ) -> Hit | None:
        items = program.items
        at = head[0]
        if not _clear(paste, at, str(items[literals[0]])) or (
            len(literals) > 1 and not _fits(paste, head, program, literals[0], ends=False)
        ):
            return None
        spans = [head]
        position = head[1]
        last = literals[-1]
        for k in literals[1:]:
            row = str(items[k])
            ends = k == last and k == len(items) - 1  # the message ends in this row's text
            places = _occurrences(paste.bare, row, position, near=near)
            found = next((o for o in places if _fits(paste, o[:2], program, k, ends=ends)), None)
            if found is not None:
                spans.append(found[:2])
                typo += found[2]
                position = found[1]
                continue
            if ends and row.endswith(".") and len(row) > 1 and not near:  # a final period dropped
                short = row[:-1]
                for start, end, _ in _occurrences(paste.bare, short, position, near=False):
                    if _ends_message(paste, end):
                        return self._made(index, number, program, paste, [*spans, (start, end)], period=True)
            return self._cut(index, number, program, paste, spans, position, k, typo)
        if last == len(items) - 1 and not _ends_word(paste, spans[-1][1], str(items[last])):
            return None
        return self._made(index, number, program, paste, spans, typo=typo)

    def _cut(
        self,
        index: int,
        number: int,
        program: Program,
        paste: Paste,
        spans: list[tuple[int, int]],
        position: int,
        k: int,
        typo: int,
    ) -> Hit | None:
        """The paste stops (at its end or at `...`) inside the value before row `k` or inside that row; or it
        stops after a sentence of that row (a quote of the message's first sentences)."""
        row = str(program.items[k])
        bare = paste.bare
        cut = next((c for c in paste.cuts if c >= position), None)
        if cut is not None and not _breaks(paste.text, paste.at(position), paste.at(cut)):
            shown = 0
            for length in range(min(len(row) - 1, cut - position), 0, -1):
                if bare.startswith(row[:length], cut - length):
                    shown = length
                    break
            # (the row starting in the value, then departing from it, is another text)
            if bare.find(row[:DIVERGE], position, cut - shown) >= 0:
                pass
            elif shown:
                return self._made(index, number, program, paste, [*spans, (cut - shown, cut)], cut=cut, typo=typo)
            else:
                return self._made(index, number, program, paste, spans, cut=cut, open_end=True, typo=typo)
        sentence = _sentence(paste, program, k, position, sum(b - a for a, b in spans))
        if sentence is not None:
            return self._made(index, number, program, paste, [*spans, sentence], cut=sentence[1], typo=typo)
        return None

    def _cut_first(self, index: int, number: int, program: Program, paste: Paste, head: str, first: int) -> Hit | None:
        """The paste stops inside the template's first literal row, after MIN_CUT characters of it at least
        (at its end, at `...`, or after a sentence of the row)."""
        bare = paste.bare
        key = head[:MIN_CUT]
        if len(head) <= MIN_CUT:
            return None
        for cut in paste.cuts:
            at = bare.rfind(key, 0, cut)
            while at >= 0 and cut - at < len(head):
                if bare.startswith(head[: cut - at], at) and _starts_word(paste, at, head, free=first > 0):
                    return self._made(index, number, program, paste, [(at, cut)], cut=cut)
                at = bare.rfind(key, 0, at)
        sentence = _sentence(paste, program, first, 0)
        if sentence is not None and sentence[1] - sentence[0] >= MIN_CUT:
            return self._made(index, number, program, paste, [sentence], cut=sentence[1])
        return None

    def _whole_message(self, index: int, number: int, paste: Paste) -> Hit | None:
        """A template with no literal text (`raise ValueError(msg)`): the message after its class, weakly."""
        for found in _CLASS_AT.finditer(paste.text):
            if found[1].rpartition(".")[2] == self.classes[index]:
                start = found.end()
                end = _line_end(paste.text, start)
                value = paste.text[start:end].strip()
                groups = self.programs[index][number].items[0] if number >= 0 else ()
                assert isinstance(groups, tuple)
                return Hit(
                    index, number, [], start, end, [(groups, value)], [], 0, 0.0, shown_class=self.classes[index]
                )
        return None

    def difference(self, hit: Hit, paste: Paste) -> str:
        """What sets the literal text a hit shows apart from the template's, besides what `plain` undid and
        whitespace: backticks, quote marks, or letter case."""
        program = self.programs[hit.template][hit.program]
        rows = [k for k, item in enumerate(program.items) if isinstance(item, str)]
        shown = [_WHITESPACE.sub("", paste.text[paste.at(a) : paste.at(b - 1) + 1]) for a, b in hit.spans if b > a]
        written = [_WHITESPACE.sub("", program.texts[k]).strip("`") for k in rows[: len(shown)]]
        if sum(t.count("`") for t in shown) != sum(t.count("`") for t in written):
            return "backticks"
        if [t.lower() for t in shown] == [t.lower() for t in written]:
            return "case"
        return "quotes"

    def _made(
        self,
        index: int,
        number: int,
        program: Program,
        paste: Paste,
        spans: list[tuple[int, int]],
        *,
        cut: int | None = None,
        period: bool = False,
        typo: int = 0,
        open_end: bool = False,
    ) -> Hit | None:
        """The hit the literal spans make: the message's bounds, its values, its class, what it shows."""
        items, text = program.items, paste.text
        literal_rows = [k for k, item in enumerate(items) if isinstance(item, str)]
        first_at = paste.at(spans[0][0])
        last_end = paste.at(spans[-1][1] - 1) + 1 if spans[-1][1] > spans[-1][0] else paste.at(spans[-1][0])
        start = first_at
        if literal_rows[0] > 0:  # a value first: it starts after what ends the text before it on its line
            start = _lead_start(text, first_at)
        shown = _class_before(text, start)
        if shown is not None and not may_print(self.classes[index], shown):
            return None
        end = last_end
        quoted = start > 0 and text[start - 1] in "'\""  # the message stands in a string literal: its escapes
        holes: list[tuple[int, int]] = []
        values: list[tuple[tuple[int, ...], str]] = []
        rows_shown = len(spans)
        for k, item in enumerate(items):
            if isinstance(item, str):
                continue
            row_before = sum(1 for r in literal_rows if r < k)  # literal rows before this hole
            if row_before == 0:
                a, b = start, first_at
            elif row_before < rows_shown:
                a = paste.at(spans[row_before - 1][1] - 1) + 1
                b = paste.at(spans[row_before][0])
            elif row_before > rows_shown or (cut is not None and spans[-1][1] >= cut):
                break  # past where the paste was cut
            elif cut is not None:
                a, b = last_end, paste.at(cut)
            elif k == len(items) - 1:  # the message's last value: to where the message ends
                a = last_end
                b = end = max(end, _tail_end(text, a, start))
            else:
                break
            holes.append((_skeleton_index(paste, a), _skeleton_index(paste, b)))
            value = text[a:b].strip()
            values.append((item, unescape(value) if quoted else value))
        if cut is not None:
            end = max(end, paste.at(cut))
        literal = sum(b - a for a, b in spans) - 2 * typo  # (an edit costs the characters on both sides)
        info = 0.0
        for number_shown, (row, (a, b)) in enumerate(zip(literal_rows, spans, strict=False)):
            whole = cut is None or number_shown < len(spans) - 1 or open_end  # (a row with a typo is whole)
            for word_end, weight in program.words[row]:
                if whole or word_end <= b - a:
                    info += weight
        verbatim = all(  # the literal text as the template writes it (give or take a quote either way)
            _same(text[paste.at(a) : paste.at(b - 1) + 1], program.texts[row])
            for row, (a, b) in zip(literal_rows, spans, strict=False)
            if b > a
        )
        exact = not paste.steps and not period and not typo and verbatim
        spaced = (
            verbatim
            and all(  # and spaced as written (where two templates differ only in that)
                _spaced(text[paste.at(a) : paste.at(b - 1) + 1]) == _spaced(program.texts[row].strip(" \t\n`"))
                for row, (a, b) in zip(literal_rows, spans, strict=False)
                if b > a
            )
        )
        return Hit(
            index, number, list(spans), start, end, values, holes, literal, info,
            cut=cut is not None, period=period, exact=exact, shown_class=shown, typo=typo > 0, open_end=open_end,
            agrees=shown == self.classes[index], verbatim=verbatim, spaced=spaced,
        )  # fmt: skip


_CLASS_AT = re.compile(CLASS_AT, re.M)


def _skeleton_index(paste: Paste, position: int) -> int:
    return bisect_left(paste.where, position)


def _clear(paste: Paste, at: int, row: str) -> bool:
    """Whether a literal row found at `at` keeps clear of a cut's `...` (unless it writes one itself)."""
    if len(paste.cuts) == 1 or "..." in row:
        return True
    end = at + len(row)
    return not any(cut < end and at < cut + 3 for cut in paste.cuts[:-1])


def _same(shown: str, written: str) -> bool:
    """Whether a literal row stands in the paste as the template writes it: the same characters, letter case
    kept, whatever whitespace came between them (a run of spaces, a wrap at any column) and a quote either way."""
    return _WHITESPACE.sub("", shown).replace('"', "'") == _WHITESPACE.sub("", written).strip("`").replace('"', "'")


def _spaced(text: str) -> str:
    """Text with each run of whitespace made one space, quotes either way made one."""
    return _WHITESPACE.sub(" ", text).replace('"', "'")


def _breaks(text: str, start: int, end: int) -> bool:
    """Whether a value from `start` to `end` would cross what ends a message: a blank line, a traceback's
    next part."""
    return text.find("\n\n", start, end) >= 0 or any(text.find(stop, start, end) >= 0 for stop in TAIL_STOPS)


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _starts_word(paste: Paste, at: int, row: str, *, spaced: bool = False, free: bool = False) -> bool:
    """Whether literal text starting at skeleton position `at` meets the paste at a word's start: where
    the message starts with it (not `free`, after a value) and its first character is a word's, or where
    the template has a space before it (`spaced`)."""
    if not spaced and (free or not _is_word(row[0])):
        return True
    before = paste.at(at) - 1
    return before < 0 or not _is_word(paste.text[before])


def _ends_word(paste: Paste, end: int, row: str, *, spaced: bool = False, free: bool = False) -> bool:
    """Whether literal text ending before skeleton position `end` meets the paste at a word's end: where
    the message ends with it (not `free`, a value after it) and its last character is a word's, or where
    the template has a space after it (`spaced`)."""
    if not row or (not spaced and (free or not _is_word(row[-1]))):
        return True
    after = paste.at(end - 1) + 1
    return after >= len(paste.text) or not _is_word(paste.text[after])


def _occurrences(bare: str, row: str, start: int, *, near: bool) -> Iterator[tuple[int, int, int]]:
    """Where `row` stands in the skeleton from `start`: its first MAX_STARTS places as written; then, when
    `near`, places where it stands with a typo or two (a character left out, added or changed, two swapped), found from
    either half of it standing as written."""
    found, tries = bare.find(row, start), 0
    while found >= 0 and tries < MAX_STARTS:
        yield found, found + len(row), 0
        found, tries = bare.find(row, found + 1), tries + 1
    if not near or len(row) < TYPO_MIN:
        return
    budget = 1 if len(row) < TYPO_LONG else 2
    half = len(row) // 2
    starts: list[int] = []
    left, right = row[:half], row[half:]
    found, tries = bare.find(left, start), 0
    while found >= 0 and tries < TYPO_TRIES:
        starts.append(found)
        found, tries = bare.find(left, found + 1), tries + 1
    found, tries = bare.find(right, start), 0
    while found >= 0 and tries < TYPO_TRIES:
        starts += [found - half + shift for shift in range(-budget, budget + 1) if found - half + shift >= start]
        found, tries = bare.find(right, found + 1), tries + 1
    best: dict[int, tuple[int, int]] = {}
    for begin in sorted(set(starts)):
        for shift in sorted(range(-budget, budget + 1), key=abs):
            end = begin + len(row) + shift
            if end > len(bare) or end <= begin:
                continue
            if bare[begin : begin + 2] != row[:2] or bare[end - 2 : end] != row[-2:]:
                continue  # a typo falls inside the row: its edges stand as written
            if _DIGITS.findall(bare, begin, end) != _DIGITS.findall(row):
                continue  # and its numbers (`MXFP4` is no typo of `MXFP8`)
            distance = levenshtein(bare[begin:end], row, budget)
            if 0 < distance <= budget and (begin not in best or distance < best[begin][1]):
                best[begin] = (end, distance)
    for begin in sorted(best):
        yield begin, best[begin][0], best[begin][1]


def levenshtein(a: str, b: str, limit: int) -> int:
    """The edit distance of two texts (characters left out, added, changed, or two swapped: the optimal string
    alignment distance), or limit + 1 when above it."""
    from rapidfuzz.distance import OSA

    return OSA.distance(a, b, score_cutoff=limit)


def _sentence(paste: Paste, program: Program, k: int, position: int, shown: int = 0) -> tuple[int, int] | None:
    """Where the paste shows the first sentences of literal row `k` (up to a period in it, or up to that
    period left out) from `position`, and then ends (see `_ends_quote`): the longest such start. With the
    `shown` literal characters before it, MIN_SENTENCE characters at least."""
    row = str(program.items[k])
    end = row.rfind(".", 0, len(row) - 1)
    while end >= 0 and shown + end + 1 >= MIN_SENTENCE:
        for start in (row[: end + 1], row[:end]):
            if shown + len(start) < MIN_SENTENCE or not start:
                continue
            spaced = program.texts[k][:1].isspace()
            for at, stop, _ in _occurrences(paste.bare, start, position, near=False):
                if paste.bare.find(row[:DIVERGE], position, at) >= 0:
                    break  # the row starts in the value before, then departs from it: another text
                if _starts_word(paste, at, row, spaced=spaced, free=k > 0) and _ends_quote(paste, stop, start):
                    return at, stop
        end = row.rfind(".", 0, end)
    return None


def _ends_message(paste: Paste, stop: int) -> bool:
    """Whether a message whose final period was left out ends at skeleton position `stop`: what follows on
    its line is nothing or punctuation, not a word going on with the sentence."""
    after = paste.text[paste.at(stop - 1) + 1 :].lstrip(" \t")
    return not after or not _is_word(after[0])


def _ends_quote(paste: Paste, stop: int, start: str) -> bool:
    """Whether the text a paste shows ends at skeleton position `stop` (after `start`, what it shows of a
    row): what follows is nothing, a closing quote, bracket or emphasis, or a blank line (not a sentence that
    goes on as the template does not); where the period was left out, only a closing mark."""
    if _is_word(start[-1]) and not _ends_word(paste, stop, start):
        return False
    after = paste.text[paste.at(stop - 1) + 1 :].lstrip(" \t")
    if not start.endswith("."):
        return after[:1] in ("'", '"', "`", ")", "*")
    return not after.strip() or after[0] in "'\"`)]*" or after.startswith("\n\n")


def _fits(paste: Paste, span: tuple[int, int], program: Program, k: int, *, ends: bool) -> bool:
    """Whether literal row `k`, found at skeleton span `span` after a value, meets the paste at word
    boundaries where the template has a space around it, and where the message ends with it (`ends`)."""
    row, text = str(program.items[k]), program.texts[k]
    at, end = span
    if not _clear(paste, at, row):
        return False
    if not _starts_word(paste, at, row, spaced=text[:1].isspace(), free=k > 0):
        return False
    return _ends_word(paste, end, row) if ends else _ends_word(paste, end, row, spaced=text[-1:].isspace(), free=True)


def _in_class_prefix(text: str, position: int) -> bool:
    line = text.rfind("\n", 0, position) + 1
    return any(found.start() < position < found.end() for found in _CLASS_AT.finditer(text, line, position + 2))


def _lead_start(text: str, first: int) -> int:
    """Where a message that starts with a value starts: after what ends the text before it on its line."""
    line = text.rfind("\n", 0, first) + 1
    best = line
    for stop in LEAD_STOPS:
        at = text.rfind(stop, line, first)
        if at >= 0:
            best = max(best, at + len(stop))
    found = _class_end_before(text, line, first)
    return max(best, found)


def _class_end_before(text: str, line: int, first: int) -> int:
    end = line
    for found in _CLASS_AT.finditer(text, line, first):
        end = found.end()
    return end


def may_print(record_class: str, shown: str) -> bool:
    """Whether a record raising `record_class` may print as `shown`: the same class, or a subclass of it
    (a class the builtins do not name may derive from any)."""
    if record_class == shown:
        return True
    bases = BUILTIN_BASES.get(record_class)
    return bases is None or shown in bases


def _class_before(text: str, start: int) -> str | None:
    """The class a printed error shows right before its message (`ValueError: `), if any."""
    found = _CLASS_BEFORE.search(text[max(0, start - 200) : start])
    return found[1].rpartition(".")[2] if found else None


def _tail_end(text: str, position: int, start: int) -> int:
    """Where a message's last value ends: its line's end (a quote's closing mark when the message was
    quoted), or a stop such as pydantic's `[type=...]`."""
    end = _line_end(text, position)
    for stop in TAIL_STOPS:
        at = text.find(stop, position, end + len(stop))
        if at >= 0:
            end = min(end, at)
    before = text[start - 1] if start > 0 else ""
    closer = OPENERS.get(before)
    if closer is not None:
        at = text.rfind(closer, position, end)
        if at >= 0:
            end = at
    return end


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def _better(hit: Hit, other: Hit) -> bool:
    """Of two places (or ways of printing) of one template, the one that shows more of its literal text, else
    the one the paste shows whole."""
    return (hit.literal, not hit.cut, hit.info, -hit.start) > (other.literal, not other.cut, other.info, -other.start)


def _demote(hits: list[Hit]) -> None:
    """A hit whose holes took text another hit shows as literal text, with more literal text in all, is
    weak for this paste (`{feature} is not supported` against `Chunked prefill is not supported`); one
    standing wholly inside another's hole is a message quoted inside another, and both stand."""
    for hit in hits:
        for other in hits:
            if other is hit or not other.spans:
                continue
            if (
                _tier(other) < _tier(hit)
                and other.literal >= hit.literal
                and hit.start < other.end
                and other.start < hit.end
            ):
                hit.demoted = True  # the paste read whole by one template: no cut of another's, no period added
                break
            if other.literal <= hit.literal:
                continue
            if _inside(other, hit):
                continue
            if (
                not _inside(hit, other)
                and other.literal > hit.literal
                and other.spans
                and hit.spans
                and other.spans[0][0] <= hit.spans[0][0]
                and hit.spans[-1][1] <= other.spans[-1][1]
            ):
                hit.demoted = True  # a shorter message read inside a longer one's own text
                break
            if any(a < d and c < b for a, b in hit.holes for c, d in other.spans):
                hit.demoted = True
                break


def _inside(hit: Hit, other: Hit) -> bool:
    """Whether a hit stands wholly inside one of another's values."""
    return bool(hit.spans) and any(a <= hit.spans[0][0] and hit.spans[-1][1] <= b for a, b in other.holes)


def _tier(hit: Hit) -> int:
    """How far a hit had to stretch to explain the paste: not at all, a final period, a typo, a cut."""
    return 3 if hit.cut else 2 if hit.typo else 1 if hit.period else 0


def ranked(hits: list[Hit]) -> list[Hit]:
    """Confident hits first: whole ones before those that needed a final period or a cut, then in the order
    they stand (a message quoted in another's value just before it); then weak ones, most literal text first."""
    shown = [h for h in hits if h.confident]

    def place(hit: Hit) -> tuple[int, int]:
        outer = next((o for o in shown if o is not hit and _inside(hit, o)), None)
        return (outer.start, 0) if outer is not None else (hit.start, 1)

    confident = sorted(
        shown,
        key=lambda h: (
            _tier(h),
            *place(h),
            h.start,
            not h.agrees,
            not h.verbatim,
            not h.spaced,
            -h.literal,
            -h.info,
            h.template,
        ),
    )
    # (A cut that shows little of a template's text is no answer at all: a few common words at a text's end.)
    unsure = (h for h in hits if not h.confident and not (h.cut and h.literal < MIN_LIT))
    weak = sorted(unsure, key=lambda h: (-h.literal, -h.info, h.start, h.template))
    return confident + weak[:MAX_WEAK]

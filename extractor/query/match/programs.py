# Programs: a template's pattern read as the ways it prints, each a row of literal text (in skeleton form) and
# holes, its words weighed by how rare they are among all the templates given, and the keys that select it.
from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extractor.query.match.paste import skeleton

if TYPE_CHECKING:
    from extractor.query.match.pattern import MatchTemplate

__all__ = ["Program", "Rows", "class_weights", "compile_programs", "keys_of", "programs_of", "weights", "words_of"]

KEY = 16  # a literal's first characters (MIN_CUT: a cut paste shows them): a key that selects the template
MIN_KEY = 4  # shorter literals select nothing
MAX_PROGRAMS = 16  # ways one template may print (optional parts spelled out), beyond which they are holes
COMMON_WEIGHT = 1.0  # what a common English word weighs at most
CLASS_WEIGHT = 4.0  # what the class shown before a message weighs at most
TYPO_MIN = 16  # skeleton characters a literal row needs for a typo in it to be forgiven
# Words so common in any text that showing them says little which template printed it.
COMMON = sorted(
    """a about after all an and any are as at be been but by can cannot could did do does for from got has have if
    in into is it its may more must no not of on one only or other please should so such than that the then there
    these this to try use used using was were when which will with you your value values error errors invalid type
    set supported support found given expected none true false""".split()  # noqa: SIM905 (a list of words, read as such)
)
WORD = re.compile(r"[A-Za-z0-9_]+")


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

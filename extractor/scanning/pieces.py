# Pieces: reuse the sites of the defs and classes a new version of a file shares with an older one.
"""A piece is a statement at the top level or directly in a top-level class that is either a def or a
class, or holds no `raise` at all. Its sites depend only on its own text and on the classes around it:
conditions stop at the function boundary, variables resolve within the function, and its qualified
name is the classes' names plus its own.

To rescan a new version of a file, every piece of the old version found again (same first and last lines,
same hash of its lines) is replaced by a `pass` at its indentation and blank lines, and the rest is parsed
once. That parse equals the whole file's: the text before each replaced piece is the same in both, and
a complete statement and a `pass` at the same indentation leave the tokenizer in the same state. It is
checked, not assumed: each `pass` must come back as a statement at its line and column (a `pass` inside
a string, say, sends the file to a full parse). A parse that stops at a `pass` (a def found again under a
decorator it did not have) is tried again with that piece parsed too. If a `pass` stands in other classes
than before (a class renamed, a method moved to another class), its sites are reused with their qualified
names changed, the one thing the classes around a piece decide. Replacing statements
changes which names they bind, which only a raise outside any function could notice (its message may
name a variable bound anywhere in the module or class): such a raise also sends the file to a full parse.

The raises in what is parsed again take their message templates from the old sites made of the same
text (`templateKey`), rather than from libcst: most of a changed function's messages are not.

A file parsed for the first time, or whose pieces are not found again, is skimmed: the same stand-ins,
for its defs that raise nothing, found from its text (see `skim`, below). A rescan stands in for those
too, among the rest.

A rescan lists the pieces a full parse of the new version would (tests/test_pieces.py): the defs of a
class found again whole stay pieces, and a class whose last def was found again ends where that def does.
"""

from __future__ import annotations

import ast
import hashlib
import re
from bisect import bisect_right
from collections.abc import Container, Iterator, Mapping, Sequence
from itertools import compress, count
from operator import attrgetter, itemgetter

from extractor.model.kinds import Piece
from extractor.model.scanned import (
    ConditionData,
    Result,
    ResultData,
    ScannedSite,
    ScannedSkippedSite,
    SiteData,
    SkippedSiteData,
)
from extractor.scanning.facts import file_facts, may_define_flags, reads_facts_from
from extractor.scanning.source import ScanOptions, window
from extractor.scanning.walk import extent, visit

__all__ = ["pieces_of", "rescan", "skim"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FIRST = 80  # how much of a piece's first line is kept to find it again
_SHORTEST = 4  # lines; shorter statements cost less to parse again than to remember
_RETRIES = 2  # parses of a rescan that each leave out the piece the parser stopped at, before a full parse


def _hash(lines: Sequence[str], start: int, end: int) -> str:
    return hashlib.sha256("\n".join(lines[start - 1 : end]).encode()).hexdigest()[:24]


def _statements(body: Sequence[ast.stmt], scope: tuple[str, ...] = ()) -> Iterator[tuple[ast.stmt, tuple[str, ...]]]:
    for statement in body:
        yield statement, scope
        if isinstance(statement, ast.ClassDef) and not scope:
            yield from _statements(statement.body, (statement.name,))


def pieces_of(
    lines: Sequence[str],
    body: Sequence[ast.stmt],
    placed: Mapping[int, int] | None = None,
    *,
    listed: Container[int] = (),
) -> list[Piece]:
    """List the pieces of a parsed file. `placed` maps the line of each `pass` that stands for a piece
    to the piece's last line: a class ending on it (its last def stood in for) ends where the piece does,
    and the piece is listed (read from `lines`, the file's own) if its line is `listed` (a def skimmed),
    else not (a piece a rescan reused, which it lists itself)."""
    pieces: list[Piece] = []
    _collect(lines, body, (), placed or {}, pieces, listed)
    return pieces


def _collect(
    lines: Sequence[str],
    body: Sequence[ast.stmt],
    scope: tuple[str, ...],
    placed: Mapping[int, int],
    out: list[Piece],
    listed: Container[int],
) -> None:
    extents = [(start, placed.get(end, end)) for start, end in map(extent, body)]
    for index, statement in enumerate(body):
        start, end = extents[index]
        if isinstance(statement, ast.ClassDef) and not scope:
            _collect(lines, statement.body, (statement.name,), placed, out, listed)
        # A piece owns its lines: no other statement may start or end on them (`a = 1; b = 2`).
        shared = (index and extents[index - 1][1] >= start) or (index + 1 < len(body) and extents[index + 1][0] <= end)
        if (
            (start in placed and start not in listed)
            or shared
            or end - start + 1 < _SHORTEST
            or lines[end - 1].rstrip().endswith("\\")
        ):
            continue
        if not isinstance(statement, _DEFS) and any("raise" in line for line in lines[start - 1 : end]):
            continue
        first, last = lines[start - 1][:_FIRST], lines[end - 1][:_FIRST]
        out.append(Piece(_hash(lines, start, end), start, end, first, last, scope))


def _shift(site: SiteData, delta: int, lines: Sequence[str], context: int, function: str | None = None) -> SiteData:
    """A reused site (as data) where its piece now stands: `delta` lines further, with its new window,
    and in `function` if its piece now stands in other classes (see `_moved`)."""
    line = site["lineNumber"] + delta
    start, end, code = window(lines, line, context, site["extraction"]["column"])
    shifted: SiteData = {**site, "lineNumber": line, "sourceCode": code, "sourceCodeStart": start, "sourceCodeEnd": end}
    if delta or function is not None:
        extraction = site["extraction"]
        conditions = [
            ConditionData(kind=c["kind"], test=c["test"], negated=c["negated"], line=c["line"] + delta)
            for c in extraction["conditions"]
        ]
        shifted["extraction"] = {
            **extraction,
            "endLineNumber": extraction["endLineNumber"] + delta,
            "conditions": conditions,
            "function": extraction["function"] if function is None else function,
        }
    return shifted


def _moved(function: str, old: tuple[str, ...], new: tuple[str, ...]) -> str | None:
    """The qualified name of a function of a piece that stood in classes `old` and now stands in `new`
    (a class renamed, a def moved into or out of a class); None if the name is not under `old`."""
    prefix = ".".join(old)
    if prefix and not function.startswith(prefix + "."):
        return None
    rest = function[len(prefix) + 1 :] if prefix else function
    return ".".join([*new, rest])


def _ends_at(lines: Sequence[str], end: int, start: int) -> bool:
    """Tell whether a statement starting at line `start` can end at line `end`: the next line with code
    on it is not indented deeper (were it, the old piece's text would be only the head of a longer
    statement here). A cheap check that spares a parse doomed to fail; the parse still has the last word.
    """
    indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    for index in range(end, len(lines)):
        line = lines[index]
        code = line.lstrip()
        if code and not code.startswith("#"):
            return len(line) - len(code) <= indent
    return True


def rescan(
    lines: list[str],
    previous: ResultData,
    options: ScanOptions,
    templates: Mapping[str, SiteData] | None = None,
) -> Result | None:
    """Scan a new version of a file reusing the pieces it shares with `previous`; None means parse it all.

    `previous` is data, as the cache holds it (a FileResult's JSON): reused sites are copied as data
    with their new lines, never validated or built again. `templates` are the old sites by their
    `templateKey`, for the raises parsed again.
    """
    known: dict[str, list[Piece]] = {}
    ordered = sorted(
        (
            Piece(hash_, start, end, first, last, tuple(scope))
            for hash_, start, end, first, last, scope in previous["pieces"]
        ),
        key=attrgetter("start"),
    )
    for piece in ordered:
        known.setdefault(piece.first, []).append(piece)
    total = len(lines)
    matches: list[tuple[int, int, Piece]] = []
    reached = 0  # the last line of the last piece found: what follows may start another
    # The lines that begin like a known piece (by C iterators alone: this looks at every line of the file).
    for position in compress(count(1), map(known.__contains__, map(itemgetter(slice(_FIRST)), lines))):
        if position <= reached:
            continue
        for piece in known[lines[position - 1][:_FIRST]]:
            end = position + piece.end - piece.start
            if (
                end <= total
                and lines[end - 1][:_FIRST] == piece.last
                and _hash(lines, position, end) == piece.hash
                and _ends_at(lines, end, position)
            ):
                matches.append((position, end, piece))
                reached = end
                break
    if not matches:
        return None

    # The defs that raise nothing and were not found again are stood in for too (see `skim`): found in the
    # text with the pieces found again stood in for already (what they held is not read again).
    found = _stood_in(lines, matches)
    skimmed = _raise_free_defs(found)
    for _ in range(_RETRIES + 2):
        visited = visit(_source(_stood_in(found, skimmed)), lines, options, templates)
        if not isinstance(visited, str):
            break
        if skimmed:  # a failed parse is first tried again with nothing skimmed
            skimmed = []
            continue
        # The parser stopped at a placeholder (a def found again under a decorator it did not have, say):
        # that piece is parsed again with the rest.
        kept = [match for match in matches if match[0] != visited.line]
        if not kept or len(kept) == len(matches):
            return None
        matches = kept
        found = _stood_in(lines, matches)
    else:
        return None
    earlier: list[SiteData] = previous["sites"]
    body, visitor = visited
    if visitor.outside_function or visitor.globals_read:
        return None
    standing = _standing(body)
    if not _stand(skimmed, standing):
        return None
    sites: list[ScannedSite | SiteData] = list(visitor.sites)
    skipped: list[ScannedSkippedSite | SkippedSiteData] = list(visitor.skipped)
    pieces: list[Piece] = []
    for start, end, piece in matches:
        first = lines[start - 1]
        scope = standing.get((start, len(first) - len(first.lstrip())))
        if scope is None:
            return None
        delta = start - piece.start
        inside = [site for site in earlier if piece.start <= site["lineNumber"] <= piece.end]
        if scope == piece.scope:
            sites += [_shift(site, delta, lines, options.context) for site in inside]
        else:  # the same text in other classes: only the qualified names change
            names = [_moved(site["extraction"]["function"], piece.scope, scope) for site in inside]
            if None in names:
                return None
            sites += [
                _shift(site, delta, lines, options.context, name) for site, name in zip(inside, names, strict=True)
            ]
        skipped += [
            SkippedSiteData(path=skip["path"], line=skip["line"] + delta, reason=skip["reason"])
            for skip in previous["skippedSites"]
            if piece.start <= skip["line"] <= piece.end
        ]
        pieces.append(_placed(piece, start, end, scope))
        # The defs of a class found again whole (and still at the top level) stay pieces, for a later
        # version that changes only some.
        index = bisect_right(ordered, piece.start, key=attrgetter("start"))
        while not scope and index < len(ordered) and ordered[index].start <= piece.end:
            inner = ordered[index]
            if inner.end <= piece.end:
                pieces.append(_placed(inner, inner.start + delta, inner.end + delta, inner.scope))
            index += 1
    placed = {start: end for start, end, _ in [*matches, *skimmed]}
    pieces += pieces_of(lines, body, placed, listed={start for start, _, _ in skimmed})
    sites.sort(key=_site_order)
    skipped.sort(key=lambda skip: skip.line if isinstance(skip, ScannedSkippedSite) else skip["line"])
    pieces.sort(key=lambda piece: piece.start)
    return Result(kind="scanned", sites=sites, skippedSites=skipped, pieces=[piece[:] for piece in pieces])


def _placed(piece: Piece, start: int, end: int, scope: tuple[str, ...]) -> Piece:
    """A piece found again where it now stands (built whole: `_replace` costs three times as much)."""
    return Piece(piece.hash, start, end, piece.first, piece.last, scope)


def _site_order(site: ScannedSite | SiteData) -> tuple[int, int]:
    if isinstance(site, ScannedSite):
        return site.lineNumber, site.extraction.column
    return site["lineNumber"], site["extraction"]["column"]


# Skimming: a file parsed for the first time, its defs that hold no `raise` stood in for by a `pass`.
#
# Most of a module's text is defs that raise nothing (61% of vLLM 0.28.0's, in the files that raise at all),
# and parsing is most of a scan's cost. A def (a statement at the top level, or directly in a top-level
# class) whose lines spell no `raise` adds nothing to a file's sites but a name it binds, which only a
# raise outside any function or a module's constant or class could notice: the same ground a rescan
# stands on (above), and the same checks. What is new is finding those defs without a parser, from
# their text: a line at the def's indentation starts it (its decorators first), and the next line with
# code at that indentation or less ends it (a line that closes a bracket excepted: a def's head spread
# over lines). Text can mislead that reading only from inside a string or brackets, and each way it
# could is caught:
# - the def's lines must lex whole: every string they open closed in them (_LEXES_WHOLE), the last not
#   ending in a backslash, so the line after them is read as code in the file as in the stand-in;
# - a bracket they leave open makes the stand-in's parse fail (its closing bracket closes nothing);
# - a `pass` not found as a statement at its line and column, at the top level or in the class the text
#   says (a def inside a string, say), or any failed parse, sends the file to a full parse.
# A syntax error inside such a def goes unseen: the file's raises are listed all the same (a full parse
# would have skipped the file, naming the error).

# Read where a line starts, after its newline (the text read starts with one): a search for a pattern
# that begins with a character is quick, one that begins at `^` tries every character.
_INDENTED_OTHERWISE = re.compile(r"\n *[\t\f]")  # tabs or form feeds in an indentation: parsed whole
# A line whose code (the group: its indentation) starts at column 0, or 4 or less, and closes no bracket.
_CODE = {0: re.compile(r"\n()(?=[^ \t\n#)\]}])"), 4: re.compile(r"\n(?! {5})( {0,4})(?=[^ \t\n#)\]}])")}
_MEMBER = re.compile(r"\n(?=    (?:@|(?:async[ \t]+)?def[ \t]))")  # a decorator or def at column 4
_SHALLOW = re.compile(r"\n {1,3}\S")  # text at column 1 to 3 (a class body indented otherwise)
_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]")
# Text whose strings all close (`_LEXES_WHOLE`, matched whole): code between the characters that open
# something (a quote, `#`, a backslash), then each such thing and the code after it. Where a quote
# stands, one alternative at most applies, as in the tokenizer (a triple quote opens a triple-quoted
# string, else a quote a one-line string), and a comment runs to its line's end: the text is read one
# way only, and a failure is quick (a comment that could end anywhere made one take hours).
# (Written without possessive quantifiers: Python 3.11's first releases misread some.)
_TRIPLE_DOUBLE = r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
_TRIPLE_SINGLE = r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
_DOUBLE = r'"(?!"")[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SINGLE = r"'(?!'')[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_CODE_RUN = r"""[^"'#\\]*"""
_LEXES_WHOLE = re.compile(
    rf"{_CODE_RUN}(?:(?:\#[^\n]*(?![^\n])|\\.|{_TRIPLE_DOUBLE}|{_TRIPLE_SINGLE}|{_DOUBLE}|{_SINGLE}){_CODE_RUN})*", re.S
)


def skim(
    lines: list[str], options: ScanOptions, templates: Mapping[str, SiteData] | None = None, *, facts: bool = False
) -> Result | None:
    """Scan a file parsing only what can hold a raise (see above); None means parse it whole. The result is
    the one a full parse gives, pieces included (tests/test_skim.py).

    `facts` asks for the file's classes and CLI flags too, as a full parse reads them (facts.file_facts):
    the defs they read are parsed (`__post_init__`), and a file that may define flags is parsed whole
    (they are read from any def). Class bodies are never stood in for, only the defs in them."""
    source = _source(lines) if facts else ""
    if may_define_flags(source):
        return None
    spans = _raise_free_defs(lines)
    if facts:
        spans = [span for span in spans if not reads_facts_from(lines[span[0] - 1 : span[1]])]
    if not spans:
        return None
    visited = visit(_source(_stood_in(lines, spans)), lines, options, templates)
    if isinstance(visited, str):
        return None
    body, visitor = visited
    if visitor.outside_function or visitor.globals_read or not _stand(spans, _standing(body)):
        return None
    placed = {start: end for start, end, _ in spans}
    classes, flags = file_facts(body, visitor.segment, source) if facts else ([], None)
    return Result(
        kind="scanned",
        sites=list(visitor.sites),
        skippedSites=list(visitor.skipped),
        classes=classes,
        flags=flags,
        facts=facts,
        pieces=[piece[:] for piece in pieces_of(lines, body, placed, listed=placed)],
    )


def _stood_in(lines: Sequence[str], spans: Sequence[tuple[int, int, object]]) -> list[str]:
    """`lines`, each span's first line a `pass` at its indentation and the rest blank (the spans' own lines
    must be the file's: a rescan stands in for what it skims in lines with the pieces it found stood in)."""
    synthetic = list(lines)
    for start, end, _ in spans:
        first = lines[start - 1]
        synthetic[start - 1] = first[: len(first) - len(first.lstrip())] + "pass"
        for index in range(start, end):
            synthetic[index] = ""
    return synthetic


def _source(lines: Sequence[str]) -> str:
    return "\n".join(lines) + "\n"


def _standing(body: Sequence[ast.stmt]) -> dict[tuple[int, int], tuple[str, ...]]:
    """The classes around each `pass` at the top level or directly in a top-level class, by its place."""
    return {
        (statement.lineno, statement.col_offset): scope
        for statement, scope in _statements(body)
        if isinstance(statement, ast.Pass)
    }


def _stand(spans: Sequence[tuple[int, int, bool]], standing: Mapping[tuple[int, int], tuple[str, ...]]) -> bool:
    """Whether each skimmed def's `pass` stands as a statement where it was put, in a class if it was one's."""
    for start, _, member in spans:
        scope = standing.get((start, 4 if member else 0))
        if scope is None or bool(scope) != member:
            return False
    return True


def _raise_free_defs(lines: Sequence[str]) -> list[tuple[int, int, bool]]:
    """The defs of a file to stand in for, as read from its text: (first line, last line, whether in a class)."""
    text = "\n" + "\n".join(lines) + "\n"  # every line after a newline and ending in one, as the parser reads it
    if _INDENTED_OTHERWISE.search(text):
        return []
    lines_to = _LineCounter(text)
    tops = [match.end() for match in _CODE[0].finditer(text)]  # where each line with code at column 0 starts
    spans: list[tuple[int, int, bool]] = []
    members = _MEMBER.finditer(text)
    member = next(members, None)
    covered = 0  # the offset where the last def found ends
    for index, top in enumerate(tops):
        if top < covered:
            continue
        following = tops[index + 1] if index + 1 < len(tops) else len(text)
        if text.startswith("class", top) and text[top + 5 : top + 6] in (" ", "(", ":"):
            # Its members at column 4, if its body is indented so (a def deeper may be nested in one).
            shallow = _SHALLOW.search(text, top, following) is not None
            while member is not None and member.end() < following:
                found = (
                    None if shallow or member.end() < top else _span(text, lines, lines_to, member.end(), 4, following)
                )
                if found is None:
                    member = next(members, None)
                    continue
                first, last, covered = found
                spans.append((first, last, True))
                while member is not None and member.end() < covered:
                    member = next(members, None)
        elif text.startswith("@", top) or _DEF.match(text, top):
            found = _span(text, lines, lines_to, top, 0, len(text))
            if found is not None:
                first, last, covered = found
                spans.append((first, last, False))
    return spans


def _span(
    text: str, lines: Sequence[str], lines_to: _LineCounter, at: int, indent: int, limit: int
) -> tuple[int, int, int] | None:
    """The first and last lines of the def whose line (its head: a decorator or `def` at column `indent`)
    starts at offset `at`, and the offset where its lines end, if it holds no raise and lexes whole (see
    above); `limit` is where its scope ends."""
    code = _CODE[indent]
    head = at + indent
    while text.startswith("@", head):  # decorators: the def follows them at their column
        found = code.search(text, text.find("\n", head), limit)
        if found is None or len(found[1]) != indent:
            return None
        head = found.end()
    if not _DEF.match(text, head):
        return None
    found = code.search(text, text.find("\n", head), limit)
    stop = found.start() + 1 if found is not None else limit  # where the def's lines end, and what follows
    first, last = lines_to(at), lines_to(stop) - 1
    end = stop - 1  # the end of line `last`
    while last > first and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        end -= len(lines[last - 1]) + 1
        last -= 1
    if (
        last - first + 1 < _SHORTEST
        or lines[last - 1].rstrip().endswith("\\")
        or text.find("raise", at, end) >= 0
        or _LEXES_WHOLE.fullmatch(text, at, end) is None
    ):
        return None
    return first, last, stop


class _LineCounter:
    """The line numbers of offsets into a text that starts with a newline, asked for in increasing order
    (each newline counted once)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 0

    def __call__(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 0
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line

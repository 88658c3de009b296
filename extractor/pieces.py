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

A rescan lists the pieces a full parse of the new version would (tests/test_pieces.py): the defs of a
class found again whole stay pieces, and a class whose last def was found again ends where that def does.
"""

from __future__ import annotations

import ast
import hashlib
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from itertools import compress, count
from operator import attrgetter, itemgetter

from extractor.kinds import Piece
from extractor.scanned import ConditionData, Result, ResultData, Site, SiteData, SkippedSite, SkippedSiteData
from extractor.source import ScanOptions, window
from extractor.walk import extent, visit

__all__ = ["pieces_of", "rescan"]

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


def pieces_of(lines: Sequence[str], body: Sequence[ast.stmt], placed: Mapping[int, int] | None = None) -> list[Piece]:
    """List the pieces of a parsed file. `placed` maps the line of each `pass` that stands for a reused
    piece to the piece's last line: the piece is not listed again, and a class ending on it (its last
    def reused) ends where the piece does."""
    pieces: list[Piece] = []
    _collect(lines, body, (), placed or {}, pieces)
    return pieces


def _collect(
    lines: Sequence[str],
    body: Sequence[ast.stmt],
    scope: tuple[str, ...],
    placed: Mapping[int, int],
    out: list[Piece],
) -> None:
    extents = [(start, placed.get(end, end)) for start, end in map(extent, body)]
    for index, statement in enumerate(body):
        start, end = extents[index]
        if isinstance(statement, ast.ClassDef) and not scope:
            _collect(lines, statement.body, (statement.name,), placed, out)
        # A piece owns its lines: no other statement may start or end on them (`a = 1; b = 2`).
        shared = (index and extents[index - 1][1] >= start) or (index + 1 < len(body) and extents[index + 1][0] <= end)
        if start in placed or shared or end - start + 1 < _SHORTEST or lines[end - 1].rstrip().endswith("\\"):
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

    for _ in range(_RETRIES + 1):
        synthetic = list(lines)
        for start, end, _ in matches:
            first = lines[start - 1]
            synthetic[start - 1] = first[: len(first) - len(first.lstrip())] + "pass"
            for index in range(start, end):
                synthetic[index] = ""
        visited = visit("\n".join(synthetic) + "\n", lines, options, templates)
        if not isinstance(visited, str):
            break
        # The parser stopped at a placeholder (a def found again under a decorator it did not have, say):
        # that piece is parsed again with the rest.
        kept = [match for match in matches if match[0] != visited.line]
        if not kept or len(kept) == len(matches):
            return None
        matches = kept
    else:
        return None
    earlier: list[SiteData] = previous["sites"]
    body, visitor = visited
    if visitor.outside_function or visitor.globals_read:
        return None
    standing = {
        (statement.lineno, statement.col_offset): scope
        for statement, scope in _statements(body)
        if isinstance(statement, ast.Pass)
    }
    sites: list[Site | SiteData] = list(visitor.sites)
    skipped: list[SkippedSite | SkippedSiteData] = list(visitor.skipped)
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
        pieces.append(piece._replace(start=start, end=end, scope=scope))
        # The defs of a class found again whole (and still at the top level) stay pieces, for a later
        # version that changes only some.
        index = bisect_right(ordered, piece.start, key=attrgetter("start"))
        while not scope and index < len(ordered) and ordered[index].start <= piece.end:
            inner = ordered[index]
            if inner.end <= piece.end:
                pieces.append(inner._replace(start=inner.start + delta, end=inner.end + delta))
            index += 1
    pieces += pieces_of(lines, body, {start: end for start, end, _ in matches})
    sites.sort(key=_site_order)
    skipped.sort(key=lambda skip: skip.line if isinstance(skip, SkippedSite) else skip["line"])
    pieces.sort(key=lambda piece: piece.start)
    return Result(kind="scanned", sites=sites, skippedSites=skipped, pieces=[piece[:] for piece in pieces])


def _site_order(site: Site | SiteData) -> tuple[int, int]:
    if isinstance(site, Site):
        return site.lineNumber, site.extraction.column
    return site["lineNumber"], site["extraction"]["column"]

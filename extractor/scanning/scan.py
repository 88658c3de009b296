# Scan: one blob's bytes -> its result as the cache stores it (the prefilter, decoding, then the walk).
"""The layer the pipeline calls: `scan_many` scans a worker's batch and serializes each result, `scan_blob`
and `scan` do one file. Below it, `walk` finds the sites of a parsed file, `pieces` reuses those of an
earlier version's unchanged defs and classes and leaves out the defs that raise nothing, and `source`
decodes bytes into lines."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import orjson

from extractor.model.scanned import Result, ResultData, ScannedClassFacts, ScannedFlagFacts, SiteData
from extractor.scanning.facts import file_facts
from extractor.scanning.pieces import pieces_of, rescan, skim
from extractor.scanning.source import ScanOptions, could_hold, decode, split_lines
from extractor.scanning.walk import visit

if TYPE_CHECKING:  # pydantic is imported only where a library caller asks for models: a worker scans without it
    from extractor.model.records import FileResult, Site, SkippedSite

__all__ = ["ScanOptions", "Scanned", "Skipped", "could_hold", "scan", "scan_blob", "scan_many"]


@dataclass(frozen=True)
class Scanned:
    """A file that was parsed: its sites in file order, and the raises that cannot be records."""

    sites: tuple[Site, ...]
    skipped: tuple[SkippedSite, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A file that could hold a site but could not be parsed, and why."""

    reason: str


FileScan = Scanned | Skipped


def scan_blob(
    data: bytes, *, options: ScanOptions, previous: FileResult | None = None, facts: bool = False
) -> FileResult:
    """Scan one blob as the pipeline does: the prefilter, then the parser; a pure function of its inputs.

    `previous` is the result for an earlier version of the same file: its unchanged pieces are reused
    instead of parsed again (the result is the same as without it). `facts` asks for the file's classes
    and CLI flags even if it holds no site: it is never rescanned in pieces (skimmed, or parsed whole).
    """
    from extractor.model.records import FileResult

    earlier = orjson.loads(previous.model_dump_json()) if previous is not None else None
    return FileResult.model_validate_json(orjson.dumps(_scan(data, options, earlier, facts)))


def _scan(data: bytes, options: ScanOptions, previous: ResultData | None, facts: bool) -> Result:
    """`scan_blob`, with the previous result as data (as the cache holds it)."""
    if could_hold(data, options):
        return _parse(data, options, previous, facts)
    if not facts:
        return Result(kind="ruled-out")
    # Read for its facts (never rescanned in pieces), and ruled out where they are not wanted.
    return dataclasses.replace(_parse(data, options, None, facts), couldHold=False)


def _parse(data: bytes, options: ScanOptions, previous: ResultData | None, facts: bool) -> Result:
    try:
        text = decode(data)
    except (SyntaxError, LookupError) as error:
        return Result(kind="skipped", reason=f"cannot decode: {error}")
    except UnicodeDecodeError as error:
        return Result(kind="skipped", reason=f"cannot decode: {error.reason} at byte {error.start}")
    lines = split_lines(text)
    # Whatever is parsed again takes the templates of the old sites made of the same text.
    templates: dict[str, SiteData] = {}
    if previous is not None:
        with contextlib.suppress(KeyError, TypeError, AttributeError):  # not a result this code wrote
            templates = {key: site for site in previous["sites"] if (key := site.get("templateKey"))}
    if previous is not None and previous.get("pieces") and not facts:
        try:
            reused = rescan(lines, previous, options, templates)
        except (KeyError, TypeError, ValueError):  # not a result this code wrote: it only costs a full parse
            reused = None
        if reused is not None:
            return reused
    return _scan_text(text, lines, options, facts=facts, templates=templates)


def _scan_text(
    text: str,
    lines: list[str],
    options: ScanOptions,
    *,
    facts: bool = False,
    templates: Mapping[str, SiteData] | None = None,
    whole: bool = False,
) -> Result:
    """Scan a file's text: skimmed (pieces.skim, its facts too if asked), unless asked `whole` or skimming
    cannot tell; else parsed whole."""
    if not whole:
        skimmed = skim(lines, options, templates, facts=facts)
        if skimmed is not None:
            return skimmed
    visited = visit(text, lines, options, templates)
    if isinstance(visited, str):
        return Result(kind="skipped", reason=visited)
    body, visitor = visited
    classes: list[ScannedClassFacts] = []
    flags: ScannedFlagFacts | None = None
    if facts:  # only the config and CLI files are asked for them
        classes, flags = file_facts(body, visitor.segment, text)
    return Result(
        kind="scanned",
        sites=list(visitor.sites),
        skippedSites=list(visitor.skipped),
        classes=classes,
        flags=flags,
        facts=facts,
        pieces=[] if visitor.globals_read else [piece[:] for piece in pieces_of(lines, body)],
    )


def scan_many(batch: list[tuple[str, bytes, bytes | None, bool]], options: ScanOptions) -> list[tuple[str, bytes]]:
    """Scan blobs (a worker process's unit of work) and return each result serialized, by blob id.

    Each item is (blob id, bytes, serialized result of the file's previous version or None, whether
    the file's facts are wanted).
    """
    out = []
    for oid, data, previous, facts in batch:
        earlier = None
        if previous is not None:
            with contextlib.suppress(orjson.JSONDecodeError):  # a corrupt previous entry costs a full parse
                earlier = orjson.loads(previous)
        written = cast("ResultData", earlier) if isinstance(earlier, dict) else None  # as this code writes it
        result = _scan(data, options, written, facts)
        out.append((oid, orjson.dumps(result)))
    return out


def scan(data: bytes, *, options: ScanOptions) -> FileScan:
    """Find every raise site in scope in one file's bytes; a pure function of the bytes and options."""
    from extractor.model.records import FileResult

    try:
        text = decode(data)
    except (SyntaxError, LookupError) as error:
        return Skipped(f"cannot decode: {error}")
    except UnicodeDecodeError as error:
        return Skipped(f"cannot decode: {error.reason} at byte {error.start}")
    result = _scan_text(text, split_lines(text), options)
    if result.kind == "skipped":
        return Skipped(result.reason or "")
    # The published models, validated: a library caller gets what a catalog holds.
    checked = FileResult.model_validate_json(orjson.dumps(result))
    return Scanned(tuple(checked.sites), tuple(checked.skippedSites))

# Records: a file's sites + the run context -> schema-v2 catalog lines (ids, slugs, permalinks).
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypedDict
from urllib.parse import quote

from extractor.model.kinds import ErrorType
from extractor.model.scanned import ExtractionData, SiteData

__all__ = [
    "ERROR_TYPES",
    "RECORD_DEFAULTS",
    "LineData",
    "RunContext",
    "Slugs",
    "build_records",
    "error_type",
    "file_ids",
    "in_order",
    "record_id",
    "type_value",
    "url_prefix",
]


class LineData(TypedDict):
    """A CatalogLine as records.jsonl holds it (its record: every key of Record, in the model's order)."""

    record: dict[str, Any]
    extraction: ExtractionData
    datasetVersion: str


# errorType is decided by the raised class alone; docs/record-format.md shows this table.
ERROR_TYPES: dict[str, ErrorType] = {
    "ValueError": ErrorType.VALIDATION,
    "TypeError": ErrorType.VALIDATION,
    "AssertionError": ErrorType.INTERNAL,
    "NotImplementedError": ErrorType.UNSUPPORTED,
    "KeyError": ErrorType.LOOKUP,
    "IndexError": ErrorType.LOOKUP,
    "LookupError": ErrorType.LOOKUP,
    "AttributeError": ErrorType.LOOKUP,
    "RuntimeError": ErrorType.STATE,
    "FileNotFoundError": ErrorType.IO,
    "FileExistsError": ErrorType.IO,
    "IsADirectoryError": ErrorType.IO,
    "PermissionError": ErrorType.IO,
    "OSError": ErrorType.IO,
    "IOError": ErrorType.IO,
    "ConnectionError": ErrorType.IO,
    "ImportError": ErrorType.DEPENDENCY,
    "ModuleNotFoundError": ErrorType.DEPENDENCY,
    "TimeoutError": ErrorType.TIMEOUT,
    "MemoryError": ErrorType.RESOURCE,
    "OverflowError": ErrorType.RESOURCE,
    "RecursionError": ErrorType.RESOURCE,
}


@dataclass(frozen=True)
class RunContext:
    """What one run knows about where its records come from; resolved once, carried everywhere."""

    repo_name: str
    sha: str  # the SHA records are pinned to (a release may know only a short one)
    revision: str
    committed_at: str | None
    analyzed_at: str


_TYPE_VALUES = {name: kind.value for name, kind in ERROR_TYPES.items()}
_OTHER = ErrorType.OTHER.value


def error_type(error_class: str) -> ErrorType:
    return ERROR_TYPES.get(error_class, ErrorType.OTHER)


def record_id(repo: str, path: str, error_class: str, template: str, occurrence: int) -> str:
    """Hash what identifies a check, never where it sits: no line, function, SHA or time."""
    key = "\0".join([repo, path, error_class, template] + ([str(occurrence)] if occurrence else []))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def type_value(error_class: str) -> str:
    """The errorType a record of this class holds, as written."""
    return _TYPE_VALUES.get(error_class, _OTHER)


def in_order(sites: Sequence[SiteData]) -> list[SiteData]:
    """One file's sites in catalog order: by line, then column."""
    return sorted(sites, key=lambda site: (site["lineNumber"], site["extraction"]["column"]))


def file_ids(repo: str, path: str, sites: Sequence[SiteData]) -> list[str]:
    """The record ids of one file's sites, in catalog order (see in_order): the nth raise of one message
    of one class in a file is its occurrence n."""
    occurrences: Counter[tuple[str, str]] = Counter()
    ids = []
    for site in sites:
        key = (site["errorClass"], site["errorMessage"])
        ids.append(record_id(repo, path, key[0], key[1], occurrences[key]))
        occurrences[key] += 1
    return ids


def url_prefix(repo: str, sha: str, path: str) -> str:
    """A record's githubUrl up to its window's first line number."""
    return f"https://github.com/{repo}/blob/{sha}/{quote(path, safe='/')}#L"


class Slugs:
    """A catalog's slugs, taken in catalog order: a stem taken before gets the first suffix from -2 on that
    no slug took."""

    __slots__ = ("_tried", "_used")

    def __init__(self) -> None:
        self._used: set[str] = set()
        # The suffix each stem's next duplicate tries first: those below it are taken (`used` only grows), so
        # the search resumes there rather than at 2 (thousands of `not-implemented`s made it quadratic).
        self._tried: dict[str, int] = {}

    def take(self, stem: str) -> str:
        used = self._used
        slug = stem
        if slug in used:
            suffix = self._tried.get(stem, 2)
            while (slug := f"{stem}-{suffix}") in used:
                suffix += 1
            self._tried[stem] = suffix + 1
        used.add(slug)
        return slug


# A record as written: every key of records.Record, in its order, the defaults where the extractor has
# nothing to say (the later analysis step fills them); the others are set for each record. Written out
# rather than read from the model, which would import pydantic (tests/test_models.py holds them together).
RECORD_DEFAULTS: dict[str, Any] = {
    "id": None,
    "repo": None,
    "slug": None,
    "errorCode": None,
    "errorMessage": None,
    "messagePattern": None,
    "errorType": None,
    "errorClass": None,
    "httpStatus": None,
    "severity": "error",
    "filePath": None,
    "lineNumber": None,
    "sourceCode": None,
    "sourceCodeStart": None,
    "sourceCodeEnd": None,
    "githubUrl": None,
    "documentation": None,
    "triggerScenarios": None,
    "commonSituations": None,
    "solutions": None,
    "exampleFix": None,
    "handlingStrategy": None,
    "validationCode": None,
    "typeGuard": None,
    "tryCatchPattern": None,
    "preventionTips": None,
    "tags": None,
    "backgroundTag": None,
    "analyzedSha": None,
    "analyzedAt": None,
    "schemaVersion": 2,
}


class Records(NamedTuple):
    lines: list[LineData]
    reads: list[list[str]]  # each line's site's attribute chains, for resolving its fields


def build_records(files: Sequence[tuple[str, Sequence[SiteData]]], *, run: RunContext) -> Records:
    """Turn every file's sites (as serialized by the scanner) into catalog lines, sorted by path, line
    and column: plain data in the models' key order, as records.jsonl holds them.

    Lines are built as data rather than models: a catalog holds thousands, and models would be
    validated, dumped and serialized again for nothing. The tests validate what is written.
    """
    by_path: dict[str, list[SiteData]] = {}
    for path, sites in files:
        by_path.setdefault(path, []).extend(sites)
    slugs = Slugs()
    lines: list[LineData] = []
    reads: list[list[str]] = []
    for path in sorted(by_path):
        ordered = in_order(by_path[path])
        url = url_prefix(run.repo_name, run.sha, path)
        for site, identifier in zip(ordered, file_ids(run.repo_name, path, ordered), strict=True):
            error_class, start, end = site["errorClass"], site["sourceCodeStart"], site["sourceCodeEnd"]
            record = {
                **RECORD_DEFAULTS,
                "id": identifier,
                "repo": run.repo_name,
                "slug": slugs.take(site["slugStem"]),
                "errorMessage": site["errorMessage"],
                "messagePattern": site["messagePattern"],
                "errorType": type_value(error_class),
                "errorClass": error_class,
                "filePath": path,
                "lineNumber": site["lineNumber"],
                "sourceCode": site["sourceCode"],
                "sourceCodeStart": start,
                "sourceCodeEnd": end,
                "githubUrl": f"{url}{start}-L{end}",
                "analyzedSha": run.sha,
                "analyzedAt": run.analyzed_at,
            }
            lines.append(LineData(record=record, extraction=site["extraction"].copy(), datasetVersion=run.analyzed_at))
            reads.append(site["reads"])
    return Records(lines, reads)

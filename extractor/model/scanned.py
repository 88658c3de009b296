# Scanned: the typed values the scan makes and hands on (sites, skipped raises, a file's result).
"""The scan builds thousands of these per package: slotted dataclasses cost a fraction of a pydantic
model, and orjson writes them as JSON objects in field order. Each is made from a model of records.py,
field for field, in the same order (tests/test_models.py checks it is up to date): `ScannedSite` from
`Site`, and so on, `Result` from `FileResult`. The prefix keeps each name to one thing: the model's is the
one published. A result written from these reads back as the model validates it; pydantic stays for what
is published and what is read from disk (`FileResult.model_validate`, the schema). A result's sites may be
data already (those a rescan reused, as the cache held them); only config and CLI files have classes and flags.

What the pipeline reads back from the cache is the same JSON as plain data: the TypedDicts below name
its keys (no cost at run time; mypy checks every use).
"""

# The rest of this file is written from the models of records.py by `python scripts/gen_schema.py`.

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from extractor.model.kinds import ConditionKind, MessageKind

__all__ = [
    "ConditionData",
    "ExtractionData",
    "PlaceholderData",
    "Result",
    "ResultData",
    "ScannedClassFacts",
    "ScannedCondition",
    "ScannedExtraction",
    "ScannedFieldFacts",
    "ScannedFlagFacts",
    "ScannedPlaceholder",
    "ScannedSite",
    "ScannedSkippedSite",
    "SiteData",
    "SkippedSiteData",
]


@dataclass(frozen=True, slots=True)
class ScannedPlaceholder:
    """records.Placeholder, as the scan makes it."""

    expression: str
    conversion: Literal["r", "s", "a"] | None
    formatSpec: str | None
    debug: bool
    start: int
    end: int
    group: str


@dataclass(frozen=True, slots=True)
class ScannedCondition:
    """records.Condition, as the scan makes it."""

    kind: ConditionKind
    test: str
    negated: bool
    line: int


@dataclass(frozen=True, slots=True)
class ScannedExtraction:
    """records.Extraction, as the scan makes it."""

    placeholders: list[ScannedPlaceholder]
    conditions: list[ScannedCondition]
    function: str
    cause: str | None
    messageKind: MessageKind
    messageSource: str | None
    column: int
    endLineNumber: int
    warnings: list[str]
    fields: list[dict[str, Any]] = field(default_factory=list)
    related: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ScannedSite:
    """records.Site, as the scan makes it."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    lineNumber: int
    sourceCode: str
    sourceCodeStart: int
    sourceCodeEnd: int
    extraction: ScannedExtraction
    slugStem: str
    reads: list[str]
    templateKey: str | None = None


@dataclass(frozen=True, slots=True)
class ScannedSkippedSite:
    """records.SkippedSite, as the scan makes it."""

    path: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ScannedFieldFacts:
    """records.FieldFacts, as the scan makes it."""

    name: str
    annotation: str
    default: str | None
    constraints: list[str]
    doc: str | None
    init: bool = True


@dataclass(frozen=True, slots=True)
class ScannedClassFacts:
    """records.ClassFacts, as the scan makes it."""

    name: str
    bases: list[str]
    fields: list[ScannedFieldFacts]
    postInit: list[str]


@dataclass(frozen=True, slots=True)
class ScannedFlagFacts:
    """records.FlagFacts, as the scan makes it."""

    flags: list[tuple[str, str, list[str], bool]]
    overwritten: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Result:
    """records.FileResult, as the scan makes it."""

    kind: Literal["scanned", "skipped", "ruled-out"]
    reason: str | None = None
    sites: list[ScannedSite | SiteData] = field(default_factory=list)
    skippedSites: list[ScannedSkippedSite | SkippedSiteData] = field(default_factory=list)
    classes: list[ScannedClassFacts] = field(default_factory=list)
    flags: ScannedFlagFacts | None = None
    facts: bool = False
    couldHold: bool = True
    pieces: list[tuple[str, int, int, str, str, tuple[str, ...]]] = field(default_factory=list)


# The same values as the cache holds them, read back by orjson.


class PlaceholderData(TypedDict):
    """records.Placeholder, as the cache holds it."""

    expression: str
    conversion: Literal["r", "s", "a"] | None
    formatSpec: str | None
    debug: bool
    start: int
    end: int
    group: str


class ConditionData(TypedDict):
    """records.Condition, as the cache holds it."""

    kind: str
    test: str
    negated: bool
    line: int


class ExtractionData(TypedDict):
    """records.Extraction, as the cache holds it."""

    placeholders: list[PlaceholderData]
    conditions: list[ConditionData]
    function: str
    cause: str | None
    messageKind: str
    messageSource: str | None
    column: int
    endLineNumber: int
    warnings: list[str]
    fields: list[dict[str, Any]]
    related: list[str]


class SiteData(TypedDict):
    """records.Site, as the cache holds it."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    lineNumber: int
    sourceCode: str
    sourceCodeStart: int
    sourceCodeEnd: int
    extraction: ExtractionData
    slugStem: str
    reads: list[str]
    templateKey: str | None


class SkippedSiteData(TypedDict):
    """records.SkippedSite, as the cache holds it."""

    path: str
    line: int
    reason: str


class ResultData(TypedDict):
    """records.FileResult, as the cache holds it."""

    kind: Literal["scanned", "skipped", "ruled-out"]
    reason: str | None
    sites: list[SiteData]
    skippedSites: list[SkippedSiteData]
    classes: list[dict[str, Any]]
    flags: dict[str, Any] | None
    facts: bool
    couldHold: bool
    pieces: list[list[Any]]

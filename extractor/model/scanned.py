# Scanned: the typed values the scan makes and hands on (sites, skipped raises, a file's result).
"""The scan builds thousands of these per package: slotted dataclasses cost a fraction of a pydantic
model, and orjson writes them as JSON objects in field order. Each mirrors a model of records.py
field for field, in the same order (tests/test_models.py checks it): `ScannedSite` mirrors `Site`, and
so on, `Result` mirrors `FileResult`. The prefix keeps each name to one thing: the model's is the one
published. A result written from these reads back as the model validates it; pydantic stays for what
is published and what is read from disk (`FileResult.model_validate`, the schema).

What the pipeline reads back from the cache is the same JSON as plain data: the TypedDicts below name
its keys (no cost at run time; mypy checks every use).
"""

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
    """One `{...}` of a message template (records.Placeholder)."""

    expression: str
    conversion: Literal["r", "s", "a"] | None
    formatSpec: str | None
    debug: bool
    start: int
    end: int
    group: str


@dataclass(frozen=True, slots=True)
class ScannedCondition:
    """One link of the chain of conditions around a raise (records.Condition)."""

    kind: ConditionKind
    test: str
    negated: bool
    line: int


@dataclass(frozen=True, slots=True)
class ScannedExtraction:
    """What is captured beside a record (records.Extraction); `fields` and `related` are filled later."""

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
    """One raise site of one file (records.Site)."""

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
    """A raise in scope that cannot become a record (records.SkippedSite); its path is set later."""

    path: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ScannedFieldFacts:
    """A field declared in a class body (records.FieldFacts)."""

    name: str
    annotation: str
    default: str | None
    constraints: list[str]
    doc: str | None
    init: bool = True


@dataclass(frozen=True, slots=True)
class ScannedClassFacts:
    """A top-level class of a file: its bases, fields and what its __post_init__ assigns (records.ClassFacts)."""

    name: str
    bases: list[str]
    fields: list[ScannedFieldFacts]
    postInit: list[str]


@dataclass(frozen=True, slots=True)
class ScannedFlagFacts:
    """What a CLI definition file says (records.FlagFacts)."""

    flags: list[tuple[str, str, list[str], bool]]
    overwritten: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Result:
    """What scanning one blob gave, as the cache stores it (records.FileResult).

    Sites may be data already (those a rescan reused, as the cache held them); only config and CLI
    files have classes and flags.
    """

    kind: Literal["scanned", "skipped", "ruled-out"]
    reason: str | None = None
    sites: list[ScannedSite | SiteData] = field(default_factory=list)
    skippedSites: list[ScannedSkippedSite | SkippedSiteData] = field(default_factory=list)
    classes: list[ScannedClassFacts] = field(default_factory=list)
    flags: ScannedFlagFacts | None = None
    facts: bool = False
    couldHold: bool = True
    pieces: list[tuple[str, int, int, str, str, tuple[str, ...]]] = field(default_factory=list)  # Piece's fields


# The same values as the cache holds them, read back by orjson.


class PlaceholderData(TypedDict):
    expression: str
    conversion: Literal["r", "s", "a"] | None
    formatSpec: str | None
    debug: bool
    start: int
    end: int
    group: str


class ConditionData(TypedDict):
    kind: str
    test: str
    negated: bool
    line: int


class ExtractionData(TypedDict):
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
    path: str
    line: int
    reason: str


class ResultData(TypedDict):
    """A Result as data: what the cache holds and the pipeline reads back (a FileResult's JSON)."""

    kind: Literal["scanned", "skipped", "ruled-out"]
    reason: str | None
    sites: list[SiteData]
    skippedSites: list[SkippedSiteData]
    classes: list[dict[str, Any]]
    flags: dict[str, Any] | None
    facts: bool
    couldHold: bool
    pieces: list[list[Any]]  # Piece's fields

# Analysis: the downstream analysis' fields by id, shown while their wording holds, and carried forward.
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from extractor.errors import CatalogError
from extractor.model.records import CatalogLine, Hex16
from extractor.util.atomic import read_whole

__all__ = [
    "ANALYSIS",
    "ANALYSIS_FIELDS",
    "NEEDS_ANALYSIS",
    "AnalysisEntry",
    "CarriedAnalysis",
    "NeedReason",
    "NeedsAnalysis",
    "basis",
    "carry_forward",
    "encode_entries",
    "is_current",
    "merged",
    "overlay",
    "read_analysis",
]

ANALYSIS = "analysis.jsonl"
NEEDS_ANALYSIS = "needs-analysis.jsonl"
# The record keys a later analysis step writes (the extractor leaves them null), in the record's order.
ANALYSIS_FIELDS = (
    "documentation",
    "triggerScenarios",
    "commonSituations",
    "solutions",
    "exampleFix",
    "handlingStrategy",
    "validationCode",
    "typeGuard",
    "tryCatchPattern",
    "preventionTips",
    "tags",
    "backgroundTag",
)


class AnalysisEntry(BaseModel):
    """The analysis of one record: its fields, the wording it was written for, and what the record said then."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: Hex16
    errorMessage: str | None = None  # the template it was written for; None: whatever the id's template is
    basis: str | None = None  # `basis()` of the record when it was analysed; None: not known
    documentation: str | None = None
    triggerScenarios: str | None = None
    commonSituations: str | None = None
    solutions: list[str] | None = None
    exampleFix: str | None = None
    handlingStrategy: str | None = None
    validationCode: str | None = None
    typeGuard: str | None = None
    tryCatchPattern: str | None = None
    preventionTips: list[str] | None = None
    tags: list[str] | None = None
    backgroundTag: str | None = None

    def fields(self) -> dict[str, object]:
        """Return the analysis fields it sets (those not null)."""
        return {name: getattr(self, name) for name in ANALYSIS_FIELDS if getattr(self, name) is not None}


class NeedReason(StrEnum):
    """Why a record needs (new) analysis."""

    NEW = "new"
    REWORDED = "reworded"
    MODIFIED = "modified"


class NeedsAnalysis(BaseModel):
    """One line of needs-analysis.jsonl."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Hex16
    reason: NeedReason
    slug: str
    filePath: str
    lineNumber: int
    errorMessage: str


@dataclass(frozen=True)
class CarriedAnalysis:
    """The analysis kept for a new catalog, and the records that need analysis."""

    entries: tuple[AnalysisEntry, ...]
    needs: tuple[NeedsAnalysis, ...]


def basis(line: CatalogLine) -> str:
    """Digest what an analysis of a record rests on: its class, wording, conditions, cause, type and fields.

    These are what `diff` calls a modification; the location (file, line, function) is left out, so a
    moved check keeps its analysis.
    """
    record, extraction = line.record, line.extraction
    document = [
        record.errorClass,
        record.errorMessage,
        record.errorType.value,
        extraction.cause,
        [(c.kind.value, c.test, c.negated) for c in extraction.conditions],
        [(f.class_, f.field, f.flags, f.via, f.key) for f in extraction.fields if f.resolved],
    ]
    return hashlib.sha256(orjson.dumps(document)).hexdigest()[:16]


def read_analysis(path: Path) -> dict[str, AnalysisEntry]:
    """Read a JSONL file of catalog lines, records, or `{id, ...fields}` objects; later lines win."""
    try:
        raw = read_whole(path)
    except OSError as error:
        raise CatalogError(f"cannot read analysis {path}: {error.strerror or error}") from None
    entries: dict[str, AnalysisEntry] = {}
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            document = orjson.loads(text)
            if isinstance(document, dict) and isinstance(document.get("record"), dict):
                document = document["record"]
            entry = AnalysisEntry.model_validate(document)
        except orjson.JSONDecodeError as error:
            raise CatalogError(f"{path}:{number}: not JSON: {error}") from None
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "line"
            raise CatalogError(f"{path}:{number}: not an analysis line: {where}: {first['msg']}") from None
        if entry.fields():
            entries[entry.id] = entry
    return entries


def is_current(entry: AnalysisEntry, line: CatalogLine) -> bool:
    """Tell whether an analysis speaks of this record as it is worded now."""
    return entry.id == line.record.id and entry.errorMessage in (None, line.record.errorMessage)


def overlay(lines: Iterable[CatalogLine], analysis: Mapping[str, AnalysisEntry]) -> tuple[CatalogLine, ...]:
    """Put each record's current analysis into its analysis fields; an analysis of an older wording is left out."""
    out = []
    for line in lines:
        entry = analysis.get(line.record.id)
        if entry is not None and is_current(entry, line):
            line = line.model_copy(update={"record": line.record.model_copy(update=entry.fields())})
        out.append(line)
    return tuple(out)


def merged(
    known: Mapping[str, AnalysisEntry], fresh: Mapping[str, AnalysisEntry], lines: Iterable[CatalogLine]
) -> dict[str, AnalysisEntry]:
    """Fresh analysis merged into what is known, by id: an entry adds its fields to the one kept (`{id, tags}`
    changes the tags, not the rest), as written for the record as it is now (its basis unset: carry_forward
    stamps it); an entry written for an older wording than the record's never replaces one written for its
    current wording (it would then be dropped as not current, and the good one lost with it)."""
    by_id = {line.record.id: line for line in lines}
    out = dict(known)
    for key, entry in fresh.items():
        line, kept = by_id.get(key), out.get(key)
        if line is not None and kept is not None and is_current(kept, line) and not is_current(entry, line):
            continue  # (stale: of a wording the record no longer has)
        if kept is None or (line is not None and not is_current(kept, line)):
            out[key] = entry.model_copy(update={"basis": None})
            continue
        wording = entry.errorMessage or kept.errorMessage
        out[key] = kept.model_copy(update={**entry.fields(), "basis": None, "errorMessage": wording})
    return out


def carry_forward(
    analysis: Mapping[str, AnalysisEntry], lines: Sequence[CatalogLine], *, reworded: Iterable[str] = ()
) -> CarriedAnalysis:
    """Keep the analysis of every record whose id and wording are unchanged; list those that need analysis.

    `reworded` names the ids that a diff paired with an older wording. An entry whose basis is unknown is
    taken as written for the record as it is now, and stamped so.
    """
    reworded = set(reworded)
    kept: list[AnalysisEntry] = []
    needs: list[NeedsAnalysis] = []
    for line in lines:
        record, now = line.record, basis(line)
        entry = analysis.get(record.id)
        reason: NeedReason | None = None
        if entry is None or not is_current(entry, line):
            reason = NeedReason.REWORDED if record.id in reworded else NeedReason.NEW
        else:
            if entry.basis is None or entry.errorMessage is None:
                entry = entry.model_copy(update={"basis": entry.basis or now, "errorMessage": record.errorMessage})
            kept.append(entry)
            if entry.basis != now:
                reason = NeedReason.MODIFIED
        if reason is not None:
            needs.append(
                NeedsAnalysis(
                    id=record.id,
                    reason=reason,
                    slug=record.slug,
                    filePath=record.filePath,
                    lineNumber=record.lineNumber,
                    errorMessage=record.errorMessage,
                )
            )
    return CarriedAnalysis(tuple(sorted(kept, key=lambda e: e.id)), tuple(needs))


def encode_entries(entries: Iterable[BaseModel]) -> bytes:
    """Serialize entries as JSONL, leaving out what is null."""
    return b"".join(
        orjson.dumps(e.model_dump(mode="json", exclude_none=True), option=orjson.OPT_APPEND_NEWLINE) for e in entries
    )

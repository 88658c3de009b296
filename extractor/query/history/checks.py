# Checks: a revision -> the checks a history pairs, made file by file (what a file gives kept by its blob for
# the next revision), or a catalog's.
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extractor.catalog.load import LoadedCatalog
from extractor.model.scanned import SiteData
from extractor.pipeline.extract import ScannedRevision
from extractor.pipeline.fields import from_self
from extractor.pipeline.lines import Slugs, file_ids, in_order, type_value, url_prefix
from extractor.query.diff import Check, Pair, checks_of

__all__ = ["ChecksByFile", "RevisionChecks", "sides"]


@dataclass(frozen=True)
class RevisionChecks:
    """One revision as a history reads it: the SHA its records point at, when it was committed, the
    checks of its catalog, and where they come from when the history made them (see ChecksByFile): each
    file's path, blob id and the slice of `checks` that is its own."""

    sha: str
    committed_at: str | None
    checks: Sequence[Check]
    files: Mapping[str, tuple[str, int, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, catalog: LoadedCatalog, checks: Sequence[Check] | None = None) -> RevisionChecks:
        """`checks`, when given, are the catalog's (as a diff of it already read them)."""
        committed = catalog.manifest.committedAt if catalog.manifest is not None else None
        return cls(catalog.sha, committed, checks_of(catalog) if checks is None else checks)


def sides(pairs: Sequence[Pair]) -> tuple[list[Check], list[Check]]:
    """The checks of a diff's old and new catalogs, in catalog order: each is in exactly one pair."""
    old = sorted((pair.old for pair in pairs if pair.old is not None), key=lambda check: check.index)
    new = sorted((pair.new for pair in pairs if pair.new is not None), key=lambda check: check.index)
    return old, new


@dataclass(frozen=True, slots=True)
class _SiteCheck:
    """What a site gives its check whatever the revision: all but its place in the catalog, its slug
    (unique over the catalog) and its URL (which names the revision's SHA)."""

    id: str
    error_class: str
    message: str
    error_type: str
    line: int
    column: int
    function: str
    conditions: tuple[tuple[str, str, bool], ...]
    cause: str | None
    stem: str
    start: int
    end: int
    reads: list[str]  # the chains it reads that may reach a config field


def conditions_of_data(conditions: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str, bool], ...]:
    """A check's conditions, read from a scan's sites as data (with the models' defaults)."""
    return tuple((c["kind"], c["test"], c.get("negated", False)) for c in conditions)


def fields_of_data(fields: Iterable[Mapping[str, Any]]) -> tuple[tuple[object, ...], ...]:
    """A check's fields: those of an extraction's (as data, with the models' defaults) that resolve."""
    return tuple(
        (f.get("class"), f.get("field"), tuple(f.get("flags", ())), f.get("via"), f.get("key"))
        for f in fields
        if f.get("resolved", False)
    )


class ChecksByFile:
    """Each revision's checks, equal to those of its catalog's lines (diff.Check.of of the lines
    build_records makes and the field index annotates), made file by file: what a file's sites give
    whatever the revision is kept by path and blob for the next revision (most of whose files are the
    same blobs), and only the chains that may reach a config field are resolved again."""

    def __init__(self) -> None:
        self._sites: dict[tuple[str, str, str], list[_SiteCheck]] = {}

    def of(self, scanned: ScannedRevision) -> RevisionChecks:
        sites: dict[tuple[str, str, str], list[_SiteCheck]] = {}
        slugs = Slugs()
        checks: list[Check] = []
        index = scanned.fields
        files: dict[str, tuple[str, int, int]] = {}
        for path, oid, found in sorted(scanned.files, key=lambda file: file[0]):
            key = (scanned.repo, path, oid)
            parts = sites[key] = self._sites.get(key) or _site_checks(scanned.repo, path, found)
            files[path] = (oid, len(checks), len(checks) + len(parts))
            url = url_prefix(scanned.repo, scanned.sha, path)
            for part in parts:
                fields = fields_of_data(index.resolved(part.reads, part.function)) if part.reads else ()
                checks.append(
                    Check(
                        len(checks),
                        part.id,
                        part.error_class,
                        part.message,
                        part.error_type,
                        path,
                        part.line,
                        part.column,
                        part.function,
                        part.conditions,
                        part.cause,
                        fields,
                        slugs.take(part.stem),
                        f"{url}{part.start}-L{part.end}",
                    )
                )
        self._sites = sites
        return RevisionChecks(scanned.sha, scanned.committed_at, checks, files)


def _site_checks(repo: str, path: str, found: Sequence[SiteData]) -> list[_SiteCheck]:
    ordered = in_order(found)
    out = []
    for site, identifier in zip(ordered, file_ids(repo, path, ordered), strict=True):
        extraction = site["extraction"]
        out.append(
            _SiteCheck(
                identifier,
                site["errorClass"],
                site["errorMessage"],
                type_value(site["errorClass"]),
                site["lineNumber"],
                extraction["column"],
                extraction["function"],
                conditions_of_data(extraction["conditions"]),
                extraction["cause"],
                site["slugStem"],
                site["sourceCodeStart"],
                site["sourceCodeEnd"],
                from_self(site["reads"]),
            )
        )
    return out

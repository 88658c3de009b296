# Manifest: what a run says of its catalog (manifest.json), as data; written and stored without pydantic.
"""An extraction builds its manifest as plain data that mirrors records.Manifest key for key, in its order
(tests/test_models.py checks it), as pipeline/lines.py builds the lines: manifest.json is that data as JSON, and
the cache stores it so. Importing pydantic and building the manifest's models cost a run some 0.15 s of
its one core before and after the parallel scan. `Catalog.manifest` validates it into the model for
whoever asks (a library caller, the commands that compare catalogs).
"""

from __future__ import annotations

from typing import TypedDict

from extractor.model.scanned import SkippedSiteData

__all__ = ["CountsData", "ManifestData", "SkippedFileData"]


class SkippedFileData(TypedDict):
    """records.SkippedFile as data."""

    path: str
    reason: str


class CountsData(TypedDict):
    """records.Counts as data."""

    filesInScope: int
    filesParsed: int
    records: int
    skippedFiles: int
    skippedSites: int


class ManifestData(TypedDict):
    """records.Manifest as data (`scope` as ExtractOptions.scope_data holds it)."""

    repo: str
    sha: str
    revision: str
    committedAt: str | None
    analyzedAt: str
    extractorVersion: str
    scope: dict[str, object]
    counts: CountsData
    recordsSha256: str | None
    skippedFiles: list[SkippedFileData]
    skippedSites: list[SkippedSiteData]

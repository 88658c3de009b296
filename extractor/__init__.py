# extractor: mine a codebase, pinned to a git revision, for its raise sites and write a schema-v2 catalog.
"""The public API, each name imported on first use so that light paths (a cached run) never import the parser.

    import extractor

    catalog = extractor.extract(repo="~/src/vllm", revision="v0.28.0", options=extractor.ExtractOptions())
    old = extractor.open_catalog("release:0.27.0", repo="", options=extractor.ExtractOptions())
    changes = extractor.diff_catalogs(old, extractor.open_catalog(...))
    matcher = extractor.Matcher(extractor.templates_of(catalog.lines))
    history = extractor.build_history(extractor.list_revisions(["release:all"], repo=""), options=...)

Everything else is the package's own and may change: the subpackages hold the stages (util, model, repo,
scanning, pipeline, catalog, query, publish, cli), lowest first (docs/contributing/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extractor._version import __version__

if TYPE_CHECKING:
    from extractor.catalog.load import LoadedCatalog, load_catalog, open_catalog
    from extractor.errors import ExtractorError
    from extractor.model.records import CatalogLine, Extraction, Manifest, Record
    from extractor.pipeline.extract import Catalog, extract
    from extractor.pipeline.options import ExtractOptions
    from extractor.query.diff import CatalogDiff, diff_catalogs
    from extractor.query.history.lineage import History, build_history
    from extractor.query.history.revisions import list_revisions
    from extractor.query.match.answer import MatchResult
    from extractor.query.match.matcher import Matcher
    from extractor.query.match.pattern import templates_of
    from extractor.scanning.scan import ScanOptions, scan
    from extractor.scanning.template.message import Template, message_template

# name -> the module that defines it
_HOMES = {
    "ExtractorError": "extractor.errors",
    "Catalog": "extractor.pipeline.extract",
    "ExtractOptions": "extractor.pipeline.options",
    "extract": "extractor.pipeline.extract",
    "CatalogLine": "extractor.model.records",
    "Extraction": "extractor.model.records",
    "Manifest": "extractor.model.records",
    "Record": "extractor.model.records",
    "ScanOptions": "extractor.scanning.scan",
    "scan": "extractor.scanning.scan",
    "Template": "extractor.scanning.template.message",
    "message_template": "extractor.scanning.template.message",
    "LoadedCatalog": "extractor.catalog.load",
    "load_catalog": "extractor.catalog.load",
    "open_catalog": "extractor.catalog.load",
    "CatalogDiff": "extractor.query.diff",
    "diff_catalogs": "extractor.query.diff",
    "Matcher": "extractor.query.match.matcher",
    "MatchResult": "extractor.query.match.answer",
    "templates_of": "extractor.query.match.pattern",
    "History": "extractor.query.history.lineage",
    "build_history": "extractor.query.history.lineage",
    "list_revisions": "extractor.query.history.revisions",
}

__all__ = [
    "Catalog",
    "CatalogDiff",
    "CatalogLine",
    "ExtractOptions",
    "Extraction",
    "ExtractorError",
    "History",
    "LoadedCatalog",
    "Manifest",
    "MatchResult",
    "Matcher",
    "Record",
    "ScanOptions",
    "Template",
    "__version__",
    "build_history",
    "diff_catalogs",
    "extract",
    "list_revisions",
    "load_catalog",
    "message_template",
    "open_catalog",
    "scan",
    "templates_of",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'extractor' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once found, an attribute like any other
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})

# extractor: mine a codebase, pinned to a git revision, for its raise sites and write a schema-v2 catalog.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extractor._version import __version__

if TYPE_CHECKING:
    from extractor.errors import ExtractorError
    from extractor.extract import Catalog, ExtractOptions, extract
    from extractor.models import CatalogLine, Extraction, Manifest, Record
    from extractor.scan import ScanOptions, scan
    from extractor.template import Template, message_template

__all__ = [
    "Catalog",
    "CatalogLine",
    "ExtractOptions",
    "Extraction",
    "ExtractorError",
    "Manifest",
    "Record",
    "ScanOptions",
    "Template",
    "__version__",
    "extract",
    "message_template",
    "scan",
]

# Public names are imported on first use, so that light paths (a cached run) never import the parser.
_HOMES = {
    "ExtractorError": "extractor.errors",
    "Catalog": "extractor.extract",
    "ExtractOptions": "extractor.extract",
    "extract": "extractor.extract",
    "CatalogLine": "extractor.models",
    "Extraction": "extractor.models",
    "Manifest": "extractor.models",
    "Record": "extractor.models",
    "ScanOptions": "extractor.scan",
    "scan": "extractor.scan",
    "Template": "extractor.template",
    "message_template": "extractor.template",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'extractor' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)

# extractor: mine a codebase, pinned to a git revision, for its raise sites and write a schema-v2 catalog.
from __future__ import annotations

import sys
import types
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


class _Package(types.ModuleType):
    """The package, whose `extract` and `scan` are the functions, not the modules of the same name: the
    import system binds a submodule to its package's attribute once loaded, and `from extractor import
    extract` would then give the module (reach the modules as `extractor.extract.` no more, but through
    `from extractor.extract import ...` or sys.modules)."""

    @property
    def extract(self) -> Any:
        return __getattr__("extract")

    @extract.setter
    def extract(self, module: object) -> None:  # the submodule, bound as it loads: it stays in sys.modules
        pass

    @property
    def scan(self) -> Any:
        return __getattr__("scan")

    @scan.setter
    def scan(self, module: object) -> None:
        pass


sys.modules[__name__].__class__ = _Package

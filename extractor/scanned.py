# Scanned: the typed values the scan hands on (a file's sites, the raises it skipped).
from __future__ import annotations

from typing import Any

__all__ = ["SiteData"]

SiteData = dict[str, Any]  # a Site as the scanner serialized it, read back by orjson

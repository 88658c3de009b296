"""Regenerate the site's find_constants.js from the matcher's constants (tests check they are in sync)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.publish.site.pages import FIND_CONSTANTS, find_constants

if __name__ == "__main__":
    path = Path(__file__).resolve().parents[1] / "extractor" / "publish" / "site" / "assets" / "static" / FIND_CONSTANTS
    path.write_bytes(find_constants())
    print(f"wrote {path}")

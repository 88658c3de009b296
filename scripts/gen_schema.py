"""Regenerate schemas/record-line.schema.json from the pydantic models (tests check it is in sync)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.schema import SCHEMA_PATH, render_schema

if __name__ == "__main__":
    SCHEMA_PATH.write_bytes(render_schema())
    print(f"wrote {SCHEMA_PATH}")

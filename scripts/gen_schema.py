"""Regenerate the JSON Schemas in schemas/ from the pydantic models (tests check they are in sync)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.model.schema import render_schemas

if __name__ == "__main__":
    for path, data in render_schemas().items():
        path.write_bytes(data)
        print(f"wrote {path}")

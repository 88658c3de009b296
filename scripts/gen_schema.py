"""Regenerate what is derived from the pydantic models: the JSON Schemas in schemas/ and the scan's typed values,
extractor/model/scanned.py (tests check they are in sync)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.model.schema import SCANNED_PATH, render_scanned, render_schemas

if __name__ == "__main__":
    for path, data in {**render_schemas(), SCANNED_PATH: render_scanned().encode()}.items():
        path.write_bytes(data)
        print(f"wrote {path}")

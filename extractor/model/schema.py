# Schema: the published JSON Schemas (draft 2020-12) of records.jsonl, history.jsonl and history.json lines.
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from extractor.model.records import CatalogLine, HistoryManifest, Lineage

__all__ = ["SCHEMAS", "SCHEMA_PATH", "json_schema", "render_schema", "render_schemas"]

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"  # package data; the repository's schemas/ links here
SCHEMA_PATH = SCHEMA_DIR / "record-line.schema.json"

# file name -> (model, $id, title)
SCHEMAS: dict[str, tuple[type[BaseModel], str, str]] = {
    "record-line.schema.json": (
        CatalogLine,
        "urn:extractor:schema-v2:record-line",
        "schema-v2 catalog line (records.jsonl)",
    ),
    "history-line.schema.json": (Lineage, "urn:extractor:history-line", "one lineage of a history (history.jsonl)"),
    "history.schema.json": (HistoryManifest, "urn:extractor:history", "what a history covers (history.json)"),
}


def json_schema(name: str = SCHEMA_PATH.name) -> dict[str, Any]:
    """Return the JSON Schema of one published file's line (default: a catalog line)."""
    model, identifier, title = SCHEMAS[name]
    schema = model.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": identifier, "title": title, **schema}


def render_schema(name: str = SCHEMA_PATH.name) -> bytes:
    return orjson.dumps(json_schema(name), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def render_schemas() -> dict[Path, bytes]:
    """Every published schema, by the path it is committed at."""
    return {SCHEMA_DIR / name: render_schema(name) for name in SCHEMAS}

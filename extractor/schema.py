# Schema: the published JSON Schema (draft 2020-12) of one records.jsonl line, made from the models.
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from extractor.models import CatalogLine

__all__ = ["SCHEMA_PATH", "json_schema", "render_schema"]

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "record-line.schema.json"


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of one catalog line."""
    schema = CatalogLine.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:extractor:schema-v2:record-line",
        "title": "schema-v2 catalog line (records.jsonl)",
        **schema,
    }


def render_schema() -> bytes:
    return orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"

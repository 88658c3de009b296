# Schema: what is derived from the models: the published JSON Schemas (draft 2020-12) of records.jsonl,
# history.jsonl and history.json lines, and the scan's typed values (scanned.py).
from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from extractor.model import records
from extractor.model.records import CatalogLine, HistoryManifest, Lineage

__all__ = [
    "MIRRORS",
    "SCANNED_PATH",
    "SCHEMAS",
    "SCHEMA_PATH",
    "SET_LATER",
    "json_schema",
    "render_scanned",
    "render_schema",
    "render_schemas",
]

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


# The scan's typed values (scanned.py), written from the models' own lines: a field is declared once, on its
# model, and the scan's shapes follow it. Each model the scan makes, with its slotted dataclass and the TypedDict
# the pipeline reads its JSON back as (None: none, read back as a plain dict).
SCANNED_PATH = Path(__file__).resolve().parent / "scanned.py"
MIRRORS: dict[str, tuple[str, str | None]] = {
    "Placeholder": ("ScannedPlaceholder", "PlaceholderData"),
    "Condition": ("ScannedCondition", "ConditionData"),
    "Extraction": ("ScannedExtraction", "ExtractionData"),
    "Site": ("ScannedSite", "SiteData"),
    "SkippedSite": ("ScannedSkippedSite", "SkippedSiteData"),
    "FieldFacts": ("ScannedFieldFacts", None),
    "ClassFacts": ("ScannedClassFacts", None),
    "FlagFacts": ("ScannedFlagFacts", None),
    "FileResult": ("Result", "ResultData"),
}
# The fields of a model that a later stage sets, never the scan (`reproduce`): its scan values leave them out.
SET_LATER: dict[str, tuple[str, ...]] = {"Extraction": ("reproduction",)}
# The types the scan's values hold in place of those the models name: (as the scan makes it, as the cache holds
# it; None: the model's). Enumerations are read back as their values; a record's fields are data the pipeline
# builds (pipeline/fields.py); a piece is written as a plain tuple.
_OTHER_TYPES: dict[str, tuple[str | None, str]] = {
    "ConditionKind": (None, "str"),
    "MessageKind": (None, "str"),
    "FieldRef": ("dict[str, Any]", "dict[str, Any]"),
    "Piece": ("tuple[str, int, int, str, str, tuple[str, ...]]", "list[Any]"),
}
# A result's sites and skipped sites may be data already: those a rescan reused, as the cache held them.
_REUSED = {"FileResult": ("sites", "skippedSites")}
_KINDS = ("ConditionKind", "ErrorType", "MessageKind")  # (kinds.py: the enumerations, without pydantic)
_BUILTIN = ("str", "int", "bool", "list", "tuple", "dict", "Any", "Literal")
# scanned.py's opening lines are its own, down to this one; the rest is written here.
_WRITTEN_BELOW = "# The rest of this file is written from the models of records.py by `python scripts/gen_schema.py`.\n"

_Field = tuple[str, ast.expr, ast.expr | None]  # a model's field as declared: name, annotation, default


def render_scanned() -> str:
    """The text of scanned.py: its opening lines as they are, then each model of MIRRORS as the scan makes it and
    as the cache holds it."""
    opening = SCANNED_PATH.read_text(encoding="utf-8").partition(_WRITTEN_BELOW)[0]
    declared = {
        node.name: node for node in ast.parse(inspect.getsource(records)).body if isinstance(node, ast.ClassDef)
    }
    fields = {model: _fields(declared[model]) for model in MIRRORS}
    classes = [_dataclass(model, fields[model]) for model in MIRRORS]
    classes.append("# The same values as the cache holds them, read back by orjson.")
    classes += [_typed_dict(model, fields[model]) for model, (_, data) in MIRRORS.items() if data is not None]
    body = "\n\n\n".join(classes)
    used = set(re.findall(r"\w+", body))
    typing = [name for name in ("Any", "Literal", "TypedDict") if name in used]
    kinds = [name for name in _KINDS if name in used]
    names = sorted(name for pair in MIRRORS.values() for name in pair if name is not None)
    imports = [
        "from __future__ import annotations",
        "",
        f"from dataclasses import dataclass{', field' if 'field(' in body else ''}",
        *([f"from typing import {', '.join(typing)}"] if typing else []),
        *(["", f"from extractor.model.kinds import {', '.join(kinds)}"] if kinds else []),
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in names),
        "]",
    ]
    return opening + _WRITTEN_BELOW + "\n" + "\n".join(imports) + f"\n\n\n{body}\n"


def _fields(model: ast.ClassDef) -> list[_Field]:
    later = SET_LATER.get(model.name, ())
    return [
        (line.target.id, line.annotation, line.value)
        for line in model.body
        if isinstance(line, ast.AnnAssign) and isinstance(line.target, ast.Name) and line.target.id not in later
    ]


def _dataclass(model: str, fields: list[_Field]) -> str:
    """A model as the scan makes it. A field takes the model's default where every field after it has one too
    (a dataclass's defaults come last): the scan sets the others."""
    lines: list[str] = []
    defaulted = True
    for name, annotation, value in reversed(fields):
        defaulted = defaulted and value is not None
        shown = _type(annotation, scanned=True, reused=name in _REUSED.get(model, ()))
        lines.insert(0, f"    {name}: {shown}" + (f" = {_default(value)}" if defaulted and value is not None else ""))
    head = ["@dataclass(frozen=True, slots=True)", f"class {MIRRORS[model][0]}:"]
    return "\n".join([*head, f'    """records.{model}, as the scan makes it."""', "", *lines])


def _typed_dict(model: str, fields: list[_Field]) -> str:
    lines = [f"    {name}: {_type(annotation, scanned=False)}" for name, annotation, _ in fields]
    head = f"class {MIRRORS[model][1]}(TypedDict):"
    return "\n".join([head, f'    """records.{model}, as the cache holds it."""', "", *lines])


def _type(node: ast.expr, *, scanned: bool, reused: bool = False) -> str:
    """A model's annotation in a scan value (`scanned`) or in its data: a model of MIRRORS is named by its
    dataclass or its TypedDict (by either where a value may be `reused` as the cache held it)."""
    if isinstance(node, ast.Name):
        fast, data = MIRRORS.get(node.id, (None, None))
        other = _OTHER_TYPES.get(node.id, (None, None))[0 if scanned else 1]
        if other is not None:
            return other
        if fast is not None:
            if reused and data is not None:
                return f"{fast} | {data}"
            return fast if scanned else data or "dict[str, Any]"
        if node.id in (*_KINDS, *_BUILTIN):
            return node.id
    elif isinstance(node, ast.Constant):  # None, ..., a literal's value
        return json.dumps(node.value) if isinstance(node.value, str) else "..." if node.value is ... else "None"
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return " | ".join(_type(side, scanned=scanned, reused=reused) for side in (node.left, node.right))
    elif isinstance(node, ast.Subscript):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        shown = ", ".join(_type(part, scanned=scanned, reused=reused) for part in inner)
        return f"{_type(node.value, scanned=scanned)}[{shown}]"
    raise ValueError(f"the scan's values know no type for {ast.unparse(node)}: name one in schema._OTHER_TYPES")


def _default(node: ast.expr) -> str:
    if isinstance(node, ast.List) and not node.elts:
        return "field(default_factory=list)"
    if isinstance(node, ast.Constant):
        return json.dumps(node.value) if isinstance(node.value, str) else repr(node.value)
    raise ValueError(f"the scan's values cannot default to {ast.unparse(node)}")

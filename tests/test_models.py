"""The scan's typed values are written from the published models, and every fast shape of a model has its fields
(a difference said by the field's name); `replace` copies a model as model_copy does."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence

import orjson
import pytest
from pydantic import BaseModel

from extractor.model import manifest, scanned
from extractor.model import records as models
from extractor.model.records import ConditionKind, ErrorType, MessageKind, Record, replace
from extractor.model.schema import MIRRORS, SCANNED_PATH, SET_LATER, render_scanned
from extractor.pipeline.fields import _unresolved
from extractor.pipeline.lines import RECORD_DEFAULTS, LineData

RECORD = {
    "id": "0123456789abcdef",
    "repo": "vllm-project/vllm",
    "slug": "max-model-len-too-small",
    "errorMessage": "max_model_len too small",
    "messagePattern": "^max_model_len too small$",
    "errorType": ErrorType.VALIDATION,
    "errorClass": "ValueError",
    "filePath": "vllm/config/model.py",
    "lineNumber": 12,
    "sourceCode": "raise ValueError('max_model_len too small')",
    "sourceCodeStart": 1,
    "sourceCodeEnd": 30,
    "githubUrl": "https://github.com/vllm-project/vllm/blob/abcdef0/vllm/config/model.py#L1-L30",
    "analyzedSha": "abcdef0",
    "analyzedAt": "2026-01-01T00:00:00.000Z",
}


def differences(mirror: str, keys: Sequence[str], model: type[BaseModel], *, left_out: Sequence[str] = ()) -> list[str]:
    """How the keys of a fast shape differ from its model's fields (by the names JSON gives them, in order), each
    said by name; `left_out`: the model's fields the shape leaves out on purpose."""
    fields = [info.alias or name for name, info in model.model_fields.items() if name not in left_out]
    said = [f"{mirror} has `{key}` that {model.__name__} lacks" for key in keys if key not in fields]
    said += [f"{model.__name__}.{name} is not in {mirror}" for name in fields if name not in keys]
    if not said and list(keys) != fields:
        here, there = next((a, b) for a, b in zip(keys, fields, strict=True) if a != b)
        said.append(f"{mirror} has `{here}` where {model.__name__} has `{there}` (the same fields, in another order)")
    return said


def _keys(shape: object) -> list[str]:
    if dataclasses.is_dataclass(shape):
        return [f.name for f in dataclasses.fields(shape)]
    if isinstance(shape, dict):
        return list(shape)
    return list(typing.get_type_hints(shape))


# Every fast shape of a published model, by the name a failure gives it: the scan's values and the TypedDicts
# the pipeline reads them back as (written from the models: schema.MIRRORS), and what the pipeline writes as
# data without pydantic (a catalog line, a record's keys, a record's field, the manifest).
SHAPES: list[tuple[str, object, type[BaseModel]]] = [
    *(
        (name, getattr(scanned, name), getattr(models, model))
        for model, pair in MIRRORS.items()
        for name in pair
        if name is not None
    ),
    ("LineData", LineData, models.CatalogLine),
    ("RECORD_DEFAULTS", RECORD_DEFAULTS, models.Record),
    ("a field's data (fields.py)", _unresolved("self.x", "why"), models.FieldRef),
    ("ManifestData", manifest.ManifestData, models.Manifest),
    ("CountsData", manifest.CountsData, models.Counts),
    ("SkippedFileData", manifest.SkippedFileData, models.SkippedFile),
]


@pytest.mark.parametrize(("name", "shape", "model"), SHAPES, ids=[shape[0] for shape in SHAPES])
def test_each_fast_shape_has_its_models_fields_in_its_order(name: str, shape: object, model: type[BaseModel]) -> None:
    """The JSON a fast shape makes has its model's keys in the model's order (catalog lines keep that order); the
    one exception list: the fields a later stage sets, never the scan (schema.SET_LATER: `reproduction`)."""
    assert differences(name, _keys(shape), model, left_out=SET_LATER.get(model.__name__, ())) == []


def test_a_difference_is_said_by_the_fields_name() -> None:
    class Toy(BaseModel):
        a: int
        b: int
        c: int = 0

    assert differences("ToyData", ["a", "foo", "c"], Toy) == [
        "ToyData has `foo` that Toy lacks",
        "Toy.b is not in ToyData",
    ]
    assert differences("ToyData", ["a", "c", "b"], Toy) == [
        "ToyData has `c` where Toy has `b` (the same fields, in another order)"
    ]
    assert differences("ToyData", ["a", "c"], Toy, left_out=["b"]) == []


def test_the_scans_values_are_written_from_the_models() -> None:
    """A field is declared once, on its model: scanned.py is written from records.py. Fails when a model changes
    without `python scripts/gen_schema.py` being run."""
    assert SCANNED_PATH.read_text(encoding="utf-8") == render_scanned()


SITE = scanned.ScannedSite(
    errorClass="ValueError",
    errorMessage="n ({n}) too big",
    messagePattern=r"n \((?P<p0>.*?)\) too big",
    lineNumber=7,
    sourceCode="raise ValueError(f'n ({n}) too big')",
    sourceCodeStart=1,
    sourceCodeEnd=9,
    extraction=scanned.ScannedExtraction(
        placeholders=[scanned.ScannedPlaceholder("n", None, None, False, 3, 6, "p0")],
        conditions=[scanned.ScannedCondition(ConditionKind.IF, "n > 3", False, 6)],
        function="f",
        cause=None,
        messageKind=MessageKind.FSTRING,
        messageSource="f'n ({n}) too big'",
        column=8,
        endLineNumber=7,
        warnings=[],
    ),
    slugStem="n-too-big",
    reads=["n"],
    templateKey="0" * 24,
)


def test_a_result_written_by_orjson_is_the_models_json() -> None:
    """What the scan writes for the cache validates as a FileResult and dumps back to the same bytes."""
    result = scanned.Result(
        kind="scanned",
        sites=[SITE],
        skippedSites=[scanned.ScannedSkippedSite("", 9, "a bare raise")],
        pieces=[models.Piece("h" * 24, 1, 9, "def f(n):", "    raise", ())[:]],
    )
    written = orjson.dumps(result)
    later = {"sites": {"__all__": {"extraction": {"reproduction"}}}}  # (set by `reproduce`, never by a scan)
    assert models.FileResult.model_validate_json(written).model_dump_json(exclude=later).encode() == written


def test_replace_equals_model_copy() -> None:
    record = Record(**RECORD)  # type: ignore[arg-type]
    fast, slow = (
        replace(record, slug="other", lineNumber=14),
        record.model_copy(update={"slug": "other", "lineNumber": 14}),
    )
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert record.slug == RECORD["slug"]  # the original is left alone


def test_the_records_defaults_are_the_models() -> None:
    """records.RECORD_DEFAULTS is written out (the catalog is written without pydantic): every key of the
    Record model in its order, with the model's default where it has one (a record sets the others)."""
    from pydantic_core import PydanticUndefined

    assert list(RECORD_DEFAULTS) == list(Record.model_fields)
    for name, info in Record.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if default is not PydanticUndefined:
            assert RECORD_DEFAULTS[name] == default, name

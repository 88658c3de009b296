"""The scan's typed values mirror the published models; `replace` copies a model as model_copy does."""

from __future__ import annotations

import dataclasses
import typing

import orjson
import pytest
from pydantic import BaseModel

from extractor.model import manifest, scanned
from extractor.model import records as models
from extractor.model.records import ConditionKind, ErrorType, MessageKind, Record, replace

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

# Each typed value of the scan, the model it mirrors, and its TypedDict as read back from the cache.
MIRRORS = [
    (scanned.ScannedPlaceholder, models.Placeholder, scanned.PlaceholderData),
    (scanned.ScannedCondition, models.Condition, scanned.ConditionData),
    (scanned.ScannedExtraction, models.Extraction, scanned.ExtractionData),
    (scanned.ScannedSite, models.Site, scanned.SiteData),
    (scanned.ScannedSkippedSite, models.SkippedSite, scanned.SkippedSiteData),
    (scanned.Result, models.FileResult, None),
    (scanned.ScannedFieldFacts, models.FieldFacts, None),
    (scanned.ScannedClassFacts, models.ClassFacts, None),
    (scanned.ScannedFlagFacts, models.FlagFacts, None),
]


# The manifest an extraction writes, as data (manifest.py), and the models it mirrors.
MANIFEST_MIRRORS = [
    (manifest.ManifestData, models.Manifest),
    (manifest.CountsData, models.Counts),
    (manifest.SkippedFileData, models.SkippedFile),
]


@pytest.mark.parametrize(("data", "model"), MANIFEST_MIRRORS, ids=[m[1].__name__ for m in MANIFEST_MIRRORS])
def test_the_manifest_as_data_has_its_models_keys_in_its_order(data: type, model: type[BaseModel]) -> None:
    assert list(typing.get_type_hints(data)) == list(model.model_fields)


@pytest.mark.parametrize(("fast", "model", "data"), MIRRORS, ids=[m[1].__name__ for m in MIRRORS])
def test_each_typed_value_has_its_models_fields_in_its_order(
    fast: type, model: type[BaseModel], data: type | None
) -> None:
    """The JSON the scan writes has the model's keys in the model's order (catalog lines keep that order); a key
    a later stage sets (`reproduction`, by `reproduce`) comes last, after the scan's."""
    names = [f.name for f in dataclasses.fields(fast)]
    later = {"Extraction": ["reproduction"]}.get(model.__name__, [])
    assert names + later == list(model.model_fields)
    if data is not None:
        assert list(typing.get_type_hints(data)) == names


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

    from extractor.pipeline.lines import RECORD_DEFAULTS

    assert list(RECORD_DEFAULTS) == list(Record.model_fields)
    for name, info in Record.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if default is not PydanticUndefined:
            assert RECORD_DEFAULTS[name] == default, name

"""`construct` and `replace` build the same models as pydantic's model_construct and model_copy."""

from __future__ import annotations

import pytest

from extractor.models import Condition, ConditionKind, ErrorType, FieldRef, Record, construct, replace

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


@pytest.mark.parametrize(
    ("cls", "values"),
    [
        (Record, RECORD),
        (Record, dict(reversed(RECORD.items()))),
        (Condition, {"kind": ConditionKind.IF, "test": "x > 1", "line": 3}),
        (FieldRef, {"expression": "self.a", "class_": "A", "flags": ["--a"]}),
    ],
)
def test_construct_equals_model_construct(cls: type, values: dict[str, object]) -> None:
    fast, slow = construct(cls, **values), cls.model_construct(**values)
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert list(fast.__dict__) == list(slow.__dict__) == list(cls.model_fields)
    assert fast.model_fields_set == slow.model_fields_set


def test_construct_gives_each_model_its_own_default_lists() -> None:
    first, second = construct(FieldRef, expression="a"), construct(FieldRef, expression="b")
    assert first.flags == second.flags == []
    assert first.flags is not second.flags


def test_construct_refuses_unknown_or_missing_fields() -> None:
    with pytest.raises(TypeError, match="unknown or missing"):
        construct(Condition, kind=ConditionKind.IF, test="x", line=1, typo=2)
    with pytest.raises(TypeError, match="unknown or missing"):
        construct(Condition, kind=ConditionKind.IF, test="x")


def test_replace_equals_model_copy() -> None:
    record = construct(Record, **RECORD)
    fast, slow = (
        replace(record, slug="other", lineNumber=14),
        record.model_copy(update={"slug": "other", "lineNumber": 14}),
    )
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert record.slug == RECORD["slug"]  # the original is left alone

"""Records: ids that survive moves, slugs by the reference's rule, error types by class."""

from __future__ import annotations

import textwrap

import orjson

from extractor.model.records import CatalogLine, ErrorType
from extractor.pipeline.lines import RunContext, build_records, error_type
from extractor.scanning.scan import Scanned, ScanOptions, scan

RUN = RunContext(
    repo_name="o/r", sha="a" * 40, revision="main", committed_at=None, analyzed_at="2026-01-01T00:00:00.000Z"
)


def records(files: dict[str, str], run: RunContext = RUN):  # type: ignore[no-untyped-def]
    scanned = []
    for path, source in files.items():
        result = scan(textwrap.dedent(source).encode(), options=ScanOptions(context=1))
        assert isinstance(result, Scanned)
        scanned.append((path, [orjson.loads(site.model_dump_json()) for site in result.sites]))
    return [CatalogLine.model_validate(line).record for line in build_records(scanned, run=run).lines]


def test_id_survives_line_shifts_and_moves_into_another_function() -> None:
    before = records({"a.py": 'def f():\n    raise ValueError("boom")\n'})
    after = records(
        {"a.py": '\n\nclass C:\n    def helper(self):\n        if x:\n            raise ValueError("boom")\n'}
    )
    assert before[0].id == after[0].id
    assert before[0].lineNumber != after[0].lineNumber


def test_id_depends_on_file_class_message_and_repo() -> None:
    base = records({"a.py": 'raise ValueError("boom")\n'})[0].id
    assert records({"b.py": 'raise ValueError("boom")\n'})[0].id != base
    assert records({"a.py": 'raise ValueError("boom!")\n'})[0].id != base
    other_repo = RunContext(**{**RUN.__dict__, "repo_name": "x/y"})
    assert records({"a.py": 'raise ValueError("boom")\n'}, other_repo)[0].id != base
    other_sha = RunContext(**{**RUN.__dict__, "sha": "b" * 40, "analyzed_at": "2027-01-01T00:00:00.000Z"})
    assert records({"a.py": 'raise ValueError("boom")\n'}, other_sha)[0].id == base


def test_exact_duplicates_in_a_file_get_distinct_ids_and_slugs() -> None:
    found = records({"a.py": 'raise ValueError("same")\nraise ValueError("same")\n'})
    assert len({r.id for r in found}) == 2
    assert [r.slug for r in found] == ["same", "same-2"]


def test_slug_rule() -> None:
    found = records(
        {
            "a.py": """
            raise ValueError("Currently, async scheduling is only supported with EAGLE/MTP/Draft Model")
            raise ValueError(f"max_num_batched_tokens ({self.x}) is smaller than max_model_len ({y}).")
            raise ValueError("Café — naïve")
            raise ValueError(msg)
            raise ValueError(f"{a}{b}")
            """
        }
    )
    assert [r.slug for r in found] == [
        "currently-async-scheduling-is-only-supported-with",
        "max-num-batched-tokens-is-smaller-than-max-model",
        "cafe-naive",
        "valueerror",
        "valueerror-2",
    ]


def test_record_fields_and_permalink() -> None:
    (record,) = records({"pkg/m.py": 'x = 1\nraise ValueError("boom")\ny = 2\nz = 3\n'})
    dumped = record.model_dump(mode="json")
    assert list(dumped)[:3] == ["id", "repo", "slug"] and len(dumped) == 31
    assert dumped["githubUrl"] == f"https://github.com/o/r/blob/{'a' * 40}/pkg/m.py#L1-L3"
    assert (dumped["errorType"], dumped["severity"], dumped["schemaVersion"]) == ("validation", "error", 2)
    assert dumped["documentation"] is None and dumped["tags"] is None


def test_error_type_table() -> None:
    assert error_type("ValueError") is ErrorType.VALIDATION
    assert error_type("TypeError") is ErrorType.VALIDATION
    assert error_type("NotImplementedError") is ErrorType.UNSUPPORTED
    assert error_type("SomethingCustom") is ErrorType.OTHER


def test_slug_suffixes_skip_slugs_taken_by_other_stems() -> None:
    # "same-2" is a stem of its own here: the third "same" must not take it, nor the fourth "same-3".
    found = records(
        {
            "a.py": """
            raise ValueError("same")
            raise ValueError("same")
            raise ValueError("same 2")
            raise ValueError("same")
            raise ValueError("same 3")
            raise ValueError("same")
            """
        }
    )
    assert [r.slug for r in found] == ["same", "same-2", "same-2-2", "same-3", "same-3-2", "same-4"]


def test_each_file_has_its_own_quoted_permalink() -> None:
    found = records({"a b.py": 'raise ValueError("x")\n', "c.py": 'raise ValueError("y")\n'})
    assert [r.githubUrl.split("/blob/")[1] for r in found] == [f"{'a' * 40}/a%20b.py#L1-L1", f"{'a' * 40}/c.py#L1-L1"]

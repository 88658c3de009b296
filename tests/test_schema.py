"""The published JSON Schema is generated from the models and every written line validates against it."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import orjson

from extractor.cli.main import main
from extractor.model.schema import SCHEMA_PATH, json_schema, render_schema, render_schemas
from tests.conftest import GitRepo, git


def test_committed_schema_matches_the_models() -> None:
    """Fails when the models change without `python scripts/gen_schema.py` being run."""
    assert SCHEMA_PATH.read_bytes() == render_schema()


def test_schema_is_draft_2020_12_and_valid() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_written_lines_validate_and_bad_lines_do_not(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/a.py": 'if x:\n    raise ValueError(f"bad {x!r}")\n'})
    assert main(["--repo", str(git_repo.path), "--sha", "HEAD", "--output", str(tmp_path)]) == 0
    sha = git(git_repo.path, "rev-parse", "HEAD")
    validator = jsonschema.Draft202012Validator(json_schema())
    (line,) = [orjson.loads(raw) for raw in (tmp_path / sha / "records.jsonl").read_bytes().splitlines()]
    assert list(validator.iter_errors(line)) == []
    line["record"]["id"] = "not-hex"
    line["record"]["surprise"] = 1
    assert len(list(validator.iter_errors(line))) == 2


def test_every_committed_schema_matches_the_models() -> None:
    """records.jsonl, history.jsonl and history.json: `python scripts/gen_schema.py` writes them all."""
    for path, data in render_schemas().items():
        assert path.read_bytes() == data, path.name
        jsonschema.Draft202012Validator.check_schema(orjson.loads(data))

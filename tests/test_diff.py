"""Catalog diffs: each kind of change on small tagged repositories, outputs and exit codes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from extractor.catalog import LoadedCatalog, open_catalog
from extractor.cli import main
from extractor.diff import _similar_pairs, diff_catalogs, render_markdown, similarity
from extractor.extract import ExtractOptions
from extractor.models import CatalogLine, Extraction, Record, construct
from tests.conftest import GitRepo

OPTIONS = ExtractOptions(paths=("pkg",))

BASE = """\
class Config:
    def check(self, n):
        if n > self.limit:
            raise ValueError(f"n ({n}) exceeds the limit ({self.limit}).")
        if n < 0:
            raise ValueError("n must not be negative.")

    def other(self):
        raise ValueError("other is not supported with this backend.")
"""


def changes(repo: GitRepo, old: str = "v1", new: str = "v2") -> list[tuple[str, str, list[str]]]:
    diff = diff_catalogs(
        open_catalog(old, repo=str(repo.path), options=OPTIONS), open_catalog(new, repo=str(repo.path), options=OPTIONS)
    )
    out = []
    for change in diff.changes:
        if change.kind.value == "unchanged":
            continue
        line = change.new or change.old
        assert line is not None
        out.append((change.kind.value, line.record.errorMessage, list(change.fields)))
    return out


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({"pkg/a.py": BASE}, tag="v1")
    return git_repo


def test_line_shift_within_its_function_is_unchanged(repo: GitRepo) -> None:
    """Only another function or file makes a move: a shifted file shows no change at all."""
    repo.commit({"pkg/a.py": '"""A new header."""\n\nimport os\n\n' + BASE}, tag="v2")
    assert changes(repo) == []


def test_check_moved_into_another_method_is_moved(repo: GitRepo) -> None:
    source = BASE.replace(
        '        if n < 0:\n            raise ValueError("n must not be negative.")\n', "        self._sign(n)\n"
    )
    source += '\n    def _sign(self, n):\n        if n < 0:\n            raise ValueError("n must not be negative.")\n'
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert ("moved", "n must not be negative.", ["lineNumber", "function"]) in changes(repo)


def test_reworded_message_is_one_change(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": BASE.replace("must not be negative.", "must be zero or positive.")}, tag="v2")
    assert changes(repo) == [("reworded", "n must be zero or positive.", ["errorMessage"])]


def test_changed_condition_is_modified(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": BASE.replace("if n < 0:", "if n < 0 and self.strict:")}, tag="v2")
    assert changes(repo) == [("modified", "n must not be negative.", ["conditions"])]


def test_renamed_module_is_moved_with_file_path(repo: GitRepo) -> None:
    repo.commit({"pkg/a.py": None, "pkg/b.py": BASE}, tag="v2")
    assert [fields for _, _, fields in changes(repo)] == [["filePath"]] * 3


def test_added_and_removed(repo: GitRepo) -> None:
    source = BASE.replace('        raise ValueError("other is not supported with this backend.")\n', "        pass\n")
    source += '\ndef fresh():\n    raise ValueError("a brand new check about tokens.")\n'
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert changes(repo) == [
        ("added", "a brand new check about tokens.", []),
        ("removed", "other is not supported with this backend.", []),
    ]


def test_unrelated_messages_in_different_functions_are_not_paired(repo: GitRepo) -> None:
    source = BASE.replace("other is not supported with this backend.", "other requires the backend to be enabled.")
    repo.commit({"pkg/a.py": source}, tag="v2")
    assert [kind for kind, _, _ in changes(repo)] == ["added", "removed"]


def test_similarity_is_on_words() -> None:
    assert similarity("a b c d", "a b c d") == 1.0
    assert similarity("max tokens too small", "max tokens too large") == 0.75
    assert similarity("abc", "abd") == 0.0  # no shared word, however alike the characters


def test_cli_json_markdown_and_exit_codes(
    repo: GitRepo, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    repo.commit({"pkg/a.py": BASE.replace("must not be negative.", "must be zero or positive.")}, tag="v2")
    common = ["--repo", str(repo.path), "--path", "pkg"]
    assert main(["diff", "v1", "v1", *common]) == 0
    same = json.loads(capsysbinary.readouterr().out)
    assert same["summary"] == {"added": 0, "removed": 0, "reworded": 0, "moved": 0, "modified": 0, "unchanged": 3}
    assert same["changes"] == []

    assert main(["diff", "v1", "v2", *common]) == 1
    document = json.loads(capsysbinary.readouterr().out)
    assert list(document) == ["old", "new", "summary", "changes"]
    assert document["old"]["records"] == document["new"]["records"] == 3
    (change,) = document["changes"]
    assert (change["kind"], change["fields"], change["id"]) == ("reworded", ["errorMessage"], change["new"]["id"])
    assert change["old"]["errorMessage"] == "n must not be negative."

    assert main(["diff", "v1", "v2", *common, "--format", "markdown", "--output", str(tmp_path / "d.md")]) == 1
    markdown = (tmp_path / "d.md").read_text()
    assert "| reworded | 1 |" in markdown
    assert "| n must ~~not~~ be ~~negative.~~ | n must be **zero or positive.** |" in markdown


def test_written_catalogs_are_inputs_and_are_reused(
    repo: GitRepo, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    repo.commit({"pkg/a.py": BASE}, tag="v2")
    root = tmp_path / "catalogs"
    assert main(["--repo", str(repo.path), "--sha", "v1", "--path", "pkg", "--output", str(root)]) == 0
    (directory,) = root.iterdir()
    capsysbinary.readouterr()
    assert main(["diff", str(directory), str(directory / "records.jsonl")]) == 0
    # A revision whose catalog was written for the same scope is read back, not extracted again.
    records = directory / "records.jsonl"
    lines = [orjson.loads(raw) for raw in records.read_bytes().splitlines()]
    lines[0]["record"]["errorMessage"] = "tampered"
    records.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    # ... as long as it is whole: its manifest holds the checksum of what records.jsonl now holds.
    manifest = orjson.loads((directory / "manifest.json").read_bytes())
    manifest["recordsSha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    (directory / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert main(["diff", "v1", "v2", "--repo", str(repo.path), "--path", "pkg", "--catalog-root", str(root)]) == 1
    assert b"tampered" in capsysbinary.readouterr().out


def test_corrupt_catalog_is_one_line_naming_file_and_line(repo: GitRepo, tmp_path: Path) -> None:
    bad = tmp_path / "records.jsonl"
    bad.write_text('{"record": {}}\n')
    result = subprocess.run(
        [sys.executable, "-m", "extractor", "diff", str(bad), "v1", "--repo", str(repo.path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {bad}:1: not a catalog line")
    assert len(result.stderr.splitlines()) == 1


def synthetic(entries: list[tuple[str, str, str]], *, sha: str = "a" * 40, revision: str = "r") -> LoadedCatalog:
    """A catalog of (file, function, message) checks, built without extracting anything."""
    lines = []
    for number, (path, function, message) in enumerate(entries, start=1):
        record = construct(
            Record,
            id=f"{hash((path, message)) & (2**64 - 1):016x}",
            repo="o/n",
            slug=f"s{number}",
            errorMessage=message,
            messagePattern=".*",
            errorType="validation",
            errorClass="ValueError",
            filePath=path,
            lineNumber=number,
            sourceCode="",
            sourceCodeStart=number,
            sourceCodeEnd=number,
            githubUrl=f"https://github.com/o/n/blob/{sha}/{path}#L{number}",
            analyzedSha=sha,
            analyzedAt="2026-01-01T00:00:00.000Z",
        )
        extraction = construct(
            Extraction,
            placeholders=[],
            conditions=[],
            function=function,
            cause=None,
            messageKind="literal",
            messageSource=None,
            column=0,
            endLineNumber=number,
            warnings=[],
        )
        lines.append(construct(CatalogLine, record=record, extraction=extraction, datasetVersion=record.analyzedAt))
    return LoadedCatalog(tuple(lines), None, sha, revision)


def test_reworded_pairs_are_found_through_an_index_in_seconds() -> None:
    """6,000 checks, every one reworded, ten to a file: pairing them is not quadratic (24,000 took hours
    when it was; a sixteenth of that is still far beyond the bound)."""
    import time

    old = synthetic(
        [
            (f"pkg/m{i // 10}.py", "f", f"option opt{i} of the engine must be set when mode{i} is on")
            for i in range(6_000)
        ]
    )
    new = synthetic(
        [(f"pkg/m{i // 10}.py", "f", f"the engine requires opt{i} when mode{i} is on") for i in range(6_000)]
    )
    started = time.monotonic()
    diff = diff_catalogs(old, new)
    assert time.monotonic() - started < 15  # 1.5 s here, 4 s on a 2-core machine shared with five other jobs
    assert diff.summary["reworded"] == 6_000
    assert all(
        c.old and c.new and c.old.record.errorMessage.split()[1] == c.new.record.errorMessage.split()[3]
        for c in diff.changes
    )


def test_indexed_pairs_are_exactly_the_pairs_that_can_score() -> None:
    """The word index finds every pair of the same file and class scoring WITHIN_FUNCTION or more."""
    import random

    chance = random.Random(18)
    vocabulary = ["a", "b", "c", "d", "e", "f", "g", "h"]

    def message() -> str:
        return " ".join(chance.choice(vocabulary) for _ in range(chance.randint(0, 7)))

    old = synthetic([(f"p{chance.randint(0, 2)}.py", "f", message()) for _ in range(150)])
    new = synthetic([(f"p{chance.randint(0, 2)}.py", "f", message()) for _ in range(150)])
    found = {(id(a), id(b)) for a, b, score in _similar_pairs(old.lines, new.lines) if score >= 0.5}
    expected = {
        (id(a), id(b))
        for a in old.lines
        for b in new.lines
        if a.record.filePath == b.record.filePath and similarity(a.record.errorMessage, b.record.errorMessage) >= 0.5
    }
    assert found == expected and len(expected) > 500


def test_markdown_titles_two_nights_of_one_branch_by_their_shas() -> None:
    old = synthetic([("p.py", "f", "x must be set")], sha="1" * 40, revision="refs/heads/main")
    new = synthetic([("p.py", "f", "x must be positive")], sha="2" * 40, revision="refs/heads/main")
    assert render_markdown(diff_catalogs(old, new)).splitlines()[0] == (
        "# Error catalog changes: 111111111111 → 222222222222"
    )

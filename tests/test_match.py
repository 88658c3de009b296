"""Matching rendered errors and logs back to records, with the values each placeholder took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extractor.extract import ExtractOptions, extract
from extractor.match import Matcher
from tests.conftest import GitRepo

SOURCE = """\
def check(self, n, max_model_len, msg):
    if n < max_model_len:
        raise ValueError(f"max_num_batched_tokens ({self.n}) is smaller than max_model_len ({max_model_len}).")
    if n:
        raise ValueError(f"Got {n=} and {max_model_len = }.")
    if msg:
        raise ValueError(msg)
    raise ValueError(f"Unknown dtype: {n!r}")
    raise ValueError(f"Unknown dtype: {n!r} (choose one of {max_model_len})")
    raise TypeError(msg)
"""


@pytest.fixture
def catalog_repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({"pkg/a.py": SOURCE}, tag="v1")
    return git_repo


@pytest.fixture
def matcher(catalog_repo: GitRepo) -> Matcher:
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    return Matcher(extract(repo=str(catalog_repo.path), revision="v1", options=options).lines)


def found(matcher: Matcher, text: str) -> list[tuple[int, dict[str, str]]]:
    return [(m.line.record.lineNumber, m.values) for m in matcher.match(text).matches]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("max_num_batched_tokens (2048) is smaller than max_model_len (32768).", id="bare message"),
        pytest.param(
            "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768).", id="class prefix"
        ),
        pytest.param(
            "ERROR 11-29 17:35:18 [core.py:123] ValueError: max_num_batched_tokens (2048) is smaller than "
            "max_model_len (32768).",
            id="log prefix",
        ),
        pytest.param(
            "(EngineCore pid=42) ERROR 11-29 17:35:18 [core.py:123] EngineCore failed: max_num_batched_tokens "
            "(2048) is smaller than max_model_len (32768).\n",
            id="log prefix without class",
        ),
    ],
)
def test_prefixes_around_the_message_are_tolerated(matcher: Matcher, text: str) -> None:
    assert found(matcher, text) == [(3, {"self.n": "2048", "max_model_len": "32768"})]


def test_debug_placeholder_value_is_what_follows_the_equals(matcher: Matcher) -> None:
    assert found(matcher, "ValueError: Got n=256 and max_model_len = 512.") == [
        (5, {"n": "256", "max_model_len": "512"})
    ]


def test_the_template_covering_most_literal_text_wins(matcher: Matcher) -> None:
    assert found(matcher, "ValueError: Unknown dtype: 'fp9' (choose one of ['fp8'])") == [
        (9, {"n": "'fp9'", "max_model_len": "['fp8']"})
    ]
    assert found(matcher, "ValueError: Unknown dtype: 'fp9'") == [(8, {"n": "'fp9'"})]


def test_placeholder_only_messages_need_their_class_and_come_last(matcher: Matcher) -> None:
    assert found(matcher, "something nobody wrote") == []
    assert found(matcher, "ValueError: something nobody wrote") == [(7, {"msg": "something nobody wrote"})]
    assert found(matcher, "TypeError: something nobody wrote") == [(10, {"msg": "something nobody wrote"})]


def test_error_looking_lines_are_reported_even_unmatched(matcher: Matcher) -> None:
    assert matcher.match("ERROR 11-29 17:35:18 [core.py:1] engine died").is_error
    assert matcher.match("KeyError: 'x'").is_error
    assert not matcher.match("INFO 11-29 17:35:18 [core.py:1] all good").is_error
    assert not matcher.match('  File "x.py", line 3, in <module>').is_error


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "extractor", "match", *args], input=stdin, capture_output=True, text=True
    )


def test_log_on_stdin_yields_one_line_per_error(catalog_repo: GitRepo) -> None:
    log = "\n".join(
        [
            "INFO 11-29 17:35:17 [core.py:9] Starting",
            "ERROR 11-29 17:35:18 [core.py:123] ValueError: Got n=256 and max_model_len = 512.",
            "Traceback (most recent call last):",
            '  File "x.py", line 3, in <module>',
            "    raise ValueError(",
            "ValueError: max_num_batched_tokens (1) is smaller than max_model_len (2).",
        ]
    )
    result = run("--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg", stdin=log)
    assert result.returncode == 0, result.stderr
    outputs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[m["lineNumber"] for m in o["matches"]] for o in outputs] == [[5], [3]]
    assert outputs[0]["matches"][0]["values"] == {"n": "256", "max_model_len": "512"}
    assert set(outputs[0]["matches"][0]) == {
        "id",
        "slug",
        "filePath",
        "lineNumber",
        "githubUrl",
        "errorMessage",
        "values",
    }


def test_unrelated_text_exits_1_and_text_format(catalog_repo: GitRepo) -> None:
    result = run(
        "--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg", "--format", "text", "hello world"
    )
    assert (result.returncode, result.stdout) == (1, "hello world\n  no matching record\n")
    result = run("--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg", stdin="just chatter\n")
    assert (result.returncode, result.stdout) == (1, "")


def test_corrupt_catalog_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "records.jsonl"
    bad.write_text("{not json\n")
    result = run("--catalog", str(bad), "x")
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {bad}:1: not JSON")


def test_touching_placeholders_are_one_value_and_unprinted_items_none(git_repo: GitRepo) -> None:
    """`{a}{b}` could split its text anywhere: one value under the run's text; a list item that was not
    appended (an optional part of the pattern) gives no value at all."""
    source = (
        "def f(a, b, c):\n"
        "    if a:\n"
        "        raise ValueError(f'Weight {a}{b} is not divisible by {c}.')\n"
        "    errors = [f'The adapter {a} cannot be loaded here:']\n"
        "    if b:\n"
        "        errors.append(f'bad rank {b}.')\n"
        "    raise ValueError(' '.join(errors))\n"
    )
    git_repo.commit({"pkg/a.py": source}, tag="v1")
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    matcher = Matcher(extract(repo=str(git_repo.path), revision="v1", options=options).lines)
    assert found(matcher, "Weight 1024x3 is not divisible by 64.") == [(3, {"{a}{b}": "1024x3", "c": "64"})]
    assert found(matcher, "The adapter x cannot be loaded here:") == [(7, {"a": "x"})]
    assert found(matcher, "The adapter x cannot be loaded here: bad rank 8.") == [(7, {"a": "x", "b": "8"})]

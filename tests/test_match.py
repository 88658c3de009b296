"""Matching rendered errors and logs back to records, with the values each placeholder took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    return Matcher.of_lines(extract(repo=str(catalog_repo.path), revision="v1", options=options).lines)


def found(matcher: Matcher, text: str) -> list[tuple[int, dict[str, str]]]:
    return [(m.site.lineNumber, m.values) for m in matcher.match(text).matches]


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


def weak(matcher: Matcher, text: str) -> list[tuple[int, dict[str, str]]]:
    return [(m.site.lineNumber, m.values) for m in matcher.match(text).weak]


def test_placeholder_only_messages_need_their_class_and_are_only_weak(matcher: Matcher) -> None:
    """A message that is all placeholder explains nothing: it is never a confident answer (was: a match)."""
    assert found(matcher, "something nobody wrote") == weak(matcher, "something nobody wrote") == []
    assert found(matcher, "ValueError: something nobody wrote") == []
    assert weak(matcher, "ValueError: something nobody wrote") == [(7, {"msg": "something nobody wrote"})]
    assert weak(matcher, "TypeError: something nobody wrote") == [(10, {"msg": "something nobody wrote"})]


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
        "how",
        "partial",
        "score",
        "normalized",
    }
    # "Got n=" " and max_model_len = " "." explain 28 of the 34 characters
    assert (outputs[0]["matches"][0]["how"], outputs[0]["matches"][0]["score"]) == ("exact", 0.824)


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


SHAPES = '''\
def check(self, world_size, gpus, n, backend, what, detail, length):
    if world_size > gpus:
        raise ValueError(
            f"World size ({world_size}) is larger than the number of available GPUs ({gpus}) in this node. "
            "If this is intentional and you are using Ray, start a cluster first."
        )
    if n:
        raise ValueError(f"Invalid value {n} for num_speculative_tokens.")
    if length:
        raise ValueError(f"This model's maximum context length is {length} tokens. However, you requested {n} tokens.")
    if gpus:
        raise ValueError(f"`--max-model-len` ({length}) must not exceed the model's limit of {n}.")
    if backend:
        raise ValueError(f"Unknown executor backend {backend}.")
    if what:
        raise RuntimeError(f"{what}: {detail}")
    if detail:
        raise ValueError(f"Cannot load the weights of {n}.\\nCheck the path {what} and retry with a full checkpoint.")
    raise ValueError(f"Expected a newline-ended list of {n} items:\\n")
'''
WORLD = (
    "World size (8) is larger than the number of available GPUs (4) in this node. If this is intentional and you "
    "are using Ray, start a cluster first."
)
SPEC = "Invalid value 7 for num_speculative_tokens."
LIMIT = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
PREFIX = "ERROR 11-29 17:35:18 [core.py:123] "

# (paste, line of the raise, how, normalization steps): one per shape users paste, from issue #13's table.
SHAPE_CASES = [
    pytest.param(f"ValueError: {WORLD[:100]}", 3, "partial", [], id="text cut"),
    pytest.param(f"`ValueError: {WORLD}`", 3, "normalized", ["markdown"], id="inline code"),
    pytest.param(f"**ValueError: {SPEC}**", 8, "normalized", ["markdown"], id="bold"),
    pytest.param(f"> ValueError: {SPEC}", 8, "normalized", ["markdown"], id="quote block"),
    pytest.param(f'"ValueError: {SPEC}"', 8, "normalized", ["quotes"], id="quote marks"),
    pytest.param(f"ValueError: {WORLD[:60]} ...", 3, "partial", ["ellipsis"], id="cut with an ellipsis"),
    pytest.param(f"ValueError: {SPEC[:-1]}", 8, "normalized", ["period"], id="final period dropped"),
    pytest.param(
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"" + LIMIT + "\", 'type': "
        "'BadRequestError', 'param': None, 'code': 400}",
        10,
        "normalized",
        ["embedded"],
        id="openai client wrapper",
    ),
    pytest.param(f"400 {LIMIT} None", 10, "normalized", ["http"], id="http status wrapper"),
    pytest.param(
        "ValueError: --max-model-len (5000) must not exceed the model's limit of 4096.",
        12,
        "normalized",
        ["backticks"],
        id="backticks lost",
    ),
    pytest.param(
        f"  Value error, {SPEC} [type=value_error, input_value=ArgsKwargs((), {{}}), input_type=ArgsKwargs]",
        8,
        "normalized",
        ["pydantic"],
        id="pydantic value error",
    ),
    pytest.param(
        f"RuntimeError: Worker failed with error '{SPEC}', please check the stack trace above for the root cause",
        8,
        "normalized",
        ["embedded"],
        id="quoted inside another error",
    ),
    pytest.param(
        f"Exception in worker VllmWorkerProcess while processing method load_model: {SPEC}, Traceback (most recent "
        "call last):",
        8,
        "normalized",
        ["embedded"],
        id="worker exception with traceback tail",
    ),
    pytest.param("ValueError: Expected a newline-ended list of 3 items:", 19, "exact", [], id="template ends in newline"),
    pytest.param('raise ValueError(f"Unknown executor backend {backend}.")', 14, "source", [], id="raise line"),
    pytest.param(f"报错ValueError: {SPEC}", 8, "exact", [], id="glued text"),
    pytest.param(
        f"{PREFIX}ValueError: Cannot load the weights of m.\n{PREFIX}Check the path /x and retry with a full checkpoint.",
        18,
        "normalized",
        ["log-prefix"],
        id="log prefix on every line",
    ),
    pytest.param(f"\x1b[0;36m{PREFIX}\x1b[0mValueError: {SPEC}", 8, "normalized", ["ansi"], id="ansi escapes"),
    pytest.param(f"^[[0;36m{PREFIX}^[[0mValueError: {SPEC}", 8, "normalized", ["ansi"], id="ansi spelled out"),
    pytest.param(f"ValueError: {LIMIT.replace(chr(39), '&#x27;')}", 10, "normalized", ["html"], id="html entity"),
]


@pytest.fixture(scope="module")
def shapes_output(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """Every pasted shape through `match` in one subprocess run, one JSON answer per TEXT, in order."""
    repo = GitRepo(tmp_path_factory.mktemp("shapes"))
    repo.commit({"pkg/a.py": SHAPES}, tag="v1")
    texts = [case.values[0] for case in SHAPE_CASES]
    result = run("--catalog", "v1", "--repo", str(repo.path), "--path", "pkg", "--exception", "*", *texts)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(("text", "line", "how", "steps"), SHAPE_CASES)
def test_each_pasted_shape_finds_its_record(
    shapes_output: list[dict[str, Any]], text: str, line: int, how: str, steps: list[str]
) -> None:
    (output,) = [o for o in shapes_output if o["input"] == text.rstrip("\n")]
    assert [(m["lineNumber"], m["how"], m["normalized"], m["partial"]) for m in output["matches"]] == [
        (line, how, steps, how == "partial")
    ]

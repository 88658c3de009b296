"""Matching rendered errors and logs back to records, with the values each placeholder took."""

from __future__ import annotations

import io
import json
import select
import subprocess
import sys
import tarfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from extractor.pipeline.extract import ExtractOptions, extract
from extractor.query.match.matcher import Matcher
from extractor.query.match.score import CONFIDENT_BITS
from tests.conftest import GitRepo, cli, matcher_of
from tests.test_release import Index

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


def run(*args: str, stdin: str = "", process: bool = False) -> subprocess.CompletedProcess[str]:
    """`extractor match ARGS` in this process, or (`process`, for the tests of its exit status) as one."""
    if not process:
        return cli("match", *args, input=stdin)
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
        "bits",
        "normalized",
    }
    assert outputs[0]["matches"][0]["bits"] >= CONFIDENT_BITS
    # "Got n=" " and max_model_len = " "." explain 23 of the 29 characters, spaces aside
    assert (outputs[0]["matches"][0]["how"], outputs[0]["matches"][0]["score"]) == ("exact", 0.793)


def test_a_log_as_text_shows_the_lines_answered_then_one_line_for_all(catalog_repo: GitRepo) -> None:
    """In a log, a line no record answers is noise: text shows the answers, then how many lines were read and
    answered (JSON keeps one object for each line that holds a message, answered or not)."""
    log = "\n".join(
        [
            "INFO 11-29 17:35:17 [core.py:9] Starting",
            "ERROR 11-29 17:35:18 [core.py:123] ValueError: Got n=256 and max_model_len = 512.",
            "ERROR 11-29 17:35:19 [core.py:130] RuntimeError: the engine died of something else",
            "WARNING 11-29 17:35:19 [core.py:131] retrying",
            "KeyError: 'no such thing here'",
            "INFO 11-29 17:35:20 [core.py:140] done",
        ]
    )
    base = ("--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg")
    text = run(*base, "--format", "text", stdin=log)
    assert text.returncode == 0, text.stderr
    assert "no matching record" not in text.stdout and "something else" not in text.stdout
    assert text.stdout.startswith("ERROR 11-29 17:35:18 [core.py:123] ValueError: Got n=256 and max_model_len = 512.\n")
    assert text.stdout.endswith("\n6 lines, 1 answered\n")
    as_json = [json.loads(line) for line in run(*base, stdin=log).stdout.splitlines()]
    assert [bool(document["matches"]) for document in as_json] == [True, False, False]
    nothing = run(*base, "--format", "text", stdin="just chatter\n", process=True)
    assert (nothing.returncode, nothing.stdout) == (1, "1 line, 0 answered\n")


def test_unrelated_text_exits_1_and_text_format(catalog_repo: GitRepo) -> None:
    result = run(
        "--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg", "--format", "text", "hello world"
    )
    # (the scope: --path pkg, and every class, match's default where no --exception narrows it)
    assert (result.returncode, result.stdout) == (
        1,
        "hello world\n  no matching record\n  in revision v1, scope pkg (every class)\n",
    )
    result = run(
        "--catalog", "v1", "--repo", str(catalog_repo.path), "--path", "pkg", stdin="just chatter\n", process=True
    )
    assert (result.returncode, result.stdout) == (1, "")


def test_a_raise_without_a_message_answers_only_a_paste_without_one(git_repo: GitRepo) -> None:
    """`raise ValueError` prints nothing after the class: it is no answer, not even a weak one, to a message."""
    git_repo.commit({"pkg/a.py": "def f(x):\n    if x:\n        raise ValueError\n    raise ValueError(x)\n"}, tag="v1")
    options = ExtractOptions(paths=("pkg",))
    matcher = Matcher.of_lines(extract(repo=str(git_repo.path), revision="v1", options=options).lines)
    lines = {text: [m.site.lineNumber for m in matcher.match(text).weak] for text in ("ValueError", "ValueError: no")}
    assert lines == {"ValueError": [3, 4], "ValueError: no": [4]}


def test_a_message_others_print_too_is_answered_weakly_and_said_to_be_theirs(git_repo: GitRepo) -> None:
    """A template copying the interpreter's own message cannot tell a paste of it from Python's: weak, and the
    answer says Python prints it (`elsewhere`); argparse's usage error is said to be argparse's, of the command
    the paste names; the catalog's own message stays confident."""
    source = (
        "def load(name, spec, key):\n"
        "    if spec is None:\n"
        "        raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "    raise ValueError(f'No plugin named {name!r} for key {key}')\n"
    )
    git_repo.commit({"pkg/a.py": source}, tag="v1")
    matcher = Matcher.of_lines(
        extract(repo=str(git_repo.path), revision="v1", options=ExtractOptions(paths=("pkg",), exceptions=("*",))).lines
    )
    python = matcher.match("ModuleNotFoundError: No module named 'vllm._C'")
    assert (python.matches, [m.site.lineNumber for m in python.weak]) == ((), [3])
    (said,) = python.to_json()["elsewhere"]
    assert (said["library"], said["errorClass"], said["errorMessage"]) == (
        "python", "ModuleNotFoundError", "No module named '{name}'"
    )  # fmt: skip
    assert said["values"] == {"name": "vllm._C"}
    assert "raised by Python itself (ModuleNotFoundError" in python.to_text()
    usage = matcher.match("vllm serve: error: argument --dtype: invalid choice: 'fp9' (choose from 'auto', 'half')")
    assert (usage.matches, usage.weak, [s.elsewhere.library for s in usage.elsewhere]) == ((), (), ["argparse"])
    assert "an argparse usage error of `vllm serve`: see `vllm serve --help`" in usage.to_text()
    own = matcher.match("ValueError: No plugin named 'x' for key 3")
    assert ([m.site.lineNumber for m in own.matches], own.elsewhere) == ([4], ())


def test_corrupt_catalog_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "records.jsonl"
    bad.write_text("{not json\n")
    result = run("--catalog", str(bad), "x", process=True)
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {bad}:1: not JSON")


def test_a_catalog_is_named_by_its_folder_its_records_or_its_manifest(shapes_repo: GitRepo, tmp_path: Path) -> None:
    from extractor.pipeline.write import write_catalog

    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    catalog = extract(repo=str(shapes_repo.path), revision="v1", options=options)
    write_catalog(catalog.encoded, catalog.manifest, tmp_path / "cat")
    answers = [
        cli("match", "--catalog", str(tmp_path / "cat" / name), f"ValueError: {SPEC}").stdout
        for name in ("", "records.jsonl", "manifest.json")
    ]
    assert answers[0] == answers[1] == answers[2] and json.loads(answers[0])["matches"][0]["lineNumber"] == 8


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
    matcher = Matcher.of_lines(extract(repo=str(git_repo.path), revision="v1", options=options).lines)
    assert found(matcher, "Weight 1024x3 is not divisible by 64.") == [(3, {"{a}{b}": "1024x3", "c": "64"})]
    assert found(matcher, "The adapter x cannot be loaded here:") == [(7, {"a": "x"})]
    assert found(matcher, "The adapter x cannot be loaded here: bad rank 8.") == [(7, {"a": "x", "b": "8"})]


SHAPES = """\
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
    raise ValueError("Speculative decoding cannot run with pipeline parallelism in this release yet.")
    raise ValueError(f"{what} is not a known configuration field of this engine")
    raise KeyError(f"Tool parser '{what}' not found.")
    raise ValueError("For these weights, input quantization must also be this format ", f"or None, found {what}")
    raise ValueError(f"Unknown quantization method: {what}. Must be one of {detail}.")
    raise ValueError("You must set `--enable-thing` to input `thing_embeds`")
    raise ValueError("You must set `--enable-thing` to input `thing_embeds`.")
    errors = []
    if n:
        errors.append(f"LoRA rank {n} is greater than max_lora_rank {length}.")
    if what:
        errors.append("Adapter bias is not supported.")
    raise ValueError(f"{' '.join(errors)}")
    raise ValueError(f"Model architectures {what} are not supported. Supported architectures: {detail}")
"""
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
    pytest.param(f"ValueError: {LIMIT[:58]}", 10, "partial", [], id="text cut inside a later literal"),
    pytest.param(
        "ValueError: Speculative decoding cannot run with pipeline paral", 20, "partial", [], id="text cut, no value"
    ),
    pytest.param(f"`ValueError: {WORLD}`", 3, "exact", [], id="inline code"),
    pytest.param(f"**ValueError: {SPEC}**", 8, "exact", [], id="bold"),
    pytest.param(f"> ValueError: {SPEC}", 8, "exact", [], id="quote block"),
    pytest.param(f'"ValueError: {SPEC}"', 8, "exact", [], id="quote marks"),
    pytest.param(f"ValueError: {WORLD[:60]} ...", 3, "partial", ["ellipsis"], id="cut with an ellipsis"),
    pytest.param(f"ValueError: {SPEC[:-1]}", 8, "normalized", ["period"], id="final period dropped"),
    pytest.param(
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"" + LIMIT + "\", 'type': "
        "'BadRequestError', 'param': None, 'code': 400}",
        10,
        "exact",
        [],
        id="openai client wrapper",
    ),
    pytest.param(f"400 {LIMIT} None", 10, "exact", [], id="http status wrapper"),
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
        "exact",
        [],
        id="pydantic value error",
    ),
    pytest.param(
        f"RuntimeError: Worker failed with error '{SPEC}', please check the stack trace above for the root cause",
        8,
        "exact",
        [],
        id="quoted inside another error",
    ),
    pytest.param(
        f"Exception in worker VllmWorkerProcess while processing method load_model: {SPEC}, Traceback (most recent "
        "call last):",
        8,
        "exact",
        [],
        id="worker exception with traceback tail",
    ),
    pytest.param(
        "ValueError: Expected a newline-ended list of 3 items:", 19, "exact", [], id="template ends in newline"
    ),
    pytest.param('raise ValueError(f"Unknown executor backend {backend}.")', 14, "source", [], id="raise line"),
    pytest.param(f"报错ValueError: {SPEC}", 8, "exact", [], id="glued text"),
    pytest.param(
        f"{PREFIX}ValueError: Cannot load the weights of m.\n"
        f"{PREFIX}Check the path /x and retry with a full checkpoint.",
        18,
        "normalized",
        ["line-prefix"],
        id="log prefix on every line",
    ),
    pytest.param(f"\x1b[0;36m{PREFIX}\x1b[0mValueError: {SPEC}", 8, "normalized", ["ansi"], id="ansi escapes"),
    pytest.param(f"^[[0;36m{PREFIX}^[[0mValueError: {SPEC}", 8, "normalized", ["ansi"], id="ansi spelled out"),
    pytest.param(f"ValueError: {LIMIT.replace(chr(39), '&#x27;')}", 10, "normalized", ["html"], id="html entity"),
    pytest.param(
        f'Traceback (most recent call last):\n  File "x.py", line 1, in f\nValueError: {SPEC}\n\nThe above exception '
        "was the direct cause of the following exception:\n\nRuntimeError: Engine core initialization failed.",
        8,
        "exact",
        [],
        id="chained traceback",
    ),
    pytest.param(
        f"ValueError: {SPEC}\nINFO 11-29 17:35:19 [launcher.py:1] Shutting down",
        8,
        "exact",
        [],
        id="a log line after it",
    ),
    pytest.param(
        f"{PREFIX}ValueError: Cannot load the weights of m.\r\n{PREFIX}Check the path /x and retry with a full "
        "checkpoint.\r\n",
        18,
        "normalized",
        ["line-prefix"],
        id="windows line ends",
    ),
    pytest.param(f"{PREFIX}EngineCore encountered an issue: ValueError('{SPEC}')", 8, "exact", [], id="repr"),
    pytest.param(f"[Bug]: ValueError: {WORLD[:70]}...", 3, "partial", ["ellipsis"], id="title cut, after a tag"),
    pytest.param(f"[Bug]: {WORLD[:70]}", 3, "partial", [], id="title cut, no class"),
    pytest.param(
        f"{PREFIX}ValueError: max_num_seqs is not a known configuration field of this engine",
        21,
        "exact",
        [],
        id="log prefix, message starting with a value",
    ),
    pytest.param("KeyError: \"Tool parser 'hermes2' not found.\"", 22, "exact", [], id="KeyError's quotes"),
    pytest.param(
        "ValueError: ('For these weights, input quantization must also be this format ', 'or None, found fp8')",
        23,
        "exact",
        [],
        id="several arguments",
    ),
    pytest.param(
        f"ValueError: Unknown quantization method: q. Must be one of {[f'method_{i}' for i in range(40)]}.",
        24,
        "exact",
        [],
        id="a long value",
    ),
    pytest.param(
        "ValueError: Unknown quantization method: q. Must be one of ['awq', 'fp8', 'gpt...",
        24,
        "partial",
        ["ellipsis"],
        id="cut inside the last value",
    ),
    pytest.param(
        "ValueError: You must set `--enable-thing` to input `thing_embeds`", 25, "exact", [], id="no period to add"
    ),
    pytest.param("ValueError: LoRA rank 16 is greater than max_lora_rank 8.", 32, "exact", [], id="optional parts"),
    pytest.param(f"I got this error: `ValueError: {SPEC}`", 8, "exact", [], id="in a sentence"),
    pytest.param(f"ValueError: {WORLD} Any idea?", 3, "exact", [], id="prose after it"),
    pytest.param(f"<pre><code>ValueError: {SPEC}</code></pre>", 8, "exact", [], id="html code"),
    pytest.param(f"ValueError: {LIMIT.replace(chr(39), chr(0x2019))}", 10, "normalized", ["characters"], id="curly"),
    pytest.param(f"ValueError: {LIMIT.replace(chr(39), 'â€™')}", 10, "normalized", ["characters"], id="mojibake"),
    pytest.param(
        f"ValueError: {WORLD.replace('this node', 'this' + chr(0xA0) + 'node').replace('you are', 'you  are')}",
        3,
        "normalized",
        ["characters"],
        id="a space that does not break, two spaces",
    ),
    pytest.param(f"ValueError: {WORLD[:80]}\n{WORLD[80:]}", 3, "exact", [], id="wrapped in a word"),
    pytest.param(
        "(EngineCore_DP0 pid=1) ValueError: Cannot load the weights of m.\n"
        "(EngineCore_DP0 pid=1) Check the path /x and retry with a full checkpoint.",
        18,
        "normalized",
        ["line-prefix"],
        id="a process tag on each line",
    ),
    pytest.param(
        "2025-01-02 12:34:56,789 - vllm - ERROR - ValueError: Cannot load the weights of m.\n"
        "2025-01-02 12:34:57,012 - vllm - ERROR - Check the path /x and retry with a full checkpoint.",
        18,
        "normalized",
        ["line-prefix"],
        id="a time stamp on each line",
    ),
    pytest.param(
        "> ValueError: Cannot load the weights of m.\n> Check the path /x and retry with a full checkpoint.",
        18,
        "normalized",
        ["line-prefix"],
        id="quoted lines",
    ),
    pytest.param(
        f"ValueError: {WORLD[: WORLD.index(' in this')]}\n{WORLD[WORLD.index(' in this') + 1 :]}",
        3,
        "exact",
        [],
        id="wrapped between words",
    ),
    pytest.param(
        "ValueError: Model architectures ['Foo'] are not supported. Supported architectures: dict_keys(['A', 'B'])\n"
        "INFO 11-29 17:35:19 [launcher.py:1] Shutting down",
        33,
        "exact",
        [],
        id="a log line after a message ending in a value",
    ),
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
    (output,) = [o for o in shapes_output if o["input"] == text.rstrip("\r\n")]
    assert [(m["lineNumber"], m["how"], m["normalized"], m["partial"]) for m in output["matches"]] == [
        (line, how, steps, how == "partial")
    ]


@pytest.fixture(scope="module")
def shapes_repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("shapes-repo"))
    repo.commit({"pkg/a.py": SHAPES}, tag="v1")
    return repo


def match_shapes(
    repo: GitRepo, *args: str, stdin: str | bytes = "", process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`extractor match` over the shapes' catalog, in this process, or (`process`: for what the process does
    with its standard input's bytes) as one."""
    scope = ["--catalog", "v1", "--repo", str(repo.path), "--path", "pkg", "--exception", "*"]
    if not process:
        return cli("match", *scope, *args, input=stdin)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    command = [sys.executable, "-m", "extractor", "match", *scope, *args]
    result = subprocess.run(command, input=data, capture_output=True, timeout=60)
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


def test_each_error_of_a_paste_is_answered_in_the_order_they_come(shapes_repo: GitRepo) -> None:
    """A cause and what it caused (a chained traceback, a worker's error then the server's): both answered,
    the first first, and neither's values run into the other."""
    chained = (
        f'Traceback (most recent call last):\n  File "a.py", line 1, in f\nValueError: {WORLD}\n\n'
        "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call "
        f'last):\n  File "b.py", line 2, in <module>\nValueError: {SPEC}'
    )
    lines = f"ValueError: {SPEC}\nKeyError: \"Tool parser 'hermes' not found.\""
    result = match_shapes(shapes_repo, chained, lines)
    answers = [json.loads(line)["matches"] for line in result.stdout.splitlines()]
    assert [[(m["lineNumber"], m["values"]) for m in answer] for answer in answers] == [
        [(3, {"world_size": "8", "gpus": "4"}), (8, {"n": "7"})],
        [(8, {"n": "7"}), (22, {"what": "hermes"})],
    ]


def test_a_long_paste_is_read_to_its_end(shapes_repo: GitRepo) -> None:
    """An issue whose environment report fills the first 16,384 characters still has its error found."""
    body = "### Your current environment\n" + "torch==2.9.0 some-package==1.0\n" * 800
    result = match_shapes(shapes_repo, f"{body}```\nTraceback (most recent call last):\nValueError: {SPEC}\n```")
    (answer,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(m["lineNumber"], m["values"]) for m in answer["matches"]] == [(8, {"n": "7"})]


def test_utf16_on_stdin_is_read_and_a_dash_beside_text_is_refused(shapes_repo: GitRepo) -> None:
    """What Windows PowerShell's `>` writes (UTF-16 behind a byte order mark) is read; `-` (stdin) beside TEXT
    arguments would leave one of them unread, so it is a usage error."""
    data = f"ValueError: {SPEC}\r\nINFO nothing\r\n".encode("utf-16")
    result = match_shapes(shapes_repo, stdin=data, process=True)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["matches"][0]["lineNumber"] for line in result.stdout.splitlines()] == [8]
    refused = match_shapes(shapes_repo, "-", f"ValueError: {SPEC}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "'-'" in refused.stderr


def test_a_byte_order_mark_that_comes_a_byte_at_a_time_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe may hand over the first byte alone: UTF-16 is told from the first two bytes however they come
    (it was decided on what one look held, and the log, read as UTF-8, matched nothing)."""
    import io
    import types

    from extractor.cli.commands import match as command_line

    class Trickle(io.RawIOBase):  # a pipe that hands over one byte at a time
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            taken, self.data = self.data[:1], self.data[1:]
            buffer[: len(taken)] = taken
            return len(taken)

    for text in ("ValueError: x\r\nINFO y\n", "a\n\nb"):
        for encoding in ("utf-16", "utf-8"):
            stdin = types.SimpleNamespace(buffer=io.BufferedReader(Trickle(text.encode(encoding))))
            monkeypatch.setattr(command_line.sys, "stdin", stdin)
            read = "".join(command_line._stdin_lines())
            assert read == text, (encoding, read)


def test_a_line_with_no_end_is_read_in_bounded_memory(monkeypatch: pytest.MonkeyPatch, shapes_repo: GitRepo) -> None:
    """A log line of 64 MB (or `< /dev/zero`) is held as its head and its tail, all match reads of a line,
    never whole; the lines after it are read as ever, in UTF-8 and in UTF-16."""
    import io
    import types

    from extractor.cli.commands import match as command_line
    from extractor.query.match.matcher import MAX_LINE

    class Endless(io.RawIOBase):  # a start, `size` times one character, then the rest, made as they are read
        def __init__(self, start: bytes, unit: bytes, size: int, after: bytes) -> None:
            self.start, self.unit, self.left, self.after = start, unit, size, after

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            if self.start:
                taken, self.start = self.start[: len(buffer)], self.start[len(buffer) :]
            elif self.left:
                taken = self.unit * min(self.left, len(buffer) // len(self.unit))
                self.left -= len(taken) // len(self.unit)
            else:
                taken, self.after = self.after[: len(buffer)], self.after[len(buffer) :]
            buffer[: len(taken)] = taken
            return len(taken)

    for encoding, unit in (("utf-8", "é"), ("utf-16-le", "x")):
        bom = "\ufeff".encode(encoding) if encoding.startswith("utf-16") else b""
        after = "!\nValueError: x\n".encode(encoding)
        stream = io.BufferedReader(Endless(bom, unit.encode(encoding), 32 << 20, after))
        monkeypatch.setattr(command_line.sys, "stdin", types.SimpleNamespace(buffer=stream))
        first, second = command_line._stdin_lines()
        assert first.startswith(unit * MAX_LINE) and first.endswith(unit * (MAX_LINE - 2) + "!\n"), encoding
        assert len(first) <= 8 * MAX_LINE + 2 and second == "ValueError: x\n", encoding

    data = b"x" * (64 << 20) + f"\nValueError: {SPEC}\n".encode()
    result = match_shapes(shapes_repo, stdin=data, process=True)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["matches"][0]["lineNumber"] for line in result.stdout.splitlines()] == [8]


def test_a_pattern_too_large_for_the_matcher_leaves_out_its_record_alone(git_repo: GitRepo, tmp_path: Path) -> None:
    """A raise of a megabyte-long literal makes a pattern RE2 cannot hold in its memory: the extractor's
    own catalog is still matched, every other record in it, and that one is said in a warning naming
    its file and line (explain's too: it named "catalog:1")."""
    git_repo.commit(
        {
            "vllm/config/a.py": f"raise ValueError('{'A' * 1_000_000}')\n",
            "vllm/config/b.py": "raise ValueError('a normal message that users paste often')\n",
        },
        tag="v1",
    )
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", "-q", cwd=tmp_path).returncode == 0
    (folder,) = (tmp_path / "out").iterdir()
    said = f"extractor: warning: {folder}/records.jsonl:1: a messagePattern of 1,000,000 characters is too large"
    pasted = "ValueError: a normal message that users paste often"
    matched = cli("match", "--catalog", str(folder), pasted)
    assert matched.returncode == 0 and matched.stderr.startswith(said), matched.stderr
    assert [m["filePath"] for m in json.loads(matched.stdout)["matches"]] == ["vllm/config/b.py"]
    explained = cli("explain", "--catalog", str(folder), pasted)
    assert explained.returncode == 0 and explained.stderr.startswith(said), explained.stderr
    assert "vllm/config/b.py:1" in explained.stdout


def test_text_shows_a_placeholder_written_over_several_lines_on_one(git_repo: GitRepo, tmp_path: Path) -> None:
    """A placeholder's expression written over several lines is one line of the answer, spaces squeezed."""
    source = (
        "def f(a, b):\n"
        '    raise ValueError("these names are not known here: {}".format(", ".join(\n'
        "        [a, b]\n"
        "    )))\n"
    )
    git_repo.commit({"vllm/config/a.py": source}, tag="v1")
    result = cli(
        "match",
        "--catalog",
        "v1",
        "--repo",
        str(git_repo.path),
        "--format",
        "text",
        "ValueError: these names are not known here: x, y",
    )
    assert result.returncode == 0, result.stderr
    assert '     ", ".join( [a, b] ) = x, y' in result.stdout.splitlines(), result.stdout


def test_a_message_never_raised_gets_no_confident_answer(shapes_repo: GitRepo) -> None:
    """Text that shares words with templates (`Invalid`, `tokens`) but was never raised: no match, exit 1."""
    texts = [
        "ValueError: The tokenizer has no chat template configured for this model; pass one with --chat-template.",
        "ValueError: Invalid dtype bfloat17 requested for the tokens of this model in this node.",
    ]
    result = match_shapes(shapes_repo, *texts)
    assert result.returncode == 1
    assert [json.loads(line)["matches"] for line in result.stdout.splitlines()] == [[], []]


def test_text_sharing_only_optional_parts_of_a_template_gets_no_confident_answer(shapes_repo: GitRepo) -> None:
    """A template made of optional parts (`' '.join(errors)`) can match an empty rendering: only the literal
    text the input shows counts, so unrelated text with a word of it is no match, and what it printed is."""
    result = match_shapes(
        shapes_repo, "RuntimeError: something LoRA rank failed", "ValueError: Adapter bias is not supported."
    )
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["matches"] == []
    assert [(m["lineNumber"], m["how"]) for m in second["matches"]] == [(32, "exact")]


@pytest.fixture(scope="module")
def shapes_matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("shapes-matcher"), {"pkg/a.py": SHAPES})


BACKENDS = ["xpu", "C:\\new\\tok", 'it\'s "odd"', "tab\there", "em\u2014dash \u00e9", "emoji \U0001f600", "back\\"]


@pytest.mark.parametrize("value", BACKENDS)
@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda m: json.dumps({"detail": m}), id="json detail"),
        pytest.param(lambda m: json.dumps({"error": {"message": m, "code": 400}}, ensure_ascii=False), id="json utf-8"),
        pytest.param(lambda m: f"{PREFIX}EngineCore encountered an issue: ValueError({m!r})", id="repr in a log"),
        pytest.param(lambda m: f"openai.BadRequestError: Error code: 400 - {{'message': {m!r}}}", id="dict repr"),
    ],
)
def test_a_wrapped_message_gives_back_the_values_python_printed(
    shapes_matcher: Matcher, wrap: Callable[[str], str], value: str
) -> None:
    """Whatever quoting wrapped it (JSON with or without \\u escapes, a repr), the value is the one printed."""
    message = f"Unknown executor backend {value}."
    result = shapes_matcher.match(wrap(message))
    assert [(m.site.lineNumber, m.values) for m in result.matches] == [(14, {"backend": value})]


def test_a_catalog_named_twice_is_read_once(shapes_repo: GitRepo, tmp_path: Path) -> None:
    """A revision and the folder written for it are the same catalog: one, not two releases of it."""
    written = catalog_file(shapes_repo, tmp_path).parent
    result = match_shapes(shapes_repo, "--catalog", str(written), f"ValueError: {SPEC}")
    (match,) = json.loads(result.stdout)["matches"]
    assert (match["lineNumber"], "releases" in match) == (8, False)


def test_a_message_holding_what_reads_as_an_html_entity_matches_as_typed(git_repo: GitRepo) -> None:
    """`&amp;` in a message is what the code wrote: the paste is tried as typed too, after unescaping."""
    git_repo.commit({"pkg/a.py": 'def f(a):\n    raise ValueError(f"x &amp; y are both set to {a}, pick one")\n'})
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    matcher = Matcher.of_lines(extract(repo=str(git_repo.path), revision="HEAD", options=options).lines)
    assert found(matcher, "ValueError: x &amp; y are both set to 3, pick one") == [(2, {"a": "3"})]
    assert found(matcher, "ValueError: x &amp;amp; y are both set to 3, pick one") == [(2, {"a": "3"})]


def test_catch_all_records_are_weak_alone(shapes_repo: GitRepo) -> None:
    """`f"{what}: {detail}"` fits anything with a colon: it is listed as weak, never a match, and exit is 1."""
    result = match_shapes(shapes_repo, "RuntimeError: engine core died: see the log above")
    assert result.returncode == 1
    (output,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert output["matches"] == []
    assert [(w["lineNumber"], w["values"]) for w in output["weak"]] == [
        (16, {"what": "engine core died", "detail": "see the log above"})
    ]


@pytest.mark.parametrize(
    ("stdin", "code"),
    [
        pytest.param("", 1, id="empty log"),
        pytest.param("INFO 11-29 17:35:18 [core.py:1] all good\nINFO 11-29 [x] still good\n", 1, id="only INFO"),
        pytest.param(f"{PREFIX}engine died\nValueError: {SPEC}\n", 0, id="one match beside an unrelated ERROR"),
        pytest.param(f"{PREFIX}engine died\n", 1, id="only an unrelated ERROR"),
    ],
)
def test_log_exit_status_follows_grep(shapes_repo: GitRepo, stdin: str, code: int) -> None:
    assert match_shapes(shapes_repo, stdin=stdin).returncode == code


def test_text_exit_status_is_0_only_when_every_text_matched(shapes_repo: GitRepo) -> None:
    assert match_shapes(shapes_repo, f"ValueError: {SPEC}", LIMIT).returncode == 0
    assert match_shapes(shapes_repo, f"ValueError: {SPEC}", "hello world").returncode == 1


def test_non_utf8_bytes_on_stdin_do_not_crash(shapes_repo: GitRepo) -> None:
    stdin = b"ValueError: Invalid value \xff\xfe for num_speculative_tokens.\n"
    result = match_shapes(shapes_repo, stdin=stdin, process=True)
    assert (result.returncode, result.stderr) == (0, "")
    (output,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert output["matches"][0]["values"] == {"n": "\ufffd\ufffd"}


def test_stdin_is_answered_line_by_line_as_it_is_read(shapes_repo: GitRepo) -> None:
    """The answer to a line comes before stdin is closed: match streams, it does not read the log first."""
    command = [sys.executable, "-m", "extractor", "match", "--catalog", "v1", "--repo", str(shapes_repo.path)]
    process = subprocess.Popen(
        [*command, "--path", "pkg", "--exception", "*"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(f"ValueError: {SPEC}\n".encode())
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "no answer while stdin is still open"
        assert json.loads(process.stdout.readline())["matches"][0]["lineNumber"] == 8
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0


def test_patterns_the_extractor_writes_are_linear_in_the_input(git_repo: GitRepo) -> None:
    """`Invalid {name}: {a}, {b}, {c}, {d}.` against 1,226 characters of `", "`: Python's re took >50 s."""
    git_repo.commit({"pkg/a.py": 'raise ValueError(f"Invalid {name}: {a}, {b}, {c}, {d}.")\n'}, tag="v1")
    line = "ValueError: Invalid x: " + ", ".join("y" * 3 for _ in range(240)) + "!"
    assert len(line) > 1200
    started = time.monotonic()
    result = run("--catalog", "v1", "--repo", str(git_repo.path), "--path", "pkg", line)
    assert result.returncode == 1 and time.monotonic() - started < 20


def catalog_file(repo: GitRepo, tmp_path: Path) -> Path:
    out = tmp_path / "cat"
    scope = ["--path", "pkg", "--exception", "*", "--output", str(out), "--quiet"]
    result = cli("--sha", "v1", "--repo", str(repo.path), *scope)
    assert result.returncode == 0, result.stderr
    (records,) = out.glob("*/records.jsonl")
    return records


def with_pattern(records: Path, pattern: str, line: int) -> Path:
    lines = records.read_text().splitlines()
    document = json.loads(lines[line - 1])
    document["record"]["messagePattern"] = pattern
    lines[line - 1] = json.dumps(document)
    bad = records.parent.parent / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    return bad


def test_a_hand_made_catastrophic_pattern_does_not_hang(shapes_repo: GitRepo, tmp_path: Path) -> None:
    records = catalog_file(shapes_repo, tmp_path)
    bad = with_pattern(records, "Invalid value (?P<p0>(a+)+)$", 2)
    started = time.monotonic()
    result = run("--catalog", str(bad), "ValueError: Invalid value " + "a" * 40 + "!")
    assert (result.returncode, result.stderr) == (1, "")
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        pytest.param(
            "Invalid value (?P<p0>.*?",
            "messagePattern does not compile: missing ), unterminated subpattern",
            id="does not compile",
        ),
        pytest.param("Invalid value (?P<other>.*?)", "messagePattern has no group named 'p0'", id="unknown group"),
    ],
)
def test_a_bad_pattern_names_the_file_and_line(
    shapes_repo: GitRepo, tmp_path: Path, pattern: str, message: str
) -> None:
    records = catalog_file(shapes_repo, tmp_path)
    bad = with_pattern(records, pattern, 2)
    result = run("--catalog", str(bad), "anything")
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {bad}:2: {message}"), result.stderr


def sdist(version: str, files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in {**files, "vllm/_version.py": "__commit_id__ = commit_id = 'gabcdef1234'\n"}.items():
            data = textwrap.dedent(text).encode()
            info = tarfile.TarInfo(f"vllm-{version}/{name}")
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


OLD_BACKEND = """\
def pick(backend):
    raise ValueError(f"Unknown executor backend {backend}; choose one of ray, mp or uni.")
"""


@pytest.fixture
def three_releases(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """An index on loopback with 9.8.0 and 9.9.0 (the message moved a line down) and 9.10.0 (reworded)."""
    files = {
        "9.8.0": {"vllm/executor/a.py": OLD_BACKEND},
        "9.9.0": {"vllm/executor/a.py": "import os\n" + OLD_BACKEND},
        "9.10.0": {
            "vllm/executor/a.py": """\
                def pick(backend):
                    raise ValueError(f"Executor backend {backend} is not known; choose ray, mp or uni.")
            """
        },
    }
    index = Index({f"vllm-{v}.tar.gz": sdist(v, f) for v, f in files.items()})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    yield index
    index.server.shutdown()


def test_every_release_at_once(three_releases: Index) -> None:
    """release:A..B matches against each release on the index; each match lists its releases and sites."""
    text = "ValueError: Unknown executor backend xpu; choose one of ray, mp or uni."
    args = ["--catalog", "release:9.8.0..9.10.0", "--path", "vllm", "--exception", "*", text]
    result = run(*args)
    assert result.returncode == 0, result.stderr
    (match,) = json.loads(result.stdout)["matches"]
    assert match["releases"] == ["9.8.0", "9.9.0"]
    assert [(s["releases"], s["filePath"], s["lineNumber"]) for s in match["sites"]] == [
        (["9.8.0"], "vllm/executor/a.py", 2),
        (["9.9.0"], "vllm/executor/a.py", 3),
    ]
    assert (match["lineNumber"], match["values"]) == (3, {"backend": "xpu"})
    assert match["githubUrl"].endswith("/vllm/executor/a.py#L1-L3")  # the newest release's permalink
    hits = three_releases.hits
    assert run(*args).stdout == result.stdout
    assert three_releases.hits == hits  # the list of releases and the merged index come from the cache
    explained = cli("explain", *args[:-1], "--catalog", "release:9.10.0", text)
    assert explained.returncode == 0, explained.stderr
    assert (
        "Releases   raised in 9.8.0 to 9.9.0 at vllm/executor/a.py:2, vllm/executor/a.py:3; reworded in 9.10.0\n"
        in explained.stdout
    )


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("Value error, " + " [type=x" * 2000, id="many pydantic tails"),
        pytest.param("400 " + " " * 16000 + "x", id="http status and spaces"),
        pytest.param("x" + " " * 16000 + ", Traceback (most recent call last):", id="spaces before a traceback tail"),
        pytest.param("```" + " " * 16000 + "x", id="fence and spaces"),
        pytest.param("x" + " " * 16000 + "y...", id="spaces before an ellipsis"),
        pytest.param("ValueError: Invalid value (" + "'\"" * 8000, id="quotes"),
        pytest.param("raise ValueError(" + " " * 16000, id="raise line"),
        pytest.param("ValueError: Invalid value " + "1 for " * 3000, id="a literal repeated"),
    ],
)
def test_normalizing_a_hostile_line_is_linear(matcher: Matcher, line: str) -> None:
    """No cleaning step may backtrack over a long line (a pattern like `\\s*x$` is quadratic on spaces)."""
    started = time.monotonic()
    matcher.match(line)
    assert time.monotonic() - started < 1.0


def test_backticks_kept_in_the_paste_still_match(shapes_repo: GitRepo) -> None:
    result = match_shapes(
        shapes_repo, "ValueError: `--max-model-len` (5000) must not exceed the model's limit of 4096."
    )
    assert result.returncode == 0
    (match,) = json.loads(result.stdout)["matches"]
    assert (match["lineNumber"], match["how"]) == (12, "exact")


def test_a_pattern_with_optional_parts_is_found_by_its_literal_runs() -> None:
    """Patterns with optional parts or alternatives (issue 14 writes them) are indexed by the text between
    their syntax, so they are tried, matched whole, and not taken for catch-alls; a part that did not print
    gives no value."""
    from extractor.query.match.pattern import MatchTemplate, RaisePlace

    site = RaisePlace((), "vllm/lora/a.py", 3, "0123456789abcdef", "lora-rank", "https://x", "check")
    pattern = (
        r"LoRA rank (?P<p0>.*?) is greater than max_lora_rank (?P<p1>.*?)\."
        r"(?: Please use a rank of at most (?P<p2>.*?)\.)?(?:| Also check the adapter\.)"
    )
    template = MatchTemplate(
        "ValueError", "LoRA rank {a} ...", pattern, (("p0", "a"), ("p1", "b"), ("p2", "c")), None, [site]
    )
    matcher = Matcher([template])
    for text, values in [
        ("ValueError: LoRA rank 64 is greater than max_lora_rank 16.", {"a": "64", "b": "16"}),
        (
            "LoRA rank 64 is greater than max_lora_rank 16. Please use a rank of at most 16.",
            {"a": "64", "b": "16", "c": "16"},
        ),
    ]:
        assert [(m.how, m.values, m.confident) for m in matcher.match(text).matches] == [("exact", values, True)]


def test_an_answer_renders_itself_as_text_or_a_json_line_with_the_history_notes_given() -> None:
    """MatchResult.render: text shows each match's place, values (an expression over lines on one), releases,
    link and history note, weak ones marked; JSON gives each confident match a history only when notes are."""
    from extractor.query.match.pattern import MatchTemplate, RaisePlace

    old = RaisePlace(("0.27.0",), "vllm/config/a.py", 3, "0123456789abcdef", "max-len", "", "check")
    new = RaisePlace(("0.28.0",), "vllm/config/a.py", 5, "0123456789abcdef", "max-len", "https://x/a.py#L5", "check")
    pattern = r"max_model_len (?P<p0>.*?) exceeds the model's (?P<p1>.*?)\."
    groups = (("p0", "n"), ("p1", "self.model_config.\n    limit"))
    message = "max_model_len {n} exceeds the model's {limit}."
    template = MatchTemplate("ValueError", message, pattern, groups, None, [old, new], ["0.27.0", "0.28.0"])
    found = Matcher([template]).match("ValueError: max_model_len 4096 exceeds the model's 2048.")
    notes = {"0123456789abcdef": "introduced in 0.27.0"}.get
    assert found.render(format="text", notes=notes) == (
        "ValueError: max_model_len 4096 exceeds the model's 2048.\n"
        "  -> vllm/config/a.py:5  max-len  [0123456789abcdef]  (exact, 38 bits)\n"
        "     n = 4096, self.model_config. limit = 2048\n"
        "     in 2 releases: 0.27.0 .. 0.28.0\n"
        "     https://x/a.py#L5\n"
        "     history: introduced in 0.27.0\n"
    )
    line = found.render(format="json", notes=notes)
    assert line.endswith("}\n") and line.count("\n") == 1
    (match,) = json.loads(line)["matches"]
    assert match == {**found.to_json()["matches"][0], "history": "introduced in 0.27.0"}
    assert "history" not in found.render(format="json") and "history" not in found.render(format="text")

    catch_all = MatchTemplate("ValueError", "{what}", "(?P<p0>.*?)", (("p0", "what"),), None, [new], ["0.28.0"])
    weak = Matcher([catch_all]).match("ValueError: anything")
    assert weak.render(format="text", notes=lambda record_id: None) == (
        "ValueError: anything\n"
        "  no matching record (only weak ones, below)\n"
        "  -> vllm/config/a.py:5  max-len  [0123456789abcdef]  (weak exact, 0 bits)\n"
        "     what = anything\n"
        "     https://x/a.py#L5\n"
    )
    assert "history" not in json.loads(weak.render(format="json", notes=notes))["weak"][0]


SPACED = """\
def check(free, needed, estimated_msg, mode):
    if free < needed:
        raise ValueError(
            f"Not enough KV cache memory ({free} GiB) for the model.{estimated_msg}  Try increasing "
            "gpu_memory_utilization when initializing the engine."
        )
    if mode:
        raise ValueError(f"Unknown attention mode {mode} for this backend; pick another one.")
"""


@pytest.mark.parametrize(
    ("pasted", "line", "values"),
    [
        pytest.param(  # the template's two spaces, one in the paste (a rendered page squeezes them)
            "ValueError: Not enough KV cache memory (3.5 GiB) for the model. Try increasing "
            "gpu_memory_utilization when initializing the engine.",
            3,
            {"free": "3.5", "estimated_msg": ""},
            id="one for two",
        ),
        pytest.param(  # one space in the template, a run of them in the paste
            "ValueError: Unknown attention mode   flash  for this backend;   pick another one.",
            8,
            {"mode": "flash"},
            id="a run for one",
        ),
    ],
)
def test_runs_of_spaces_match_runs_of_spaces(git_repo: GitRepo, pasted: str, line: int, values: dict[str, str]) -> None:
    """A run of spaces in a template's own text meets a run of any length in the paste, as a whole match."""
    git_repo.commit({"pkg/spaced.py": SPACED}, tag="v1")
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    matcher = Matcher.of_lines(extract(repo=str(git_repo.path), revision="v1", options=options).lines)
    result = matcher.match(pasted)
    assert [(m.site.lineNumber, m.values, m.confident) for m in result.matches] == [(line, values, True)]
    assert "trailing-text" not in result.matches[0].normalized

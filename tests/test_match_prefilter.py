"""The prefilter of a log's lines (query/match/prefilter.py): a line it lets pass quietly is one `match` would
show nothing of (no confident answer, nothing that looks like an error), checked over every cut, typo and
shape of the catalogs' messages; and it does let pass the lines of a log that hold no message."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from extractor.query.match.background import background
from extractor.query.match.matcher import Matcher, match_lines
from tests.conftest import matcher_of
from tests.test_match import SHAPES, SOURCE

VALUES = ["7", "auto", "'fp8'", "[1, 2]", "None", "meta-llama/Llama-3.1-8B", ""]
NOISE = [
    "INFO 11-29 17:35:17 [core.py:9] Avg prompt throughput: 12.3 tokens/s, Running: 4 reqs, Waiting: 0 reqs",
    "INFO 11-29 17:35:17 [core.py:9] Chunked prefill is enabled with max_num_batched_tokens=8192.",
    "(EngineCore_DP0 pid=1234) INFO 11-29 17:35:17 [gpu_model_runner.py:1] Model loading took 14.99 GiB",
    'INFO:     127.0.0.1:54321 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '  File "/usr/lib/python3.12/site-packages/vllm/engine/llm_engine.py", line 123, in step',
    "    outputs = self.model_executor.execute_model(scheduler_output)",
    "Traceback (most recent call last):",
    "",
]


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("prefilter"), {"pkg/a.py": SHAPES, "pkg/b.py": SOURCE})


def rendered(matcher: Matcher) -> Iterator[str]:
    """Each template's message with values, several ways (the value list turned for each)."""
    for number, template in enumerate(matcher.templates):
        pieces = template.pieces or template.fragments()
        for turn in range(3):
            values = [VALUES[(number + turn + k) % len(VALUES)] for k in range(len(pieces) - 1)]
            yield "".join(piece + value for piece, value in zip(pieces, [*values, ""], strict=True))


def variants(message: str) -> Iterator[str]:
    """What a log line may show of a message: whole, alone or with prose or a log's prefix around it; cut at
    every length, at its end or at `...`; its final period left out; a letter left out, changed or two swapped
    at every place; in lower case."""
    yield from (message, f"see: {message} thanks", f"INFO 11-29 17:35:17 [core.py:9] {message}", message.lower())
    yield message.rstrip(".")
    for length in range(1, len(message)):
        yield message[:length]
        yield message[:length] + "... and more"
    for at in range(len(message) - 1):
        yield message[:at] + message[at + 1 :]
        yield message[:at] + "x" + message[at + 1 :]
        yield message[:at] + message[at + 1] + message[at] + message[at + 2 :]


def test_a_line_let_pass_quietly_is_one_match_shows_nothing_of(matcher: Matcher) -> None:
    """Every variant of every message: when the prefilter lets it pass, `match` answers it with nothing
    confident and nothing that looks like an error; and it does let many pass (cut short, typed over)."""
    quiet = loud = 0
    wrong = []
    for message in rendered(matcher):
        for text in variants(message):
            if not matcher.quiet(text):
                loud += 1
            elif matcher.match(text).holds_message:
                wrong.append(text)
            else:
                quiet += 1
    assert wrong == []
    assert quiet > 1000 and loud > 1000


@pytest.mark.parametrize("line", NOISE)
def test_a_log_line_holding_no_message_is_let_pass(matcher: Matcher, line: str) -> None:
    assert matcher.quiet(line + "\n")
    assert not matcher.match(line).holds_message


WORLD = "World size (8) is larger than the number of available GPUs (4) in this node."


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("ERROR 11-29 17:35:17 [core.py:9] EngineCore failed to start.", id="error level"),
        pytest.param("(EngineCore_DP0 pid=1) CRITICAL 11-29 17:35:17 [core.py:9] dead", id="critical, tagged"),
        pytest.param("vllm.errors.SomethingError: it broke", id="a class"),
        pytest.param("it broke: RuntimeError", id="a class at the end"),
        pytest.param("  raise ValueError(f'Invalid value {n} for num_speculative_tokens.')", id="a raise"),
        pytest.param("Invalid value 7 for num_speculative_tokens.", id="a message"),
        pytest.param("Invalid value 7 for num_speculative_tokens", id="its period left out"),
        pytest.param(f"INFO 11-29 17:35:17 [core.py:9] {WORLD}", id="after a log's prefix"),
        pytest.param(WORLD.replace("number", "numbre"), id="a typo"),
        pytest.param(WORLD[:50], id="cut"),
        pytest.param(WORLD[:50] + "... (see the docs)", id="cut at dots"),
        pytest.param(f'it said "{WORLD}" and stopped', id="its first sentence quoted"),
    ],
)
def test_a_line_match_shows_is_matched(matcher: Matcher, line: str) -> None:
    assert matcher.match(line).holds_message
    assert not matcher.quiet(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("ModuleNotFoundError: No module named 'vllm._C'", id="python prints it"),
        pytest.param("Invalid&#32;value 7 for num_speculative_tokens.", id="an entity"),
        pytest.param("\x1b[1mInvalid value\x1b[0m 7 for num_speculative_tokens.", id="ANSI"),
        pytest.param("Invalid value 7\rfor num_speculative_tokens.", id="a carriage return"),
        pytest.param("Invalid value 7 for num_speculative_tokens\u2026", id="an ellipsis character"),
        pytest.param("x" * 20_000, id="longer than match reads"),
    ],
)
def test_a_line_the_prefilter_cannot_read_alone_is_matched(matcher: Matcher, line: str) -> None:
    """What Python prints itself after its class (match may answer it weakly, saying so), and what `plain` would
    change."""
    assert not matcher.quiet(line)


def test_what_others_print_is_matched_and_said_to_be_theirs(matcher: Matcher) -> None:
    """Each background message (what the interpreter and argparse print, measured: background.py), its values
    filled in, as a log shows it (after its class; argparse's `prog: error:` as it is), is a line the prefilter
    lets through, and `match` says who prints it."""
    for elsewhere in (held.elsewhere for held in background()):
        text = re.sub(r"\{\w+\}", "zq_value", elsewhere.errorMessage)
        text = text if elsewhere.library == "argparse" else f"{elsewhere.errorClass}: {text}"
        assert not matcher.quiet(text), text
        assert [said.elsewhere for said in matcher.match(text).elsewhere] == [elsewhere], text


@pytest.mark.release
def test_the_prefilter_drops_no_line_match_answers_over_a_whole_release(whole_package_cache: Path) -> None:
    """vLLM 0.28.0's whole package, every class: each record's message pasted in each shape of
    scripts/shapes.py, each line of those, the message cut, typed over and alone, and every real paste of the
    corpus and its lines. A line the prefilter lets pass is never one `match` shows; and a log of them and of
    noise is answered alike with the prefilter and without it."""
    from extractor.model.records import CatalogLine
    from tests.test_site import _shapes

    shapes = _shapes()
    incremental = json.loads((whole_package_cache / "incremental.json").read_text())
    lines = [CatalogLine.model_validate_json(line) for line in incremental["records"].splitlines()]
    matcher = Matcher.of_lines(lines)
    texts: list[str] = []
    for line in lines:
        record = line.model_dump(mode="json", by_alias=True)
        message = shapes.render(record)
        for paste, _ in shapes.SHAPES.values():
            shown = paste(line.record.errorClass, message)
            texts += [shown, *shown.splitlines()]
        texts += [message, message.rstrip("."), message.lower(), message[: len(message) // 2]]
        texts += [message[:40], message[:40] + "...", message[:12] + "x" + message[13:]]
    for corpus in (Path(__file__).parent / "data" / "pastes").glob("*.jsonl"):
        for row in corpus.read_text().splitlines():
            text = json.loads(row)["text"]
            texts += [text, *text.splitlines()]
    quiet = [text for text in dict.fromkeys(texts) if matcher.quiet(text)]
    assert [text for text in quiet if matcher.match(text).holds_message] == []
    assert len(quiet) > 1000  # (cut short, typed over: most of the messages' texts are matched)
    assert all(map(matcher.quiet, NOISE))
    log = texts[:3000] + NOISE * 100
    answered = [result.to_json() for result in match_lines(matcher, log, log=True)]
    every = [result.to_json() for result in map(matcher.match, log) if result.holds_message]
    assert answered == every

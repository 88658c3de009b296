"""A message found wherever it stands in a paste, and answered with confidence only where the text it shows is
rare enough to say which template printed it (issue #44: the doorway). Examples of our own, one per shape."""

from __future__ import annotations

import textwrap

import pytest

from extractor.pipeline.extract import ExtractOptions, extract
from extractor.query.match.index import merge
from extractor.query.match.matcher import Matcher
from tests.conftest import GitRepo, matcher_of

SOURCE = """\
def check(self, blocks, size, name, mode, modes, owner, attr, feature, gpu, workers):
    if blocks < size:
        raise ValueError(f"The swap space ({blocks} GiB) must not exceed half of the host memory ({size} GiB).")
    if name:
        raise ValueError(f"Tensorizer weights require --load-format=tensorizer, got {name}.")
    if mode:
        raise ValueError(f"Unknown kv-cache dtype mode: {mode!r}. Valid modes: {', '.join(modes)}")
    if owner:
        raise TypeError(f"{owner}.{attr} is not accepted by the speculative proposer")
    if feature:
        raise ValueError(f"{feature} is not supported with pipeline parallelism.")
    if feature and gpu:
        raise ValueError(f"{feature} is not supported for {gpu}")
    if attr:
        raise ValueError(f"{attr} must be a dict")
    if gpu:
        raise ValueError(f"Sliding window {gpu} cannot exceed the model's context.")
    if workers:
        raise RuntimeError(f"Worker {workers} died with error '{name}', see the log above")
    if modes:
        raise ConfigError(f"The config's tokenizer_mode {mode!r} needs a Mistral tokenizer")
    raise ValueError(
        f"Prefix caching needs block_size to divide the chunk size ({blocks})"
        + (f", and {name} to be set" if name else "")
    )
"""
SWAP = "The swap space (64 GiB) must not exceed half of the host memory (96 GiB)."


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("anywhere"), {"pkg/a.py": SOURCE})


def lines(matcher: Matcher, text: str) -> list[int]:
    return [m.site.lineNumber for m in matcher.match(text).matches]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"启动服务时报错：ValueError: {SWAP}", id="prose before it in another language"),  # noqa: RUF001
        pytest.param(f"After upgrading the node pool I keep seeing ValueError: {SWAP} again", id="prose around it"),
        pytest.param(f"[Usage]: ValueError: {SWAP}", id="an issue title's tag"),
        pytest.param(f'the server exits and then it throws a ValueError saying "{SWAP}" every time', id="quoted"),
        pytest.param(f"inference-7d9f8b-x2k4q api-server {SWAP}", id="a pod's log prefix"),
        pytest.param(f"[rank3]: ValueError: {SWAP}", id="a rank prefix"),
        pytest.param(f"2026-12-01T10:00:00Z | uvicorn.error | {SWAP}", id="another framework's logger"),
        pytest.param(f"> {SWAP[:40]}\n> {SWAP[40:]}", id="quoted lines, wrapped"),
    ],
)
def test_a_message_is_found_wherever_it_stands(matcher: Matcher, text: str) -> None:
    result = matcher.match(text)
    assert [(m.site.lineNumber, m.values) for m in result.matches] == [(3, {"blocks": "64", "size": "96"})], result.weak


def test_an_error_quoted_inside_another_is_answered_as_both_the_inner_first(matcher: Matcher) -> None:
    inner = "Tensorizer weights require --load-format=tensorizer, got safetensors."
    text = f"RuntimeError: Worker 3 died with error '{inner}', see the log above"
    result = matcher.match(text)
    assert [m.site.lineNumber for m in result.matches] == [5, 19]
    assert result.matches[1].values["name"] == inner


@pytest.mark.parametrize("width", [33, 57, 80])
def test_a_paste_hard_wrapped_at_any_width_is_exact(matcher: Matcher, width: int) -> None:
    """fold -w N wraps inside words and after spaces alike, keeping every character."""
    message = f"ValueError: Unknown kv-cache dtype mode: 'fp8_e5m2'. Valid modes: {', '.join(['auto'] * 12)}"
    folded = "\n".join(message[k : k + width] for k in range(0, len(message), width))
    assert any(not line.endswith(" ") for line in folded.splitlines()[:-1])  # a wrap inside a word
    (match,) = matcher.match(folded).matches
    assert (match.site.lineNumber, str(match.how), match.values["mode"]) == (7, "exact", "'fp8_e5m2'")


def test_spaces_squeezed_or_widened_match(matcher: Matcher) -> None:
    text = "ValueError:  The swap   space (64 GiB) must not exceed half of the host memory (96 GiB)."
    assert [(m.site.lineNumber, str(m.how)) for m in matcher.match(text).matches] == [(3, "exact")]


def test_a_placeholder_swallowing_another_releases_literal_words_is_weak(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Release 1 raises a literal message, release 2 the same sentence with a placeholder for its subject:
    the paste of release 1's message is release 1's record, and release 2's template is only weak for it."""
    repo = GitRepo(tmp_path_factory.mktemp("two"))
    repo.commit({"pkg/a.py": 'raise ValueError("Speculative decoding is not supported with LoRA yet.")\n'}, tag="v1")
    repo.commit({"pkg/a.py": 'x = 1\nraise ValueError(f"{what} is not supported with LoRA yet.")\n'}, tag="v2")
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    catalogs = [(tag, tag, extract(repo=str(repo.path), revision=tag, options=options)) for tag in ("v1", "v2")]
    for order in (catalogs, catalogs[::-1]):
        matcher = Matcher(merge(order))
        result = matcher.match("ValueError: Speculative decoding is not supported with LoRA yet.")
        assert [(m.site.lineNumber, m.releases()) for m in result.matches] == [(1, ["v1"])]
        # Release 2's template does explain another subject with confidence.
        assert [
            m.site.lineNumber
            for m in matcher.match("ValueError: Chunked prefill is not supported with LoRA yet.").matches
        ] == [2]


def test_a_cut_paste_is_tried_as_a_prefix_of_every_template_optional_parts_included(matcher: Matcher) -> None:
    for text in (
        "ValueError: Prefix caching needs block_size to divide the chunk size (512), and enable_chunk...",
        "ValueError: Prefix caching needs block_size to divide the ch…",
    ):
        (match,) = matcher.match(text).matches
        assert (match.site.lineNumber, str(match.how)) == (22, "partial")


def test_a_short_cut_of_distinctive_text_is_confident(matcher: Matcher) -> None:
    """What makes a cut trustworthy is that no other template shows its text, not its length."""
    assert lines(matcher, "[Bug] Tensorizer weights require --lo...") == [5]
    assert lines(matcher, "ValueError: The swap space (64 GiB) must not exceed half of the host memory (96 GiB)") == [3]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("ValueError: Grouped query attention is not supported for this backend", id="common words"),
        pytest.param("jinja2.exceptions.UndefinedError: 'dict object' has no attribute 'content'", id="other library"),
    ],
)
def test_common_words_are_weak_whatever_their_length(matcher: Matcher, text: str) -> None:
    result = matcher.match(text)
    assert result.matches == ()


def test_a_class_the_paste_shows_rules_out_a_record_of_another_class(matcher: Matcher) -> None:
    good = "ValueError: Unknown kv-cache dtype mode: 'x'. Valid modes: auto, fp8"
    assert lines(matcher, good) == [7]
    assert lines(matcher, good.replace("ValueError", "KeyError")) == []
    # A class of the codebase's own may derive from the one shown (an older release raised its base class):
    # the catalog does not say which, so any builtin one shown may print it.
    own = "ConfigError: The config's tokenizer_mode 'mistral' needs a Mistral tokenizer"
    assert lines(matcher, own) == lines(matcher, own.replace("ConfigError", "ValueError")) == [21]
    # A builtin class is no subclass of one of the codebase's own: a paste showing one is another error.
    assert lines(matcher, good.replace("ValueError", "vllm.errors.ConfigError")) == []


def test_literal_text_meets_the_paste_at_word_boundaries(matcher: Matcher) -> None:
    assert lines(matcher, "ValueError: rope_scaling must be a dict") == [15]
    assert lines(matcher, "ValueError: rope_scaling must be a dictionary with two fields") == []
    # "Sliding window {gpu} cannot exceed" does not explain a sentence that merely says "sliding window".
    assert lines(matcher, "ValueError: Sliding window attention cannot exceed four layers here") == []
    assert lines(matcher, "ValueError: Sliding window 4096 cannot exceed the model's context.") == [17]


def test_values_longer_than_the_text_keep_the_answer_confident(matcher: Matcher) -> None:
    owner = "vllm.model_executor.layers.quantization.compressed_tensors"
    text = f"TypeError: {owner}.weight_loader_v2 is not accepted by the speculative proposer"
    (match,) = matcher.match(text).matches  # (where `{owner}.{attr}` splits its text is anyone's guess)
    assert (match.site.lineNumber, ".".join(match.values.values())) == (9, f"{owner}.weight_loader_v2")
    modes = ", ".join(f"mode_{k}_with_a_long_name" for k in range(60))
    assert lines(matcher, f"ValueError: Unknown kv-cache dtype mode: 'q'. Valid modes: {modes}") == [7]


@pytest.mark.parametrize(
    ("text", "step"),
    [
        pytest.param(SWAP.replace("exceed", "exced"), "typo", id="a letter left out"),
        pytest.param(SWAP.replace("host memory", "hots memory"), "typo", id="two letters swapped"),
        pytest.param(
            "ValueError: Unknown kv-cache dtype mode: \u2018fp8\u2019. Valid modes: auto",
            "characters",
            id="curly quotes",
        ),
    ],
)
def test_small_edits_still_match_marked_as_such(matcher: Matcher, text: str, step: str) -> None:
    (match,) = matcher.match(text).matches
    assert step in match.normalized and str(match.how) == "normalized"


def test_a_typo_never_beats_text_as_written_nor_changes_a_number(tmp_path_factory: pytest.TempPathFactory) -> None:
    repo = GitRepo(tmp_path_factory.mktemp("typos"))
    source = textwrap.dedent(
        """\
        raise ValueError("The model does not support the Render API of this server")
        raise ValueError("The model does not support the Derender API of this server")
        raise ValueError("No kernel can implement the MXFP6 linear layer on this platform")
        """
    )
    repo.commit({"pkg/a.py": source}, tag="v1")
    options = ExtractOptions(paths=("pkg",), exceptions=("*",))
    matcher = Matcher.of_lines(extract(repo=str(repo.path), revision="v1", options=options).lines)
    assert lines(matcher, "ValueError: The model does not support the Render API of this server") == [1]
    assert lines(matcher, "ValueError: No kernel can implement the MXFP8 linear layer on this platform") == []

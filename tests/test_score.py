"""One score decides a confident answer: `bits`, the words' weight less what repairs and rivals cost (score.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from extractor.query.match.matcher import Matcher
from extractor.query.match.score import CONFIDENT_BITS, CUT_BITS, PERIOD_BITS, RIVAL_BITS, TYPO_BITS
from tests.conftest import matcher_of

SOURCE = textwrap.dedent(
    """
    def check(n, name, x):
        if n > 4:
            raise ValueError(f"The scheduler budget for speculative decoding was exceeded by {n} tokens.")
        if x:
            raise ValueError(f"Unsupported quantization method {name} for the tensor parallel layout.")
        if not x:
            raise ValueError(f"Unsupported quantization method {name} for the pipeline parallel layout.")
    """
)
BUDGET = "The scheduler budget for speculative decoding was exceeded by 7 tokens."


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("score"), {"pkg/a.py": SOURCE})


def bits(matcher: Matcher, text: str) -> float:
    result = matcher.match(text)
    (first, *_) = [*result.matches, *result.weak]
    assert first.bits is not None
    return first.bits


def test_a_whole_message_scores_its_words(matcher: Matcher) -> None:
    result = matcher.match(BUDGET)
    (match,) = result.matches
    assert match.bits == pytest.approx(match.info)
    assert match.bits >= CONFIDENT_BITS


@pytest.mark.parametrize(
    ("paste", "cost"),
    [
        pytest.param(BUDGET.rstrip("."), PERIOD_BITS, id="period left out"),
        pytest.param(BUDGET.replace("speculative", "speculatvie"), TYPO_BITS, id="typo"),
        pytest.param(BUDGET[:60], CUT_BITS, id="cut"),
    ],
)
def test_each_repair_costs_what_it_says(matcher: Matcher, paste: str, cost: float) -> None:
    whole = matcher.match(BUDGET).matches[0]
    repaired = [*matcher.match(paste).matches, *matcher.match(paste).weak][0]
    assert repaired.template is whole.template
    assert repaired.bits is not None
    # (a cut shows fewer words: its words weigh less, then the cut costs its bits)
    assert repaired.bits == pytest.approx(repaired.info - cost)
    assert repaired.bits < repaired.info


def test_a_rival_explaining_as_much_costs_rival_bits(matcher: Matcher) -> None:
    # Cut before the two templates part: both explain the paste with the same literal text.
    paste = "Unsupported quantization method awq for the"
    result = matcher.match(paste)
    shown = [*result.matches, *result.weak]
    assert len(shown) == 2
    for match in shown:
        assert match.bits == pytest.approx(match.info - CUT_BITS - RIVAL_BITS)
        assert match.confident == (match.bits >= CONFIDENT_BITS)


def test_what_another_explains_as_well_leaves_no_evidence(tmp_path: Path) -> None:
    # vLLM's copy of Python's own wording: Python prints the text for every object, so the record is weak.
    copy = (
        "def f(self, name):\n    raise AttributeError(f\"'{type(self).__name__}' object has no attribute '{name}'\")\n"
    )
    matcher = matcher_of(tmp_path, {"pkg/a.py": copy})
    result = matcher.match("AttributeError: 'Qwen2ForCausalLM' object has no attribute 'embed_tokens'")
    assert not result.matches
    assert result.elsewhere
    assert all(match.bits is not None and match.bits <= 0 for match in result.weak)


def test_a_last_value_then_its_final_period_left_out_is_a_period_not_a_cut(tmp_path: Path) -> None:
    source = 'def f(name):\n    raise NotImplementedError(f"VLLM_USE_V1=1 is not supported with {name}.")\n'
    matcher = matcher_of(tmp_path, {"pkg/a.py": source})
    (match,) = matcher.match("NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype").matches
    assert (match.how, match.normalized, match.values) == ("normalized", ("period",), {"name": "--kv-cache-dtype"})
    assert match.bits == pytest.approx(match.info - PERIOD_BITS)
    # A value that holds a sentence of its own is no message ending there; an ellipsis is a cut.
    assert not matcher.match("VLLM_USE_V1=1 is not supported with fp8! Then it crashed hard").matches
    (cut,) = matcher.match("NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache...").matches
    assert cut.how == "partial"

"""What a placeholder can print (extractor/query/match/kinds.py), and how `match` uses it with message
boundaries: a value its placeholder cannot print rules the template out at that place, and a message that
starts or ends inside a sentence (or a value of no known kind that holds a sentence) is at most weak."""

from __future__ import annotations

import pytest

from extractor.query.match.kinds import Shape, ValueKind, _annotated, _parameters, fits, fitting, fitting_end, swallows
from extractor.query.match.matcher import Matcher
from tests.conftest import matcher_of

SOURCE = """\
from typing import Literal


def attn_window(sliding_window: int | None, max_model_len: int) -> int:
    if sliding_window is not None and sliding_window < 1:
        raise ValueError(f"sliding window {sliding_window}")
    return 0


def check_len(max_model_len: int, blocks: int) -> None:
    if max_model_len > blocks:
        raise ValueError(
            f"The model's max seq len ({max_model_len}) is larger than the maximum number of tokens that can be "
            f"stored in KV cache ({blocks}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`."
        )


def pick(mode: Literal["fast", "slow"], ratio: float, name: str, detail) -> None:
    if mode == "fast":
        raise ValueError(f"Mode {mode} cannot be used with ratio {ratio:.2f} here")
    if name:
        raise ValueError(f"Unknown backend name {name!r} given to the picker")
    raise ValueError(f"Picker failed on {detail} while loading the weights table")


def renamed(count: int) -> None:
    count = str(count)
    raise ValueError(f"count of heads is {count} for this layer")
"""


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("kinds") / "repo", {"pkg/a.py": SOURCE})


def kinds(matcher: Matcher, start: str) -> tuple[ValueKind, ...]:
    (template,) = [t for t in matcher.templates if t.errorMessage.startswith(start)]
    return template.kinds


def confident(matcher: Matcher, text: str) -> list[str]:
    return [m.template.errorMessage for m in matcher.match(text).matches]


def test_kinds_come_from_parameters_format_specs_and_conversions(matcher: Matcher) -> None:
    assert kinds(matcher, "sliding window") == (ValueKind(Shape.INT, none=True),)
    assert kinds(matcher, "The model's") == (ValueKind(Shape.INT), ValueKind(Shape.INT))
    assert kinds(matcher, "Mode") == (ValueKind(Shape.CHOICE, choices=("fast", "slow")), ValueKind(Shape.NUMBER))
    assert kinds(matcher, "Unknown backend") == (ValueKind(Shape.QUOTED),)
    assert kinds(matcher, "Picker failed") == (ValueKind(),)
    assert kinds(matcher, "count of heads") == (ValueKind(),)  # (assigned again before the raise: not told)


def test_a_value_its_placeholder_cannot_print_rules_the_template_out(matcher: Matcher) -> None:
    assert confident(matcher, "ValueError: sliding window 0") == ["sliding window {sliding_window}"]
    assert confident(matcher, "ValueError: sliding window attention") == []
    assert confident(matcher, "ValueError: Mode fast cannot be used with ratio 0.50 here") != []
    assert confident(matcher, "ValueError: Mode medium cannot be used with ratio 0.50 here") == []
    assert confident(matcher, "ValueError: Unknown backend name 'x' given to the picker") != []
    assert confident(matcher, "ValueError: Unknown backend name x given to the picker") == []


def test_a_message_inside_a_sentence_is_at_most_weak(matcher: Matcher) -> None:
    text = "AssertionError: Chunked prefill cannot be enabled together with sliding window 4"
    result = matcher.match(text)
    assert result.matches == ()
    assert [m.template.errorMessage for m in result.weak] == ["sliding window {sliding_window}"]
    # the same words at a message's start, after a log prefix or a quote, stand on their own
    assert confident(matcher, "ERROR 12-01 10:00:00 [core.py:1] sliding window 4") != []
    assert confident(matcher, "the server said 'sliding window 4'") != []


def test_a_value_of_no_known_kind_does_not_swallow_a_sentence(matcher: Matcher) -> None:
    whole = "ValueError: Picker failed on shard 3 while loading the weights table"
    assert confident(matcher, whole) != []
    text = "ValueError: Picker failed on shard 3. The disk is full, so nothing was read while loading the weights table"
    assert confident(matcher, text) == []


def test_a_typed_value_stops_where_the_message_can_end(matcher: Matcher) -> None:
    text = "{'error': {'message': 'sliding window -1', 'type': 'BadRequestError'}}"
    (match,) = matcher.match(text).matches
    assert match.values == {"sliding_window": "-1"}


def test_the_newer_kv_cache_message_is_no_older_one(matcher: Matcher) -> None:
    text = (
        "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (2.50 GiB). Based on the available memory, "
        "the estimated maximum model length is 20000. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len`."
    )
    assert confident(matcher, text) == []


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        (ValueKind(Shape.INT), ["0", "-1", "32768", "1,024", "None"], ["", "attention", "1.5", "12a"]),
        (ValueKind(Shape.NUMBER), ["0.9", "1e-05", "-3", "inf", ".5", "90%"], ["", ".", "e5", "x0.9"]),
        (ValueKind(Shape.BOOL), ["True", "False"], ["true", "1"]),
        (ValueKind(Shape.QUOTED), ["'fp8'", '"a b"'], ["fp8", "'a"]),
        (ValueKind(Shape.CHOICE, choices=("a", "b")), ["a", "b"], ["c", "None"]),
        (ValueKind(Shape.CHOICE, none=True, choices=("a",)), ["a", "None"], ["b"]),
        (ValueKind(), ["anything at all", ""], []),
    ],
)
def test_fits(kind: ValueKind, good: list[str], bad: list[str]) -> None:
    assert [fits(kind, value) for value in good] == [True] * len(good)
    assert [fits(kind, value) for value in bad] == [False] * len(bad)


def test_fitting_takes_the_longest_start_or_end_that_fits() -> None:
    assert fitting(ValueKind(Shape.INT), "1', 'type': 'x'}") == "1"
    assert fitting(ValueKind(Shape.NUMBER), "0.9...") == "0.9"
    assert fitting(ValueKind(Shape.INT), "many") is None
    assert fitting(ValueKind(), "1', 'x'") == "1', 'x'"
    assert fitting_end(ValueKind(Shape.INT), "Value error, 2048") == "2048"
    assert fitting_end(ValueKind(Shape.INT), "Value error") is None


def test_swallows() -> None:
    assert swallows("shard 3. The disk is full")
    assert not swallows("vllm.config.ModelConfig")
    assert not swallows("e.g. a value")


@pytest.mark.parametrize(
    ("annotation", "kind"),
    [
        ("int", ValueKind(Shape.INT)),
        ("Optional[float]", ValueKind(Shape.NUMBER, none=True)),
        ("bool | None", ValueKind(Shape.BOOL, none=True)),
        ("Literal['auto', 'fp8']", ValueKind(Shape.CHOICE, choices=("auto", "fp8"))),
        ("Literal['auto', None]", ValueKind(Shape.CHOICE, none=True, choices=("auto",))),
        ("list[int]", ValueKind()),  # (a user retyping a list often leaves its brackets out)
        ("SomeEnum", ValueKind()),
    ],
)
def test_annotations(annotation: str, kind: ValueKind) -> None:
    assert _annotated(annotation) == kind


def test_parameters_read_from_the_function_header_in_the_source() -> None:
    source = "    def f(\n        self,\n        a: int,\n        b: 'str' = 'x',\n    ) -> None:\n        b = 1\n"
    assert _parameters(source, "C.f") == {"a": "int"}
    assert _parameters(source, "g") == {}

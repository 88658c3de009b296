"""The runtime's search (reproduce/explore*.py) seen without a runtime: the kinds of trigger it sets, each slot of
one kind by its name, where a setting goes in a try, how a fix says it and how a program writes it."""

from __future__ import annotations

import os
from typing import Any, cast

import pytest

from extractor.reproduce import explore_kinds, programs
from extractor.reproduce.explore_kinds import ENVIRONMENT, FIELD, KINDS, PARAMETER, Trial
from extractor.reproduce.explore_values import Call, Src

_NO_CHOICES = cast(Any, None)  # (a slot of one name never asks what a sub-config's class builds with)


@pytest.mark.parametrize(
    ("slot", "kind"),
    [
        pytest.param("tensor_parallel_size", FIELD, id="a field of the class built"),
        pytest.param("parallel_config.tensor_parallel_size", FIELD, id="a field of a sub-config it takes"),
        pytest.param("call.parallel_config", PARAMETER, id="a parameter of the method called"),
        pytest.param("call.parallel_config.decode_context_parallel_size", PARAMETER, id="a field of a parameter"),
        pytest.param("env.VLLM_USE_V1", ENVIRONMENT, id="a variable of the environment"),
    ],
)
def test_a_slot_is_of_the_kind_its_prefix_names(slot: str, kind: explore_kinds.Kind) -> None:
    assert explore_kinds.kind_of(slot) is kind


def test_every_kind_is_listed_once_and_a_program_reports_them_in_that_order() -> None:
    """KINDS is where a kind plugs in: each once, a plain name a Field's (the one kind with no prefix)."""
    assert len(set(KINDS)) == len(KINDS) == 3
    assert [kind.prefix for kind in KINDS] == ["", "env.", "call."]
    assert set(explore_kinds.SHORTENED) <= set(KINDS)


def test_a_setting_goes_in_its_kinds_part_of_a_try_and_none_leaves_it_at_its_default() -> None:
    trial = Trial()
    for slot, text in [("max_loras", "9"), ("call.parallel_config", "None"), ("env.OPS_STRICT", "'1'")]:
        trial = explore_kinds.settled(_NO_CHOICES, trial, slot, Src(text))
    assert trial == Trial(
        arguments={"max_loras": Src("9")},
        call={"parallel_config": Src("None")},
        environment={"OPS_STRICT": Src("'1'")},
    )
    assert explore_kinds.setting(trial, "env.OPS_STRICT") == Src("'1'")
    assert explore_kinds.settled(_NO_CHOICES, trial, "env.OPS_STRICT", None).environment == {}


def test_a_sub_configs_argument_is_set_inside_the_call_that_builds_it() -> None:
    trial = Trial(arguments={"parallel_config": Call("ParallelConfig", {"tensor_parallel_size": Src("2")})})
    changed = explore_kinds.settled(_NO_CHOICES, trial, "parallel_config.decode_context_parallel_size", Src("4"))
    assert changed.arguments == {
        "parallel_config": Call(
            "ParallelConfig", {"tensor_parallel_size": Src("2"), "decode_context_parallel_size": Src("4")}
        )
    }
    assert explore_kinds.setting(changed, "parallel_config.decode_context_parallel_size") == Src("4")
    assert FIELD.shortened(changed.arguments, required=set()) == [
        "parallel_config.tensor_parallel_size",
        "parallel_config.decode_context_parallel_size",
        "parallel_config",
    ]


@pytest.mark.parametrize(
    ("slot", "choice", "said"),
    [
        pytest.param("max_loras", Src("8"), "set max_loras=8", id="a field set"),
        pytest.param("parallel_config.x", None, "leave parallel_config.x at its default", id="a field left"),
        pytest.param("call.dcp", Src("1"), "set dcp=1", id="a parameter set"),
        pytest.param("env.OPS_STRICT", Src("'0'"), "set OPS_STRICT='0'", id="a variable set"),
        pytest.param("env.OPS_STRICT", None, "unset OPS_STRICT in the environment", id="a variable unset"),
    ],
)
def test_a_fix_is_said_by_the_kind_it_changes(slot: str, choice: Src | None, said: str) -> None:
    assert explore_kinds.kind_of(slot).change(slot, choice) == said


def test_the_environment_holds_while_a_try_runs_and_comes_first_in_a_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPS_STRICT", raising=False)
    monkeypatch.setenv("OPS_LEVEL", "low")
    values = {"OPS_STRICT": Src("'1'"), "OPS_LEVEL": Src("'high'")}
    bindings = cast(Any, type("Bindings", (), {"value": staticmethod(lambda v: programs.evaluate(v.text, {}))}))
    with ENVIRONMENT.around(values, bindings):
        assert (os.environ["OPS_STRICT"], os.environ["OPS_LEVEL"]) == ("1", "high")
    assert "OPS_STRICT" not in os.environ and os.environ["OPS_LEVEL"] == "low"
    written = programs.unparsed(ENVIRONMENT.preamble(values))
    assert written == "import os\n\nos.environ['OPS_LEVEL'] = 'high'\nos.environ['OPS_STRICT'] = '1'\n"
    assert FIELD.preamble({"x": Src("1")}) == PARAMETER.preamble({"x": Src("1")}) == []


def test_a_methods_parameters_are_reported_only_for_a_function_called_directly() -> None:
    """A method's parameters are no config's fields (no flag stands for them); a function's are its arguments."""
    values = {"parallel_config": Call("ParallelConfig", {"tensor_parallel_size": Src("2")})}
    assert PARAMETER.shown(values, direct=False) == {}
    assert PARAMETER.shown(values, direct=True) == {"call.parallel_config": "ParallelConfig(tensor_parallel_size=2)"}
    assert ENVIRONMENT.shown({"X": Src("'1'")}, direct=False) == {"env.X": "'1'"}

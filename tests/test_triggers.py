"""The solver on paper: a record's condition chain in, the arguments that raise it and the smallest change that
fixes it out (reproduce/triggers.py); and a paste's own values solved for, the user's fix of their `vllm serve` line
(reproduce/user_fix.py). No runtime: what these say is what reproduce then runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extractor.model.records import (
    CatalogLine,
    Condition,
    Extraction,
    FieldRef,
    Record,
    Reproduction,
    ReproductionFix,
    ServeLine,
    ServeSolution,
)
from extractor.reproduce.triggers import Code, Unsolvable, lessons, trigger, vocabulary
from extractor.reproduce.user_fix import user_fixes

OWNER = "SchedulerConfig"


def field(expression: str, annotation: str, *, cls: str = OWNER, constraints: tuple[str, ...] = ()) -> FieldRef:
    """A resolved field a condition reads: `self.x` of the owner, or `self.held.x` of the config it holds."""
    data = {"expression": expression, "class": cls, "field": expression.rpartition(".")[2], "resolved": True}
    return FieldRef.model_validate({**data, "annotation": annotation, "constraints": list(constraints)})


def line(
    *conditions: str | Condition,
    fields: list[FieldRef],
    function: str = f"{OWNER}.__post_init__",
    path: str = "vllm/config/scheduler.py",
) -> CatalogLine:
    """A record raised under `conditions` (a text is an `if` taken), reading `fields`: what the solver reads of it."""
    chain = [c if isinstance(c, Condition) else Condition(kind="if", test=c, line=n) for n, c in enumerate(conditions)]
    extraction = Extraction.model_construct(function=function, conditions=chain, fields=fields)
    return CatalogLine.model_construct(record=Record.model_construct(filePath=path), extraction=extraction)


def passed(test: str) -> Condition:
    """An `if` (or `elif`) before the raise's own, not taken."""
    return Condition(kind="if", test=test, negated=True, line=0)


def elif_(test: str) -> Condition:
    """The raise's own test, an `elif` after the branches passed."""
    return Condition(kind="elif", test=test, line=1)


TOKENS, LENGTH = field("self.max_num_batched_tokens", "int"), field("self.max_model_len", "int")
CHUNKED, BLOCK = field("self.enable_chunked_prefill", "bool"), field("self.block_size", "int")
POLICY, POOLING = field("self.policy", "str"), field("self.pooling", "str | None")
A, B, RATIO = field("self.a", "bool"), field("self.b", "bool"), field("self.ratio", "float")


@pytest.mark.parametrize(
    ("record", "arguments", "fix", "change"),
    [
        pytest.param(
            line(
                "self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill",
                fields=[TOKENS, LENGTH, CHUNKED],
            ),
            {"max_model_len": 8, "max_num_batched_tokens": 7, "enable_chunked_prefill": False},
            {"enable_chunked_prefill": True},
            "set enable_chunked_prefill=True (so that `self.enable_chunked_prefill` is true)",
            id="two fields compared, and not a switch: the last atom turned",
        ),
        pytest.param(
            line("self.block_size > 32", fields=[BLOCK]),
            {"block_size": 33},
            {"block_size": 32},
            "set block_size=32 (so that `self.block_size > 32` is false)",
            id="greater than a constant",
        ),
        pytest.param(
            line("0 >= self.block_size", fields=[BLOCK]),
            {"block_size": 0},
            {"block_size": 1},
            "set block_size=1 (so that `0 >= self.block_size` is false)",
            id="the constant on the left",
        ),
        pytest.param(
            line("self.ratio < 0.5", fields=[RATIO]),
            {"ratio": 0.0},
            {"ratio": 0.5},
            "set ratio=0.5 (so that `self.ratio < 0.5` is false)",
            id="a float, stepped by a half",
        ),
        pytest.param(
            line("self.a == self.b", fields=[field("self.a", "int"), field("self.b", "int")]),
            {"b": 8, "a": 8},
            {"a": 9},
            "set a=9 (so that `self.a == self.b` is false)",
            id="two fields equal",
        ),
        pytest.param(
            line("not (self.a and self.b)", fields=[A, B]),
            {"a": False},
            {"a": True},
            "set a=True (so that `self.a` is true)",
            id="not of an and: one operand false is enough",
        ),
        pytest.param(
            line("self.a or self.b", fields=[A, B]),
            {"a": True},
            {"a": False},
            "set a=False (so that `self.a` is false)",
            id="or: its first operand",
        ),
        pytest.param(
            line("self.ready() or self.b", fields=[B]),
            {"b": True},
            {"b": False},
            "set b=False (so that `self.b` is false)",
            id="or: an operand that cannot be set is passed over",
        ),
        pytest.param(
            line("self.policy not in ('fcfs', 'priority')", fields=[POLICY]),
            {"policy": "other"},
            {"policy": "fcfs"},
            "set policy='fcfs' (so that `self.policy not in ('fcfs', 'priority')` is false)",
            id="not in: a text the choices do not hold; fixed with the first choice",
        ),
        pytest.param(
            line("self.block_size in (8, 16)", fields=[BLOCK]),
            {"block_size": 16},
            {"block_size": 1},
            "set block_size=1 (so that `self.block_size in (8, 16)` is false)",
            id="in: the members sorted as written (16 before 8); fixed with a number, not a text",
        ),
        pytest.param(
            line("self.pooling is None", fields=[POOLING]),
            {"pooling": None},
            {"pooling": "other"},
            "set pooling='other' (so that `self.pooling is None` is false)",
            id="is None",
        ),
        pytest.param(
            line("self.pooling is not None and self.enable_chunked_prefill", fields=[POOLING, CHUNKED]),
            {"enable_chunked_prefill": True, "pooling": "other"},
            {"enable_chunked_prefill": False},
            "set enable_chunked_prefill=False (so that `self.enable_chunked_prefill` is false)",
            id="is not None, and a switch",
        ),
        pytest.param(
            line("self.a is True", fields=[A]),
            {"a": True},
            {"a": False},
            "set a=False (so that `self.a is True` is false)",
            id="is True: fixed with a bool",
        ),
        pytest.param(
            line(passed("self.policy == 'fcfs'"), elif_("self.policy == 'priority'"), fields=[POLICY]),
            {"policy": "priority"},
            {"policy": "other"},
            "set policy='other' (so that `self.policy == 'priority'` is false)",
            id="an elif chain: the branch before it not taken",
        ),
        pytest.param(
            line(passed("self.policy == 'fcfs'"), elif_("self.policy != 'priority'"), fields=[POLICY]),
            {"policy": "other"},
            {"policy": "priority"},
            "set policy='priority' (so that `self.policy != 'priority'` is false)",
            id="an elif chain excluding values: one neither branch names",
        ),
        pytest.param(
            line("self.name", fields=[field("self.name", "str")]),
            {"name": "x"},
            {"name": ""},
            "set name='' (so that `self.name` is false)",
            id="a text's truth",
        ),
        pytest.param(
            line("self.custom_ops", fields=[field("self.custom_ops", "list[str]")]),
            {"custom_ops": ["x"]},
            {"custom_ops": []},
            "set custom_ops=[] (so that `self.custom_ops` is false)",
            id="a list's truth: a list, of its items' type",
        ),
        pytest.param(
            line("not self.sizes", fields=[field("self.sizes", "list[int] | None")]),
            {"sizes": None},
            {"sizes": [1]},
            "set sizes=[1] (so that `self.sizes` is true)",
            id="an optional list's falsity: None",
        ),
        pytest.param(
            line("self.max_num_batched_tokens < 1", fields=[field("self.max_num_batched_tokens", "int")]),
            {"max_num_batched_tokens": 0},
            {"max_num_batched_tokens": 1},
            "set max_num_batched_tokens=1 (so that `self.max_num_batched_tokens < 1` is false)",
            id="less than a constant",
        ),
    ],
)
def test_a_condition_chain_is_solved_into_the_arguments_that_raise_and_the_change_that_fixes(
    record: CatalogLine, arguments: dict[str, Any], fix: dict[str, Any], change: str
) -> None:
    attempt = trigger(record)
    assert (attempt.arguments, attempt.fix, attempt.change) == (arguments, fix, change)


@pytest.mark.parametrize(
    ("record", "reason", "detail"),
    [
        pytest.param(
            line("0 < self.block_size < 64", fields=[BLOCK]),
            "not solvable from its conditions",
            "0 < self.block_size < 64",
            id="a chained comparison",
        ),
        pytest.param(
            line("self.block_size > 5 and self.block_size < 3", fields=[BLOCK]),
            "not solvable from its conditions",
            "block_size must be both 6 and 2",
            id="a contradiction",
        ),
        pytest.param(
            line("self.policy == 'fcfs' and self.policy in ('priority', 'lifo')", fields=[POLICY]),
            "not solvable from its conditions",
            "no value of policy meets [('eq', 'fcfs'), ('in', ('priority', 'lifo'))]",
            id="equal to a value a membership excludes",
        ),
        pytest.param(
            line("self.a() or self.b()", fields=[A, B]),
            "not solvable from its conditions",
            "self.a() or self.b()",
            id="or: no operand can be set",
        ),
        pytest.param(
            line("max_model_len > 4", fields=[]),
            "not solvable from its conditions",
            "max_model_len > 4",
            id="a parameter, not a field",
        ),
        pytest.param(
            line("self.backend", fields=[field("self.backend", "Backend")]),
            "not solvable from its conditions",
            "self.backend: Backend",
            id="the truth of a class it cannot build",
        ),
        pytest.param(
            line("current_platform.is_cuda() and self.a", fields=[A]),
            "needs a GPU platform",
            "current_platform.is_cuda() and self.a",
            id="the platform",
        ),
        pytest.param(
            line("self.hf_config.vocab_size > 8", fields=[]),
            "needs a real model",
            "self.hf_config.vocab_size > 8",
            id="a model's configuration",
        ),
        pytest.param(
            line(Condition(kind="for", test="self.items", line=0), "self.a", fields=[A]),
            "not solvable from its conditions",
            "a loop, a with or an except on the path",
            id="a loop on the path",
        ),
        pytest.param(
            line("self.a", fields=[A], function="check_dtype"),
            "not solvable from its conditions",
            "raised in check_dtype, not a config's method",
            id="a module's function",
        ),
        pytest.param(
            line("self.a", fields=[A], function="Outer.Inner.check"),
            "not solvable from its conditions",
            "raised in Outer.Inner.check, not a config's method",
            id="a nested class's method",
        ),
        pytest.param(
            line("self.a", fields=[A], path="vllm/con fig/x.py"),
            "not solvable from its conditions",
            "the module path 'vllm.con fig.x' has a part 'con fig' is not a Python name",
            id="a module no import can name",
        ),
        pytest.param(
            line("self.a", fields=[field("self.a", "bool", cls="OtherConfig")]),
            "not solvable from its conditions",
            "self.a",
            id="a field of another class, read as if its own",
        ),
        pytest.param(
            line("x := self.compute()", fields=[]),
            "not solvable from its conditions",
            "(x := self.compute())",
            id="a walrus",
        ),
    ],
)
def test_what_cannot_be_solved_on_paper_says_why(record: CatalogLine, reason: str, detail: str) -> None:
    with pytest.raises(Unsolvable) as refused:
        trigger(record)
    assert (refused.value.reason.value, refused.value.detail) == (reason, detail)


def test_a_method_s_check_is_called_and_a_held_config_is_built_with_its_own_arguments() -> None:
    compared = "self.max_num_batched_tokens < self.max_model_len"
    verify = trigger(line(compared, fields=[TOKENS, LENGTH], function=f"{OWNER}.verify"))
    assert verify.program() == (
        "from vllm.config.scheduler import SchedulerConfig\n\n"
        "config = SchedulerConfig(max_model_len=8, max_num_batched_tokens=7)\nconfig.verify()\n"
    )
    assert verify.fixed() == (
        "from vllm.config.scheduler import SchedulerConfig\n\n"
        "config = SchedulerConfig(max_model_len=8, max_num_batched_tokens=8)\nconfig.verify()\n"
    )
    fields = [
        field("self.enabled", "bool", cls="OffloadConfig"),
        field("self.prefetch.group_size", "int", cls="PrefetchConfig"),
    ]
    offload = line(
        "self.enabled and self.prefetch.group_size < 2",
        fields=fields,
        function="OffloadConfig.__post_init__",
        path="vllm/config/offload/__init__.py",
    )
    held = trigger(offload)
    assert (held.arguments, held.held) == ({"enabled": True, "prefetch.group_size": 1}, {"prefetch": "PrefetchConfig"})
    assert held.program() == (
        "from vllm.config.offload import OffloadConfig, PrefetchConfig\n\n"
        "config = OffloadConfig(enabled=True, prefetch=PrefetchConfig(group_size=1))\n"
    )
    assert held.change == "set prefetch.group_size=2 (so that `self.prefetch.group_size < 2` is false)"


def test_an_enum_member_a_condition_names_is_named_and_imported() -> None:
    fields = [field("self.mode", "Mode", cls="CompileConfig"), field("self.debug", "bool", cls="CompileConfig")]
    graph = trigger(
        line("self.mode == Mode.GRAPH and self.debug", fields=fields, function="CompileConfig.__post_init__")
    )
    assert graph.arguments == {"debug": True, "mode": Code("Mode.GRAPH")}
    assert graph.program() == (
        "from vllm.config.scheduler import CompileConfig, Mode\n\nconfig = CompileConfig(debug=True, mode=Mode.GRAPH)\n"
    )


def test_the_values_a_catalog_compares_a_field_with_are_tried_first() -> None:
    """`!=` excludes one value: the catalog's other checks say which values the field takes (its vocabulary)."""
    strict = field("self.strict", "bool")
    record = line("self.load_format != 'auto' and self.strict", fields=[field("self.load_format", "str"), strict])
    others = line("self.load_format == 'tensorizer'", fields=[field("self.load_format", "str")])
    known = vocabulary([record, others, line("self.policy in {'lifo', 'fcfs'}", fields=[POLICY])])
    assert known == {(OWNER, "load_format"): ["auto", "tensorizer"], (OWNER, "policy"): ["fcfs", "lifo"]}
    assert trigger(record, known).arguments == {"strict": True, "load_format": "tensorizer"}
    assert trigger(record).arguments == {"strict": True, "load_format": "other"}  # (no catalog: a plain text)


def test_what_pydantic_refused_is_learned_and_solved_again() -> None:
    refused = {
        "errors": [
            {"loc": ["load_format"], "type": "literal_error", "ctx": {"expected": "'auto', 'safetensors' or 'x'"}},
            {"loc": ["max_num_batched_tokens"], "type": "greater_than_equal", "ctx": {"ge": 1}},
            {"loc": ["block_size"], "type": "greater_than", "ctx": {"gt": 8}},
            {"loc": ["tokenizer"], "type": "missing"},
            {"loc": ["ratio"], "type": "float_parsing"},
            {"loc": ["a", "b"], "type": "missing"},  # (a field of a field: not one the attempt sets)
        ]
    }
    learned = lessons(refused)
    assert learned == {
        "load_format": ("choices", ["auto", "safetensors", "x"]),
        "max_num_batched_tokens": ("floor", 1),
        "block_size": ("floor", 9),
        "tokenizer": ("required", 1),
        "ratio": ("choices", [1.0, 0.5, 0.0]),
    }
    strict = field("self.strict", "bool")
    record = line("self.load_format != 'auto' and self.strict", fields=[field("self.load_format", "str"), strict])
    assert trigger(record, learned=learned).arguments == {"strict": True, "load_format": "safetensors", "tokenizer": 1}
    # A floor the field's constraints did not say: numbers chosen above it.
    compared = line("self.max_num_batched_tokens < self.max_model_len", fields=[TOKENS, LENGTH])
    floored = trigger(compared, learned={"max_model_len": ("floor", 100)})
    assert floored.arguments == {"max_model_len": 108, "max_num_batched_tokens": 107}
    # A value outside the choices pydantic names, which no condition asked for: nothing left to try.
    with pytest.raises(Unsolvable, match=r"policy must be one of \['fcfs', 'lifo'\]"):
        trigger(line("self.policy", fields=[POLICY]), learned={"policy": ("choices", ["fcfs", "lifo"])})


def test_a_fields_least_value_is_its_constraints() -> None:
    tokens = field("self.max_num_batched_tokens", "int", constraints=("ge=16",))
    attempt = trigger(line("self.max_model_len > self.max_num_batched_tokens", fields=[tokens, LENGTH]))
    assert attempt.arguments == {"max_num_batched_tokens": 24, "max_model_len": 25}


# --- the user's fix: a paste's values solved for (user_fix.py)

# The snapshots' small vLLM at v1 (tests/test_snapshots.py): its checks of the tokens and of the block size, each
# reproduced at the serve level as reproduce leaves it, a line that raised, and its fix and solutions that ran.
SERVED = {
    "max-num-batched-tokens-is-smaller-than-max-model": (
        ["--max-num-batched-tokens", "7", "--max-model-len", "8", "--no-enable-chunked-prefill"],
        ["--max-num-batched-tokens", "7", "--max-model-len", "8", "--enable-chunked-prefill"],
    ),
    "invalid-block-size-choose-8-16-or-32": (["--block-size", "7"], ["--block-size", "8"]),
}


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CatalogLine]:
    """SERVED's records, by slug, each with its reproduction."""
    from extractor.pipeline.extract import ExtractOptions, extract
    from tests.conftest import GitRepo
    from tests.test_snapshots import ARGS, CACHE, SCHEDULER, VLLM

    repo = GitRepo(Path(tmp_path_factory.mktemp("user-fix")) / "repo")
    files = {"vllm/config/scheduler.py": SCHEDULER, "vllm/config/cache.py": CACHE, "vllm/config/vllm.py": VLLM}
    repo.commit({**files, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    lines = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(cache=False)).lines
    out = {}
    for found in lines:
        if found.record.slug not in SERVED:
            continue
        argv, fixed = (ServeLine(argv=argv) for argv in SERVED[found.record.slug])
        made = Reproduction(
            verifiedWith="vllm==0.1",
            python="(the program)",
            level="serve",
            serve=argv,
            fix=ReproductionFix(python="(the program, fixed)", change="(the class's change)", serve=fixed),
            solutions=[ServeSolution(change="(its words)", serve=fixed)],
        )
        out[found.record.slug] = found.model_copy(
            update={"extraction": found.extraction.model_copy(update={"reproduction": made})}
        )
    assert sorted(out) == sorted(SERVED)
    return out


def changes(record: CatalogLine, values: dict[str, str]) -> list[tuple[list[str], list[str], str]]:
    return [(fix.before.argv, fix.after.argv, fix.change) for fix in user_fixes(record, values)]


def test_user_fixes_of_two_values_compared_set_either_to_the_other(reproduced: dict[str, CatalogLine]) -> None:
    """A paste's `2048` and `32768`: its line is the reproduction's with them; each flag set to the other value
    the paste shows passes the check (and the switch, which the paste does not show, is left as it was)."""
    before = ["--max-num-batched-tokens", "2048", "--max-model-len", "32768", "--no-enable-chunked-prefill"]
    values = {"self.max_num_batched_tokens": "2048", "self.max_model_len": "32768"}
    assert changes(reproduced["max-num-batched-tokens-is-smaller-than-max-model"], values) == [
        (before, [*before[:1], "32768", *before[2:]], "set --max-num-batched-tokens 32768 (was 2048)"),
        (before, [*before[:3], "2048", *before[4:]], "set --max-model-len 2048 (was 32768)"),
    ]


def test_a_user_fix_of_one_value_is_the_flag_taken_away(reproduced: dict[str, CatalogLine]) -> None:
    """No other value to set it to: the flag removed, its default (16) passes."""
    assert changes(reproduced["invalid-block-size-choose-8-16-or-32"], {"self.block_size": "7"}) == [
        (["--block-size", "7"], [], "remove --block-size")
    ]


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"self.max_num_batched_tokens": "4096", "self.max_model_len": "2048"}, id="values that pass"),
        pytest.param({"self.max_num_batched_tokens": "two thousand"}, id="a value no flag takes as typed"),
        pytest.param({"self.unknown": "2048"}, id="a placeholder no flag sets"),
        pytest.param({}, id="no value"),
    ],
)
def test_no_user_fix_is_made_of_values_the_check_does_not_refuse_or_no_flag_sets(
    reproduced: dict[str, CatalogLine], values: dict[str, str]
) -> None:
    assert user_fixes(reproduced["max-num-batched-tokens-is-smaller-than-max-model"], values) == []


def test_no_user_fix_without_a_reproduction_at_the_serve_level(reproduced: dict[str, CatalogLine]) -> None:
    record = reproduced["invalid-block-size-choose-8-16-or-32"]
    made = record.extraction.reproduction
    assert made is not None
    for reproduction in (None, made.model_copy(update={"serve": None}), made.model_copy(update={"solutions": []})):
        bare = record.model_copy(
            update={"extraction": record.extraction.model_copy(update={"reproduction": reproduction})}
        )
        assert user_fixes(bare, {"self.block_size": "7"}) == []

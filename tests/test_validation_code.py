"""validationCode: a record's condition chain translated to `check(args) -> str | None` over the engine arguments a
`vllm serve` line sets, and kept only when it holds on the lines that ran. Each test is a small record (its source
window, conditions, placeholders and the fields they read, as the extraction writes them) with the lines a
reproduction ran, and pins the check's source and what it says on those lines and on others."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest

from extractor.model.records import CatalogLine
from extractor.reproduce.definitions import read_function
from extractor.reproduce.validation import (
    CatalogFacts,
    Miss,
    Validation,
    catalog_facts,
    compiled_check,
    validation,
)

_AT = "2026-01-01T00:00:00.000Z"


def _ref(expression: str, **known: Any) -> dict[str, Any]:
    """A field as the extraction resolves it: `flags`, `via`/`key`, `default` (its source text), `reason`..."""
    resolved = bool(known.get("field"))
    return {"expression": expression, "resolved": resolved, **known}


def _line(
    source: str,
    message: str,
    conditions: list[tuple[str, str, bool]],
    fields: list[dict[str, Any]],
    *,
    function: str = "Config.__post_init__",
    argv: list[str],
    fixes: list[list[str]],
) -> CatalogLine:
    """A record of `source` (its window, from line 1) raising `message` (an f-string template) at its first
    `raise`, under `conditions` (kind, test, negated), reading `fields`, reproduced by `argv` and fixed by `fixes`."""
    source = textwrap.dedent(source)
    lines = source.split("\n")
    at = next(n for n, text in enumerate(lines, 1) if text.strip().startswith("raise "))
    end = at + next(n for n, text in enumerate(lines[at - 1 :]) if text.rstrip().endswith(")"))
    placeholders, parts, start = [], [], 0
    for number, found in enumerate(re.finditer(r"\{([^{}!]+)(?:!([rsa]))?\}", message)):
        parts.append(re.escape(message[start : found.start()]))
        parts.append(f"(?P<p{number}>.*?)")
        placeholders.append({"expression": found[1], "conversion": found[2], "start": found.start(),
                             "end": found.end(), "group": f"p{number}"})  # fmt: skip
        start = found.end()
    parts.append(re.escape(message[start:]))
    lines_of = {n: text for n, text in enumerate(lines, 1)}
    chain = []
    for kind, test, negated in conditions:
        line = next(n for n, text in lines_of.items() if test.split("\n")[0] in text and kind in text)
        chain.append({"kind": kind, "test": test, "negated": negated, "line": line})
    model = {"architectures": ["LlamaForCausalLM"]}
    made = {
        "verifiedWith": "vllm==0.28.0",
        "level": "serve",
        "message": "",
        "serve": {"argv": argv, "model": model},
        "solutions": [{"change": "a fix", "serve": {"argv": fix, "model": model}} for fix in fixes],
    }
    record = {
        "id": "0123456789abcdef", "repo": "vllm-project/vllm", "slug": "a-check", "errorMessage": message,
        "messagePattern": "".join(parts), "errorType": "validation", "errorClass": "ValueError",
        "filePath": "vllm/config/x.py", "lineNumber": at, "sourceCode": source, "sourceCodeStart": 1,
        "sourceCodeEnd": len(lines), "githubUrl": "https://example.invalid/x.py", "analyzedSha": "0123456",
        "analyzedAt": _AT,
    }  # fmt: skip
    extraction = {
        "placeholders": placeholders, "conditions": chain, "function": function, "cause": None,
        "messageKind": "fstring", "messageSource": None, "column": 8, "endLineNumber": end, "warnings": [],
        "fields": [{"class": function.partition(".")[0], **ref} for ref in fields], "reproduction": made,
    }  # fmt: skip
    return CatalogLine.model_validate({"record": record, "extraction": extraction, "datasetVersion": _AT})


def _checked(line: CatalogLine, facts: CatalogFacts | None = None) -> Validation:
    made = line.extraction.reproduction
    assert made is not None
    return validation(line, made, catalog=facts)


def _check(found: Validation) -> Any:
    assert found.code is not None, found
    return compiled_check(found.code)


def _body(found: Validation) -> str:
    """The check's statements below its docstring."""
    assert found.code is not None, found
    return textwrap.dedent(found.code.split('"""', 2)[2]).strip()


LORA = """\
    def __post_init__(self):
        if self.max_cpu_loras is None:
            self.max_cpu_loras = self.max_loras
        elif self.max_cpu_loras < self.max_loras:
            raise ValueError(
                f"max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras ({self.max_loras})."
            )
"""


def test_fields_read_their_flags_with_their_source_defaults() -> None:
    line = _line(
        LORA,
        "max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras ({self.max_loras}).",
        [("if", "self.max_cpu_loras is None", True), ("elif", "self.max_cpu_loras < self.max_loras", False)],
        [
            _ref("self.max_cpu_loras", field="max_cpu_loras", flags=["--max-cpu-loras"], default="None"),
            _ref("self.max_loras", field="max_loras", flags=["--max-loras"], default="1"),
        ],
        argv=["--enable-lora", "--max-loras", "9", "--max-cpu-loras", "8"],
        fixes=[["--enable-lora", "--max-loras", "9", "--max-cpu-loras", "9"], ["--enable-lora", "--max-loras", "9"]],
    )
    found = _checked(line)
    assert _body(found) == (
        "if not args.get('max_cpu_loras', None) is None and args.get('max_cpu_loras', None) < "
        "args.get('max_loras', 1):\n"
        "    return f\"max_cpu_loras ({args.get('max_cpu_loras', None)}) must be >= max_loras "
        "({args.get('max_loras', 1)}).\"\nreturn None"
    )
    check = _check(found)
    assert check({"max_cpu_loras": 2}) is None  # (max_loras at its default, 1)
    assert check({"max_cpu_loras": 2, "max_loras": 3}) == "max_cpu_loras (2) must be >= max_loras (3)."


PARALLEL = """\
    def _validate_parallel_config(self) -> Self:
        if self.enable_eplb:
            pass
        tp = self.tensor_parallel_size
        pcp = self.prefill_context_parallel_size
        if pcp > 1 and self.data_parallel_size > 1:
            raise ValueError("PCP does not support data parallelism yet.")
        return self
"""
_PARALLEL_FIELDS = [
    _ref("pcp", reason="a value vLLM passes in or works out here, not a setting"),
    _ref("self.data_parallel_size", field="data_parallel_size", flags=["--data-parallel-size", "-dp"], default="1"),
]


def _pcp(source: str) -> CatalogLine:
    """PARALLEL's check (or `source`'s, a variant of it) as reproduced: the trigger's line, and a fix's."""
    return _line(
        source,
        "PCP does not support data parallelism yet.",
        [("if", "pcp > 1 and self.data_parallel_size > 1", False)],
        _PARALLEL_FIELDS,
        function="ParallelConfig._validate_parallel_config",
        argv=["--data-parallel-size", "2", "--prefill-context-parallel-size", "2"],
        fixes=[["--data-parallel-size", "2"]],
    )


def test_a_local_reads_as_the_assignment_before_the_raise_that_defines_it() -> None:
    line = _pcp(PARALLEL)
    # Its field, read by no condition of this record, is another record's (what the catalog resolved).
    elsewhere = _ref("self.prefill_context_parallel_size", field="prefill_context_parallel_size",
                     flags=["--prefill-context-parallel-size"], default="1")  # fmt: skip
    facts = CatalogFacts(fields={("ParallelConfig", "self.prefill_context_parallel_size"): _as_ref(elsewhere)})
    found = _checked(line, facts)
    assert _body(found) == (
        "if args.get('prefill_context_parallel_size', 1) > 1 and args.get('data_parallel_size', 1) > 1:\n"
        "    return f'PCP does not support data parallelism yet.'\nreturn None"
    )
    # Without what the catalog knows, the flag of its name on the lines is read, with no default guessed: the fix
    # line leaves it out, so the check cannot be shown to pass there, and none is kept.
    assert _checked(line) == Validation(None, Miss.FIX, "undecided on every fix")


def _as_ref(data: dict[str, Any]) -> Any:
    from extractor.model.records import FieldRef

    return FieldRef.model_validate({"class": "ParallelConfig", **data})


@pytest.mark.parametrize(
    ("between", "why"),
    [
        pytest.param("if self.enable_eplb:\n            pcp = 1", "pcp", id="rebound in a branch between"),
        pytest.param("self.prefill_context_parallel_size = 4", "pcp", id="what it reads assigned between"),
        pytest.param("for pcp in range(3):\n            pass", "pcp", id="a loop target between"),
    ],
)
def test_a_local_is_not_read_when_anything_rebinds_it_or_what_it_reads_before_the_raise(between: str, why: str) -> None:
    line = _pcp(PARALLEL.replace("        if pcp > 1", f"        {between}\n        if pcp > 1"))
    assert _checked(line) == Validation(None, Miss.CONDITION, why)


def test_a_local_assigned_only_in_a_branch_or_above_the_window_is_not_read() -> None:
    branch = PARALLEL.replace(
        "        pcp = self.prefill", "        if self.enable_eplb:\n            pcp = self.prefill"
    )
    function = read_function(textwrap.dedent(branch), 1, 8, 8)
    assert function is not None and function.definition("pcp") is None and function.definition("tp") is not None
    # A window that starts inside the function: what it holds is read, what it does not is not guessed.
    window = "\n".join(textwrap.dedent(PARALLEL).split("\n")[4:])
    cut = read_function(window, 5, 7, 7)
    assert cut is not None and cut.node is None
    assert cut.definition("pcp") is not None and cut.definition("tp") is None


CUSTOM_OPS = """\
    def __post_init__(self) -> None:
        for op in self.custom_ops:
            if op not in {"all", "none"} and (len(op) < 2 or op[0] not in {"+", "-"}):
                raise ValueError(
                    f"Invalid syntax '{op}' for custom op, must be 'all', 'none', '+op' or '-op'"
                )
"""


def test_a_loop_around_the_raise_is_a_loop_of_the_check_and_subscripts_of_its_values_are_read() -> None:
    line = _line(
        CUSTOM_OPS,
        "Invalid syntax '{op}' for custom op, must be 'all', 'none', '+op' or '-op'",
        [("for", "op in self.custom_ops", False),
         ("if", 'op not in {"all", "none"} and (len(op) < 2 or op[0] not in {"+", "-"})', False)],
        [_ref("op"), _ref("self.custom_ops", field="custom_ops", via="--compilation-config", key="custom_ops",
                          default="list()")],
        function="CompilationConfig.__post_init__",
        argv=["--compilation-config", '{"custom_ops": ["+"]}'],
        fixes=[[]],
    )  # fmt: skip
    found = _checked(line)
    assert _body(found) == (
        "for op in args.get('compilation_config', {}).get('custom_ops', []):\n"
        "    if op not in {'all', 'none'} and (len(op) < 2 or op[0] not in {'+', '-'}):\n"
        "        return f\"Invalid syntax '{op}' for custom op, must be 'all', 'none', '+op' or '-op'\"\n"
        "return None"
    )
    check = _check(found)
    assert check({"compilation_config": {"custom_ops": ["all", "+rms_norm", "x"]}}) == (
        "Invalid syntax 'x' for custom op, must be 'all', 'none', '+op' or '-op'"
    )
    assert check({"compilation_config": {"custom_ops": ["-rms_norm"]}}) is None


POOLER = """\
    def __post_init__(self) -> None:
        if pooling_type := self.pooling_type:
            if self.seq_pooling_type is not None:
                raise ValueError(
                    "Cannot set both `pooling_type` and `seq_pooling_type`"
                )
"""


def test_a_walrus_in_a_condition_reads_as_its_value() -> None:
    line = _line(
        POOLER,
        "Cannot set both `pooling_type` and `seq_pooling_type`",
        [("if", "pooling_type := self.pooling_type", False), ("if", "self.seq_pooling_type is not None", False)],
        [_ref("pooling_type"), _ref("self.pooling_type", field="pooling_type", default="None"),
         _ref("self.seq_pooling_type", field="seq_pooling_type", default="None")],
        function="PoolerConfig.__post_init__",
        argv=["--pooler-config", '{"pooling_type": "CLS", "seq_pooling_type": "CLS"}'],
        fixes=[["--pooler-config", '{"seq_pooling_type": "CLS"}']],
    )  # fmt: skip
    found = _checked(line)  # (the fields have no flag of their own: the JSON flag the lines set holds them)
    assert _body(found).startswith(
        "if args.get('pooler_config', {}).get('pooling_type', None) and "
        "args.get('pooler_config', {}).get('seq_pooling_type', None) is not None:"
    )


NUMA = """\
    @field_validator("numa_bind_nodes")
    @classmethod
    def _validate_numa_bind_nodes(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if any(node < 0 for node in value):
            raise ValueError("numa_bind_nodes must contain non-negative integers.")
        return value
"""


def test_a_field_validators_value_is_its_field_and_an_early_exit_before_the_raise_a_condition() -> None:
    line = _line(
        NUMA,
        "numa_bind_nodes must contain non-negative integers.",
        [("if", "any(node < 0 for node in value)", False)],
        [_ref("node"), _ref("value")],
        function="ParallelConfig._validate_numa_bind_nodes",
        argv=["--numa-bind-nodes", "-1"],
        fixes=[[]],
    )
    facts = CatalogFacts(fields={("ParallelConfig", "self.numa_bind_nodes"): _as_ref(
        _ref("self.numa_bind_nodes", field="numa_bind_nodes", flags=["--numa-bind-nodes"], default="None",
             annotation="list[int] | None"))})  # fmt: skip
    found = _checked(line, facts)
    assert _body(found) == (
        "for flag in ('numa_bind_nodes',):\n"
        "    if flag in args and (not isinstance(args[flag], list | None)):\n"
        "        args = {**args, flag: [args[flag]]}\n"
        "if not args.get('numa_bind_nodes', None) is None and any((node < 0 for node in "
        "args.get('numa_bind_nodes', None))):\n"
        "    return f'numa_bind_nodes must contain non-negative integers.'\nreturn None"
    )
    check = _check(found)
    assert check({"numa_bind_nodes": -1}) == "numa_bind_nodes must contain non-negative integers."  # (one value)
    assert check({"numa_bind_nodes": [0, 1]}) is None and check({}) is None


MAMBA = """\
    def validate_ssu_algorithm(self) -> None:
        if self.ssu_algorithm is None:
            return
        if self.backend != MambaBackendEnum.FLASHINFER:
            raise ValueError("Mamba SSU algorithm selection is only supported with the FlashInfer backend.")
"""


def test_an_enum_member_is_compared_by_its_name_with_the_text_a_flag_sets() -> None:
    line = _line(
        MAMBA,
        "Mamba SSU algorithm selection is only supported with the FlashInfer backend.",
        [("if", "self.backend != MambaBackendEnum.FLASHINFER", False)],
        [_ref("self.backend", field="backend", flags=["--mamba-backend"], default="MambaBackendEnum.TRITON"),
         _ref("MambaBackendEnum.FLASHINFER")],
        function="MambaConfig.validate_ssu_algorithm",
        argv=["--mamba-ssu-algorithm", "auto"],
        fixes=[["--mamba-ssu-algorithm", "auto", "--mamba-backend", "flashinfer"], []],
    )  # fmt: skip
    facts = CatalogFacts(
        fields={
            ("MambaConfig", "self.ssu_algorithm"): _as_ref(
                _ref("self.ssu_algorithm", field="ssu_algorithm", flags=["--mamba-ssu-algorithm"], default="None")
            )
        }
    )
    check = _check(_checked(line, facts))
    assert check({"mamba_ssu_algorithm": "auto", "mamba_backend": "FlashInfer"}) is None
    assert check({"mamba_ssu_algorithm": "auto", "mamba_backend": "triton"}) is not None
    assert check({"mamba_ssu_algorithm": "auto"}) is not None  # (its default, TRITON)
    with pytest.raises(AttributeError):  # (a number names no member: undecided, not a guess)
        check({"mamba_ssu_algorithm": "auto", "mamba_backend": 3})


def test_a_config_the_serve_path_always_builds_is_present_and_a_placeholder_no_flag_sets_is_kept_as_written() -> None:
    source = """\
        def __post_init__(self):
            if self.model_config is not None and self.model_config.enable_return_routed_experts:
                if self.parallel_config.pipeline_parallel_size > 1:
                    raise ValueError(f"Routed experts and PP > 1, roles are {get_args(KVRole)}.")
    """
    line = _line(
        source,
        "Routed experts and PP > 1, roles are {get_args(KVRole)}.",
        [("if", "self.model_config is not None and self.model_config.enable_return_routed_experts", False),
         ("if", "self.parallel_config.pipeline_parallel_size > 1", False)],
        [_ref("self.model_config", field="model_config", annotation="ModelConfig", default="None"),
         _ref("self.model_config.enable_return_routed_experts", field="enable_return_routed_experts",
              flags=["--enable-return-routed-experts"], default="False"),
         _ref("self.parallel_config.pipeline_parallel_size", field="pipeline_parallel_size",
              flags=["--pipeline-parallel-size", "-pp"], default="1")],
        function="VllmConfig.__post_init__",
        argv=["--enable-return-routed-experts", "--pipeline-parallel-size", "2"],
        fixes=[["--pipeline-parallel-size", "2"]],
    )  # fmt: skip
    found = _checked(line)
    assert _body(found).startswith(
        "if args.get('enable_return_routed_experts', False) and args.get('pipeline_parallel_size', 1) > 1:"
    )
    assert "left as its source writes it: `{get_args(KVRole)}`" in str(found.code)
    assert _check(found)({"enable_return_routed_experts": True, "pipeline_parallel_size": 4}) == (
        "Routed experts and PP > 1, roles are {get_args(KVRole)}."
    )


BATCHED = """\
    def verify(self):
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller.")
"""


def test_a_default_a_fix_line_contradicts_or_vllm_sets_itself_is_not_guessed() -> None:
    line = _line(
        BATCHED,
        "max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller.",
        [("if", "self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill", False)],
        [_ref("self.max_num_batched_tokens", field="max_num_batched_tokens", flags=["--max-num-batched-tokens"],
              default="2048"),
         _ref("self.max_model_len", field="max_model_len", flags=["--max-model-len"], default="None",
              reason="vLLM may set it itself, in ModelConfig.__post_init__, whatever the flag says"),
         _ref("self.enable_chunked_prefill", field="enable_chunked_prefill", flags=["--enable-chunked-prefill"],
              default="True", reason="vLLM may set it itself, in SchedulerConfig.__post_init__, whatever it says")],
        function="SchedulerConfig.verify",
        argv=["--max-model-len", "4096", "--max-num-batched-tokens", "2048", "--no-enable-chunked-prefill"],
        # (the second fix left --max-num-batched-tokens out and passed: vLLM's own value is not 2048)
        fixes=[["--max-model-len", "4096", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"],
               ["--max-model-len", "4096", "--no-enable-chunked-prefill"]],
    )  # fmt: skip
    found = _checked(line)
    assert _body(found).startswith(
        "if args['max_num_batched_tokens'] < args['max_model_len'] and (not args['enable_chunked_prefill']):"
    )
    facts = catalog_facts([line])
    assert facts.undefaulted == {"max_num_batched_tokens"}


@pytest.mark.parametrize(
    ("test", "why"),
    [
        pytest.param("not current_platform.is_cuda()", "call of current_platform.is_cuda", id="a platform's method"),
        pytest.param("self.uses_draft_model()", "call of self.uses_draft_model", id="a method of the config"),
        pytest.param("self.x.__class__", "self.x.__class__", id="a dunder"),
        pytest.param('"x" * self.x > ""', "a repeated sequence", id="a repeated text"),
        pytest.param("open(self.x)", "call of open", id="a builtin that is not pure"),
        pytest.param("self.x.format(1)", "call of self.x.format", id="a method that reads attributes"),
        pytest.param("lambda: 1", "Lambda", id="a lambda"),
        pytest.param("isinstance(self.x, ArgsKwargs)", "isinstance of ArgsKwargs", id="isinstance of a class"),
    ],
)
def test_a_condition_is_read_only_through_the_allow_list(test: str, why: str) -> None:
    source = f"""\
        def __post_init__(self):
            if {test}:
                raise ValueError("x is wrong.")
    """
    line = _line(
        source, "x is wrong.", [("if", test, False)],
        [_ref("self.x", field="x", flags=["--x"], default="0")], argv=["--x", "1"], fixes=[[]],
    )  # fmt: skip
    assert _checked(line) == Validation(None, Miss.CONDITION, why)


def test_string_methods_isinstance_and_the_name_of_a_type_are_read() -> None:
    source = """\
        def __post_init__(self):
            if not isinstance(self.path, str) or self.path.lower().startswith("s3://"):
                raise ValueError(f"path must be local, got {type(self.path).__name__}: {self.path!r}")
    """
    line = _line(
        source,
        "path must be local, got {type(self.path).__name__}: {self.path!r}",
        [("if", 'not isinstance(self.path, str) or self.path.lower().startswith("s3://")', False)],
        [_ref("self.path", field="path", flags=["--path"], default='""')],
        argv=["--path", "S3://bucket"],
        fixes=[[]],
    )
    check = _check(_checked(line))
    assert check({"path": "S3://b"}) == "path must be local, got str: 'S3://b'"
    assert check({"path": 3}) == "path must be local, got int: 3"
    assert check({"path": "/tmp/x"}) is None


def test_a_check_that_fires_on_a_line_that_passed_or_is_silent_on_the_trigger_is_not_kept() -> None:
    source = """\
        def __post_init__(self):
            if self.x > 1:
                raise ValueError("x is too large.")
    """
    fields = [_ref("self.x", field="x", flags=["--x"], default="0")]
    fires = _line(source, "x is too large.", [("if", "self.x > 1", False)], fields, argv=["--x", "2"],
                  fixes=[["--x", "3"]])  # fmt: skip
    assert _checked(fires) == Validation(None, Miss.FIX, "'x is too large.' on {'x': 3}")
    silent = _line(source, "x is too large.", [("if", "self.x > 1", False)], fields, argv=["--x", "1"], fixes=[[]])
    assert _checked(silent) == Validation(None, Miss.TRIGGER, "None")
    unfixed = _line(source, "x is too large.", [("if", "self.x > 1", False)], fields, argv=["--x", "2"], fixes=[])
    assert _checked(unfixed) == Validation(None, Miss.NO_FIX_LINE)


def test_a_check_runs_with_no_builtins_but_pure_ones() -> None:
    check = compiled_check("def check(args: dict) -> str | None:\n    return open('/etc/hostname').read()\n")
    with pytest.raises(NameError):
        check({})


def test_comprehensions_nested_deeper_than_two_are_refused_their_work_multiplies() -> None:
    test = "any(a == b == c for a in [1, 2] for b in [1, 2] for c in self.x)"
    source = f"""\
        def __post_init__(self):
            if {test}:
                raise ValueError("x is wrong.")
    """
    line = _line(source, "x is wrong.", [("if", test, False)],
                 [_ref("self.x", field="x", flags=["--x"], default="[]")], argv=["--x", "1"], fixes=[[]])  # fmt: skip
    assert _checked(line) == Validation(None, Miss.CONDITION, "comprehensions nested too deep")


def test_the_store_key_leaves_out_only_modules_that_no_module_making_a_reproduction_imports() -> None:
    """An edit to the second half (filled, validation, reads, definitions) or to explain's fix runs no record again:
    the store's key leaves them out, which holds only while nothing that makes a reproduction imports them."""
    import ast
    from pathlib import Path

    from extractor.query.reproductions import READERS

    package = Path(__file__).resolve().parent.parent / "extractor"
    readers = {f"extractor.{name.removesuffix('.py').replace('/', '.')}" for name in READERS}
    assert all((package / name).is_file() for name in READERS)
    for path in sorted((package / "reproduce").glob("*.py")):
        if path.relative_to(package).as_posix() in READERS:
            continue
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {f"{node.module}.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     for alias in node.names if node.module}  # fmt: skip
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        named = {f"extractor.reproduce.{c.value}" for c in ast.walk(tree)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)}  # (import_module by name)  # fmt: skip
        assert not (imported | named) & readers, path.name

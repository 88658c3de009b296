"""Fields: config classes and CLI flags read from source, attribute chains resolved, explained as a page."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
import pytest

from extractor.model.records import CatalogLine, FieldRef
from extractor.pipeline.extract import ExtractOptions, extract
from extractor.pipeline.write import dumps_line
from extractor.scanning.chains import chains
from tests.conftest import GitRepo, cli

CONFIG = '''
from pydantic import Field
from dataclasses import field


class SchedulerConfig:
    max_num_batched_tokens: int = Field(default=2048, ge=1)
    """Maximum number of tokens per step.

    More text."""
    async_scheduling: bool | None = None
    """Schedule asynchronously."""
    mode: bool | str | None = None
    """A flag with an optional value."""

    def verify(self, max_model_len):
        if self.max_num_batched_tokens < max_model_len and not self.async_scheduling:
            raise ValueError(f"batched ({self.max_num_batched_tokens}) < {max_model_len}")


class ModelConfig:
    max_model_len: int = 4096
    """The context length."""
    hidden: int = field(default=0, init=False)


class SpeculativeConfig:
    draft_model_config: ModelConfig | None = None
    """The draft model."""
    padded: bool = False
    """Disable padding."""
    target: int = 0
    """Set by the engine."""


class VllmConfig:
    model_config: ModelConfig = Field(default_factory=ModelConfig)
    """Model."""
    scheduler_config: SchedulerConfig = Field(default_factory=SchedulerConfig)
    """Scheduler."""
    speculative_config: SpeculativeConfig | None = None
    """Speculation."""

    def __post_init__(self):
        if self.speculative_config is not None and self.speculative_config.padded:
            raise ValueError("no padding with speculation")
        if self.speculative_config.draft_model_config.max_model_len > self.model_config.max_model_len:
            raise ValueError("draft longer than target")
        if self.speculative_config.target or self.model_config.hidden:
            raise ValueError(f"{self.speculative_config.target}")
'''

ARGS = """
class EngineArgs:
    def add_cli_args(parser):
        scheduler_kwargs = get_kwargs(SchedulerConfig)
        parser.add_argument(
            "--max-num-batched-tokens", **{**scheduler_kwargs["max_num_batched_tokens"], "default": None}
        )
        parser.add_argument("--async-scheduling", **scheduler_kwargs["async_scheduling"])
        parser.add_argument("--mode", **scheduler_kwargs["mode"])
        model_kwargs = get_kwargs(ModelConfig)
        length = model_kwargs["max_model_len"]
        parser.add_argument("--max-model-len", **length)
        vllm_kwargs = get_kwargs(VllmConfig)
        parser.add_argument("--speculative-config", "-sc", **vllm_kwargs["speculative_config"])

    def create_speculative_config(self):
        self.speculative_config.update({"target": 1})
"""


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[CatalogLine]:
    repo = GitRepo(tmp_path_factory.mktemp("fields") / "repo")
    repo.commit({"vllm/config/all.py": CONFIG, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    return list(extract(repo=str(repo.path), revision="v1", options=ExtractOptions(cache=False)).lines)


def fields_of(lines: list[CatalogLine], needle: str) -> dict[str, dict[str, object]]:
    (line,) = [line for line in lines if needle in line.record.errorMessage]
    return {f.expression: f.model_dump(by_alias=True) for f in line.extraction.fields}


def test_fields_written_as_data_are_the_models_json(tmp_path: Path) -> None:
    """The fields of a record are written as data (no FieldRef is made): each one, resolved or not, is the
    model's JSON key for key, in the model's order, and the catalog's bytes are the validated lines'."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/all.py": CONFIG, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    catalog = extract(repo=str(repo.path), revision="v1", options=ExtractOptions(cache=False))
    written = [field for line in catalog.encoded.splitlines() for field in orjson.loads(line)["extraction"]["fields"]]
    assert {field["resolved"] for field in written} == {True, False}
    for field in written:
        dumped = FieldRef.model_validate(field).model_dump(mode="json", by_alias=True)
        assert list(dumped.items()) == list(field.items())
    assert catalog.encoded == b"".join(dumps_line(line) + b"\n" for line in catalog.lines)
    assert all(b'"reproduction"' not in line for line in catalog.encoded.splitlines())  # (set by reproduce alone)


def test_field_facts_flags_and_unresolved_parameters(lines: list[CatalogLine]) -> None:
    fields = fields_of(lines, "batched (")
    assert list(fields) == ["self.max_num_batched_tokens", "max_model_len", "self.async_scheduling"]
    batched = fields["self.max_num_batched_tokens"]
    assert (batched["class"], batched["field"], batched["annotation"], batched["default"]) == (
        "SchedulerConfig",
        "max_num_batched_tokens",
        "int",
        "2048",
    )
    assert batched["constraints"] == ["ge=1"] and batched["doc"] == "Maximum number of tokens per step.\n\nMore text."
    assert batched["flags"] == ["--max-num-batched-tokens"] and batched["resolved"]
    assert fields["self.async_scheduling"]["flags"] == ["--async-scheduling", "--no-async-scheduling"]
    assert (fields["max_model_len"]["resolved"], fields["max_model_len"]["reason"]) == (
        False,
        "a value vLLM passes in or works out here, not a setting; the setting of that name, "
        "ModelConfig.max_model_len, is set with --max-model-len",
    )


def test_field_without_a_flag_is_set_through_its_parents_json(lines: list[CatalogLine]) -> None:
    fields = fields_of(lines, "no padding")
    padded = fields["self.speculative_config.padded"]
    assert (padded["flags"], padded["via"], padded["key"]) == ([], "--speculative-config", "padded")
    assert fields["self.speculative_config"]["flags"] == ["--speculative-config", "-sc"]


def test_flags_belong_to_the_instance_the_command_line_sets(lines: list[CatalogLine]) -> None:
    fields = fields_of(lines, "draft longer")
    assert fields["self.model_config.max_model_len"]["flags"] == ["--max-model-len"]
    draft = fields["self.speculative_config.draft_model_config.max_model_len"]
    assert draft["resolved"] and draft["flags"] == [] and draft["via"] is None


def test_derived_fields_say_so(lines: list[CatalogLine]) -> None:
    fields = fields_of(lines, "{self.speculative_config.target}")
    assert fields["self.speculative_config.target"]["via"] is None
    assert "set by the CLI code" in str(fields["self.speculative_config.target"]["reason"])
    hidden = fields["self.model_config.hidden"]
    assert (hidden["reason"], hidden["flags"], hidden["via"]) == ("derived by vLLM: init=False", [], None)


def test_related_records_share_a_function_or_a_field(lines: list[CatalogLine]) -> None:
    by_message = {line.record.errorMessage: line for line in lines}
    padding = by_message["no padding with speculation"]
    assert by_message["draft longer than target"].record.id in padding.extraction.related
    assert padding.record.id not in padding.extraction.related


def test_chains_skip_calls_strings_and_keywords() -> None:
    assert chains("self.a.b not in get_args(Types) and x.y() == 'self.z' and not w") == ("self.a.b", "Types", "x", "w")


def test_chains_skip_builtins_but_not_attributes_of_a_local_named_like_one() -> None:
    """`str`, `len`, `isinstance`, `Exception` are Python's, never fields; `input.ndim` reads a local."""
    test = "not isinstance(n, (str, int)) or n in (None, len) or issubclass(t, Exception) or input.ndim > k"
    assert chains(test) == ("n", "n", "t", "input.ndim", "k")


# Where the statements facts look for can hide: assignments to self in every kind of block of a
# __post_init__ (a nested def's too), and flag calls in the headers of compound statements, in nested defs,
# comprehensions, lambdas, defaults, decorators and in a statement spread over lines.
HIDDEN = """
from dataclasses import dataclass


@dataclass
class HiddenConfig:
    a: int = 1
    b: int = 2

    def __post_init__(self):
        self.a = 1
        for x in range(3):
            self.b += x
        else:
            self.c: int = 3
        while False:
            pass
        with open(f) as g:
            self.d = g
        try:
            self.e = 1
        except OSError:
            self.f = 2
        else:
            self.g = 3
        finally:
            self.h = 4
        match self.a:
            case 1:
                self.i = 5
        if (y := 2) and self.a:
            self.j = [self.k for self.k in ()]

        def inner():
            self.l = 6

        class Inner:
            m = self.n = 7


def make(parser, kwargs=parser.add_argument("--in-default", **kw["a"])):
    kw = get_kwargs(HiddenConfig)
    alias = kw["b"]
    if parser.add_argument("--in-a-test", **kw["a"]):
        parser.add_argument("--aliased", **alias)
    with x.update({"a": 1}) as y:
        [parser.add_argument(f"--{n}", **kw[n]) for n in names]
    lambda: parser.add_argument("--in-a-lambda", **kw["b"])
    parser.add_argument(
        "--spread",
        **{**kw["b"], "default": 1},
    )
    self.kwargs["a"] = 1
    self.options.update({"b": 2})

    @decorate(parser.add_argument("--in-a-decorator", **kw["a"]))
    def nested():
        other = get_kwargs(HiddenConfig)
        parser.add_argument("--nested", **other["a"])
"""


def test_facts_read_what_every_node_gives_reading_fewer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Facts leave out the expressions of simple statements that cannot hold what they look for (a big
    CLI module is mostly such): what they read is what reading every node of the tree gives."""
    import ast

    import extractor.scanning.facts
    from extractor.scanning.scan import _scan_text
    from extractor.scanning.source import ScanOptions, split_lines

    def facts() -> tuple[object, object]:
        result = _scan_text(HIDDEN, split_lines(HIDDEN), ScanOptions(), facts=True)
        return result.classes, result.flags

    pruned = facts()
    monkeypatch.setattr(extractor.scanning.facts, "_walk", lambda node, bare: ast.walk(node))
    assert pruned == facts()
    (config,) = pruned[0]  # type: ignore[misc]
    assert config.postInit == list("abcdefghijln")  # (a comprehension's target is no assignment)
    found = sorted(option for flag in pruned[1].flags for option in flag[2])  # type: ignore[attr-defined]
    assert found == sorted(
        ["--in-default", "--in-a-test", "--aliased", "--in-a-lambda", "--spread", "--in-a-decorator", "--nested"]
    )
    assert pruned[1].overwritten == [("kwargs", "a"), ("options", "b")]  # type: ignore[attr-defined]


@pytest.fixture
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    repo = GitRepo(tmp_path_factory.mktemp("explain") / "repo")
    repo.commit({"vllm/config/all.py": CONFIG, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    out = tmp_path_factory.mktemp("out")
    assert cli("--repo", str(repo.path), "--sha", "v1", "--output", str(out)).returncode == 0
    (directory,) = out.iterdir()
    return str(directory)


def explain(catalog: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("explain", "--catalog", catalog, *args)


def test_explain_by_text_id_and_slug(catalog_dir: str) -> None:
    text = explain(catalog_dir, "ValueError: batched (100) < 4096")
    assert text.returncode == 0, text.stderr
    assert "vllm/config/all.py:18" in text.stdout and "--max-num-batched-tokens" in text.stdout
    assert "self.max_num_batched_tokens = 100" in text.stdout
    assert "\nWhen       `self.max_num_batched_tokens < max_model_len and not self.async_scheduling`\n" in text.stdout
    document = json.loads(explain(catalog_dir, "ValueError: batched (100) < 4096", "--format", "json").stdout)
    record_id, slug = document["record"]["id"], document["record"]["slug"]
    assert explain(catalog_dir, record_id).stdout == text.stdout.replace(
        "Values     self.max_num_batched_tokens = 100, max_model_len = 4096\n", ""
    )
    assert explain(catalog_dir, slug).returncode == 0


def test_explain_markdown_has_a_fields_table_and_nothing_found_exits_1(catalog_dir: str) -> None:
    markdown = explain(catalog_dir, "no padding with speculation", "--format", "markdown").stdout
    assert markdown.startswith("# ValueError: no-padding-with-speculation\n")
    assert "| field | set with | default | constraints | meaning |" in markdown
    assert "| `SpeculativeConfig.padded` | --speculative-config (JSON key `padded`) |" in markdown
    missing = explain(catalog_dir, "nothing like this at all")
    assert (missing.returncode, missing.stdout) == (1, "")


def test_a_renamed_flag_shows_in_diff_as_modified_fields(tmp_path_factory: pytest.TempPathFactory) -> None:
    from extractor.catalog.load import open_catalog
    from extractor.query.diff import diff_catalogs

    repo = GitRepo(tmp_path_factory.mktemp("rename") / "repo")
    repo.commit({"vllm/config/all.py": CONFIG, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    repo.commit(
        {"vllm/engine/arg_utils.py": ARGS.replace("--max-num-batched-tokens", "--max-batched-tokens")}, tag="v2"
    )
    options = ExtractOptions(cache=False)
    diff = diff_catalogs(
        open_catalog("v1", repo=str(repo.path), options=options),
        open_catalog("v2", repo=str(repo.path), options=options),
    )
    changed = [(c.kind.value, c.fields) for c in diff.changes if c.kind.value != "unchanged"]
    assert changed == [("modified", ("fields",))]


OWN_FLAGS_CONFIG = """
class ParallelConfig:
    data_parallel_size: int = 1
    data_parallel_size_local: int = 1
    data_parallel_rank: int = 0
    data_parallel_master_ip: str = "127.0.0.1"
    prefill_backend: str | None = None
    not_a_flag: int = 0

    def check(self):
        if (
            self.data_parallel_size_local > self.data_parallel_size
            or self.data_parallel_rank < 0
            or self.data_parallel_master_ip == ""
            or self.prefill_backend == "x"
            or self.not_a_flag
        ):
            raise ValueError("bad parallel settings")


class VllmConfig:
    parallel_config: ParallelConfig | None = None
"""

OWN_FLAGS_ARGS = """
class EngineArgs:
    def add_cli_args(parser):
        parallel_kwargs = get_kwargs(ParallelConfig)
        group = parser.add_argument_group(title="ParallelConfig")
        group.add_argument("--data-parallel-size", "-dp", **parallel_kwargs["data_parallel_size"])
        group.add_argument("--data-parallel-size-local", "-dpl", type=int, help="Replicas on this node.")
        group.add_argument("--data-parallel-rank", "-dpn", type=int)
        group.add_argument("--data-parallel-address", "-dpa", type=str)
        parser.add_argument("--prefill", dest="prefill_backend", choices=["a", "b"])
        parser.add_argument("--not-passed-on", type=int)

    def create_engine_config(self):
        data_parallel_size_local = self.data_parallel_size_local or 1
        data_parallel_address = self.data_parallel_address
        return ParallelConfig(
            data_parallel_size=self.data_parallel_size,
            data_parallel_size_local=data_parallel_size_local,
            data_parallel_rank=self.data_parallel_rank or 0,
            data_parallel_master_ip=data_parallel_address,
            prefill_backend=self.prefill_backend,
            not_a_flag=self.not_passed_on + 1,
        )
"""


def test_a_flag_added_with_its_own_add_argument_sets_the_field_it_is_passed_to(tmp_path: Path) -> None:
    """vLLM adds `--data-parallel-size-local` (`-dpl`) with an `add_argument` of its own, not a config's
    kwargs, and passes the value on to `ParallelConfig(data_parallel_size_local=...)`: explain showed an
    empty "set with" for it (issue 56, 13). Every way of passing it on names the flag; a value computed from
    it (`self.not_passed_on + 1`) is not the flag's."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/parallel.py": OWN_FLAGS_CONFIG, "vllm/engine/arg_utils.py": OWN_FLAGS_ARGS}, tag="v1")
    lines = list(extract(repo=str(repo.path), revision="v1", options=ExtractOptions(cache=False)).lines)
    fields = fields_of(lines, "bad parallel settings")
    assert {chain: found["flags"] for chain, found in fields.items()} == {
        "self.data_parallel_size_local": ["--data-parallel-size-local", "-dpl"],
        "self.data_parallel_size": ["--data-parallel-size", "-dp"],
        "self.data_parallel_rank": ["--data-parallel-rank", "-dpn"],
        "self.data_parallel_master_ip": ["--data-parallel-address", "-dpa"],
        "self.prefill_backend": ["--prefill"],
        "self.not_a_flag": [],
    }


def test_a_default_written_as_a_constant_is_shown_as_its_value() -> None:
    """explain showed `max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS` (issue 56, 14): a name
    the module or the class binds to a literal is shown as the value a user would pass, in a default and in
    a constraint alike; a name bound to anything else stays as written."""
    from extractor.scanning.scan import _scan_text
    from extractor.scanning.source import ScanOptions, split_lines

    source = """
BLOCK = 16 * 1024 * 1024
MODE = "auto"
LATER = 1
LATER = compute()


class LoadConfig:
    DEFAULT_MAX_NUM_BATCHED_TOKENS: ClassVar[int] = 2048
    tokens: int = Field(default=DEFAULT_MAX_NUM_BATCHED_TOKENS, ge=1, le=BLOCK)
    block: int = BLOCK
    mode: str = MODE
    later: int = LATER
    elsewhere: int = IMPORTED
    huge: int = 2**4096
    negative: int = Field(default=-BLOCK)
"""
    result = _scan_text(source, split_lines(source), ScanOptions(), facts=True)
    ((config,),) = [result.classes]
    assert [(f.name, f.default, f.constraints) for f in config.fields] == [
        ("tokens", "2048", ["ge=1", "le=16777216"]),
        ("block", "16777216", []),
        ("mode", '"auto"', []),
        ("later", "LATER", []),
        ("elsewhere", "IMPORTED", []),
        ("huge", "2**4096", []),
        ("negative", "-BLOCK", []),
    ]


USER_CONFIG = '''
class ModelConfig:
    max_model_len: int = 4096
    """The context length."""


class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    """Maximum number of tokens per step."""
    enable_chunked_prefill: bool = True
    """Chunk prefills."""

    def __post_init__(self, is_encoder_decoder):
        if is_encoder_decoder:
            self.enable_chunked_prefill = False

    def verify(self, max_model_len):
        if self.max_num_batched_tokens < max_model_len and not self.enable_chunked_prefill:
            raise ValueError(f"batched ({self.max_num_batched_tokens}) < {max_model_len}")


class VllmConfig:
    model_config: ModelConfig | None = None
    scheduler_config: SchedulerConfig | None = None
'''

USER_ARGS = """
class EngineArgs:
    def add_cli_args(parser):
        scheduler_kwargs = get_kwargs(SchedulerConfig)
        parser.add_argument("--max-num-batched-tokens", **scheduler_kwargs["max_num_batched_tokens"])
        parser.add_argument("--enable-chunked-prefill", **scheduler_kwargs["enable_chunked_prefill"])
        model_kwargs = get_kwargs(ModelConfig)
        parser.add_argument("--max-model-len", **model_kwargs["max_model_len"])
"""


def test_explain_says_what_a_check_reads_as_a_user_of_the_command_line_reads_it(tmp_path: Path) -> None:
    """explain said "Also read max_model_len (a name starting at a local, parameter or global, not self)",
    and offered --enable-chunked-prefill as a way out where vLLM's own __post_init__ sets the field
    (issue 56, 14): a value passed in names the setting of its name, and a flag vLLM may override says so."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/all.py": USER_CONFIG, "vllm/engine/arg_utils.py": USER_ARGS}, tag="v1")
    result = cli("explain", "--catalog", "v1", "--repo", str(repo.path), "batched", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    fields = result.stdout.split("\nFields\n")[1]
    assert fields == (
        "  SchedulerConfig.max_num_batched_tokens: int = 2048\n"
        "      set with: --max-num-batched-tokens\n"
        "      Maximum number of tokens per step.\n"
        "  SchedulerConfig.enable_chunked_prefill: bool = True\n"
        "      set with: --enable-chunked-prefill, --no-enable-chunked-prefill; but vLLM may set it itself, in "
        "SchedulerConfig.__post_init__, whatever the flag says\n"
        "      Chunk prefills.\n"
        "\n"
        "Also read\n"
        "  max_model_len: a value vLLM passes in or works out here, not a setting; the setting of that name, "
        "ModelConfig.max_model_len, is set with --max-model-len\n"
    )
    markdown = cli("explain", "--catalog", "v1", "--repo", str(repo.path), "batched", "--format", "markdown")
    assert (
        "Also read:\n\n- `max_model_len`: a value vLLM passes in or works out here, not a setting; the setting of "
        "that name, ModelConfig.max\\_model\\_len, is set with --max-model-len\n"
    ) in markdown.stdout

"""End to end on real vLLM releases (sdists from the package index, built into a tagged git repository)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from extractor.catalog.load import open_catalog
from extractor.model.records import CatalogLine
from extractor.model.schema import json_schema
from extractor.pipeline.cache import ScanCache, wait_for_writes
from extractor.pipeline.extract import ExtractOptions, extract
from extractor.query.diff import CatalogDiff, diff_catalogs
from extractor.query.match.matcher import Matcher
from extractor.repo.git.blobs import list_blobs, read_blobs
from extractor.repo.git.commit import resolve
from tests.conftest import cli, copy_scans
from tests.rendering import collector_paused, statements

pytestmark = pytest.mark.release
# The downstream reference: a published record and the messages of three rendered pages (copied here).
DATA = Path(__file__).parent / "data"


def ast_sites(repo: Path, revision: str, prefix: str) -> set[tuple[str, int]]:
    """Count `raise ValueError` sites independently, with Python's ast alone (a file that never spells
    `raise` and `ValueError` cannot hold one: only the others are parsed; a raise is a statement, so only
    statements are visited)."""
    commit = resolve(str(repo), revision)
    found = set()
    with collector_paused():
        for blob, data in read_blobs(commit, list_blobs(commit, [prefix])):
            if b"ValueError" not in data or b"raise" not in data:
                continue
            for node, _ in statements(ast.parse(data)):
                if isinstance(node, ast.Raise) and node.exc is not None:
                    target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    name = getattr(target, "id", None) or getattr(target, "attr", None)
                    if name == "ValueError":
                        found.add((blob.path, node.lineno))
    return found


@pytest.fixture(scope="module")
def config_028(vllm_repo: Path) -> list[CatalogLine]:
    return list(extract(repo=str(vllm_repo), revision="v0.28.0", options=ExtractOptions()).lines)


def by_message(lines: list[CatalogLine], needle: str) -> CatalogLine:
    (line,) = [line for line in lines if needle in line.record.errorMessage]
    return line


def render(line: CatalogLine, value: str = "42") -> str:
    """Render a template the way Python would print it, with one sample value for every placeholder."""
    message = line.record.errorMessage
    out, position = [], 0
    for placeholder in line.extraction.placeholders:
        out.append(message[position : placeholder.start])
        if placeholder.debug:
            inner = message[placeholder.start + 1 : placeholder.end - 1]
            cut = inner.index("=", inner.index(placeholder.expression) + len(placeholder.expression)) + 1
            while cut < len(inner) and inner[cut] == " ":
                cut += 1
            out.append(inner[:cut])
        out.append(value)
        position = placeholder.end
    out.append(message[position:])
    return "".join(out)


def test_vllm_config_has_one_record_per_ast_site(vllm_repo: Path, config_028: list[CatalogLine]) -> None:
    expected = ast_sites(vllm_repo, "v0.28.0", "vllm/config")
    assert len(expected) == 202
    assert {(line.record.filePath, line.record.lineNumber) for line in config_028} == expected
    assert len(config_028) == 202


def test_whole_package_has_one_record_per_ast_site(vllm_repo: Path, whole_package_scans: Path) -> None:
    """The session's cold scan of the whole package at 0.28.0 (whole_package_cache), made into a catalog."""
    catalog = extract(repo=str(vllm_repo), revision="v0.28.0", options=ExtractOptions(paths=("vllm",)))
    expected = ast_sites(vllm_repo, "v0.28.0", "vllm")
    assert len(catalog.lines) == len(expected) == 2693
    assert {(line.record.filePath, line.record.lineNumber) for line in catalog.lines} == expected
    assert catalog.manifest.skippedFiles == []
    for line in catalog.lines:
        assert re.fullmatch(line.record.messagePattern, render(line), re.S), line.record.errorMessage


def test_reference_record_at_0_28_0(config_028: list[CatalogLine]) -> None:
    reference = json.loads((DATA / "reference-record.json").read_text())["record"]
    record = by_message(config_028, reference["errorMessage"]).record
    assert (record.lineNumber, record.sourceCodeStart, record.sourceCodeEnd) == (1171, 1153, 1189)
    assert record.sourceCode == reference["sourceCode"]
    assert (record.slug, record.messagePattern, record.errorMessage) == (
        reference["slug"],
        reference["messagePattern"],
        reference["errorMessage"],
    )
    assert list(record.model_dump()) == list(reference)


def _page_message(name: str) -> str:
    messages: dict[str, str] = json.loads((DATA / "reference-messages.json").read_text())
    return messages[name]


@pytest.mark.parametrize(
    ("page", "rendered", "values"),
    [
        pytest.param(
            "000",
            "VllmConfig does not have enough slots to schedule a token and support the speculative decoding "
            "settings. Got max_num_batched_tokens=256 and scheduled_token_delta=512.",
            ["256", "512"],
            id="debug placeholders",
        ),
        pytest.param(
            "001",
            "max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits the "
            "maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please "
            "increase max_num_batched_tokens or decrease max_model_len.",
            ["2048", "32768"],
            id="attribute placeholders",
        ),
        pytest.param(
            "002",
            "Async scheduling is not compatible with disable_padded_drafter_batch=True.",
            [],
            id="literal",
        ),
    ],
)
def test_reference_pages_messages_and_patterns(
    config_028: list[CatalogLine], page: str, rendered: str, values: list[str]
) -> None:
    message = _page_message(page)
    record = by_message(config_028, message).record
    assert record.errorMessage == message
    match = re.fullmatch(record.messagePattern, rendered, re.S)
    assert match is not None and list(match.groups()) == values


def test_disable_padded_drafter_batch_conditions(config_028: list[CatalogLine]) -> None:
    line = by_message(config_028, "disable_padded_drafter_batch=True")
    tests = [c.test for c in line.extraction.conditions]
    wanted = [
        "self.scheduler_config.async_scheduling",
        "self.speculative_config is not None",
        "self.speculative_config.disable_padded_drafter_batch",
    ]
    assert [t for t in tests if t in wanted] == wanted
    assert line.extraction.function == "VllmConfig.__post_init__"


def test_tag_and_short_sha_give_identical_bytes_that_validate(vllm_repo: Path, tmp_path: Path) -> None:
    sha = resolve(str(vllm_repo), "v0.28.0").sha
    outputs = []
    for revision in ("v0.28.0", sha[:10]):
        result = cli(
            "--repo",
            str(vllm_repo),
            "--sha",
            revision,
            "--output",
            str(tmp_path / revision),
            env={"SOURCE_DATE_EPOCH": "1767225600"},
        )
        assert result.returncode == 0, result.stderr
        outputs.append((tmp_path / revision / sha / "records.jsonl").read_bytes())
    assert outputs[0] == outputs[1]
    validator = jsonschema.Draft202012Validator(json_schema())
    lines: list[dict[str, Any]] = [orjson.loads(raw) for raw in outputs[0].splitlines()]
    assert len(lines) == 202
    assert all(not list(validator.iter_errors(line)) for line in lines)


def _diff(vllm_repo: Path, old: str, new: str) -> CatalogDiff:
    options = ExtractOptions()
    return diff_catalogs(
        open_catalog(old, repo=str(vllm_repo), options=options), open_catalog(new, repo=str(vllm_repo), options=options)
    )


@pytest.fixture(scope="module")
def diff_27_28(vllm_repo: Path) -> CatalogDiff:
    return _diff(vllm_repo, "v0.27.0", "v0.28.0")


@pytest.fixture(scope="module")
def diff_28_33(vllm_repo: Path) -> CatalogDiff:
    return _diff(vllm_repo, "v0.28.0", "v0.33.0")


@pytest.mark.parametrize("which", ["diff_27_28", "diff_28_33"])
def test_release_diff_counts_add_up_and_keep_unchanged_messages(which: str, request: pytest.FixtureRequest) -> None:
    diff: CatalogDiff = request.getfixturevalue(which)
    summary = diff.summary
    paired = summary["reworded"] + summary["moved"] + summary["modified"] + summary["unchanged"]
    assert summary["added"] + paired == len(diff.new.lines)
    assert summary["removed"] + paired == len(diff.old.lines)
    assert summary["added"] >= 1

    def once(lines: tuple[CatalogLine, ...]) -> set[tuple[str, str]]:
        keys = Counter((line.record.filePath, line.record.errorMessage) for line in lines)
        return {key for key, count in keys.items() if count == 1}

    stable = once(diff.old.lines) & once(diff.new.lines)
    for change in diff.changes:
        if change.kind.value in ("added", "removed"):
            line = change.new or change.old
            assert line is not None
            assert (line.record.filePath, line.record.errorMessage) not in stable


def test_release_diff_threshold_cases_0_28_to_0_33(diff_28_33: CatalogDiff) -> None:
    """The cases that set the reworded thresholds (docs/contributing/design.md, diff's pairing)."""
    pairs = {
        (change.old.record.errorMessage, change.new.record.errorMessage)
        for change in diff_28_33.changes
        if change.kind.value == "reworded" and change.old and change.new
    }
    assert (
        "Async scheduling is not compatible with disable_padded_drafter_batch=True.",
        "Async scheduling is not supported by the V1 model runner with {v1_async_sched_incompat}.",
    ) in pairs
    assert (
        "--enable-return-routed-experts is incompatible with context parallelism (DCP > 1 or PCP > 1).",
        "--enable-return-routed-experts is incompatible with context parallelism (DCP/PCP > 1).",
    ) in pairs
    olds = {old for old, _ in pairs}
    assert "Prefill context parallelism requires Model Runner V2. Remove VLLM_USE_V2_MODEL_RUNNER=0." not in olds
    assert "sampling distribution replay does not support speculative decoding" not in olds


def test_release_sources_diff_like_tagged_commits(vllm_repo: Path, diff_27_28: CatalogDiff) -> None:
    result = cli("diff", "release:0.27.0", "release:0.28.0")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["summary"] == diff_27_28.summary
    assert document["new"]["sha"] == "2cf0a6915"
    assert all(c["new"]["analyzedSha"] == "2cf0a6915" for c in document["changes"] if c["new"])


def test_same_revision_diff_exits_0(vllm_repo: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "extractor", "diff", "v0.33.0", "v0.33.0", "--repo", str(vllm_repo)], capture_output=True
    )
    assert result.returncode == 0 and json.loads(result.stdout)["summary"]["unchanged"] == 314


def test_match_scheduler_message_against_0_28_0(config_028: list[CatalogLine]) -> None:
    matcher = Matcher.of_lines(config_028)
    text = (
        "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits "
        "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please "
        "increase max_num_batched_tokens or decrease max_model_len."
    )
    (match,) = matcher.match(text).matches
    assert match.site.filePath == "vllm/config/scheduler.py"
    assert match.values == {"self.max_num_batched_tokens": "2048", "max_model_len": "32768"}


def test_match_a_log_yields_exactly_the_two_errors(vllm_repo: Path) -> None:
    log = "\n".join(
        [
            "INFO 11-29 17:35:16 [api_server.py:1] vLLM API server version 0.28.0",
            "INFO 11-29 17:35:17 [core.py:99] Initializing a V1 LLM engine with config: model='m'",
            "ERROR 11-29 17:35:18 [core.py:123] ValueError: VllmConfig does not have enough slots to schedule a "
            "token and support the speculative decoding settings. Got max_num_batched_tokens=256 and "
            "scheduled_token_delta=512.",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/vllm/config/vllm.py", line 1177, in __post_init__',
            "    raise ValueError(",
            "ValueError: Async scheduling is not compatible with disable_padded_drafter_batch=True.",
        ]
    )
    result = cli("match", "--catalog", "v0.28.0", "--repo", str(vllm_repo), input=log)
    assert result.returncode == 0, result.stderr
    outputs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[m["slug"] for m in o["matches"]] for o in outputs] == [
        ["vllmconfig-does-not-have-enough-slots-to-schedule"],
        ["async-scheduling-is-not-compatible-with-disable"],
    ]
    assert outputs[0]["matches"][0]["values"] == {"max_num_batched_tokens": "256", "scheduled_token_delta": "512"}


def test_incremental_scan_of_0_28_after_0_27_equals_a_cold_one(
    vllm_repo: Path, whole_package_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every raised class over the whole package: the reused pieces change no byte of output (the rescans
    of 0.27.1 and 0.28.0 after 0.27.0 are the session's, made once for this test and the guide's commands).

    The cold catalog is made from cold scans alone: those of the session's first, cold, scan of 0.27.0 for
    the files 0.28.0 did not change, and the others parsed whole here (no earlier version of any file is
    known to this cache), not from pieces."""
    warm = json.loads((whole_package_cache / "incremental.json").read_text())
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    copy_scans(whole_package_cache / "cold", tmp_path / "cold")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))
    monkeypatch.setattr(ScanCache, "previous_versions", lambda self, paths: {})
    options = ExtractOptions(paths=("vllm",), exceptions=("*",), jobs=1)
    with collector_paused():  # as on the command line (a library caller's collector is left alone)
        cold = extract(repo=str(vllm_repo), revision="v0.28.0", options=options)
    wait_for_writes()
    assert cold.encoded.count(b"\n") > 2693  # more than the ValueErrors alone
    assert warm["records"].encode() == cold.encoded  # byte for byte
    assert warm["manifest"] == cold.manifest.model_dump(mode="json")


def _fields(config_028: list[CatalogLine], needle: str) -> dict[str, Any]:
    line = by_message(config_028, needle)
    return {f.expression: f.model_dump(by_alias=True) for f in line.extraction.fields}


def test_fields_of_the_scheduler_record(config_028: list[CatalogLine]) -> None:
    fields = _fields(config_028, "is smaller than max_model_len")
    batched = fields["self.max_num_batched_tokens"]
    assert (batched["class"], batched["flags"], batched["constraints"]) == (
        "SchedulerConfig",
        ["--max-num-batched-tokens"],
        ["ge=1"],
    )
    assert batched["doc"].startswith("Maximum number of tokens that can be processed in a single iteration")
    assert fields["max_model_len"]["resolved"] is False and fields["max_model_len"]["reason"]


def test_fields_of_the_padded_drafter_record(config_028: list[CatalogLine]) -> None:
    fields = _fields(config_028, "disable_padded_drafter_batch=True")
    asynchronous = fields["self.scheduler_config.async_scheduling"]
    assert (asynchronous["class"], asynchronous["flags"]) == (
        "SchedulerConfig",
        ["--async-scheduling", "--no-async-scheduling"],
    )
    padded = fields["self.speculative_config.disable_padded_drafter_batch"]
    assert (padded["class"], padded["flags"], padded["via"], padded["key"]) == (
        "SpeculativeConfig",
        [],
        "--speculative-config",
        "disable_padded_drafter_batch",
    )
    assert padded["doc"].startswith("Disable input padding for speculative decoding")


def test_explain_the_rendered_scheduler_message(vllm_repo: Path) -> None:
    text = (
        "max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits the maximum "
        "sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
        "max_num_batched_tokens or decrease max_model_len."
    )
    command = ["explain", "--catalog", "v0.28.0", "--repo", str(vllm_repo), text]
    plain = cli(*command)
    assert plain.returncode == 0, plain.stderr
    assert "vllm/config/scheduler.py:254" in plain.stdout and "--max-num-batched-tokens" in plain.stdout
    assert "Related errors" in plain.stdout and "must be greater than or equal to" in plain.stdout
    markdown = cli(*command, "--format", "markdown").stdout
    assert "| field | set with | default | constraints | meaning |" in markdown
    row = "| `SchedulerConfig.max_num_batched_tokens` | --max-num-batched-tokens | `2048` |"
    assert row + " `ge=1` |" in markdown
    assert "## Related errors" in markdown and markdown.count("```") == 2

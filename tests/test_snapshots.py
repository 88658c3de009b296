"""Whole pages pinned as reviewed snapshots (tests/snapshots/): explain, list --summary, diff as Markdown, match as
text, a published record and a generated reproduction program, each of a small vLLM of our own at two tags.

The inputs are fixed: the repository's commits (dates and author of tests/conftest.py's GIT_ENV, so its SHAs),
SOURCE_DATE_EPOCH, a user cache of the module's own; the commands run in the folder that holds the repository,
which they name by a relative path, so no temporary path reaches a page. EXTRACTOR_UPDATE_SNAPSHOTS=1 writes the
files anew (tests/snapshots.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GitRepo, cli
from tests.snapshots import SNAPSHOTS, UPDATE, assert_snapshot

SCHEDULER = '''\
from pydantic import Field
from pydantic.dataclasses import dataclass


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = Field(default=2048, ge=1)
    """Tokens one engine step may schedule, over every running request."""
    max_model_len: int = 8192
    """The longest sequence, prompt and output together."""
    enable_chunked_prefill: bool = False
    """Split long prompts into chunks that share steps with the decodes."""
    policy: str = "fcfs"
    """How waiting requests are ordered."""

    def __post_init__(self):
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len})."
            )
        if self.policy not in ("fcfs", "priority"):
            raise ValueError(f"Unknown scheduling policy {self.policy!r}.")
'''

CACHE = '''\
from dataclasses import dataclass


@dataclass
class CacheConfig:
    block_size: int = 16
    """Tokens held by one block of the KV cache."""
    swap_space: float = 4
    """CPU memory to swap blocks out to, in GiB."""
    cache_dtype: str = "auto"
    """The data type of the KV cache."""

    def __post_init__(self):
        if self.block_size not in (8, 16, 32):
            raise ValueError(f"Invalid block size {self.block_size}: choose 8, 16 or 32.")
        if self.swap_space < 0:
            raise ValueError(f"swap_space ({self.swap_space}) must not be negative.")
        if self.cache_dtype == "fp4":
            raise ValueError("The fp4 KV cache is not supported.")
'''

VLLM = """\
from vllm.config.cache import CacheConfig
from vllm.config.scheduler import SchedulerConfig


class VllmConfig:
    scheduler_config: SchedulerConfig | None = None
    cache_config: CacheConfig | None = None
"""

ARGS = """\
class EngineArgs:
    def add_cli_args(parser):
        scheduler_kwargs = get_kwargs(SchedulerConfig)
        parser.add_argument("--max-num-batched-tokens", **scheduler_kwargs["max_num_batched_tokens"])
        parser.add_argument("--max-model-len", **scheduler_kwargs["max_model_len"])
        parser.add_argument("--enable-chunked-prefill", **scheduler_kwargs["enable_chunked_prefill"])
        parser.add_argument("--scheduling-policy", **scheduler_kwargs["policy"])
        cache_kwargs = get_kwargs(CacheConfig)
        parser.add_argument("--block-size", **cache_kwargs["block_size"])
        parser.add_argument("--swap-space", **cache_kwargs["swap_space"])
        parser.add_argument("--kv-cache-dtype", **cache_kwargs["cache_dtype"])
"""

# v2, each kind of change once: the policy's message reworded, a check added, the fp4 check removed, the block size's
# check moved into a method of its own, swap_space's condition changed (modified); and a TypeError, for list.
SCHEDULER_V2 = SCHEDULER.replace("{self.policy!r}.", "{self.policy!r}; use fcfs or priority.") + (
    "        if self.max_model_len <= 0:\n"
    '            raise ValueError(f"max_model_len ({self.max_model_len}) must be positive.")\n'
)
CACHE_V2 = '''\
from dataclasses import dataclass


@dataclass
class CacheConfig:
    block_size: int = 16
    """Tokens held by one block of the KV cache."""
    swap_space: float = 4
    """CPU memory to swap blocks out to, in GiB."""

    def __post_init__(self):
        self._verify_block_size()
        if self.swap_space < 0 or self.swap_space > 64:
            raise ValueError(f"swap_space ({self.swap_space}) must not be negative.")

    def _verify_block_size(self):
        if self.block_size not in (8, 16, 32):
            raise ValueError(f"Invalid block size {self.block_size}: choose 8, 16 or 32.")
'''
VLLM_V2 = VLLM + (
    "\n    def __post_init__(self):\n"
    "        if not isinstance(self.cache_config, CacheConfig | None):\n"
    '            raise TypeError(f"cache_config must be a CacheConfig, not {type(self.cache_config).__name__}.")\n'
)

EPOCH = "1767225600"  # 2026-01-01, the commits' date


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `repo`, a small vLLM tagged v1 and v2, and `cache`, the user cache its commands use."""
    place = tmp_path_factory.mktemp("snapshots")
    files = {"vllm/__init__.py": '__version__ = "0.1"\n', "vllm/config/__init__.py": "", "vllm/config/vllm.py": VLLM}
    files |= {"vllm/config/scheduler.py": SCHEDULER, "vllm/config/cache.py": CACHE, "vllm/engine/arg_utils.py": ARGS}
    with pytest.MonkeyPatch.context() as patch:  # the commits' SHAs, whatever this machine's git configuration says
        patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        repo = GitRepo(place / "repo")
        repo.commit(files, tag="v1")
        repo.commit(
            {
                "vllm/config/scheduler.py": SCHEDULER_V2,
                "vllm/config/cache.py": CACHE_V2,
                "vllm/config/vllm.py": VLLM_V2,
            },
            tag="v2",
        )
    return place


def run(place: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command line in `place`, the repository named `repo`, at a fixed time, with the module's own cache."""
    env = {"SOURCE_DATE_EPOCH": EPOCH, "XDG_CACHE_HOME": str(place / "cache")}
    return cli(*args, cwd=place, env=env, input=input)


def page(result: subprocess.CompletedProcess[str], code: int = 0) -> str:
    """What the command printed, once it ended as expected and said nothing on stderr."""
    assert (result.returncode, result.stderr) == (code, ""), result.stderr
    return result.stdout


def test_explain_of_a_record_reading_three_flags(place: Path) -> None:
    shown = run(place, "explain", "--catalog", "v1", "--repo", "repo", "max-num-batched-tokens-is-smaller")
    assert_snapshot("explain.txt", page(shown))


def test_list_summary_counts_a_catalog_by_file_and_class(place: Path) -> None:
    shown = run(place, "list", "--catalog", "v2", "--repo", "repo", "--exception", "*", "--summary")
    assert_snapshot("list-summary.txt", page(shown))


def test_diff_as_markdown_shows_each_kind_of_change(place: Path) -> None:
    shown = run(place, "diff", "v1", "v2", "--repo", "repo", "--format", "markdown")
    assert_snapshot("diff.md", page(shown, code=1))


LOG = """\
INFO 01-01 00:00:01 [core.py:9] Initializing the engine
ERROR 01-01 00:00:02 [core.py:123] EngineCore failed to start.
Traceback (most recent call last):
  File "/srv/app/main.py", line 3, in <module>
    config = SchedulerConfig(max_num_batched_tokens=2048, max_model_len=32768)
ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768).
ERROR 01-01 00:00:03 [core.py:130] Invalid block size 7: choose 8, 16 or 32
INFO 01-01 00:00:04 [core.py:140] Shutting down
"""


def test_match_as_text_answers_the_lines_of_a_log(place: Path) -> None:
    shown = run(place, "match", "--catalog", "v1", "--repo", "repo", "--format", "text", input=LOG)
    assert_snapshot("match.txt", page(shown))


def test_a_published_record_is_its_json_line_whole(place: Path) -> None:
    page(run(place, "--repo", "repo", "--sha", "v1", "--output", "published", "--quiet"))
    (records,) = (place / "published").glob("*/records.jsonl")
    lines = [json.loads(raw) for raw in records.read_text().splitlines()]
    (line,) = [line for line in lines if line["record"]["slug"] == "max-num-batched-tokens-is-smaller-than-max-model"]
    assert_snapshot("record.json", json.dumps(line, indent=2, ensure_ascii=False) + "\n")


def test_reproduce_writes_a_program_that_builds_the_config_with_the_values_that_raise(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program of a record solved on paper, run in this interpreter with the work tree (v2) importable."""
    monkeypatch.setenv("PYTHONPATH", str(place / "repo"))
    shown = run(
        place, "reproduce", "--catalog", "v2", "--repo", "repo", "--runtime", sys.executable,
        "--record", "max-num-batched-tokens-is-smaller",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    (answer,) = [json.loads(raw) for raw in shown.stdout.splitlines()]
    assert_snapshot("reproduce-program.py.txt", answer["reproduction"]["python"])


# --- the harness itself


def test_a_snapshot_that_differs_fails_with_a_diff_naming_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "snapshots"
    folder.mkdir()
    (folder / "page.txt").write_text("first\nsecond\n")
    assert_snapshot("page.txt", "first\nsecond\n", folder=folder)
    with pytest.raises(pytest.fail.Exception) as failed:
        assert_snapshot("page.txt", "first\nthird", folder=folder)
    assert str(failed.value).splitlines()[:8] == [
        "snapshots/page.txt is not what the test made now:",
        "--- snapshots/page.txt",
        "+++ snapshots/page.txt (now)",
        "@@ -1,2 +1,2 @@",
        " first",
        "-second",
        "+third",
        "\\ No newline at end of file",
    ]
    assert (folder / "page.txt").read_text() == "first\nsecond\n"  # (never written without the variable)


def test_a_missing_snapshot_fails_and_the_variable_writes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "snapshots"
    with pytest.raises(pytest.fail.Exception, match=r"no snapshot snapshots/page\.txt: run the test with"):
        assert_snapshot("page.txt", "text\r\n", folder=folder)
    assert not folder.exists()
    monkeypatch.setenv(UPDATE, "1")
    assert_snapshot("page.txt", "text\r\n", folder=folder)
    assert (folder / "page.txt").read_bytes() == b"text\r\n"  # (as given: no newline translated)
    monkeypatch.delenv(UPDATE)
    assert_snapshot("page.txt", "text\r\n", folder=folder)


def test_a_page_holding_a_temporary_path_is_refused(tmp_path: Path) -> None:
    """A snapshot must hold what any machine prints: a temporary folder's path in it is the test's mistake."""
    with pytest.raises(pytest.fail.Exception, match="holds a path of this machine"):
        assert_snapshot("page.txt", f"wrote {tmp_path}/out\n", folder=tmp_path)


def test_every_snapshot_file_is_one_a_test_names() -> None:
    """A file no test compares pins nothing: one left behind by a renamed test is removed, not kept."""
    sources = "".join(path.read_text() for path in Path(__file__).parent.glob("test_*.py"))
    assert [path.name for path in sorted(SNAPSHOTS.iterdir()) if f'"{path.name}"' not in sources] == []

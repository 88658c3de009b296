"""Running the codebase itself: a runtime's child imports the package once, then runs each attempt in a process
of its own, reporting what it raised (the raise site, what pydantic wraps) or that it passed, hung or crashed."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extractor.errors import ExtractorError
from extractor.reproduce.runtime import Session, ensure_runtime, probe, session

CONFIG = """\
from dataclasses import dataclass

import pydantic

__version__ = "1.2.3"


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024

    def __post_init__(self):
        if self.max_num_batched_tokens < self.max_model_len:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len})."
            )


@pydantic.dataclasses.dataclass
class CacheConfig:
    block_size: int = 16

    def __post_init__(self):
        if self.block_size not in (8, 16, 32):
            raise ValueError(f"Invalid block size {self.block_size}.")
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A small package of our own standing in for vLLM, importable by the runtime's interpreter."""
    (tmp_path / "fakevllm").mkdir()
    (tmp_path / "fakevllm" / "__init__.py").write_text(CONFIG)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "fakevllm"


@pytest.fixture
def running(package: str) -> Iterator[Session]:
    with session(sys.executable, package) as started:
        yield started


def test_an_attempt_reports_the_class_the_message_and_the_raise_site(running: Session) -> None:
    assert running.version == "1.2.3"
    result = running.attempt("from fakevllm import SchedulerConfig\nSchedulerConfig(max_num_batched_tokens=512)")
    assert (result["outcome"], result["class"]) == ("raised", "ValueError")
    assert result["message"] == "max_num_batched_tokens (512) is smaller than max_model_len (1024)."
    assert result["sites"][-1] == ["fakevllm/__init__.py", 15]
    assert running.attempt("from fakevllm import SchedulerConfig\nSchedulerConfig()")["outcome"] == "passed"


def test_pydantics_wrapping_is_reported_with_the_error_it_wraps_and_its_site(running: Session) -> None:
    result = running.attempt("from fakevllm import CacheConfig\nCacheConfig(block_size=7)")
    assert (result["outcome"], result["class"]) == ("raised", "ValidationError")
    assert "Value error, Invalid block size 7." in result["message"]
    (inner,) = result["wrapped"]
    assert (inner["class"], inner["message"], inner["sites"][-1]) == (
        "ValueError",
        "Invalid block size 7.",
        ["fakevllm/__init__.py", 27],
    )


def test_an_attempt_that_hangs_or_exhausts_memory_is_stopped_and_the_session_goes_on(running: Session) -> None:
    started = time.monotonic()
    hung = running.attempt("import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)", timeout=1)
    assert hung["outcome"] == "timeout" and hung["killed"] and time.monotonic() - started < 10
    greedy = running.attempt("x = bytearray(4 << 30)", memory=1 << 30)
    assert greedy["outcome"] == "crashed"
    crashed = running.attempt("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert crashed == {"outcome": "crashed", "reason": "killed by signal 11", "id": ""}
    assert running.attempt("raise KeyError('still here')")["class"] == "KeyError"


def test_a_session_leaves_nothing_running(package: str) -> None:
    with session(sys.executable, package) as started:
        started.attempt("import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)", timeout=0.5)
        pid = started.process.pid
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        pytest.param(
            "raise ImportError('no CUDA here')", "cannot import fakevllm: ImportError: no CUDA here", id="import fails"
        ),
        pytest.param("import time\ntime.sleep(60)", "did not import fakevllm within", id="import hangs"),
    ],
)
def test_a_runtime_that_cannot_import_the_package_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, said: str
) -> None:
    (tmp_path / "fakevllm").mkdir()
    (tmp_path / "fakevllm" / "__init__.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(ExtractorError, match=said):
        probe(sys.executable, "fakevllm", timeout=2)


def test_a_missing_interpreter_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ExtractorError, match="cannot run the runtime"):
        probe(tmp_path / "no-python", "fakevllm")


def test_a_runtime_that_pip_cannot_install_says_what_pip_said_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    empty = tmp_path / "index"
    empty.mkdir()
    # An index that has nothing: what a machine without the network, or without a wheel for it, meets.
    args = ("--no-index", "--find-links", str(empty))
    with pytest.raises(ExtractorError, match=r"pip install failed: .*no-such-package-here"):
        ensure_runtime("no-such-package-here", "1.0", pip_args=args)
    kept = [path.name for path in (tmp_path / "cache" / "extractor" / "runtimes").iterdir()]
    assert kept == ["no-such-package-here-1.0.lock"]  # (the build's lock, empty)


def test_cache_info_and_clear_know_the_runtimes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    made = tmp_path / "extractor" / "runtimes" / "vllm-0.28.0"
    (made / "bin").mkdir(parents=True)
    (made / "runtime.json").write_text('{"package": "vllm", "version": "0.28.0"}\n')
    (made / "bin" / "python").write_bytes(b"x" * 5000)
    info = cli("cache", "info", "runtimes")
    assert info.returncode == 0 and "runtimes" in info.stdout and "(runtimes: 1)" in info.stdout
    assert cli("cache", "clear", "runtimes").returncode == 0
    assert not made.exists()


def test_what_the_package_prints_on_stdout_does_not_garble_the_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM logs to stdout, at import and while building configs."""
    (tmp_path / "fakevllm").mkdir()
    (tmp_path / "fakevllm" / "__init__.py").write_text('print("INFO loading")\n__version__ = "9"\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with session(sys.executable, "fakevllm") as running:
        assert running.version == "9"
        assert running.attempt("print('INFO building')\nraise ValueError('x')")["message"] == "x"


PACKAGE = """\
import enum
from dataclasses import dataclass, field
from typing import Literal

import pydantic

__version__ = "0.1"


@pydantic.dataclasses.dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024
    enable_chunked_prefill: bool = True
    policy: Literal["fcfs", "priority"] = "fcfs"

    def __post_init__(self):
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len})."
            )
        if self.policy == "priority" and self.enable_chunked_prefill:
            raise ValueError("The priority policy cannot run with chunked prefill yet.")


@dataclass
class DeviceConfig:
    device: str = "auto"

    def __post_init__(self):
        if current_platform.is_cuda():
            raise ValueError("not on this platform")


@pydantic.dataclasses.dataclass
class LoadConfig:
    load_format: Literal["auto", "safetensors", "tensorizer"] = "auto"
    strict: bool = False

    def __post_init__(self):
        if self.load_format != "auto" and self.strict:
            raise ValueError(f"The {self.load_format} load format cannot be strict.")


@pydantic.dataclasses.dataclass
class CacheConfig:
    swap_space: int = 4
    cpu_offload: int = 0

    def __post_init__(self):
        self._verify_sizes()

    def _verify_sizes(self):
        if self.cpu_offload > self.swap_space:
            raise ValueError(f"cpu_offload ({self.cpu_offload}) cannot exceed swap_space ({self.swap_space}).")


class Mode(enum.Enum):
    EAGER = "eager"
    GRAPH = "graph"


@dataclass
class CompileConfig:
    mode: Mode = Mode.EAGER
    debug: bool = False

    def __post_init__(self):
        if self.mode == Mode.GRAPH and self.debug:
            raise ValueError("Graph mode cannot be debugged.")


@dataclass
class PrefetchConfig:
    group_size: int = 4


@dataclass
class OffloadConfig:
    prefetch: PrefetchConfig = field(default_factory=PrefetchConfig)
    enabled: bool = False

    def __post_init__(self):
        if self.enabled and self.prefetch.group_size < 2:
            raise ValueError("Offloading needs groups of two layers at least.")
"""


def test_reproduce_raises_each_solvable_record_at_its_own_raise_and_verifies_its_fix(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """End to end: a catalog of a package of our own, its records reproduced in a runtime that has it."""
    from tests.conftest import cli

    package = {
        "vllm/__init__.py": '__version__ = "0.1"\n',
        "vllm/config/__init__.py": "",
        "vllm/config/scheduler.py": PACKAGE,
    }
    git_repo.commit(package, tag="v1")
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))  # (its work tree: the runtime imports `vllm` from it)
    result = cli("reproduce", "--catalog", "v1", "--repo", str(git_repo.path), "--runtime", sys.executable)
    assert result.returncode == 0, result.stderr
    by_line = {r["lineNumber"]: r["reproduction"] for r in map(json.loads, result.stdout.splitlines())}

    def answer(words: str) -> dict[str, Any]:
        return by_line[raise_line(PACKAGE, words)]

    smaller = answer("is smaller than")
    assert "max_num_batched_tokens" in smaller["python"] and "enable_chunked_prefill=False" in smaller["python"]
    assert "Value error, max_num_batched_tokens (" in smaller["message"]
    assert smaller["verifiedWith"] == "vllm==0.1"
    assert smaller["fix"]["change"].startswith("set ")
    priority = answer("The priority policy")
    assert "policy='priority'" in priority["python"] and "enable_chunked_prefill=True" in priority["python"]
    assert answer("not on this platform")["reason"] == "needs a GPU platform"
    # No condition names a value the Literal allows but "auto": pydantic's refusal of a first guess says them.
    strict = answer("load format cannot be strict")
    assert "load_format='safetensors'" in strict["python"] and "strict=True" in strict["python"]
    # A check in a method that building the config runs already: the program builds it, and calls nothing.
    sizes = answer("cannot exceed swap_space")
    assert "config = CacheConfig(" in sizes["python"] and "_verify_sizes" not in sizes["python"]
    assert "_verify_sizes" not in sizes["fix"]["python"]
    # An enum member the condition names is named by the program, imported from the record's module.
    graph = answer("Graph mode cannot be debugged")
    assert "import CompileConfig, Mode" in graph["python"] and "mode=Mode.GRAPH" in graph["python"]
    # A field of a config this one holds: the program builds that config with it.
    offload = answer("Offloading needs groups")
    assert (
        "prefetch=PrefetchConfig(group_size=1)" in offload["python"]
        and "import OffloadConfig, PrefetchConfig" in offload["python"]
    )
    said = "6 of 7 reproduced (6 with a fix verified), 0 at the vllm serve level (0 with a serve fix)"  # (none here)
    assert f"{said}; 1 needs a GPU platform" in result.stderr


def raise_line(source: str, words: str) -> int:
    """The line of the raise whose message holds `words` (the line before it, where the message is wrapped): a
    record picked by what it says, not by where it stands."""
    lines = source.splitlines()
    number = next(number for number, text in enumerate(lines, 1) if words in text)
    return number if "raise" in lines[number - 1] else number - 1


def _reproduced(git_repo: Any, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> tuple[Any, Any, Any]:
    """`reproduce` of a package of one config module (`vllm/config/NAME.py`) in this interpreter as its runtime:
    the CLI's result, each raise's line by its message's first word, each line's reproduction."""
    from tests.conftest import cli

    package = {
        "vllm/__init__.py": '__version__ = "0.1"\n',
        "vllm/config/__init__.py": "",
        f"vllm/config/{name}.py": source,
    }
    git_repo.commit(package, tag="v1")
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))
    result = cli("reproduce", "--catalog", "v1", "--repo", str(git_repo.path), "--runtime", sys.executable)
    assert result.returncode == 0, result.stderr
    raised = {line.split('"')[1].split()[0]: number for number, line in enumerate(source.splitlines(), 1)
              if "raise ValueError" in line}  # fmt: skip
    answers = {r["lineNumber"]: r["reproduction"] for r in map(json.loads, result.stdout.splitlines())}
    return result, raised, answers


# Checks whose conditions cannot be solved on paper: the runtime's search finds them (explore.py).
SEARCHED = """\
import os
from dataclasses import dataclass, field
from typing import Any, Literal

ParallelConfig = Any  # (as vLLM writes it: the real class imported for type checkers only)


@dataclass
class ParallelConfig:
    tensor_parallel_size: int = 1
    decode_context_parallel_size: int = 1


@dataclass
class OpsConfig:
    custom_ops: list[str] = field(default_factory=list)
    profiler: Literal["torch", "proton"] | None = None
    profiler_dir: str = ""
    output_format: Literal["trace", "tree"] = "tree"

    def __post_init__(self):
        for op in self.custom_ops:
            if op not in {"all", "none"} and not op.startswith(("+", "-")):
                raise ValueError(f"Invalid syntax {op!r} for custom op")
        base_modes = [op for op in self.custom_ops if op in {"all", "none"}]
        if len(base_modes) > 1:
            raise ValueError("custom_ops can contain only one base mode: 'all' or 'none'")
        if self.profiler == "proton" and not self.profiler_dir:
            raise ValueError("profiler_dir must be set when profiler is 'proton'")
        if self.profiler == "proton":
            if self.output_format == "trace":
                raise ValueError("The trace output format needs the torch profiler.")
        if os.environ.get("OPS_STRICT") == "1" and self.custom_ops:
            raise ValueError("Custom ops are not allowed in strict mode.")

    def verify_with_parallel_config(self, parallel_config: ParallelConfig) -> None:
        dcp = parallel_config.decode_context_parallel_size
        if dcp > 1 and parallel_config.tensor_parallel_size % dcp != 0:
            raise ValueError("tp_size must be divisible by dcp_size.")
"""


def test_the_search_reproduces_checks_whose_conditions_read_locals_loops_and_sub_configs(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local computed from a list (a value the search gives the list), two arguments one check needs at once
    (its message names the second), an argument the method takes (a config its name names), the environment."""
    result, raised, answers = _reproduced(git_repo, monkeypatch, "ops", SEARCHED)
    assert set(answers) == set(raised.values())
    for line, made in answers.items():
        assert made.get("python"), (line, made)
        assert made.get("fix"), (line, made)
    assert "custom_ops=['all', 'none']" in answers[raised["custom_ops"]]["python"]
    both = answers[raised["profiler_dir"]]["python"]
    assert "profiler='proton'" in answers[raised["The"]]["python"] and "profiler_dir=" in both
    assert "os.environ['OPS_STRICT'] = '1'" in answers[raised["Custom"]]["python"]
    method = answers[raised["tp_size"]]["python"]
    assert "config.verify_with_parallel_config(parallel_config=ParallelConfig(" in method
    assert "6 of 6 reproduced (6 with a fix verified)" in result.stderr


# Functions no config calls, a validator of what a config is given, a check its conditions solve but not its fix.
HELPERS = """\
import enum
import string
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

import pydantic
from pydantic_core import ArgsKwargs

ConfigT = TypeVar("ConfigT")
_NOT_SUPPORTED = {"gemma": "numerical instability", "phi": "overflows"}


@pydantic.dataclasses.dataclass
class PoolConfig:
    pooling: Literal["mean", "last"] | None = None

    def get_pooling(self) -> str:
        if self.pooling is None:
            raise ValueError("pooling is not set; it should be resolved before calling get_pooling()")
        return self.pooling


@pydantic.dataclasses.dataclass
class RemovedConfig:
    activation: bool = True

    @pydantic.model_validator(mode="before")
    @classmethod
    def reject_removed(cls, data: Any) -> Any:
        values = data.kwargs if isinstance(data, ArgsKwargs) else data
        if isinstance(values, dict) and "normalize" in values:
            raise ValueError("Parameter `normalize` was removed; use `activation` instead.")
        return data


@dataclass
class DraftConfig:
    target: Any  # (no default: a build needs one)

    @staticmethod
    def resolve_rates(n: int, rates: list[float] | None) -> list[float]:
        if rates is not None and len(rates) != n:
            raise ValueError(f"rates must have length {n}, got {rates}.")
        return rates or []


class _BackendMeta(enum.EnumMeta):
    def __getitem__(cls, name):
        try:
            return super().__getitem__(name)
        except KeyError:
            raise ValueError(f"Unknown backend: {name!r}") from None


class Backend(enum.Enum, metaclass=_BackendMeta):
    FAST = "fast"


def _is_uri(path: str) -> bool:
    return "://" in path and len(path.split("://")[0]) > 1


@pydantic.dataclasses.dataclass
class StoreConfig:
    backend: Backend = Backend.FAST
    directory: str = ""

    @pydantic.field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, value: Any) -> Any:
        return Backend[value.upper()] if isinstance(value, str) else value

    def __post_init__(self):
        if self.directory and _is_uri(self.directory):
            raise ValueError("directory must be a local directory")


def field_of(cls: type[Any], name: str) -> Any:
    try:
        return next(f for f in fields(cls) if f.name == name)
    except StopIteration as error:
        raise ValueError(f"Field {name!r} not found in {cls.__name__}.") from error


def check_dtype(model_type: str, dtype: str) -> None:
    if model_type in _NOT_SUPPORTED and dtype == string.digits:
        raise ValueError(f"The model type {model_type!r} does not support {dtype}: {_NOT_SUPPORTED[model_type]}")


def update(config: ConfigT, overrides: dict[str, Any]) -> ConfigT:
    for name in overrides:
        if not hasattr(config, name):
            raise ValueError(f"{name} is not a field of {type(config).__name__}")
    return config
"""


def test_a_function_no_config_calls_is_called_and_a_fix_is_searched_for_when_none_was_made(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module's function no class calls is called directly (a class for `type[...]`, a config for a TypeVar,
    the members of the module's table a condition looks in, a module's value it compares with), a static method
    on its class, an enum's metaclass through a config; a keyword a validator looks for in what it is given, a
    text a helper looks for; a reproduction made on paper whose fix the search finds."""
    result, raised, answers = _reproduced(git_repo, monkeypatch, "helpers", HELPERS)
    for line, made in answers.items():
        assert made.get("python") and made.get("fix"), (line, made)
    field = answers[raised["Field"]]
    assert "from vllm.config.helpers import PoolConfig, field_of" in field["python"]
    assert "field_of(cls=PoolConfig, name=" in field["python"] and field.get("flags") is None
    # A module's table a condition looks in gives its first key; a module's value is named as the module names it.
    assert answers[raised["The"]]["python"] == (
        "import string\nfrom vllm.config.helpers import check_dtype\n\n"
        "check_dtype(model_type='gemma', dtype=string.digits)\n"
    )
    assert "update(config=PoolConfig()" in answers[raised["{name}"]]["python"]
    assert "RemovedConfig(normalize=" in answers[raised["Parameter"]]["python"]
    pooling = answers[raised["pooling"]]
    assert "config.get_pooling()" in pooling["python"]
    assert pooling["fix"] == {  # (the Literal's first value: not what pydantic refuses)
        "python": "from vllm.config.helpers import PoolConfig\n\nconfig = PoolConfig(pooling='mean')\n"
        "config.get_pooling()\n",
        "change": "set pooling='mean'",
    }
    rates = answers[raised["rates"]]["python"]  # (a static method: called on its class, none built)
    assert "DraftConfig.resolve_rates(n=" in rates and "DraftConfig(" not in rates
    # A raise in an enum's metaclass, reached by building a config that takes the enum (a text for a member).
    assert "StoreConfig(backend='x')" in answers[raised["Unknown"]]["python"]
    # A text the helper a condition calls looks for (`"://" in path`).
    assert "directory='xx://x'" in answers[raised["directory"]]["python"]
    assert "8 of 8 reproduced (8 with a fix verified)" in result.stderr


def test_an_attempt_stopped_where_the_package_looks_for_its_platform_needs_a_gpu_platform() -> None:
    from types import SimpleNamespace

    from extractor.reproduce.verify import _raised_here

    record = SimpleNamespace(filePath="vllm/config/vllm.py", lineNumber=1034, messagePattern="x")
    line: Any = SimpleNamespace(record=record)
    stopped = {"outcome": "raised", "class": "RuntimeError", "message": "Failed to infer device type", "wrapped": []}
    assert _raised_here(line, {**stopped, "sites": [["vllm/config/device.py", 56]]}) == "needs a GPU platform"
    assert _raised_here(line, {**stopped, "sites": [["vllm/platforms/cuda.py", 9]]}) == "needs a GPU platform"
    assert _raised_here(line, {**stopped, "sites": [["vllm/config/model.py", 9]]}) == "raised elsewhere"


@pytest.mark.runtime
@pytest.mark.release
def test_a_real_vllm_reproduces_scheduler_checks_each_raised_again_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Against vLLM itself (EXTRACTOR_VLLM_RUNTIME names an interpreter where it is installed): the records of
    vllm/config/scheduler.py of that release; each program run again, alone, raises at its record's line, and
    each fix does not."""
    import os
    import subprocess

    from tests.conftest import cli

    python = os.environ.get("EXTRACTOR_VLLM_RUNTIME")
    if not python:
        pytest.skip("no vLLM runtime: set EXTRACTOR_VLLM_RUNTIME to its interpreter")
    version = subprocess.run(
        [python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    result = cli(
        "reproduce", "--catalog", f"release:{version}", "--path", "vllm/config/scheduler.py",
        "--runtime", python, "--no-cache",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    made = [a for a in answers if a["reproduction"].get("python")]
    assert len(made) >= 3, answers
    harness = Path(__file__).resolve().parents[1] / "scripts" / "reproduced.py"
    namespace: dict[str, Any] = {"__name__": "reproduced", "__file__": str(harness)}
    exec(compile(harness.read_text(), str(harness), "exec"), namespace)
    for answer in made:
        reproduction = answer["reproduction"]
        assert reproduction["verifiedWith"] == f"vllm=={version}"
        said = namespace["_run"](python, reproduction["python"])
        assert said == {"raised": answer["filePath"], "line": answer["lineNumber"]}, (answer, said)
        if reproduction.get("fix"):
            after = namespace["_run"](python, reproduction["fix"]["python"])
            assert after != said, (answer, after)

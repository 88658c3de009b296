"""`reproduce` under attack (issue 56): a hostile catalog runs none of its text; a runtime that answers half a line,
garbage or nothing is a one-line error or a record's reason, never a hang or "a bug"; an attempt's helpers die
with it; finished records survive a kill; options and the runtime are checked before any work."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from extractor.reproduce import programs

SCHEDULER = """\
from dataclasses import dataclass, field

import pydantic

__version__ = "0.1"


@pydantic.dataclasses.dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024
    enable_chunked_prefill: bool = True

    def __post_init__(self):
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len})."
            )
        if self.max_model_len > 4096:
            raise ValueError(f"max_model_len ({self.max_model_len}) is too long.")


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


def catalog(git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str = SCHEDULER) -> Path:
    """A catalog folder of a package of our own (`vllm/config/scheduler.py`), its work tree importable as `vllm`."""
    from tests.conftest import cli

    git_repo.commit(
        {
            "vllm/__init__.py": '__version__ = "0.1"\n',
            "vllm/config/__init__.py": "",
            "vllm/config/scheduler.py": source,
        },
        tag="v1",
    )
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))
    out = tmp_path / "catalog"
    made = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out))
    assert made.returncode == 0, made.stderr
    return next(out.glob("*/records.jsonl")).parent


def rewrite(folder: Path, change: Any) -> None:
    """Each record of a catalog folder changed by `change(line)` (a dict, in place), its checksum kept whole."""
    records = folder / "records.jsonl"
    lines = [json.loads(text) for text in records.read_text().splitlines()]
    for line in lines:
        change(line)
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["recordsSha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_hostile_catalog_runs_none_of_its_text(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Conditions whose text calls `os.system` (read where the source has the same `if`, and where it has none),
    and a field whose name is code: none of it runs, and every program written parses as what it builds."""
    from tests.conftest import cli

    folder = catalog(git_repo, monkeypatch, tmp_path)
    marks = {name: tmp_path / name for name in ("compared", "elsewhere", "argument")}

    def hostile(line: dict[str, Any]) -> None:
        extraction = line["extraction"]
        condition = extraction["conditions"][0]
        if "is smaller" in line["record"]["errorMessage"]:  # the source has this `if` at that line
            condition["test"] = f"self.max_model_len > __import__('os').system('touch {marks['compared']}')"
        elif "too long" in line["record"]["errorMessage"]:  # no `if` at its line: only the catalog's text says it
            condition["line"] = line["record"]["lineNumber"]
            condition["test"] = f"self.max_model_len > __import__('os').system('touch {marks['elsewhere']}')"
        else:  # a field a program sets, named with code
            for ref in extraction["fields"]:
                if ref["field"] == "group_size":
                    ref["field"] = f"group_size=__import__('os').system('touch {marks['argument']}') or 1, x"

    rewrite(folder, hostile)
    result = cli("reproduce", "--catalog", str(folder), "--runtime", sys.executable, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    assert [name for name, mark in marks.items() if mark.exists()] == []
    for answer in map(json.loads, result.stdout.splitlines()):
        for program in (answer["reproduction"].get("python"), answer["reproduction"].get("fix", {}).get("python")):
            if program:
                assert "__import__" not in program and "system" not in program, program
                ast.parse(program)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("__import__('os').system('x')", id="a call"),
        pytest.param("Mode.__class__", id="a dunder attribute"),
        pytest.param("__builtins__", id="a dunder name"),
        pytest.param("table['key']", id="a subscript"),
        pytest.param("(lambda: 1)", id="a lambda"),
        pytest.param("[x for x in y]", id="a comprehension"),
        pytest.param("'a' * 10**9", id="arithmetic"),
        pytest.param("x := 1", id="not an expression"),
        pytest.param("f'{x}'", id="an f-string"),
    ],
)
def test_a_catalogs_value_is_refused_unless_names_attributes_and_literals(text: str) -> None:
    with pytest.raises(programs.Refused):
        programs.evaluate(text, {"Mode": object(), "table": {}, "x": 1, "y": []})


def test_a_catalogs_allowed_value_is_evaluated_without_eval() -> None:
    import enum

    class Mode(enum.Enum):
        GRAPH = "graph"

    names = {"Mode": Mode, "size": 3}
    assert programs.evaluate("Mode.GRAPH", names) is Mode.GRAPH
    assert programs.evaluate("{'a': [1, (-2.5,)], 'b': set(), 'c': None}", names) == {
        "a": [1, (-2.5,)],
        "b": set(),
        "c": None,
    }
    assert programs.evaluate("size > 2 and not size in (1, 2)", names, tests=True) is True
    with pytest.raises(programs.Refused):
        programs.evaluate("size > 2", names)  # (a comparison is a test, not a value)
    with pytest.raises(programs.Refused, match="no 'other' here"):
        programs.evaluate("other", names)


def test_a_program_names_only_python_names() -> None:
    from extractor.reproduce.triggers import Attempt, Code

    attempt = Attempt("vllm.config.scheduler", "OffloadConfig", None, {"enabled": True, "prefetch.group_size": 1})
    attempt.held = {"prefetch": "PrefetchConfig"}
    assert attempt.program() == (
        "from vllm.config.scheduler import OffloadConfig, PrefetchConfig\n\n"
        "config = OffloadConfig(enabled=True, prefetch=PrefetchConfig(group_size=1))\n"
    )
    hostile = Attempt("vllm.config", "SchedulerConfig", None, {"x=print(1), z": 1})
    with pytest.raises(programs.Refused):
        hostile.program()
    with pytest.raises(programs.Refused):
        Attempt("vllm.config", "C", None, {"mode": Code("Mode.X(); import os")}).program()
    with pytest.raises(programs.Refused):
        Attempt("os; import sys", "C", None, {}).program()


# --- the child's protocol: a runtime that answers what the child never writes is its fault, at once


@pytest.fixture
def fakevllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package of our own standing in for vLLM, importable by the runtime's interpreter (this one)."""
    (tmp_path / "fakevllm").mkdir()
    (tmp_path / "fakevllm" / "__init__.py").write_text('__version__ = "1.2.3"\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "fakevllm"


def fake_runtime(
    tmp_path: Path, answer: str, *, ready: str = '{"ready": true, "version": "0.1", "seconds": 0}'
) -> Path:
    """An interpreter of our own: it says `ready`, then answers each task with `answer` (Python code that
    writes on stdout, given the task as `task`)."""
    script = tmp_path / "fake-python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        f"sys.stdout.write({ready!r} + '\\n')\n"
        "sys.stdout.flush()\n"
        "for line in sys.stdin:\n"
        "    task = json.loads(line)\n"
        + "".join(f"    {step}\n" for step in answer.splitlines())
        + "    sys.stdout.flush()\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        pytest.param("sys.stdout.write('{\"id\": \"r1\", \"outc')\nsys.stdout.flush()\ntime.sleep(600)",
                     "stopped answering past half an answer ('{\"id\": \"r1\", \"outc') for 1 s (at r1)",
                     id="half a line, then nothing"),
        pytest.param("sys.stdout.write('{\"id\": \"r1\", \"out')\nsys.exit(0)",
                     "ended in the middle of an answer ('{\"id\": \"r1\", \"out') (its interpreter died) (at r1)",
                     id="half a line, then the end"),
        pytest.param("print('[]')", "answered what the extractor's child never writes: '[]' (at r1)",
                     id="JSON that is not an object"),
        pytest.param("print(json.dumps({'id': task['id']}))", "answered what the extractor's child never writes",
                     id="no outcome"),
        pytest.param("print(json.dumps({'id': 'r0', 'outcome': 'passed'}))",
                     "answered what the extractor's child never writes", id="another task's id"),
        pytest.param("print(json.dumps({'id': task['id'], 'outcome': 'raised', 'message': 1}))",
                     "answered what the extractor's child never writes", id="an outcome without its fields"),
        pytest.param("print('INFO hello')", "answered what the extractor's child never writes: 'INFO hello'",
                     id="not JSON"),
        pytest.param("time.sleep(600)", "stopped answering for 1 s (at r1)", id="nothing"),
    ],
)  # fmt: skip
def test_a_runtime_that_answers_what_the_child_never_writes_is_a_one_line_fault_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, said: str
) -> None:
    import time

    from extractor.reproduce import runtime

    monkeypatch.setattr(runtime, "_GRACE", 0.5)
    python = fake_runtime(tmp_path, answer)
    started = time.monotonic()
    with runtime.session(python, "fakevllm") as running, pytest.raises(runtime.RuntimeFault) as fault:
        running.attempt("pass", timeout=0.5, ident="r1")
    assert said in str(fault.value) and "\n" not in str(fault.value)
    assert time.monotonic() - started < 8


@pytest.mark.parametrize(
    ("ready", "said"),
    [
        pytest.param("Welcome to FakePython 1.0", "is not running the extractor's child: it wrote 'Welcome to Fake",
                     id="a banner"),
        pytest.param("[1, 2]", "is not running the extractor's child: it wrote '[1, 2]'", id="not an object"),
        pytest.param('{"ready": false, "reason": "no CUDA"}', "cannot import fakevllm: no CUDA", id="not ready"),
    ],
)  # fmt: skip
def test_a_runtime_that_starts_with_something_else_than_ready_is_one_line(
    tmp_path: Path, ready: str, said: str
) -> None:
    from extractor.errors import ExtractorError
    from extractor.reproduce.runtime import session

    with (
        pytest.raises(ExtractorError, match="^the runtime .*" + re.escape(said)),
        session(fake_runtime(tmp_path, "print('x')", ready=ready), "fakevllm"),
    ):
        pass


def test_a_runtime_that_answers_garbage_ends_reproduce_with_one_error_line_not_a_bug(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.conftest import cli

    folder = catalog(git_repo, monkeypatch, tmp_path)
    python = fake_runtime(tmp_path, "print('[]')")
    result = cli("reproduce", "--catalog", str(folder), "--runtime", str(python))
    assert result.returncode == 2, result.stderr
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("extractor: error:")]
    assert "answered what the extractor's child never writes: '[]'" in error and "bug" not in result.stderr


def test_what_a_crashed_attempt_printed_is_its_reason(fakevllm: str) -> None:
    from extractor.reproduce.runtime import session

    with session(sys.executable, fakevllm) as running:
        program = "import os, signal, sys\nprint('Fatal Python error: boom', file=sys.stderr, flush=True)\n"
        crashed = running.attempt(program + "os.kill(os.getpid(), signal.SIGKILL)", ident="r1")
    assert crashed["outcome"] == "crashed"
    assert crashed["reason"] == "killed by signal 9; it printed: Fatal Python error: boom"


# --- an attempt's processes: contained


def _gone(pid: int, within: float = 5.0) -> bool:
    """Whether a process ends (and is reaped) within `within` seconds; killed if it does not."""
    import signal
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    return False


def _helper(pidfile: Path) -> str:
    """Program lines that start a helper in a session of its own and write its pid to `pidfile`."""
    return (
        "import subprocess\n"
        "helper = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(helper.pid))\n"
    )


def test_a_helper_an_attempt_starts_in_a_session_of_its_own_dies_with_the_attempt(
    fakevllm: str, tmp_path: Path
) -> None:
    from extractor.reproduce.runtime import session

    pidfile = tmp_path / "helper.pid"
    with session(sys.executable, fakevllm) as running:
        result = running.attempt(_helper(pidfile) + "raise ValueError('at once')", timeout=10)
        assert (result["outcome"], result["message"]) == ("raised", "at once")
        assert _gone(int(pidfile.read_text()))


def test_a_process_an_attempt_leaves_holding_its_report_pipe_does_not_turn_a_raise_into_a_hang(fakevllm: str) -> None:
    import time

    from extractor.reproduce.runtime import session

    forks = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\nraise ValueError('at once')\n"
    with session(sys.executable, fakevllm) as running:
        started = time.monotonic()
        result = running.attempt(forks, timeout=10)
        assert (result["outcome"], result["message"]) == ("raised", "at once")
        assert time.monotonic() - started < 5


def test_stopping_a_session_stops_the_attempt_under_way_and_every_process_it_started(
    fakevllm: str, tmp_path: Path
) -> None:
    import threading
    import time

    from extractor.errors import ExtractorError
    from extractor.reproduce.runtime import session

    pidfile = tmp_path / "helper.pid"
    program = _helper(pidfile) + "import os, time\nopen(" + repr(str(tmp_path / "attempt.pid")) + ", 'w').write("
    program += "str(os.getpid()))\ntime.sleep(60)\n"
    with session(sys.executable, fakevllm) as running:

        def ask() -> None:
            with contextlib.suppress(ExtractorError):
                running.attempt(program, timeout=60)

        threading.Thread(target=ask, daemon=True).start()
        deadline = time.monotonic() + 10
        while not (tmp_path / "attempt.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
    assert time.monotonic() - started < 5
    assert _gone(int((tmp_path / "attempt.pid").read_text())) and _gone(int(pidfile.read_text()))


def test_two_runs_on_a_fresh_cache_make_the_runtime_once_and_the_second_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    from extractor.reproduce import runtime

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made: list[Path] = []

    def run(command: list[str], what: str) -> None:  # (venv and pip, each taking its time)
        if command[1:3] == ["-m", "venv"]:
            (Path(command[3]) / "bin").mkdir(parents=True)
            (Path(command[3]) / "bin" / "python").write_text("")
            made.append(Path(command[3]))
        time.sleep(0.3)

    monkeypatch.setattr(runtime, "_run", run)
    monkeypatch.setattr(runtime, "probe", lambda python, package: "1.0")
    monkeypatch.setattr(runtime, "_matching_vision", lambda *args: None)
    said: list[str] = []
    results: list[object] = []

    def ensure() -> None:
        try:
            results.append(runtime.ensure_runtime("pkg", "1.0", progress=said.append))
        except Exception as error:  # (what the run would have said)
            results.append(error)

    threads = [threading.Thread(target=ensure) for _ in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join()
    python = runtime.runtime_dir("pkg", "1.0") / "bin" / "python"
    assert results == [python, python] and len(made) == 1
    assert "waiting for another run that is making the runtime for pkg==1.0" in said

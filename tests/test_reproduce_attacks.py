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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extractor.reproduce import programs
from tests.test_reproduce import PACKAGE, raise_line

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


"""
SCHEDULER += PACKAGE[PACKAGE.index("@dataclass\nclass PrefetchConfig") :]  # (a config another one holds)


def catalog(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str = SCHEDULER, init: str = ""
) -> Path:
    """A catalog folder of a package of our own (`vllm/config/scheduler.py`), its work tree importable as `vllm`
    (its `__init__.py` running `init` first)."""
    from tests.conftest import cli

    git_repo.commit(
        {
            "vllm/__init__.py": init + '__version__ = "0.1"\n',
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


# --- the run: options checked once, runtimes started together, progress, a stop, what is kept


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "1e9", "soon"])
def test_a_timeout_that_no_attempt_can_keep_is_a_one_line_usage_error(value: str, tmp_path: Path) -> None:
    from tests.conftest import cli

    result = cli("reproduce", "--catalog", str(tmp_path), "--runtime", str(tmp_path / "python"), f"--timeout={value}")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("extractor: error: reproduce: argument --timeout: expected a")


# The package's __init__ notes when the runtime's child imports it (its pid and the time), and takes a second.
STARTS = """\
import os, sys, time
if sys.argv[0].endswith("child.py"):
    with open(os.environ["EXTRACTOR_TEST_STARTS"], "a") as file:
        file.write(f"{os.getpid()} {time.time()}\\n")
    time.sleep(1)
"""


def test_runtimes_start_together_never_more_than_the_records_nor_the_cores(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.conftest import cli

    folder = catalog(git_repo, monkeypatch, tmp_path, init=STARTS)
    starts = tmp_path / "starts"
    monkeypatch.setenv("EXTRACTOR_TEST_STARTS", str(starts))
    cores = len(os.sched_getaffinity(0))
    for jobs, records, runtimes in (("2", [], min(2, cores)), ("64", [], min(3, cores)), ("2", ["Offloading"], 1)):
        starts.unlink(missing_ok=True)
        picked = [option for text in records for option in ("--record", text)]
        result = cli("reproduce", "--catalog", str(folder), "--runtime", sys.executable, "--jobs", jobs, *picked)
        assert result.returncode == 0, result.stderr
        times = sorted(float(line.split()[1]) for line in starts.read_text().splitlines())
        assert len(times) == runtimes, (jobs, records, times)
        assert times[-1] - times[0] < 0.8  # (each import takes a second: one after another would be >= 1 s apart)


def test_progress_on_a_terminal_says_the_records_done_those_reproduced_and_the_record_under_way(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.conftest import cli
    from tests.test_cli import run_on_terminal

    folder = catalog(git_repo, monkeypatch, tmp_path)
    args = ("reproduce", "--catalog", str(folder), "--runtime", sys.executable, "--jobs", "1")
    code, shown = run_on_terminal(*args, cwd=tmp_path, env={"PYTHONPATH": str(git_repo.path)}, columns=160)
    assert code == 0, shown
    assert re.search(r"reproduce: +0%\|.*\| 0/3 .*0 reproduced, at max-num-batched-tokens-", shown), shown
    assert re.search(r"reproduce: .*\| [12]/3 .*[12] reproduced, at ", shown), shown
    assert "reproduced, at" not in cli(*args).stderr  # (a pipe: no bar)


# A release of a package of our own, served by an index on loopback: its third check hangs (and says so).
HANGS = """\
import os
import time
from dataclasses import dataclass


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024
    slow: bool = False

    def __post_init__(self):
        if self.max_model_len > 4096:
            raise ValueError(f"max_model_len ({self.max_model_len}) is too long.")
        if self.max_num_batched_tokens < self.max_model_len:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than the length.")
        if self.slow:
            _hang()
            raise ValueError("Slow schedulers are not supported.")


def _hang():
    marker = os.environ.get("EXTRACTOR_TEST_HANGING")
    if marker:
        with open(marker, "a") as file:
            file.write(f"{os.getpid()}\\n")
    time.sleep(600)
"""


@pytest.fixture
def release(isolated_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """release:9.9.0 of a package of our own (HANGS): its sdist on a loopback index, the package importable."""
    import io
    import tarfile

    from tests.test_release import Index

    files = {
        "vllm/_version.py": "__commit_id__ = commit_id = 'gabcdef1234'\n",
        "vllm/__init__.py": '__version__ = "9.9.0"\n',
        "vllm/config/__init__.py": "",
        "vllm/config/scheduler.py": HANGS,
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in {**files, "setup.py": ""}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-9.9.0/{name}")
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    for name, text in files.items():
        (tmp_path / "runtime" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "runtime" / name).write_text(text)
    served = Index({"vllm-9.9.0.tar.gz": buffer.getvalue()})
    monkeypatch.setenv("PIP_INDEX_URL", served.url)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "runtime"))
    yield "release:9.9.0"
    served.server.shutdown()


def _kept() -> list[str]:
    from extractor.query import reproductions as store

    path = store.store_path("vllm", "9.9.0")
    return [json.loads(line)["reproduction"].get("reason", "reproduced") for line in path.read_text().splitlines()]


def _stopped_while_hanging(release: str, tmp_path: Path, signum: int) -> tuple[int | None, float, int]:
    """Run reproduce of the release in a process of its own, one record at a time; once the third record's attempt
    hangs, send it `signum`: its exit status (None: still running 10 s later), the seconds that took, the pid of
    the attempt that hung."""
    import signal
    import subprocess
    import time

    marker = tmp_path / "hanging"
    command = [sys.executable, "-m", "extractor", "reproduce", "--catalog", release, "--runtime", sys.executable]
    env = {**os.environ, "EXTRACTOR_TEST_HANGING": str(marker)}
    process = subprocess.Popen([*command, "--jobs", "1", "--timeout", "60"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), process.communicate()[1]
    time.sleep(0.2)
    process.send_signal(signum)
    sent = time.monotonic()
    try:
        code: int | None = process.wait(10)
    except subprocess.TimeoutExpired:
        code = None
        process.kill()
        process.wait()
    attempt = int(marker.read_text().split()[0])
    if signum == signal.SIGKILL:  # (nothing stops the runtime of a killed run: the test does)
        with contextlib.suppress(OSError):
            parent = int(Path(f"/proc/{attempt}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            os.kill(parent, signal.SIGKILL)
    return code, time.monotonic() - sent, attempt


def test_a_killed_run_keeps_every_record_it_finished(release: str, tmp_path: Path) -> None:
    import signal

    code, _, attempt = _stopped_while_hanging(release, tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert _kept() == ["reproduced", "reproduced"]  # (the two records before the one under way)
    _gone(attempt)


def test_ctrl_c_stops_the_attempt_under_way_at_once_and_exits_130(release: str, tmp_path: Path) -> None:
    import signal

    code, seconds, attempt = _stopped_while_hanging(release, tmp_path, signal.SIGINT)
    assert (code, seconds < 5) == (130, True)
    assert _gone(attempt, within=1)
    assert _kept() == ["reproduced", "reproduced"]


def test_a_timeout_is_not_kept_as_the_records_answer_and_the_next_run_tries_again(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from extractor.reproduce import verify
    from tests.conftest import cli

    monkeypatch.setattr(verify, "_BUDGET", 0.5)  # (the search of the record that hangs: short)
    first = cli("reproduce", "--catalog", release, "--runtime", sys.executable, "--timeout", "1")
    assert first.returncode == 0, first.stderr
    reasons = {
        answer["lineNumber"]: answer["reproduction"].get("reason")
        for answer in map(json.loads, first.stdout.splitlines())
    }
    assert reasons == {
        raise_line(HANGS, "is too long"): None,
        raise_line(HANGS, "is smaller than the length"): None,
        raise_line(HANGS, "Slow schedulers"): "hung or crashed",
    }
    assert _kept() == ["reproduced", "reproduced"]
    again = cli("reproduce", "--catalog", release, "--runtime", sys.executable, "--timeout", "1")
    assert "1 record to run" in again.stderr


def test_the_runtime_named_is_checked_before_results_kept_are_shown(
    release: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import cli

    chosen = ("--record", "too long", "--record", "smaller")
    first = cli("reproduce", "--catalog", release, "--runtime", sys.executable, *chosen)
    assert first.returncode == 0, first.stderr
    kept = cli("reproduce", "--catalog", release, "--runtime", sys.executable, *chosen)
    assert (kept.returncode, kept.stdout) == (0, first.stdout)
    assert "nothing was run: all 2 records were run before" in kept.stderr
    missing = cli("reproduce", "--catalog", release, "--runtime", str(tmp_path / "no-python"), *chosen)
    assert missing.returncode == 2 and "extractor: error: cannot run the runtime" in missing.stderr
    (tmp_path / "other" / "vllm").mkdir(parents=True)
    (tmp_path / "other" / "vllm" / "__init__.py").write_text('__version__ = "1.0"\n')
    other = cli(
        "reproduce", "--catalog", release, "--runtime", sys.executable, *chosen,
        env={"PYTHONPATH": str(tmp_path / "other")},
    )  # fmt: skip
    assert other.returncode == 2 and "has vllm 1.0, not 9.9.0" in other.stderr
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "nothing"))
    without = cli("reproduce", "--catalog", release, "--runtime", sys.executable, *chosen)
    assert without.returncode == 2 and "has no vllm installed" in without.stderr


def _neighbours(name: str, folder: Path, seen: set[str]) -> set[str]:
    """child.py and the modules beside it that it loads in a runtime (`importlib.import_module("explore")`),
    and theirs."""
    seen.add(name)
    tree = ast.parse((folder / f"{name}.py").read_text())
    for node in ast.walk(tree):
        called = isinstance(node, ast.Call) and ast.unparse(node.func) == "importlib.import_module"
        named = str(node.args[0].value) if called and isinstance(node.args[0], ast.Constant) else ""  # type: ignore[attr-defined]
        if named and named not in seen and (folder / f"{named}.py").is_file():  # (not the package's own modules)
            _neighbours(named, folder, seen)
    return seen


def test_the_child_runs_on_the_standard_library_alone(tmp_path: Path) -> None:
    """What the runtime's interpreter runs imports nothing but the standard library (the runtime has no extractor,
    no pydantic): each import of child.py and its neighbours is the standard library's (the extractor's only under
    `if __package__:`, as a part of the package), and they run with no site-packages at all (`python -S`)."""
    import subprocess

    folder = Path(programs.__file__).parent
    modules = _neighbours("child", folder, set())
    assert {"child", "explore", "programs"} <= modules
    for name in sorted(modules):
        tree = ast.parse((folder / f"{name}.py").read_text())
        guarded = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "__package__"
            for inner in ast.walk(ast.Module(node.body, []))
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                tops = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
                tops = [str(node.module).partition(".")[0]]
            else:
                continue
            for top in tops:
                assert top in sys.stdlib_module_names or (top == "extractor" and id(node) in guarded), (name, top)
    for name in modules:
        (tmp_path / f"{name}.py").write_text((folder / f"{name}.py").read_text())
    task = {"id": "a", "program": "raise ValueError('x')", "timeout": 5, "memory": 0}
    ran = subprocess.run(
        [sys.executable, "-S", "-E", "-s", str(tmp_path / "child.py"), "json"],  # (`json` stands for the package)
        input=json.dumps(task) + "\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    ready, answer = map(json.loads, ran.stdout.splitlines())
    assert ready["ready"] and (answer["outcome"], answer["message"], answer["id"]) == ("raised", "x", "a")

"""Bad input and hostile source: one line on stderr and exit 2, or a complete run that names what it skipped.

What does not depend on the process (complete runs over hostile source, a reader's one-line error on a
damaged catalog or object) runs the command line in this process (`cli`); what a process does (its exit
status on bad input, signals, workers, standard streams) is checked on `python -m extractor`."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from extractor.cli.main import main
from tests.conftest import GitRepo, cli, git
from tests.conftest import run_cli as run


@pytest.fixture
def place(tmp_path: Path, git_repo: GitRepo) -> Path:
    """An empty working directory beside a small repository tagged v1."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("x")\n'}, tag="v1")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return cwd


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("extractor: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for needle in needles:
        assert needle in result.stderr


def bad_inputs(repo: Path, tmp: Path) -> list[tuple[list[str], list[str]]]:
    corrupt = tmp / "corrupt.jsonl"
    corrupt.write_text('{"record": 1}\n')
    return [
        (["--repo", str(repo), "--sha", "no-such-rev"], ["unknown revision 'no-such-rev'", str(repo)]),
        (["--repo", str(tmp / "missing"), "--sha", "v1"], ["no repository at", "missing"]),
        (["--repo", str(tmp), "--sha", "v1"], ["is not a git repository", str(tmp)]),
        (["--repo", str(repo), "--sha", "v1", "--path", "nothing/here"], ["no Python file under nothing/here"]),
        (["--repo", str(repo), "--sha", "v1", "--output", "/proc/forbidden"], ["cannot write", "/proc/forbidden"]),
        (["diff", str(corrupt), "v1", "--repo", str(repo)], [f"{corrupt}:1"]),
        (["match", "--catalog", str(corrupt), "text"], [f"{corrupt}:1"]),
        (
            ["--repo", f"file://{tmp}/nowhere.git", "--sha", "v1"],
            ["cannot clone", "nowhere.git", "does not appear to be a git repository"],
        ),
        (["--release", "0.0.0.404"], ["cannot reach the package index"]),
        (["diff", "release:", "v1", "--repo", str(repo)], ["release: needs a version"]),
        (["--repo", str(repo), "--sha", "v1^{tree}"], ["'v1^{tree}'", "is a tree, not a commit"]),
        (["--repo", str(repo), "--sha", "v1:vllm/config/a.py"], ["is a blob, not a commit"]),
        (["--repo", str(repo), "--sha", "v1", "--repo-name", "../x"], ["--repo-name must look like OWNER/NAME"]),
        (["--repo", str(repo), "--sha", "v1", "--repo-name", "a/.."], ["--repo-name must look like OWNER/NAME"]),
    ]


@pytest.mark.parametrize("case", range(14))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    place: Path, git_repo: GitRepo, tmp_path: Path, isolated_cache: Path, case: int
) -> None:
    args, needles = bad_inputs(git_repo.path, tmp_path)[case]
    # The user cache (scan results) may be filled; nothing else may appear.
    before = sorted(p.name for p in tmp_path.iterdir() if p != isolated_cache)
    # No network here: the package index is an address nothing listens on.
    result = run(*args, cwd=place, env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    assert_one_line_error(result, *needles)
    assert list(place.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p != isolated_cache) == before
    assert not (isolated_cache / "extractor" / "sdists").exists() or not any(
        (isolated_cache / "extractor" / "sdists").glob("*.tar.gz")
    )


def test_arguments_that_are_not_utf8(place: Path, git_repo: GitRepo) -> None:
    """Python hands argument bytes that are not UTF-8 over as lone surrogates: a TEXT is read as stdin's
    lines are (U+FFFD), a path inside the repository is refused in one line, a catalog path is named."""
    text = cli("match", "--catalog", "v1", "--repo", str(git_repo.path), "ValueError: x\udcff", cwd=place)
    assert (text.returncode, text.stderr, json.loads(text.stdout)["input"]) == (1, "", "ValueError: x\ufffd")
    for option in ("--path", "--config-from", "--flags-from"):
        result = cli("--repo", str(git_repo.path), "--sha", "v1", option, "vllm/caf\udce9", cwd=place)
        assert_one_line_error(result, f"{option} vllm/caf\\xe9 is not UTF-8")
    assert_one_line_error(cli("match", "--catalog", "bad/\udcff.jsonl", "x", cwd=place), "no catalog at bad/")
    assert list(place.iterdir()) == []


def test_a_folder_without_a_catalog_is_named_not_taken_for_a_revision(place: Path) -> None:
    """A bare name that is a folder here is the catalog the user means, even with the default repository (a
    URL: it is never cloned to find out whether the name is a revision too)."""
    (place / "notes").mkdir()
    assert_one_line_error(cli("match", "--catalog", "notes", "x", cwd=place), "no catalog at notes: no records.jsonl")


def test_unknown_release_version_names_it(isolated_cache: Path, tmp_path: Path) -> None:
    """The index answers, but has no such release."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm", "files": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()  # a quick shutdown()
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}/simple"
        result = run("--release", "9.8.7", cwd=tmp_path, env={"PIP_INDEX_URL": index})
    finally:
        server.shutdown()
    assert_one_line_error(result, "no release 9.8.7 of vllm")
    assert set(tmp_path.iterdir()) <= {isolated_cache}  # nothing but the cache (scan results, if any)


HOSTILE = {
    "vllm/config/good.py": 'def f(x):\n    if x:\n        raise ValueError(f"bad {x!r}")\n',
    "vllm/config/syntax.py": "def f(:\n    raise ValueError('x')\n",
    "vllm/config/py2.py": "print 'hello'\nraise ValueError, 'old style'\n",
    "vllm/config/latin1.py": "# -*- coding: latin-1 -*-\nraise ValueError('caf\xe9')\n".encode("latin-1"),
    "vllm/config/not_utf8.py": b"raise ValueError('\xff\xfe')\n",
    "vllm/config/empty.py": "",
    "vllm/config/newer.py": "type Alias = int\nraise ValueError('after a 3.12 statement')\n",
    "vllm/config/deep.py": "def f(x):\n"
    + "".join("    " * (i + 1) + f"if x > {i}:\n" for i in range(400))
    + "    " * 401
    + "raise ValueError('deep')\n",
}


def test_hostile_tree_completes_and_names_every_skipped_file(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit(HOSTILE)
    os.symlink("good.py", git_repo.path / "vllm" / "config" / "link.py")
    git_repo.commit({}, tag="v1")
    out = tmp_path / "out"
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "extractor: warning: 6 file(s) in scope could not be parsed" in result.stderr
    sha = git(git_repo.path, "rev-parse", "HEAD")
    manifest = json.loads((out / sha / "manifest.json").read_text())
    reasons = {entry["path"].rsplit("/", 1)[1]: entry["reason"] for entry in manifest["skippedFiles"]}
    assert set(reasons) == {"syntax.py", "py2.py", "not_utf8.py", "newer.py", "deep.py", "link.py"}
    assert reasons["syntax.py"] == "syntax error: invalid syntax (line 1)"
    assert reasons["newer.py"].startswith("syntax error:") and "(line 1)" in reasons["newer.py"]
    assert reasons["not_utf8.py"].startswith("cannot decode:")
    assert reasons["link.py"] == "not a regular file (git mode 120000)"
    assert reasons["deep.py"] == "syntax error: too many levels of indentation (line 101)"
    messages = [orjson.loads(line)["record"]["errorMessage"] for line in (out / sha / "records.jsonl").open("rb")]
    assert messages == ["bad {x!r}", "café"]


def test_a_huge_generated_module_completes(git_repo: GitRepo, tmp_path: Path) -> None:
    """Larger than vLLM's largest module (319 KB) with 60 times the raises of its most raising one (85), all
    in one function: 5,000 records, each with its own window of the file (40,000 took 30 s, linearly)."""
    body = "".join(
        f"    if x == {i}:\n        raise ValueError(f'value {{x}} is not the one {i}')\n" for i in range(5_000)
    )
    git_repo.commit({"vllm/config/generated.py": "def check(x):\n" + body}, tag="v1")
    assert len((git_repo.path / "vllm" / "config" / "generated.py").read_bytes()) > 320_000
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "-", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.count("\n") == 5_000


@pytest.mark.release
def test_ctrl_c_exits_130_and_leaves_no_partial_files(vllm_repo: Path, tmp_path: Path, isolated_cache: Path) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "extractor",
            "--repo",
            str(vllm_repo),
            "--sha",
            "v0.28.0",
            "--path",
            "vllm",
            "--exception",
            "*",
            "--output",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(1.5)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole process group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err == "extractor: interrupted\n"
    assert not out.exists() or not any(out.rglob("*.*"))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_missing_object_is_one_line_exit_2_serial_or_parallel(
    git_repo: GitRepo, tmp_path: Path, isolated_cache: Path, jobs: str
) -> None:
    """A blob gone from the object store (a damaged repository), read in this process or in a worker."""
    files = {f"vllm/config/m{i}.py": f"raise ValueError('m{i}')\n" + "# padding\n" * 4000 for i in range(8)}
    git_repo.commit(files, tag="v1")
    oid = git(git_repo.path, "rev-parse", "v1:vllm/config/m3.py")
    (git_repo.path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    result = run("--repo", str(git_repo.path), "--sha", "v1", "--jobs", jobs, "--output", "-", cwd=tmp_path)
    assert_one_line_error(result, f"cannot read vllm/config/m3.py (blob {oid})", "the object is missing")


def test_a_damaged_object_names_its_file(git_repo: GitRepo, tmp_path: Path) -> None:
    """A blob whose compressed bytes are cut: git stops while streaming it."""
    git_repo.commit({"vllm/config/a.py": "raise ValueError('x')\n" * 50}, tag="v1")
    oid = git(git_repo.path, "rev-parse", "v1:vllm/config/a.py")
    stored = git_repo.path / ".git" / "objects" / oid[:2] / oid[2:]
    data = stored.read_bytes()
    stored.chmod(0o644)
    stored.write_bytes(data[: len(data) // 2])
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "-", "--no-cache", cwd=tmp_path)
    assert_one_line_error(result, f"cannot read vllm/config/a.py (blob {oid})", "the object is damaged")


@pytest.mark.parametrize("whole", [".", "/", "", "./"])
def test_a_path_that_is_the_root_selects_the_whole_repository(git_repo: GitRepo, tmp_path: Path, whole: str) -> None:
    git_repo.commit({"top.py": "raise ValueError('top')\n", "pkg/deep/m.py": "raise ValueError('deep')\n"}, tag="v1")
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--path", whole, "--output", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (directory,) = (tmp_path / "out").iterdir()
    records = [json.loads(line)["record"] for line in (directory / "records.jsonl").read_text().splitlines()]
    assert [r["filePath"] for r in records] == ["pkg/deep/m.py", "top.py"]
    assert json.loads((directory / "manifest.json").read_text())["scope"]["paths"] == ["."]


def test_context_beyond_any_file_is_refused_by_the_parser(place: Path, git_repo: GitRepo) -> None:
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--context", str(2**64 + 1), "--output", "-", cwd=place)
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    expected = f"argument --context: expected at most 1000000000 lines (a whole file), got {2**64 + 1}"
    expected += " (see extractor --help)\n"
    assert result.stderr == f"extractor: error: {expected}"  # one line, as every bad input's
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--context", str(10**9), "--output", "-").returncode == 0


@pytest.mark.parametrize("name", ["records.jsonl", "manifest.json"])
def test_a_directory_in_the_way_of_a_catalog_file_writes_nothing(place: Path, git_repo: GitRepo, name: str) -> None:
    sha = git(git_repo.path, "rev-parse", "v1")
    (place / "out" / sha / name).mkdir(parents=True)
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", cwd=place)
    assert_one_line_error(result, f"cannot write out/{sha}/{name}: a directory is in the way")
    assert sorted(p.name for p in (place / "out" / sha).iterdir()) == [name]


# --- the process's life: signals, workers, standard streams --------------------------------------------


@pytest.fixture(scope="module")
def busy_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose vllm/config takes a few seconds to scan with two processes, and whose catalog
    (without context) is some megabytes: far more than a pipe holds."""
    repo = GitRepo(tmp_path_factory.mktemp("busy") / "repo")
    files = {
        f"vllm/config/m{i}.py": "def check(x):\n"
        + "".join(f"    if x == {j}:\n        raise ValueError(f'value {{x}} is not {j} in {i}')\n" for j in range(150))
        + "# padding: source to read, cheap to parse\n" * 300
        for i in range(16)
    }
    repo.commit(files, tag="v1")
    return repo.path


def _children(pid: int) -> list[int]:
    """The processes `pid` started, none if it has ended (a `git` forked from Python, still showing Python's
    command line until it runs, can end between two looks)."""
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    for task in tasks:
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _runs(pid: int, program: bytes) -> bool:
    try:
        return program in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _start_busy(repo: Path, cwd: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start a parallel extraction and return once a worker process reads blobs (it scans)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "extractor", "--repo", str(repo), "--sha", "v1", "--no-cache", "--jobs", "2", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = [child for child in _children(process.pid) if _runs(child, b"python")]
        if any(_runs(grandchild, b"cat-file") for worker in workers for grandchild in _children(worker)):
            return process
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError("no worker process started")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads child processes from /proc")
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_stopping_the_main_process_alone_ends_every_process_and_writes_nothing(
    busy_repo: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    """A scheduler stops the main process by its PID: the workers and their git die too (nothing holds
    stdout open: a reader sees its end), TERM and HUP end the run as Ctrl-C does."""
    out = tmp_path / "out"
    process = _start_busy(busy_repo, tmp_path, "--output", str(out))
    os.kill(process.pid, stop)
    try:
        _, err = process.communicate(timeout=30)  # returns once every holder of stdout and stderr is gone
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError("a process of the run outlived its main process") from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    if stop == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:
        assert (process.returncode, err.decode()) == (128 + stop, "extractor: interrupted\n")
    assert not out.exists() or not any(out.rglob("*.*"))


def test_a_reader_that_goes_away_ends_the_run_quietly_and_non_zero(busy_repo: Path, tmp_path: Path) -> None:
    """`--output - | head -c 100`: exit 141 (what a tool killed by SIGPIPE reports), no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "extractor", "--repo", str(busy_repo), "--sha", "v1", "--context", "0", "--output", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(100)) == 100
    process.stdout.close()
    err = process.stderr.read()
    assert (process.wait(timeout=60), err) == (141, b"")


def _shell(*args: str, redirect: str) -> str:
    """A shell command line running the extractor with a redirection (`>&-` closes stdout)."""
    return " ".join([shlex.quote(sys.executable), "-m", "extractor", *map(shlex.quote, args), redirect])


@pytest.mark.parametrize("command", ["extract", "diff", "match", "explain", "help"])
@pytest.mark.parametrize("target", ["closed", "full"])
def test_stdout_closed_or_full_is_one_line_exit_2(place: Path, git_repo: GitRepo, command: str, target: str) -> None:
    """`>&-` and `>/dev/full`: every subcommand that writes data says it could not, in one line."""
    repo = str(git_repo.path)
    args = {
        "extract": ["--repo", repo, "--sha", "v1", "--output", "-"],
        "diff": ["diff", "v1", "v1", "--repo", repo],
        "match": ["match", "--catalog", "v1", "--repo", repo, "ValueError: x"],
        "explain": ["explain", "--catalog", "v1", "--repo", repo, "x"],
        "help": ["diff", "--help"],
    }[command]
    redirect = ">&-" if target == "closed" else ">/dev/full"
    result = subprocess.run(
        _shell(*args, redirect=redirect),
        shell=True,
        stderr=subprocess.PIPE,
        text=True,
        cwd=place,
    )
    reason = "Bad file descriptor" if target == "closed" else "No space left on device"
    assert (result.returncode, result.stderr) == (2, f"extractor: error: cannot write to standard output: {reason}\n")


@pytest.mark.parametrize(
    "command",
    [["--sha", "v1"], ["nightly", "--branch", "main"], ["history", "v1"]],
    ids=["extract", "nightly", "history"],
)
def test_stdout_closed_does_not_stop_a_run_that_writes_files(
    place: Path, git_repo: GitRepo, command: list[str]
) -> None:
    result = subprocess.run(
        _shell(*command, "--repo", str(git_repo.path), "--output", "out", redirect=">&-"),
        shell=True,
        stderr=subprocess.PIPE,
        text=True,
        cwd=place,
    )
    assert result.returncode == 0, result.stderr
    written = "history.jsonl" if command[0] == "history" else "*/records.jsonl"
    assert len(list((place / "out").glob(written))) == 1


@pytest.mark.parametrize("format", ["json", "markdown"])
def test_stdout_full_after_history_wrote_its_files_says_where_they_are(
    place: Path, git_repo: GitRepo, format: str
) -> None:
    """A full stdout is an error for history too (the copy asked for did not come): one line, naming the
    folder where its files stand, which are whole."""
    result = subprocess.run(
        _shell(
            "history",
            "v1",
            "-q",
            "--repo",
            str(git_repo.path),
            "--output",
            "out",
            "--format",
            format,
            redirect=">/dev/full",
        ),
        shell=True,
        stderr=subprocess.PIPE,
        text=True,
        cwd=place,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "extractor: error: cannot write to standard output: No space left on device; the history itself is "
        "written, in out\n",
    )
    assert (place / "out" / "history.jsonl").read_bytes().count(b"\n") >= 1
    assert (place / "out" / "history.md").is_file() == (format == "markdown")


def test_a_folder_whose_name_is_not_utf8_is_linked_byte_for_byte(git_repo: GitRepo, tmp_path: Path) -> None:
    """history's Markdown, on stdout as in the page, links its chart from the folder (`history.svg`): a folder
    whose name is not UTF-8 (given as bytes) is never an encoding error after the files."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("x")\n'}, tag="v1")
    folder = os.fsdecode(b"h\xff")
    result = cli(
        "history", "v1", "--repo", str(git_repo.path), "--format", "markdown", "--output", folder, "-q", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "](history.svg)" in result.stdout
    assert result.stdout == (tmp_path / folder / "history.md").read_text()


def test_stderr_closed_or_broken_never_reaches_stdout(git_repo: GitRepo, tmp_path: Path) -> None:
    """Warnings go to stderr or nowhere: stdout carries the JSONL alone, and the run succeeds."""
    git_repo.commit({"vllm/config/bad.py": "def f(:\n    raise ValueError('x')\n"}, tag="v2")
    expected = run("--repo", str(git_repo.path), "--sha", "v2", "--output", "-", cwd=tmp_path)
    assert "warning: 1 file(s)" in expected.stderr
    for redirect in ["2>&-", "2>/dev/full"]:
        result = subprocess.run(
            _shell("--repo", str(git_repo.path), "--sha", "v2", "--output", "-", redirect=redirect),
            shell=True,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert (result.returncode, result.stdout) == (0, expected.stdout), redirect


_PROBE = """
import signal, sys
from pydantic import BaseModel, field_serializer
from extractor.model import records as models

class Probe(BaseModel):
    x: int = 0

    @field_serializer("x")
    def _x(self, value: int) -> int:
        signal.raise_signal(signal.{name})  # its handler runs here, inside pydantic's serializer
        return value

# A catalog's manifest is written as data (no model): a history's is dumped from its model to be written.
original = models.HistoryManifest.model_dump


def probed(self, **kwargs):
    try:
        return Probe().model_dump_json()
    except Exception:
        if not {swallow}:
            raise
    return original(self, **kwargs)  # a library that swallows the error and goes on


models.HistoryManifest.model_dump = probed
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""


@pytest.mark.parametrize("swallow", [False, True], ids=["raised", "swallowed"])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_inside_pydantic_serialization_is_an_interrupt(
    place: Path, git_repo: GitRepo, stop: signal.Signals, swallow: bool
) -> None:
    """pydantic turns a KeyboardInterrupt raised in its serializer into a PydanticSerializationError;
    the run still ends as interrupted (exit 128 + the signal), with nothing written, even where a caller
    swallows that error."""
    git_repo.commit({"vllm/config/b.py": "class C:\n    x: int = 1\n"}, tag="v2")  # a config class: facts
    probe = _PROBE.replace("{name}", stop.name).replace("{swallow}", str(swallow))
    result = subprocess.run(
        [sys.executable, "-c", probe, "history", "v1", "v2", "--repo", str(git_repo.path), "--no-cache", "-q"],
        capture_output=True,
        text=True,
        cwd=place,
        env={**os.environ, "EXTRACTOR_DEBUG": ""},
    )
    assert (result.returncode, result.stderr) == (128 + stop, "extractor: interrupted\n")
    assert list(place.iterdir()) == []


# --- a catalog is whole or an error --------------------------------------------------------------------


@pytest.fixture
def written(place: Path, git_repo: GitRepo) -> Path:
    """A catalog directory of three records written by the CLI (the repository tagged v2)."""
    git_repo.commit({f"vllm/config/{name}.py": f"raise ValueError('{name} is wrong')\n" for name in "bcd"}, tag="v2")
    assert main(["--repo", str(git_repo.path), "--sha", "v2", "--output", str(place / "out"), "--quiet"]) == 0
    (directory,) = (place / "out").iterdir()
    assert len((directory / "records.jsonl").read_bytes().splitlines()) == 4
    return directory


def _readers(directory: Path, repo: Path) -> list[list[str]]:
    return [
        ["diff", str(directory), "v2", "--repo", str(repo)],
        ["diff", "v1", "v2", "--repo", str(repo), "--catalog-root", str(directory.parent)],
        ["match", "--catalog", str(directory), "ValueError: b is wrong"],
        ["explain", "--catalog", str(directory), "b is wrong"],
    ]


@pytest.mark.parametrize("reader", range(4))
@pytest.mark.parametrize("damage", ["cut at a line", "cut, old manifest", "cut mid-line", "no manifest"])
def test_a_cut_catalog_is_an_error_for_every_reader(
    written: Path, git_repo: GitRepo, place: Path, reader: int, damage: str
) -> None:
    """records.jsonl cut at a line boundary (or the manifest, written last, missing) is not a smaller
    catalog: diff would report the lost records as removed. Every reader says what is wrong instead (run in
    this process: what a process does with a one-line error is test_bad_input_is_one_line_exit_2_...'s)."""
    records, manifest = written / "records.jsonl", written / "manifest.json"
    whole = records.read_bytes()
    if damage == "cut mid-line":
        records.write_bytes(whole[:-20])
    elif damage == "no manifest":
        manifest.unlink()
    else:
        records.write_bytes(b"".join(whole.splitlines(keepends=True)[:-1]))
    if damage == "cut, old manifest":  # as an older extractor wrote it: counts, no checksum
        document = json.loads(manifest.read_text())
        del document["recordsSha256"]
        manifest.write_text(json.dumps(document))
    args = _readers(written, git_repo.path)[reader]
    result = cli(*args, cwd=place)
    if reader == 1:  # a revision whose written catalog is damaged is extracted again, not trusted
        assert (result.returncode, result.stderr) == (1, "")
        assert json.loads(result.stdout)["summary"]["removed"] == 0
        return
    expected = {
        "cut at a line": "does not match the checksum in",
        "cut, old manifest": "holds no checksum of its records (an older extractor's): extract it again",
        "cut mid-line": "does not match the checksum in",
        "no manifest": "no manifest.json, so the catalog is incomplete",
    }[damage]
    assert_one_line_error(result, expected, str(written))


def test_an_empty_catalog_with_a_manifest_that_says_so_is_fine(place: Path, git_repo: GitRepo) -> None:
    git_repo.commit({"vllm/other/a.py": "x = 1\n"}, tag="v2")
    result = cli("--repo", str(git_repo.path), "--sha", "v2", "--path", "vllm/other", "--output", "out", cwd=place)
    assert result.returncode == 0, result.stderr
    (directory,) = (place / "out").iterdir()
    assert (directory / "records.jsonl").read_bytes() == b""
    result = cli("match", "--catalog", str(directory), "ValueError: x", cwd=place)
    assert (result.returncode, result.stderr) == (1, "")


def test_a_records_file_alone_is_checked_line_by_line(place: Path, git_repo: GitRepo) -> None:
    """What `--output -` wrote has no manifest: a line cut in the middle is an error, whole lines are read."""
    data = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "-", cwd=place).stdout
    alone = place / "alone.jsonl"
    alone.write_text(data)
    read = cli("match", "--catalog", str(alone), "ValueError: x", cwd=place)
    # Read whole: its one record (`x`, a catch-all) answers, as a weak answer that does not count (exit 1).
    assert (read.returncode, read.stderr, orjson.loads(read.stdout)["weak"][0]["errorMessage"]) == (1, "", "x")
    alone.write_text(data[:-1])
    assert_one_line_error(cli("match", "--catalog", str(alone), "x", cwd=place), f"{alone}: the last line is cut")


@pytest.mark.parametrize(
    ("codec", "hidden"),
    [
        ("unicode_escape", b"\\x72aise \\x56alueError('hidden by unicode_escape')\n"),
        ("utf-7", b"+AHI-aise +AFY-alueError('hidden by utf-7')\n"),
    ],
)
@pytest.mark.parametrize("first_line", [b"#" + b"=" * 300 + b"\n", b"\n"], ids=["long first line", "blank first line"])
def test_a_coding_line_on_line_2_is_honoured_whatever_its_position(
    git_repo: GitRepo, tmp_path: Path, codec: str, hidden: bytes, first_line: bytes
) -> None:
    """PEP 263: a coding comment on line 2 counts, however long line 1 is; a codec can hide `raise`."""
    source = first_line + f"# -*- coding: {codec} -*-\n".encode() + hidden
    assert b"raise" not in source and b"ValueError" not in source
    git_repo.commit({"vllm/engine/hidden.py": source}, tag="v2")  # not read for config classes anyway
    result = cli("--repo", str(git_repo.path), "--sha", "v2", "--path", "vllm/engine", "--output", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line)["record"]["errorMessage"] for line in result.stdout.splitlines()]
    assert messages == [f"hidden by {codec}"]


def test_a_long_line_is_cut_in_every_window_so_output_stays_proportional(git_repo: GitRepo, tmp_path: Path) -> None:
    """4,000 raises on one 100 KB line: each record keeps 1,000 characters of it from its own raise, and
    says how much was cut on each side (the whole line in every record would be 400 MB)."""
    raises = "; ".join(f"raise ValueError('message {i:04}')" for i in range(4000))
    source = f"def f(x):\n    if x: {raises}\n    return x\n"
    git_repo.commit({"vllm/config/long.py": source}, tag="v1")
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "-", "--context", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 4000 * 3000  # a record's own fields, and 1,000 characters of the line
    records = [json.loads(line)["record"] for line in result.stdout.splitlines()]
    assert len(records) == 4000
    line = source.splitlines()[1]
    for record in records[::397]:
        first, cut, last = record["sourceCode"].split("\n")
        assert (first, last) == ("def f(x):", "    return x")
        column = line.index(f"raise ValueError('{record['errorMessage']}')")
        begin = min(column, len(line) - 1000)
        expected = line[begin : begin + 1000]
        if begin:
            expected = f"[...{begin} characters cut...]" + expected
        if begin + 1000 < len(line):
            expected += f"[...{len(line) - begin - 1000} characters cut...]"
        assert cut == expected
        assert f"raise ValueError('{record['errorMessage']}')" in cut


SURROGATE_CONFIG = '''
from dataclasses import dataclass

@dataclass
class SchedulerConfig:
    max_len: int = 1
    """At most \\ud800 tokens."""

    def check(self):
        if self.max_len < 0:
            raise ValueError(f"bad {self.max_len}")
'''

SURROGATE_ARGS = """
class EngineArgs:
    def add_cli_args(parser):
        scheduler_kwargs = get_kwargs(SchedulerConfig)
        parser.add_argument("--max-len\\udcff", **scheduler_kwargs["max_len\\ud800"])
        parser.add_argument("--max-len", **scheduler_kwargs["max_len"])
"""


@pytest.mark.parametrize("where", ["docstring", "flag"])
def test_a_lone_surrogate_in_a_config_docstring_or_flag_is_shown_as_its_escape(
    git_repo: GitRepo, tmp_path: Path, where: str
) -> None:
    """`"\\ud800"` in a field's docstring (or a flag's name, read with the CLI's facts) cannot be UTF-8: the
    run goes on and shows it as written."""
    config = SURROGATE_CONFIG if where == "docstring" else SURROGATE_CONFIG.replace("\\ud800", "")
    args = SURROGATE_ARGS if where == "flag" else SURROGATE_ARGS.replace("\\udcff", "").replace("\\ud800", "")
    git_repo.commit({"vllm/config/s.py": config, "vllm/engine/arg_utils.py": args}, tag="v1")
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "-", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ((field,),) = [json.loads(line)["extraction"]["fields"] for line in result.stdout.splitlines()]
    doc = "At most \\ud800 tokens." if where == "docstring" else "At most  tokens."
    assert (field["field"], field["doc"]) == ("max_len", doc)


def test_a_write_that_fails_leaves_no_folder_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk when the catalog's files are written: the folders made for them go again (empty), those
    that were there stay."""
    import errno

    from extractor.util import atomic

    (tmp_path / "out").mkdir()

    def full(temporary: Path) -> object:
        raise OSError(errno.ENOSPC, "No space left on device", str(temporary))

    monkeypatch.setattr(atomic, "_create", full)
    target = tmp_path / "out" / "owner" / "catalog"
    with pytest.raises(OSError):
        atomic.replace_files([(target / "records.jsonl", b"{}\n"), (target / "manifest.json", b"{}")])
    assert list(tmp_path.iterdir()) == [tmp_path / "out"] and list((tmp_path / "out").iterdir()) == []


def test_text_an_ascii_locale_cannot_encode_is_escaped_not_a_failed_run(git_repo: GitRepo, tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii (or LANG=C): what standard output cannot encode is escaped as JSON escapes it,
    valid in JSON lines and readable in text, never "a bug"."""
    git_repo.commit({"pkg/a.py": "def f(x):\n    raise ValueError(f'x too big: naïve café ☃ 😀 {x}')\n"}, tag="v1")
    out = tmp_path / "out"
    assert run("--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--output", str(out)).returncode == 0
    (catalog,) = out.iterdir()
    env = {"PYTHONIOENCODING": "ascii"}
    listed = run("list", "--catalog", str(catalog), "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.isascii() and json.loads(listed.stdout)["errorMessage"] == "x too big: naïve café ☃ 😀 {x}"
    assert "caf\\u00e9" in run("list", "--catalog", str(catalog), env=env).stdout
    pasted = "ValueError: x too big: naïve café ☃ 😀 7"
    matched = run("match", "--catalog", str(catalog), pasted, env=env)
    assert matched.returncode == 0 and json.loads(matched.stdout)["input"] == pasted
    text = run("explain", "--catalog", str(catalog), pasted, env=env)
    assert text.returncode == 0 and "\\u00ef" in text.stdout and not text.stderr


def test_two_writers_of_one_set_of_files_replace_it_one_after_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs writing one catalog: each replaces records and manifest together, never records of one with
    the manifest of the other (a rename made slow, so that without the folder's lock they interleave)."""
    import threading

    from extractor.util import atomic

    real = os.replace

    def slow(source: str | Path, target: str | Path) -> None:
        real(source, target)
        if str(target).endswith("records.jsonl") and threading.current_thread().name == "first":
            time.sleep(0.02)  # the second writer's whole set lands here, without the lock

    monkeypatch.setattr(atomic.os, "replace", slow)
    folder = tmp_path / "catalog"
    folder.mkdir()

    def write(name: bytes, started: threading.Barrier) -> None:
        started.wait()
        if name == b"second":
            time.sleep(0.005)  # once the first has replaced its records
        atomic.replace_files([(folder / "records.jsonl", name), (folder / "manifest.json", name)], durable=False)

    for _ in range(5):
        started = threading.Barrier(2)
        writers = [
            threading.Thread(target=write, args=(name, started), name=name.decode()) for name in (b"first", b"second")
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        assert (folder / "records.jsonl").read_bytes() == (folder / "manifest.json").read_bytes()


@pytest.mark.parametrize("command", ["list", "match", "explain"])
def test_a_catalog_that_is_a_dangling_link_or_a_loop_is_named_never_cloned(tmp_path: Path, command: str) -> None:
    """Something is there by that name: a catalog path, not a revision of the default repository to clone."""
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "one").symlink_to("two")
    (tmp_path / "two").symlink_to("one")
    for name in ("dangling", "one"):
        result = cli(command, "--catalog", name, *(["x"] if command != "list" else []), cwd=tmp_path)
        assert (result.returncode, result.stderr.count("\n")) == (2, 1)
        assert result.stderr.startswith(f"extractor: error: no catalog at {name}: a symlink to ")


def test_listing_an_empty_catalog_says_it_holds_no_record(tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_bytes(b"")
    result = cli("list", "--catalog", str(tmp_path / "records.jsonl"))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "extractor: the catalog holds no record\n")


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--sha", "v1", "--output", "afile/out"], "afile is a file, where a folder goes"),
        (["--sha", "v1", "--output", "dangling"], "dangling is a symlink to nowhere, which leads nowhere"),
        (["history", "v1", "--output", "afile"], "afile is a file, where a folder goes"),
        (["diff", "v1", "v1", "--output", "afile/d.json"], "afile is a file, where a folder goes"),
        (["site", "--catalog", "v1", "--output", "afile/site"], "afile is a file, where a folder goes"),
        (["diff", "v1", "v1", "--output", "stale.json"], "stale.json: it is a symlink to "),
    ],
    ids=["extraction", "dangling", "history", "diff", "site", "a link into no folder"],
)
def test_a_file_where_a_folder_goes_is_named(git_repo: GitRepo, tmp_path: Path, args: list[str], where: str) -> None:
    """The system's "File exists" or "Not a directory" for a path under a file says which file is in the way;
    a symlink written through leads into a folder that is there, as the shell's `>` needs."""
    git_repo.commit({"vllm/config/a.py": "raise ValueError('x')\n"}, tag="v1")
    work = tmp_path / "work"
    work.mkdir()
    (work / "afile").write_text("mine")
    (work / "dangling").symlink_to("nowhere")
    (work / "stale.json").symlink_to("gone/deep/diff.json")  # written through as `>` would: the folders not made
    result = cli(*args, "--repo", str(git_repo.path), "--quiet", cwd=work)
    assert (result.returncode, result.stderr.count("\n")) == (2, 1), result.stderr
    assert result.stderr.startswith("extractor: error: cannot write ") and where in result.stderr
    assert sorted(p.name for p in work.iterdir()) == ["afile", "dangling", "stale.json"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--sha", "v1"], "--output"),
        (["history", "v1"], "--output"),
        (["site", "--catalog", "v1", "--output", "output/site"], "--output"),
        (["diff", "v1", "v1", "--output", "output/changes.json"], "--output"),
        (["nightly", "--branch", "main"], "--output"),
        (["nightly", "--branch", "main", "--output", "elsewhere", "--site", "output/site"], "--site"),
    ],
    ids=["extraction", "history", "site", "diff", "nightly", "nightly site"],
)
def test_a_folder_that_cannot_be_written_names_the_option_that_moves_it(
    git_repo: GitRepo, tmp_path: Path, args: list[str], option: str
) -> None:
    """ "cannot write output: output is a file, where a folder goes" left a newcomer to guess how to write
    elsewhere (issue 56, 16): every command that writes names the option that moves what it writes, by
    default or as given."""
    git_repo.commit({"vllm/config/a.py": "raise ValueError('x')\n"}, tag="v1")
    work = tmp_path / "work"
    work.mkdir()
    (work / "output").write_text("mine")
    result = cli(*args, "--repo", str(git_repo.path), "--quiet", cwd=work)
    assert (result.returncode, result.stderr.count("\n")) == (2, 1), result.stderr
    assert result.stderr.startswith("extractor: error: cannot write ")
    assert result.stderr.endswith(
        f"output is a file, where a folder goes (name one that can be written with {option})\n"
    )
    assert sorted(p.name for p in work.iterdir()) == ["output"]


def test_match_with_standard_input_closed_says_so(git_repo: GitRepo, tmp_path: Path) -> None:
    """`<&-`: no log to read is not an empty log (exit 1, silent) but trouble, in one line."""
    git_repo.commit({"vllm/config/a.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    command = _shell("match", "--catalog", "v1", "--repo", str(git_repo.path), redirect="<&-")
    result = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (result.returncode, result.stdout) == (2, "")
    assert (
        result.stderr == "extractor: error: standard input is closed: pipe a log into match, or give TEXT arguments\n"
    )


def test_content_in_pieces_is_written_and_hashed_as_the_pieces_joined(tmp_path: Path) -> None:
    """A catalog's records are written and sealed a line at a time, gathered into large writes and hash
    updates: pieces that fill the gathering buffer exactly, cross it, or exceed it are each written whole
    and in order."""
    import hashlib

    from extractor.util import atomic

    step = 1 << 20
    sizes = [0, 1, 4000, step - 4001, step, 3, step + 7, step - 3, 5, 2 * step]
    pieces = [bytes([index % 251]) * size for index, size in enumerate(sizes)]
    joined = b"".join(pieces)
    assert atomic.sha256_of(pieces).digest() == hashlib.sha256(joined).digest()
    assert atomic.sha256_of(joined).digest() == hashlib.sha256(joined).digest()
    assert atomic.sha256_of([]).digest() == hashlib.sha256(b"").digest()
    atomic.replace_files([(tmp_path / "pieces", pieces), (tmp_path / "whole", joined)])
    assert (tmp_path / "pieces").read_bytes() == joined == (tmp_path / "whole").read_bytes()


@contextlib.contextmanager
def _unblocked(fifo: Path) -> Iterator[None]:
    """Guard a read of a FIFO: if it waits for a writer (the defect refused here), one comes after 10 s,
    so that the test fails on what is read rather than hanging."""
    import threading

    def writer() -> None:
        with contextlib.suppress(OSError):  # ENXIO: nobody is reading it, as it should be
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(10, writer)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def test_every_reader_refuses_a_fifo_at_once_and_names_a_folder(tmp_path: Path) -> None:
    """What the user names or a run left behind (a catalog and its manifest, a history, a nightly index,
    analysis) is read through atomic.read_whole: a FIFO in its place is refused without waiting for a
    writer, which might never come (a run that hung), and a folder is named as one."""
    from extractor.catalog.load import load_catalog
    from extractor.catalog.published import PublishedRoot
    from extractor.errors import CatalogError
    from extractor.pipeline.options import ExtractOptions
    from extractor.query.analysis import read_analysis
    from extractor.query.history.store import load_lineages, read_history
    from extractor.util.atomic import read_whole

    readers = {
        "history.jsonl": lambda folder: load_lineages(folder / "history.jsonl"),
        "history.json": read_history,
        "index.json": lambda folder: PublishedRoot(folder, ExtractOptions().scope).read_index(),
        "records.jsonl": lambda folder: load_catalog(folder / "records.jsonl"),
        "manifest.json": load_catalog,
        "analysis.jsonl": lambda folder: read_analysis(folder / "analysis.jsonl"),
    }
    for name, read in readers.items():
        folder = tmp_path / name.replace(".", "-")
        folder.mkdir()
        if name == "manifest.json":
            (folder / "records.jsonl").write_bytes(b"")
        os.mkfifo(folder / name)
        with _unblocked(folder / name), pytest.raises(CatalogError, match=r"not a regular file \(a FIFO\)"):
            read(folder)
        with _unblocked(folder / name), pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
            read_whole(folder / name)
    (tmp_path / "a-folder").mkdir()
    with pytest.raises(IsADirectoryError):
        read_whole(tmp_path / "a-folder")


def test_a_fifo_given_as_history_is_one_line_not_a_hang(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/a.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    (tmp_path / "h").mkdir()
    os.mkfifo(tmp_path / "h" / "history.jsonl")
    (tmp_path / "h" / "history.json").write_text("{}")
    command = ["explain", "--catalog", "v1", "--repo", str(git_repo.path), "--history", str(tmp_path / "h"), "x"]
    result = subprocess.run(
        [sys.executable, "-m", "extractor", *command[:-1], "a check of ours"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line_error(result, "history.jsonl: not a regular file (a FIFO)")


def test_an_output_that_is_a_fifo_is_written_into_not_replaced(git_repo: GitRepo, tmp_path: Path) -> None:
    """`--output /dev/null`, a FIFO, a device: written into as a shell's redirection would. Replaced by a
    rename, /dev/null would become a regular file (as root: the machine's), and a FIFO's reader would wait."""
    import threading

    from extractor.util.atomic import replace_bytes

    git_repo.commit({"vllm/config/a.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    git_repo.commit({"vllm/config/a.py": "raise ValueError('another check')\n"}, tag="v2")
    (tmp_path / "outputs").mkdir()
    fifo = tmp_path / "outputs" / "out"
    os.mkfifo(fifo)
    read: list[bytes] = []

    def reader() -> None:
        read.append(fifo.read_bytes())

    for write in (
        lambda: replace_bytes(fifo, [b"in ", b"pieces\n"]),
        lambda: cli("diff", "v1", "v2", "--repo", str(git_repo.path), "--output", str(fifo)),
    ):
        reading = threading.Thread(target=reader)
        reading.start()
        write()
        reading.join(timeout=60)
        assert fifo.is_fifo() and [p.name for p in fifo.parent.iterdir()] == ["out"]  # no temporary beside it
    assert read[0] == b"in pieces\n"
    assert read[1].startswith(b"{") and b"another check" in read[1]


def test_control_characters_and_huge_arguments_stay_on_one_line(git_repo: GitRepo) -> None:
    """An argument echoed in an error shows its newlines and escape characters as escapes (a terminal
    would break the line, or take them for commands), and a huge one has its middle left out."""
    from extractor.util.progress import LINE_LIMIT

    git_repo.commit({"vllm/config/a.py": "raise ValueError('x')\n"}, tag="v1")
    for revision, shown in (("v1\nx", "v1\\nx"), ("v1\x1b[31mred", "v1\\x1b[31mred"), ("v1\u2028x", "v1\\u2028x")):
        result = cli("--repo", str(git_repo.path), "--sha", revision)
        assert_one_line_error(result, shown)
    result = cli("--repo", str(git_repo.path), "--sha", "a" * 100_000)
    assert_one_line_error(result, "characters left out")
    assert len(result.stderr) < LINE_LIMIT + 200


def test_a_pattern_of_many_groups_is_checked_in_one_look_at_its_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """re2 makes `groupindex` anew at each look: looked at once per placeholder, a message of N placeholders
    cost N² (8,000 of them: minutes in `match` and `explain`)."""
    from extractor.query.match import pattern

    looks = 0

    class Compiled:
        @property
        def groupindex(self) -> dict[str, int]:
            nonlocal looks
            looks += 1
            return {f"g{i}": i for i in range(1, 501)}

    class Many:
        groups = tuple((f"g{i}", "x") for i in range(1, 501))
        messagePattern = ""

    monkeypatch.setattr(pattern, "_compiled", lambda _: Compiled())
    pattern._check(Many(), where="here")  # type: ignore[arg-type]
    assert looks == 1


def test_a_git_server_that_never_answers_is_given_up(tmp_path: Path) -> None:
    """A repository URL whose server takes the connection and says nothing: git gives up once less than
    1 KB/s came for a minute (GIT_HTTP_LOW_SPEED_TIME, shortened here), rather than hanging the run."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/vllm.git"
    try:
        result = subprocess.run(
            [sys.executable, "-m", "extractor", "--repo", url, "--sha", "v1"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "GIT_HTTP_LOW_SPEED_TIME": "2"},
        )
    finally:
        server.close()
        for connection in held:
            connection.close()
    assert_one_line_error(result, f"cannot clone {url}", "too slow")


def test_a_record_whose_id_is_there_twice_is_refused(written: Path, tmp_path: Path) -> None:
    """Ids are unique by construction: a line copied or pasted into records.jsonl is a damaged catalog, not
    a record to list, diff or build a page for twice."""
    lines = (written / "records.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "records.jsonl").write_bytes(b"".join([*lines, lines[1]]))
    for command in (["list"], ["match", "x"], ["site", "--output", str(tmp_path / "site")]):
        result = cli(command[0], "--catalog", str(tmp_path / "records.jsonl"), *command[1:])
        assert_one_line_error(result, f"record {len(lines) + 1} has the id", "of record 2")
    assert not (tmp_path / "site").exists()


def test_a_catalog_root_that_is_a_file_is_refused(place: Path, git_repo: GitRepo) -> None:
    (place / "afile").write_text("mine")
    result = cli("diff", "v1", "v1", "--repo", str(git_repo.path), "--catalog-root", "afile", cwd=place)
    assert_one_line_error(result, "--catalog-root afile is not a folder")


def test_a_cache_part_that_cannot_be_removed_is_said_not_reported_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rmtree refused (an immutable folder, another user's file): the first refusal, with its whole path."""
    import extractor.repo.housekeeping

    cache = tmp_path / "cache"
    (cache / "extractor" / "catalogs").mkdir(parents=True)
    (cache / "extractor" / "catalogs" / "a").write_text("x")

    def refused(path: Path, onerror: object) -> None:
        where = str(Path(path) / "a")
        onerror(os.unlink, where, (PermissionError, PermissionError(1, "Operation not permitted", "a"), None))  # type: ignore[operator]

    monkeypatch.setattr(extractor.repo.housekeeping.shutil, "rmtree", refused)
    result = cli("cache", "clear", "catalogs", env={"XDG_CACHE_HOME": str(cache)})
    assert_one_line_error(result, f"cannot use {cache / 'extractor' / 'catalogs' / 'a'}: Operation not permitted")


def test_a_damaged_history_is_refused_by_every_reader(place: Path, git_repo: GitRepo) -> None:
    """explain, match and site read a written history alike (history.read_written): history.json validated
    when it is there, and history.jsonl holding the number of lineages it counts."""
    repo = str(git_repo.path)
    assert cli("history", "v1", "--repo", repo, "--output", "h", "--quiet", cwd=place).returncode == 0
    readers = [
        ["explain", "--catalog", "v1", "--repo", repo, "--history", "h", "x"],
        ["match", "--catalog", "v1", "--repo", repo, "--history", "h", "ValueError: x"],
        ["site", "--catalog", "v1", "--repo", repo, "--history", "h/history.jsonl", "--output", "site"],
    ]
    lines, manifest = (place / "h" / "history.jsonl").read_bytes(), (place / "h" / "history.json").read_bytes()
    for damage, said in (
        (lambda: (place / "h" / "history.json").write_text("[]"), "not a valid history manifest"),
        (lambda: (place / "h" / "history.jsonl").write_bytes(b""), "holds 0 lineages but"),
    ):
        damage()
        for command in readers:
            assert_one_line_error(cli(*command, cwd=place), said)
        (place / "h" / "history.jsonl").write_bytes(lines)
        (place / "h" / "history.json").write_bytes(manifest)
    assert not (place / "site").exists()


def test_a_damaged_catalog_on_disk_is_said_before_any_release_is_fetched(tmp_path: Path) -> None:
    """match and explain over several catalogs open those on disk first: a damaged one is the run's one
    line, before any release is downloaded or extracted (here the package index is not even reachable)."""
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text('{"record": 1}\n')
    for command in (["match", "ValueError: x"], ["explain", "x"]):
        result = cli(
            command[0], "--catalog", "release:0.0.0.404", "--catalog", str(corrupt), command[1],
            env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple"},
        )  # fmt: skip
        assert_one_line_error(result, f"{corrupt}:1")


@pytest.mark.parametrize("epoch", ["-1", " 5", "1_0", "abc", "1e3", "\uff19"])  # (the last: a fullwidth nine)
def test_source_date_epoch_is_whole_seconds_written_plainly(place: Path, git_repo: GitRepo, epoch: str) -> None:
    """The reproducible-builds variable is a non-negative count of seconds, in ASCII digits: what int()
    would also take (a sign, spaces, underscores, other digits) is refused, not read as 1969 or as 10."""
    result = cli(
        "--repo", str(git_repo.path), "--sha", "v1", "--output", "out", cwd=place, env={"SOURCE_DATE_EPOCH": epoch}
    )
    assert_one_line_error(result, "SOURCE_DATE_EPOCH must be whole seconds since 1970")
    assert not (place / "out").exists()


@pytest.mark.parametrize("command", [[], ["history", "v1"], ["nightly"], ["diff", "v1", "v1"]])
def test_a_source_date_epoch_past_9999_is_refused_before_any_work(
    place: Path, git_repo: GitRepo, command: list[str]
) -> None:
    """Whole seconds, but past what a timestamp can hold: said as such, before the revisions are read (a
    history of 97 releases is not built first), by every command that may stamp a catalog."""
    sha = ["--sha", "v1"] if not command else []
    result = cli(
        *command, *sha, "--repo", str(git_repo.path), "--output", "out", cwd=place,
        env={"SOURCE_DATE_EPOCH": "99999999999999"},
    )  # fmt: skip
    assert_one_line_error(result, "SOURCE_DATE_EPOCH 99999999999999 is past the last timestamp a record can hold")
    assert not (place / "out").exists()


@pytest.mark.parametrize("option", ["--path", "--config-from", "--flags-from"])
@pytest.mark.parametrize("path", ["..", "vllm/../..", "./../vllm"])
def test_a_path_that_leads_out_of_the_repository_is_refused(
    git_repo: GitRepo, tmp_path: Path, option: str, path: str
) -> None:
    result = cli("--repo", str(git_repo.path), "--sha", "v1", option, path, "--output", "out", cwd=tmp_path)
    assert_one_line_error(result, f"{option} {path} leads out of the repository")


def test_a_file_read_back_that_leads_nowhere_or_is_no_file_is_said_so_by_every_reader(
    place: Path, git_repo: GitRepo
) -> None:
    """A symlink loop where a history's manifest or a nightly root's index is read back is an error naming
    it, never taken for none (a history without dates, a folder that is no root); a catalog's records.jsonl
    that is a folder or a FIFO is a catalog that cannot be read, never "no catalog at" the path."""
    repo = ["--repo", str(git_repo.path)]
    assert cli("history", "v1", *repo, "--output", "h", "-q", cwd=place).returncode == 0
    (place / "h" / "history.json").unlink()
    (place / "h" / "history.json").symlink_to("history.json")
    for command in (["explain", "--catalog", "v1", "x"], ["match", "--catalog", "v1", "ValueError: x"]):
        result = cli(*command, *repo, "--history", "h", cwd=place)
        assert_one_line_error(result, "h/history.json: it is a symlink")

    root = place / "root"
    root.mkdir()
    (root / "index.json").symlink_to("index.json")
    for command in (["list", "--catalog", "root"], ["site", "--catalog", "root", "--output", "site"]):
        assert_one_line_error(cli(*command, cwd=place), "root/index.json: it is a symlink")

    assert cli("--sha", "v1", *repo, "--output", "out", "-q", cwd=place).returncode == 0
    (catalog,) = (place / "out").iterdir()
    (catalog / "records.jsonl").unlink()
    (catalog / "records.jsonl").mkdir()
    assert_one_line_error(cli("list", "--catalog", str(catalog), cwd=place), "cannot read catalog")
    (catalog / "records.jsonl").rmdir()
    os.mkfifo(catalog / "records.jsonl")
    for spec in (catalog, catalog / "records.jsonl"):
        assert_one_line_error(cli("list", "--catalog", str(spec), cwd=place), "cannot read catalog", "FIFO")


def test_site_refuses_an_output_that_is_no_site_before_reading_the_catalog(place: Path, git_repo: GitRepo) -> None:
    """A folder of the user's at --output is refused before the catalog is extracted: a revision that
    does not even exist is not looked up."""
    (place / "mine").mkdir()
    (place / "mine" / "notes.txt").write_text("mine")
    result = cli("site", "--catalog", "no-such-revision", "--repo", str(git_repo.path), "--output", "mine", cwd=place)
    assert_one_line_error(result, "mine exists and is not a site built by extractor")
    assert (place / "mine" / "notes.txt").read_text() == "mine"


def test_a_file_name_with_a_line_break_stays_on_its_row_in_text_for_people(git_repo: GitRepo, tmp_path: Path) -> None:
    """list's table and explain's page show a path on the line that names it: a line break in a file's
    name (git keeps it as it is) is shown as `\\n`, not a row broken in two."""
    git_repo.commit({"vllm/config/a\nb.py": "raise ValueError('broken name')\n"}, tag="v1")
    repo = ["--repo", str(git_repo.path)]
    listed = cli("list", "--catalog", "v1", *repo, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].startswith("vllm/config/a\\nb.py:1  ValueError")
    assert len(listed.stdout.splitlines()) == 2
    explained = cli("explain", "--catalog", "v1", *repo, "broken-name", cwd=tmp_path)
    assert "Thrown at  vllm/config/a\\nb.py:1  (<module>)" in explained.stdout.splitlines()


def test_the_summary_lines_show_an_outputs_control_characters_as_escapes(place: Path, git_repo: GitRepo) -> None:
    """extract's and site's last line on stderr name the --output given: an ESC, a BEL or a line break in
    it is shown as its escape, the line one line (as every other line on stderr)."""
    output = "o\x1b]0;title\x07\nx"
    repo = ["--repo", str(git_repo.path)]
    for command in (
        [*repo, "--sha", "v1", "--output", output],
        ["site", "--catalog", "v1", *repo, "--output", output + "s"],
    ):
        result = cli(*command, cwd=place)
        assert result.returncode == 0 and result.stderr.count("\n") == 1, result.stderr
        assert "-> o\\x1b]0;title\\x07\\nx" in result.stderr and "\x1b" not in result.stderr
    assert cli("cache", "info", env={"XDG_CACHE_HOME": str(place / output)}).stdout.startswith(
        f"{place}/o\\x1b]0;title\\x07\\nx/extractor ("
    )


@pytest.mark.parametrize("option", ["--context", "--jobs"])
@pytest.mark.parametrize("value", ["\u0661\u0662", "\uff11", "1_0", " 5"])
def test_a_number_is_written_in_ascii_digits(git_repo: GitRepo, tmp_path: Path, option: str, value: str) -> None:
    """int() takes Arabic-Indic and fullwidth digits, underscores and spaces: an option's number does not."""
    result = cli("--repo", str(git_repo.path), "--sha", "v1", option, value, "--output", "out", cwd=tmp_path)
    assert_one_line_error(result, f"argument {option}: expected a whole number, got {value!r}")


def test_a_number_of_more_digits_than_int_takes_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("--jobs", "1" * 5000, cwd=tmp_path)
    assert_one_line_error(result, "argument --jobs: expected a whole number, got '1111")
    assert "_positive" not in result.stderr


def test_a_urls_password_is_never_shown_where_revisions_are_looked_up(place: Path, git_repo: GitRepo) -> None:
    """`--history 'v*'` of a repository URL that cannot be reached: its password is shown as ****."""
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", "-q", cwd=place).returncode == 0
    (catalog,) = (place / "out").iterdir()
    url = "http://user:s3cret@127.0.0.1:9/x.git"
    result = cli("match", "--catalog", str(catalog), "--history", "v*", "--repo", url, "ValueError: x", cwd=place)
    assert result.returncode == 2 and "s3cret" not in result.stderr and "user:****@" in result.stderr


def test_a_file_with_a_nul_byte_is_skipped_for_it_without_a_line(git_repo: GitRepo, tmp_path: Path) -> None:
    """Python names no line for a NUL byte: the skip's reason says so, not "(line None)"."""
    git_repo.commit({"vllm/config/nul.py": b"raise ValueError('a \x00 byte')\n"}, tag="v1")
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (manifest,) = (tmp_path / "out").glob("*/manifest.json")
    (skipped,) = json.loads(manifest.read_text())["skippedFiles"]
    # (a SyntaxError without a line, or a ValueError, as Python's patch releases differ)
    assert skipped["reason"] in (
        "syntax error: source code string cannot contain null bytes",
        "cannot parse: ValueError: source code string cannot contain null bytes",
    )


def test_a_range_of_three_dots_is_refused_as_such(place: Path, git_repo: GitRepo) -> None:
    """git's symmetric difference (A...B) is no line of commits: said, not "unknown revision '.B'"."""
    result = cli("history", "v1...v1", "--repo", str(git_repo.path), cwd=place)
    assert_one_line_error(result, "v1...v1: A...B is no range to follow: say A..B")


def test_marks_that_reorder_text_are_shown_as_escapes(git_repo: GitRepo, tmp_path: Path) -> None:
    """A right-to-left override (U+202E) in a message or an argument could show a line other than it holds:
    escaped on stderr and in text for people, kept as it is in JSON."""
    git_repo.commit({"vllm/config/a.py": "raise ValueError('abc \u202edef')\n"}, tag="v1")
    repo = ["--repo", str(git_repo.path)]
    listed = cli("list", "--catalog", "v1", *repo, cwd=tmp_path)
    assert "\u202e" not in listed.stdout and "abc \\u202edef" in listed.stdout
    as_json = cli("list", "--catalog", "v1", *repo, "--format", "json", cwd=tmp_path)
    assert "abc \u202edef" in json.loads(as_json.stdout)["errorMessage"]
    refused = cli("list", "--catalog", "./no\u202ewhere", cwd=tmp_path)
    assert_one_line_error(refused, "no\\u202ewhere")


def test_a_cache_that_cannot_be_used_is_said_once_and_the_run_goes_on(place: Path, git_repo: GitRepo) -> None:
    """A file where the user cache's folder goes: the extraction is made without the cache (only slower),
    and a warning names the path, once."""
    (place / "afile").write_text("mine")
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--output", "out"]
    result = cli(*args, cwd=place, env={"XDG_CACHE_HOME": str(place / "afile")})
    assert result.returncode == 0 and len(list((place / "out").glob("*/records.jsonl"))) == 1
    warning = f"extractor: warning: cannot use the cache at {place}/afile/extractor/scan.sqlite3 (Not a directory)"
    assert result.stderr.startswith(warning) and result.stderr.count("warning") == 1, result.stderr


def test_a_site_build_killed_midway_leaves_a_folder_the_next_build_removes(place: Path, git_repo: GitRepo) -> None:
    """A site is built in a folder beside its output named after its process: one whose process is gone (a
    build killed with -9) is removed by the next build; a live process's, and the site a link names, stay."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    repo = ["--repo", str(git_repo.path)]
    for link in (False, True):
        work = place / f"link-{link}"
        work.mkdir()
        if link:  # a site published through a link, as nightly makes it: its folder is a build's folder too
            (work / f".site.{gone.pid}-published").mkdir()
            (work / f".site.{gone.pid}-published" / ".extractor-site").write_text("")
            (work / "site").symlink_to(f".site.{gone.pid}-published")
        killed, running = work / f".site.{gone.pid}-abcd1234", work / f".site.{os.getpid()}-efgh5678"
        for folder in (killed, running):
            folder.mkdir()
            (folder / "index.html").write_text("half a site")
        assert cli("site", "--catalog", "v1", *repo, "--output", str(work / "site"), "-q", cwd=place).returncode == 0
        assert not killed.exists() and running.exists()
        assert (work / "site" / "index.html").read_text() != "half a site"


def test_text_for_people_shows_a_messages_control_characters_as_escapes(git_repo: GitRepo, tmp_path: Path) -> None:
    """A catalog's message holding a terminal's commands (ESC ] sets the title, ESC [2J clears the screen)
    is shown with them escaped in every page for people (list's table, explain's page, text or Markdown,
    diff's and history's Markdown, match's echo of its input); JSON keeps the message as it is."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("plain")\n'}, tag="v1")
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("esc \\x1b]0;pwn\\x07 \\x1b[2J here")\n'}, tag="v2")
    repo = ["--repo", str(git_repo.path)]
    as_json = cli("list", "--catalog", "v2", *repo, "--format", "json", cwd=tmp_path)
    (record,) = [json.loads(line) for line in as_json.stdout.splitlines() if "pwn" in line]
    assert "\x1b]0;pwn\x07" in record["errorMessage"]  # the data as it is
    shown = {
        f"{command[0]} {format}": cli(*command, *repo, "--format", format, cwd=tmp_path).stdout
        for format in ("text", "markdown")
        for command in (["list", "--catalog", "v2"], ["explain", "--catalog", "v2", record["id"]])
    }
    # Markdown, a page for people too, on stdout and in the files it is written to.
    shown["diff"] = cli("diff", "v1", "v2", *repo, "--format", "markdown", cwd=tmp_path).stdout
    cli("diff", "v1", "v2", *repo, "--format", "markdown", "--output", "diff.md", cwd=tmp_path)
    shown["diff.md"] = (tmp_path / "diff.md").read_text()
    history = cli("history", "v1..v2", *repo, "--format", "markdown", "--output", "history", "-q", cwd=tmp_path)
    shown |= {"history": history.stdout, "history.md": (tmp_path / "history" / "history.md").read_text()}
    # What match echoes of its input, as text.
    pasted = cli("match", "--catalog", "v2", *repo, "--format", "text", "ValueError: esc \x1b]0;pwn\x07 \x1b[2J here")
    shown["match"] = pasted.stdout
    for name, text in shown.items():
        assert "\x1b" not in text and "\x07" not in text, name
        assert "\\x1b" in text and "pwn\\x07" in text, name  # (Markdown escapes the `]`)


def test_the_suite_started_under_nohup_still_hangs_up_on_the_runs_it_starts() -> None:
    """`nohup .ci/run`: the suite inherits SIGHUP ignored, and so would every run it starts (an ignored signal
    stays ignored across exec); the suite restores it, as it does an ignored SIGINT."""
    test = "tests/test_robustness.py::test_stopping_the_main_process_alone_ends_every_process_and_writes_nothing[1]"
    nohup = (
        "import signal, subprocess, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        f"sys.exit(subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-n', '0', "
        f"{test!r}]).returncode)"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", nohup], capture_output=True, text=True, cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 passed" in result.stdout


def test_copied_source_text_is_bounded_in_every_record_under_it(git_repo: GitRepo, tmp_path: Path) -> None:
    """A generated condition of 60 kB over 100 raises, in a function whose name is 3,000 characters: each
    record holds at most 1,000 characters of each, saying how many were cut (as a window's long lines do),
    and the catalog stays near its source's size, not 100 copies of the condition."""
    test = " or ".join(f"x == {n}" for n in range(6000))  # (about 60 kB on one line)
    name = "f" + "_long" * 600
    raises = "".join(f"            raise ValueError('check {n} failed')\n" for n in range(100))
    source = f"def {name}(x):\n    if {test}:\n        if x:\n{raises}"
    git_repo.commit({"vllm/config/generated.py": source}, tag="v1")
    out = tmp_path / "out"
    result = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    (folder,) = out.iterdir()
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    assert len(records) == 100
    for record in records:
        condition = record["extraction"]["conditions"][0]["test"]
        assert len(condition) < 1100 and condition.endswith(" characters cut...]"), condition[-60:]
        assert len(record["extraction"]["function"]) < 1100
    assert (folder / "records.jsonl").stat().st_size < 40 * len(source)

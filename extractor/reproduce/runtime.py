# Runtime: an interpreter where the codebase itself is installed (vllm==X.Y.Z in a virtual environment of the
# user cache, made once; or one the user names), and a session in it that runs attempts one by one (child.py).
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from extractor.errors import ExtractorError
from extractor.repo.housekeeping import cache_dir
from extractor.util.progress import one_line

__all__ = [
    "IMPORT_TIMEOUT",
    "RuntimeFault",
    "Session",
    "ensure_runtime",
    "installed",
    "probe",
    "runtime_dir",
    "session",
    "sessions",
]

IMPORT_TIMEOUT = 300.0  # seconds an interpreter may take to import the package before it is said to hang
_MISMATCHED = ("torchvision", "torchaudio", "torchcodec")  # wheels built against another torch than vllm's
_READY = "runtime.json"


def runtime_dir(package: str, version: str) -> Path:
    """Where the runtime of `package==version` is (or will be) made, in the user cache."""
    return cache_dir() / "runtimes" / f"{package}-{version}"


def ensure_runtime(
    package: str, version: str, *, progress: Callable[[str], None] | None = None, pip_args: tuple[str, ...] = ()
) -> Path:
    """The interpreter of a virtual environment holding `package==version`, made the first time (pip, as the
    user's pip is configured; the torch extensions whose wheels do not match vLLM's torch removed) and checked
    by importing it. A failure is one line naming what pip or the import said; nothing half made is kept."""
    from filelock import FileLock, Timeout

    folder = runtime_dir(package, version)
    python = folder / "bin" / "python"
    marker = folder / _READY
    if marker.is_file() and python.exists():
        return python
    say = progress or (lambda _: None)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # One run makes it; another one at the same time waits for it, then uses what it made (never a shared
    # `.partial` folder, each removing the other's).
    lock = FileLock(str(folder.with_name(folder.name + ".lock")))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"waiting for another run that is making the runtime for {package}=={version}")
        lock.acquire()
    try:
        if marker.is_file() and python.exists():
            return python
        _build(package, version, folder, say, pip_args)
    finally:
        lock.release()
    return python


def _build(package: str, version: str, folder: Path, say: Callable[[str], None], pip_args: tuple[str, ...]) -> None:
    """Make the runtime in `folder.partial`, then move it to `folder` (under the build's lock)."""
    building = folder.with_name(folder.name + ".partial")
    shutil.rmtree(building, ignore_errors=True)
    try:
        say(f"making a runtime for {package}=={version} in {folder} (once; it is large)")
        _run([sys.executable, "-m", "venv", str(building)], "cannot make a virtual environment")
        pip = [str(building / "bin" / "python"), "-m", "pip"]
        say(f"installing {package}=={version} with pip (this takes minutes)")
        _run([*pip, "install", "--disable-pip-version-check", f"{package}=={version}", *pip_args], "pip install")
        _run([*pip, "uninstall", "--yes", *_MISMATCHED], "pip uninstall")
        _matching_vision(building / "bin" / "python", pip, pip_args, say)
        found = probe(building / "bin" / "python", package)
        if found != version:
            raise ExtractorError(f"the runtime made for {package}=={version} imports {package} {found}")
        (building / _READY).write_text(json.dumps({"package": package, "version": version}) + "\n")
        shutil.rmtree(folder, ignore_errors=True)  # (one left without its marker by a run that was stopped)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _matching_vision(python: Path, pip: list[str], pip_args: tuple[str, ...], say: Callable[[str], None]) -> None:
    """torchvision built for the torch vLLM installed, when the index has one (newer vLLM imports it while its
    configs are built): kept only if it imports; without it, the checks that need it say so."""
    torch = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    if not torch:
        return
    say(f"installing the torchvision that matches torch {torch}")
    installed = subprocess.run(
        [*pip, "install", "--disable-pip-version-check", "torchvision", f"torch=={torch}", *pip_args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    works = (
        installed.returncode == 0
        and subprocess.run([str(python), "-c", "import torchvision"], capture_output=True, check=False).returncode == 0
    )
    if not works:
        subprocess.run([*pip, "uninstall", "--yes", "torchvision"], capture_output=True, check=False)


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        said = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise ExtractorError(f"{what} failed: {said[-1] if said else f'exit status {result.returncode}'}")


def probe(python: Path | str, package: str, *, timeout: float = IMPORT_TIMEOUT) -> str | None:
    """The version of `package` an interpreter imports (None when it has no `__version__`); a one-line error
    when it cannot run, cannot import it, or takes longer than `timeout`."""
    with session(python, package, timeout=timeout) as running:
        return running.version


# Where an interpreter has a package, and its version, without importing it (vLLM takes half a minute): the
# distribution's metadata; a package without one (a folder on PYTHONPATH) is imported for its `__version__`.
_INSTALLED = """
import importlib.metadata, importlib.util, sys
name = sys.argv[1]
if importlib.util.find_spec(name) is None:
    sys.exit(3)
try:
    print(importlib.metadata.version(name))
except importlib.metadata.PackageNotFoundError:
    print(getattr(__import__(name), "__version__", None) or "")
"""


def installed(python: Path | str, package: str, *, timeout: float = IMPORT_TIMEOUT) -> str | None:
    """The version of `package` an interpreter has (None: it does not say), read without importing the package
    where its metadata says it; a one-line error when the interpreter cannot run or has no `package`."""
    try:
        done = subprocess.run(
            [str(python), "-c", _INSTALLED, package], capture_output=True, text=True, timeout=timeout, check=False
        )
    except OSError as error:
        raise ExtractorError(f"cannot run the runtime {python}: {error.strerror or error}") from None
    except subprocess.TimeoutExpired:
        raise ExtractorError(
            f"the runtime {python} did not say which {package} it has within {timeout:.0f} s"
        ) from None
    if done.returncode == 3:
        raise ExtractorError(f"the runtime {python} has no {package} installed")
    said = done.stdout.strip().splitlines()
    if done.returncode != 0 or not said:
        last = [line for line in done.stderr.splitlines() if line.strip()]
        raise ExtractorError(
            f"the runtime {python} cannot say which {package} it has: "
            + one_line(last[-1] if last else f"exit status {done.returncode}", limit=300)
        )
    return said[-1] or None


_GRACE = 30.0  # seconds past an attempt's own limit (the child stops it then) before the runtime is said to hang
_LONGEST = 64 << 20  # bytes of one answer: more is no answer of the child's
_TAIL = 4000  # bytes of the runtime's stderr kept, for an error's last words and an attempt's `said`
_STOPPING = 2.0  # seconds the children have to end their attempts when asked, before they are killed
# What an answer of each outcome holds that the extractor reads, and of which type.
_FIELDS: dict[str, dict[str, type]] = {
    "raised": {"class": str, "message": str, "sites": list, "wrapped": list},
    "found": {"python": str, "arguments": dict, "fixes": list},
}
_BROKE = ("timeout", "crashed", "failed")  # the outcomes of an attempt that did not end by itself


class _Silent(Exception):
    """No whole line came within the deadline."""

    def __init__(self, partial: bytes) -> None:
        self.partial = partial


class _Ended(Exception):
    """The child closed its end (or died) before a whole line came."""

    def __init__(self, partial: bytes) -> None:
        self.partial = partial


class _Answers:
    """The child's answers, a line at a time, each read within a deadline: half a line is never waited on past
    it, and a child that died is noticed even when a process it left holds the pipe."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self._process = process
        self._fd = process.stdout.fileno()
        self._buffer = bytearray()

    def next(self, deadline: float) -> bytes:
        import select

        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > _LONGEST:
                raise _Ended(bytes(self._buffer[:200]))
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Silent(bytes(self._buffer))
            try:
                ready, _, _ = select.select([self._fd], [], [], min(left, 0.5))
                chunk = os.read(self._fd, 1 << 16) if ready else None
            except (OSError, ValueError):  # (stopped: its pipe closed under this reader)
                chunk = b""
            if chunk:
                self._buffer += chunk
            elif chunk == b"" or self._process.poll() is not None:
                raise _Ended(bytes(self._buffer))


class _Said:
    """The runtime's stderr, drained as it comes (vLLM logs there: a pipe nobody reads would stall it), its last
    `_TAIL` bytes kept."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        import threading

        assert process.stderr is not None
        self._kept = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, args=(process.stderr.fileno(),), daemon=True).start()

    def _drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._kept += chunk
                self.total += len(chunk)
                del self._kept[:-_TAIL]

    def since(self, mark: int) -> str:
        """What it wrote past its first `mark` bytes (the last `_TAIL` of them at most)."""
        with self._lock:
            new = min(self.total - mark, len(self._kept))
            data = bytes(self._kept[len(self._kept) - new :]) if new > 0 else b""
        return data.decode(errors="replace")

    def last(self, mark: int = 0) -> str:
        """The last line it wrote past `mark` bytes, as one line ('' when none)."""
        lines = [line for line in self.since(mark).splitlines() if line.strip()]
        return one_line(lines[-1].strip(), limit=300) if lines else ""


@dataclass
class Session:
    """A child interpreter that imported the package once and runs attempts, each in a process of its own."""

    process: subprocess.Popen[bytes]
    version: str | None
    seconds: float  # what importing the package took
    python: str = ""
    answers: _Answers | None = None
    said: _Said | None = None

    def attempt(self, program: str, *, timeout: float = 60.0, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Run one program; what it raised (class, message, raise sites), or that it passed, timed out or crashed."""
        return self._ask({"id": ident, "program": program, "timeout": timeout, "memory": memory})

    def explore(self, spec: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Search for arguments that raise at a target (see explore.py); what it found, or how far it got."""
        return self._ask({"id": ident, "explore": spec, "timeout": timeout, "memory": memory})

    def serve(self, spec: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Lift a class's trigger and fixes to `vllm serve` lines and run them (see serving.py)."""
        return self._ask({"id": ident, "serve": spec, "timeout": timeout, "memory": memory})

    def sweep(self, spec: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Search the serve path for a line that reaches a check, from the fields it reads (see probing.py)."""
        return self._ask({"id": ident, "probe": spec, "timeout": timeout, "memory": memory})

    def line(self, line: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Run one `vllm serve` line (flags, model config, environment) in a fresh process."""
        return self._ask({"id": ident, "line": line, "timeout": timeout, "memory": memory})

    def _ask(self, task: dict[str, Any]) -> dict[str, Any]:
        """Send a task and read its answer, checked: a runtime that answers what the child never writes (not
        JSON, not an object, no outcome, another task's id), half a line, or nothing in time is a RuntimeFault."""
        assert self.answers is not None and self.said is not None and self.process.stdin is not None
        ident, timeout = str(task["id"]), float(task["timeout"])
        mark = self.said.total
        try:
            self.process.stdin.write(json.dumps(task).encode() + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError):
            raise self._fault("stopped taking attempts (its interpreter died)", ident) from None
        waited = timeout + _GRACE
        try:
            line = self.answers.next(time.monotonic() + waited)
        except _Silent as silent:
            half = f" past half an answer ({_shown(silent.partial)})" if silent.partial else ""
            raise self._fault(f"stopped answering{half} for {waited:.0f} s", ident) from None
        except _Ended as ended:
            half = f" in the middle of an answer ({_shown(ended.partial)})" if ended.partial else ""
            raise self._fault(f"ended{half} (its interpreter died)", ident) from None
        answer = _checked(line, ident)
        if answer is None:
            raise self._fault(f"answered what the extractor's child never writes: {_shown(line)}", ident)
        if answer["outcome"] in _BROKE:  # what it printed meanwhile says why (a fatal error, a segfault's trace)
            said = self.said.last(mark)
            settle = time.monotonic() + 0.5  # (written before the answer, maybe not drained yet: a moment for it)
            while not said and time.monotonic() < settle:
                time.sleep(0.02)
                said = self.said.last(mark)
            if said:
                answer["reason"] = f"{answer.get('reason') or answer['outcome']}; it printed: {said}"
        return answer

    def _fault(self, what: str, ident: str) -> RuntimeFault:
        said = self.said.last() if self.said is not None else ""
        record = f" (at {ident})" if ident else ""
        return RuntimeFault(
            f"the runtime {self.python} {what}{record}" + (f"; it last printed: {said}" if said else "")
        )


class RuntimeFault(ExtractorError):
    """The runtime stopped answering, or answered what the child never writes: the runtime's fault, one line."""


def _shown(data: bytes) -> str:
    return one_line(repr(data.decode(errors="replace")), limit=120)


def _checked(line: bytes, ident: str) -> dict[str, Any] | None:
    """An answer as the child writes it (a JSON object with this task's id and an outcome, with the fields that
    outcome holds, of their types), or None."""
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("id") != ident or not isinstance(answer.get("outcome"), str):
        return None
    for name, kind in _FIELDS.get(answer["outcome"], {}).items():
        if not isinstance(answer.get(name), kind):
            return None
    return answer


@contextmanager
def session(
    python: Path | str,
    package: str,
    *,
    preload: tuple[str, ...] = (),
    warm: str = "",
    timeout: float = IMPORT_TIMEOUT,
    environment: dict[str, str] | None = None,
) -> Iterator[Session]:
    """Start child.py in `python`, wait until it imported `package` (and `preload`, the modules attempts use,
    and ran `warm`, a program that does once what attempts do first), and stop it (and what it started) after."""
    options = {"preload": preload, "warm": warm, "timeout": timeout, "environment": environment}
    with sessions(python, package, count=1, **options) as (running,):  # type: ignore[arg-type]
        yield running


@contextmanager
def sessions(
    python: Path | str,
    package: str,
    *,
    count: int,
    preload: tuple[str, ...] = (),
    warm: str = "",
    timeout: float = IMPORT_TIMEOUT,
    environment: dict[str, str] | None = None,
) -> Iterator[list[Session]]:
    """`count` sessions (see `session`), started together: they import the package side by side, not one after
    another. All are stopped after, at once, with whatever their attempts started."""
    child = resources.files("extractor.reproduce").joinpath("child.py")
    # Offline: a model is the tiny folder the child writes, never a download (nor a wait for one).
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["EXTRACTOR_WARM"] = warm
    for name, value in (environment or {}).items():  # (what the user set wins)
        env.setdefault(name, value)
    started = time.monotonic()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            try:
                processes.append(
                    subprocess.Popen(
                        [str(python), str(child), package, *preload],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        env=env,
                        start_new_session=True,
                    )
                )
            except OSError as error:
                raise ExtractorError(f"cannot run the runtime {python}: {error.strerror or error}") from None
        said = [_Said(process) for process in processes]  # (drained from the start: an import may say a lot)
        yield [_ready(p, s, str(python), package, started, timeout) for p, s in zip(processes, said, strict=True)]
    finally:
        _stop(processes)


def _ready(
    process: subprocess.Popen[bytes], said: _Said, python: str, package: str, started: float, timeout: float
) -> Session:
    """A started child as a session, once it says it imported the package; a one-line error when it cannot, or
    says something else, or nothing in time."""
    answers = _Answers(process)
    try:
        line = answers.next(started + timeout)
    except _Silent:
        waited = time.monotonic() - started
        raise ExtractorError(f"the runtime {python} did not import {package} within {waited:.0f} s") from None
    except _Ended:
        time.sleep(0.05)  # (its last words: the stderr reader may still be at them)
        last = said.last()
        raise ExtractorError(
            f"the runtime {python} ended before it imported {package}" + (f": {last}" if last else "")
        ) from None
    try:
        ready = json.loads(line)
    except ValueError:
        ready = None
    if not isinstance(ready, dict) or not isinstance(ready.get("ready"), bool):
        raise ExtractorError(f"the runtime {python} is not running the extractor's child: it wrote {_shown(line)}")
    if not ready["ready"]:
        raise ExtractorError(f"the runtime {python} cannot import {package}: {one_line(str(ready.get('reason')))}")
    version = ready.get("version")
    seconds = ready.get("seconds")
    return Session(
        process,
        str(version) if version is not None else None,
        float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        python,
        answers,
        said,
    )


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """End the children at once: each is asked to (it kills its attempt and whatever that started, wherever it
    went: child.py), then each session's processes are killed."""
    import signal

    for process in processes:
        with suppress(OSError, ValueError):
            if process.stdin is not None:
                process.stdin.close()
        with suppress(OSError):
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _STOPPING
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(max(0.0, deadline - time.monotonic()))
    for process in processes:
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

# Child: runs inside a runtime's interpreter (where vLLM is installed, not the extractor): imports the package
# once, then runs each attempt it reads on stdin in a forked process of its own, with a time and memory limit,
# and writes what happened as one JSON line on stdout. The standard library only: the runtime has no extractor.
#
#   python child.py PACKAGE [MODULE ...]  -> {"ready": true, "version": ..., "seconds": ...}, then per attempt
#   {"id": ..., "program": ..., "timeout": s, "memory": bytes}  ->  {"id": ..., "outcome": ..., ...}
#
# outcome: "raised" (class, message as str() shows it, the raise sites of the exception and of what pydantic
# wraps: [file, line] below the package's folder), "passed", "timeout", "crashed" (killed by a signal, or out of
# memory), or "failed" (the attempt itself could not run).
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import typing

if __package__:  # imported as part of the extractor (its tests)
    from extractor.reproduce import explore, probing, serving
else:  # run as a script in a runtime: its neighbour, then this folder off the path (none of its other modules
    explore = importlib.import_module("explore")  # may stand for a module the package imports)
    serving = importlib.import_module("serving")
    probing = importlib.import_module("probing")
    sys.path.pop(0)
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36  # prctl(2)
_Reporter = typing.Callable[[BaseException], dict[str, object]]  # an error -> what the child says of it


@dataclasses.dataclass
class Child:
    """What this child holds while it serves attempts (made by `serve` once the package is imported)."""

    roots: list[str]  # the package's folders: where a raise site is read
    model_dir: str  # the tiny model folder attempts name (`MODEL`)
    channel: int  # the descriptor the answers go on: closed in every attempt (none of its processes holds it)
    kept: set[int] = dataclasses.field(default_factory=set)  # processes no attempt started (the package's own)
    running: int | None = None  # the attempt under way (its pid), while one is

    def report(self, error: BaseException) -> dict[str, object]:
        """What an attempt raised, its sites read below the package's folders."""
        return _report(error, self.roots)

    def stopped(self, signum: int, frame: object) -> None:
        """Asked to stop (SIGTERM, by the extractor): the attempt under way and whatever it started killed, then
        out."""
        if self.running is not None:
            _kill(self.running)
            _sweep(self.running, self.kept)
        shutil.rmtree(self.model_dir, ignore_errors=True)
        os._exit(0)


def _where(frames: traceback.StackSummary, roots: list[str]) -> list[list[object]]:
    """The frames under the package's folders, as [path below the folder's parent, line], innermost last."""
    out: list[list[object]] = []
    for frame in frames:
        for root in roots:
            if frame.filename.startswith(root + os.sep):
                out.append([os.path.relpath(frame.filename, os.path.dirname(root)), frame.lineno])
                break
    return out


def _report(error: BaseException, roots: list[str]) -> dict[str, object]:
    """What an attempt raised: its class, message and sites below the package's folders `roots`, and those of
    what it wraps."""
    sites = _where(traceback.extract_tb(error.__traceback__), roots)
    wrapped = [
        {
            "class": type(inner).__name__,
            "message": str(inner),
            "sites": _where(traceback.extract_tb(inner.__traceback__), roots),
        }
        for inner in explore.wrapped(error)
    ]
    report: dict[str, object] = {
        "outcome": "raised", "class": type(error).__name__, "message": str(error), "sites": sites, "wrapped": wrapped,
    }  # fmt: skip
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":  # what pydantic says of each field
        with contextlib.suppress(Exception):
            report["errors"] = [_field_error(e) for e in errors()]
    return report


def _field_error(error: dict[str, object]) -> dict[str, object]:
    ctx = error.get("ctx") or {}
    return {
        "type": error.get("type"),
        "loc": [str(part) for part in error.get("loc") or ()],  # type: ignore[attr-defined]
        "ctx": {k: str(v) for k, v in ctx.items() if k != "error"},  # type: ignore[attr-defined]
    }


def _attempt(program: str, memory: int, report: _Reporter) -> dict[str, object]:
    """Run one program in this (forked) process; what it raised, or that it passed."""
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        exec(compile(program, "<reproduction>", "exec"), {"__name__": "__reproduction__"})
    except MemoryError:
        return {"outcome": "crashed", "reason": "out of memory"}
    except BaseException as error:
        return report(error)
    return {"outcome": "passed"}


def _serve(task: dict[str, object], report: _Reporter) -> dict[str, object]:
    target, pattern = list(task["target"]), str(task["pattern"])  # type: ignore[call-overload]
    return serving.search(task, explore.TINY_MODELS, report, lambda found: serving.at_target(found, target, pattern))


def _probe(task: dict[str, object], report: _Reporter) -> dict[str, object]:
    target, pattern = list(task["target"]), str(task["pattern"])  # type: ignore[call-overload]
    return probing.sweep(task, explore.TINY_MODELS, report, lambda found: serving.at_target(found, target, pattern))


def _run(task: dict[str, object], child: Child) -> dict[str, object]:
    """Fork; the attempt runs in its own process (and process group), writes its report on a pipe and exits; past
    the time limit it is killed. Whatever it started is killed after it, wherever it went (see _sweep)."""
    timeout = float(task.get("timeout") or 60)  # type: ignore[arg-type]
    memory = int(task.get("memory") or 0)  # type: ignore[call-overload]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the attempt's own process: whatever it does, it ends here
        os.close(read)
        try:
            _contained(child.channel)
            if "explore" in task:
                if memory:
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
                report = explore.explore(task["explore"], child.roots, child.model_dir)  # type: ignore[arg-type]
            elif "serve" in task:  # a class's trigger and fixes lifted to `vllm serve` lines, and run
                if memory:
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
                report = _serve(task["serve"], child.report)  # type: ignore[arg-type]
            elif "probe" in task:  # the serve path searched for a line that reaches a check
                if memory:
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
                report = _probe(task["probe"], child.report)  # type: ignore[arg-type]
            elif "line" in task:  # one `vllm serve` line, run
                if memory:
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
                report = serving.run_line(task["line"], child.report)  # type: ignore[arg-type]
            else:
                report = _attempt(str(task["program"]), memory, child.report)
            data = json.dumps(report, default=str).encode()
        except BaseException as error:
            data = json.dumps({"outcome": "failed", "reason": repr(error)}).encode()
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(write)
    child.running = pid
    try:
        return _collected(pid, read, timeout)
    finally:
        child.running = None
        _sweep(pid, child.kept)


def _contained(channel: int) -> None:
    """In an attempt's process: a process group of its own (killed as one), killed when this child dies, and none
    of the child's pipes (the answers on `channel`, the tasks) held: a process it leaves behind can neither answer
    nor read."""
    os.setpgid(0, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.close(channel)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)


def _collected(pid: int, read: int, timeout: float) -> dict[str, object]:
    """The report of the attempt `pid` from the pipe `read`: read until the attempt has ended (not until the pipe
    is closed: a process it started may hold it open), or a timeout once it is past its time."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    status: int | None = None
    closed = False  # every writer closed the pipe: the attempt is about to end
    with os.fdopen(read, "rb", buffering=0) as pipe:
        os.set_blocking(read, False)
        while status is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"outcome": "timeout", "seconds": timeout, "killed": _kill(pid)}
            if closed:
                time.sleep(0.001)
            elif select.select([pipe], [], [], min(left, 0.05))[0]:
                closed = _drained(pipe, chunks)
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
        _drained(pipe, chunks)  # (what it wrote before it ended is all in the pipe by now)
    if not chunks:
        reason = f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else "no report"
        return {"outcome": "crashed", "reason": reason}
    try:
        result = json.loads(b"".join(chunks))
    except ValueError:
        return {"outcome": "crashed", "reason": "its report was cut short"}
    return result if isinstance(result, dict) else {"outcome": "crashed", "reason": "its report is not an object"}


def _drained(pipe: typing.IO[bytes], chunks: list[bytes]) -> bool:
    """What a non-blocking pipe holds now, added to `chunks`; whether it is closed at the other end."""
    while True:
        try:
            chunk = pipe.read(65536)
        except BlockingIOError:
            return False
        if chunk is None:
            return False
        if not chunk:
            return True
        chunks.append(chunk)


def _kill(pid: int) -> bool:
    """Kill an attempt and whatever it started (its process group); wait for it."""
    try:
        os.killpg(pid, signal.SIGKILL)
        group = True
    except OSError:
        group = False
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
    return group


def _sweep(pid: int, kept: set[int]) -> None:
    """Kill what an attempt left: its process group, then every process that is this child's and was not before
    (not in `kept`; a subreaper, the child inherits what an attempt's processes orphan, even those in sessions of
    their own), until none is left."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    for _ in range(100):
        left = [child for child in _children() if child not in kept]
        if not left:
            break
        for child in left:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        for child in left:
            with contextlib.suppress(OSError):
                os.waitpid(child, 0)


def _children() -> list[int]:
    """The processes whose parent is this one (from /proc; none where there is no /proc)."""
    me, out = os.getpid(), []
    try:  # each thread's children, where the kernel lists them (quick)
        for task in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{task}/children") as file:
                out += [int(pid) for pid in file.read().split()]
        return out
    except OSError:
        out = []
    with contextlib.suppress(OSError):  # else every process's parent
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()  # (after the command's name, which may hold spaces)
            if len(fields) > 1 and int(fields[1]) == me:
                out.append(int(name))
    return out


def _prctl(option: int, value: int) -> None:
    """prctl(2), where there is one (Linux): otherwise nothing."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def serve(argv: list[str]) -> int:
    package = argv[1] if len(argv) > 1 else "vllm"
    preload = argv[2:]  # modules every attempt uses, imported once here rather than in each attempt's process
    # The answers go on a copy of stdout; what the package prints (vLLM logs to stdout) goes where stderr goes.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    started = time.monotonic()
    try:
        module = importlib.import_module(package)
    except BaseException as error:
        print(json.dumps({"ready": False, "reason": f"{type(error).__name__}: {error}"}), file=channel, flush=True)
        return 1
    for name in preload:
        with contextlib.suppress(BaseException):  # (an attempt that needs it says why)
            importlib.import_module(name)
    roots = [os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or ""))]
    roots += [os.path.abspath(path) for path in getattr(module, "__path__", [])]
    version = getattr(module, "__version__", None)
    child = Child(roots, explore.write_model(tempfile.mkdtemp(prefix="extractor-model-")), channel.fileno())
    warm = os.environ.get("EXTRACTOR_WARM")
    if warm:  # run once here what every attempt would do first (lazy imports, caches): forks start warm
        with contextlib.suppress(BaseException):
            exec(compile(warm, "<warm>", "exec"), {"__name__": "__warm__", **explore._folders(child.model_dir)})
    serving.prepare(explore.TINY_MODELS[explore.MODEL])  # (the serve parser built once, before forks)
    seconds = round(time.monotonic() - started, 2)
    # What an attempt leaves is this child's to kill (a subreaper: its orphans come here), and a stop kills it.
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    child.kept.update(_children())
    signal.signal(signal.SIGTERM, child.stopped)
    print(json.dumps({"ready": True, "version": version, "seconds": seconds}), file=channel, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        result = _run(task, child)
        result["id"] = task.get("id")
        print(json.dumps(result, default=str), file=channel, flush=True)
    shutil.rmtree(child.model_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv))

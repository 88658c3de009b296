# Lifecycle: what the command line does to its own process (standard streams, stop signals, the collector,
# a fast exit) and to its workers; a library caller's interpreter is never changed.
from __future__ import annotations

import codecs
import contextlib
import gc
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import NoReturn

from extractor.errors import ExitCode, OutputError

__all__ = [
    "STOP_SIGNALS",
    "Interrupted",
    "become_worker",
    "collector_paused",
    "command_line_process",
    "die_with_parent",
    "handed",
    "handing",
    "hold_workers",
    "in_command_line_process",
    "interruption",
    "is_quiet",
    "keep_until_exit",
    "quick_switching",
    "quiet_for_one_run",
    "raise_if_interrupted",
    "set_quiet",
    "signals_as_interrupts",
    "standard_streams",
    "started_closed",
    "take_workers",
]

# The signals that end a run as Ctrl-C does: a terminal's (INT), a scheduler's or kill's (TERM), a closed
# terminal's (HUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where it lands (a KeyboardInterrupt, so every cleanup path sees it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class _Process:
    """What this process's context holds: the one place the extractor keeps state for a whole process."""

    command_line: bool = False  # inside command_line_process: not a library caller's, nor a worker
    quiet: bool = False  # say nothing on stderr but errors (see set_quiet)
    kept: list[tuple[object, ...]] = field(default_factory=list)  # see keep_until_exit
    received: int | None = None  # the first stop signal received while signals_as_interrupts was active
    depth: int = 0  # how many signals_as_interrupts blocks are open
    deferred: float | None = None  # when an interrupt was first put off, while it is
    again: threading.Timer | None = None  # the signal to be sent again, until it is
    workers: object = None  # the worker pool the command line forked ahead, until an extraction takes it
    handed: object = None  # what the processes forked in a `handing` block inherit
    # The standard descriptors the process started with closed (`<&-`, `>&-`; see standard_streams).
    closed: set[int] = field(default_factory=set)


_process = _Process()


_AGAIN = 0.01  # seconds after which a signal that landed inside an import is sent again
_PATIENCE = 1.0  # seconds an interrupt waits for imports to end (one that blocks is interrupted all the same)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _process.received is None:
        _process.received = signum
    now = time.monotonic()
    if _importing(frame) and now - (_process.deferred if _process.deferred is not None else now) < _PATIENCE:
        # A module is being imported: its compiled part may not survive an exception raised inside it (a
        # Ctrl-C during orjson's import crashed the interpreter). The signal comes again shortly, and the
        # interrupt is raised once the import is done (or, one that blocks, after a second all the same).
        _process.deferred = now if _process.deferred is None else _process.deferred
        _process.again = threading.Timer(_AGAIN, os.kill, (os.getpid(), signum))
        _process.again.daemon = True
        _process.again.start()
        return
    _process.deferred = None
    raise Interrupted(signum)


def _importing(frame: FrameType | None) -> bool:
    """Whether the frame is (or is called from) the import system's: a module's import is under way."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Raise Interrupted on SIGINT, SIGTERM and SIGHUP, and remember that one came.

    Remembering is what makes an interrupt a result wherever it lands: a library that catches the
    KeyboardInterrupt and raises its own error instead (pydantic's serializer wraps it in a
    PydanticSerializationError; a git that died of the same Ctrl-C fails) still ends the run as
    interrupted. A signal the process was told to ignore (nohup, a background job) stays ignored.
    Outside the main thread, signals cannot be handled: nothing changes. An interrupt raised where
    nothing can catch it (a finalizer, a callback from pydantic's compiled core) is remembered all the
    same, and not printed as an ignored exception: the run ends as interrupted, with its one line.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _process.depth == 0:
        _process.received = None
    previous = {}
    for number in STOP_SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, _on_signal)
    unraisable = sys.unraisablehook
    sys.unraisablehook = _quiet_interrupts(unraisable)
    _process.depth += 1
    try:
        yield
    finally:
        _process.depth -= 1
        if _process.depth == 0 and _process.again is not None:  # a signal put off: not sent to the handlers restored
            _process.again.cancel()
        sys.unraisablehook = unraisable
        for number, handler in previous.items():
            signal.signal(number, handler)


def _quiet_interrupts(hook: Callable[[sys.UnraisableHookArgs], object]) -> Callable[[sys.UnraisableHookArgs], None]:
    """`hook`, but silent on an Interrupted (remembered as received: the run ends as interrupted)."""

    def quiet(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            hook(unraisable)

    return quiet


def raise_if_interrupted() -> None:
    """Raise Interrupted if a stop signal came, even if what it raised was swallowed: called before
    anything is published, so that nothing is after an interrupt."""
    if _process.received is not None:
        raise Interrupted(_process.received)


def interruption(error: BaseException | None) -> int | None:
    """The exit status of a run that ended with `error` (None: it returned) if an interrupt ended it."""
    if _process.received is not None:
        return 128 + _process.received
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return 128 + error.signum if isinstance(error, Interrupted) else ExitCode.INTERRUPTED
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


class _Descriptor(io.RawIOBase):
    """Writes straight to a file descriptor; standard output reports failure, standard error swallows it."""

    def __init__(self, fd: int, *, loud: bool) -> None:
        super().__init__()
        self._fd = fd
        self._loud = loud
        self._failed = False  # after a failure, what is left is dropped: the failure is reported once

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        if self._loud:
            raise_if_interrupted()
        if not self._failed:
            try:
                return os.write(self._fd, data)
            except BrokenPipeError:
                self._failed = self._loud
                if self._loud:
                    raise  # the reader went away: the command line exits quietly, as Unix tools do
            except OSError as error:
                self._failed = self._loud
                if self._loud:
                    raise OutputError(f"cannot write to standard output: {error.strerror or error}") from None
        return len(memoryview(data))  # standard error is best effort: losing it must not stop the run


def _escaped(error: UnicodeError) -> tuple[str, int]:
    """Write a character the stream's encoding cannot as JSON writes one (`\\u00ef`, a surrogate pair past
    U+FFFF): valid inside the JSON strings where data's text stands, and readable in text."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), error.end


codecs.register_error("extractor-escape", _escaped)


def _stream(fd: int, *, loud: bool, like: object) -> io.TextIOWrapper:
    # A locale that cannot encode some text (PYTHONIOENCODING=ascii, LANG=C): escaped, never a failed run.
    return io.TextIOWrapper(
        io.BufferedWriter(_Descriptor(fd, loud=loud)),  # type: ignore[type-var]
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors="extractor-escape" if loud else "backslashreplace",
        line_buffering=os.isatty(fd) or not loud,
    )


def started_closed(fd: int) -> bool:
    """Whether the standard descriptor `fd` was closed when the process started (`<&-`, `>&-`): a command that
    reads its input there says so rather than take the empty /dev/null that holds the number for an empty
    input, and one that writes files and also prints them (history) writes the files alone."""
    return fd in _process.closed


def standard_streams() -> None:
    """Make standard output carry data only and fail loudly, and standard error never fail the run.

    A closed descriptor (`>&-`, `2>&-`) is first held by /dev/null, so that no file the run opens can
    take its number: standard output's is opened read-only, so writing data there fails (and says so),
    standard error's write-only, so warnings are dropped rather than printed into the data.
    """
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, mode)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
            _process.closed.add(fd)
            if fd == 0:
                sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's stdin, never closed)
    sys.stdout = _stream(1, loud=True, like=sys.stdout)
    sys.stderr = _stream(2, loud=False, like=sys.stderr)


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this (worker) process when its parent dies, however the parent dies.

    Where prctl is missing (not Linux), the worker ends when its parent ends it, or finds its pipes
    closed. A parent that died before the request took effect is noticed here.
    """
    import ctypes  # here: only workers need it

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(ExitCode.INTERRUPTED)


# --- the command line's process: its tricks, switched on in one place ---------------------------------------

# What runs leave behind, kept rather than freed (a list while the process is a command line's, which
# leaves with os._exit: freeing a whole package's results and lines takes 20 ms for nothing).


@contextlib.contextmanager
def command_line_process() -> Iterator[None]:
    """Run the block as the whole life of a command-line process, then end the process with the code of
    the SystemExit the block raised (0 if it raised none).

    Inside, standard streams are those of `standard_streams`, stop signals raise Interrupted, and the
    tricks below take effect: the collector paused where the pipeline asks for it, results kept until
    exit, quick thread switching while workers are fed. Leaving with os._exit skips the interpreter's
    teardown (a last garbage collection over every object the run made, and every module's cleanup):
    nothing is left to clean up by then, and a big run would spend a tenth of a second on it. Anything
    the block must finish (flushing, background writes) it finishes before raising SystemExit.
    """
    _process.command_line, _process.kept = True, []
    code: int = ExitCode.TROUBLE
    try:
        standard_streams()
        with signals_as_interrupts():
            try:
                yield
                code = ExitCode.OK
            except SystemExit as exit:
                code = (
                    exit.code if isinstance(exit.code, int) else ExitCode.OK if exit.code is None else ExitCode.TROUBLE
                )
    finally:
        _leave(code)


def _leave(code: int) -> NoReturn:
    with contextlib.suppress(BaseException):
        sys.stderr.flush()
    os._exit(code)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block in a command-line process (elsewhere: nothing changes).

    A run makes many small acyclic objects: the collector would only slow it down. Woken after it, the
    collector would walk every object made meanwhile, mostly alive (some 90 ms on a whole package, for
    nothing): the process, which leaves without tearing down, moves them out of its sight first.
    """
    if not _process.command_line or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def in_command_line_process() -> bool:
    """Whether this process is a command line's, inside `command_line_process` (not a library caller's,
    nor a worker)."""
    return _process.command_line


def keep_until_exit(*objects: object) -> None:
    """Keep `objects` alive until the process leaves, in a command-line process (elsewhere: nothing).

    Only the last call's are kept: a process that extracts revision after revision (a history) frees
    each extraction's leftovers when the next one comes, so its memory follows one revision, not all.
    """
    if _process.command_line:
        _process.kept[:] = [objects]


def set_quiet(quiet: bool) -> None:
    """Say nothing on stderr but errors (the command line's --quiet; a library caller sees only bars on a
    terminal, as before)."""
    _process.quiet = quiet


def is_quiet() -> bool:
    return _process.quiet


@contextlib.contextmanager
def quiet_for_one_run() -> Iterator[None]:
    """Within this, set_quiet holds until the block ends (a command line's run called as a function leaves
    its caller's stderr as it found it)."""
    before = _process.quiet
    try:
        yield
    finally:
        _process.quiet = before


def hold_workers(pool: object) -> None:
    """Keep the worker pool the command line forked ahead of its extraction, for the extraction to take."""
    _process.workers = pool


def take_workers() -> object:
    """The worker pool forked ahead, if any and not yet taken (it is taken once)."""
    pool, _process.workers = _process.workers, None
    return pool


@contextlib.contextmanager
def handing(state: object) -> Iterator[None]:
    """Hand `state` to the processes forked in the block: they inherit it as it is, nothing is pickled."""
    _process.handed = state
    try:
        yield
    finally:
        _process.handed = None


def handed() -> object:
    """What the process that forked this one handed it (see handing), or None."""
    return _process.handed


@contextlib.contextmanager
def quick_switching() -> Iterator[None]:
    """Let threads take the GIL from each other every half millisecond during the block, in a
    command-line process (elsewhere: nothing changes): a pool's feeding and collecting threads need it
    while the main thread scans."""
    if not _process.command_line:
        yield
        return
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def become_worker(parent: int) -> None:
    """Make this (forked) process one of the extractor's workers, of the process `parent`.

    Ctrl-C reaches the whole process group: the main process alone handles it and stops the pool. TERM
    and HUP end a worker at once (the pool's own way to stop one), whatever the main process handles
    them with. A main process killed outright takes its workers with it: else they would wait forever
    for work, holding its stdout open. Workers run without the cyclic collector: scanning makes acyclic
    objects, a pool lives for one extraction, and collecting cost 2% of a whole-package run (peak
    memory, summed over the processes, stays near 225 MiB: scripts/bench.py measures it).
    """
    # a worker is no command line: it keeps nothing and pauses nothing
    _process.command_line, _process.kept, _process.workers = False, [], None
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in STOP_SIGNALS[1:]:
        signal.signal(number, signal.SIG_DFL)
    die_with_parent(parent)
    gc.disable()

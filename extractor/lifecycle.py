# Lifecycle: what the command line does to its own process: standard streams, stop signals, workers' end.
from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from extractor.errors import ExitCode, OutputError

__all__ = [
    "STOP_SIGNALS",
    "Interrupted",
    "die_with_parent",
    "interruption",
    "raise_if_interrupted",
    "signals_as_interrupts",
    "standard_streams",
]

# The signals that end a run as Ctrl-C does: a terminal's (INT), a scheduler's or kill's (TERM), a closed
# terminal's (HUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where it lands (a KeyboardInterrupt, so every cleanup path sees it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: int | None = None  # the first stop signal received while signals_as_interrupts was active
_depth = 0


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is None:
        _received = signum
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Raise Interrupted on SIGINT, SIGTERM and SIGHUP, and remember that one came.

    Remembering is what makes an interrupt a result wherever it lands: a library that catches the
    KeyboardInterrupt and raises its own error instead (pydantic's serializer wraps it in a
    PydanticSerializationError; a git that died of the same Ctrl-C fails) still ends the run as
    interrupted. A signal the process was told to ignore (nohup, a background job) stays ignored.
    Outside the main thread, signals cannot be handled: nothing changes.
    """
    global _received, _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _depth == 0:
        _received = None
    previous = {}
    for number in STOP_SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, _on_signal)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        for number, handler in previous.items():
            signal.signal(number, handler)


def raise_if_interrupted() -> None:
    """Raise Interrupted if a stop signal came, even if what it raised was swallowed: called before
    anything is published, so that nothing is after an interrupt."""
    if _received is not None:
        raise Interrupted(_received)


def interruption(error: BaseException | None) -> int | None:
    """The exit status of a run that ended with `error` (None: it returned) if an interrupt ended it."""
    if _received is not None:
        return 128 + _received
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


def _stream(fd: int, *, loud: bool, like: object) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        io.BufferedWriter(_Descriptor(fd, loud=loud)),  # type: ignore[type-var]
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=getattr(like, "errors", None) or ("strict" if loud else "backslashreplace"),
        line_buffering=os.isatty(fd) or not loud,
    )


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

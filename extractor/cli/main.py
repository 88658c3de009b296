# Main: the command line as a process: the command named by the first word (a module of cli/commands/, found
# by name and imported when used), else the extraction; every failure one line and an exit code.
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from extractor.cli.options import PROG, commands
from extractor.errors import ExitCode, ExtractorError
from extractor.util.lifecycle import command_line_process, interruption, quiet_for_one_run, signals_as_interrupts
from extractor.util.progress import one_line

__all__ = ["main", "run_and_exit"]


def _command(word: str) -> Callable[[Sequence[str]], int]:
    """The `run` of the command `word` names, its module imported now (a run imports only its own command)."""
    import importlib

    return importlib.import_module(f"extractor.cli.commands.{word}").run  # type: ignore[no-any-return]


def _unknown_command(word: str) -> ExtractorError:
    """Say that a first word is no subcommand (the extraction itself takes options only), and which was meant."""
    from extractor.util.suggest import close_to

    guess = close_to(word, commands())
    if guess is not None:
        return ExtractorError(f"unknown command {word!r}; did you mean {guess!r}?")
    return ExtractorError(
        f"unknown command {word!r}: the commands are {', '.join(commands())}; an extraction takes options "
        "only (--sha REV or --release X.Y.Z; see --help)"
    )


def run_and_exit() -> NoReturn:
    """The command line as a process: run, wait for background cache writes, flush, and leave at once
    (lifecycle.command_line_process: the process-wide tricks are switched on there, and only there)."""
    with command_line_process():
        try:
            code = main()
        except SystemExit as exit:  # argparse after --help, --version or a usage error: stdout is flushed below
            code = exit.code if isinstance(exit.code, int) else ExitCode.OK if exit.code is None else ExitCode.TROUBLE
        try:
            _finish_writes()
            sys.stdout.flush()
        except BaseException as error:  # the catalog is written; only the cache's last writes are given up
            code = _failed(error)
            # A cache write under way still ends (after a stop signal it publishes nothing) rather than be
            # cut off by the exit, which would leave its temporary file behind.
            with contextlib.suppress(BaseException):
                _finish_writes()
        raise SystemExit(_swallowed(code))


def _finish_writes() -> None:
    if "extractor.pipeline.cache" in sys.modules:
        sys.modules["extractor.pipeline.cache"].wait_for_writes()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the extractor's command line and return its exit code."""
    # pydantic looks for plugins among every installed distribution at import: none are used here.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        with signals_as_interrupts(), quiet_for_one_run():
            if not arguments:  # (nothing asked: what may be asked, rather than a missing --sha)
                raise ExtractorError(
                    f"nothing to do: name a command ({', '.join(commands())}) or extract a revision "
                    "(--sha REV or --release X.Y.Z); see --help"
                )
            if arguments[0] in commands():
                code = _command(arguments[0])(arguments[1:])
            elif not arguments[0].startswith("-"):
                raise _unknown_command(arguments[0])
            else:
                from extractor.cli import extract

                code = extract.run(arguments)
            return _swallowed(code)
    except SystemExit:  # argparse: --help, or a usage error it has printed
        raise
    except BaseException as error:
        return _failed(error)


def _swallowed(code: int) -> int:
    """The exit status of a run that returned `code`: an interrupt a library swallowed still ends it as
    interrupted."""
    interrupted = interruption(None)
    if interrupted is None or interrupted == code:
        return code
    print(f"{PROG}: interrupted", file=sys.stderr)
    return interrupted


def _os_error(error: OSError) -> str:
    """An operating system's refusal of a path, in words, and where the path is the user cache, what to do."""
    from extractor.repo.housekeeping import cache_dir

    path = Path(os.fsdecode(error.filename))
    said = f"cannot use {path}: {error.strerror or error}"
    with contextlib.suppress(OSError, ValueError):
        cache = cache_dir()
        if path.is_relative_to(cache) or cache.is_relative_to(path):
            said += f" (the user cache directory is {cache}: make it a writable folder, or set XDG_CACHE_HOME)"
    return said


def _failed(error: BaseException) -> int:
    """Report how a run failed in one line on stderr and return its exit status.

    An interrupt is a result wherever it lands, whatever exception it arrived as; a reader of stdout
    that went away ends the run quietly, as Unix tools do.
    """
    interrupted = interruption(error)
    if interrupted is not None:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return interrupted
    if isinstance(error, BrokenPipeError):
        return ExitCode.BROKEN_PIPE
    if isinstance(error, ExtractorError):
        print(f"{PROG}: error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.TROUBLE
    if not isinstance(error, Exception):
        raise error
    if os.environ.get("EXTRACTOR_DEBUG"):  # printed here: the process leaves at once after (os._exit)
        import traceback

        traceback.print_exception(error, file=sys.stderr)
        return ExitCode.TROUBLE
    if isinstance(error, OSError) and error.filename is not None:  # the machine's, not a bug: a path it refused
        print(f"{PROG}: error: {one_line(_os_error(error))}", file=sys.stderr)
        return ExitCode.TROUBLE
    # A bug, not bad input: still one line, with a way to see more.
    print(
        f"{PROG}: error: unexpected {type(error).__name__}: {one_line(str(error))} "
        "(a bug: please report it; EXTRACTOR_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    return ExitCode.TROUBLE

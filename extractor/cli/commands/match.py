# extractor match [TEXT ...]: the records that explain rendered errors, or every line of a log on stdin.
from __future__ import annotations

import argparse
import io
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, AnyStr, BinaryIO

from extractor.errors import ExitCode, ExtractorError, ScopeError
from extractor.util import lifecycle
from extractor.util.progress import shown

if TYPE_CHECKING:
    from extractor.catalog.spec import CatalogsSpec

from extractor.cli.options import (
    PACKAGE,
    PROG,
    Parser,
    add_catalogs,
    add_history,
    catalogs_of,
    lineage_note,
    lineages_of,
    parse_arguments,
    pasted,
    step_log,
)


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} match",
        description="Find the catalog records that explain rendered errors, with the values they show. Exit "
        "status (grep's): a log on stdin: 0 at least one line matched a record, 1 none did; TEXT arguments: 0 "
        "every one matched, 1 some did not; 2 trouble either way. Weak (catch-all) answers do not count. An "
        "error is looked for in the whole package and every class unless --path or --exception narrows it; each "
        "answer says which catalogs and scope it comes from.",
    )
    parser.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="rendered error messages; with none or '-', read a log from stdin, one input per line",
    )
    add_catalogs(parser, whole_package=True)
    parser.add_argument("--format", choices=["json", "text"], default="json", help="output format (default: json)")
    add_history(parser)
    return parser


def _stdin_lines() -> Iterator[str]:
    """Read stdin line by line as it comes (bytes that are not UTF-8 become U+FFFD); UTF-16 behind its byte
    order mark (what Windows PowerShell's `>` writes) is read as such."""
    import codecs

    from extractor.query.match.matcher import MAX_LINE

    if lifecycle.started_closed(0):
        raise ExtractorError("standard input is closed: pipe a log into match, or give TEXT arguments")
    # The first two bytes, however the pipe hands them over (one at a time, say), then the rest after them.
    head = sys.stdin.buffer.read(2)
    stream = io.BufferedReader(_Prefixed(head, sys.stdin.buffer))
    if head in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        text = io.TextIOWrapper(stream, encoding="utf-16", errors="replace", newline="")
        yield from _bounded(text.readline, MAX_LINE, ("\n", "\r"))  # (newline="": a line may end in \r alone)
        return
    for raw in _bounded(stream.readline, 4 * MAX_LINE, (b"\n",)):  # (bytes: UTF-8 takes up to 4 a character)
        yield raw.decode("utf-8", "replace")


def _bounded(readline: Callable[[int], AnyStr], limit: int, ends: tuple[AnyStr, ...]) -> Iterator[AnyStr]:
    """The lines `readline` gives, each cut to its first and last `limit` characters (or bytes), all that
    match reads of a line (the last kept with its line break, which match strips): a line with no end
    (`< /dev/zero`) costs bounded memory, not all there is. `ends` are what `readline` ends a line with."""
    while line := readline(limit):
        if len(line) == limit and not line.endswith(ends):
            tail = line[:0]
            while more := readline(limit):
                tail = (tail + more)[-(limit + 2) :]
                if more.endswith(ends):
                    break
            line += tail
        yield line


class _Prefixed(io.RawIOBase):
    """A stream's bytes with some read from it already put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            taken, self._head = self._head[: len(buffer)], self._head[len(buffer) :]
        else:
            taken = self._rest.read1(len(buffer)) if hasattr(self._rest, "read1") else self._rest.read(len(buffer))
        buffer[: len(taken)] = taken
        return len(taken)


# The options that choose which catalogs are read: repeated in the explain command a text answer ends with.
_CATALOG_OPTIONS = ("repo", "context", "config_from", "flags_from", "repo_name")


def _explain_argv(args: argparse.Namespace, specs: Sequence[CatalogsSpec]) -> list[str]:
    """The command line that explains a record this match found (but its slug): the same catalogs, read in
    the same scope; the whole package and every class where the user narrowed neither, as match did, unless
    every catalog is one on disk (read as written: a nightly root's latest in the scope given, as match's)."""
    from extractor.catalog.spec import OnDisk

    argv = [PROG, "explain"]
    for text in args.catalog:
        argv += ["--catalog", text]
    extracted = not all(isinstance(spec, OnDisk) for spec in specs)
    for option, given, default in (("--path", args.path, PACKAGE), ("--exception", args.exception, "*")):
        for value in given or ([default] if extracted else []):
            argv += [option, value]
    defaults = parser()
    for dest in _CATALOG_OPTIONS:
        value = getattr(args, dest)
        if value != defaults.get_default(dest):
            option = "--" + dest.replace("_", "-")
            for each in value if isinstance(value, list) else [value]:
                argv += [option, str(each)]
    return argv


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.query.match.answer import log_summary
    from extractor.query.match.index import match_index
    from extractor.query.match.matcher import match_lines

    progress = step_log("match", args)  # (nothing under --quiet)
    if "-" in args.text and len(args.text) > 1:
        parser().error("'-' reads the log on stdin: give it alone, or give only TEXT arguments")
    # A paste is looked for in the whole package, every class, unless the user narrows the scope.
    options, specs = catalogs_of(args, whole_package=True)
    try:
        index = match_index(specs, repo=args.repo, options=options, progress=progress)
    except ScopeError as error:
        if args.path is not None:
            raise
        hint = f"match looks in the whole {PACKAGE} package unless --path names where to look"
        raise ScopeError(f"{error}; {hint}") from None
    lineages = lineages_of(args, options)
    notes = None if lineages is None else partial(lineage_note, lineages)
    log = not args.text or args.text == ["-"]
    read = 0

    def counted(lines: Iterable[str]) -> Iterator[str]:
        nonlocal read
        for line in lines:
            read += 1
            yield line

    inputs: Iterable[str] = counted(_stdin_lines()) if log else map(pasted, args.text)
    # A log as text shows the lines answered, then one line for all (an unanswered line is only noise there).
    quiet_misses = log and args.format == "text"
    out = sys.stdout
    seen = matched = weakly = 0
    source = index.provenance
    follow = _explain_argv(args, specs) if args.format == "text" and not log else []
    for result in match_lines(index.matcher, inputs, log=log):
        seen += 1
        matched += bool(result.matches)
        weakly += bool(not result.matches and result.weak)
        if quiet_misses and not result.answered:
            continue
        page = result.render(format=args.format, notes=notes, source=source, explain=follow)
        if follow and result.matches:
            page += _fixes(specs, result.matches[0].site.slug, result.matches[0].values, args, options)
        out.write(page if args.format == "json" else shown(page))
        if log:
            out.flush()  # answer as the log is read
    if quiet_misses:
        out.write(log_summary(read, matched, weakly))
    out.flush()
    if log:
        return ExitCode.OK if matched else ExitCode.NOT_FOUND
    return ExitCode.OK if matched == seen else ExitCode.NOT_FOUND


def _fixes(
    specs: Sequence[CatalogsSpec], slug: str, values: dict[str, str], args: argparse.Namespace, options: Any
) -> str:
    """The fixes of the user's own `vllm serve` line for the values the paste showed, derived from the record's
    reproduction and not run here (`explain` runs them): lines of text, or nothing."""
    from extractor.query.explain import NoRecord, explain_in
    from extractor.reproduce.user_fix import user_fixes

    if not values:
        return ""
    try:
        found = explain_in(specs, slug, repo=args.repo, options=options)
    except (NoRecord, ExtractorError):
        return ""
    fixes = user_fixes(found.line, values)
    if not fixes:
        return ""
    lines = ["  your fix (derived from the check's condition, not run; explain runs it):"]
    lines += [f"    {fix.change}:  {shlex.join(['vllm', 'serve', './model', *fix.after.argv])}" for fix in fixes]
    return "\n".join(lines) + "\n"

# CLI: argument parsing for every subcommand; turns ExtractorError into one line and an exit code.
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, AnyStr, BinaryIO, NamedTuple, NoReturn

from extractor._version import __version__
from extractor.errors import ExitCode, ExtractorError, OutputError
from extractor.util import lifecycle
from extractor.util.lifecycle import command_line_process, interruption, signals_as_interrupts
from extractor.util.progress import note, one_line, quiet_for_one_run, set_quiet, shown, warn

if TYPE_CHECKING:
    from extractor.model.records import Lineage
    from extractor.pipeline.options import ExtractOptions
    from extractor.query.history.revisions import Revision
    from extractor.query.match import MatchResult
    from extractor.repo.git import Commit

__all__ = ["main"]

PROG = "extractor"
DEFAULT_REPO = "https://github.com/vllm-project/vllm"
_CLASS_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")  # a dotted Python identifier


class _Parser(argparse.ArgumentParser):
    """A command's parser whose usage errors are one line, as every other bad input's: `extractor: error:
    COMMAND: what was wrong (see --help)`, exit 2 (argparse prints the whole usage block first); an option
    that takes one value refuses a second (see _Once)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (None, "store"):  # shared with the parser's argument groups
            self.register("action", name, _Once)

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"{PROG}: error: {one_line(where + message)} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, refusing an empty value (`--output ''`): a path, revision or name it never is, and taken
        for the default it would write or read somewhere the user did not say. A pasted TEXT may be empty."""
        parsed, rest = super().parse_known_args(args, namespace)
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            values = value if isinstance(value, list) else [value]
            empty = [v for v in values if isinstance(v, str) and not v.strip() and v != action.const]
            if action.dest not in _MAY_BE_EMPTY and empty:  # (an option's own const, `--site` alone, aside)
                self.error(f"{'/'.join(action.option_strings) or action.metavar or action.dest}: an empty value")
        return parsed, rest


_MAY_BE_EMPTY = frozenset({"text", "grep", "path"})  # a pasted message, a word to look for, the root


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse a subcommand's arguments; --quiet silences progress and notes for the whole run."""
    args = parser.parse_args(argv)
    set_quiet(args.quiet)
    return args


def _add_scope(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scope")
    group.add_argument(
        "--path",
        action="append",
        metavar="PREFIX",
        help="path prefix in scope, repeatable (default: vllm/config)",
    )
    group.add_argument(
        "--exception",
        action="append",
        metavar="NAME",
        help="raised class name in scope, repeatable; '*' means every class (default: ValueError)",
    )
    group.add_argument(
        "--context",
        type=_context,
        default=18,
        metavar="N",
        help="lines of source kept each side of the raise (default: 18)",
    )
    group.add_argument(
        "--config-from",
        action="append",
        metavar="PREFIX",
        help="where config classes are read for the fields records read, repeatable (default: vllm/config)",
    )
    group.add_argument(
        "--flags-from",
        default="vllm/engine/arg_utils.py",
        metavar="PATH",
        help="the file that defines the command-line flags (default: vllm/engine/arg_utils.py)",
    )
    group.add_argument(
        "--repo-name",
        metavar="OWNER/NAME",
        help="the repository name written in records (default: from a GitHub remote URL, else vllm-project/vllm)",
    )


def _add_run(parser: argparse.ArgumentParser, *, extracts: bool = True) -> None:
    """Add the options of how a run goes, which never change what it outputs: --jobs, --no-cache, --quiet."""
    group = parser.add_argument_group("run")
    if extracts:
        group.add_argument(
            "--jobs",
            type=_positive,
            metavar="N",
            help="processes that parse files, this one included (default and most: one per core)",
        )
        group.add_argument(
            "--no-cache",
            action="store_true",
            help="neither read nor write the caches of scans and catalogs (in the user cache directory)",
        )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print nothing on stderr but errors: no progress, notes, warnings or summary",
    )


def _add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        default=DEFAULT_REPO,
        metavar="URL_OR_PATH",
        help="repository to read: a URL (cloned once into the user cache) or a local work tree or bare "
        f"repository, read in place (default: {DEFAULT_REPO})",
    )


class _Once(argparse.Action):
    """An option that takes one value: given twice, a usage error rather than the last one kept silently.
    Every such option of every command is one (`_Parser` registers it as the default action)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        given: set[str] = vars(namespace).setdefault("_given", set())
        if self.dest in given:
            parser.error(f"{option} takes one value, given twice ({getattr(namespace, self.dest)}, {values})")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def _add_catalog(parser: argparse.ArgumentParser) -> None:
    """Add --catalog, and the options for when it names a revision to extract on the fly."""
    parser.add_argument(
        "--catalog",
        required=True,
        action=_Once,
        metavar="DIR_OR_FILE",
        help="a catalog directory or records.jsonl, release:X.Y.Z, or a revision of --repo (one catalog)",
    )
    _add_repo(parser)
    _add_scope(parser)
    _add_run(parser)


def _at_least(minimum: int, text: str) -> int:
    # ASCII digits alone: int() takes other scripts' digits (`١٢`), a sign, spaces and underscores too.
    digits = text.removeprefix("-")
    try:
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(text)
        value = int(text)
    except ValueError:  # (int() also refuses more than 4,300 digits)
        raise argparse.ArgumentTypeError(f"expected a whole number, got {one_line(repr(text), limit=80)}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, got {value}")
    return value


def _non_negative(text: str) -> int:
    return _at_least(0, text)


def _positive(text: str) -> int:
    return _at_least(1, text)


_MAX_CONTEXT = 10**9  # more lines than any file has: the whole file (and a number JSON and SQLite can hold)


def _context(text: str) -> int:
    value = _non_negative(text)
    if value > _MAX_CONTEXT:
        raise argparse.ArgumentTypeError(f"expected at most {_MAX_CONTEXT} lines (a whole file), got {text}")
    return value


def _options(args: argparse.Namespace) -> ExtractOptions:
    from extractor.pipeline.extract import analyzed_at
    from extractor.pipeline.options import ExtractOptions, scope_path
    from extractor.pipeline.write import is_repo_name

    if args.repo_name is not None and not is_repo_name(args.repo_name):
        raise ExtractorError(
            f"--repo-name must look like OWNER/NAME (letters, digits, '-', '_', '.'; neither part '.' or '..'), "
            f"not {args.repo_name!r}"
        )
    for option, value in _repository_paths(args):
        if value != _pasted(value):  # a lone surrogate: bytes Python could not read as UTF-8
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise ExtractorError(
                f"{option} {shown} is not UTF-8 (shown with \\x escapes): a file whose name is not UTF-8 is a "
                "named skip, never a record; name a folder above it"
            )
        if (normal := scope_path(value)) == ".." or normal.startswith("../"):
            raise ExtractorError(f"{option} {value} leads out of the repository: name a path inside it, from its root")
    analyzed_at()  # SOURCE_DATE_EPOCH, checked before any work rather than when the first record is stamped
    for name in args.exception or ():
        if name != "*" and not _CLASS_NAME.fullmatch(name):
            bare = name.strip("'\" ")
            hint = f"; did you mean {bare}? (its quotes reached the command)" if bare.strip("'\"") != name else ""
            if bare != name and bare == name.strip():
                hint = f"; did you mean {bare}? (spaces around it)"
            raise ExtractorError(f"--exception {name!r} is not a class name, nor '*' for every class{hint}")
    exceptions = []
    for name in args.exception or ("ValueError",):
        bare = name.rpartition(".")[2]  # `errors.ConfigError`: a raise is matched by its class's name
        if bare != name:
            warn(f"--exception {name} takes the raises of every class named {bare}")
        exceptions.append(bare)
    return ExtractOptions(
        paths=tuple(args.path or ("vllm/config",)),
        exceptions=tuple(dict.fromkeys(exceptions)),
        context=args.context,
        repo_name=args.repo_name,
        jobs=args.jobs,
        cache=not args.no_cache,
        config_from=tuple(args.config_from or ("vllm/config",)),
        flags_from=args.flags_from.strip("/"),
    )


def _latest_of(spec: str, options: ExtractOptions) -> str:
    """A nightly root (a folder with index.json and no records.jsonl) stands for its latest catalog, in the
    folder of the scope given (else the only one of its SHA), as for `site`; anything else as given."""
    from extractor.catalog.published import is_root, latest_catalog

    return str(latest_catalog(Path(spec), options.scope)) if is_root(Path(spec)) else spec


def _catalogs(args: argparse.Namespace) -> tuple[ExtractOptions, list[str]]:
    """The options and catalogs of a command reading several (`--catalog`, repeatable): over a range of
    releases (`release:A..B`, `release:all`) a `--path` follows a module that becomes a package
    (vllm/config.py, then vllm/config/), as history does, since releases on both sides of the change are
    read alike; catalogs named one by one are read in the scope given (a folder written before is read as
    it is). A nightly root stands for its latest catalog."""
    from extractor.query.history.revisions import followed

    options = _options(args)
    if any(spec.startswith("release:") and (".." in spec or spec == "release:all") for spec in args.catalog):
        options = followed(options)
    return options, [_latest_of(spec, options) for spec in args.catalog]


def _folder(output: str | None, command: str) -> Path | None:
    """The folder a command that writes several files writes into: `-` (standard output) is not one."""
    if output == "-":
        raise ExtractorError(f"{command} writes a folder of files: --output - (standard output) cannot hold them")
    if not output:
        return None
    from extractor.pipeline.write import check_folder

    check_folder(Path(output))
    return Path(output)


def _repository_paths(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """The paths inside the repository the options name (they are recorded in the manifest's scope)."""
    for option, values in (("--path", args.path), ("--config-from", args.config_from)):
        for value in values or ():
            yield option, value
    yield "--flags-from", args.flags_from


def _extract_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Extract the raise sites of a repository at a pinned revision into a schema-v2 catalog. "
        "Subcommands: diff, match, explain, list, nightly, cache, site, history (see `extractor SUBCOMMAND --help`).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_repo(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--sha", metavar="REV", help="revision: short or full SHA, tag or branch")
    which.add_argument(
        "--release",
        metavar="X.Y.Z",
        help="a vLLM release, read from its sdist on the package index pip uses (no GitHub needed); records "
        "point at the commit recorded in its vllm/_version.py",
    )
    _add_scope(parser)
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="catalog root; the run writes DIR/FOLDER/records.jsonl and manifest.json, FOLDER being the full "
        "SHA (release-X.Y.Z for --release), then -PATHS-CLASSES for a scope other than the default; '-' writes "
        "the JSONL to stdout (default: output/<owner>/<name>)",
    )
    _add_run(parser)
    return parser


def _run_extract(argv: Sequence[str]) -> int:
    args = _parse(_extract_parser(), argv)
    options = _options(args)
    commit, pinned = _resolve_starting_workers(args.repo, args.sha, args.release, options)
    from extractor.pipeline.extract import extract_commit
    from extractor.pipeline.write import default_root, folder_name, write_catalog

    catalog = extract_commit(commit, options=options, pinned_sha=pinned)
    for warning in catalog.warnings:
        warn(warning)
    if args.output == "-":
        sys.stdout.buffer.writelines(catalog.pieces)
        sys.stdout.flush()
        return ExitCode.OK
    manifest = catalog.manifest_data  # (as data: the models, and pydantic, are not needed to write it)
    root = Path(args.output) if args.output else default_root(manifest["repo"])
    folder = folder_name(sha=manifest["sha"], revision=manifest["revision"], scope=manifest["scope"])
    directory = write_catalog(catalog.pieces, manifest, root / folder)
    if not args.quiet:
        counts = manifest["counts"]
        note(
            f"{counts['records']} records from {counts['filesParsed']} of {counts['filesInScope']} files "
            f"at {manifest['sha'][:12]} -> {directory}",
            no_bar=True,
        )
    return ExitCode.OK


def _resolve_starting_workers(
    repo: str, revision: str | None, release: str | None, options: ExtractOptions
) -> tuple[Commit, str | None]:
    """Resolve the revision (or the release, with the SHA its records point at), forking the extraction's
    workers first thing, before the pipeline's modules are imported: they import the parser meanwhile, on
    the other cores. None are forked if one process scans (`--jobs 1`, or one core), or if the catalog
    is in the cache already (nothing to scan: they would only take a core from this process); with no
    catalog in the cache at all, they are forked before the revision is even resolved."""
    from extractor.pipeline.workers import processes, start_ahead
    from extractor.repo.git import cache_dir, resolve

    workers = processes(options.jobs) - 1
    cache = None
    if options.cache:
        from extractor.pipeline.cache import ScanCache

        cache = ScanCache(cache_dir(), exceptions=options.exceptions, context=options.context)
    if workers > 0 and (cache is None or not cache.holds_catalogs()):
        start_ahead(workers)
    pinned = None
    if release is not None:
        from extractor.catalog.load import release_commit

        commit, pinned = release_commit(release)
    else:
        commit = resolve(repo, revision or "")
    if (
        workers > 0
        and cache is not None
        and not cache.holds_catalog(cache.catalog_key(options.catalog_parts(commit, pinned)))
    ):
        start_ahead(workers)  # (once: if they were forked above, nothing happens)
    return commit, pinned


def _diff_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} diff",
        description="Compare the catalogs of two revisions, releases or catalog files. Exit status: 0 no "
        "differences, 1 differences, 2 trouble.",
    )
    parser.add_argument(
        "old",
        metavar="OLD",
        help="a revision of --repo, a catalog directory or records.jsonl, or release:X.Y.Z",
    )
    parser.add_argument("new", metavar="NEW", help="the same kinds as OLD")
    _add_repo(parser)
    _add_scope(parser)
    _add_run(parser)
    parser.add_argument("--format", choices=["json", "markdown"], default="json", help="output format (default: json)")
    parser.add_argument("--output", metavar="FILE", help="write the diff to FILE instead of stdout")
    parser.add_argument(
        "--catalog-root",
        metavar="DIR",
        help="where catalogs written earlier are reused from (default: output/<owner>/<name>)",
    )
    return parser


def _run_diff(argv: Sequence[str]) -> int:
    args = _parse(_diff_parser(), argv)
    from extractor.catalog.load import LoadedCatalog, open_catalog
    from extractor.errors import ScopeError
    from extractor.pipeline.write import atomic_write, page_bytes
    from extractor.query.diff import diff_catalogs, render_json, render_markdown
    from extractor.query.history.revisions import followed

    root = Path(args.catalog_root) if args.catalog_root else None
    if root is not None and root.exists() and not root.is_dir():
        raise ExtractorError(f"--catalog-root {root} is not a folder (catalogs written earlier are looked up in it)")

    def both(options: ExtractOptions) -> list[LoadedCatalog]:
        return [open_catalog(_latest_of(spec, options), repo=args.repo, options=options, root=root) for spec in specs]

    specs, options = (args.old, args.new), _options(args)
    try:
        old, new = both(options)
    except ScopeError:
        # A side where the scope's package was still a module (vllm/config.py until 0.10.1): both sides
        # follow it, as a history does.
        if followed(options) == options:
            raise
        old, new = both(followed(options))
    scopes = [catalog.manifest.scope for catalog in (old, new) if catalog.manifest is not None]
    if len(scopes) == 2 and scopes[0] != scopes[1]:
        covered = [f"{', '.join(s.paths)} ({', '.join(s.exceptions)}, context {s.context})" for s in scopes]
        warn(
            f"the catalogs cover different scopes ({covered[0]}; {covered[1]}): what only one covers shows as added "
            "or removed"
        )
    if args.output and args.output != "-":
        from extractor.pipeline.write import MANIFEST, RECORDS

        target = Path(args.output).resolve()
        for spec in (args.old, args.new):
            folder = Path(spec).resolve() if Path(spec).is_dir() else Path(spec).resolve().parent
            if target in (Path(spec).resolve(), folder / RECORDS, folder / MANIFEST):
                raise ExtractorError(f"--output {args.output} is a file of the catalog {spec}: not overwriting it")
    diff = diff_catalogs(old, new)
    data = render_json(diff) if args.format == "json" else page_bytes(render_markdown(diff))
    if args.output and args.output != "-":
        atomic_write(Path(args.output), data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return ExitCode.DIFFERENCES if diff.differs else ExitCode.OK


def _match_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} match",
        description="Find the catalog records that explain rendered errors, with the values they show. Exit "
        "status (grep's): a log on stdin: 0 at least one line matched a record, 1 none did; TEXT arguments: 0 "
        "every one matched, 1 some did not; 2 trouble either way. Weak (catch-all) answers do not count.",
    )
    parser.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="rendered error messages; with none or '-', read a log from stdin, one input per line",
    )
    _add_catalogs(parser)
    parser.add_argument("--format", choices=["json", "text"], default="json", help="output format (default: json)")
    _add_history(parser)
    return parser


def _add_catalogs(parser: argparse.ArgumentParser) -> None:
    """Add a repeatable --catalog (release ranges allowed), and the options for revisions extracted on the fly."""
    parser.add_argument(
        "--catalog",
        action="append",
        required=True,
        metavar="CATALOG",
        help="a catalog directory or records.jsonl, release:X.Y.Z, release:A..B (every release on the package "
        "index in that range, inclusive), release:all, or a revision of --repo; repeatable",
    )
    _add_repo(parser)
    _add_scope(parser)
    _add_run(parser)


def _stdin_lines() -> Iterator[str]:
    """Read stdin line by line as it comes (bytes that are not UTF-8 become U+FFFD); UTF-16 behind its byte
    order mark (what Windows PowerShell's `>` writes) is read as such."""
    import codecs

    from extractor.query.match import MAX_LINE

    if 0 in lifecycle.closed:
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


def _pasted(text: str) -> str:
    """A TEXT argument as stdin would read it: bytes that are not UTF-8 (which Python hands over as lone
    surrogates) become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _run_match(argv: Sequence[str]) -> int:
    args = _parse(_match_parser(), argv)
    import orjson

    from extractor.query.match import match_lines
    from extractor.query.matchindex import match_index

    def progress(line: str) -> None:
        print(f"{PROG} match: {one_line(line)}", file=sys.stderr, flush=True)

    if "-" in args.text and len(args.text) > 1:
        _match_parser().error("'-' reads the log on stdin: give it alone, or give only TEXT arguments")
    options, specs = _catalogs(args)
    index = match_index(specs, repo=args.repo, options=options, progress=progress)
    lineages = _lineages_of(args)
    log = not args.text or args.text == ["-"]
    inputs: Iterable[str] = _stdin_lines() if log else map(_pasted, args.text)
    out = sys.stdout
    seen = matched = 0
    for result in match_lines(index.matcher, inputs, log=log):
        seen += 1
        matched += bool(result.matches)
        if args.format == "json":
            document = result.to_json()
            if lineages is not None:
                document["matches"] = [{**m, "history": _lineage_note(lineages, m["id"])} for m in document["matches"]]
            out.write(orjson.dumps(document).decode() + "\n")
        else:
            out.write(shown(_match_text(result, lineages)))
        if log:
            out.flush()  # answer as the log is read
    out.flush()
    if log:
        return ExitCode.OK if matched else ExitCode.NOT_FOUND
    return ExitCode.OK if matched == seen else ExitCode.NOT_FOUND


def _match_text(result: MatchResult, lineages: _Followed | None) -> str:
    lines = [result.input]
    if not result.matches:
        lines.append("  no matching record" + (" (only weak ones, below)" if result.weak else ""))
    if result.python is not None:
        lines.append(f"  {result.python_note}")
    for match in (*result.matches, *result.weak):
        site = match.site
        weak = "" if match in result.matches else "weak "
        lines.append(f"  -> {site.filePath}:{site.lineNumber}  {site.slug}  [{site.id}]  ({weak}{match.how})")
        # (an expression written over several lines shown on one, its spaces squeezed)
        values = ", ".join(f"{' '.join(k.split())} = {v}" for k, v in match.values.items())
        if values:
            lines.append(f"     {values}")
        releases = match.releases()
        if len(releases) > 1:
            lines.append(f"     in {len(releases)} releases: {releases[0]} .. {releases[-1]}")
        lines.append(f"     {site.githubUrl}")
        if (note := _lineage_note(lineages, site.id)) is not None:
            lines.append(f"     history: {note}")
    return "\n".join(lines) + "\n"


# `--site` alone: the site beside the catalogs, in DIR/site (a value no argument can be: `--site ''` is refused).
_SITE_BESIDE = "\0beside"


def _nightly_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} nightly",
        description="Publish the catalog of a branch head into DIR/<sha>/ with a diff against the last "
        "published one, then DIR/index.json. Safe to re-run, to kill and to start twice.",
    )
    _add_repo(parser)
    parser.add_argument("--branch", default="main", help="the branch to follow (default: main)")
    parser.add_argument("--output", metavar="DIR", help="where catalogs are published (default: output/<owner>/<name>)")
    parser.add_argument(
        "--keep", type=_positive, metavar="N", help="keep only the newest N catalogs on disk and in the index"
    )
    _add_scope(parser)
    parser.add_argument(
        "--analysis",
        metavar="FILE",
        help="JSONL of analysis by id (records or {id, ...fields}) to merge into the published catalog's "
        "analysis.jsonl",
    )
    parser.add_argument(
        "--site",
        nargs="?",
        const=_SITE_BESIDE,
        metavar="DIR",
        help="rebuild the static site of the latest catalog after publishing, built aside then switched to "
        "at once (DIR is a symlink to it; default: DIR/site of --output)",
    )
    _add_run(parser)
    return parser


def _run_nightly(argv: Sequence[str]) -> int:
    args = _parse(_nightly_parser(), argv)
    from extractor.publish.nightly import nightly

    def log(line: str) -> None:
        if not args.quiet:
            print(f"{PROG} nightly: {one_line(line)}", file=sys.stderr, flush=True)

    nightly(
        repo=args.repo,
        branch=args.branch,
        output=_folder(args.output, "nightly"),
        options=_options(args),
        keep=args.keep,
        log=log,
        analysis=Path(args.analysis) if args.analysis else None,
        site=None if args.site is None else Path("" if args.site == _SITE_BESIDE else args.site),  # "": DIR/site
    )
    return ExitCode.OK


def _explain_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} explain",
        description="Explain one record: where it is thrown, when, which fields and flags it reads, and related "
        "errors; with several catalogs, in which releases. Exit status: 0 printed, 1 nothing found, 2 trouble.",
    )
    parser.add_argument(
        "query", metavar="ID|SLUG|TEXT", help="a record id or slug (or a unique prefix of one), or a rendered error"
    )
    _add_catalogs(parser)
    parser.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="text for a terminal, markdown for a page or an issue (with a table of fields), json for tools "
        "(default: text)",
    )
    _add_history(parser)
    return parser


def _run_explain(argv: Sequence[str]) -> int:
    args = _parse(_explain_parser(), argv)
    from extractor.query.explain import explain_in, render

    args.query = _pasted(args.query)
    options, specs = _catalogs(args)
    explanation = explain_in(specs, args.query, repo=args.repo, options=options)
    if explanation is None:
        short = " (an id or slug prefix needs 4 characters or more)" if len(args.query.strip()) < 4 else ""
        print(f"{PROG}: no record matches {one_line(repr(args.query))}{short}", file=sys.stderr)
        return ExitCode.NOT_FOUND
    page = render(explanation, format=args.format)
    note = _lineage_note(_lineages_of(args), explanation.line.record.id)
    if note is not None and args.format == "json":
        import orjson

        page = orjson.dumps({**orjson.loads(page), "history": note}, option=orjson.OPT_INDENT_2).decode() + "\n"
    elif note is not None and args.format == "markdown":
        from extractor.util import markdown

        page += f"\n**History**: {markdown.text(note)}\n"
    elif note is not None:
        page += f"\nHistory: {note}\n"
    sys.stdout.write(page if args.format == "json" else shown(page))
    sys.stdout.flush()
    return ExitCode.OK


def _history_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} history",
        description="Follow every check in scope across revisions, oldest first, with diff's pairing: when it "
        "was introduced, reworded, moved, modified, removed or reintroduced. Writes DIR/history.jsonl (one "
        "lineage a line) and DIR/history.json (the revisions); with --format markdown also history.md and a "
        "chart (history.svg, history.png). Prints history.jsonl or the Markdown. A --path follows a module "
        "that becomes a package: vllm/config names vllm/config/ and vllm/config.py.",
    )
    parser.add_argument(
        "revisions",
        nargs="*",
        metavar="REVISIONS",
        help="release:all, release:A..B (inclusive) or release:X.Y.Z; or, of --repo, A..B (A, then the "
        "first-parent commits after it up to B), a tag glob such as 'v*' (sorted by version), or a revision",
    )
    parser.add_argument("--revisions", dest="more", action="append", metavar="SPEC", help="as REVISIONS, repeatable")
    _add_repo(parser)
    _add_scope(parser)
    parser.add_argument("--format", choices=["json", "markdown"], default="json", help="output format (default: json)")
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="where the files go (default: output/<owner>/<name>/history, then -PATHS-CLASSES for a scope "
        "other than the default)",
    )
    _add_run(parser)
    return parser


def _add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        metavar="DIR_FILE_OR_REVISIONS",
        help="say when each record appeared and changed: a history written by `extractor history` (its "
        "directory or history.jsonl), or revisions to follow on the fly (release:A..B, release:all, 'v*', A..B)",
    )


def _warn_if_unordered(revisions: Sequence[Revision]) -> None:
    """Releases listed newest first are followed as listed (oldest first is the rule): say so."""
    from packaging.version import InvalidVersion, Version

    try:
        versions = [Version(r.commit.revision.removeprefix("release:")) for r in revisions]
    except InvalidVersion:  # not all releases: the order given is the user's to know
        return
    later = next((i for i in range(1, len(versions)) if versions[i] < versions[i - 1]), None)
    if later is not None:
        warn(
            "revisions are followed in the order given, oldest first expected: "
            f"{revisions[later - 1].label} comes before {revisions[later].label}"
        )


class _Followed(NamedTuple):
    """The lineages `--history` names, and the first revision they were followed from."""

    lineages: list[Lineage]
    start: str | None


def _lineages_of(args: argparse.Namespace) -> _Followed | None:
    """The lineages `--history` names (read, or followed on the fly in the command's scope), or None."""
    if not args.history:
        return None
    from extractor.catalog.load import looks_like_path, present
    from extractor.query.history.lineage import build_history
    from extractor.query.history.revisions import followed, list_revisions
    from extractor.query.history.store import read_written
    from extractor.repo.git import is_url, shown_repo

    path = Path(args.history)
    if present(path):  # (a symlink that leads nowhere is an error, not revisions to follow)
        lineages, manifest = read_written(path)
        return _Followed(lineages, manifest.revisions[0].revision if manifest and manifest.revisions else None)
    spec = args.history
    if looks_like_path(spec) and is_url(args.repo):  # a mistyped path: never a reason to clone a repository
        raise ExtractorError(f"no history at {spec}: the path does not exist")
    options = followed(_options(args))
    try:
        revisions = list_revisions([spec], repo=args.repo)
    except ExtractorError as error:
        raise ExtractorError(f"no history at {spec}, nor revisions of {shown_repo(args.repo)}: {error}") from None
    history = build_history(revisions, options=options)
    return _Followed(history.lineages, history.revisions[0].revision if history.revisions else None)


def _lineage_note(followed: _Followed | None, record_id: str) -> str | None:
    """The history sentence of a record, when a history was given and holds it."""
    if followed is None:
        return None
    from extractor.query.history.changelog import lineage_sentence
    from extractor.query.history.lineage import find_lineage

    found = find_lineage(followed.lineages, record_id)
    return lineage_sentence(found, start=followed.start) if found is not None else None


def _run_history(argv: Sequence[str]) -> int:
    args = _parse(_history_parser(), argv)
    from extractor.query.history.lineage import build_history
    from extractor.query.history.revisions import followed, list_revisions
    from extractor.query.history.store import write_history

    specs = [*args.revisions, *(args.more or [])]
    if not specs:
        raise ExtractorError("history needs revisions: release:all, release:A..B, or A..B / 'v*' of --repo")
    options = followed(_options(args))

    def log(line: str) -> None:
        if not args.quiet:
            print(f"{PROG} history: {one_line(line)}", file=sys.stderr, flush=True)

    output = _folder(args.output, "history")
    revisions = list_revisions(specs, repo=args.repo)
    _warn_if_unordered(revisions)
    history = build_history(revisions, options=options, log=log)
    written = write_history(history, folder=output, markdown=args.format == "markdown")
    if 1 not in lifecycle.closed:  # (`>&-`: the files alone, as a run that writes files does)
        try:
            sys.stdout.buffer.write(written.printed)
            sys.stdout.flush()
        except OutputError as error:  # (a full disk, say): the files stand, the copy asked for did not come
            raise OutputError(f"{error}; the history itself is written, in {written.folder}") from None
    log(f"{len(history.threads)} lineages over {len(history.revisions)} revisions -> {written.folder}")
    return ExitCode.OK


def _list_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} list",
        description="List a catalog's records (file:line, class, slug, first words of the message), or count them "
        "by file and class. Exit status: 0 something listed, 1 no record passed the filters, 2 trouble.",
    )
    _add_catalog(parser)
    chosen = parser.add_argument_group("filters (a filter given twice takes either value; --grep takes both)")
    chosen.add_argument(
        "--file", action="append", default=[], metavar="PATH", help="records under a path prefix, or a glob"
    )
    chosen.add_argument("--class", dest="classes", action="append", default=[], metavar="NAME", help="raised class")
    chosen.add_argument("--grep", action="append", default=[], metavar="WORD", help="word in the message (any case)")
    parser.add_argument("--summary", action="store_true", help="count the records by file and by class instead")
    parser.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="an aligned table, a Markdown table, or JSON (a line per record; one document with --summary) "
        "(default: text)",
    )
    return parser


def _run_list(argv: Sequence[str]) -> int:
    args = _parse(_list_parser(), argv)
    from extractor.catalog.load import open_catalog
    from extractor.query.listing import Filters, misses, render_records, render_summary, select

    options = _options(args)
    catalog = open_catalog(_latest_of(args.catalog, options), repo=args.repo, options=options)
    filters = Filters(files=tuple(args.file), classes=tuple(args.classes), words=tuple(args.grep))
    chosen = select(catalog.lines, filters)
    render = render_summary if args.summary else render_records
    if chosen or args.summary:
        listed = render(chosen, format=args.format)
        sys.stdout.write(listed if args.format == "json" else shown(listed))
        sys.stdout.flush()
    if not chosen and not args.quiet:
        given = filters.files or filters.classes or filters.words
        for why in misses(catalog.lines, filters) or [
            "no record passes every filter at once" if given else "the catalog holds no record"
        ]:
            print(f"{PROG}: {one_line(why)}", file=sys.stderr)
    return ExitCode.OK if chosen else ExitCode.NOT_FOUND


def _cache_parser() -> argparse.ArgumentParser:
    from extractor.repo.housekeeping import PARTS

    parser = _Parser(
        prog=f"{PROG} cache",
        description="Say where the user cache directory is and what it holds (info), or empty it (clear). "
        "Every part is rebuilt when needed: scans and catalogs by scanning again, clones, releases and "
        "sdists by fetching them again.",
    )
    parser.add_argument(  # (optional to argparse, which else says PART is required too when both are missing)
        "action", nargs="?", choices=["info", "clear"], help="info: where, how big, how many; clear: remove"
    )
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"{', '.join(PARTS)} (default: all)")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    _add_run(parser, extracts=False)
    return parser


def _run_cache(argv: Sequence[str]) -> int:
    args = _parse(_cache_parser(), argv)
    if args.action is None:
        _cache_parser().error("say what to do: info (where, how big, how many) or clear [PART ...]")
    from extractor.pipeline.write import dumps_document
    from extractor.repo.git import cache_dir
    from extractor.repo.housekeeping import PARTS, clear, usage
    from extractor.util.suggest import close_to

    for name in args.parts:
        if name not in PARTS:
            hint = close_to(name, PARTS)
            raise ExtractorError(
                f"no cache part {name!r}"
                + (f"; did you mean {hint!r}?" if hint else "")
                + f" (parts: {', '.join(PARTS)})"
            )
    root = cache_dir()
    if args.action == "info":
        parts = [part for part in usage(root) if not args.parts or part.name in args.parts]
    else:
        parts = clear(root, args.parts)
    if args.format == "json":
        document = {
            "directory": str(root),
            "bytes": sum(part.bytes for part in parts),
            "parts": [{"name": p.name, "bytes": p.bytes, p.unit: p.items} for p in parts],
        }
        sys.stdout.write(dumps_document(document).decode())
        return ExitCode.OK
    done = "removed " if args.action == "clear" else ""
    total = _size(sum(part.bytes for part in parts))
    shown_root = one_line(str(root), limit=None)  # (text for people: a path's control characters escaped)
    sys.stdout.write(f"{done}{shown_root} ({total})\n" if not done else f"{done}{total} from {shown_root}\n")
    for part in parts:
        sys.stdout.write(f"  {part.name:<9} {_size(part.bytes):>9}  {part.what} ({part.unit}: {part.items})\n")
    return ExitCode.OK


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _site_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} site",
        description="Build a static site of a catalog: an index with search and filters, a page per record and "
        "a page per diff the nightly job published. It works opened from file:// or from any static host.",
    )
    _add_catalog(parser)
    parser.add_argument(
        "--analysis",
        metavar="FILE",
        help="JSONL of records or of {id, ...fields} whose analysis fields are shown on the pages (default: "
        "analysis.jsonl in the catalog directory, when there is one)",
    )
    parser.add_argument("--history", metavar="FILE", help="history.jsonl: each record's lineage, shown on its page")
    parser.add_argument(
        "--output", required=True, metavar="DIR", help="where the site goes; a site built there before is replaced"
    )
    return parser


def _run_site(argv: Sequence[str]) -> int:
    args = _parse(_site_parser(), argv)
    import time

    from extractor.publish.site import build_site, check_output
    from extractor.publish.site_inputs import open_site_inputs
    from extractor.query.listing import counted

    output = _folder(args.output, "site")
    assert output is not None  # (a required option)
    check_output(output)  # before the catalog is read (or extracted): a folder that is no site is refused at once
    started = time.monotonic()
    inputs = open_site_inputs(
        args.catalog,
        repo=args.repo,
        options=_options(args),
        analysis=Path(args.analysis) if args.analysis else None,
        history=Path(args.history) if args.history else None,
    )
    summary = build_site(
        inputs.catalog, output=output, analysis=inputs.analysis, diffs=inputs.diffs, history=inputs.history
    )
    if not args.quiet:
        note(
            f"site of {counted(summary.records, 'record')} and {counted(summary.diffs, 'diff')}, "
            f"{counted(summary.files, 'file')}, "
            f"{summary.bytes / 1e6:.1f} MB -> {args.output} ({time.monotonic() - started:.2f}s)",
            no_bar=True,
        )
    return ExitCode.OK


_SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "diff": _run_diff,
    "match": _run_match,
    "explain": _run_explain,
    "list": _run_list,
    "nightly": _run_nightly,
    "cache": _run_cache,
    "site": _run_site,
    "history": _run_history,
}


def _unknown_command(word: str) -> ExtractorError:
    """Say that a first word is no subcommand (the extraction itself takes options only), and which was meant."""
    from extractor.util.suggest import close_to

    guess = close_to(word, _SUBCOMMANDS)
    if guess is not None:
        return ExtractorError(f"unknown command {word!r}; did you mean {guess!r}?")
    return ExtractorError(
        f"unknown command {word!r}: the commands are {', '.join(_SUBCOMMANDS)}; an extraction takes options "
        "only (--sha REV or --release X.Y.Z; see --help)"
    )


def run() -> NoReturn:
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
    command = _SUBCOMMANDS.get(arguments[0]) if arguments else None
    try:
        with signals_as_interrupts(), quiet_for_one_run():
            if command is not None:
                code = command(arguments[1:])
            elif arguments and not arguments[0].startswith("-"):
                raise _unknown_command(arguments[0])
            else:
                code = _run_extract(arguments)
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
    from extractor.repo.git import cache_dir

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

# Options: what every command's parser shares (one-line usage errors, the scope, the run, --catalog and
# --history options) and what they mean (the extraction's options, the catalogs and lineages named).
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from extractor.errors import ExtractorError
from extractor.util.lifecycle import set_quiet
from extractor.util.progress import one_line, warn

if TYPE_CHECKING:
    from extractor.catalog.spec import CatalogSpec, CatalogsSpec
    from extractor.model.records import Lineage
    from extractor.pipeline.options import ExtractOptions


PROG = "extractor"
DEFAULT_REPO = "https://github.com/vllm-project/vllm"
_CLASS_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")  # a dotted Python identifier
_COMMANDS = Path(__file__).parent / "commands"  # (a listing costs microseconds: no import)


def commands() -> list[str]:
    """The subcommands, by name: every module of cli/commands/ is one (adding a command is adding its module)."""
    return sorted(path.stem for path in _COMMANDS.glob("*.py") if not path.name.startswith("_"))


class Parser(argparse.ArgumentParser):
    """A command's parser whose usage errors are one line, as every other bad input's: `extractor: error:
    COMMAND: what was wrong (see --help)`, exit 2 (argparse prints the whole usage block first); an option
    that takes one value refuses a second (see Once)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (None, "store"):  # shared with the parser's argument groups
            self.register("action", name, Once)

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"{PROG}: error: {one_line(where + message)} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, refusing an empty value (`--output ''`): a path, revision or name it never is, and taken
        for the default it would write or read somewhere the user did not say. A pasted TEXT may be empty."""
        self._refuse_unknown_options(sys.argv[1:] if args is None else args)
        parsed, rest = super().parse_known_args(args, namespace)
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            values = value if isinstance(value, list) else [value]
            empty = [v for v in values if isinstance(v, str) and not v.strip() and v != action.const]
            if action.dest not in _MAY_BE_EMPTY and empty:  # (an option's own const, `--site` alone, aside)
                self.error(f"{'/'.join(action.option_strings) or action.metavar or action.dest}: an empty value")
        return parsed, rest

    def _refuse_unknown_options(self, args: Sequence[str]) -> None:
        """An option this command does not have is said first, with the one meant (`--relase`: did you mean
        `--release`?), before argparse reads it as a value or says a required option is missing."""
        from extractor.util.suggest import close_to

        known = [option for option in self._option_string_actions if option.startswith("--")]
        takes_value = {o for o, action in self._option_string_actions.items() if action.nargs != 0}
        previous = ""
        for word in args:
            if word == "--":
                return
            name = word.partition("=")[0]
            is_value = previous in takes_value and "=" not in previous
            previous = word
            if is_value or not name.startswith("--") or len(name) < 3:
                continue
            if name in known or sum(option.startswith(name) for option in known) == 1:  # (or cut short)
                continue
            guess = close_to(name.removeprefix("--"), [o.removeprefix("--") for o in known] + list(_ELSEWHERE))
            if guess in _ELSEWHERE and f"--{guess}" not in known:
                written = _ELSEWHERE[guess]
                hint = f"; did you mean --catalog {written}?" if "--catalog" in known else f"; name it as {written}"
            else:
                hint = f"; did you mean --{guess}?" if guess else ""
            self.error(f"unrecognized option {name!r}{hint}")


# The extraction's --release and --sha, where a command takes a catalog or revisions instead: written so there.
_ELSEWHERE = {"release": "release:X.Y.Z", "sha": "REV"}
_MAY_BE_EMPTY = frozenset({"text", "grep", "path"})  # a pasted message, a word to look for, the root


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse a subcommand's arguments; --quiet silences progress and notes for the whole run. A local --repo
    is checked now, in every command that takes one: one that is not there is an error even where the
    catalogs named need no repository (releases, folders), never ignored."""
    args = parser.parse_args(argv)
    set_quiet(args.quiet)
    if getattr(args, "repo", DEFAULT_REPO) != DEFAULT_REPO:
        from extractor.repo.git.clone import check_local, is_url

        if not is_url(args.repo):
            check_local(args.repo)
    return args


PACKAGE = "vllm"  # where a pasted error is looked for when the user names no --path (see widened)


def add_scope(parser: argparse.ArgumentParser, *, whole_package: bool = False) -> None:
    """Add the scope options; `whole_package`: a command whose --path and --exception, when not given, are
    the whole package's and every class (see `widened`), as its help says."""
    paths, classes = ("vllm/config", "ValueError")
    if whole_package:
        paths, classes = f"{PACKAGE}, the whole package", "every class"
    group = parser.add_argument_group("scope")
    group.add_argument(
        "--path",
        action="append",
        metavar="PREFIX",
        help=f"path prefix in scope, repeatable (default: {paths})",
    )
    group.add_argument(
        "--exception",
        action="append",
        metavar="NAME",
        help=f"raised class name in scope, repeatable; '*' means every class (default: {classes})",
    )
    group.add_argument(
        "--context",
        type=context_lines,
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


def add_run(parser: argparse.ArgumentParser, *, extracts: bool = True) -> None:
    """Add the options of how a run goes, which never change what it outputs: --jobs, --no-cache, --quiet."""
    group = parser.add_argument_group("run")
    if extracts:
        group.add_argument(
            "--jobs",
            type=positive,
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


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        default=DEFAULT_REPO,
        metavar="URL_OR_PATH",
        help="repository to read: a URL (cloned once into the user cache) or a local work tree or bare "
        f"repository, read in place (default: {DEFAULT_REPO})",
    )


class Once(argparse.Action):
    """An option that takes one value: given twice, a usage error rather than the last one kept silently.
    Every such option of every command is one (`Parser` registers it as the default action)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        given: set[str] = vars(namespace).setdefault("_given", set())
        if self.dest in given:
            parser.error(f"{option} takes one value, given twice ({getattr(namespace, self.dest)}, {values})")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def add_catalog(parser: argparse.ArgumentParser) -> None:
    """Add --catalog, and the options for when it names a revision to extract on the fly."""
    parser.add_argument(
        "--catalog",
        required=True,
        action=Once,
        metavar="DIR_OR_FILE",
        help="a catalog directory or records.jsonl, release:X.Y.Z, or a revision of --repo (one catalog)",
    )
    add_repo(parser)
    add_scope(parser)
    add_run(parser)


def add_catalogs(parser: argparse.ArgumentParser, *, whole_package: bool = False) -> None:
    """Add a repeatable --catalog (release ranges allowed), and the options for revisions extracted on the fly
    (`whole_package`: see `add_scope`)."""
    parser.add_argument(
        "--catalog",
        action="append",
        required=True,
        metavar="CATALOG",
        help="a catalog directory or records.jsonl, release:X.Y.Z, release:A..B (every release on the package "
        "index in that range, inclusive), release:all, or a revision of --repo; repeatable",
    )
    add_repo(parser)
    add_scope(parser, whole_package=whole_package)
    add_run(parser)


def step_log(command: str, args: argparse.Namespace) -> Callable[[str], None]:
    """What a long command says of each step: `extractor COMMAND: ...` on stderr, nothing under --quiet."""

    def log(line: str) -> None:
        if not args.quiet:
            print(f"{PROG} {command}: {one_line(line)}", file=sys.stderr, flush=True)

    return log


def add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        metavar="DIR_FILE_OR_REVISIONS",
        help="say when each record appeared and changed: a history written by `extractor history` (its "
        "directory or history.jsonl), or revisions to follow on the fly (release:A..B, release:all, 'v*', A..B)",
    )


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


def non_negative(text: str) -> int:
    return _at_least(0, text)


def positive(text: str) -> int:
    return _at_least(1, text)


_MAX_CONTEXT = 10**9  # more lines than any file has: the whole file (and a number JSON and SQLite can hold)


def context_lines(text: str) -> int:
    value = non_negative(text)
    if value > _MAX_CONTEXT:
        raise argparse.ArgumentTypeError(f"expected at most {_MAX_CONTEXT} lines (a whole file), got {text}")
    return value


def extract_options(args: argparse.Namespace) -> ExtractOptions:
    from extractor.pipeline.extract import analyzed_at
    from extractor.pipeline.options import ExtractOptions, scope_path
    from extractor.pipeline.write import is_repo_name

    if args.repo_name is not None and not is_repo_name(args.repo_name):
        raise ExtractorError(
            f"--repo-name must look like OWNER/NAME (letters, digits, '-', '_', '.'; neither part '.' or '..'), "
            f"not {args.repo_name!r}"
        )
    for option, value in _repository_paths(args):
        if value != pasted(value):  # a lone surrogate: bytes Python could not read as UTF-8
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


def _repository_paths(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """The paths inside the repository the options name (they are recorded in the manifest's scope)."""
    for option, values in (("--path", args.path), ("--config-from", args.config_from)):
        for value in values or ():
            yield option, value
    yield "--flags-from", args.flags_from


def latest_of(spec: CatalogSpec, options: ExtractOptions) -> CatalogSpec:
    """A nightly root (a folder with index.json and no records.jsonl) stands for its latest catalog, in the
    folder of the scope given (else the only one of its SHA), as for `site`; anything else as given."""
    from extractor.catalog.published import PublishedRoot
    from extractor.catalog.spec import OnDisk

    root = PublishedRoot.at(spec.path, scope=options.scope) if isinstance(spec, OnDisk) else None
    if root is None:
        return spec
    latest = root.latest()
    return OnDisk(str(latest), latest)


def catalogs_of(args: argparse.Namespace, *, whole_package: bool = False) -> tuple[ExtractOptions, list[CatalogsSpec]]:
    """The options and catalogs of a command reading several (`--catalog`, repeatable): over a range of
    releases (`release:A..B`, `release:all`) a `--path` follows a module that becomes a package
    (vllm/config.py, then vllm/config/), as history does, since releases on both sides of the change are
    read alike; catalogs named one by one are read in the scope given (a folder written before is read as
    it is). A nightly root stands for its latest catalog, in the scope given.

    `whole_package` (match's): the options extract the whole package (`--path vllm`) and every class
    (`--exception '*'`) where the user gave no --path or --exception (see `widened`); a nightly root, a
    catalog on disk read as written, stands for its latest catalog in the extraction's default scope when
    neither was given (the one `nightly` publishes by default), as before."""
    from extractor.catalog.spec import ReleaseRange, parse_catalogs
    from extractor.query.history.revisions import followed

    options = extract_options(args)
    specs = [parse_catalogs(text, repo=args.repo) for text in args.catalog]
    published = options  # the scope a nightly root's latest catalog is looked for in
    if whole_package:
        options = widened(options, args)
        published = options if args.path is not None or args.exception is not None else published
    if any(isinstance(spec, ReleaseRange) for spec in specs):
        options, published = followed(options), followed(published)
    return options, [spec if isinstance(spec, ReleaseRange) else latest_of(spec, published) for spec in specs]


def widened(options: ExtractOptions, args: argparse.Namespace) -> ExtractOptions:
    """The options with the scope the user left out the whole package's: `--path vllm` where no --path was
    given, `--exception '*'` where no --exception was. A user pasting an error did not choose a scope: it is
    looked for wherever the package may raise it, unless they narrow where, or which classes."""
    from dataclasses import replace

    return replace(
        options,
        paths=options.paths if args.path is not None else (PACKAGE,),
        exceptions=options.exceptions if args.exception is not None else ("*",),
    )


def output_folder(output: str | None, command: str, *, writable: bool = True) -> Path | None:
    """The folder a command that writes several files writes into: `-` (standard output) is not one; one
    that cannot be written is refused now, before any work (`writable=False`: the command checks when it
    has something to write)."""
    if output == "-":
        raise ExtractorError(f"{command} writes a folder of files: --output - (standard output) cannot hold them")
    from extractor.pipeline.write import OUTPUT, check_folder

    check_folder(Path(output) if output else OUTPUT, writable=writable)  # (no --output: under output/, too)
    return Path(output) if output else None


def pasted(text: str) -> str:
    """A TEXT argument as stdin would read it: bytes that are not UTF-8 (which Python hands over as lone
    surrogates) become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class Followed(NamedTuple):
    """The lineages `--history` names, and the first revision they were followed from."""

    lineages: list[Lineage]
    start: str | None


def lineages_of(args: argparse.Namespace, options: ExtractOptions | None = None) -> Followed | None:
    """The lineages `--history` names (read, or followed on the fly in the command's scope: `options`, else
    the one its options give), or None."""
    if not args.history:
        return None
    from extractor.catalog.load import present
    from extractor.catalog.spec import looks_like_path, parse_revisions
    from extractor.query.history.lineage import build_history
    from extractor.query.history.revisions import followed, list_revisions
    from extractor.query.history.store import read_written
    from extractor.repo.git.clone import is_url, shown_repo

    path = Path(args.history)
    if present(path):  # (a symlink that leads nowhere is an error, not revisions to follow)
        lineages, manifest = read_written(path)
        return Followed(lineages, manifest.revisions[0].revision if manifest and manifest.revisions else None)
    spec = args.history
    if looks_like_path(spec) and is_url(args.repo):  # a mistyped path: never a reason to clone a repository
        raise ExtractorError(f"no history at {spec}: the path does not exist")
    options = followed(options if options is not None else extract_options(args))
    try:
        revisions = list_revisions([parse_revisions(spec)], repo=args.repo)
    except ExtractorError as error:
        raise ExtractorError(f"no history at {spec}, nor revisions of {shown_repo(args.repo)}: {error}") from None
    history = build_history(revisions, options=options)
    return Followed(history.lineages, history.revisions[0].revision if history.revisions else None)


def lineage_note(followed: Followed | None, record_id: str) -> str | None:
    """The history sentence of a record, when a history was given and holds it."""
    if followed is None:
        return None
    from extractor.query.history.changelog import lineage_sentence
    from extractor.query.history.lineage import find_lineage

    found = find_lineage(followed.lineages, record_id)
    return lineage_sentence(found, start=followed.start) if found is not None else None

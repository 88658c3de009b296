# extractor list: a catalog's records as a table, or counted.
from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence

from extractor.cli.options import PROG, Parser, add_catalog, extract_options, latest_of, parse_arguments
from extractor.errors import ExitCode
from extractor.util.progress import one_line, shown


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} list",
        description="List a catalog's records (file:line, class, slug, first words of the message), or count them "
        "by file and class. Exit status: 0 something listed, 1 no record passed the filters, 2 trouble.",
    )
    add_catalog(parser)
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


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.catalog.load import open_catalog
    from extractor.catalog.spec import parse_catalog
    from extractor.query.listing import Filters, misses, render_records, render_summary, select

    options = extract_options(args)
    spec = latest_of(parse_catalog(args.catalog, repo=args.repo), options)
    catalog = open_catalog(spec, repo=args.repo, options=options)
    filters = Filters(files=tuple(args.file), classes=tuple(args.classes), words=tuple(args.grep))
    chosen = select(catalog.lines, filters)
    if chosen or args.summary:
        if args.summary:
            listed = render_summary(chosen, format=args.format)
        else:  # (on a terminal, as wide as it is)
            width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
            listed = render_records(chosen, format=args.format, width=width, words=filters.words)
        sys.stdout.write(listed if args.format == "json" else shown(listed))
        sys.stdout.flush()
    if not chosen and not args.quiet:
        given = filters.files or filters.classes or filters.words
        for why in misses(catalog.lines, filters) or [
            "no record passes every filter at once" if given else "the catalog holds no record"
        ]:
            print(f"{PROG}: {one_line(why)}", file=sys.stderr)
    return ExitCode.OK if chosen else ExitCode.NOT_FOUND
